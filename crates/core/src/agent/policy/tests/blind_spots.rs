//! The classes of command a held-out attack suite found auto-approved: each attack must be
//! asked (at least medium) or refused, and the everyday commands next to it must stay low.

use super::*;

/// The commands of `cases` that do not get exactly their risk, described.
fn expect(cases: &[(&str, Risk)]) -> Vec<String> {
    cases
        .iter()
        .filter(|(command, expected)| risk(command) != *expected)
        .map(|(command, expected)| {
            let got = classify_shell(command, root());
            format!(
                "{command:?}: expected {expected:?}, got {:?} {:?}",
                got.0, got.2
            )
        })
        .collect()
}

/// The commands that are not refused even with every allow and auto-approval, described.
fn refused(commands: &[&str]) -> Vec<String> {
    let lax = PolicySettings {
        allow: vec!["*".into()],
        auto_approve_up_to: Some(High),
        ..PolicySettings::default()
    };
    let assess = |command: &&&str| shell(command, Trust::Trusted, &lax);
    let allowed = commands.iter().map(|c| (c, assess(&c)));
    allowed
        .filter(|(_, a)| kind(&a.decision) != "deny")
        .map(|(c, a)| format!("{c:?}: expected a refusal, got {a:?}"))
        .collect()
}

/// Reports every mismatch of a test at once.
fn all(found: &[Vec<String>]) {
    let wrong = found.concat();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn abbreviated_long_options_count_as_the_option_they_may_mean() {
    let r1 = expect(&[
        ("sort --out=/tmp/x README.md", High),
        ("sort --outp /tmp/x README.md", High),
        ("sort --ou=sorted.txt notes.txt", Medium),
        ("sort --compress=sh README.md", High),
        ("sed --in-pl s/a/b/ notes.txt", Medium),
        ("sed --in-pl=.bak s/a/b/ notes.txt", Medium),
        ("sed --expr='1e id' README.md", High),
        ("sed --fi=x.sed README.md", High),
        ("git diff --outp=f", Medium),
        ("git diff --outp=/tmp/f", High),
        ("git log --out /tmp/f", High),
        ("git show --o=/tmp/f", High),
        ("git grep --open-files=sh foo", High),
        ("git grep --open foo", High),
        ("git --exec-pa=/tmp log", High),
        ("git --git-d=/tmp/x status", Medium),
        ("git --conf=core.pager=X log", High),
        ("git log --ext-d", High),
        ("git diff --textc", Medium),
        ("git blame --cont /etc/passwd README.md", Medium),
        ("grep --fil=/etc/passwd README.md", Medium),
        ("date --se 2020-01-01", High),
        ("env --spl='rm -rf build'", High),
        ("xargs --arg=/etc/passwd echo", Medium),
        ("time --out=/tmp/x ls", High),
        ("jq --rawf k /etc/passwd -n .", Medium),
        ("pytest --basete=/tmp/x", High),
        ("npm test --script-sh=sh", High),
        ("rg --pr ./x foo", High),
        ("cargo check --manifest=/tmp/Cargo.toml", Medium),
    ]);
    let r2 = refused(&["rm --rec --no-preserve-root /", "chmod --rec 777 /"]);
    // Exact and unambiguous everyday spellings stay as they were.
    let r3 = expect(&[
        ("sort --reverse notes.txt", Low),
        ("git log --oneline -5", Low),
        ("git log --onel -5", Low),
        ("git diff --no-ext-diff", Low),
        ("grep --include='*.rs' -rn fn src", Low),
    ]);
    all(&[r1, r2, r3]);
}

#[test]
fn single_dash_long_options_are_read_as_long_options() {
    let r1 = expect(&[
        ("find -fprint /tmp/out", High),
        ("find -fls /tmp/out", High),
        ("find -fprintf /tmp/out %p", High),
        ("find -fprint0 /tmp/out", High),
        ("find -delete", High),
        ("find -exec rm {} +", High),
        ("find -ok rm {} ;", High),
        ("find . -fpri /tmp/out", Medium),
        ("find . -frobnicate", Medium),
        ("go test --exec=./evil ./...", High),
        ("go vet --vettool=./evil ./...", High),
        ("go test --o=/tmp/x", High),
        ("go test -o=/tmp/x", High),
    ]);
    let r2 = expect(&[
        ("find . -name '*.rs' -print", Low),
        ("find src -type f -newer Cargo.toml", Low),
        ("find . -maxdepth 2 -name '*.toml' -printf '%p\\n'", Low),
        ("go test -run TestX -v ./...", Low),
    ]);
    all(&[r1, r2]);
}

#[test]
fn options_in_unusual_positions_are_still_options() {
    let r1 = refused(&[
        "find -L / -delete",
        "find -H ~ -name x -delete",
        "find -D exec / -delete",
        "find -O3 / -delete",
        "find -P -- / -delete",
    ]);
    let r2 = expect(&[
        ("find -P . -fprint /tmp/x", High),
        ("find -L /etc -name passwd", Medium),
        ("git -C /tmp status", Medium),
        ("git --git-dir /tmp/x log", Medium),
        ("git -ccore.pager=sh log", High),
        ("git log HEAD --output=/tmp/x", High),
        ("sort README.md -o /tmp/x", High),
        ("sed s/a/b/ notes.txt -i", Medium),
        ("grep foo README.md -f /etc/passwd", Medium),
        ("cp -t/tmp README.md", High),
        ("cp --target=/tmp README.md", High),
        ("mv -t/tmp README.md", High),
        ("tree . -o /tmp/x", High),
    ]);
    let r3 = expect(&[("find -L . -name '*.rs'", Low), ("git -C src log -1", Low)]);
    all(&[r1, r2, r3]);
}

#[test]
fn git_options_the_table_does_not_know_are_asked() {
    let r1 = expect(&[
        ("git log --frobnicate", Medium),
        ("git status --frobnicate", Medium),
        ("git --frobnicate status", Medium),
        ("git show --output=/tmp/x", High),
        ("git stash show --output=/tmp/x", High),
        ("git stash show --ext-diff", High),
        ("git stash list --output=/tmp/x", High),
        ("git reflog show --output=/tmp/x", High),
        ("git blame -S /etc/passwd README.md", Medium),
        ("git blame --ignore-revs-file=/etc/passwd README.md", Medium),
        ("git diff -O/etc/passwd", Medium),
        ("git cat-file --textconv HEAD:README.md", Medium),
        ("git cat-file --filters HEAD:README.md", Medium),
        ("git branch --edit-description", Medium),
        ("git tag -v v1", Medium),
        ("git help -w log", Medium),
        ("git ls-files -X /etc/passwd", Medium),
        ("git -c alias.x='!rm -rf build' x", High),
        ("git format-patch -o /tmp/x HEAD~1", High),
        ("git archive -o /tmp/x HEAD", High),
        ("git bundle create /tmp/x HEAD", High),
        ("git config core.editor vim", High),
    ]);
    let r2 = expect(&[
        ("git log --oneline -5", Low),
        ("git log --format=%h/%s -3", Low),
        ("git log -p -1", Low),
        ("git log --stat --graph --all --decorate", Low),
        ("git log -n 5 --author=me --since=2.weeks", Low),
        ("git log -S foo --oneline", Low),
        ("git log --pretty=format:%h --no-color", Low),
        ("git diff --stat", Low),
        ("git diff --cached --name-only HEAD~1", Low),
        ("git diff -U5 --color-words src", Low),
        ("git diff -M50% --diff-filter=AM", Low),
        ("git show --stat HEAD", Low),
        ("git show HEAD:README.md", Low),
        ("git status -sb", Low),
        ("git status --porcelain=v1 -uno", Low),
        ("git blame -L 1,5 README.md", Low),
        ("git grep -n -e fn -- src", Low),
        ("git branch -vv", Low),
        ("git branch --show-current", Low),
        ("git tag -l", Low),
        ("git rev-parse --abbrev-ref HEAD", Low),
        ("git rev-parse --show-toplevel", Low),
        ("git ls-files -z", Low),
        ("git stash list", Low),
        ("git stash show -p", Low),
        ("git remote -v", Low),
        ("git describe --tags --always", Low),
        ("git shortlog -sn", Low),
        ("git cat-file -p HEAD", Low),
        ("git --no-pager diff", Low),
    ]);
    all(&[r1, r2]);
}

#[test]
fn scripts_that_read_write_or_run_are_not_low() {
    let r1 = expect(&[
        ("sed '1r /etc/passwd' README.md", Medium),
        ("sed 'R /etc/passwd' README.md", Medium),
        ("sed -e '$r ~/.netrc' README.md", Medium),
        ("sed --expression='1R /etc/shadow' README.md", Medium),
        ("sed -n \"$x\" README.md", Medium),
        ("sed \"s/a/$b/\" README.md", Medium),
        ("sed 's/x/y/gw /tmp/x' README.md", High),
        ("sed 'W /tmp/x' README.md", High),
        ("sed 's/x/y/e' README.md", High),
        ("awk 'BEGIN{system(\"id\")}'", High),
        ("awk '{print > \"/tmp/x\"}' README.md", High),
        ("awk '{print | \"sh\"}' README.md", High),
        (
            "awk 'BEGIN{while((getline l < \"/etc/passwd\")>0) print l}'",
            High,
        ),
        ("awk 'BEGIN{print ENVIRON[\"HOME\"]}'", Medium),
        ("awk -f x.awk README.md", High),
        ("awk \"$p\" README.md", Medium),
        ("awk '{print}' /etc/passwd", Medium),
        ("gawk '@load \"x\"; BEGIN{}'", High),
        ("gawk -l x 'BEGIN{}'", High),
        ("gawk -o/tmp/x 'BEGIN{}'", High),
        ("perl -e 'print 1'", High),
        ("python3 -c 'print(1)'", High),
    ]);
    let r2 = expect(&[
        ("sed -n '$p' README.md", Low),
        ("sed '1r src/lib.rs' README.md", Low),
        ("sed -n '1,20p' README.md", Low),
        ("awk '{print $1}' README.md", Low),
        ("awk -F: '{print $1}' notes.txt", Low),
        ("awk 'NR==1' README.md", Low),
        ("awk '{s+=$1} END {print s}' notes.txt", Low),
        ("cat notes.txt | awk '{print NF}'", Low),
    ]);
    all(&[r1, r2]);
}

#[test]
fn arithmetic_on_a_variables_text_is_asked() {
    let r1 = expect(&[
        ("x='a[$(rm -rf build)]'; echo $((x))", Medium),
        ("echo $((x + 1))", Medium),
        ("echo \"$((x))\"", Medium),
        ("echo $[x]", Medium),
        ("((ls))", Medium),
        ("(( x ))", Medium),
        ("for ((i=0;i<n;i++)); do echo $i; done", Medium),
        ("[[ $x -eq 1 ]]", Medium),
        ("[[ x -lt 1 ]]", Medium),
        ("[[ -v a[x] ]]", Medium),
        ("test -v 'a[x]'", Medium),
        ("[ -v a[x] ]", Medium),
        ("unset 'a[x]'", Medium),
        ("read 'b[x]'", Medium),
        ("printf -v 'b[x]' 1", Medium),
        ("declare -i n", Medium),
        ("declare -n r=x", Medium),
        ("local -i n=1", Medium),
        ("declare 'b[x]=1'", Medium),
        ("echo ${a[x]}", Medium),
        ("sh -c 'echo $(($1))' _ x", Medium),
    ]);
    let r2 = expect(&[
        ("echo $((1 + 2))", Low),
        ("echo $(( 0x1f << 2 ))", Low),
        ("echo $[1+2]", Low),
        ("((1 + 2))", Low),
        ("[[ $# -eq 0 ]] && echo none", Low),
        ("[[ 1 -lt 2 ]]", Low),
        ("[ \"$x\" = y ]", Low),
        ("unset x", Low),
        ("declare x=1", Low),
    ]);
    all(&[r1, r2]);
}

#[test]
fn brace_expansion_is_expanded_before_judging() {
    let r1 = refused(&["rm {-rf,~}", "{rm,-rf,~}", "sudo {rm,-rf,/}"]);
    let r2 = expect(&[
        ("rm {-rf,build}", High),
        ("cp {README.md,--target-directory=/tmp}", High),
        ("ls {..,x}", Medium),
        ("cat {/etc/passwd,README.md}", Medium),
        ("sort {-o,/tmp/x} README.md", High),
        ("sed {-i,s/a/b/} notes.txt", Medium),
        ("git {log,--output=/tmp/x}", High),
        ("{ls,-la}", Medium),
        ("cat {a,b}$x", Medium),
        ("cat {a,'b c'}", Medium),
        ("echo {a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}", Medium),
    ]);
    let r3 = expect(&[
        ("echo {a,b}", Low),
        ("ls src/{main,lib}.rs", Low),
        ("cat src/{main,lib}.rs", Low),
        ("echo '{rm,-rf,~}'", Low),
        ("echo {1..3}", Low),
        ("echo a{,b}", Low),
        ("{ ls; pwd; }", Low),
    ]);
    all(&[r1, r2, r3]);
}

#[test]
fn siblings_write_read_or_run_through_options_too() {
    let r1 = expect(&[
        ("cargo test -- --logfile /tmp/x", High),
        ("cargo test -- --logfile out.txt", Medium),
        ("cargo test -- --frobnicate", Medium),
        ("cargo clippy -- -C linker=/tmp/x", Medium),
        ("npm run lint -- --fix", Medium),
        ("npm test -- --outputFile=/tmp/x", Medium),
        ("file -C -m magic", Medium),
        ("tree -R -H . src", Medium),
        ("mypy --install-types --non-interactive src", High),
        ("bat cache --build", Medium),
        ("pylint --output-format=json:/tmp/x src", High),
        ("biome check --apply src", Medium),
        ("prettier --check --plugin=/tmp/x.js .", High),
    ]);
    let r2 = expect(&[
        ("cargo test -- --nocapture --test-threads 1", Low),
        ("cargo test -p tandem -- policy --exact", Low),
        ("cargo clippy --all-targets -- -D warnings", Low),
        ("npm test -- src/app.test.js", Low),
        ("pylint -f json src", Low),
        ("prettier --check .", Low),
        ("ruff check src", Low),
        ("bat src/main.rs", Low),
    ]);
    all(&[r1, r2]);
}
