//! Attaching to the prompt in the background: files read (and checked) off the UI thread,
//! the file dialog, an image pasted from the clipboard (encoded as PNG), and a text
//! attachment proposed as a new project file.

use std::path::PathBuf;

use super::{Backend, Event};
use tandem_core::app::Attach;
use tandem_core::store::Project;

impl Backend {
    /// Reads and checks `paths`; what can be attached comes back as [`Event::Attached`],
    /// each refusal with its reason.
    pub fn attach_paths(&self, paths: Vec<PathBuf>) {
        self.spawn("attaching", move |_app, emit| {
            emit.send(read(paths));
            Ok(())
        });
    }

    /// Shows the native file dialog; the files chosen are attached.
    pub fn pick_attachments(&self) {
        let emit = self.emit();
        self.runtime.spawn(async move {
            let picked = rfd::AsyncFileDialog::new()
                .set_title("Attach files or images")
                .pick_files()
                .await;
            let event = match picked {
                Some(files) => {
                    let paths = files.iter().map(|f| f.path().to_path_buf()).collect();
                    tokio::task::spawn_blocking(move || read(paths))
                        .await
                        .unwrap_or_else(|e| Event::Log(format!("attaching failed: {e}")))
                }
                None => Event::Log("no file chosen to attach".into()),
            };
            emit.send_async(event).await;
        });
    }

    /// Attaches the image on the clipboard (as PNG).
    pub fn paste_image(&self) {
        self.spawn("pasting an image", move |_app, emit| {
            let attach = clipboard_image()?;
            emit.send(Event::Attached {
                attached: vec![attach],
                errors: Vec::new(),
            });
            Ok(())
        });
    }

    /// Proposes a text attachment as a new file of the project (reviewed like any proposal).
    pub fn propose_attachment(&self, project: Project, chat_id: Option<i64>, attach: Attach) {
        self.spawn("adding the file to the project", move |app, emit| {
            let proposal = app.propose_new_file(&project, chat_id, &attach)?;
            // A new chat is opened; the open one is read again from the stream.
            match chat_id {
                None => super::refresh::reload_chat(&app, &emit, proposal.chat.id),
                Some(_) => Ok(()),
            }
        });
    }
}

/// Reads and checks files to attach: those that can be, and why the others cannot.
fn read(paths: Vec<PathBuf>) -> Event {
    let (mut attached, mut errors) = (Vec::new(), Vec::new());
    for path in paths {
        match Attach::from_path(&path).and_then(|a| a.kind().map(|_| a)) {
            Ok(attach) => attached.push(attach),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Event::Attached { attached, errors }
}

fn clipboard_image() -> anyhow::Result<Attach> {
    let mut clipboard = arboard::Clipboard::new()
        .map_err(|e| anyhow::anyhow!("the clipboard cannot be read: {e}"))?;
    let image = clipboard
        .get_image()
        .map_err(|_| anyhow::anyhow!("the clipboard holds no image"))?;
    let (width, height) = (u32::try_from(image.width)?, u32::try_from(image.height)?);
    let rgba = image::RgbaImage::from_raw(width, height, image.bytes.into_owned())
        .ok_or_else(|| anyhow::anyhow!("the clipboard image is malformed"))?;
    let mut png = Vec::new();
    rgba.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)?;
    Ok(Attach {
        name: "pasted image.png".into(),
        bytes: png,
    })
}
