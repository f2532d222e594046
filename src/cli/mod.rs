//! The headless CLI. Every command goes through the application layer (`tandem_core::app`), as
//! the window does. With `--json`, a
//! command prints exactly one JSON object on stdout; errors go to stderr with a non-zero exit.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use serde_json::json;

mod chat;
mod chats;
mod config;
mod ctx;
mod gateway;
mod interrupt;
mod mcp;
mod model;
mod output;
mod prompts;
mod providers;
mod search;
mod symbols;
mod usage;
mod workspace;

use tandem_core::app::App;
use tandem_core::edits::plan::EditPlan;
use tandem_core::edits::{FileSelection, OpStatus, Selection};
use tandem_core::vcs;

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
    Project(ProjectCommand),
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
    /// Store a model reply as a proposal and show its plan.
    Propose {
        /// Project id or folder path.
        #[arg(long)]
        project: String,
        /// The reply text (`-` reads standard input).
        #[arg(long, value_name = "FILE")]
        response: PathBuf,
        /// The prompt the reply answers (stored as the user message).
        #[arg(long)]
        prompt: Option<String>,
        /// Add to this chat instead of starting a new one.
        #[arg(long)]
        chat: Option<i64>,
    },
    /// Print a proposal's unified diff.
    Diff { message_id: i64 },
    /// Apply a pending proposal as one commit.
    Approve {
        message_id: i64,
        /// Apply only these files (repeat); `PATH:1,3` applies only hunks 1 and 3 (1-based).
        #[arg(long = "only", value_name = "PATH[:HUNKS]")]
        only: Vec<String>,
        /// With --only: do not install the proposal's dependencies.
        #[arg(long)]
        skip_dependencies: bool,
        /// Why the rest was left out; told to the model on the next turn with what was.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Reject a pending proposal; nothing on disk changes.
    Reject {
        message_id: i64,
        /// Why; told to the model on the next turn.
        #[arg(long)]
        reason: Option<String>,
    },
    /// List a project's versions (commits), newest first.
    Log {
        #[arg(long)]
        project: String,
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Print one version's diff against its parent.
    ShowVersion {
        #[arg(long)]
        project: String,
        commit: String,
    },
    /// Bring the project back to a version (as a new commit).
    Restore {
        #[arg(long)]
        project: String,
        commit: String,
    },
    /// Undo the last approved change (as a new commit).
    Undo {
        #[arg(long)]
        project: String,
    },
    /// Save a file's new content and commit it, as the editor does.
    Save {
        #[arg(long)]
        project: String,
        /// The file, relative to the project.
        path: String,
        /// Where to read the new content (`-` reads standard input).
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
    },
}

#[derive(Subcommand)]
enum ProjectCommand {
    /// Add a folder as a project (runs `git init` if it is not a repository).
    Add {
        path: PathBuf,
        #[arg(long)]
        name: Option<String>,
    },
    /// List projects.
    List,
    /// Show or change a project's settings: check command, trust, auto-approve, context globs.
    Config(config::ProjectConfigArgs),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
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
    match run(cli.data_dir, cli.json, command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
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
        Command::Project(ProjectCommand::Add { path, name }) => {
            let added = app.add_project(&path, name.as_deref())?;
            let p = &added.project;
            let note = match (added.already_added, added.initialized_git) {
                (true, _) => " (already added)",
                (false, true) => " (initialised a git repository with an initial commit)",
                (false, false) => "",
            };
            // The code index is built now, while the person waits for the import anyway, so
            // that the first turn does not.
            let indexed = app.index_project(p)?;
            let files = indexed.extracted + indexed.unchanged;
            out(
                json!({"project_id": p.id, "name": p.name, "path": p.path, "initialized_git": added.initialized_git, "indexed_files": files}),
                format!(
                    "project {} {} at {}{note}; {files} files in its code index\n",
                    p.id,
                    p.name,
                    p.path.display()
                ),
            );
        }
        Command::Project(ProjectCommand::Config(args)) => config::project(&ctx, args)?,
        Command::Config(command) => config::config(&ctx, command)?,
        Command::Gateway(command) => gateway::run(&ctx, command)?,
        Command::Project(ProjectCommand::List) => {
            let projects = app.projects()?;
            let text = projects
                .iter()
                .map(|p| format!("{:>4}  {:<20} {}\n", p.id, p.name, p.path.display()))
                .collect();
            out(json!({"projects": projects}), text);
        }
        Command::Propose {
            project,
            response,
            prompt,
            chat,
        } => {
            let project = app.project(&project)?;
            let reply = String::from_utf8(read_input(&response)?)
                .context("the response file is not UTF-8 text")?;
            let proposal = app.propose(&project, chat, prompt.as_deref(), &reply)?;
            let id = proposal.message.id;
            out(
                json!({
                    "message_id": id,
                    "chat_id": proposal.chat.id,
                    "approval_state": proposal.message.approval_state,
                    "operations": operations_json(&proposal.plan),
                    "files": proposal.plan.files,
                    "dependencies": proposal.plan.dependencies,
                    "summary": proposal.plan.summary,
                }),
                plan_text(id, proposal.chat.id, &proposal.plan),
            );
        }
        Command::Diff { message_id } => {
            let review = app.review(message_id)?;
            let diff = review.plan.unified_diff();
            out(
                json!({"message_id": message_id, "diff": diff}),
                diff.clone(),
            );
        }
        Command::Approve {
            message_id,
            only,
            skip_dependencies,
            reason,
        } => {
            let selection = selection(&only, skip_dependencies)?;
            let outcome = app.approve(message_id, selection.as_ref(), reason.as_deref())?;
            let mut text = match &outcome.commit {
                Some(commit) => format!("approved: commit {commit}\n"),
                None => "approved: nothing needed changing, no commit\n".to_string(),
            };
            if let Some(manual) = &outcome.manual_commit {
                text.push_str(&format!(
                    "(your uncommitted edits were committed first: {manual})\n"
                ));
            }
            if let Some(report) = &outcome.install {
                let state = if report.success { "ok" } else { "FAILED" };
                text.push_str(&format!(
                    "dependencies: `{}` {state}\n{}",
                    report.command, report.output
                ));
            }
            if let Some(error) = &outcome.install_error {
                text.push_str(&format!("dependencies not installed: {error}\n"));
            }
            out(serde_json::to_value(&outcome)?, text);
        }
        Command::Reject { message_id, reason } => {
            app.reject(message_id, reason.as_deref())?;
            out(
                json!({"message_id": message_id, "approval_state": "rejected"}),
                format!("rejected message {message_id}\n"),
            );
        }
        Command::Log { project, limit } => {
            let project = app.project(&project)?;
            let versions = app.history(&project, limit)?;
            let mut text = String::new();
            for v in &versions {
                text.push_str(&format!(
                    "{}  {}  {}\n",
                    vcs::short(&v.hash),
                    time(v.time),
                    v.message.lines().next().unwrap_or("")
                ));
                for f in &v.files {
                    text.push_str(&format!("         {:?} {}\n", f.kind, f.path).to_lowercase());
                }
            }
            out(json!({"versions": versions}), text);
        }
        Command::ShowVersion { project, commit } => {
            let project = app.project(&project)?;
            let diff = app.version_diff(&project, &commit)?;
            out(json!({"commit": commit, "diff": diff}), diff.clone());
        }
        Command::Restore { project, commit } => {
            let project = app.project(&project)?;
            let outcome = app.restore(&project, &commit)?;
            let mut text = match &outcome.commit {
                Some(c) => format!(
                    "restored {}: commit {c}; {} later chat message(s) removed\n",
                    vcs::short(&outcome.restored),
                    outcome.removed_messages
                ),
                None => format!(
                    "the project already is at {}\n",
                    vcs::short(&outcome.restored)
                ),
            };
            for note in outcome.notes() {
                text.push_str(&format!("note: {note}\n"));
            }
            out(serde_json::to_value(&outcome)?, text);
        }
        Command::Undo { project } => {
            let project = app.project(&project)?;
            let outcome = app.undo(&project)?;
            let mut text = format!(
                "undid {}: commit {}\n",
                vcs::short(&outcome.reverted),
                outcome.commit
            );
            for note in outcome.notes() {
                text.push_str(&format!("note: {note}\n"));
            }
            out(serde_json::to_value(&outcome)?, text);
        }
        Command::Save {
            project,
            path,
            from,
        } => {
            let project = app.project(&project)?;
            let bytes = read_input(&from)?;
            let commit = app.save_file(&project, &path, &bytes)?;
            let text = match &commit {
                Some(c) => format!("saved {path}: commit {c}\n"),
                None => format!("saved {path}: unchanged\n"),
            };
            out(json!({"commit": commit}), text);
        }
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
        } => chat::context(&ctx, &project, &prompt, provider, model, editor)?,
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
    }
    Ok(ExitCode::SUCCESS)
}

