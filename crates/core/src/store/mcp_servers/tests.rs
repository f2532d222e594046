#![allow(clippy::unwrap_used)]

use super::*;

fn stdio(command: &str) -> McpTransport {
    McpTransport::Stdio {
        command: command.into(),
        args: vec!["--flag".into(), "two words".into()],
        env: BTreeMap::from([("TOKEN".into(), "${GITHUB_TOKEN}".into())]),
    }
}

#[test]
fn add_then_read_back_both_transports() {
    let store = Store::open_in_memory().unwrap();
    let a = store.add_mcp_server("files", stdio("mcp-files")).unwrap();
    let b = store
        .add_mcp_server(
            "web-search_2",
            McpTransport::Http {
                url: "https://example.com/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer t0k".into())]),
            },
        )
        .unwrap();
    let c = store
        .add_mcp_server(
            "legacy",
            McpTransport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
                headers: BTreeMap::new(),
            },
        )
        .unwrap();
    assert!(a.enabled && b.enabled && c.enabled);
    assert_eq!(
        store.mcp_servers().unwrap(),
        vec![a.clone(), b.clone(), c.clone()]
    );
    assert_eq!(store.mcp_server(a.id).unwrap(), a);
    assert_eq!(store.mcp_server_by_name("web-search_2").unwrap(), Some(b));
    assert_eq!(store.mcp_server_by_name("nope").unwrap(), None);
}

#[test]
fn names_that_cannot_prefix_a_tool_are_refused() {
    let store = Store::open_in_memory().unwrap();
    let long = "a".repeat(MCP_SERVER_NAME_MAX + 1);
    for bad in [
        "",
        "a/b",
        "a b",
        "a.b",
        "ä",
        "a\n",
        "a__b",
        "a_",
        long.as_str(),
    ] {
        let err = store.add_mcp_server(bad, stdio("x")).unwrap_err();
        assert!(
            matches!(err, McpServerError::InvalidName { .. }),
            "{bad:?}: {err}"
        );
    }
    let max = "a".repeat(MCP_SERVER_NAME_MAX);
    for good in [max.as_str(), "_a", "a_b-c", "-", "9"] {
        store.add_mcp_server(good, stdio("x")).unwrap();
    }
    assert_eq!(store.mcp_servers().unwrap().len(), 5);
}

#[test]
fn empty_command_and_non_http_url_are_refused() {
    let store = Store::open_in_memory().unwrap();
    let err = store.add_mcp_server("s", stdio("  ")).unwrap_err();
    assert!(
        matches!(err, McpServerError::InvalidTransport { .. }),
        "{err}"
    );
    let ftp = McpTransport::Http {
        url: "ftp://example.com".into(),
        headers: BTreeMap::new(),
    };
    let err = store.add_mcp_server("h", ftp).unwrap_err();
    assert!(
        matches!(err, McpServerError::InvalidTransport { .. }),
        "{err}"
    );
    assert!(store.mcp_servers().unwrap().is_empty());
}

#[test]
fn headers_are_parsed_validated_and_masked() {
    assert_eq!(
        parse_mcp_header(" Authorization :  Bearer abc ").unwrap(),
        ("Authorization".to_string(), "Bearer abc".to_string())
    );
    for bad in ["no colon", ": v", "Bad Name: v", "X-A:", "Accept: */*"] {
        let err = parse_mcp_header(bad).unwrap_err();
        assert!(matches!(err, McpServerError::InvalidHeader { .. }), "{bad}");
    }
    let store = Store::open_in_memory().unwrap();
    let smuggled = McpTransport::Http {
        url: "https://example.com/mcp".into(),
        headers: BTreeMap::from([("X-A".into(), "v\r\nX-B: w".into())]),
    };
    let err = store.add_mcp_server("h", smuggled).unwrap_err();
    assert!(matches!(err, McpServerError::InvalidHeader { .. }), "{err}");

    let secret = "Bearer sk-0123456789abcdefWXYZ";
    assert_eq!(mask_header_value(secret), "Bearer ••••WXYZ");
    assert_eq!(mask_header_value("short"), "••••");
    let http = McpTransport::Http {
        url: "https://example.com/mcp".into(),
        headers: BTreeMap::from([("Authorization".into(), secret.into())]),
    };
    let json = serde_json::to_string(&http).unwrap();
    assert!(!json.contains("0123456789"), "{json}");
    assert!(json.contains("Bearer ••••WXYZ"), "{json}");
    assert_eq!(http.masked_headers(), ["Authorization: Bearer ••••WXYZ"]);
}

