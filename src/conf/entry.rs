//! Typed configuration entries: the machinery behind the key constants of `keys.rs`.
//!
//! Layer: conf (above the runtime).
//!
//! An entry couples a key (plus its alternative, older names) with a *value kind* that
//! parses the raw string (time, size, boolean, integer, decimal, string, one of a fixed set,
//! comma list, host:port), a default (a string parsed like a user value, or another entry to
//! fall back on, as Spark's `fallbackConf`), and an optional value check (Spark's
//! `checkValue`). [`ConfEntry`] always yields a value; [`OptEntry`] yields `Option`.
//! Both implement [`Entry`], which is what `SparkConf::get` takes.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use super::parse::{self, quote, SizeUnit, TimeUnit};
use super::{ConfError, SparkConf};

/// A key that `SparkConf::get` can read with its type, default and checks.
pub trait Entry {
    /// What a read returns: the value, or `Option` of it for keys without a default.
    type Output;
    /// The key's (current) name.
    fn key(&self) -> &'static str;
    /// Reads the key (or, if unset, its alternatives in order, then its default).
    fn read(&self, conf: &SparkConf) -> Result<Self::Output, ConfError>;
}

/// How a raw string becomes a typed value.
pub trait ValueKind: Sync + 'static {
    /// The parsed type.
    type Value: 'static;
    /// Parses `raw`; the error is the reason without the value, e.g. `is not a time (...)`.
    fn parse(&self, raw: &str) -> Result<Self::Value, String>;
    /// Short description of accepted values, for key listings.
    fn describe(&self) -> String;
}

/// A time (Spark's `timeConf`), returned as a [`Duration`].
#[derive(Clone, Copy, Debug)]
pub struct TimeKind {
    /// Unit of a bare number.
    pub unit: TimeUnit,
    /// Also accept humantime's compound durations (`1m 30s`); only for `spark.sparkyard.*`.
    pub humane: bool,
}

impl TimeKind {
    /// Spark time syntax, bare numbers in `unit`.
    pub const fn new(unit: TimeUnit) -> Self {
        TimeKind { unit, humane: false }
    }
    /// Spark time syntax plus humantime durations, bare numbers in `unit`.
    pub const fn humane(unit: TimeUnit) -> Self {
        TimeKind { unit, humane: true }
    }
}

impl ValueKind for TimeKind {
    type Value = Duration;
    fn parse(&self, raw: &str) -> Result<Duration, String> {
        if self.humane {
            parse::humane_time_reason(raw, self.unit)
        } else {
            parse::time_reason(raw, self.unit)
        }
    }
    fn describe(&self) -> String {
        let extra = if self.humane {
            ", or a duration such as 1m 30s"
        } else {
            ""
        };
        format!("time (bare number in {}{extra})", time_unit_word(self.unit))
    }
}

fn time_unit_word(u: TimeUnit) -> &'static str {
    match u {
        TimeUnit::Microseconds => "microseconds",
        TimeUnit::Milliseconds => "milliseconds",
        TimeUnit::Seconds => "seconds",
        TimeUnit::Minutes => "minutes",
        TimeUnit::Hours => "hours",
        TimeUnit::Days => "days",
    }
}

/// A byte size (Spark's `bytesConf`), returned as a number of bytes.
#[derive(Clone, Copy, Debug)]
pub struct SizeKind {
    /// Unit of a bare number.
    pub unit: SizeUnit,
}

impl SizeKind {
    /// Size syntax, bare numbers in `unit`.
    pub const fn new(unit: SizeUnit) -> Self {
        SizeKind { unit }
    }
}

impl ValueKind for SizeKind {
    type Value = u64;
    fn parse(&self, raw: &str) -> Result<u64, String> {
        parse::size_reason(raw, self.unit)
    }
    fn describe(&self) -> String {
        let unit = match self.unit {
            SizeUnit::Byte => "bytes",
            SizeUnit::KiB => "KiB",
            SizeUnit::MiB => "MiB",
            SizeUnit::GiB => "GiB",
            SizeUnit::TiB => "TiB",
            SizeUnit::PiB => "PiB",
        };
        format!("size in bytes (bare number in {unit})")
    }
}

/// `true` or `false`, any letter case.
#[derive(Clone, Copy, Debug)]
pub struct BoolKind;

