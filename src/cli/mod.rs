//! The headless CLI. Every command goes through the application layer (`tandem_core::app`), as
//! the window does. With `--json`, a
//! command prints exactly one JSON object on stdout; errors go to stderr with a non-zero exit.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::json;

mod chat;
mod chats;
mod config;
mod context;
mod ctx;
mod gateway;
mod interrupt;
mod mcp;
mod model;
mod output;
mod projects;
mod prompts;
mod proposals;
mod providers;
mod search;
mod symbols;
mod terminal;
mod usage;
mod versions;
mod workspace;

use tandem_core::app::App;

#[derive(Parser)]
#[command(
    name = "tandem",
    version,
    about = "Tandem: chat with a model, review its diffs, approve them as git commits."
)]
struct Cli {
    /// Where Tandem keeps its database (default: TANDEM_DATA_DIR, else the platform data dir).
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Print one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// With no command: open this folder as a project in the window.
    #[arg(long, value_name = "FOLDER")]
    open: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Manage projects (folders with a git repository).
    #[command(subcommand)]
    Project(projects::ProjectCommand),
    /// Manage model providers (Ollama, OpenAI-compatible, Anthropic, Gemini).
    #[command(subcommand)]
    Provider(providers::ProviderCommand),
    /// Global settings: get, set, unset, list.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Approvals for external executors: `connect` answers an executor's requests headless.
    #[command(subcommand)]
    Gateway(gateway::GatewayCommand),
    /// Start a new chat (same project and mode) from a summary of this one.
    Summarize {
        #[arg(long)]
        chat: i64,
        #[arg(long)]
        provider: Option<String>,
        #[arg(long)]
        model: Option<String>,
    },
    /// A model's profile, its check-up and your settings for it.
    #[command(subcommand)]
    Model(model::ModelCommand),
    /// List the models a provider serves now.
    Models {
        #[arg(long)]
        provider: Option<String>,
    },
    /// Send a prompt; the reply streams to stdout, then its proposal is summarised.
    Chat(chat::ChatArgs),
    /// Show what would be sent to the model: tokens per part, files included and left out.
    Context {
        #[arg(long)]
        project: String,
        #[arg(long, default_value = "")]
        prompt: String,
        #[arg(long)]
        provider: Option<String>,
        #[arg(long)]
        model: Option<String>,
        #[command(flatten)]
        editor: chat::EditorArgs,
    },
    /// Show one message.
    Show { message_id: i64 },
    /// Show what the sandbox for agent commands enforces on this machine, and what it cannot
    /// (where it cannot, every command is asked instead of auto-approved).
    Sandbox,
    /// List a project's chats (archived ones with --archived).
    Chats {
        #[arg(long)]
        project: String,
        #[arg(long)]
        archived: bool,
    },
    /// Archive a chat (hidden from the list, nothing deleted); --undo brings it back.
    Archive {
        #[arg(long)]
        chat: i64,
        #[arg(long)]
        undo: bool,
    },
    /// Search the messages of a project's chats (archived ones too).
    SearchChats {
        #[arg(long)]
        project: String,
        query: String,
    },
    /// Search the project's files (literal; --regex for a regular expression).
    Search(search::SearchArgs),
    /// Where a name is defined, from the project's code index (the editor's F12).
    Definition {
        #[arg(long)]
        project: String,
        name: String,
    },
    /// The lines using a name as a whole word, in the files the code index says use it.
    References {
        #[arg(long)]
        project: String,
        name: String,
    },
    /// The definitions whose names contain QUERY, best first (the file filter's symbols).
    Symbols {
        #[arg(long)]
        project: String,
        #[arg(long, default_value_t = 50)]
        max: usize,
        query: String,
    },
    /// Tokens in and out per model (and cost, where `usage.prices` knows the model).
    Usage {
        /// Only this project (id or folder); default: all projects.
        #[arg(long)]
        project: Option<String>,
    },
    /// MCP servers whose tools agent mode offers: add, list, enable, disable, remove.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// The prompt library: reusable prompts, inserted with `@prompt:NAME`.
    #[command(subcommand)]
    Prompt(prompts::PromptCommand),
    /// The chats' workspaces (the agent's copy-on-write views of the project): list, clean.
    #[command(subcommand)]
    Workspace(workspace::WorkspaceCommand),
    /// Run a command in a chat's workspace, in the agent's container at the project's path
    /// (default: the project's check command); exits with its exit code. What it changes
    /// stays in the workspace.
    Run(workspace::RunArgs),
    /// List a chat's messages.
    Messages {
        #[arg(long)]
        chat: i64,
    },
    #[command(flatten)]
    Proposal(proposals::ProposalCommand),
    #[command(flatten)]
    Version(versions::VersionCommand),
    /// Keeps the change journal of the project at ROOT on SOCKET (started by Tandem itself,
    /// in the background: see `tandem_core::folder::journal`).
    #[command(hide = true)]
    Journal {
        #[arg(long)]
        root: PathBuf,
        #[arg(long)]
        socket: PathBuf,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // This program keeps the projects' change journals (in the background, for the window
    // and the commands alike).
    if let Ok(program) = std::env::current_exe() {
        tandem_core::app::keep_journals_with(program);
    }
    let Some(command) = cli.command else {
        // No command: the desktop app.
        return match tandem_ui::run(cli.data_dir, cli.open) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: cannot open the window: {e}");
                eprintln!("(the headless commands still work: tandem --help)");
                ExitCode::FAILURE
            }
        };
    };
    // The journal's keeper opens no database: it only watches the project.
    if let Command::Journal { root, socket } = &command {
        return match keep_journal(root, socket) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                output::eprintln(format_args!("error: {}", described(&e)));
                ExitCode::FAILURE
            }
        };
    }
    match run(cli.data_dir, cli.json, command) {
        Ok(code) => code,
        Err(e) => {
            // An error may quote what a server or a model said.
            output::eprintln(format_args!("error: {}", described(&e)));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes, each said once: a cause whose text its error already quotes
/// (`the code index cannot be used: database is locked`, then `database is locked`) is not
/// said again.
fn described(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let said = cause.to_string();
        if text.contains(&said) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&said);
    }
    text
}

