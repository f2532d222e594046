//! Which files hold a secret, so that the context never sends them to a model.
//!
//! By name ([`looks_secret`]): a key, an env file or credentials, on every dot-separated part
//! of the name, so that one stays out however it is templated (`server.key.j2`,
//! `prod.env.in`, `tls.pem.tmpl`); such names are never swept into an automatic commit either.
//! By content ([`holds_secret`], see [`content`]): a private key or an access token of a format
//! that says what it is, in a file of any name (`config.yaml`, a test's fixture, a service
//! account's JSON, a Kubernetes secret).

mod content;
mod loose;

pub use content::holds_secret;
pub use loose::{loose_secrets, loose_secrets_of};

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

/// A line of base64 as a PEM key's body has (64 characters, none repeated in a run): with an
/// armour line before it, text [`holds_secret`] finds a key in. For tests.
#[cfg(test)]
pub(crate) fn key_body() -> String {
    (0..64u32)
        .map(|i| {
            char::from(
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                    [(i * 37 % 64) as usize],
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::looks_secret;

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
}
