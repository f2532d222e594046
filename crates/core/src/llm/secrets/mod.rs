//! Where provider API keys live: the OS keychain (service [`KEYCHAIN_SERVICE`], account = the
//! provider name) or, where no keychain service runs or [`KEYCHAIN_ENV`]` = off` says so, a 0600
//! JSON file in the config directory; keys may also come from the conventional environment
//! variables ([`env_keys`]) of the [`Environment`] the app was opened with. Tests give an
//! isolated environment (file storage) or keyring-core's mock store, never the OS keychain.
//! Keys are never written to SQLite or logs, and no error message or `Debug` output holds one.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use super::ProviderKind;
use crate::environment::{Environment, KEYCHAIN_ENV};

/// Keychain service name; the account is the provider name.
pub const KEYCHAIN_SERVICE: &str = "tandem";
/// Name of the fallback file inside the config directory.
pub const SECRETS_FILE: &str = "secrets.json";
/// Account read (never written) to find out whether a keychain answers at all.
const PROBE_ACCOUNT: &str = "tandem-keychain-probe";

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum SecretLocation {
    Keychain,
    File(PathBuf),
    /// The name of the environment variable the key came from.
    Environment(String),
}

/// Errors name the provider, the file or the keychain problem, never a key's value.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("invalid provider name {0:?}: use a non-empty name without control characters")]
    InvalidProvider(String),
    #[error("the API key for {0} is empty: paste the whole key")]
    EmptyKey(String),
    #[error("could not {action} the secrets file {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("the secrets file {} is corrupt ({detail}); repair it, or delete it and set the keys again", path.display())]
    CorruptFile { path: PathBuf, detail: String },
    #[error(
        "the OS keychain could not {action} the key for {provider} ({detail}); unlock it, or use file storage"
    )]
    Keychain {
        action: &'static str,
        provider: String,
        detail: String,
    },
}

/// Which keychain keys go to.
enum Keychain {
    /// The OS keychain (keyring's platform store), when it answers.
    Os,
    /// None: keys go to the file. Why, as the person is told where keys are stored.
    Off(String),
    /// A given keyring store (tests: keyring-core's in-memory mock).
    Store(Arc<keyring_core::CredentialStore>),
}

/// The key store. Holds no key material itself; `Send + Sync`.
pub struct Secrets {
    file: PathBuf,
    keychain_choice: Keychain,
    /// The cached probe: `Ok` when a keychain answers, else why not.
    keychain: OnceLock<Result<(), String>>,
    file_lock: Mutex<()>,
    /// Where keys from environment variables come from.
    env: Environment,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keychain = self.keychain.get().map(Result::is_ok);
        let choice = match &self.keychain_choice {
            Keychain::Os => "os",
            Keychain::Off(_) => "off",
            Keychain::Store(_) => "given store",
        };
        f.debug_struct("Secrets")
            .field("file", &self.file)
            .field("keychain", &choice)
            .field("keychain_available", &keychain)
            .finish()
    }
}

impl Secrets {
    /// Keys in the OS keychain when one answers, else `config_dir/secrets.json`; with
    /// [`KEYCHAIN_ENV`]` = off` in `env`, the file only (and the person is told why). Keys
    /// from environment variables come from `env`.
    pub fn open(config_dir: &Path, env: &Environment) -> Secrets {
        let keychain = match env.get(KEYCHAIN_ENV).map(str::trim) {
            None | Some("") => Keychain::Os,
            Some("off") => Keychain::Off(format!("{KEYCHAIN_ENV}=off chose file storage")),
            Some(other) => Keychain::Off(format!(
                "{KEYCHAIN_ENV}={other:?} is not understood (unset it, or set it to off), so \
                 the keychain is not used"
            )),
        };
        Secrets::build(config_dir.join(SECRETS_FILE), keychain, env.clone())
    }

