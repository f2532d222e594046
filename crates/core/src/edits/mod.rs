//! The edit protocol: the incremental tag parser, typed actions, search-replace matching,
//! edit plans with review diffs, and the all-or-nothing apply.

pub mod actions;
pub mod apply;
pub mod deps;
pub mod diff;
pub mod findings;
mod line_numbers;
pub mod parser;
pub mod plan;
pub mod search_replace;

pub use actions::{Action, actions};
pub use apply::{
    ApplyError, Checked, FileSelection, PathWrite, Selection, SelectionError, apply_writes,
    check_writes,
};
pub use diff::{DiffLine, Hunk, LineKind};
pub use findings::{SecurityFinding, security_findings, security_findings_in};
pub use parser::{Segment, StreamParser, Tag, TagKind, parse};
pub use plan::{
    EditPlan, FileChange, FileChangeKind, OpKind, OpStatus, Operation, build_plan, plan_actions,
};
