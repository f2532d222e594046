//! Agent mode: tools, the approval policy, and the loop.

// The policy's internals, split by concern; `policy` re-exports their public functions.
mod facts;
mod patterns;
pub mod policy;
mod shell;
mod shell_options;
mod shell_rules;

mod dispatch;
pub mod display;
pub mod exec;
pub mod gateway;
pub mod mcp;
pub mod protocol;
pub mod runner;
pub mod tools;
