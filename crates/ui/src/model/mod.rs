//! What the window shows, as plain data: the view models the panels render and the commands
//! and background events change. No egui here.

pub mod agent_state;
pub mod chat_state;
pub mod file_tree;
pub mod findings;
pub mod mentions;
pub mod outcomes;
pub mod problems;
pub mod review;
pub mod selection;
pub mod state;
pub mod symbols;
pub mod unsaved;
pub mod workspaces;
