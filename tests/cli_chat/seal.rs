//! The suite is sealed from the machine it runs on: provider keys, `OLLAMA_HOST`, Tandem's
//! own variables and the XDG directories set in the shell that runs `cargo test` reach neither
//! the `tandem` processes the tests start nor the app they build in-process, and no key goes
//! to the machine's keychain. Proven by running the probe below in a child test process whose
//! environment is poisoned with all of them.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use tandem_core::app::{App, NewProvider};
use tandem_core::llm::ProviderKind;

use super::{common, setup};

/// Set (to the poisoned directory) only in the child run by
/// `the_machines_environment_never_reaches_tandem`.
const PROBE: &str = "SEAL_PROBE_CHILD";
const POISON_KEY: &str = "sk-poison-from-the-machine";
const POISON_HOST: &str = "poisoned.invalid:4242";
const OLLAMA_DEFAULT: &str = "http://localhost:11434";

#[test]
fn the_machines_environment_never_reaches_tandem() {
    let poisoned = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "seal::seal_probe_inner_half", "--nocapture"])
        .env(PROBE, poisoned.path())
        .env("OPENAI_API_KEY", POISON_KEY)
        .env("ANTHROPIC_API_KEY", POISON_KEY)
        .env("OLLAMA_HOST", POISON_HOST)
        .env("TANDEM_DATA_DIR", poisoned.path().join("tandem-data"))
        .env("TANDEM_IDLE_TIMEOUT_SECS", "1")
        // Would put keys in the machine's keychain, were it obeyed.
        .env("TANDEM_KEYCHAIN", "")
        .env("XDG_DATA_HOME", poisoned.path().join("xdg-data"))
        .env("XDG_CONFIG_HOME", poisoned.path().join("xdg-config"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = common::succeeded(&output);
    assert!(
        stdout.contains("SEALED"),
        "the probe did not run:\n{stdout}"
    );
    assert_eq!(
        std::fs::read_dir(poisoned.path()).unwrap().count(),
        0,
        "something was written where a poisoned variable points"
    );
}

/// The half that runs in the poisoned child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seal_probe_inner_half() {
    let Some(poisoned) = std::env::var_os(PROBE).map(PathBuf::from) else {
        return; // Only meaningful inside the child started above.
    };
    assert_eq!(std::env::var("OPENAI_API_KEY").as_deref(), Ok(POISON_KEY));

    // What the helpers hand a child: none of the sealed variables, the keychain off.
    let shown = common::seal(&mut std::process::Command::new("env"))
        .output()
        .unwrap();
    let shown = String::from_utf8(shown.stdout).unwrap();
    // Names only in a failure: the values may be a real machine's keys.
    let passed: Vec<&str> = shown
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .filter(|name| common::sealed(name))
        .collect();
    assert_eq!(passed, ["TANDEM_KEYCHAIN"]);
    assert!(shown.lines().any(|line| line == "TANDEM_KEYCHAIN=off"));

    // The real `tandem`, started by the CLI helper.
    let (_dir, _root, cli, server) = setup().await;
    let providers = cli.json(&["provider", "list"]).await;
    let seeded = &providers["providers"][0]["provider"];
    assert_eq!(seeded["name"], "ollama");
    assert_eq!(
        seeded["base_url"], OLLAMA_DEFAULT,
        "OLLAMA_HOST reached tandem"
    );
    cli.json(&[
        "provider",
        "add",
        "--name",
        "cloud",
        "--kind",
        "openai",
        "--base-url",
        &format!("{}/v1", server.url()),
    ])
    .await;
    let keys = cli.json(&["provider", "keys", "cloud"]).await;
    assert_eq!(
        keys["keys"],
        Value::Array(Vec::new()),
        "OPENAI_API_KEY reached tandem"
    );
    let set_key = ["--json", "provider", "set-key", "cloud"];
    let output = cli.with_stdin(&set_key, "sk-stored\n").await;
    assert!(output.status.success());
    let stored: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_stored_in(&stored["stored"], &cli.data);

    // The app as the tests build it in-process (the GUI harness gives it the same
    // environment).
    let data = tempfile::tempdir().unwrap();
    let app = App::open_in(Some(data.path()), common::environment()).unwrap();
    let seeded = app.provider("ollama").unwrap();
    assert_eq!(
        seeded.base_url, OLLAMA_DEFAULT,
        "OLLAMA_HOST reached the app"
    );
    app.add_provider(NewProvider {
        name: "cloud".into(),
        kind: ProviderKind::Openai,
        base_url: Some(format!("{}/v1", server.url())),
        api_key_env: None,
        settings: Default::default(),
    })
    .unwrap();
    assert!(
        app.provider_keys("cloud").unwrap().is_empty(),
        "OPENAI_API_KEY reached the app"
    );
    let stored = serde_json::to_value(app.set_key("cloud", "sk-stored").unwrap().location);
    assert_stored_in(&stored.unwrap(), data.path());
    drop(app);
    assert_eq!(std::fs::read_dir(&poisoned).unwrap().count(), 0);
    println!("SEALED");
}

/// A key stored in `data`'s secrets file, not in a keychain.
fn assert_stored_in(location: &Value, data: &Path) {
    let file = location["File"]
        .as_str()
        .unwrap_or_else(|| panic!("{location}"));
    assert!(Path::new(file).starts_with(data), "{file}");
}
