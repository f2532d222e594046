//! Keys and tokens are written as the tests run, from fixed prefixes and pseudo-random bodies:
//! no key-like text sits in this file for a scanner to flag.

use base64::Engine as _;

use super::holds_secret;

/// `n` characters of `alphabet`, spread as a random token's are (an LCG from `seed`).
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
const AWS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

fn begin(kind: &str) -> String {
    format!("-----BEGIN {kind}{}-----", "PRIVATE KEY")
}

fn end(kind: &str) -> String {
    format!("-----END {kind}{}-----", "PRIVATE KEY")
}

/// A PKCS #8 RSA key's body as it begins (the DER of its SEQUENCE, version and algorithm),
/// then `n` random characters.
fn pkcs8(n: usize, seed: u64) -> String {
    format!(
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC{}",
        random(BASE64, n, seed)
    )
}

/// A whole PEM key, in lines of `width`.
fn pem(width: usize, seed: u64) -> String {
    let body = pkcs8(1200, seed);
    let lines: Vec<&str> = (0..body.len())
        .step_by(width)
        .map(|i| &body[i..(i + width).min(body.len())])
        .collect();
    format!("{}\n{}\n{}\n", begin(""), lines.join("\n"), end(""))
}

#[test]
fn private_keys_are_secrets_however_they_are_framed() {
    let body = pkcs8(40, 1);
    let texts = [
        // A key file, whatever it is named; lines of 64, 76, or 39.
        pem(64, 2),
        pem(76, 3),
        pem(39, 4),
        format!("{}\r\n{}\r\n", begin(""), pkcs8(64, 5)),
        // Each kind of body, bare: PKCS #1 RSA, SEC 1 EC, PKCS #8 EC, Ed25519, OpenSSH.
        format!("key: MIIEowIBAAKCAQEA{}", random(BASE64, 40, 6)),
        format!("key: MHcCAQEEI{}", random(BASE64, 60, 7)),
        format!(
            "key: MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0w{}",
            random(BASE64, 40, 8)
        ),
        format!("key: MC4CAQAwBQYDK2VwBCIEI{}", random(BASE64, 30, 9)),
        format!(
            "{}\nb3BlbnNzaC1rZXktdjEAAAAABG5v{}\n",
            begin("OPENSSH "),
            random(BASE64, 40, 10)
        ),
        // Framed as code, comments, patches, quotes, escapes, markup.
        format!("KEY = (\n    b\"{}\\n\"\n    b\"{body}\\n\"\n)", begin("")),
        format!("# {}\n# {body}\n", begin("")),
        format!("// {body}"),
        format!("-{}\n-{body}\n", begin("")),
        format!("> {}\n> {body}\n", begin("")),
        format!("{} {body} {}", begin(""), end("")),
        format!("<key>{}&#10;{body}&#10;</key>", begin("")),
        format!("{{\"private_key\": \"{}\\n{body}\\n\"}}", begin("")),
        format!("String k = \"{}\\n\" +\n    \"{body}\";", begin("")),
        format!("const key = [\"{}\", \"{body}\"];", begin("RSA ")),
        format!("k=-----BEGIN%20RSA%20{}%20KEY-----%0A{body}", "PRIVATE"),
        // Bodies with no fixed prefix, found after their armour: encrypted, PGP.
        format!(
            "{}\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B2C3D\n\n{}\n",
            begin("RSA "),
            random(BASE64, 64, 11)
        ),
        format!("{}\n{}\n", begin("ENCRYPTED "), random(BASE64, 64, 12)),
        format!(
            "-----BEGIN PGP {} BLOCK-----\nComment: me@example.org\n\n{}\n",
            "PRIVATE KEY",
            random(BASE64, 64, 13)
        ),
        format!(
            "---- BEGIN SSH2 ENCRYPTED {} ----\n{}\n",
            "PRIVATE KEY",
            random(BASE64, 64, 14)
        ),
        // A placeholder armour mentioning an example does not hide the real key after it.
        format!("# {} (example)\n{}\n", begin(""), pem(64, 15)),
        // Other formats: PuTTY, age, WireGuard, a JSON Web Key, a Docker login.
        format!(
            "PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\n{}\n",
            random(BASE64, 44, 16)
        ),
        format!("AGE-SECRET-KEY-1{}", random(UPPER, 58, 17)),
        format!(
            "[Interface]\nPrivateKey = {}{}=\n",
            random(BASE64, 42, 18),
            "A"
        ),
        format!(
            "{{\"kty\":\"EC\",\"crv\":\"P-256\",\"d\":\"{}\"}}",
            random(ALNUM, 43, 19)
        ),
        "{\"auths\":{\"registry.example.com\":{\"auth\":\"dXNlcjpodW50ZXIy\"}}}".to_string(),
        // A PKCS #12 bundle in base64, as CI settings keep signing identities.
        format!(
            "P12_BASE64: MIIKYQIBAzCCCicGCSqGSIb3DQEHAaCCChgE{}",
            random(BASE64, 60, 24)
        ),
        // A Kubernetes Secret's manifest, whatever its values decode to.
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\ndata:\n  token: {}\n",
            random(BASE64, 40, 25)
        ),
    ];
    for text in &texts {
        assert!(holds_secret(text), "{text}");
    }
}

