//! Configuration: [`SparkConf`] (an ordered map of string keys to string values with typed
//! reads through the key constants of [`keys`]), the loading of `spark-defaults.conf` and
//! `yarn-site.conf` from the configuration directory, Spark's time and size string parsers,
//! and whole-configuration validation.
//!
//! ```ignore
//! let mut conf = conf::load_config_dir(&conf::resolve_config_dir(None))?;
//! conf.set("spark.executor.cores", "2");
//! for warning in conf.validate()? {
//!     eprintln!("warning: {warning}");
//! }
//! let cores: u32 = conf.get(&conf::EXECUTOR_CORES)?;
//! let instances: Option<u32> = conf.get(&conf::EXECUTOR_INSTANCES)?;
//! ```
//!
//! Values keep Spark's syntax and defaults (see `shared/spark-reference.md`); keys in
//! sparkyard's own namespace `spark.sparkyard.*` additionally accept humantime durations.
//! Every error is a [`ConfError`] whose `Display` is one line naming the key, the value and
//! what was expected, or the file (and line) that could not be read.
//!
//! Layer: above the runtime (it reads the runtime's settings, [`supervision`], into plain
//! values), under rpc, YARN and the Spark side.

mod entry;
mod file;
pub mod keys;
mod nodes;
mod parse;
mod redact;
mod supervision;
mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

pub use entry::{
    BoolKind, Check, ConfEntry, DefaultValue, Entry, EnumKind, FloatKind, HostPort, HostPortKind, IntKind,
    IntValue, KeyInfo, ListKind, OptEntry, PatternEntry, SizeKind, StrKind, TimeKind, ValueKind,
};
pub use file::{load_properties_file, parse_properties, parse_properties_bytes, to_properties_text};
pub use keys::*;
pub use nodes::{node_managers, NodeSpec, DEFAULT_NODE_HOST, DEFAULT_RACK};
pub use parse::{
    format_duration, format_size, parse_bool, parse_humane_time, parse_list, parse_size, parse_time,
    SizeUnit, TimeUnit,
};
/// Whether `key` holds or points to the node's shared secret, which never leaves the node and
/// its clients (not in an application's configuration, not to its executors).
pub fn holds_node_secret(key: &str) -> bool {
    key == AUTHENTICATE_SECRET.name() || key == AUTHENTICATE_SECRET_FILE.name()
}

pub use redact::{is_valid_pattern, Redactor, DEFAULT_REDACTION_REGEX, REDACTION_REPLACEMENT_TEXT};
pub use supervision::supervision;
pub use validate::{nearest_known_key, ConfWarning};

/// File name of Spark's defaults in the configuration directory.
pub const SPARK_DEFAULTS_FILE: &str = "spark-defaults.conf";
/// File name of the YARN settings in the configuration directory.
pub const YARN_SITE_FILE: &str = "yarn-site.conf";
/// Environment variable naming the configuration directory.
pub const CONF_DIR_ENV: &str = "SPARKYARD_CONF_DIR";
/// Configuration directory used when neither a flag nor the environment names one.
pub const DEFAULT_CONF_DIR: &str = "config";

/// A configuration problem. `Display` gives one line naming what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfError {
    /// A value that does not parse or fails its key's check.
    InvalidValue {
        /// The key as set (an alternative name if that is what was set).
        key: String,
        /// The raw value.
        value: String,
        /// Why it was rejected, e.g. `is not a size (expected ...)` or `(must be at least 1)`.
        reason: String,
    },
    /// Individually valid values that contradict each other.
    Conflict {
        /// What contradicts what, naming keys and values.
        message: String,
    },
    /// A file that could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        message: String,
    },
    /// A file whose content is malformed.
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The problem.
        message: String,
    },
}

impl fmt::Display for ConfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use parse::one_line;
        match self {
            ConfError::InvalidValue { key, value, reason } => write!(
                f,
                "invalid value for {}: {} {}",
                one_line(key),
                parse::quote(value),
                one_line(reason)
            ),
            ConfError::Conflict { message } => {
                // Whole: the message is sparkyard's (or Spark's), its values already short.
                write!(
                    f,
                    "inconsistent configuration: {}",
                    parse::one_line_uncut(message)
                )
            }
            ConfError::Read { path, message } => write!(
                f,
                "cannot read properties file {}: {}",
                one_line(&path.display().to_string()),
                one_line(message)
            ),
            ConfError::Syntax { path, line, message } => write!(
                f,
                "{}:{line}: {}",
                one_line(&path.display().to_string()),
                one_line(message)
            ),
        }
    }
}