impl ValueKind for BoolKind {
    type Value = bool;
    fn parse(&self, raw: &str) -> Result<bool, String> {
        let t = raw.trim();
        if t.eq_ignore_ascii_case("true") {
            Ok(true)
        } else if t.eq_ignore_ascii_case("false") {
            Ok(false)
        } else {
            Err("is not a boolean (expected true or false)".to_string())
        }
    }
    fn describe(&self) -> String {
        "boolean".to_string()
    }
}

/// Integer types an [`IntKind`] can produce.
pub trait IntValue: Copy + fmt::Display + std::str::FromStr + Send + Sync + 'static {
    /// Smallest accepted value.
    const LOW: Self;
    /// Largest accepted value.
    const HIGH: Self;
}

macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl IntValue for $t {
            const LOW: Self = <$t>::MIN;
            const HIGH: Self = <$t>::MAX;
        }
    )*};
}
int_value!(u16, u32, u64, i32, i64);

/// A whole number of type `T` (surrounding whitespace ignored).
pub struct IntKind<T>(PhantomData<fn() -> T>);

impl<T> IntKind<T> {
    /// The integer kind for `T`.
    pub const fn new() -> Self {
        IntKind(PhantomData)
    }
}

impl<T> Default for IntKind<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: IntValue> ValueKind for IntKind<T> {
    type Value = T;
    fn parse(&self, raw: &str) -> Result<T, String> {
        raw.trim()
            .parse::<T>()
            .map_err(|_| format!("is not a whole number (expected {} to {})", T::LOW, T::HIGH))
    }
    fn describe(&self) -> String {
        format!("integer ({} to {})", T::LOW, T::HIGH)
    }
}

/// A finite decimal number.
#[derive(Clone, Copy, Debug)]
pub struct FloatKind;

impl ValueKind for FloatKind {
    type Value = f64;
    fn parse(&self, raw: &str) -> Result<f64, String> {
        match raw.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err("is not a number (expected a decimal number, e.g. 0.75)".to_string()),
        }
    }
    fn describe(&self) -> String {
        "decimal number".to_string()
    }
}

/// Any string, kept as written.
#[derive(Clone, Copy, Debug)]
pub struct StrKind;

impl ValueKind for StrKind {
    type Value = String;
    fn parse(&self, raw: &str) -> Result<String, String> {
        Ok(raw.to_string())
    }
    fn describe(&self) -> String {
        "string".to_string()
    }
}

/// One of a fixed set of words; the canonical spelling is returned.
#[derive(Clone, Copy, Debug)]
pub struct EnumKind {
    /// Accepted words, in their canonical spelling.
    pub allowed: &'static [&'static str],
    /// Whether letter case is ignored (Spark upper-cases `spark.scheduler.mode` first).
    pub ignore_case: bool,
}

impl EnumKind {
    /// Exact words.
    pub const fn exact(allowed: &'static [&'static str]) -> Self {
        EnumKind {
            allowed,
            ignore_case: false,
        }
    }
    /// Words compared without regard to letter case.
    pub const fn any_case(allowed: &'static [&'static str]) -> Self {
        EnumKind {
            allowed,
            ignore_case: true,
        }
    }
}

impl ValueKind for EnumKind {
    type Value = &'static str;
    fn parse(&self, raw: &str) -> Result<&'static str, String> {
        let t = raw.trim();
        self.allowed
            .iter()
            .find(|a| {
                if self.ignore_case {
                    a.eq_ignore_ascii_case(t)
                } else {
                    **a == t
                }
            })
            .copied()
            .ok_or_else(|| format!("is not one of {}", self.allowed.join(", ")))
    }
    fn describe(&self) -> String {
        format!("one of {}", self.allowed.join(", "))
    }
}

/// A comma-separated list (items trimmed, empty items dropped, as Spark's `toSequence`).
#[derive(Clone, Copy, Debug)]
pub struct ListKind;

impl ValueKind for ListKind {
    type Value = Vec<String>;
    fn parse(&self, raw: &str) -> Result<Vec<String>, String> {
        Ok(parse::parse_list(raw))
    }
    fn describe(&self) -> String {
        "comma-separated list".to_string()
    }
}

/// A network address `host:port`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostPort {
    /// Host name, IPv4 address, or IPv6 address (without brackets).
    pub host: String,
    /// Port, 0 to 65535 (0 = any free port).
    pub port: u16,
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// `host:port`, where host is a valid host name, an IPv4 address or a bracketed IPv6 address.
#[derive(Clone, Copy, Debug)]
pub struct HostPortKind;

