//! The secrets store's unit tests: the file, the keychain path against keyring-core's mock
//! store, and keys from a given environment (never the machine's keychain or variables).

use super::*;
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;

fn mode(path: &Path) -> u32 {
    fs::metadata(path).expect("metadata").permissions().mode() & 0o777
}

#[test]
fn file_only_round_trip_with_private_modes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("config").join("tandem");
    let path = dir.join(SECRETS_FILE);
    let secrets = Secrets::file_only(&path);
    assert_eq!(secrets.location(), SecretLocation::File(path.clone()));
    assert_eq!(secrets.get("openai").unwrap(), None);
    assert_eq!(
        secrets.set("openai", " sk-one\n").unwrap(),
        SecretLocation::File(path.clone())
    );
    assert_eq!(secrets.get("openai").unwrap().as_deref(), Some("sk-one"));
    assert_eq!((mode(&path), mode(&dir)), (0o600, 0o700));
    assert!(!format!("{secrets:?}").contains("sk-one"));
    secrets.delete("openai").unwrap();
    secrets.delete("openai").unwrap();
    assert_eq!(secrets.get("openai").unwrap(), None);
    assert!(!path.exists());
    assert!(matches!(
        secrets.set("openai", "  "),
        Err(SecretError::EmptyKey(_))
    ));
    assert!(matches!(
        secrets.get(""),
        Err(SecretError::InvalidProvider(_))
    ));
}

#[test]
fn several_providers_share_one_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(SECRETS_FILE);
    let secrets = Secrets::file_only(&path);
    for (provider, key) in [("openai", "k1"), ("anthropic", "k2"), ("gemini", "k3")] {
        secrets.set(provider, key).unwrap();
    }
    secrets.set("openai", "k1b").unwrap();
    secrets.delete("anthropic").unwrap();
    let on_disk: BTreeMap<String, String> =
        serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let expected = BTreeMap::from([
        ("gemini".to_owned(), "k3".to_owned()),
        ("openai".to_owned(), "k1b".to_owned()),
    ]);
    assert_eq!(on_disk, expected);
    assert_eq!(
        Secrets::file_only(&path).get("gemini").unwrap().as_deref(),
        Some("k3")
    );
    let leftovers = fs::read_dir(tmp.path()).unwrap().count();
    assert_eq!(leftovers, 1, "no temporary files remain");
}

#[test]
fn a_provider_holds_several_keys_named_by_fingerprint() {
    let tmp = tempfile::tempdir().unwrap();
    let secrets = Secrets::file_only(&tmp.path().join(SECRETS_FILE));
    secrets.add("openai", " sk-one ").unwrap();
    secrets.add("openai", "sk-two").unwrap();
    secrets.add("openai", "sk-one").unwrap();
    assert_eq!(secrets.keys("openai").unwrap(), ["sk-one", "sk-two"]);
    let (one, two) = (fingerprint("sk-one"), fingerprint("sk-two"));
    assert_eq!(one.len(), 8);
    assert_ne!(one, two);
    assert!(!one.contains("sk") && fingerprint(" sk-one\n") == one);
    assert!(!secrets.remove_key("openai", "00000000").unwrap());
    assert!(secrets.remove_key("openai", &one).unwrap());
    assert_eq!(secrets.keys("openai").unwrap(), ["sk-two"]);
    assert!(secrets.remove_key("openai", &two).unwrap());
    assert_eq!(
        secrets.get("openai").unwrap(),
        None,
        "the last key removes the entry"
    );
    assert!(matches!(
        secrets.add("openai", "  "),
        Err(SecretError::EmptyKey(_))
    ));
    // Set replaces them all.
    secrets.add("openai", "a").unwrap();
    secrets.add("openai", "b").unwrap();
    secrets.set("openai", "c").unwrap();
    assert_eq!(secrets.keys("openai").unwrap(), ["c"]);
}

#[test]
fn loose_file_is_tightened_on_read() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(SECRETS_FILE);
    fs::write(&path, r#"{"openai":"sk-x"}"#).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(
        Secrets::file_only(&path).get("openai").unwrap().as_deref(),
        Some("sk-x")
    );
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn corrupt_file_is_an_error_naming_the_path_and_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(SECRETS_FILE);
    let secrets = Secrets::file_only(&path);
    for text in [
        "{\"openai\": \"sk-secret-1\"",
        "\"sk-secret-2\"",
        "{\"openai\": 5}",
    ] {
        fs::write(&path, text).unwrap();
        let err = secrets.get("openai").unwrap_err();
        assert!(matches!(&err, SecretError::CorruptFile { path: p, .. } if *p == path));
        let message = err.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(!message.contains("sk-secret"), "{message}");
        assert!(secrets.set("anthropic", "k").is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }
}