    /// Only the file at `path`; the OS keychain is never touched and no key comes from the
    /// environment.
    pub fn file_only(path: &Path) -> Secrets {
        let off = Keychain::Off("file-only storage was requested".to_owned());
        Secrets::build(path.to_path_buf(), off, Environment::default())
    }

    /// Keys in `store` (a keyring credential store: tests give keyring-core's mock), the file
    /// at `path` for what was stored before; no key comes from the environment.
    pub fn with_keychain_store(path: &Path, store: Arc<keyring_core::CredentialStore>) -> Secrets {
        Secrets::build(
            path.to_path_buf(),
            Keychain::Store(store),
            Environment::default(),
        )
    }

    fn build(file: PathBuf, keychain_choice: Keychain, env: Environment) -> Secrets {
        let (keychain, file_lock) = (OnceLock::new(), Mutex::new(()));
        Secrets {
            file,
            keychain_choice,
            keychain,
            file_lock,
            env,
        }
    }

    /// The environment keys and Tandem's settings are read from.
    pub fn environment(&self) -> &Environment {
        &self.env
    }

    /// Keys for a provider of `kind` from the environment ([`env_keys`]).
    pub fn env_keys(&self, kind: ProviderKind, api_key_env: Option<&str>) -> Vec<String> {
        env_keys(kind, api_key_env, |name| {
            self.env.get(name).map(str::to_string)
        })
    }

    /// The secrets file (used where no keychain answers); agent commands may never read it.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Where `set` would store a key now. The keychain is probed once and the answer cached.
    pub fn location(&self) -> SecretLocation {
        match self.keychain() {
            Ok(()) => SecretLocation::Keychain,
            Err(_) => SecretLocation::File(self.file.clone()),
        }
    }

    /// Why keys go to the file instead of the keychain (`None` when the keychain is used).
    pub fn keychain_unavailable_reason(&self) -> Option<&str> {
        self.keychain().as_ref().err().map(String::as_str)
    }

    /// Stores `key` (trimmed) for `provider` and returns where it went. Storing in the keychain
    /// also removes any older copy from the file.
    pub fn set(&self, provider: &str, key: &str) -> Result<SecretLocation, SecretError> {
        check_provider(provider)?;
        let key = key.trim();
        if key.is_empty() {
            return Err(SecretError::EmptyKey(provider.to_owned()));
        }
        if self.keychain().is_ok() {
            let stored = self.entry(provider, "store")?.set_password(key);
            stored.map_err(|e| keychain_error("store", provider, &e))?;
            self.remove_from_file(provider)?;
            return Ok(SecretLocation::Keychain);
        }
        let _guard = self.lock();
        let mut keys = read_file(&self.file)?;
        keys.insert(provider.to_owned(), key.to_owned());
        write_file(&self.file, &keys)?;
        Ok(SecretLocation::File(self.file.clone()))
    }

    /// The stored key for `provider`: the keychain first (if available), then the file.
    pub fn get(&self, provider: &str) -> Result<Option<String>, SecretError> {
        check_provider(provider)?;
        if self.keychain().is_ok() {
            match self.entry(provider, "read")?.get_password() {
                Ok(key) => return Ok(Some(key)),
                Err(keyring::Error::NoEntry) => {}
                Err(e) => return Err(keychain_error("read", provider, &e)),
            }
        }
        let _guard = self.lock();
        Ok(read_file(&self.file)?.remove(provider))
    }

    /// Every key stored for `provider`, in order (several are kept one per line).
    pub fn keys(&self, provider: &str) -> Result<Vec<String>, SecretError> {
        Ok(self
            .get(provider)?
            .map(|value| split_keys(&value))
            .unwrap_or_default())
    }

    /// Adds `key` after the keys stored for `provider` (a key already there stays once).
    pub fn add(&self, provider: &str, key: &str) -> Result<SecretLocation, SecretError> {
        let key = key.trim();
        if key.is_empty() {
            return Err(SecretError::EmptyKey(provider.to_owned()));
        }
        let mut keys = self.keys(provider)?;
        if !keys.iter().any(|k| k == key) {
            keys.push(key.to_string());
        }
        self.set(provider, &keys.join("\n"))
    }

