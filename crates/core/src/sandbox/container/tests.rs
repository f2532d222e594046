use super::child::root::Op;
use super::*;

fn layout_for(c: &Confinement) -> Layout {
    layout_at(c, Path::new("/home/pat"))
}

/// The layout of `c` for a person whose home directory is `home`.
fn layout_at(c: &Confinement, home: &Path) -> Layout {
    let identity = Identity {
        uid: 1000,
        gid: 1000,
        name: "pat".into(),
        home: home.to_path_buf(),
    };
    let call = Call {
        confinement: c,
        stage: stage(&identity).unwrap_or_else(|e| panic!("{e}")),
        identity: &identity,
        pid_max: Some(1324),
        limits: Limits::default(),
    };
    layout(&call).unwrap_or_else(|e| panic!("{e}"))
}

/// The target below the new root, as the command sees it.
fn inside(dst: &std::ffi::CStr) -> String {
    let root = stage(crate::sandbox::identity())
        .unwrap_or_else(|e| panic!("{e}"))
        .root
        .display()
        .to_string();
    dst.to_string_lossy().trim_start_matches(&root).to_string()
}

/// Every step of the layout, those done only when their path is there included.
fn steps(layout: &Layout) -> Vec<&Op> {
    fn add<'a>(ops: &'a [Op], out: &mut Vec<&'a Op>) {
        for op in ops {
            match op {
                Op::IfPresent { ops, .. } => add(ops, out),
                op => out.push(op),
            }
        }
    }
    let mut out = Vec::new();
    add(&layout.world.ops, &mut out);
    out
}