impl ValueKind for HostPortKind {
    type Value = HostPort;
    fn parse(&self, raw: &str) -> Result<HostPort, String> {
        const EXPECTED: &str = "expected host:port, e.g. 127.0.0.1:8032";
        let t = raw.trim();
        let (host, port) = if let Some(rest) = t.strip_prefix('[') {
            let (h, after) = rest
                .split_once(']')
                .ok_or_else(|| format!("is not a host:port address ({EXPECTED})"))?;
            let p = after
                .strip_prefix(':')
                .ok_or_else(|| format!("is not a host:port address ({EXPECTED})"))?;
            if h.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(format!(
                    "is not a host:port address ('{h}' is not an IPv6 address)"
                ));
            }
            (h, p)
        } else {
            let (h, p) = t
                .rsplit_once(':')
                .ok_or_else(|| format!("is not a host:port address ({EXPECTED})"))?;
            if let Err(why) = check_host_name(h) {
                return Err(format!("is not a host:port address ({why})"));
            }
            (h, p)
        };
        let port = port.parse::<u16>().map_err(|_| {
            format!(
                "is not a host:port address (port {} is not a number from 0 to 65535)",
                quote(port)
            )
        })?;
        Ok(HostPort {
            host: host.to_string(),
            port,
        })
    }
    fn describe(&self) -> String {
        "host:port".to_string()
    }
}

/// Checks that `h` is a valid host name (RFC 1123 labels) or IPv4 address; the error says why.
pub(crate) fn check_host_name(h: &str) -> Result<(), String> {
    if h.is_empty() {
        return Err("the host name is empty".to_string());
    }
    if h.len() > 253 {
        return Err("the host name is longer than 253 characters".to_string());
    }
    for label in h.split('.') {
        let valid = !label.is_empty()
            && label.len() <= 63
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !valid {
            return Err(format!(
                "{} is not a valid host name (letters, digits and '-' in dot-separated labels)",
                quote(h)
            ));
        }
    }
    Ok(())
}

/// A value check in the manner of Spark's `checkValue`: a test and what it expects.
pub struct Check<V: 'static> {
    /// Returns true when the value is acceptable.
    pub test: fn(&V) -> bool,
    /// What the value must be, e.g. `must be at least 1`.
    pub expect: &'static str,
}

/// Where the value of an unset [`ConfEntry`] comes from.
pub enum DefaultValue<K: ValueKind> {
    /// A default written as a user would write it, parsed by the entry's kind.
    Text(&'static str),
    /// The value of another entry (Spark's `fallbackConf`).
    Fallback(&'static ConfEntry<K>),
}

/// A key that always has a value: the configured one, or its default.
pub struct ConfEntry<K: ValueKind> {
    key: &'static str,
    kind: K,
    default: DefaultValue<K>,
    check: Option<Check<K::Value>>,
    alternatives: &'static [&'static str],
    doc: &'static str,
}

/// A key without a default: reads return `None` when it is unset.
pub struct OptEntry<K: ValueKind> {
    key: &'static str,
    kind: K,
    unset: &'static str,
    check: Option<Check<K::Value>>,
    alternatives: &'static [&'static str],
    doc: &'static str,
}

impl<K: ValueKind> ConfEntry<K> {
    /// A key with a default written as a user would write it (e.g. `"1g"`, `"3s"`).
    pub const fn new(key: &'static str, kind: K, default: &'static str) -> Self {
        ConfEntry {
            key,
            kind,
            default: DefaultValue::Text(default),
            check: None,
            alternatives: &[],
            doc: "",
        }
    }

    /// A key whose default is the value of `other`.
    pub const fn fallback(key: &'static str, kind: K, other: &'static ConfEntry<K>) -> Self {
        ConfEntry {
            key,
            kind,
            default: DefaultValue::Fallback(other),
            check: None,
            alternatives: &[],
            doc: "",
        }
    }

    /// Adds a value check.
    pub const fn check(mut self, test: fn(&K::Value) -> bool, expect: &'static str) -> Self {
        self.check = Some(Check { test, expect });
        self
    }

