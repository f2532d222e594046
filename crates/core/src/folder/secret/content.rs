//! Whether a file's text holds a secret: a private key or an access token whose format says
//! what it is. Read before anything of a file is sent, so a key in `config.yaml`, in a test's
//! string literal, in a service account's JSON or base64-encoded in a Kubernetes secret stays
//! out as surely as one in `server.key`.
//!
//! A key is found by what it is, not by how it is framed:
//! - **its body**: a private key's DER structure (PKCS #1, PKCS #8, SEC 1; RSA, DSA, EC,
//!   Ed25519, X25519) begins with a SEQUENCE and a version INTEGER, whose base64 is one of a
//!   few fixed prefixes (`MIIEvQIBADAN…`, `MHcCAQEE…`, `MC4CAQAw…`); OpenSSH's begins with
//!   `openssh-key-v1`. A certificate's body (a SEQUENCE in a SEQUENCE) does not. Found on any
//!   line, behind any comment, quote or escape, with or without its armour;
//! - **its armour** (`-----BEGIN … PRIVATE KEY-----`, SSH2's four dashes, URL-encoded too),
//!   then base64 that looks random within the next lines: PGP's keys and encrypted ones,
//!   whose bodies have no fixed prefix;
//! - PuTTY's private lines, age's and WireGuard's private keys, a JSON Web Key's private
//!   member, a Docker registry's stored login, a Kubernetes Secret's manifest with its
//!   values, and a PEM file base64-encoded whole, wrapped or not (read once decoded).
//!
//! Tokens are found by their issuer's prefix and length (see [`TOKENS`]). A match that is a
//! placeholder (`ghp_xxxx…`, few different characters) or a documented example (AWS's
//! `AKIAIOSFODNN7EXAMPLE`) is not a secret.

use std::sync::LazyLock;

use base64::Engine as _;
use regex::bytes::Regex;

/// The base64 of a private key's DER structure as it begins, by the length of its outer
/// SEQUENCE's header: four bytes (RSA and DSA, PKCS #1 `…IBAAK` or PKCS #8 `…IBAD`; a
/// PKCS #12 bundle, version 3, `…IBAzCC`, as iOS signing keeps it in CI settings), three
/// (EC, PKCS #8 or SEC 1), two (EC P-256 and secp256k1 in SEC 1, Ed25519, X25519, Ed448,
/// X448); then OpenSSH's own format. Each is followed by enough base64 to be a key.
#[rustfmt::skip]
const BODIES: &[&str] = &[
    r"MII[A-Za-z0-9+/]{2}[AQgw]IBA(?:AK|D|zCC)[A-Za-z0-9+/]{24}",
    r"MI[E-H][A-Za-z0-9+/]AgE[AB][A-Za-z0-9+/]{24}",
    r"M[A-H][A-Za-z0-9+/]CAQ[AE][A-Za-z0-9+/]{32}",
    r"b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/]{20}",
];

/// A private key's armour: RFC 7468's five dashes or SSH2's four, spaces as they are or
/// URL-encoded.
const ARMOUR: &str =
    r"-{4,5} ?BEGIN(?:[ +A-Z0-9]|%20)*PRIVATE(?:[ +]|%20)KEY(?:[ +A-Z]|%20)*-{4,5}";
/// How far after an armour its body is looked for (headers such as `Proc-Type`, `DEK-Info`,
/// PGP's `Version` and `Comment` come first), and never past the next armour line.
const ARMOUR_REACH: usize = 400;
/// A run of base64 long enough to be (most of) a key's line.
const BASE64_RUN: &str = r"[A-Za-z0-9+/]{32,}";

/// Formats of private keys other than PEM: PuTTY's private lines, age's and WireGuard's keys.
#[rustfmt::skip]
const OTHER_KEYS: &[&str] = &[
    r"Private-Lines: [0-9]+\r?\n[A-Za-z0-9+/]{40}",
    r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
    r"PrivateKey[ \t]*=[ \t]*[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=",
];

/// A JSON Web Key's private member (`"d"`; asked only of text that has a `"kty"`), and a Docker
/// registry's stored login (`"auth"`, base64 of a user and password; only beside `"auths"`).
const JWK_PRIVATE: &str = r#""d"[ \t]*:[ \t]*"[A-Za-z0-9_\-]{40,}""#;
const DOCKER_AUTH: &str = r#""auth"[ \t]*:[ \t]*"[A-Za-z0-9+/]{12,}={0,2}""#;

/// A Kubernetes Secret's manifest with its values: `kind: Secret` and a `data:` value in
/// base64 (not a template's `{{ … }}`). Its values are secrets by what the file is, whatever
/// they decode to.
const K8S_SECRET_KIND: &str = r#"(?m)^[ \t]*"?kind"?[ \t]*:[ \t]*"?Secret"?[ \t,]*\r?$"#;
const K8S_DATA_VALUE: &str =
    r#"(?m)^[ \t]+"?[A-Za-z0-9._\-]+"?[ \t]*:[ \t]*"?[A-Za-z0-9+/]{12,}={0,2}"?[ \t,]*\r?$"#;