    /// Removes the stored key whose [`fingerprint`] is `fingerprint`; false when none is.
    pub fn remove_key(&self, provider: &str, fingerprint: &str) -> Result<bool, SecretError> {
        let mut keys = self.keys(provider)?;
        let before = keys.len();
        keys.retain(|k| self::fingerprint(k) != fingerprint.trim());
        if keys.len() == before {
            return Ok(false);
        }
        match keys.is_empty() {
            true => self.delete(provider)?,
            false => {
                self.set(provider, &keys.join("\n"))?;
            }
        }
        Ok(true)
    }

    /// Removes the key for `provider` from the keychain and the file; a missing key is fine.
    pub fn delete(&self, provider: &str) -> Result<(), SecretError> {
        check_provider(provider)?;
        if self.keychain().is_ok() {
            match self.entry(provider, "delete")?.delete_credential() {
                Ok(()) | Err(keyring::Error::NoEntry) => {}
                Err(e) => return Err(keychain_error("delete", provider, &e)),
            }
        }
        self.remove_from_file(provider)
    }

    fn remove_from_file(&self, provider: &str) -> Result<(), SecretError> {
        let _guard = self.lock();
        let mut keys = read_file(&self.file)?;
        if keys.remove(provider).is_none() {
            Ok(())
        } else if keys.is_empty() {
            fs::remove_file(&self.file).map_err(|e| io_error("remove", &self.file, e))
        } else {
            write_file(&self.file, &keys)
        }
    }

    fn keychain(&self) -> &Result<(), String> {
        self.keychain.get_or_init(|| match &self.keychain_choice {
            Keychain::Os => probe_keychain(),
            Keychain::Off(why) => Err(why.clone()),
            Keychain::Store(_) => Ok(()),
        })
    }

    /// The keychain entry of `provider`.
    fn entry(
        &self,
        provider: &str,
        action: &'static str,
    ) -> Result<keyring_core::Entry, SecretError> {
        let entry = match &self.keychain_choice {
            Keychain::Store(store) => store.build(KEYCHAIN_SERVICE, provider, None),
            _ => keyring::Entry::new(KEYCHAIN_SERVICE, provider).map(|e| e.inner),
        };
        entry.map_err(|e| keychain_error(action, provider, &e))
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        self.file_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Reads an entry that should not exist: `NoEntry` means a keychain answered.
fn probe_keychain() -> Result<(), String> {
    use keyring::Error as E;
    match keyring::Entry::new(KEYCHAIN_SERVICE, PROBE_ACCOUNT).and_then(|e| e.get_password()) {
        Ok(_) | Err(E::NoEntry) => Ok(()),
        // keyring::Entry::new says only NoDefaultStore; the store's own failure says why.
        Err(E::NoDefaultStore) => match keyring::Entry::store_status() {
            Err(e) => Err(e.to_string()),
            Ok(()) => Err(E::NoDefaultStore.to_string()),
        },
        Err(
            e @ (E::PlatformFailure(_)
            | E::NoStorageAccess(_)
            | E::NotSupportedByStore(_)
            | E::Invalid(..)),
        ) => Err(e.to_string()),
        // The store answered, just oddly (say, several probe entries): it is there.
        Err(_) => Ok(()),
    }
}

/// keyring's `Display` never prints secret bytes (its `Debug` may), so only that is kept.
fn keychain_error(action: &'static str, provider: &str, error: &keyring::Error) -> SecretError {
    let (provider, detail) = (provider.to_owned(), error.to_string());
    SecretError::Keychain {
        action,
        provider,
        detail,
    }
}

fn check_provider(provider: &str) -> Result<(), SecretError> {
    let bad = provider.trim().is_empty() || provider.chars().any(char::is_control);
    if bad || provider.len() > 200 {
        return Err(SecretError::InvalidProvider(provider.to_owned()));
    }
    Ok(())
}

fn io_error(action: &'static str, path: &Path, source: io::Error) -> SecretError {
    SecretError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// The provider → key map; a missing file is empty. Group/other permission bits are removed.
fn read_file(path: &Path) -> Result<BTreeMap<String, String>, SecretError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(io_error("open", path, e)),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = file.metadata().map_err(|e| io_error("inspect", path, e))?;
        if meta.permissions().mode() & 0o077 != 0 {
            let private = fs::Permissions::from_mode(0o600);
            file.set_permissions(private)
                .map_err(|e| io_error("chmod", path, e))?;
        }
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| io_error("read", path, e))?;
    // serde_json's messages can quote the offending value (a key): say only where it is.
    serde_json::from_slice(&bytes).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Data => "not an object of provider names to keys",
            _ => "not valid JSON",
        };
        let detail = format!("{what}, at line {} column {}", e.line(), e.column());
        SecretError::CorruptFile {
            path: path.to_path_buf(),
            detail,
        }
    })
}

