//! The words of unsaved work, shared by the view model, the commands and the dialogs: the
//! buffer kept between runs and the close dialog's answers. What is done with them lives in
//! `crate::unsaved`.

use serde::{Deserialize, Serialize};

/// eframe storage key of the unsaved buffers.
pub const DRAFTS_KEY: &str = "tandem.drafts";

/// An unsaved buffer kept from a run to the next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Draft {
    pub project_id: i64,
    pub path: String,
    /// What the person typed.
    pub text: String,
    /// What the buffer was loaded from: saving later is checked against it, so a file that
    /// changed on disk meanwhile is never overwritten without asking.
    pub saved: String,
}

/// The close dialog's answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseChoice {
    Save,
    Discard,
    Cancel,
}