#[test]
fn header_values_take_tokens_from_the_environment() {
    let headers = BTreeMap::from([
        (
            "Authorization".to_string(),
            "Bearer ${GH_TOKEN}".to_string(),
        ),
        ("X-Plain".to_string(), "a ${not closed".to_string()),
        ("X-Two".to_string(), "${A}-${A}".to_string()),
    ]);
    let env = |name: &str| match name {
        "GH_TOKEN" => Some("ghp_123".to_string()),
        "A" => Some("x".to_string()),
        _ => None,
    };
    let expanded = expand_header_values(&headers, env).unwrap();
    assert_eq!(expanded["Authorization"], "Bearer ghp_123");
    assert_eq!(expanded["X-Plain"], "a ${not closed");
    assert_eq!(expanded["X-Two"], "x-x");
    let missing = BTreeMap::from([("A".to_string(), "${UNSET_ONE}".to_string())]);
    assert_eq!(expand_header_values(&missing, env), Err("UNSET_ONE".into()));
}

#[test]
fn migration_014_keeps_existing_servers_without_headers() {
    let mut conn = rusqlite::Connection::open_in_memory().unwrap();
    let migrations = crate::store::migrations();
    migrations.to_version(&mut conn, 12).unwrap();
    conn.execute(
        "INSERT INTO mcp_servers (id, name, transport, url, created_at)
         VALUES (5, 'web', 'http', 'https://example.com/mcp', 1)",
        [],
    )
    .unwrap();
    migrations.to_latest(&mut conn).unwrap();
    let row: (i64, String, String) = conn
        .query_row(
            "SELECT id, transport, headers FROM mcp_servers WHERE name = 'web'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(row, (5, "http".into(), "{}".into()));
    // The widened CHECK takes 'sse' (with a URL) and still refuses a URL-less one.
    let sse =
        "INSERT INTO mcp_servers (name, transport, url, created_at) VALUES (?1, 'sse', ?2, 1)";
    conn.execute(sse, rusqlite::params!["old", "http://h/sse"])
        .unwrap();
    assert!(
        conn.execute(sse, rusqlite::params!["bad", None::<String>])
            .is_err()
    );
}

#[test]
fn duplicate_name_is_reported_as_such() {
    let store = Store::open_in_memory().unwrap();
    store.add_mcp_server("dup", stdio("a")).unwrap();
    let err = store.add_mcp_server("dup", stdio("b")).unwrap_err();
    assert!(
        matches!(err, McpServerError::DuplicateName(ref n) if n == "dup"),
        "{err}"
    );
}

#[test]
fn enable_disable_and_remove() {
    let store = Store::open_in_memory().unwrap();
    let s = store.add_mcp_server("s", stdio("a")).unwrap();
    store.set_mcp_server_enabled(s.id, false).unwrap();
    assert!(!store.mcp_server(s.id).unwrap().enabled);
    store.set_mcp_server_enabled(s.id, true).unwrap();
    assert!(store.mcp_server(s.id).unwrap().enabled);
    store.remove_mcp_server(s.id).unwrap();
    assert!(store.mcp_servers().unwrap().is_empty());
    assert!(matches!(
        store.remove_mcp_server(s.id),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.set_mcp_server_enabled(s.id, true),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn corrupt_args_json_is_a_typed_error() {
    let store = Store::open_in_memory().unwrap();
    let s = store.add_mcp_server("s", stdio("a")).unwrap();
    // Valid JSON (the CHECK allows it) but not a list of strings.
    store
        .conn()
        .execute(
            "UPDATE mcp_servers SET args = '{\"a\":1}' WHERE id = ?1",
            [s.id],
        )
        .unwrap();
    assert!(matches!(
        store.mcp_server(s.id),
        Err(StoreError::Json { .. })
    ));
}

#[test]
fn stdio_env_holds_the_record_and_forwards_on_request() {
    let parent = [
        ("PATH", "/bin"),
        ("OPENAI_API_KEY", "sk-1"),
        ("GITHUB_TOKEN", "ghp-2"),
        ("HOME", "/home/me"),
    ]
    .map(|(k, v)| (OsString::from(k), OsString::from(v)));
    let record = BTreeMap::from([
        ("GH".to_string(), "${GITHUB_TOKEN}".to_string()),
        ("MISSING".to_string(), "${NOT_SET}".to_string()),
        ("HOME".to_string(), "${NOT_SET}".to_string()),
        ("MODE".to_string(), "fast".to_string()),
    ]);
    let env = stdio_server_env(&record, parent);
    let get = |k: &str| {
        env.get(OsStr::new(k))
            .map(|v| v.as_deref().and_then(|v| v.to_str()))
    };
    // Nothing of the app's environment but what the record forwards by name.
    assert_eq!(get("PATH"), None);
    assert_eq!(get("OPENAI_API_KEY"), None);
    assert_eq!(get("GITHUB_TOKEN"), None);
    assert_eq!(get("GH"), Some(Some("ghp-2")), "explicitly forwarded");
    assert_eq!(get("MISSING"), Some(None), "a forward of nothing unsets");
    assert_eq!(get("HOME"), Some(None), "a forward of nothing unsets");
    assert_eq!(get("MODE"), Some(Some("fast")));
    assert_eq!(env.len(), 4);
}
