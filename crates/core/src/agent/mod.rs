//! Agent mode: tools, the approval policy, and the loop.

mod dispatch;
pub mod fit;
pub mod gateway;
pub mod mcp;
/// The approval policy; its internals (lexer, rules, options, facts, patterns) are children.
pub mod policy;
pub mod protocol;
pub mod runner;
pub mod tools;

pub(crate) use dispatch::changed_since_last_look;