/// The keychain path, against keyring-core's in-memory mock store: no test touches the
/// machine's keychain.
#[test]
fn a_keychain_takes_keys_over_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(SECRETS_FILE);
    Secrets::file_only(&path).set("openai", "sk-old").unwrap();
    let store: Arc<keyring_core::CredentialStore> = keyring_core::mock::Store::new().unwrap();
    let secrets = Secrets::with_keychain_store(&path, store);
    assert_eq!(secrets.location(), SecretLocation::Keychain);
    assert_eq!(secrets.keychain_unavailable_reason(), None);
    assert_eq!(secrets.get("openai").unwrap().as_deref(), Some("sk-old"));
    // Stored again, it moves to the keychain: the file goes (it held nothing else).
    assert_eq!(
        secrets.set("openai", "sk-new").unwrap(),
        SecretLocation::Keychain
    );
    assert!(!path.exists());
    assert_eq!(secrets.get("openai").unwrap().as_deref(), Some("sk-new"));
    secrets.add("openai", "sk-two").unwrap();
    assert_eq!(secrets.keys("openai").unwrap(), ["sk-new", "sk-two"]);
    secrets.delete("openai").unwrap();
    assert_eq!(secrets.get("openai").unwrap(), None);
}

#[test]
fn the_environment_chooses_file_storage_and_gives_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let env = Environment::isolated().with("OPENAI_API_KEY", "sk-env");
    let secrets = Secrets::open(tmp.path(), &env);
    let file = tmp.path().join(SECRETS_FILE);
    assert_eq!(secrets.location(), SecretLocation::File(file.clone()));
    let why = secrets.keychain_unavailable_reason().unwrap();
    assert!(why.contains("TANDEM_KEYCHAIN=off"), "{why}");
    assert_eq!(
        secrets.set("openai", "sk-stored").unwrap(),
        SecretLocation::File(file)
    );
    assert_eq!(secrets.env_keys(ProviderKind::Openai, None), ["sk-env"]);
    assert!(secrets.env_keys(ProviderKind::Anthropic, None).is_empty());
    // A value it does not understand never falls back to the keychain.
    let typo = Environment::default().with(KEYCHAIN_ENV, "of");
    let secrets = Secrets::open(tmp.path(), &typo);
    assert!(matches!(secrets.location(), SecretLocation::File(_)));
    let why = secrets.keychain_unavailable_reason().unwrap();
    assert!(why.contains("not understood"), "{why}");
    // Keys only from the environment it was given.
    assert!(
        Secrets::file_only(&tmp.path().join("x"))
            .env_keys(ProviderKind::Openai, None)
            .is_empty()
    );
}

#[test]
fn env_keys_from_a_fake_environment() {
    let env = HashMap::from([
        ("OPENAI_API_KEY", "sk-a"),
        ("MY_KEY", " sk-mine "),
        ("EMPTY", "  "),
        ("GOOGLE_API_KEY", "g1, g2\ng3,,g1"),
        ("ANTHROPIC_API_KEY", ""),
    ]);
    let lookup = |name: &str| env.get(name).map(|v| v.to_string());
    assert_eq!(
        env_keys(ProviderKind::Openai, Some("MY_KEY"), lookup),
        ["sk-mine"]
    );
    assert_eq!(env_keys(ProviderKind::Openai, None, lookup), ["sk-a"]);
    assert_eq!(env_keys(ProviderKind::Openai, Some(""), lookup), ["sk-a"]);
    assert!(env_keys(ProviderKind::Openai, Some("EMPTY"), lookup).is_empty());
    assert!(env_keys(ProviderKind::Openai, Some("UNSET"), lookup).is_empty());
    assert!(env_keys(ProviderKind::Anthropic, None, lookup).is_empty());
    assert_eq!(
        env_keys(ProviderKind::Gemini, None, lookup),
        ["g1", "g2", "g3"]
    );
    assert!(env_keys(ProviderKind::Ollama, None, lookup).is_empty());
    let gemini = |name: &str| Some(format!("{name}-value"));
    let keys = env_keys(ProviderKind::Gemini, None, gemini);
    assert_eq!(keys, ["GEMINI_API_KEY-value"], "GEMINI_API_KEY comes first");
    assert_eq!(conventional_env(ProviderKind::Ollama), None);
    assert_eq!(
        conventional_env(ProviderKind::Gemini),
        Some("GEMINI_API_KEY")
    );
}

#[test]
fn secrets_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Secrets>();
}