impl std::error::Error for ConfError {}

impl ConfError {
    /// The key the error is about, for value errors.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfError::InvalidValue { key, .. } => Some(key),
            _ => None,
        }
    }
}

/// Spark's configuration: string keys to string values, kept sorted by key.
///
/// Raw access ([`get_str`](Self::get_str), [`iter`](Self::iter)) sees strings; typed access
/// ([`get`](Self::get)) goes through the key constants, which know each key's type, default,
/// fallback key, older alternative names and value checks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SparkConf {
    settings: BTreeMap<String, String>,
}

impl SparkConf {
    /// An empty configuration (every typed read returns its default).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`, replacing any earlier value.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.settings.insert(key.into(), value.into());
        self
    }

    /// Sets `key` to `value` unless the key (or one of its alternative names) is set.
    pub fn set_if_missing(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        let key = key.into();
        if !self.contains(&key) {
            self.settings.insert(key, value.into());
        }
        self
    }

    /// Sets every pair in order (a later pair for the same key wins).
    pub fn set_all<K: Into<String>, V: Into<String>>(
        &mut self,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> &mut Self {
        for (k, v) in pairs {
            self.settings.insert(k.into(), v.into());
        }
        self
    }

    /// Keeps only the keys `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        let gone: Vec<String> = self
            .iter()
            .map(|(k, _)| k.to_string())
            .filter(|k| !keep(k))
            .collect();
        for key in gone {
            self.remove(&key);
        }
    }

    /// Removes `key` (exactly this name), returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.settings.remove(key)
    }

    /// Whether `key` is set, directly or (for a known key) through an alternative name, as
    /// Spark's `SparkConf.contains`.
    pub fn contains(&self, key: &str) -> bool {
        self.get_str(key).is_some()
    }

    /// The raw value of `key`; if it is unset but the key is known and one of its
    /// alternative (older) names is set, that value, as Spark reads alternatives.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        if let Some(v) = self.settings.get(key) {
            return Some(v);
        }
        let info = keys::find_key(key).filter(|info| info.key == key)?;
        info.alternatives
            .iter()
            .find_map(|alt| self.settings.get(*alt).map(String::as_str))
    }

    /// The value of exactly `key`, ignoring alternative names.
    pub fn get_exact(&self, key: &str) -> Option<&str> {
        self.settings.get(key).map(String::as_str)
    }

    /// The first of `key` and then `alternatives` that is set, as (name set, value).
    pub fn lookup<'a>(&'a self, key: &'a str, alternatives: &[&'a str]) -> Option<(&'a str, &'a str)> {
        std::iter::once(&key)
            .chain(alternatives.iter())
            .find_map(|k| self.settings.get(*k).map(|v| (*k, v.as_str())))
    }

    /// Typed read through a key constant: the value (or default) for keys with a default,
    /// `Option` for keys without one. Errors name the key, the value and what was expected.
    pub fn get<E: Entry>(&self, entry: &E) -> Result<E::Output, ConfError> {
        entry.read(self)
    }

    /// All settings, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.settings.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Settings whose key starts with `prefix`, with the prefix removed (Spark's
    /// `getAllWithPrefix`), sorted by key.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.settings
            .range(prefix.to_string()..)
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(move |(k, v)| (&k[prefix.len()..], v.as_str()))
    }

    /// Number of settings.
    pub fn len(&self) -> usize {
        self.settings.len()
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.settings.is_empty()
    }

    /// Checks the whole configuration before anything starts: every known key that is set
    /// (including alternative names and `yarn.sparkyard.nodemanager.<host>` keys) is parsed
    /// and checked, the first error in key order wins; then rules spanning several keys are
    /// checked (heartbeat interval below the network timeout, executor cores at least
    /// `spark.task.cpus`, dynamic allocation bounds when enabled, YARN minimum allocations at
    /// most the maximums, supervisor backoff at most its cap).
    ///
    /// Returns warnings for unknown `spark.*` / `yarn.*` keys (with the nearest known key when
    /// one is close) and for deprecated alternative names. Keys with other prefixes are left
    /// to the caller.
    pub fn validate(&self) -> Result<Vec<ConfWarning>, ConfError> {
        validate::validate(self)
    }

    /// Reads a properties file and sets every pair in it (later `set` calls override).
    pub fn load_file(&mut self, path: &Path) -> Result<(), ConfError> {
        let pairs = load_properties_file(path)?;
        self.set_all(pairs);
        Ok(())
    }

    /// The settings as properties text that [`load_file`](Self::load_file) reads back.
    pub fn to_properties_string(&self) -> String {
        to_properties_text(self.iter())
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for SparkConf {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut conf = SparkConf::new();
        conf.set_all(iter);
        conf
    }
}