#[test]
fn a_pem_file_base64_encoded_is_read_decoded() {
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    // A Kubernetes secret and a kubeconfig hold keys so.
    let secret = format!("stringData:\n  tls.key: {}\n", encode(&pem(64, 20)));
    assert!(holds_secret(&secret));
    let config = format!(
        "users:\n- user:\n    client-key-data: {}\n",
        encode(&pem(64, 21))
    );
    assert!(holds_secret(&config));
    // Wrapped at 76 as GNU `base64` writes it, indented in a YAML block scalar.
    let encoded = encode(&pem(64, 23));
    let wrapped: Vec<&str> = (0..encoded.len())
        .step_by(76)
        .map(|i| &encoded[i..(i + 76).min(encoded.len())])
        .collect();
    let block = format!("tls.key: |\n    {}\n", wrapped.join("\n    "));
    assert!(holds_secret(&block));
    // A certificate so encoded is not a secret.
    let cert = format!(
        "-----BEGIN CERTIFICATE-----\nMIIDXTCCAkWgAwIBAgIJ{}\n-----END CERTIFICATE-----\n",
        random(BASE64, 64, 22)
    );
    let ca = format!("certificate-authority-data: {}\n", encode(&cert));
    assert!(!holds_secret(&ca));
}

#[test]
fn issued_tokens_are_secrets_wherever_they_are_written() {
    let texts = [
        format!("aws_access_key_id = AKIA{}\n", random(AWS, 16, 30)),
        format!("AWS_KEY=AKIA{}_prod", random(AWS, 16, 31)),
        format!("token: gh{}_{}\n", "p", random(ALNUM, 36, 32)),
        format!("\"line1\\ngh{}_{}\"", "p", random(ALNUM, 36, 33)),
        format!(
            "https://x.test/?token%3Dgh{}_{}",
            "s",
            random(ALNUM, 36, 34)
        ),
        format!(
            "https://user:gh{}_{}@github.com/o/r",
            "p",
            random(ALNUM, 36, 35)
        ),
        format!("GITHUB_TOKEN=github_{}_{}", "pat", random(ALNUM, 82, 36)),
        format!("gl{}-{}", "pat", random(ALNUM, 20, 37)),
        format!("SLACK=xox{}-123456789012-{}", "b", random(ALNUM, 24, 38)),
        format!("refresh: xoxe.xox{}-1-{}", "p", random(ALNUM, 40, 39)),
        format!(
            "app: xa{}-1-A0123456789-1234567890123-{}",
            "pp",
            random(ALNUM, 64, 40)
        ),
        format!(
            "https://hooks.slack.com/services/T{}/B{}/{}",
            random(UPPER, 9, 41),
            random(UPPER, 9, 42),
            random(ALNUM, 24, 43)
        ),
        format!(
            "stripe.api_key = \"sk_{}_{}\"",
            "live",
            random(ALNUM, 24, 44)
        ),
        format!(
            "OPENAI_API_KEY=sk-proj-{}T3Blbk{}{}",
            random(ALNUM, 20, 45),
            "FJ",
            random(ALNUM, 20, 46)
        ),
        format!("key = 'sk-ant-api03-{}'", random(ALNUM, 90, 47)),
        format!("apiKey: \"AI{}{}\",", "za", random(ALNUM, 35, 48)),
        format!(
            "//registry.npmjs.org/:_authToken=np{}_{}",
            "m",
            random(ALNUM, 36, 49)
        ),
        format!("password = pypi-AgEIcHlwaS5vcmc{}", random(ALNUM, 60, 50)),
        format!(
            "HF_TOKEN=h{}_{}",
            "f",
            random("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", 34, 51)
        ),
        format!(
            "OPENROUTER_API_KEY=sk-or-v1-{}",
            random("0123456789abcdef", 64, 52)
        ),
        format!("GROQ_API_KEY=gs{}_{}", "k", random(ALNUM, 52, 53)),
        format!("AccountName=a;AccountKey={}==", random(BASE64, 86, 54)),
        format!("token = \"gl{}-{}\"", "rt", random(ALNUM, 20, 55)),
        format!("DOCKER_TOKEN=dckr_{}_{}", "pat", random(ALNUM, 27, 56)),
        format!("VAULT_TOKEN=hv{}.{}", "s", random(ALNUM, 95, 57)),
        format!(
            "SENDGRID=S{}.{}.{}",
            "G",
            random(ALNUM, 22, 58),
            random(ALNUM, 43, 59)
        ),
        format!("bot_token: 123456789:A{}{}", "A", random(ALNUM, 33, 60)),
    ];
    for text in &texts {
        assert!(holds_secret(text), "{text}");
    }
}

