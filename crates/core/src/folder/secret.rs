//! Which files hold a secret, so that the context never sends them to a model.
//!
//! By name ([`looks_secret`]): a key, an env file or credentials, on every dot-separated part
//! of the name, so that one stays out however it is templated (`server.key.j2`,
//! `prod.env.in`, `tls.pem.tmpl`); such names are never swept into an automatic commit either.
//! By content ([`holds_secret`]): a private key or an access token of a format that says what
//! it is, in a file of any name (`config.yaml`, a test's fixture, a service account's JSON).

use std::sync::LazyLock;

use regex::bytes::Regex;

/// A part of a name that marks a key, a certificate store, a credentials database or an
/// environment file: `.env`, `prod.env`, `*.pem`, `*.key`, `*.p12`, `*.pfx`, Java key stores,
/// PuTTY keys, KeePass databases, Terraform's state and variables.
#[rustfmt::skip]
const SECRET_PARTS: &[&str] = &[
    "env", "pem", "key", "p12", "pfx", "jks", "keystore", "ppk", "kdbx", "tfstate", "tfvars",
];

/// Names (before their first dot) of private keys and password files: SSH's `id_*` keys
/// (`id_rsa.pub` too: it names the key beside it) and host keys, `htpasswd`, `.netrc`,
/// `.pgpass` and a kubeconfig.
const SECRET_PREFIXES: &[&str] = &["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "ssh_host_"];
const SECRET_STEMS: &[&str] = &["htpasswd", "netrc", "pgpass", "kubeconfig"];

/// Words that, in a name, hold credentials when the file is data (`credentials.json`,
/// `aws-credentials.ini`, `secrets.yaml`, `credentials` alone), not when it is code
/// (`credentials.py`, `secrets.rs`). So does a template named `env` (`env.j2`, Ansible's
/// template of an env file), not code or a test script so named (`env.rs`, `env.txt`).
const DATA_SECRET_WORDS: &[&str] = &["credentials", "secret"];
#[rustfmt::skip]
const DATA_PARTS: &[&str] = &[
    "json", "yaml", "yml", "toml", "ini", "xml", "txt", "conf", "cfg", "properties", "csv",
];
/// Templates of any of those (`credentials.json.in`, `secrets.j2`, `env.tmpl`).
const TEMPLATE_PARTS: &[&str] = &["in", "j2", "tmpl", "tpl"];

/// The last part of a template a project commits on purpose, with placeholders in place of
/// the values (`.env.example`, `server.key.sample`).
const EXAMPLE_PARTS: &[&str] = &["example", "sample", "template", "dist"];

/// Whether the file at `path` (its last component is read, any case) looks like it holds a
/// secret.
pub fn looks_secret(path: &str) -> bool {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let name = name.to_ascii_lowercase();
    // A hidden file's name begins after its dot (`.env`, `.netrc`).
    let hidden = name.starts_with('.');
    let mut parts = name.split('.').skip(usize::from(hidden));
    let stem = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    if rest.last().is_some_and(|last| EXAMPLE_PARTS.contains(last)) {
        return false;
    }
    // What the file is, by the part after its stem: a template (`.j2`, `.in`), data.
    let first = rest.first().copied();
    let template = first.is_some_and(|part| TEMPLATE_PARTS.contains(&part));
    let data = template || first.is_none_or(|part| DATA_PARTS.contains(&part));
    (hidden && SECRET_PARTS.contains(&stem))
        || rest.iter().any(|part| SECRET_PARTS.contains(part))
        || SECRET_PREFIXES.iter().any(|p| stem.starts_with(p))
        || SECRET_STEMS.contains(&stem)
        || (data && DATA_SECRET_WORDS.iter().any(|w| stem.contains(w)))
        || (template && stem == "env")
}

/// Private keys in PEM armour (RSA, EC, DSA, PKCS #8, encrypted, OpenSSH, PGP's private key
/// blocks), written as a file, in a string literal, or with `\n` escapes (a
/// service account's JSON): the armour's first line, then, on one of the next lines, a run of
/// base64. A parser that only names the armour (`"-----BEGIN RSA PRIVATE KEY-----"` as a
/// constant) is not a key.
const PEM_KEY: &str = r#"-----BEGIN[ A-Z0-9]*PRIVATE KEY[ A-Z]*-----(?s:.){0,300}?(?:\n|\\n)[ \t"'+]*[A-Za-z0-9+/]{40}"#;

/// Access tokens whose format names their issuer, so that they are not mistaken: AWS access
/// key ids, GitHub's and GitLab's tokens, Slack's tokens and webhooks, Stripe's live keys,
/// OpenAI's keys (their body holds `T3BlbkFJ`), Anthropic's, Google's API keys, npm's, PyPI's
/// and Hugging Face's tokens.
#[rustfmt::skip]
const TOKENS: &[&str] = &[
    r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)",
    r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{36}(?-u:\b)",
    r"(?-u:\b)github_pat_[A-Za-z0-9_]{82}(?-u:\b)",
    r"(?-u:\b)glpat-[A-Za-z0-9_\-]{20}",
    r"(?-u:\b)xox[abposr]-[0-9]{6,}-[0-9A-Za-z\-]{8,}",
    r"hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{20,}",
    r"(?-u:\b)[sr]k_live_[0-9A-Za-z]{24,}",
    r"(?-u:\b)sk-[A-Za-z0-9_\-]{10,}T3BlbkFJ[A-Za-z0-9_\-]{10,}",
    r"(?-u:\b)sk-ant-[a-z]{3,8}[0-9]{2}-[A-Za-z0-9_\-]{80,}",
    r"(?-u:\b)AIza[0-9A-Za-z_\-]{35}",
    r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
    r"(?-u:\b)pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}",
    r"(?-u:\b)hf_[A-Za-z]{34}(?-u:\b)",
];