impl<K: Into<String>, V: Into<String>> Extend<(K, V)> for SparkConf {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        self.set_all(iter);
    }
}

/// A loaded configuration directory and which of its files were present.
#[derive(Clone, Debug)]
pub struct ConfigDir {
    /// The directory.
    pub dir: PathBuf,
    /// The files that existed and were loaded, in load order.
    pub loaded: Vec<PathBuf>,
    /// Everything they set.
    pub conf: SparkConf,
}

impl ConfigDir {
    /// Loads `<dir>/spark-defaults.conf` and then `<dir>/yarn-site.conf` into one
    /// configuration. A missing file (or directory) is skipped; a file that exists but cannot
    /// be read, or is malformed, is an error naming it.
    pub fn load(dir: &Path) -> Result<ConfigDir, ConfError> {
        let mut conf = SparkConf::new();
        let mut loaded = Vec::new();
        for name in [SPARK_DEFAULTS_FILE, YARN_SITE_FILE] {
            let path = dir.join(name);
            match std::fs::read(&path) {
                Ok(bytes) => {
                    conf.set_all(parse_properties_bytes(&bytes, &path)?);
                    loaded.push(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(ConfError::Read {
                        message: file::io_message(&e),
                        path,
                    })
                }
            }
        }
        Ok(ConfigDir {
            dir: dir.to_path_buf(),
            loaded,
            conf,
        })
    }
}

/// Loads the configuration directory (see [`ConfigDir::load`]) and returns its settings.
pub fn load_config_dir(dir: &Path) -> Result<SparkConf, ConfError> {
    ConfigDir::load(dir).map(|d| d.conf)
}

/// The configuration directory: `flag` if given, else `$SPARKYARD_CONF_DIR` if set and not
/// empty, else `config` (relative to the working directory).
pub fn resolve_config_dir(flag: Option<&Path>) -> PathBuf {
    resolve_config_dir_from(flag, std::env::var_os(CONF_DIR_ENV))
}

/// [`resolve_config_dir`] with the environment value passed in (for callers and tests that
/// must not read the process environment).
pub fn resolve_config_dir_from(flag: Option<&Path>, env: Option<std::ffi::OsString>) -> PathBuf {
    match (flag, env) {
        (Some(dir), _) => dir.to_path_buf(),
        (None, Some(env)) if !env.is_empty() => PathBuf::from(env),
        _ => PathBuf::from(DEFAULT_CONF_DIR),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn set_get_remove_and_order() {
        let mut c = SparkConf::new();
        assert!(c.is_empty());
        c.set("spark.b", "2").set("spark.a", "1").set("spark.c", "3");
        c.set("spark.b", "22");
        assert_eq!(c.len(), 3);
        assert_eq!(c.get_str("spark.b"), Some("22"));
        let keys: Vec<&str> = c.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, vec!["spark.a", "spark.b", "spark.c"]);
        assert_eq!(c.remove("spark.a"), Some("1".to_string()));
        assert_eq!(c.remove("spark.a"), None);
        assert!(!c.contains("spark.a"));
        c.set_if_missing("spark.b", "ignored")
            .set_if_missing("spark.d", "4");
        assert_eq!(c.get_str("spark.b"), Some("22"));
        assert_eq!(c.get_str("spark.d"), Some("4"));
    }

    #[test]
    fn get_str_and_contains_follow_alternatives() {
        let mut c = SparkConf::new();
        c.set("spark.yarn.max.executor.failures", "8");
        assert_eq!(c.get_str("spark.executor.maxNumFailures"), Some("8"));
        assert!(c.contains("spark.executor.maxNumFailures"));
        assert_eq!(c.get_exact("spark.executor.maxNumFailures"), None);
        // Alternatives do not resolve backwards.
        c.set("spark.executor.failuresValidityInterval", "1h");
        assert_eq!(c.get_str("spark.yarn.executor.failuresValidityInterval"), None);
        // set_if_missing respects an alternative that is set.
        c.set_if_missing("spark.executor.maxNumFailures", "3");
        assert_eq!(c.get_exact("spark.executor.maxNumFailures"), None);
        assert_eq!(c.get(&MAX_EXECUTOR_FAILURES), Ok(Some(8)));
    }

    #[test]
    fn prefix_collection_and_iterators() {
        let c: SparkConf = [
            ("spark.executorEnv.A", "1"),
            ("spark.executorEnv.B", "2"),
            ("spark.executorEnvZ", "no"),
            ("spark.executor.cores", "2"),
        ]
        .into_iter()
        .collect();
        let env: Vec<(&str, &str)> = c.with_prefix("spark.executorEnv.").collect();
        assert_eq!(env, vec![("A", "1"), ("B", "2")]);
        let mut d = c.clone();
        d.extend([("spark.executor.cores", "4")]);
        assert_eq!(d.get(&EXECUTOR_CORES), Ok(4));
        assert_eq!(c.get(&EXECUTOR_CORES), Ok(2));
    }

    #[test]
    fn errors_are_single_lines_and_implement_error() {
        let e = ConfError::InvalidValue {
            key: "spark.x\ny".to_string(),
            value: "a\nb".to_string(),
            reason: "(must be\nsomething)".to_string(),
        };
        let shown = e.to_string();
        assert!(!shown.contains('\n'), "{shown}");
        assert_eq!(e.key(), Some("spark.x\ny"));
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert!(boxed
            .to_string()
            .starts_with("invalid value for spark.x\\ny: 'a\\nb'"));
        let read = ConfError::Read {
            path: PathBuf::from("config/spark-defaults.conf"),
            message: "No such file or directory".to_string(),
        };
        assert_eq!(
            read.to_string(),
            "cannot read properties file config/spark-defaults.conf: No such file or directory"
        );
        assert_eq!(read.key(), None);
    }

    #[test]
    fn load_file_sets_pairs_and_later_sets_override() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.conf");
        std::fs::write(
            &path,
            "spark.executor.cores 3\nspark.executor.cores=5\nspark.app.name My App\n",
        )
        .unwrap();
        let mut c = SparkConf::new();
        c.load_file(&path).unwrap();
        assert_eq!(c.get(&EXECUTOR_CORES), Ok(5));
        assert_eq!(c.get(&APP_NAME), Ok(Some("My App".to_string())));
        c.set("spark.executor.cores", "7");
        assert_eq!(c.get(&EXECUTOR_CORES), Ok(7));
        let e = c.load_file(&dir.path().join("missing.conf")).unwrap_err();
        assert!(e.to_string().starts_with("cannot read properties file "));
        assert!(e.to_string().ends_with("missing.conf: No such file or directory"));
    }