#[test]
fn code_naming_a_key_certificates_digests_placeholders_and_examples_are_not_secrets() {
    let texts = [
        // A PEM parser names the armour; its next lines are code and digests.
        format!(
            "const HEADER: &str = \"{}\";\nconst FOOTER: &str = \"{}\";\nfn parse(pem: &str) -> Option<Key> {{\n    let body = pem.strip_prefix(HEADER)?;\n}}\n",
            begin("RSA "),
            end("RSA ")
        ),
        format!(
            "if line == \"{}\" {{\n    return Some(Kind::Rsa); // src/pem/armour/reader/lines.rs\n}}",
            begin("RSA ")
        ),
        format!(
            "// {}\nconst SHA256: &str = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\";",
            begin("")
        ),
        // A certificate, armoured or bare.
        format!(
            "-----BEGIN CERTIFICATE-----\nMIIDXTCCAkWgAwIBAgIJ{}\n-----END CERTIFICATE-----\n",
            random(BASE64, 64, 60)
        ),
        // Documentation with the body elided, cut short, or a placeholder.
        format!("{}\n...\n{}\n", begin("RSA "), end("RSA ")),
        format!("{}\nMIIEpAIBAAKCAQEA...\n{}\n", begin("RSA "), end("RSA ")),
        format!(
            "{}\nMII{}\n{}\n",
            begin("RSA "),
            "x".repeat(61),
            end("RSA ")
        ),
        format!("token: gh{}_{}", "p", "x".repeat(36)),
        format!("token: gh{}_{}", "p", "aB1".repeat(12)),
        format!("GITHUB_TOKEN=gh{}_<your token>", "p"),
        // AWS's documented example keys.
        format!("aws_access_key_id = AKIA{}EXAMPLE", "IOSFODNN7"),
        "AKIAIOSFODNN7 is not sixteen characters after its prefix".to_string(),
        // Words that merely look like the prefixes; a JSON "d" without a key type.
        "let sk_live_mode = true; // ask_live_ and risk-analysis".to_string(),
        "fn hf_logits() {} // AIza is a prefix; npm_config_cache".to_string(),
        format!("{{\"d\": \"{}\"}}", random(ALNUM, 43, 61)),
        "{\"auth\": \"dXNlcjpodW50ZXIy\"}".to_string(),
        // A test naming an empty key's armour, then a certificate's base64 in the next test.
        format!(
            "let key = \"{}\";\nassert!(parse(key).is_err());\nlet cert = \"-----BEGIN CERTIFICATE-----\nMIIDXTCCAkWgAwIBAgIJ{}\n\";",
            begin("RSA "),
            random(BASE64, 64, 62)
        ),
        // A Secret's template, and another kind's base64 data.
        "kind: Secret\ndata:\n  token: {{ .Values.token | b64enc }}\n".to_string(),
        format!(
            "kind: ConfigMap\nbinaryData:\n  logo: {}\n",
            random(BASE64, 40, 63)
        ),
    ];
    for text in &texts {
        assert!(!holds_secret(text), "{text}");
    }
}
