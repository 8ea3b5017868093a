//! Spark's `Utils.redact`: before configuration is printed or logged, the value of every
//! property whose key or value matches `spark.redaction.regex` (default
//! `(?i)secret|password|token|access[.]?key`) becomes `*********(redacted)`. One place for
//! every printer: `submit -v`, the event log's environment, the launch contexts the Client and
//! the ApplicationMaster log.
//!
//! Layer: conf (above the runtime).
//!
//! Spark searches both the key and the value (its `findFirstIn`): a value such as
//! `--conf spark.executorEnv.X_PASSWORD=...` inside a command line is caught even under an
//! innocent key. `redactCommandLineArgs` does the same for `-Dkey=value` arguments. The
//! pattern is Java regex syntax in Spark and Rust `regex` syntax here; the two agree on
//! everything but look-around and back-references, which `spark.redaction.regex` refuses.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;

use super::SparkConf;

/// The value a redacted property gets (Spark's `REDACTION_REPLACEMENT_TEXT`).
pub const REDACTION_REPLACEMENT_TEXT: &str = "*********(redacted)";

/// The default of `spark.redaction.regex`.
pub const DEFAULT_REDACTION_REGEX: &str = "(?i)secret|password|token|access[.]?key";

/// The key of the pattern (also [`super::SECRET_REDACTION_PATTERN`]).
const REDACTION_REGEX_KEY: &str = "spark.redaction.regex";

/// A compiled `spark.redaction.regex`.
#[derive(Clone, Debug)]
pub struct Redactor {
    pattern: Regex,
}

/// The default pattern, compiled with ASCII case folding as Java reads it: `(?i)` in a Java
/// pattern folds US-ASCII letters only (Unicode folding takes `UNICODE_CASE` as well), so
/// Spark's default does not match `ſecret` or a Kelvin-sign `KEY`, and neither does this one.
/// It is also the cheaper compile by far: Unicode folding expanded the pattern's classes into
/// automata whose building was 100 of the 700 page faults of the seed job's whole process
/// (`sparkyard submit` of SparkPi 10; issue 17).
fn default_regex() -> &'static Regex {
    static DEFAULT: OnceLock<Regex> = OnceLock::new();
    DEFAULT.get_or_init(|| {
        regex::RegexBuilder::new(DEFAULT_REDACTION_REGEX)
            .unicode(false)
            .build()
            .expect("the default pattern compiles")
    })
}

/// Whether `pattern` is one `spark.redaction.regex` may hold.
pub fn is_valid_pattern(pattern: &str) -> bool {
    Regex::new(pattern).is_ok()
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor {
            pattern: default_regex().clone(),
        }
    }
}

impl Redactor {
    /// The redactor of `pattern`, or the error that says why it is not a pattern.
    pub fn new(pattern: &str) -> Result<Redactor, String> {
        Regex::new(pattern)
            .map(|pattern| Redactor { pattern })
            .map_err(|e| e.to_string())
    }

    /// `Utils.redact(conf, ...)`: the configuration's `spark.redaction.regex`. Validation
    /// refuses a pattern that does not compile before anything starts; should one get here
    /// anyway, the default pattern applies (redacting too much, never too little).
    pub fn from_conf(conf: &SparkConf) -> Redactor {
        Self::from_value(conf.get_str(REDACTION_REGEX_KEY))
    }

    /// `Utils.redact(kvs: Map)`: the pattern the properties themselves set, else the default.
    pub fn from_pairs(pairs: &[(String, String)]) -> Redactor {
        let value = pairs
            .iter()
            .rev()
            .find(|(k, _)| k == REDACTION_REGEX_KEY)
            .map(|(_, v)| v.as_str());
        Self::from_value(value)
    }

    fn from_value(value: Option<&str>) -> Redactor {
        match value {
            Some(p) if p != DEFAULT_REDACTION_REGEX => Redactor::new(p).unwrap_or_default(),
            _ => Redactor::default(),
        }
    }

    /// Whether a property with this key and value is redacted.
    pub fn is_sensitive(&self, key: &str, value: &str) -> bool {
        self.pattern.is_match(key) || self.pattern.is_match(value)
    }

