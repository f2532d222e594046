//! Every process dies with the call, other processes are invisible, nothing private is
//! shared, and everything has limits.

use std::time::{Duration, Instant};

use tandem_core::process::{Sandbox, ShellRequest};
use tandem_core::sandbox::Limits;

use super::super::{assert_no_orphans, marker, request, run, wait_for_processes};
use super::{Scratch, abi_or_report, contained, kernel_pid_max, unproven};

/// Processes that left the command's session and group (`setsid`, `nohup`, a double fork)
/// are gone when the call returns, and write nothing afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_the_command_started_outlives_the_call() {
    let s = Scratch::new();
    let mark = marker(30);
    let tag = super::mark();
    let late = s.root().join("late.txt");
    let command = format!(
        "setsid sh -c 'sleep {mark}; echo late > late.txt' & \
         (nohup sleep {mark} >/dev/null 2>&1 &) ; \
         sh -c 'sleep {mark} & exit 0'; echo started"
    );
    // Control: outside, the same command leaves its processes running.
    let control_mark = marker(3);
    let control = std::process::Command::new("/bin/sh")
        .args([
            "-c",
            &format!(
                "MARK=c{tag}; export MARK; {}",
                command.replace(&mark, &control_mark)
            ),
        ])
        .current_dir(s.outside.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(control.success());
    wait_for_processes(&control_mark, 3).await;
    // The mark finds survivors: the control's are there.
    assert!(!super::marked(&format!("c{tag}")).is_empty());
    let outcome = s
        .run(&format!("MARK={tag}; export MARK; {command}"), false)
        .await;
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    if contained(&outcome).is_none() {
        return;
    }
    assert_no_orphans(&mark).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        super::marked(&tag),
        Vec::<String>::new(),
        "processes outlived the call"
    );
    assert!(!late.exists());
    // Let the control's processes end on their own before the scratch project goes.
    tokio::time::sleep(Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_processes_and_shared_memory_are_out_of_sight() {
    let s = Scratch::new();
    let mark = marker(30);
    let mut neighbour = std::process::Command::new("sleep")
        .arg(&mark)
        .spawn()
        .unwrap();
    let shm = format!("/dev/shm/tandem-test-{}", std::process::id());
    std::fs::write(&shm, super::DECOY).unwrap();
    let command = format!(
        "ps -eo args | grep -c {mark}; cat /proc/{pid}/cmdline; cat {shm}; ls /proc | grep -c '^[0-9]'; \
         echo planted > /dev/shm/from-inside-{id}",
        pid = neighbour.id(),
        id = std::process::id(),
    );
    let outcome = s.run(&command, false).await;
    let _ = neighbour.kill();
    let _ = neighbour.wait();
    let _ = std::fs::remove_file(&shm);
    if contained(&outcome).is_none() {
        return;
    }
    let lines: Vec<&str> = outcome.stdout.lines().collect();
    // `grep -c` counts the shell (whose command line holds the marker) and itself: the
    // neighbour does not exist here.
    assert_eq!(lines.first(), Some(&"2"), "{outcome:?}");
    assert!(!outcome.stdout.contains(super::DECOY), "{outcome:?}");
    let processes: usize = lines.last().and_then(|l| l.parse().ok()).unwrap_or(999);
    assert!(processes < 10, "{processes} processes visible: {outcome:?}");
    let planted = format!("/dev/shm/from-inside-{}", std::process::id());
    assert!(
        !std::path::Path::new(&planted).exists(),
        "/dev/shm is shared"
    );
}

/// Runs `command` with `limits`, timed out after `secs`.
async fn limited(
    s: &Scratch,
    limits: Limits,
    command: &str,
    secs: u64,
) -> tandem_core::process::ShellOutcome {
    let mut confinement = s.confinement(false);
    confinement.limits = limits;
    run(ShellRequest {
        sandbox: Sandbox::Confined(confinement),
        timeout: Duration::from_secs(secs),
        ..request(command, s.root())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_hits_the_process_limit_and_the_call_still_ends() {
    let s = Scratch::new();
    let limits = Limits {
        processes: 64,
        ..Limits::default()
    };
    // 600 sleepers at once: past what 64 allows even before the PID numbers first wrap
    // (64 + 299); the control shows the same works with the default limit.
    let command = "n=0; while [ $n -lt 600 ]; do sleep 3 & n=$((n+1)); done 2>/dev/null; \
                   ps -e --no-headers | wc -l";
    let roomy = limited(&s, Limits::default(), command, 30).await;
    let started = Instant::now();
    let bomb = limited(&s, limits, command, 30).await;
    if contained(&bomb).is_none() {
        return;
    }
    let count =
        |o: &tandem_core::process::ShellOutcome| o.stdout.trim().parse::<usize>().unwrap_or(0);
    assert!(
        count(&roomy) >= 600,
        "the control could not start 600: {roomy:?}"
    );
    if !kernel_pid_max() && tandem_core::sandbox::identity().uid == 0 {
        unproven("the process limit (a PID namespace's pid_max, Linux 6.14) for root");
        return;
    }
    let SandboxStatus::Enforced(p) = &bomb.sandbox else {
        unreachable!()
    };
    assert!(p.processes_limited, "{bomb:?}");
    assert!(
        count(&bomb) <= 64 + 300,
        "{} processes: {bomb:?}",
        count(&bomb)
    );
    assert!(count(&bomb) < 600, "{bomb:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

use tandem_core::process::SandboxStatus;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_file_size_cpu_and_temp_space_are_limited() {
    let s = Scratch::new();
    let defaults = Limits::default();
    let memory = "perl -e '$x = \"a\" x (400 * 1024 * 1024); print \"allocated\\n\"'";
    let file = "head -c 8388608 /dev/zero > big.bin; wc -c < big.bin";
    let tmp = "head -c 16777216 /dev/zero > /tmp/fill; wc -c < /tmp/fill";
    // Controls: with the default limits each succeeds.
    let roomy = limited(&s, defaults, &format!("{memory}; {file}; {tmp}"), 60).await;
    if abi_or_report(&roomy).is_none() && contained(&roomy).is_none() {
        return;
    }
    assert!(roomy.stdout.contains("allocated"), "{roomy:?}");
    assert!(
        roomy.stdout.contains("8388608") && roomy.stdout.contains("16777216"),
        "{roomy:?}"
    );
    let memory_mb = Limits {
        memory_mb: 200,
        ..defaults
    };
    let tight = limited(&s, memory_mb, memory, 60).await;
    assert!(!tight.stdout.contains("allocated"), "memory: {tight:?}");
    let file_size_mb = Limits {
        file_size_mb: 4,
        ..defaults
    };
    let tight = limited(&s, file_size_mb, file, 60).await;
    assert!(!tight.stdout.contains("8388608"), "file size: {tight:?}");
    let written = std::fs::metadata(s.root().join("big.bin")).unwrap().len();
    assert!(written <= 4 << 20, "{written} bytes written");
    if contained(&tight).is_some() {
        let tmp_mb = Limits {
            tmp_mb: 8,
            ..defaults
        };
        let tight = limited(&s, tmp_mb, tmp, 60).await;
        assert!(!tight.stdout.contains("16777216"), "tmp: {tight:?}");
    }
    let started = Instant::now();
    let cpu_secs = Limits {
        cpu_secs: 1,
        ..defaults
    };
    let tight = limited(&s, cpu_secs, "perl -e '1 while 1'", 60).await;
    assert!(!tight.timed_out, "the CPU limit did not stop it: {tight:?}");
    assert!(started.elapsed() < Duration::from_secs(20), "{tight:?}");
}

/// Tandem still stops what it confined: a confined command that outlives its timeout is
/// killed with everything it started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_command_is_still_killed_on_timeout() {
    let s = Scratch::new();
    let mark = marker(304);
    let started = Instant::now();
    let outcome = run(ShellRequest {
        sandbox: Sandbox::Confined(s.confinement(false)),
        timeout: Duration::from_secs(1),
        ..request(
            &format!("setsid sleep {mark} & sleep {mark}; wait"),
            s.root(),
        )
    })
    .await;
    if abi_or_report(&outcome).is_none() && contained(&outcome).is_none() {
        return;
    }
    assert!(outcome.timed_out, "{outcome:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{outcome:?}");
    assert_eq!(outcome.signal, Some(libc::SIGKILL), "{outcome:?}");
    assert_no_orphans(&mark).await;
}

/// The memory limit holds for one process whatever memory it uses: shared anonymous
/// mappings, a `memfd` and System V shared memory are not counted by `RLIMIT_DATA`, so one
/// process can take far more than the limit (the person's machine runs out, not the
/// command). Known gap: only a cgroup's `memory.max` counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "known gap: RLIMIT_DATA does not count shared memory; run with --ignored to see it"]
async fn one_process_cannot_pass_the_memory_limit_with_shared_memory() {
    let s = Scratch::new();
    let tight = Limits {
        memory_mb: 200,
        ..Limits::default()
    };
    let grab = |how: &str| {
        format!(
            "python3 -c 'import mmap, os
n = 400 << 20
if \"{how}\" == \"private\": b = bytearray(n)
elif \"{how}\" == \"shared\":
    m = mmap.mmap(-1, n)
    for i in range(0, n, 4096): m[i] = 1
else:
    fd = os.memfd_create(\"x\")
    for _ in range(400): os.write(fd, bytes(1 << 20))
print(\"took 400 MiB: {how}\")' 2>&1"
        )
    };
    // Control: a private allocation of the same size is refused.
    let private = limited(&s, tight, &grab("private"), 60).await;
    if contained(&private).is_none() {
        return;
    }
    assert!(!private.stdout.contains("took"), "{private:?}");
    assert!(private.stdout.contains("MemoryError"), "{private:?}");
    for how in ["shared", "memfd"] {
        let outcome = limited(&s, tight, &grab(how), 60).await;
        assert!(
            !outcome.stdout.contains("took"),
            "{how}: one process took twice the memory limit: {outcome:?}"
        );
    }
}
