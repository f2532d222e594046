use super::*;

fn layout_for(c: &Confinement) -> Layout {
    let identity = Identity {
        uid: 1000,
        gid: 1000,
        name: "pat".into(),
        home: "/home/pat".into(),
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

fn targets(layout: &Layout) -> Vec<String> {
    layout
        .world
        .ops
        .iter()
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
    let etc = layout.world.ops.iter().find_map(|op| match op {
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
    let covers: Vec<String> = layout
        .world
        .ops
        .iter()
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