fn read_input(path: &PathBuf) -> Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("reading standard input")?;
        return Ok(bytes);
    }
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

fn keep_journal(root: &std::path::Path, socket: &std::path::Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        tandem_core::app::keep_journal(root, socket)
            .with_context(|| format!("keeping the change journal of {}", root.display()))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (root, socket);
        anyhow::bail!("the change journal is kept only on Linux")
    }
}

fn run(data_dir: Option<PathBuf>, json: bool, command: Command) -> Result<ExitCode> {
    let ctx = ctx::Ctx {
        app: App::open(data_dir.as_deref())?,
        json,
    };
    let app = &ctx.app;
    let out = |value: serde_json::Value, text: String| ctx.out(value, text);
    match command {
        Command::Sandbox => {
            let found = app.sandbox();
            let gaps = found.gaps();
            let verdict = match gaps.is_empty() {
                true => "Low-risk commands may be auto-approved.".to_string(),
                false => format!(
                    "Every command is asked: the sandbox here cannot stop {}.",
                    gaps.join(", ")
                ),
            };
            let text = format!(
                "{}\nLimits: {}.\n{verdict}\n",
                found.summary(),
                found.limits.summary()
            );
            out(json!({"sandbox": found, "gaps": gaps}), text);
        }
        Command::Project(command) => projects::run(&ctx, command)?,
        Command::Config(command) => config::config(&ctx, command)?,
        Command::Gateway(command) => gateway::run(&ctx, command)?,
        Command::Proposal(command) => proposals::run(&ctx, command)?,
        Command::Version(command) => versions::run(&ctx, command)?,
        Command::Provider(command) => providers::provider_cmd(&ctx, command)?,
        Command::Model(command) => model::run(&ctx, command)?,
        Command::Summarize {
            chat,
            provider,
            model,
        } => chat::summarize(&ctx, chat, provider, model)?,
        Command::Models { provider } => providers::models(&ctx, provider)?,
        Command::Chat(args) => chat::chat(&ctx, args)?,
        Command::Context {
            project,
            prompt,
            provider,
            model,
            editor,
        } => context::context(&ctx, &project, &prompt, provider, model, editor)?,
        Command::Show { message_id } => chat::show(&ctx, message_id)?,
        Command::Chats { project, archived } => chats::list(&ctx, &project, archived)?,
        Command::Archive { chat, undo } => chats::archive(&ctx, chat, undo)?,
        Command::SearchChats { project, query } => chats::search(&ctx, &project, &query)?,
        Command::Prompt(command) => prompts::run(&ctx, command)?,
        Command::Mcp(command) => mcp::run(&ctx, command)?,
        Command::Usage { project } => usage::run(&ctx, project.as_deref())?,
        Command::Search(args) => search::run(&ctx, args)?,
        Command::Definition { project, name } => symbols::definition(&ctx, &project, &name)?,
        Command::References { project, name } => symbols::references(&ctx, &project, &name)?,
        Command::Symbols {
            project,
            max,
            query,
        } => symbols::symbols(&ctx, &project, &query, max)?,
        Command::Messages { chat: chat_id } => chats::messages(&ctx, chat_id)?,
        Command::Workspace(command) => workspace::workspace(&ctx, command)?,
        Command::Run(args) => return workspace::run(&ctx, args),
        // Handled before the database is opened (see `main`).
        Command::Journal { root, socket } => keep_journal(&root, &socket)?,
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::described;

    #[test]
    fn a_cause_its_error_already_quotes_is_said_once() {
        /// Quotes its source in its own text, as the core's errors do.
        #[derive(Debug)]
        struct Quoting(std::io::Error);
        impl std::fmt::Display for Quoting {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "the code index cannot be used: {}", self.0)
            }
        }
        impl std::error::Error for Quoting {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let io = std::io::Error::other("database is locked");
        let error = anyhow::Error::from(Quoting(io)).context("tandem definition");
        assert_eq!(
            described(&error),
            "tandem definition: the code index cannot be used: database is locked"
        );
    }
}