    /// Adds older names read when the key itself is unset, in order.
    pub const fn alternatives(mut self, alternatives: &'static [&'static str]) -> Self {
        self.alternatives = alternatives;
        self
    }

    /// Sets the documentation text.
    pub const fn with_doc(mut self, doc: &'static str) -> Self {
        self.doc = doc;
        self
    }

    /// The key's name.
    pub const fn name(&self) -> &'static str {
        self.key
    }

    /// Older names of the key.
    pub const fn alternative_names(&self) -> &'static [&'static str] {
        self.alternatives
    }

    /// The default as text: the written default, or `value of <other key>`.
    pub fn default_text(&self) -> String {
        match &self.default {
            DefaultValue::Text(t) => (*t).to_string(),
            DefaultValue::Fallback(other) => format!("value of {}", other.key),
        }
    }

    /// The default value (parsing the written default, or reading the fallback entry).
    pub fn default_value(&self, conf: &SparkConf) -> Result<K::Value, ConfError> {
        match &self.default {
            DefaultValue::Text(t) => convert(&self.kind, &self.check, self.key, t),
            DefaultValue::Fallback(other) => other.read(conf),
        }
    }
}

impl<K: ValueKind> OptEntry<K> {
    /// A key without a default; `unset` says what happens when it is not set (for listings).
    pub const fn new(key: &'static str, kind: K, unset: &'static str) -> Self {
        OptEntry {
            key,
            kind,
            unset,
            check: None,
            alternatives: &[],
            doc: "",
        }
    }

    /// Adds a value check.
    pub const fn check(mut self, test: fn(&K::Value) -> bool, expect: &'static str) -> Self {
        self.check = Some(Check { test, expect });
        self
    }

    /// Adds older names read when the key itself is unset, in order.
    pub const fn alternatives(mut self, alternatives: &'static [&'static str]) -> Self {
        self.alternatives = alternatives;
        self
    }

    /// Sets the documentation text.
    pub const fn with_doc(mut self, doc: &'static str) -> Self {
        self.doc = doc;
        self
    }

    /// The key's name.
    pub const fn name(&self) -> &'static str {
        self.key
    }

    /// Older names of the key.
    pub const fn alternative_names(&self) -> &'static [&'static str] {
        self.alternatives
    }
}

/// Parses and checks `raw` for `key`, producing an error that names key and value.
fn convert<K: ValueKind>(
    kind: &K,
    check: &Option<Check<K::Value>>,
    key: &str,
    raw: &str,
) -> Result<K::Value, ConfError> {
    let value = kind.parse(raw).map_err(|reason| ConfError::InvalidValue {
        key: key.to_string(),
        value: raw.to_string(),
        reason,
    })?;
    if let Some(c) = check {
        if !(c.test)(&value) {
            return Err(ConfError::InvalidValue {
                key: key.to_string(),
                value: raw.to_string(),
                reason: format!("({})", c.expect),
            });
        }
    }
    Ok(value)
}

impl<K: ValueKind> Entry for ConfEntry<K> {
    type Output = K::Value;
    fn key(&self) -> &'static str {
        self.key
    }
    fn read(&self, conf: &SparkConf) -> Result<K::Value, ConfError> {
        match conf.lookup(self.key, self.alternatives) {
            Some((key, raw)) => convert(&self.kind, &self.check, key, raw),
            None => self.default_value(conf),
        }
    }
}

impl<K: ValueKind> Entry for OptEntry<K> {
    type Output = Option<K::Value>;
    fn key(&self) -> &'static str {
        self.key
    }
    fn read(&self, conf: &SparkConf) -> Result<Option<K::Value>, ConfError> {
        match conf.lookup(self.key, self.alternatives) {
            Some((key, raw)) => convert(&self.kind, &self.check, key, raw).map(Some),
            None => Ok(None),
        }
    }
}

/// The type-erased view of an entry that the key registry and `validate` use.
pub(crate) trait AnyEntry: Sync {
    /// The key, or for a pattern the pattern text (e.g. `yarn.sparkyard.nodemanager.<host>`).
    fn key(&self) -> &'static str;
    fn alternatives(&self) -> &'static [&'static str];
    fn doc(&self) -> &'static str;
    fn value_type(&self) -> String;
    fn default_text(&self) -> String;
    /// For pattern keys: the fixed prefix every matching key starts with.
    fn prefix(&self) -> Option<&'static str> {
        None
    }
    /// Parses and checks `raw` as the value of `key` (the key as set, maybe an alternative).
    fn check_raw(&self, key: &str, raw: &str) -> Result<(), ConfError>;
}

impl<K: ValueKind> AnyEntry for ConfEntry<K> {
    fn key(&self) -> &'static str {
        self.key
    }
    fn alternatives(&self) -> &'static [&'static str] {
        self.alternatives
    }
    fn doc(&self) -> &'static str {
        self.doc
    }
    fn value_type(&self) -> String {
        self.kind.describe()
    }
    fn default_text(&self) -> String {
        ConfEntry::default_text(self)
    }
    fn check_raw(&self, key: &str, raw: &str) -> Result<(), ConfError> {
        convert(&self.kind, &self.check, key, raw).map(|_| ())
    }
}

