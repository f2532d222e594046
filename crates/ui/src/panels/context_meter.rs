//! The context meter under the chat's header: what the next request sends, what is reserved
//! for the reply, of the model's window; one line, a bar that fills with the same count, and
//! the breakdown on hover.

use crate::model::state::ChatState;
use crate::widgets::theme;

/// The context meter: the estimate for the prompt being typed when there is one, else what
/// the last send used.
pub fn show(
    ui: &mut egui::Ui,
    chat: &ChatState,
    estimate: Option<&Result<tandem_core::app::ContextBreakdown, String>>,
) {
    let b = match (estimate, &chat.breakdown) {
        (Some(Ok(b)), _) => b,
        (Some(Err(why)), _) => {
            ui.weak(format!("Context: no estimate ({why})"));
            return;
        }
        (None, Some(b)) => b,
        (None, None) => {
            ui.weak("Context: estimated as you type");
            return;
        }
    };
    if b.window == 0 {
        // A turn handed to a CLI agent: it fills its own window.
        ui.weak("Context: not measured for the last turn");
        return;
    }
    let fraction = b.used_fraction() as f32;
    let color = if !b.fits() {
        theme::ERROR
    } else if fraction > 0.85 {
        theme::WARN
    } else {
        theme::ACCENT
    };
    // The label beside the bar, never over it: the bar is too thin to hold text, and a
    // narrow panel would clip it. The bar fills with what the label counts: what is sent and
    // what is reserved for the reply.
    let response = ui
        .horizontal(|ui| {
            let text = ui.add(egui::Label::new(egui::RichText::new(b.meter()).small()).truncate());
            let width = ui.available_width().max(24.0);
            let bar = ui.add(
                egui::ProgressBar::new(fraction.min(1.0))
                    .fill(color)
                    .desired_height(6.0)
                    .desired_width(width),
            );
            text.union(bar)
        })
        .inner;
    let mut hover = format!(
        "Sent to the model: {} tokens\n  system {}\n  codebase {} ({} files, {} by path only)\n  history {} ({} turns left out)\n  prompt {}\nReserved for the reply: {} tokens\nThe model's window: {} tokens\nSent + reserved take {:.0}% of the window (estimated)",
        b.total(),
        b.system,
        b.codebase,
        b.files_included,
        b.files_listed.len(),
        b.history,
        b.turns_dropped,
        b.prompt,
        b.reply_reserve,
        b.window,
        (b.used_fraction() * 100.0).round()
    );
    if let Some(s) = &b.selection {
        hover.push_str(&format!(
            "\nSelected in the editor, sent with the prompt: {} lines {}-{} ({} tokens)",
            s.path, s.first_line, s.last_line, s.tokens
        ));
    }
    hover.push_str(&files_sent(b));
    hover.push_str(&secrets_left_out(b));
    response.on_hover_text(hover);
    if b.turns_dropped > 0 || !b.files_listed.is_empty() {
        ui.colored_label(
            theme::WARN,
            format!(
                "To fit the window: {} older turn(s) left out, {} file(s) sent by path only",
                b.turns_dropped,
                b.files_listed.len()
            ),
        );
    }
}

/// The most files the hover lists with why they were sent.
const HOVER_FILES: usize = 20;

/// The files sent, each with its tokens, whether whole or as its map, and why; past
/// [`HOVER_FILES`], how many more.
fn files_sent(b: &tandem_core::app::ContextBreakdown) -> String {
    let mut out = String::new();
    if !b.included.is_empty() {
        out.push_str("\nFiles sent, and why:");
    }
    for file in b.included.iter().take(HOVER_FILES) {
        let how = match file.packed_as {
            tandem_core::app::PackedAs::Whole => "",
            tandem_core::app::PackedAs::Map => ", map",
        };
        out.push_str(&format!(
            "\n  {} ({} tokens{how}): {}",
            file.path, file.tokens, file.why
        ));
    }
    if b.included.len() > HOVER_FILES {
        out.push_str(&format!(
            "\n  … and {} more",
            b.included.len() - HOVER_FILES
        ));
    }
    out
}

/// The files never sent because they look like they hold secrets (by name, or a key or a
/// token in them): a file the person named and does not see sent is explained here.
fn secrets_left_out(b: &tandem_core::app::ContextBreakdown) -> String {
    use tandem_core::app::SkipReason::{HoldsSecret, LooksSecret};
    let secret: Vec<&str> = (b.files_skipped.iter())
        .filter(|(_, why)| matches!(why, LooksSecret | HoldsSecret))
        .map(|(path, _)| path.as_str())
        .collect();
    if secret.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nNever sent, as they look like they hold secrets (a key, a token, an env file): {}",
        secret.len()
    );
    for path in secret.iter().take(HOVER_FILES) {
        out.push_str(&format!("\n  {path}"));
    }
    if secret.len() > HOVER_FILES {
        out.push_str(&format!("\n  … and {} more", secret.len() - HOVER_FILES));
    }
    out
}

#[cfg(test)]
mod tests {
    use tandem_core::app::{ContextBreakdown, SkipReason};

    use super::secrets_left_out;

    #[test]
    fn the_hover_names_the_files_left_out_as_secrets_and_no_other_skipped_file() {
        let b = ContextBreakdown {
            files_skipped: vec![
                ("config/app.yaml".into(), SkipReason::HoldsSecret),
                ("logo.png".into(), SkipReason::Binary),
                (".env".into(), SkipReason::LooksSecret),
            ],
            ..ContextBreakdown::default()
        };
        assert_eq!(
            secrets_left_out(&b),
            "\nNever sent, as they look like they hold secrets (a key, a token, an env file): 2\n  config/app.yaml\n  .env"
        );
        assert_eq!(secrets_left_out(&ContextBreakdown::default()), "");
    }
}
