//! Commands as the shell sees them: any input judged without a panic, a chain as risky as its
//! riskiest part, long and deeply nested commands, the network a part needs, wrappers that
//! re-split or hide options.

use super::*;

const SAMPLES: &[&str] = &[
    "ls",
    "cargo test",
    "touch a",
    "rm -rf build",
    "echo x > n.txt",
    "git push",
    "cat x | sh",
    "sudo ls",
    "npm run build",
    "curl x.example",
];

proptest! {
    #[test]
    fn split_command_never_panics(command in "\\PC{0,120}") {
        let _ = split_command(&command);
        let _ = allow_pattern_for(&command);
    }

    #[test]
    fn shellish_input_never_panics(command in "[a-z0-9 $(){}`'\"\\\\|&;<>~/.*=#!\\n-]{0,120}") {
        let _ = split_command(&command);
        let _ = allow_pattern_for(&command);
        let _ = shell(&command, Trust::Scoped, &settings(&["x*"], &["y*"], &["*"]));
    }

    #[test]
    fn assess_never_panics(
        tool in prop::sample::select(vec![
            "list_files", "read_file", "grep", "find_definitions", "find_references", "outline",
            "write_file", "search_replace", "rename_file", "delete_file", "run_shell", "a/b", "",
            "???",
        ]),
        text in "\\PC{0,60}",
        key in prop::sample::select(vec!["path", "command", "from", "to", "paths", "cwd"]),
        trust in prop::sample::select(vec![Trust::Trusted, Trust::Scoped, Trust::ReadOnly]),
        max in prop::option::of(prop::sample::select(vec![Low, Medium, High])),
    ) {
        let mut args = json!({ "paths": [text.clone(), 3] });
        args[key] = json!(text.clone());
        let s = PolicySettings { allow: vec![text.clone()], auto_approve_up_to: max, ..PolicySettings::default() };
        let a = call(tool, args, trust, &s);
        prop_assert!(!a.reasons.is_empty());
        let _ = call(tool, json!([text, null]), trust, &s);
    }

    #[test]
    fn a_chain_is_as_risky_as_its_riskiest_part(
        a in prop::sample::select(SAMPLES.to_vec()),
        b in prop::sample::select(SAMPLES.to_vec()),
        op in prop::sample::select(vec![" && ", " || ", "; ", " | ", " & ", "\n"]),
    ) {
        prop_assert_eq!(risk(&format!("{a}{op}{b}")), risk(a).max(risk(b)));
        prop_assert_eq!(risk(&format!("( {a} ){op}echo $({b})")), risk(a).max(risk(b)));
    }

    /// Visible text, that is: what does not show (`display::is_invisible`) is unreadable.
    #[test]
    fn single_quoted_text_is_only_text(
        text in "[^'\\p{Cc}\\p{Cf}\\p{Cn}\\p{Zl}\\p{Zp}\\p{Default_Ignorable_Code_Point}\\u{2800}\\u{fffc}\\u{16fe4}]{0,80}"
    ) {
        prop_assert_eq!(risk(&format!("echo '{text}'")), Low);
    }
}

#[test]
fn long_and_deeply_nested_commands_are_handled() {
    let deep = format!("echo {}rm -rf /{}", "$(".repeat(5000), ")".repeat(5000));
    assert_eq!(risk(&deep), High);
    assert_eq!(
        risk(&format!("{}ls{}", "( ".repeat(5000), ")".repeat(5000))),
        High
    );
    // Run together, the parentheses are bash's arithmetic command on the variable `ls`.
    assert_eq!(
        risk(&format!("{}ls{}", "(".repeat(5000), ")".repeat(5000))),
        Medium
    );
    assert_eq!(risk(&"`".repeat(10_001)), High);
    let long = "ls && ".repeat(20_000) + "rm -rf build";
    assert_eq!(classify_shell(&long, root()).1.len(), 20_001);
    assert_eq!(risk(&long), High);
    let mut nested = "rm -rf /".to_string();
    for _ in 0..8 {
        nested = format!("sh -c {}", quote(&nested));
    }
    assert_eq!(risk(&nested), High);
    let huge_sh = format!("sh -c '{}'", "ls; ".repeat(20_000));
    assert_eq!(risk(&huge_sh), Low);
}

#[test]
fn network_is_flagged_for_parts_that_need_it() {
    let net = |command: &str| shell(command, Trust::Scoped, &PolicySettings::default()).network;
    for command in [
        "curl https://x.example",
        "wget -q https://x.example/a",
        "ssh host uptime",
        "scp a host:b",
        "git push origin main",
        "git -C sub pull",
        "git -c x=y fetch",
        "git clone https://x.example/r.git",
        "git ls-remote origin",
        "git submodule update --init",
        "npm install",
        "pnpm add left-pad",
        "npx prettier .",
        "pip install requests",
        "cargo add serde",
        "cargo install ripgrep",
        "go get example.com/x",
        "go mod download",
        "rsync -a src host:dst",
        "cargo build && sh -c 'curl x.example'",
        "sudo apt-get install jq",
    ] {
        assert!(net(command), "{command}");
    }
    for command in [
        "ls",
        "git status",
        "cargo test",
        "git log",
        "npm test",
        "echo curl",
    ] {
        assert!(!net(command), "{command}");
    }
    let read = call(
        "read_file",
        json!({ "path": "a" }),
        Trust::Scoped,
        &PolicySettings::default(),
    );
    assert!(!read.network);
    let a = shell("curl x.example", Trust::Scoped, &PolicySettings::default());
    assert_eq!(serde_json::to_value(&a).unwrap()["network"], json!(true));
}

#[test]
fn wrappers_that_resplit_or_hide_options_are_not_low() {
    let cases = [
        ("env -S 'rm -rf build'", High),
        ("env -S'ls -la'", Medium),
        ("env --split-string='ls' x", Medium),
        ("env -i ls", Low),
        ("env --frob ls", Medium),
        ("xargs -0 -n1 echo", Low),
        ("xargs --frob echo", Medium),
        ("time -o /tmp/t ls", High),
        ("nice -n 5 ls", Low),
        ("timeout -s KILL 5 ls", Low),
        // A known flag takes no value: the program after it is still judged.
        ("env -i rm -rf build", High),
        ("command -p cat ~/.netrc", Medium),
        ("xargs -0 rm", High),
    ];
    for (command, expected) in cases {
        assert_eq!(
            risk(command),
            expected,
            "{command}: {:?}",
            classify_shell(command, root())
        );
    }
    assert!(split_command("env -S 'a b; c'").contains(&"c".to_string()));
}