/// The fewest different characters the last [`TAIL`] bytes of a match hold for it to be a
/// secret rather than a placeholder (`ghp_xxxx…`, `AKIA0000…`, `MIIxxxx…`): a random token
/// of that length holds far more.
const FEWEST_DIFFERENT: usize = 10;
const TAIL: usize = 32;

static SECRET: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let pattern = std::iter::once(PEM_KEY)
        .chain(TOKENS.iter().copied())
        .collect::<Vec<_>>()
        .join("|");
    // A fixed pattern, checked by the tests: `None` only if it were broken, and then
    // `holds_secret` fails closed.
    Regex::new(&pattern).ok()
});

/// Whether `text` holds a private key or an access token of a known format (see [`PEM_KEY`]
/// and [`TOKENS`]) that is not a placeholder or a documented example (AWS's
/// `AKIAIOSFODNN7EXAMPLE`). Such a file is never sent to a model, whatever its name.
pub fn holds_secret(text: &str) -> bool {
    let Some(secret) = SECRET.as_ref() else {
        return true;
    };
    secret.find_iter(text.as_bytes()).any(|found| {
        let found = found.as_bytes();
        let tail = &found[found.len().saturating_sub(TAIL)..];
        let mut seen = [false; 256];
        tail.iter().for_each(|&b| seen[usize::from(b)] = true);
        let different = seen.iter().filter(|&&s| s).count();
        let example = found.windows(7).any(|w| w.eq_ignore_ascii_case(b"example"));
        different >= FEWEST_DIFFERENT && !example
    })
}

#[cfg(test)]
mod tests {
    use super::{holds_secret, looks_secret};

    #[test]
    fn keys_env_files_and_credentials_look_secret_however_they_are_templated() {
        for path in [
            ".env",
            "app/.env.production",
            ".netrc",
            ".pgpass",
            "prod.env",
            "deploy/prod.env.j2",
            "secrets.env.in",
            "server.PEM",
            "tls/private.key",
            "server.key.j2",
            "tls.key.tpl",
            "private.pem.in",
            "api.key.def",
            "private.key.golden",
            "keystore.jks.in",
            "cert.p12",
            "store.pfx",
            "id_rsa",
            "id_rsa.pub",
            "id_rsa.patch",
            "id_ed25519.inc",
            "etc/ssh_host_rsa_key.in",
            "htpasswd.inc",
            "kubeconfig.tmpl",
            "credentials",
            "templates/env.j2",
            "credentials.json",
            "aws-credentials.ini",
            "config/secrets.yaml",
            "secrets.toml",
            "terraform.tfstate",
        ] {
            assert!(looks_secret(path), "{path}");
        }
    }

    #[test]
    fn code_and_committed_templates_do_not() {
        for path in [
            ".env.example",
            "config.env.sample",
            "server.key.example",
            "env.rs",
            "src/env.d.ts",
            "testscripts/commands/env.txt",
            "environment.yaml",
            "keyboard.rs",
            "monkey",
            "secret_santa.md",
            "src/credentials.py",
            "auth/credentials_test.go",
            "secrets.rs",
            "tokens.rs",
            "keys.ts",
            "vite-env.d.ts",
        ] {
            assert!(!looks_secret(path), "{path}");
        }
    }

