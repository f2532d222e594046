//! Agent mode: tools, the approval policy, and the loop.

pub mod policy;