/// `--only PATH[:1,3]` (hunks 1-based, as shown by `tandem diff`).
fn selection(only: &[String], skip_dependencies: bool) -> Result<Option<Selection>> {
    if only.is_empty() {
        if skip_dependencies {
            bail!("--skip-dependencies needs --only (name the files to apply)");
        }
        return Ok(None);
    }
    let files = only
        .iter()
        .map(|spec| {
            let (path, hunks) = match spec.rsplit_once(':') {
                Some((path, list))
                    if !list.is_empty()
                        && list.split(',').all(|h| h.trim().parse::<usize>().is_ok()) =>
                {
                    let hunks = list
                        .split(',')
                        .filter_map(|h| h.trim().parse::<usize>().ok())
                        .map(|h| h.checked_sub(1).context("hunks are numbered from 1"))
                        .collect::<Result<Vec<_>>>()?;
                    (path.to_string(), Some(hunks))
                }
                _ => (spec.clone(), None),
            };
            Ok(FileSelection { path, hunks })
        })
        .collect::<Result<_>>()?;
    Ok(Some(Selection {
        files,
        dependencies: !skip_dependencies,
    }))
}

fn operations_json(plan: &EditPlan) -> serde_json::Value {
    serde_json::to_value(&plan.operations).unwrap_or_default()
}

