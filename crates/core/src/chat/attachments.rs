//! Files and images attached to a prompt. What each is comes from its bytes: PNG, JPEG, GIF
//! and WebP are images (sent in the provider's image format); UTF-8 text is a file sent as
//! context with the prompt; anything else is refused. The store keeps the bytes in the data
//! directory under their git blob hash (the same content is kept once) and removes them once
//! no message refers to them (see `store::attachments`). A model known to lack vision is
//! refused images before anything is sent.

use std::path::Path;

use super::ChatError;
use crate::llm::ImageData;
use crate::store::{Attachment, AttachmentKind, NewAttachment, Store};

/// An image larger than this is refused (providers take 5–20 MB; the prompt grows by 4/3).
pub const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;
/// A text file larger than this is refused as context (attach part of it, or mention the
/// project file with `@` instead).
pub const MAX_FILE_BYTES: usize = 256 * 1024;
/// Attachments on one prompt at most.
pub const MAX_ATTACHMENTS: usize = 10;
/// Web pages (`@https://…`) fetched for one prompt at most.
pub const MAX_PAGES: usize = 3;

/// Something the person attaches: a name (a file name, or "pasted image") and its bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Attach {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for Attach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Attach({:?}, {} bytes)", self.name, self.bytes.len())
    }
}

impl Attach {
    /// Reads a file to attach: the person's choice, so links are followed, but only to a
    /// regular file (a named pipe would block the send for ever, a device stream into it).
    pub fn from_path(path: &Path) -> Result<Attach, ChatError> {
        let error = |e: &dyn std::fmt::Display| {
            ChatError::Attachment(format!("cannot read {}: {e}", path.display()))
        };
        let real = path.canonicalize().map_err(|e| error(&e))?;
        let (bytes, _) = crate::folder::read_regular(&real).map_err(|e| error(&e))?;
        let name = path
            .file_name()
            .map_or_else(|| "attachment".into(), |n| n.to_string_lossy().into_owned());
        Ok(Attach { name, bytes })
    }

    /// What it is, from its bytes: an image with its media type, or a text file.
    pub fn kind(&self) -> Result<(AttachmentKind, &'static str), ChatError> {
        if let Some(mime) = image_type(&self.bytes) {
            if self.bytes.len() > MAX_IMAGE_BYTES {
                return Err(ChatError::Attachment(format!(
                    "{} is {} MiB; images are limited to {} MiB",
                    self.name,
                    self.bytes.len().div_ceil(1024 * 1024),
                    MAX_IMAGE_BYTES / (1024 * 1024)
                )));
            }
            return Ok((AttachmentKind::Image, mime));
        }
        let text = std::str::from_utf8(&self.bytes)
            .ok()
            .filter(|t| !t.contains('\0'));
        let Some(text) = text else {
            return Err(ChatError::Attachment(format!(
                "{} is neither text nor a PNG, JPEG, GIF or WebP image",
                self.name
            )));
        };
        if self.bytes.len() > MAX_FILE_BYTES {
            return Err(ChatError::Attachment(format!(
                "{} is {} KiB; attached files are limited to {} KiB (mention a project file \
                 with @ instead, or attach a part)",
                self.name,
                self.bytes.len().div_ceil(1024),
                MAX_FILE_BYTES / 1024
            )));
        }
        // As a mention or a selection of it would be: a key never goes to a model.
        if crate::folder::holds_secret(text) {
            return Err(ChatError::Attachment(format!(
                "{} holds what looks like a private key or an access token, which Tandem \
                 never sends to a model: attach it without the key",
                self.name
            )));
        }
        Ok((AttachmentKind::File, "text/plain"))
    }
}

/// The image type of `bytes` by its signature.
pub fn image_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Checks every attachment before anything is stored: how many, what each is.
pub fn check(attachments: &[Attach]) -> Result<Vec<(AttachmentKind, &'static str)>, ChatError> {
    if attachments.len() > MAX_ATTACHMENTS {
        return Err(ChatError::Attachment(format!(
            "{} attachments; at most {MAX_ATTACHMENTS} go with one prompt",
            attachments.len()
        )));
    }
    attachments.iter().map(Attach::kind).collect()
}

