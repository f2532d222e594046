//! Tandem's core: everything the app does, with no GUI in it. The desktop app, the headless
//! `tandem` CLI and the tests all use this library.
//!
//! - [`store`] — SQLite persistence and migrations
//! - [`workspace`] — safe paths inside a project and atomic file I/O
//! - [`edits`] — the edit-tag protocol, edit plans with review diffs, atomic apply
//! - [`vcs`] — git (commits, history, restore, revert)
//! - [`engine`] — projects, proposals and versions, tying the above together

pub mod edits;
pub mod engine;
pub mod store;
pub mod vcs;
pub mod workspace;

pub use engine::{Engine, EngineError};
