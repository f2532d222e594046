//! Tandem's core: everything the app does, with no GUI in it (nor in its dependencies). The window
//! (`tandem-ui`), the headless
//! `tandem` CLI and the tests all use this library.
//!
//! - [`store`] — SQLite persistence and migrations
//! - [`folder`] — the project folder: safe paths inside it, its files' I/O, walks and watching
//! - [`edits`] — the edit-tag protocol, edit plans with review diffs, atomic apply
//! - [`vcs`] — git (commits, history, restore, revert)
//! - [`index`] — the code index: definitions, references and words per file, and the ranking
//!   of files for a prompt
//! - [`engine`] — projects, proposals and versions, tying the above together
//! - [`lockfile`] — locks between processes (a project's changes, a workspace in use)
//! - [`sandbox`] — the kernel sandbox for every command Tandem runs for a model
//! - [`process`] — starting, confining, capping and killing those commands
//! - [`layer`] — the agent's workspace: a chat's copy-on-write view of the project
//! - [`checks`] — the project's own check run on a proposal in a scratch copy
//! - [`cli_agents`] — CLI coding agents (Codex, Claude Code) run as providers
//! - [`app`] — the use cases: the one door the window and the CLI go through
//! - [`environment`] — the environment variables Tandem reads, as one snapshot handed down
//! - [`failpoint`] — where tests make the process kill itself (inert in release builds)
//! - [`display`] — text shown to the person, made unable to hide part of itself; which
//!   characters do not show (paths may not hold them)
//!
//! A reply is parsed into prose and tags; only complete tags become actions:
//!
//! ```
//! use tandem_core::edits::{Action, Segment, actions, parse};
//!
//! let reply = "Renaming it.\n<tandem-rename from=\"a.txt\" to=\"b.txt\"/>\n<tandem-write path=\"c";
//! let segments = parse(reply);
//! assert!(matches!(&segments[0], Segment::Text { text, .. } if text == "Renaming it.\n"));
//! let actions = actions(&segments);
//! // The unfinished write at the end is still streaming: never an action.
//! assert_eq!(actions.len(), 1);
//! assert!(matches!(&actions[0], Ok(Action::Rename { from, to }) if from == "a.txt" && to == "b.txt"));
//! ```
//!
//! Every path from a model or a user is checked before any file I/O:
//!
//! ```
//! use tandem_core::folder::normalize_relative;
//!
//! assert_eq!(normalize_relative("./src\\main.rs").unwrap(), "src/main.rs");
//! assert!(normalize_relative("../etc/passwd").is_err());
//! assert!(normalize_relative(".git/hooks/pre-commit").is_err());
//! ```

pub use environment::Environment;

pub mod agent;
pub mod app;
pub mod chat;
pub mod checks;
pub mod cli_agents;
pub mod display;
pub mod edits;
pub mod engine;
pub mod environment;
pub mod failpoint;
pub mod folder;
pub mod index;
pub mod layer;
pub mod llm;
pub mod lockfile;
pub mod process;
pub mod sandbox;
pub mod store;
pub mod tokens;
pub mod trust;
pub mod vcs;
pub mod web;

pub use engine::{Engine, EngineError};