fn targets(layout: &Layout) -> Vec<String> {
    steps(layout)
        .into_iter()
        .filter_map(|op| match op {
            Op::Bind { dst, .. } | Op::Tmpfs { dst, .. } | Op::Proc { dst, .. } => {
                Some(inside(dst))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn the_root_holds_the_system_the_project_and_nothing_of_the_home() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let project = dir.path().join("p");
    let home = dir.path().join("home");
    for sub in [
        "p/.git",
        "p/src",
        "home/.ssh",
        "home/.cargo/registry",
        "home/.cache/x",
    ] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap_or_else(|e| panic!("{e}"));
    }
    let c = Confinement {
        readable: vec![home.join(".cargo/registry"), home.join(".missing")],
        hidden: vec![home.join(".ssh")],
        ..Confinement::new(&project, dir.path())
    };
    let got = targets(&layout_for(&c));
    let real = |p: &Path| p.canonicalize().unwrap_or_else(|e| panic!("{e}"));
    let project = real(&project).display().to_string();
    for wanted in [
        "/usr".to_string(),
        "/proc".into(),
        "/tmp".into(),
        "/dev/null".into(),
        "/dev/shm".into(),
        "/home/pat".into(),
        project.clone(),
        format!("{project}/.git"),
        real(&home.join(".cargo/registry")).display().to_string(),
    ] {
        assert!(got.contains(&wanted), "{wanted} not mounted: {got:?}");
    }
    let home = real(&home).display().to_string();
    assert!(!got.iter().any(|t| t == &home || t.starts_with(&format!("{home}/.c"))
        && !t.ends_with("registry")), "{got:?}");
    // `/etc` is the stage's, never the host's.
    let layout = layout_for(&c);
    let etc = steps(&layout).into_iter().find_map(|op| match op {
        Op::Bind { src, dst, .. } if inside(dst) == "/etc" => Some(src.clone()),
        _ => None,
    });
    assert_ne!(etc.as_deref(), Some(c"/etc"));
    assert!(etc.is_some_and(|e| e.to_string_lossy().contains("tandem-container-")));
    for never in ["/run", "/var/run", "/root", "/home"] {
        assert!(
            !got.iter().any(|t| t == never),
            "{never} mounted whole: {got:?}"
        );
    }
    // Parents are mounted before what is below them.
    let at = |t: &str| got.iter().position(|g| g == t);
    assert!(at("/tmp") < at(&project));
}

#[test]
fn hidden_paths_inside_the_project_are_covered() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let project = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(project.join(".ssh")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(project.join(".netrc"), "x").unwrap_or_else(|e| panic!("{e}"));
    let c = Confinement {
        hidden: vec![project.join(".ssh"), project.join(".netrc")],
        ..Confinement::new(&project, &project)
    };
    let layout = layout_for(&c);
    let covers: Vec<String> = steps(&layout)
        .into_iter()
        .filter_map(|op| match op {
            Op::Tmpfs { dst, flags, .. } if flags & libc::MS_RDONLY != 0 => Some(dst),
            Op::Bind { src, dst, .. } if src.to_bytes().ends_with(b"/dev/null") => Some(dst),
            _ => None,
        })
        .map(|d| inside(d))
        .collect();
    for hidden in [".ssh", ".netrc"] {
        let path = project.join(hidden).display().to_string();
        assert!(covers.contains(&path), "{path} not covered: {covers:?}");
    }
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "git {args:?}");
}

/// What git made is shown (a linked worktree's directories, a submodule's); a `.git` file a
/// command could have written, naming any other directory, shows nothing more.
#[test]
fn only_the_git_directories_git_made_for_the_project_are_shown() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let base = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    let main = base.join("main");
    std::fs::create_dir_all(&main).unwrap_or_else(|e| panic!("{e}"));
    git(&main, &["init", "-q"]);
    git(&main, &["commit", "-q", "--allow-empty", "-m", "x"]);
    git(&main, &["worktree", "add", "-q", "../wt"]);
    let sub = base.join("sub");
    std::fs::create_dir_all(&sub).unwrap_or_else(|e| panic!("{e}"));
    git(&sub, &["init", "-q"]);
    git(&sub, &["commit", "-q", "--allow-empty", "-m", "x"]);
    git(&main, &["submodule", "add", "-q", "../sub", "dep"]);
    let shown = |project: &Path| {
        let c = Confinement::new(project, project);
        git_dirs(project).unwrap_or_else(|e| panic!("{e}"));
        targets(&layout_for(&c))
    };
    let main_git = main.join(".git").display().to_string();
    let got = shown(&base.join("wt"));
    assert!(got.contains(&main_git), "{got:?}");
    assert!(got.contains(&format!("{main_git}/worktrees/wt")), "{got:?}");
    let got = shown(&main.join("dep"));
    assert!(got.contains(&format!("{main_git}/modules/dep")), "{got:?}");

    // Forged: a directory outside, another worktree's, one inside the project naming a
    // common directory outside.
    let secret = base.join("secret");
    std::fs::create_dir_all(&secret).unwrap_or_else(|e| panic!("{e}"));
    git(&main, &["worktree", "add", "-q", "../other"]);
    let forged = base.join("forged");
    let fake = forged.join("fake");
    std::fs::create_dir_all(&fake).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        fake.join("gitdir"),
        forged.join(".git").display().to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(fake.join("commondir"), &main_git).unwrap_or_else(|e| panic!("{e}"));
    for named in [
        secret.display().to_string(),
        format!("{main_git}/worktrees/other"),
        format!("{main_git}/modules/dep"),
        main_git.clone(),
        "fake".into(),
    ] {
        std::fs::write(forged.join(".git"), format!("gitdir: {named}\n"))
            .unwrap_or_else(|e| panic!("{e}"));
        let got = shown(&forged);
        let base_text = base.display().to_string();
        let outside: Vec<&String> = got
            .iter()
            .filter(|t| t.starts_with(&base_text) && !t.starts_with(&forged.display().to_string()))
            .collect();
        assert!(outside.is_empty(), "gitdir: {named} showed {outside:?}");
    }
    // A link is refused.
    std::fs::remove_file(forged.join(".git")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(&secret, forged.join(".git")).unwrap_or_else(|e| panic!("{e}"));
    assert!(git_dirs(&forged).is_err());
}

/// Landlock must stand alone behind a cover the host can remove: no rule that reads may lie
/// on or above a hidden path, though the project and a toolchain are mounted below the home
/// directory and `/tmp` (the test's directories are there), both the container's own.
#[test]
fn no_read_grant_lies_above_a_hidden_path_below_the_private_roots() {
    use crate::sandbox::landlock::{Rights, container_rules};
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let home = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    let project = home.join("code/app");
    for sub in ["code/app/src", ".gem/specs", ".cargo/bin"] {
        std::fs::create_dir_all(home.join(sub)).unwrap_or_else(|e| panic!("{e}"));
    }
    let hidden = vec![project.join(".env"), home.join(".gem/credentials")];
    for file in &hidden {
        std::fs::write(file, "secret").unwrap_or_else(|e| panic!("{e}"));
    }
    let temp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let c = Confinement {
        readable: vec![home.join(".gem"), home.join(".cargo/bin")],
        hidden: hidden.clone(),
        ..Confinement::new(&project, temp.path())
    };
    let layout = layout_at(&c, &home);
    let rights = Rights {
        read: 1,
        all: 3,
        list: 4,
        file: 3,
    };
    let rules = container_rules(&layout.grants, &hidden, rights);
    for (path, bits) in &rules {
        let above = hidden.iter().find(|h| h.starts_with(path));
        assert!(
            bits & rights.read == 0 || above.is_none(),
            "{} grants {above:?}: {rules:?}",
            path.display()
        );
    }
    // What the container makes for itself stays writable: a tool's cache, `~/.cargo` (its
    // lock files beside the toolchain), the project's files.
    for path in [
        home.join(".cache"),
        home.join(".cargo"),
        project.join("src"),
    ] {
        assert!(
            rules.contains(&(path.clone(), rights.all)),
            "{} not writable: {rules:?}",
            path.display()
        );
    }
    // Nothing hidden below: `/tmp` and the home directory are granted whole.
    let plain = Confinement {
        hidden: Vec::new(),
        ..c.clone()
    };
    let grants = layout_at(&plain, &home).grants;
    for root in [Path::new("/tmp"), &home] {
        assert!(
            grants.contains(&(root.to_path_buf(), Access::PrivateReadWrite)),
            "{grants:?}"
        );
    }
}