/// Keeps the attachments of message `message_id` in the store (bytes in its data
/// directory, once per content; a row each).
pub fn keep(
    store: &Store,
    message_id: i64,
    attachments: &[Attach],
    kinds: &[(AttachmentKind, &'static str)],
) -> Result<Vec<Attachment>, ChatError> {
    let new: Vec<NewAttachment<'_>> = attachments
        .iter()
        .zip(kinds)
        .map(|(attach, (kind, mime))| NewAttachment {
            kind: *kind,
            name: &attach.name,
            mime,
            content: &attach.bytes,
        })
        .collect();
    Ok(store.add_attachments(message_id, &new)?)
}

/// What a message's attachments add to its request: the text files as context after the
/// prompt, and the images. An attachment whose bytes are gone is named, not sent.
pub fn load(store: &Store, attachments: &[Attachment]) -> (String, Vec<ImageData>) {
    let (mut text, mut images) = (String::new(), Vec::new());
    for a in attachments {
        match (a.kind, read(store, a)) {
            (AttachmentKind::Image, Some(bytes)) => images.push(ImageData::new(&a.mime, &bytes)),
            (AttachmentKind::File, Some(bytes)) => {
                let content = String::from_utf8_lossy(&bytes);
                let fence = crate::folder::context::code_fence(&content);
                let what = match a.name.starts_with("http://") || a.name.starts_with("https://") {
                    true => "The web page",
                    false => "Attached file",
                };
                text.push_str(&format!(
                    "\n\n{what} {}:\n{fence}\n{}\n{fence}",
                    a.name,
                    content.trim_end()
                ));
            }
            (_, None) => text.push_str(&format!(
                "\n\n(The attachment {} is no longer in Tandem's data directory.)",
                a.name
            )),
        }
    }
    (text, images)
}

/// An attachment's bytes; `None` when they are gone. Tandem's own copy; still, only a
/// regular file is read.
pub fn read(store: &Store, attachment: &Attachment) -> Option<Vec<u8>> {
    let path = store.attachment_path(attachment)?;
    crate::folder::read_regular(&path)
        .ok()
        .map(|(bytes, _)| bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attach(name: &str, bytes: &[u8]) -> Attach {
        Attach {
            name: name.into(),
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn kinds_come_from_the_bytes_with_limits() {
        let png = attach("shot", b"\x89PNG\r\n\x1a\n....");
        assert_eq!(png.kind().unwrap(), (AttachmentKind::Image, "image/png"));
        let webp = attach("x", b"RIFF\0\0\0\0WEBPVP8 ");
        assert_eq!(webp.kind().unwrap().1, "image/webp");
        assert_eq!(
            attach("a.txt", b"hello").kind().unwrap().0,
            AttachmentKind::File
        );
        let binary = attach("a.bin", &[0, 159, 146, 150]);
        assert!(
            binary
                .kind()
                .unwrap_err()
                .to_string()
                .contains("neither text nor")
        );
        let big = attach("big.txt", &vec![b'a'; MAX_FILE_BYTES + 1]);
        assert!(
            big.kind()
                .unwrap_err()
                .to_string()
                .contains("limited to 256 KiB")
        );
        let many = vec![attach("a", b"a"); MAX_ATTACHMENTS + 1];
        assert!(check(&many).is_err());
    }

    #[test]
    fn a_text_holding_a_key_is_not_attached() {
        let body = crate::folder::key_body();
        let pem = format!("-----BEGIN RSA {}-----\n{body}\n", "PRIVATE KEY");
        let refused = attach("deploy.txt", pem.as_bytes()).kind().unwrap_err();
        assert!(refused.to_string().contains("private key"), "{refused}");
        assert!(attach("notes.txt", b"no key here\n").kind().is_ok());
    }

    #[test]
    fn kept_once_per_content_and_loaded_back_as_context_and_images() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_dir(dir.path()).unwrap();
        store
            .conn()
            .execute_batch(
                "INSERT INTO projects (id, name, path, created_at, updated_at) VALUES (1, 'p', '/p', 1, 1);
                 INSERT INTO chats (id, project_id, created_at, updated_at) VALUES (1, 1, 1, 1);
                 INSERT INTO messages (id, chat_id, role, created_at, updated_at) VALUES (1, 1, 'user', 1, 1);",
            )
            .unwrap();
        let files = [
            attach("notes.md", b"some ``` fenced\n"),
            attach("shot.png", b"\x89PNG\r\n\x1a\nabc"),
            attach("copy.md", b"some ``` fenced\n"),
        ];
        let kinds = check(&files).unwrap();
        let kept = keep(&store, 1, &files, &kinds).unwrap();
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[0].stored, kept[2].stored, "same content kept once");
        assert_eq!(store.attachments(1).unwrap(), kept);
        let (text, images) = load(&store, &kept);
        assert!(
            text.contains("Attached file notes.md:\n````\nsome ``` fenced\n````"),
            "{text}"
        );
        assert_eq!(images.len(), 1);
        assert_eq!(images[0].mime, "image/png");
        std::fs::remove_file(dir.path().join(&kept[1].stored)).unwrap();
        let (text, images) = load(&store, &kept[1..2]);
        assert!(images.is_empty() && text.contains("no longer in Tandem's data directory"));
    }

    /// Attaching a named pipe (or a socket, or a device through a link) is refused at once.
    #[cfg(unix)]
    #[test]
    fn only_a_regular_file_is_attached() {
        use crate::folder::test_support::{fifo, promptly, socket};
        let dir = tempfile::tempdir().unwrap();
        let pipe = dir.path().join("notes.md");
        fifo(&pipe);
        socket(&dir.path().join("sock"));
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.md")).unwrap();
        std::fs::write(dir.path().join("real.md"), "text\n").unwrap();
        std::os::unix::fs::symlink("real.md", dir.path().join("link.md")).unwrap();
        for (name, kind) in [
            ("notes.md", "a named pipe"),
            ("sock", "a socket"),
            ("zero.md", "a character device"),
        ] {
            let path = dir.path().join(name);
            let refused = promptly(move || Attach::from_path(&path)).unwrap_err();
            let message = refused.to_string();
            assert!(
                message.contains(&format!("{kind}, not a regular file")),
                "{message}"
            );
        }
        // A link to a regular file is the person's choice: followed.
        let linked = Attach::from_path(&dir.path().join("link.md")).unwrap();
        assert_eq!(
            (linked.name.as_str(), linked.bytes.as_slice()),
            ("link.md", &b"text\n"[..])
        );
    }
}
