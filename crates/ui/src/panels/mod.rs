//! The window's panels, one per area: each renders part of the view model and turns the
//! person's clicks and keys into commands.

pub(crate) mod agent_settings;
pub(crate) mod agent_steps;
pub(crate) mod approvals_tab;
pub(crate) mod bottom;
pub(crate) mod chat_panel;
pub(crate) mod composer;
pub(crate) mod context_meter;
pub mod editor;
pub(crate) mod findings;
pub(crate) mod palette;
pub(crate) mod problems;
pub(crate) mod project_rules;
pub(crate) mod prompt_library;
pub mod review;
pub(crate) mod search;
pub(crate) mod settings;
pub(crate) mod sidebar;
pub(crate) mod symbols;
pub(crate) mod top_bar;
pub(crate) mod usage;
pub(crate) mod welcome;
pub(crate) mod workspaces;
