//! The settings table's keys, all in one place (values are JSON). [`crate::app::Settings`]
//! reads and writes them typed; the core reads the ones it needs.

/// The provider a send uses when none is named.
pub const DEFAULT_PROVIDER: &str = "chat.default_provider";
/// The model a send uses when none is named (with [`DEFAULT_PROVIDER`]).
pub const DEFAULT_MODEL: &str = "chat.default_model";
/// How many earlier turns a request carries (default 10).
pub const HISTORY_TURNS: &str = "chat.history_turns";
/// Apply a Build reply's proposal without review (default off).
pub const AUTO_APPROVE: &str = "chat.auto_approve";
/// Ask the model for a chat title after the first reply (default on).
pub const GENERATE_TITLES: &str = "chat.generate_titles";
/// How many times a Build reply whose edits fail is sent back to the model with the errors
/// (default 2; 0 turns it off).
pub const REPAIR_ROUNDS: &str = "chat.repair_rounds";
/// Seconds a project's check may run on a proposal (default 300).
pub const CHECK_TIMEOUT_SECS: &str = "checks.timeout_secs";
/// Where scratch copies for checks live (default: the user's cache directory).
pub const SCRATCH_DIR: &str = "checks.scratch_dir";
/// Seconds a stream may stay silent before it is given up.
pub const IDLE_TIMEOUT_SECS: &str = "llm.idle_timeout_secs";
/// Set once the default local provider was added (so removing it sticks).
pub const PROVIDERS_SEEDED: &str = "providers.seeded";
/// The approval policy's patterns and auto-approve level (`PolicySettings`).
pub const AGENT_POLICY: &str = "agent.policy";
/// `auto` (native when the model supports it), `native` or `text`.
pub const TOOL_CALLING: &str = "agent.tool_calling";
/// `run_shell`'s timeout in seconds (default 120).
pub const SHELL_TIMEOUT_SECS: &str = "agent.shell_timeout_secs";
/// The most tool steps in one agent turn.
pub const MAX_STEPS: &str = "agent.max_steps";
/// Directories sandboxed commands may also read (list of paths, `~/` allowed), besides the
/// system, the project and the default toolchain directories.
pub const SANDBOX_READABLE: &str = "agent.sandbox_readable";
/// Names of variables confined commands also see (a JSON list of strings).
pub const SANDBOX_ENV: &str = "agent.sandbox_env";
/// The limits of confined commands (`sandbox::Limits` as JSON).
pub const AGENT_LIMITS: &str = "agent.limits";
/// The approval gateway's settings (the token lives with the API keys, not here).
pub const GATEWAY: &str = "gateway.settings";
/// The approval client's executor address and connect-at-start flag (its token lives with the
/// API keys).
pub const APPROVER: &str = "gateway.executor";
/// Prices per million tokens by model (`Prices`), for the cost of cloud models' usage.
pub const USAGE_PRICES: &str = "usage.prices";