impl<K: ValueKind> AnyEntry for OptEntry<K> {
    fn key(&self) -> &'static str {
        self.key
    }
    fn alternatives(&self) -> &'static [&'static str] {
        self.alternatives
    }
    fn doc(&self) -> &'static str {
        self.doc
    }
    fn value_type(&self) -> String {
        self.kind.describe()
    }
    fn default_text(&self) -> String {
        self.unset.to_string()
    }
    fn check_raw(&self, key: &str, raw: &str) -> Result<(), ConfError> {
        convert(&self.kind, &self.check, key, raw).map(|_| ())
    }
}

/// A family of keys sharing a prefix (`spark.executorEnv.<NAME>`, node manager specs...).
pub struct PatternEntry {
    pattern: &'static str,
    prefix: &'static str,
    value_type: &'static str,
    check: fn(key: &str, raw: &str) -> Result<(), ConfError>,
    doc: &'static str,
}

impl PatternEntry {
    /// A pattern such as `spark.executorEnv.<name>`: every key starting with `prefix`.
    pub const fn new(
        pattern: &'static str,
        prefix: &'static str,
        value_type: &'static str,
        check: fn(&str, &str) -> Result<(), ConfError>,
    ) -> Self {
        PatternEntry {
            pattern,
            prefix,
            value_type,
            check,
            doc: "",
        }
    }

    /// Sets the documentation text.
    pub const fn with_doc(mut self, doc: &'static str) -> Self {
        self.doc = doc;
        self
    }

    /// The fixed prefix of every matching key.
    pub const fn prefix(&self) -> &'static str {
        self.prefix
    }
}

impl AnyEntry for PatternEntry {
    fn key(&self) -> &'static str {
        self.pattern
    }
    fn alternatives(&self) -> &'static [&'static str] {
        &[]
    }
    fn doc(&self) -> &'static str {
        self.doc
    }
    fn value_type(&self) -> String {
        self.value_type.to_string()
    }
    fn default_text(&self) -> String {
        "(none)".to_string()
    }
    fn prefix(&self) -> Option<&'static str> {
        Some(self.prefix)
    }
    fn check_raw(&self, key: &str, raw: &str) -> Result<(), ConfError> {
        (self.check)(key, raw)
    }
}

/// One known key (or key pattern) as listed by `known_keys()`.
#[derive(Clone)]
pub struct KeyInfo {
    /// The key, or a pattern such as `yarn.sparkyard.nodemanager.<host>`.
    pub key: &'static str,
    /// What values look like, e.g. `time (bare number in milliseconds)`.
    pub value_type: String,
    /// The default, as text (`(none)` or a note for keys without one).
    pub default: String,
    /// What the key does (one paragraph).
    pub doc: String,
    /// Older names still read when the key is unset.
    pub alternatives: &'static [&'static str],
    /// For a pattern, the fixed prefix every matching key starts with.
    pub prefix: Option<&'static str>,
    pub(crate) entry: &'static dyn AnyEntry,
}

impl fmt::Debug for KeyInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyInfo")
            .field("key", &self.key)
            .field("value_type", &self.value_type)
            .field("default", &self.default)
            .field("doc", &self.doc)
            .field("alternatives", &self.alternatives)
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl KeyInfo {
    pub(crate) fn from_entry(entry: &'static dyn AnyEntry) -> KeyInfo {
        KeyInfo {
            key: entry.key(),
            value_type: entry.value_type(),
            default: entry.default_text(),
            doc: entry.doc().split_whitespace().collect::<Vec<_>>().join(" "),
            alternatives: entry.alternatives(),
            prefix: entry.prefix(),
            entry,
        }
    }

    /// Whether this is a key pattern rather than a single key.
    pub fn is_pattern(&self) -> bool {
        self.prefix.is_some()
    }

    /// Whether `key` is this key, one of its alternatives, or matches this pattern.
    pub fn matches(&self, key: &str) -> bool {
        match self.prefix {
            Some(p) => key.starts_with(p),
            None => self.key == key || self.alternatives.contains(&key),
        }
    }

    /// Parses and checks `value` as the value of `key` (which this info must match).
    pub fn check_value(&self, key: &str, value: &str) -> Result<(), ConfError> {
        self.entry.check_raw(key, value)
    }
}