/// Atomic replace: a 0600 temp file in the same directory (created 0700 if missing), then rename.
fn write_file(path: &Path, keys: &BTreeMap<String, String>) -> Result<(), SecretError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| io_error("create the directory of", path, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".secrets-")
        .tempfile_in(dir)
        .map_err(|e| io_error("create a temporary file for", path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let private = fs::Permissions::from_mode(0o600);
        tmp.as_file()
            .set_permissions(private)
            .map_err(|e| io_error("chmod", path, e))?;
    }
    let json = serde_json::to_vec_pretty(keys).map_err(|e| io_error("encode", path, e.into()))?;
    tmp.write_all(&json)
        .map_err(|e| io_error("write", path, e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| io_error("write", path, e))?;
    tmp.persist(path)
        .map_err(|e| io_error("replace", path, e.error))?;
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all(); // best effort: makes the rename durable
    }
    Ok(())
}

/// The conventional environment variable for a provider's key (Ollama needs none).
pub fn conventional_env(kind: ProviderKind) -> Option<&'static str> {
    kind.key_env_vars().first().copied()
}

/// Keys from the environment: the provider's own `api_key_env` variable if given (then no other
/// variable is read, so a key never goes to a server it was not meant for), else the conventional
/// ones (Gemini: `GEMINI_API_KEY`, then `GOOGLE_API_KEY`). A value may hold several keys
/// separated by commas or whitespace; empty pieces and duplicates are dropped.
pub fn env_keys(
    kind: ProviderKind,
    api_key_env: Option<&str>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let names: Vec<&str> = match api_key_env.map(str::trim).filter(|name| !name.is_empty()) {
        Some(name) => vec![name],
        None => kind.key_env_vars().to_vec(),
    };
    for value in names.into_iter().filter_map(lookup) {
        let keys = split_keys(&value);
        if !keys.is_empty() {
            return keys;
        }
    }
    Vec::new()
}

/// The keys in a stored or environment value: several may be given, separated by newlines,
/// commas or spaces; empty pieces and duplicates are dropped.
pub fn split_keys(value: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for piece in value.split(|c: char| c == ',' || c.is_whitespace()) {
        if !piece.is_empty() && !keys.iter().any(|k| k == piece) {
            keys.push(piece.to_owned());
        }
    }
    keys
}

/// A short name for a key that gives nothing of it away: 8 hex digits of its SHA-1.
pub fn fingerprint(key: &str) -> String {
    let hash = git2::Oid::hash_object(git2::ObjectType::Blob, key.trim().as_bytes())
        .map(|oid| oid.to_string())
        .unwrap_or_default();
    hash.chars().take(8).collect()
}

#[cfg(all(test, unix))]
mod tests;
