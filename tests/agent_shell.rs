//! The agent's `run_shell` executor: the write sandbox, killing whole process groups on
//! timeout, cancel and drop, bounded output, and not hanging on inherited pipes.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

use std::path::Path;
use std::time::{Duration, Instant};

use tandem_core::process::{ExecError, SandboxStatus, ShellOutcome, ShellRequest, run_shell};
use tokio_util::sync::CancellationToken;

mod common;
mod sandbox;
mod shell_corpus;

use common::marker;

async fn run(request: ShellRequest) -> ShellOutcome {
    run_shell(request, CancellationToken::new()).await.unwrap()
}

/// Live processes whose command line contains `marker` (zombies have an empty one).
fn processes_with(marker: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(marker) {
                found.push((pid, cmdline));
            }
        }
    }
    found
}

/// Waits until at least `count` processes carry the marker (proof the command really started
/// what we later expect to be killed).
async fn wait_for_processes(marker: &str, count: usize) {
    let started = Instant::now();
    while processes_with(marker).len() < count {
        assert!(started.elapsed() < Duration::from_secs(5), "never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Fails if a process with the marker is still alive after ~2 s (time for the kernel to reap).
async fn assert_no_orphans(marker: &str) {
    let started = Instant::now();
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "orphans survived: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn request(command: &str, cwd: &Path) -> ShellRequest {
    ShellRequest::new(command, cwd)
}

/// The kernel's Landlock ABI, asked directly (not through the code under test), so the
/// sandbox test knows whether it must prove a denial.
#[allow(unsafe_code)]
fn kernel_landlock_abi() -> i64 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) reads no
    // memory; it returns the ABI version or -1.
    unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let mark = marker(301);
    let command = format!("echo started; sleep {mark} & sleep {mark}; wait");
    let task = tokio::spawn(run(ShellRequest {
        timeout: Duration::from_secs(1),
        ..request(&command, dir.path())
    }));
    // The shell and both sleeps.
    wait_for_processes(&mark, 3).await;
    let started = Instant::now();
    let outcome = task.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(4), "{outcome:?}");
    assert!(outcome.timed_out && !outcome.cancelled, "{outcome:?}");
    assert_eq!(outcome.signal, Some(libc::SIGKILL));
    assert_eq!(outcome.stdout, "started\n");
    assert!(outcome.render_for_model().contains("Timed out after"));
    assert_no_orphans(&mark).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let mark = marker(302);
    let cancel = CancellationToken::new();
    let command = format!("sleep {mark} & sleep {mark}; wait");
    let task = tokio::spawn(run_shell(request(&command, dir.path()), cancel.clone()));
    wait_for_processes(&mark, 3).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    cancel.cancel();
    let outcome = task.await.unwrap().unwrap();
    assert!(started.elapsed() < Duration::from_secs(2), "{outcome:?}");
    assert!(outcome.cancelled && !outcome.timed_out, "{outcome:?}");
    assert!(outcome.render_for_model().contains("Cancelled"));
    assert_no_orphans(&mark).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_future_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let mark = marker(303);
    let command = format!("sleep {mark} & sleep {mark}; wait");
    let mut running = Box::pin(run(request(&command, dir.path())));
    tokio::select! {
        outcome = &mut running => panic!("finished early: {outcome:?}"),
        () = wait_for_processes(&mark, 3) => {}
    }
    drop(running);
    assert_no_orphans(&mark).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_output_is_capped_per_stream_without_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    // stderr first: a reader that drained stdout to its end first would deadlock here.
    let command = "yes err | head -c 1000000 >&2; printf HEAD; yes abcdefg | head -c 1000000; \
                   printf TAIL; exit 3";
    let started = Instant::now();
    let outcome = run(ShellRequest {
        output_cap: 1000,
        ..request(command, dir.path())
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(outcome.exit_code, Some(3));
    assert!(outcome.stdout_truncated && outcome.stderr_truncated);
    assert!(
        outcome.stdout.starts_with("HEADabcdefg\n"),
        "{}",
        outcome.stdout
    );
    assert!(
        outcome.stdout.ends_with("abcdefg\nTAIL"),
        "{}",
        outcome.stdout
    );
    assert!(outcome.stdout.contains("\n… 999008 characters omitted …\n"));
    assert!(outcome.stdout.chars().count() < 1100);
    assert!(outcome.stderr.starts_with("err\n") && !outcome.stderr.contains("abc"));
    let rendered = outcome.render_for_model();
    assert!(rendered.starts_with("Exit code: 3\n"), "{rendered}");
    assert!(rendered.contains("[stdout (truncated)]\nHEAD"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_exit_codes_and_signals_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run(request("echo out; echo err >&2; exit 7", dir.path())).await;
    assert_eq!(
        (outcome.stdout.as_str(), outcome.stderr.as_str()),
        ("out\n", "err\n")
    );
    assert_eq!((outcome.exit_code, outcome.signal), (Some(7), None));
    assert!(!outcome.stdout_truncated && !outcome.timed_out && !outcome.cancelled);
    assert_eq!(outcome.sandbox, SandboxStatus::NotRequested);
    let killed = run(request("kill -TERM $$", dir.path())).await;
    assert_eq!(
        (killed.exit_code, killed.signal),
        (None, Some(libc::SIGTERM))
    );
    // The secrets filter is applied to the real environment: PATH survives it.
    let env = run(request("printf %s \"$PATH\"", dir.path())).await;
    assert!(!env.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_jobs_holding_stdout_do_not_block_the_result() {
    let dir = tempfile::tempdir().unwrap();
    // Same group: killed as soon as the shell exits, which closes the pipe.
    let mark = marker(30);
    let started = Instant::now();
    let outcome = run(request(&format!("sleep {mark} & echo done"), dir.path())).await;
    assert!(started.elapsed() < Duration::from_secs(3), "{outcome:?}");
    assert_eq!(
        (outcome.exit_code, outcome.stdout.as_str()),
        (Some(0), "done\n")
    );
    assert_no_orphans(&mark).await;

    // A new session escapes the group and holds the pipe: the wait for it is bounded.
    let mark = marker(8);
    let started = Instant::now();
    let outcome = run(request(
        &format!("setsid sleep {mark} & echo done"),
        dir.path(),
    ))
    .await;
    assert!(started.elapsed() < Duration::from_secs(3), "{outcome:?}");
    assert_eq!(
        (outcome.exit_code, outcome.stdout.as_str()),
        (Some(0), "done\n")
    );
    for (pid, _) in processes_with(&mark) {
        let _ = std::process::Command::new("kill").arg(pid).status();
    }
}

#[tokio::test]
async fn a_missing_or_file_cwd_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let error = run_shell(request("true", &missing), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(&error, ExecError::Cwd { path, .. } if *path == missing));
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let error = run_shell(request("true", &file), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("not a directory"), "{error}");
}

/// Every command of `tests/shell_corpus/corpus.txt` gets its expected class from the policy
/// (Scoped trust, default settings); all mismatches are reported at once.
#[test]
fn corpus_commands_get_their_expected_risk() {
    use tandem_core::agent::policy::{Decision, PolicySettings, Risk, ToolCallView, Trust, assess};
    let project = std::env::temp_dir().join(format!("tandem-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&project).unwrap();
    let entries = shell_corpus::load(&shell_corpus::Targets::unused());
    let mut counts = std::collections::BTreeMap::new();
    let mut wrong = Vec::new();
    for e in &entries {
        *counts.entry(e.expected.as_str()).or_insert(0usize) += 1;
        let arguments = serde_json::json!({ "command": e.command });
        let view = ToolCallView {
            tool: "run_shell",
            arguments: &arguments,
        };
        let a = assess(&view, Trust::Scoped, &PolicySettings::default(), &project);
        let got = match a.risk {
            _ if matches!(a.decision, Decision::Deny { .. }) => "deny",
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        };
        if got != e.expected {
            wrong.push(format!(
                "line {}: {:?}: expected {}, got {got} ({:?})",
                e.line, e.command, e.expected, a.reasons
            ));
        }
    }
    std::fs::remove_dir_all(&project).unwrap();
    eprintln!("corpus: {} commands, {counts:?}", entries.len());
    assert!(
        wrong.is_empty(),
        "{} mismatches:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(
        counts,
        shell_corpus::COUNTS.into_iter().collect(),
        "the corpus's lines per class"
    );
}

/// Set only in the child run by `secrets_never_reach_a_real_command`.
const INNER: &str = "SCRUB_CHECK_CHILD";

/// The half of the secrets test that runs in a child test process whose environment holds
/// secrets and shell hijacks: the command it runs prints its whole environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_check_inner_half() {
    if std::env::var_os(INNER).is_none() {
        return; // Only meaningful inside the child started below.
    }
    let dir = tempfile::tempdir().unwrap();
    let outcome = run(request("env", dir.path())).await;
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    println!("CHILD-ENV-BEGIN\n{}CHILD-ENV-END", outcome.stdout);
}

#[test]
fn secrets_never_reach_a_real_command() {
    let planted = [
        ("OPENAI_API_KEY", "sk-planted-openai"),
        ("GITHUB_TOKEN", "ghp-planted-token"),
        ("AWS_SECRET_ACCESS_KEY", "planted-aws"),
        ("DB_PASSWORD", "planted-password"),
        ("TANDEM_DATA_DIR", "/planted/tandem"),
        ("BASH_ENV", "/planted/bash_env"),
        ("BASH_FUNC_ls%%", "() { echo planted; }"),
        // Credentials under names no deny-list knows: not on the allow-list, not passed.
        ("DATABASE_URL", "postgres://app:planted-db@db/app"),
        ("MY_SERVICE_AUTH", "planted-service"),
        ("HTTPS_PROXY", "http://user:planted-proxy@proxy:3128"),
        ("HARMLESS_SETTING", "planted-unknown-name"),
    ];
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "secrets_check_inner_half", "--nocapture"])
        .envs(planted)
        .env(INNER, "1")
        .env("RUST_LOG", "kept-value")
        .output()
        .unwrap();
    let stdout = common::succeeded(&output);
    let env = stdout
        .split("CHILD-ENV-BEGIN\n")
        .nth(1)
        .and_then(|rest| rest.split("CHILD-ENV-END").next())
        .unwrap_or_else(|| panic!("the child did not report its command's environment:\n{stdout}"));
    // The command really ran with the process's environment (the control)...
    assert!(env.contains("RUST_LOG=kept-value"), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    // ...and nothing planted reached it, by name or by value.
    for (name, value) in planted {
        assert!(!env.contains(name), "{name} reached the command:\n{env}");
        assert!(
            !env.contains(value),
            "the value of {name} reached the command"
        );
    }
}