/// A PEM file base64-encoded whole (`LS0tLS1CRUdJTi` is `-----BEGIN`), as Kubernetes secrets
/// and kubeconfigs hold keys: decoded, then asked again.
/// Wrapped lines (GNU `base64` wraps at 76, a YAML block scalar indents them) are read as one.
const ENCODED_PEM: &str = r"LS0tLS1CRUdJTi(?:[A-Za-z0-9+/]|\r?\n[ \t]*){20,}={0,2}";
/// The most of an encoded PEM decoded: a 4096-bit RSA key's PEM is about 3,300 bytes.
const ENCODED_PEM_MAX: usize = 8 * 1024;

/// Access tokens whose format names their issuer, so that they are not mistaken: AWS access
/// key ids, GitHub's and GitLab's tokens, Slack's tokens (refresh and app tokens too) and
/// webhooks, Stripe's live keys, OpenAI's keys (their body holds `T3BlbkFJ`), Anthropic's,
/// Google's API keys, npm's, PyPI's and Hugging Face's tokens, and the others listed below. No word boundary is asked
/// before a prefix (a token follows a `\n` escape or a `%3D` as often as a space); the ones
/// of a fixed length must end there.
#[rustfmt::skip]
const TOKENS: &[&str] = &[
    r"(?:AKIA|ASIA)[A-Z2-7]{16}(?:[^A-Za-z0-9]|$)",
    r"gh[pousr]_[A-Za-z0-9]{36}(?:[^A-Za-z0-9]|$)",
    r"github_pat_[A-Za-z0-9_]{82}(?:[^A-Za-z0-9_]|$)",
    r"glpat-[A-Za-z0-9_\-]{20}",
    r"xox[a-z](?:\.xox[a-z])?-[0-9]+-[0-9A-Za-z\-]{10,}",
    r"xapp-[0-9]+-[A-Za-z0-9]+-[0-9]+-[A-Za-z0-9]{20,}",
    r"hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{20,}",
    r"[sr]k_live_[0-9A-Za-z]{24,}",
    r"sk-[A-Za-z0-9_\-]{10,}T3BlbkFJ[A-Za-z0-9_\-]{10,}",
    r"sk-ant-[a-z]{3,8}[0-9]{2}-[A-Za-z0-9_\-]{80,}",
    r"AIza[0-9A-Za-z_\-]{35}",
    r"npm_[A-Za-z0-9]{36}(?:[^A-Za-z0-9]|$)",
    r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}",
    r"hf_[A-Za-z]{34}(?:[^A-Za-z]|$)",
    // Other AI providers: OpenRouter, Groq, xAI, Perplexity, Replicate.
    r"sk-or-v1-[0-9a-f]{64}",
    r"gsk_[A-Za-z0-9]{52}",
    r"xai-[A-Za-z0-9]{80}",
    r"pplx-[A-Za-z0-9]{48}",
    r"r8_[A-Za-z0-9]{37}(?:[^A-Za-z0-9]|$)",
    // Cloud, CI and service tokens with a prefix of their own: Azure storage keys, GitLab's
    // runner and deploy tokens, DigitalOcean, Docker Hub, Vault, Google's OAuth client
    // secrets, Stripe's webhook secrets, SendGrid, Shopify, Atlassian, Grafana, Sentry,
    // New Relic, Postman, Databricks, Linear, Figma, RubyGems, Doppler, Pulumi, Square,
    // Telegram bots.
    r"AccountKey=[A-Za-z0-9+/]{86}==",
    r"gl(?:rt|dt|ptt|ft|soat|cbt)-[A-Za-z0-9_\-]{20}",
    r"do[opr]_v1_[a-f0-9]{64}",
    r"dckr_pat_[A-Za-z0-9_\-]{27}",
    r"hvs\.[A-Za-z0-9_\-]{90,}",
    r"GOCSPX-[A-Za-z0-9_\-]{28}",
    r"whsec_[A-Za-z0-9+/]{32,}",
    r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}",
    r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
    r"ATATT3[A-Za-z0-9_\-=]{150,}",
    r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
    r"sntry[su]_[A-Za-z0-9+/=_]{60,}",
    r"NRAK-[A-Z0-9]{27}",
    r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}",
    r"dapi[a-f0-9]{32}(?:[^A-Za-z0-9]|$)",
    r"lin_api_[A-Za-z0-9]{40}",
    r"figd_[A-Za-z0-9_\-]{40}",
    r"rubygems_[a-f0-9]{48}",
    r"dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,}",
    r"pul-[a-f0-9]{40}",
    r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,}",
    r"[0-9]{8,10}:AA[0-9A-Za-z_\-]{33}(?:[^0-9A-Za-z_\-]|$)",
];

