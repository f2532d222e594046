//! The prompt library: reusable prompts a person writes once and inserts by name
//! (`@prompt:NAME` in the composer or in `tandem chat`).

use super::{App, AppError, AppEvent, Result};
use crate::chat::mentions::valid_prompt_name;
use crate::store::SavedPrompt;

/// The longest prompt text kept (a prompt is something to send, not a document).
pub const MAX_PROMPT_BYTES: usize = 64 * 1024;

fn check_name(name: &str) -> Result<()> {
    if valid_prompt_name(name) {
        return Ok(());
    }
    Err(AppError::Invalid(format!(
        "{name:?} cannot be a prompt name: use 1 to 64 letters, digits, '-', '_' or '.' (not \
         ending in '.'), so that `@prompt:NAME` names it"
    )))
}

fn check_text(text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(AppError::Invalid("a prompt's text cannot be empty".into()));
    }
    if text.len() > MAX_PROMPT_BYTES {
        return Err(AppError::Invalid(format!(
            "a prompt's text is limited to {} KiB; this one is {} KiB",
            MAX_PROMPT_BYTES / 1024,
            text.len().div_ceil(1024)
        )));
    }
    Ok(())
}

impl App {
    /// The prompt library, by name.
    pub fn prompts(&self) -> Result<Vec<SavedPrompt>> {
        Ok(self.store().prompts()?)
    }

    /// Saves a prompt under `name` (replacing the text of one with that name).
    pub fn save_prompt(&self, name: &str, text: &str) -> Result<SavedPrompt> {
        check_name(name)?;
        check_text(text)?;
        let saved = self.store().save_prompt(name, text)?;
        self.changed(AppEvent::PromptsChanged);
        Ok(saved)
    }

    /// Changes prompt `id`'s name and text (the Settings editor).
    pub fn update_prompt(&self, id: i64, name: &str, text: &str) -> Result<SavedPrompt> {
        check_name(name)?;
        check_text(text)?;
        if !self.store().rename_prompt(id, name)? {
            return Err(AppError::Invalid(format!(
                "another prompt is named {name:?} already"
            )));
        }
        let saved = self.store().save_prompt(name, text)?;
        self.changed(AppEvent::PromptsChanged);
        Ok(saved)
    }

    /// Removes the prompt named `name`; an error when there is none.
    pub fn remove_prompt(&self, name: &str) -> Result<()> {
        match self.store().remove_prompt(name)? {
            true => {
                self.changed(AppEvent::PromptsChanged);
                Ok(())
            }
            false => Err(AppError::Invalid(format!(
                "no saved prompt named {name:?}; `tandem prompt list` shows them"
            ))),
        }
    }

    /// The prompt with its `@prompt:NAME` mentions replaced by the saved texts, as it will be
    /// sent (an unknown name is an error).
    pub fn expand_prompt(&self, prompt: &str) -> Result<String> {
        Ok(self.chat.expand(prompt)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_round_trip_with_its_checks() {
        let dir = tempfile::tempdir().unwrap();
        let app = App::open_in(
            Some(dir.path()),
            crate::environment::Environment::isolated(),
        )
        .unwrap();
        let saved = app.save_prompt("review", "Review for bugs.").unwrap();
        assert_eq!(saved.name, "review");
        // Same name: the text is replaced, not a second prompt.
        app.save_prompt("review", "Review for bugs and style.")
            .unwrap();
        assert_eq!(app.prompts().unwrap().len(), 1);
        assert_eq!(
            app.expand_prompt("@prompt:review please").unwrap(),
            "Review for bugs and style. please"
        );
        assert!(matches!(
            app.save_prompt("two words", "x"),
            Err(AppError::Invalid(_))
        ));
        assert!(matches!(
            app.save_prompt("ok", "  \n"),
            Err(AppError::Invalid(_))
        ));
        let big = "x".repeat(MAX_PROMPT_BYTES + 1);
        assert!(matches!(
            app.save_prompt("big", &big),
            Err(AppError::Invalid(_))
        ));

        let other = app.save_prompt("tests", "Add tests.").unwrap();
        let taken = app.update_prompt(other.id, "review", "Add tests.");
        assert!(matches!(taken, Err(AppError::Invalid(m)) if m.contains("already")));
        let renamed = app
            .update_prompt(other.id, "tests-v2", "Add more tests.")
            .unwrap();
        assert_eq!(
            (renamed.id, renamed.text.as_str()),
            (other.id, "Add more tests.")
        );

        app.remove_prompt("review").unwrap();
        assert!(app.remove_prompt("review").is_err());
        let unknown = app.expand_prompt("@prompt:review").unwrap_err().to_string();
        assert!(
            unknown.contains("no saved prompt named \"review\""),
            "{unknown}"
        );
    }
}
