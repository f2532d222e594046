//! Drawing shared by the panels: diffs, syntax highlighting, markdown prose, the theme.

pub mod diff_view;
pub mod highlight;
pub(crate) mod prose;
pub(crate) mod theme;
pub mod thumbnail;