fn plan_text(message_id: i64, chat_id: i64, plan: &EditPlan) -> String {
    let mut text = format!("message {message_id} in chat {chat_id}\n");
    if let Some(summary) = &plan.summary {
        text.push_str(&format!("summary: {summary}\n"));
    }
    for op in &plan.operations {
        let status = match op.status {
            OpStatus::Ok => match &op.note {
                Some(note) => format!("ok ({note})"),
                None => "ok".to_string(),
            },
            OpStatus::AlreadyApplied => "already applied".to_string(),
            OpStatus::Error => format!("ERROR: {}", op.error.as_deref().unwrap_or("")),
        };
        let target = match &op.to {
            Some(to) => format!("{} -> {to}", op.path),
            None => op.path.clone(),
        };
        text.push_str(&format!(
            "  {:<15} {:<40} +{:<4} -{:<4} {status}\n",
            serde_json::to_value(op.op)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            target,
            op.added,
            op.removed
        ));
    }
    for sql in &plan.sql {
        text.push_str(&format!(
            "  sql (not executed): {}\n",
            sql.description.as_deref().unwrap_or(&sql.sql)
        ));
    }
    for finding in &plan.security_findings {
        text.push_str(&format!(
            "  security finding [{}]: {}\n",
            finding.level, finding.title
        ));
    }
    if plan.is_proposal() {
        let ready = plan.errors().next().is_none();
        text.push_str(&if ready {
            format!("review: tandem diff {message_id} | approve: tandem approve {message_id} | reject: tandem reject {message_id}\n")
        } else {
            format!("some operations failed: approve only the working files with `tandem approve {message_id} --only PATH`, or reject\n")
        });
    } else {
        text.push_str("no changes proposed\n");
    }
    text
}

fn time(seconds: i64) -> String {
    let when = UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    humantime::format_rfc3339_seconds(when).to_string()
}