    #[test]
    fn properties_string_round_trips() {
        let mut c = SparkConf::new();
        c.set("spark.app.name", "name with = and : and spaces")
            .set("spark.executorEnv.MULTI", "line1\nline2")
            .set("weird key", "v");
        let text = c.to_properties_string();
        let back: SparkConf = parse_properties(&text, Path::new("mem"))
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(back, c);
    }

    #[test]
    fn config_dir_loading() {
        let dir = tempfile::tempdir().unwrap();
        // Nothing there: empty configuration.
        let loaded = ConfigDir::load(dir.path()).unwrap();
        assert!(loaded.loaded.is_empty());
        assert!(loaded.conf.is_empty());
        // Missing directory: also empty.
        assert!(load_config_dir(&dir.path().join("nope")).unwrap().is_empty());

        std::fs::write(
            dir.path().join(SPARK_DEFAULTS_FILE),
            "spark.executor.memory 2g\nyarn.nodemanager.resource.cpu-vcores 2\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(YARN_SITE_FILE),
            "yarn.nodemanager.resource.cpu-vcores=4\nyarn.sparkyard.nodemanager.h1=rack=/r\n",
        )
        .unwrap();
        let loaded = ConfigDir::load(dir.path()).unwrap();
        assert_eq!(loaded.loaded.len(), 2);
        let c = loaded.conf;
        assert_eq!(c.get(&EXECUTOR_MEMORY), Ok(2 << 30));
        // yarn-site is loaded after spark-defaults.
        assert_eq!(c.get(&NM_VCORES), Ok(4));
        assert_eq!(node_managers(&c).unwrap()[0].rack, "/r");

        // A malformed file is an error naming file and line.
        std::fs::write(dir.path().join(YARN_SITE_FILE), "ok=1\nbad=\\uXYZW\n").unwrap();
        let e = load_config_dir(dir.path()).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}:2: malformed \\uXXXX escape '\\uXYZW' (expected 4 hexadecimal digits)",
                dir.path().join(YARN_SITE_FILE).display()
            )
        );

        // An unreadable file (here: a directory in its place) is an error naming it.
        std::fs::remove_file(dir.path().join(YARN_SITE_FILE)).unwrap();
        std::fs::create_dir(dir.path().join(YARN_SITE_FILE)).unwrap();
        let e = load_config_dir(dir.path()).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "cannot read properties file {}: ",
                dir.path().join(YARN_SITE_FILE).display()
            )),
            "{e}"
        );
    }

    #[test]
    fn config_dir_resolution() {
        let flag = Path::new("/etc/sparkyard");
        assert_eq!(
            resolve_config_dir_from(Some(flag), Some("/env".into())),
            PathBuf::from("/etc/sparkyard")
        );
        assert_eq!(
            resolve_config_dir_from(None, Some("/env".into())),
            PathBuf::from("/env")
        );
        assert_eq!(
            resolve_config_dir_from(None, Some("".into())),
            PathBuf::from("config")
        );
        assert_eq!(resolve_config_dir_from(None, None), PathBuf::from("config"));
        assert_eq!(resolve_config_dir(Some(flag)), PathBuf::from("/etc/sparkyard"));
    }

    /// The shipped default files load and validate without warnings, and describe the
    /// three-node cluster.
    #[test]
    fn shipped_config_directory_is_valid() {
        // In the crate the files sit next to Cargo.toml; the scratch harness that builds this
        // module alone falls back to the main checkout.
        let own = Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
        let dir = if own.join(SPARK_DEFAULTS_FILE).is_file() {
            own
        } else {
            PathBuf::from("/work/main/config")
        };
        let loaded = ConfigDir::load(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.loaded.len(), 2, "both files present in {}", dir.display());
        let conf = loaded.conf;
        let warnings = conf.validate().unwrap_or_else(|e| panic!("{e}"));
        assert!(warnings.is_empty(), "{warnings:?}");
        let nodes = node_managers(&conf).unwrap();
        let summary: Vec<(&str, &str, u64, u32)> = nodes
            .iter()
            .map(|n| (n.host.as_str(), n.rack.as_str(), n.memory_mb, n.vcores))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("host1", "/rack1", 8192, 8),
                ("host2", "/rack1", 8192, 8),
                ("host3", "/rack2", 8192, 8),
            ]
        );
        let rm = conf.get(&RM_ADDRESS).unwrap();
        assert_eq!(rm.to_string(), "127.0.0.1:8032");
        assert_eq!(conf.get(&RM_SCHEDULER_MAXIMUM_ALLOCATION_MB), Ok(8192));
        assert_eq!(conf.get(&RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES), Ok(4));
        // Defaults documented in the files are Spark's.
        assert_eq!(conf.get(&EXECUTOR_MEMORY), Ok(1 << 30));
        assert_eq!(conf.get(&NETWORK_TIMEOUT), Ok(Duration::from_secs(120)));

        // Every commented-out "# key value" line shows the key's real default.
        let mut documented = 0;
        for name in [SPARK_DEFAULTS_FILE, YARN_SITE_FILE] {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            for line in text.lines() {
                let Some(rest) = line.strip_prefix("# ") else {
                    continue;
                };
                let mut words = rest.split_whitespace();
                let (Some(key), Some(value)) = (words.next(), words.next()) else {
                    continue;
                };
                let Some(info) = keys::find_key(key) else {
                    continue;
                };
                if info.is_pattern() || value.starts_with('(') || info.default.starts_with('(') {
                    continue;
                }
                assert_eq!(info.key, key, "{name}: {line}");
                assert_eq!(info.default, value, "{name}: {line}");
                documented += 1;
            }
        }
        assert!(documented > 40, "{documented}");
    }
}