/// The fewest different characters the last [`TAIL`] bytes of a match hold for it to be a
/// secret rather than a placeholder (`ghp_xxxx…`, `AKIA0000…`): a random token of that length
/// holds far more.
const FEWEST_DIFFERENT: usize = 10;
const TAIL: usize = 32;

/// The patterns, compiled once. `None` only if one were broken (the tests compile them):
/// [`holds_secret`] then fails closed.
struct Patterns {
    /// Bodies, other keys and tokens: any match that is not a placeholder is a secret.
    direct: Regex,
    armour: Regex,
    base64_run: Regex,
    jwk_private: Regex,
    docker_auth: Regex,
    k8s_secret_kind: Regex,
    k8s_data_value: Regex,
    encoded_pem: Regex,
}

static PATTERNS: LazyLock<Option<Patterns>> = LazyLock::new(|| {
    let direct = (BODIES.iter().chain(OTHER_KEYS).chain(TOKENS))
        .copied()
        .collect::<Vec<_>>()
        .join("|");
    Some(Patterns {
        direct: Regex::new(&direct).ok()?,
        armour: Regex::new(ARMOUR).ok()?,
        base64_run: Regex::new(BASE64_RUN).ok()?,
        jwk_private: Regex::new(JWK_PRIVATE).ok()?,
        docker_auth: Regex::new(DOCKER_AUTH).ok()?,
        k8s_secret_kind: Regex::new(K8S_SECRET_KIND).ok()?,
        k8s_data_value: Regex::new(K8S_DATA_VALUE).ok()?,
        encoded_pem: Regex::new(ENCODED_PEM).ok()?,
    })
});

/// Whether `text` holds a private key or an access token (see the module). Such a file is
/// never sent to a model, whatever its name.
pub fn holds_secret(text: &str) -> bool {
    let Some(patterns) = PATTERNS.as_ref() else {
        return true;
    };
    holds(patterns, text.as_bytes(), true)
}

fn holds(p: &Patterns, text: &[u8], decode: bool) -> bool {
    p.direct
        .find_iter(text)
        .any(|m| not_a_placeholder(m.as_bytes()))
        || p.armour.find_iter(text).any(|armour| {
            let end = (armour.end() + ARMOUR_REACH).min(text.len());
            let after = &text[armour.end()..end];
            // Up to the next armour line (an END, or another BEGIN: a certificate's base64
            // after a key's empty armour in a test is the certificate's).
            let after = match after.windows(5).position(|w| w == b"-----") {
                Some(next) => &after[..next],
                None => after,
            };
            (p.base64_run.find_iter(after)).any(|run| looks_random(run.as_bytes()))
        })
        || (p.jwk_private.is_match(text) && contains(text, b"\"kty\""))
        || (p.docker_auth.is_match(text) && contains(text, b"\"auths\""))
        || (p.k8s_secret_kind.is_match(text) && p.k8s_data_value.is_match(text))
        || (decode
            && p.encoded_pem.find_iter(text).any(|m| {
                let joined: Vec<u8> = (m.as_bytes().iter())
                    .filter(|b| !b.is_ascii_whitespace())
                    .copied()
                    .collect();
                let encoded = &joined[..joined.len().min(ENCODED_PEM_MAX)];
                // A cut may end mid-quantum: decode whole quanta, without padding.
                let whole = &encoded[..encoded.len() / 4 * 4];
                let engine = &base64::engine::general_purpose::STANDARD_NO_PAD;
                let unpadded = whole.strip_suffix(b"==").or(whole.strip_suffix(b"="));
                (engine.decode(unpadded.unwrap_or(whole)).ok())
                    .is_some_and(|pem| holds(p, &pem, false))
            }))
}

fn contains(text: &[u8], needle: &[u8]) -> bool {
    text.windows(needle.len()).any(|w| w == needle)
}

/// Whether a match is a real secret rather than a placeholder or a documented example: its
/// last [`TAIL`] bytes hold [`FEWEST_DIFFERENT`] different characters or more, and no
/// `example`.
fn not_a_placeholder(found: &[u8]) -> bool {
    let tail = &found[found.len().saturating_sub(TAIL)..];
    let mut seen = [false; 256];
    tail.iter().for_each(|&b| seen[usize::from(b)] = true);
    let different = seen.iter().filter(|&&s| s).count();
    let example = tail.windows(7).any(|w| w.eq_ignore_ascii_case(b"example"));
    different >= FEWEST_DIFFERENT && !example
}

/// Whether a run of base64 after an armour is a key's line rather than code or a digest: not
/// a placeholder, with capitals, small letters and digits all in it (a hex digest has no
/// capitals, a path or a name rarely all three).
fn looks_random(run: &[u8]) -> bool {
    not_a_placeholder(run)
        && run.iter().any(u8::is_ascii_uppercase)
        && run.iter().any(u8::is_ascii_lowercase)
        && run.iter().any(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests;