    /// `n` characters of `alphabet`, spread as a random token's are (an LCG from `seed`): no
    /// real-looking secret is written in this file, where a scanner would flag it.
    fn random(alphabet: &str, n: usize, seed: u64) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                chars[(state >> 33) as usize % chars.len()]
            })
            .collect()
    }

    const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const BASE64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

    fn armour(kind: &str) -> (String, String) {
        let begin = format!("-----BEGIN {kind}PRIVATE KEY-----");
        let end = format!("-----END {kind}PRIVATE KEY-----");
        (begin, end)
    }

    #[test]
    fn private_keys_and_issued_tokens_are_secrets_wherever_they_are_written() {
        let body = |seed| random(BASE64, 64, seed);
        let (rsa, rsa_end) = armour("RSA ");
        let (pkcs8, _) = armour("");
        let (openssh, _) = armour("OPENSSH ");
        let (encrypted, _) = armour("ENCRYPTED ");
        let (pgp, _) = (format!("-----BEGIN PGP {}", "PRIVATE KEY BLOCK-----"), ());
        let texts = [
            // A key file, whatever it is named.
            format!("{rsa}\n{}\n{}\n{rsa_end}\n", body(1), body(2)),
            format!("{openssh}\r\n{}\r\n", body(3)),
            format!("{pgp}\nVersion: GnuPG v2\n\n{}\n", body(4)),
            // Encrypted, with its headers.
            format!(
                "{rsa}\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B\n\n{}\n",
                body(5)
            ),
            format!("{encrypted}\n{}\n", body(6)),
            // In a YAML value, a service account's JSON (`\n` escapes), Java, Go.
            format!("tls:\n  key: |\n    {pkcs8}\n    {}\n", body(7)),
            format!("{{\"private_key\": \"{pkcs8}\\n{}\\n\"}}", body(8)),
            format!("String k = \"{pkcs8}\\n\" +\n    \"{}\";", body(9)),
            format!("const key = `{pkcs8}\n{}`", body(10)),
            // Tokens that name their issuer.
            format!("aws_access_key_id = AKIA{}\n", random(UPPER, 16, 11)),
            format!("token: gh{}_{}\n", "p", random(ALNUM, 36, 12)),
            format!("GITHUB_TOKEN=github_{}_{}", "pat", random(ALNUM, 82, 13)),
            format!("gl{}-{}", "pat", random(ALNUM, 20, 14)),
            format!("SLACK=xox{}-123456789012-{}", "b", random(ALNUM, 24, 15)),
            format!(
                "https://hooks.slack.com/services/T{}/B{}/{}",
                random(UPPER, 9, 16),
                random(UPPER, 9, 17),
                random(ALNUM, 24, 18)
            ),
            format!(
                "stripe.api_key = \"sk_{}_{}\"",
                "live",
                random(ALNUM, 24, 19)
            ),
            format!(
                "OPENAI_API_KEY=sk-proj-{}T3Blbk{}{}",
                random(ALNUM, 20, 20),
                "FJ",
                random(ALNUM, 20, 21)
            ),
            format!("key = 'sk-ant-api03-{}'", random(ALNUM, 90, 22)),
            format!("apiKey: \"AI{}{}\",", "za", random(ALNUM, 35, 23)),
            format!(
                "//registry.npmjs.org/:_authToken=np{}_{}",
                "m",
                random(ALNUM, 36, 24)
            ),
            format!("password = pypi-AgEIcHlwaS5vcmc{}", random(ALNUM, 60, 25)),
            format!(
                "HF_TOKEN=h{}_{}",
                "f",
                random("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", 34, 26)
            ),
        ];
        for text in &texts {
            assert!(holds_secret(text), "{text}");
        }
    }

    #[test]
    fn code_naming_a_key_placeholders_and_documented_examples_are_not_secrets() {
        let (rsa, rsa_end) = armour("RSA ");
        let texts = [
            // A PEM parser names the armour; its next lines are code.
            format!(
                "const HEADER: &str = \"{rsa}\";\nconst FOOTER: &str = \"{rsa_end}\";\nfn parse(pem: &str) -> Option<Key> {{\n    let body = pem.strip_prefix(HEADER)?;\n}}\n"
            ),
            format!(
                "if line == \"{rsa}\" {{\n    return Some(Kind::Rsa); // src/pem/armour/reader/lines.rs\n}}"
            ),
            // Documentation with the body elided or a placeholder.
            format!("{rsa}\n...\n{rsa_end}\n"),
            format!("{rsa}\nMII{}\n{rsa_end}\n", "x".repeat(61)),
            format!("token: gh{}_{}", "p", "x".repeat(36)),
            format!("token: gh{}_{}", "p", "aB1".repeat(12)),
            format!("GITHUB_TOKEN=gh{}_<your token>", "p"),
            // AWS's documented example keys.
            format!("aws_access_key_id = AKIA{}EXAMPLE", "IOSFODNN7"),
            "AKIAIOSFODNN7 is not sixteen characters after its prefix".to_string(),
            // Words that merely look like the prefixes.
            "let sk_live_mode = true; // ask_live_ and risk-analysis".to_string(),
            "fn hf_logits() {} // AIza is a prefix; npm_config_cache".to_string(),
        ];
        for text in &texts {
            assert!(!holds_secret(text), "{text}");
        }
    }
}