    /// The value to show for one property.
    pub fn value<'a>(&self, key: &str, value: &'a str) -> Cow<'a, str> {
        if self.is_sensitive(key, value) {
            Cow::Borrowed(REDACTION_REPLACEMENT_TEXT)
        } else {
            Cow::Borrowed(value)
        }
    }

    /// The properties, each sensitive value replaced by [`REDACTION_REPLACEMENT_TEXT`], in
    /// their order.
    pub fn redact<'a, I>(&self, pairs: I) -> Vec<(String, String)>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), self.value(k, v).into_owned()))
            .collect()
    }

    /// `Utils.redactCommandLineArgs`: every `-Dkey=value` argument whose key or value is
    /// sensitive becomes `-Dkey=*********(redacted)`; other arguments are kept.
    pub fn redact_command_line_args(&self, args: &[String]) -> Vec<String> {
        args.iter()
            .map(|arg| {
                // Spark's `-D(.+?)=(.+)`: the key up to the first `=`, a value of one or more
                // characters.
                let split = arg
                    .strip_prefix("-D")
                    .and_then(|rest| rest.split_once('='))
                    .filter(|(k, v)| !k.is_empty() && !v.is_empty());
                match split {
                    Some((k, v)) if self.is_sensitive(k, v) => {
                        format!("-D{k}={REDACTION_REPLACEMENT_TEXT}")
                    }
                    _ => arg.clone(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_default_pattern_matches_keys_or_values_in_any_case() {
        let r = Redactor::default();
        let shown = r.redact([
            ("spark.executorEnv.SECRET_PASSWORD", "hunter2"),
            ("spark.hadoop.fs.s3a.access.key", "AKIA"),
            ("spark.hadoop.fs.s3a.accessKey", "AKIA"),
            ("spark.my.Token", "t"),
            ("spark.app.name", "uses a Password in its value"),
            ("spark.executor.memory", "2g"),
            ("spark.access_key", "kept: '_' is not '.' or nothing"),
        ]);
        assert_eq!(
            shown,
            pairs(&[
                ("spark.executorEnv.SECRET_PASSWORD", REDACTION_REPLACEMENT_TEXT),
                ("spark.hadoop.fs.s3a.access.key", REDACTION_REPLACEMENT_TEXT),
                ("spark.hadoop.fs.s3a.accessKey", REDACTION_REPLACEMENT_TEXT),
                ("spark.my.Token", REDACTION_REPLACEMENT_TEXT),
                ("spark.app.name", REDACTION_REPLACEMENT_TEXT),
                ("spark.executor.memory", "2g"),
                ("spark.access_key", "kept: '_' is not '.' or nothing"),
            ])
        );
    }

    #[test]
    fn the_default_pattern_folds_case_as_java_does_ascii_letters_only() {
        let r = Redactor::default();
        assert!(r.is_sensitive("spark.x", "PaSsWoRd"));
        // Java's (?i) without UNICODE_CASE: the long s (U+017F) and the Kelvin sign (U+212A)
        // are not the letters they fold to in Unicode.
        assert!(!r.is_sensitive("spark.\u{17f}ecret", "x"));
        assert!(!r.is_sensitive("spark.access\u{212a}ey", "x"));
        // Still found inside any text, ASCII or not.
        assert!(r.is_sensitive("spark.clé", "mot de passe: TOKEN-é"));
    }

    #[test]
    fn the_configured_pattern_replaces_the_default() {
        let mut conf = SparkConf::new();
        conf.set("spark.redaction.regex", "mysecret|hidden");
        let r = Redactor::from_conf(&conf);
        assert!(r.is_sensitive("spark.hidden.key", "x"));
        assert!(
            !r.is_sensitive("spark.executorEnv.PASSWORD", "x"),
            "the default no longer applies"
        );
        let r = Redactor::from_pairs(&pairs(&[("spark.redaction.regex", "(?i)KEEPOUT")]));
        assert!(r.is_sensitive("a", "keepout"));
        assert!(!r.is_sensitive("token", "x"));
        // A pattern that does not compile (validation refuses it) falls back to the default.
        let r = Redactor::from_pairs(&pairs(&[("spark.redaction.regex", "(")]));
        assert!(r.is_sensitive("token", "x"));
        assert!(!is_valid_pattern("("));
        assert!(is_valid_pattern(DEFAULT_REDACTION_REGEX));
    }

    #[test]
    fn command_line_arguments_are_redacted_by_key_or_value() {
        let r = Redactor::default();
        let args: Vec<String> = [
            "sparkyard",
            "-Dspark.ssl.keyPassword=abc",
            "-Dspark.x=my-token-1",
            "-Dspark.y=plain",
            "-D=novalue",
            "--secret",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            r.redact_command_line_args(&args),
            vec![
                "sparkyard",
                "-Dspark.ssl.keyPassword=*********(redacted)",
                "-Dspark.x=*********(redacted)",
                "-Dspark.y=plain",
                "-D=novalue",
                "--secret",
            ]
        );
    }
}
