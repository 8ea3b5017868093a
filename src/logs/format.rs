//! Human-readable rendering of sparkyard's structured JSON log records.
//!
//! Layer: logs, the bottom layer (under the runtime; see actors.md "Layers").
//!
//! One record becomes one line:
//!
//! ```text
//! <ts> <LEVEL> <actor>#<incarnation> <msg> key=value key=value ...
//! ```
//!
//! The same code renders records for `sparkyard logs` and for the log
//! writer's console output, so it is written to run once per record: it
//! appends into a caller-supplied buffer ([`write_human`]) and never panics,
//! whatever JSON it is handed.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// Options for [`format_human`] / [`write_human`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanFormat {
    /// Print the whole `ts` string; when false only `HH:MM:SS.mmm` (UTC).
    pub full_timestamp: bool,
    /// Color the level and dim the actor path with ANSI escape sequences.
    pub color: bool,
    /// Include the `node` field among the `key=value` pairs.
    pub show_node: bool,
}

impl Default for HumanFormat {
    fn default() -> Self {
        HumanFormat {
            full_timestamp: true,
            color: false,
            show_node: false,
        }
    }
}

/// Fields rendered in the line prefix (or, for `node`/`cluster`/`actor_type`,
/// deliberately left out); they never appear as `key=value`.
const PREFIX_KEYS: &[&str] = &super::HEADER_KEYS;

/// The writer's canonical order for the fields that follow the prefix. Printing these
/// first keeps the writer's order even for records parsed into a key-sorted map.
const ORDERED_KEYS: &[&str] = &super::ID_KEYS;

const RESET: &str = "\x1b[0m";
const DIM: &str = "\x1b[2m";

/// Renders `record` as one human-readable line (without a trailing newline).
pub fn format_human(record: &Value, opts: &HumanFormat) -> String {
    let mut line = String::with_capacity(160);
    write_human(&mut line, record, opts);
    line
}

/// Appends the rendering of `record` to `buf` (no trailing newline).
///
/// A value that is not a JSON object is rendered as its compact JSON text.
pub fn write_human(buf: &mut String, record: &Value, opts: &HumanFormat) {
    let Value::Object(map) = record else {
        push_json(buf, record);
        return;
    };

    match map.get("ts") {
        Some(Value::String(ts)) => push_timestamp(buf, ts, opts.full_timestamp),
        Some(other) => push_json(buf, other),
        None => buf.push('-'),
    }
    buf.push(' ');

    push_level(buf, map.get("level"), opts.color);
    buf.push(' ');

    if opts.color {
        buf.push_str(DIM);
    }
    match map.get("actor") {
        Some(Value::String(actor)) if !actor.is_empty() => push_plain(buf, actor),
        Some(Value::String(_)) | None | Some(Value::Null) => buf.push('-'),
        Some(other) => push_json(buf, other),
    }
    if opts.color {
        buf.push_str(RESET);
    }
    match map.get("incarnation") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            buf.push('#');
            push_plain(buf, s);
        }
        Some(other) => {
            buf.push('#');
            push_json(buf, other);
        }
    }

    match map.get("msg") {
        None | Some(Value::Null) => {}
        Some(Value::String(msg)) => {
            if !msg.is_empty() {
                buf.push(' ');
                push_plain(buf, msg);
            }
        }
        Some(other) => {
            buf.push(' ');
            push_json(buf, other);
        }
    }

    if opts.show_node {
        if let Some(node) = map.get("node") {
            push_field(buf, "node", node);
        }
    }
    for key in ORDERED_KEYS.iter().copied() {
        if let Some(value) = map.get(key) {
            push_field(buf, key, value);
        }
    }
    push_other_fields(buf, map);
}

/// Appends every field that is neither part of the prefix nor one of the
/// canonically ordered context fields, in the map's iteration order.
fn push_other_fields(buf: &mut String, map: &Map<String, Value>) {
    for (key, value) in map {
        let key = key.as_str();
        if PREFIX_KEYS.contains(&key) || ORDERED_KEYS.contains(&key) {
            continue;
        }
        push_field(buf, key, value);
    }
}

fn push_field(buf: &mut String, key: &str, value: &Value) {
    buf.push(' ');
    push_token(buf, key);
    buf.push('=');
    match value {
        Value::String(s) => push_token(buf, s),
        other => push_json(buf, other),
    }
}

fn push_level(buf: &mut String, level: Option<&Value>, color: bool) {
    let start = buf.len();
    let code = match level {
        Some(Value::String(name)) => {
            let code = if color { level_color(name) } else { None };
            if let Some(code) = code {
                buf.push_str(code);
            }
            push_plain(buf, name);
            if code.is_some() {
                buf.push_str(RESET);
            }
            code
        }
        Some(other) => {
            push_json(buf, other);
            None
        }
        None => {
            buf.push('-');
            None
        }
    };
    // Pad to five visible characters; escape sequences take no columns.
    let escapes = code.map_or(0, |c| c.len() + RESET.len());
    let visible = buf
        .get(start..)
        .map_or(0, |written| written.chars().count())
        .saturating_sub(escapes);
    for _ in visible..5 {
        buf.push(' ');
    }
}

fn level_color(level: &str) -> Option<&'static str> {
    if level.eq_ignore_ascii_case("ERROR") {
        Some("\x1b[31m")
    } else if level.eq_ignore_ascii_case("WARN") {
        Some("\x1b[33m")
    } else if level.eq_ignore_ascii_case("INFO") {
        Some("\x1b[32m")
    } else if level.eq_ignore_ascii_case("DEBUG") {
        Some("\x1b[34m")
    } else if level.eq_ignore_ascii_case("TRACE") {
        Some(DIM)
    } else {
        None
    }
}

fn push_timestamp(buf: &mut String, ts: &str, full: bool) {
    if !full {
        if let Some((hms, millis)) = clock_part(ts) {
            buf.push_str(hms);
            buf.push('.');
            buf.push_str(millis);
            for _ in millis.len()..3 {
                buf.push('0');
            }
            return;
        }
    }
    push_plain(buf, ts);
}

/// Splits an RFC 3339 timestamp into its `HH:MM:SS` part and up to three
/// digits of fraction. `None` when `ts` does not look like one.
fn clock_part(ts: &str) -> Option<(&str, &str)> {
    let sep = ts.find(['T', 't', ' '])?;
    let time = ts.get(sep + 1..)?;
    let hms = time.get(..8)?;
    let well_formed = hms.bytes().enumerate().all(|(i, b)| match i {
        2 | 5 => b == b':',
        _ => b.is_ascii_digit(),
    });
    if !well_formed {
        return None;
    }
    let fraction = time.get(8..)?.strip_prefix('.').unwrap_or("");
    let digits = fraction.bytes().take(3).take_while(u8::is_ascii_digit).count();
    Some((hms, fraction.get(..digits)?))
}

/// Appends a key or string value: raw when it is a plain token, JSON-quoted
/// when it is empty or holds whitespace, `=`, `"` or control characters.
fn push_token(buf: &mut String, s: &str) {
    let needs_quotes = s.is_empty()
        || s.chars()
            .any(|c| c.is_whitespace() || c == '=' || c == '"' || c.is_control());
    if needs_quotes {
        push_quoted(buf, s);
    } else {
        buf.push_str(s);
    }
}

/// Appends free text (message, actor path, timestamp) unquoted, escaping
/// control characters so a record always stays on one line and cannot smuggle
/// terminal escape sequences.
fn push_plain(buf: &mut String, s: &str) {
    if !s.chars().any(char::is_control) {
        buf.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '\n' => buf.push_str("\\n"),
            '\r' => buf.push_str("\\r"),
            '\t' => buf.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(buf, "\\u{{{:04x}}}", u32::from(c));
            }
            c => buf.push(c),
        }
    }
}

/// Appends `s` as a JSON string literal.
fn push_quoted(buf: &mut String, s: &str) {
    buf.push('"');
    for c in s.chars() {
        match c {
            '"' => buf.push_str("\\\""),
            '\\' => buf.push_str("\\\\"),
            '\n' => buf.push_str("\\n"),
            '\r' => buf.push_str("\\r"),
            '\t' => buf.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(buf, "\\u{:04x}", u32::from(c));
            }
            c => buf.push(c),
        }
    }
    buf.push('"');
}

/// Appends the compact JSON text of `value` (strings come out quoted).
fn push_json(buf: &mut String, value: &Value) {
    match value {
        Value::String(s) => push_quoted(buf, s),
        other => {
            let _ = write!(buf, "{other}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Value {
        json!({
            "ts": "2026-11-22T12:00:00.123456Z",
            "level": "INFO",
            "msg": "container allocated",
            "cluster": "c-1",
            "node": "host1",
            "actor": "/node/nm-host1/container_1700000000000_0001_01_000001/am/allocator",
            "actor_type": "YarnAllocator",
            "incarnation": 2,
            "app_id": "application_1700000000000_0001",
            "attempt": 1,
            "container_id": "container_1700000000000_0001_01_000002",
            "event": "actor_started",
            "reason": "lost heartbeat",
            "zeta": true,
            "extra": "a=b",
        })
    }

    #[test]
    fn default_layout() {
        let line = format_human(&sample(), &HumanFormat::default());
        assert_eq!(
            line,
            "2026-11-22T12:00:00.123456Z INFO  \
             /node/nm-host1/container_1700000000000_0001_01_000001/am/allocator#2 \
             container allocated app_id=application_1700000000000_0001 attempt=1 \
             container_id=container_1700000000000_0001_01_000002 event=actor_started \
             reason=\"lost heartbeat\" zeta=true extra=\"a=b\""
        );
    }

    #[test]
    fn short_timestamp_and_node() {
        let opts = HumanFormat {
            full_timestamp: false,
            color: false,
            show_node: true,
        };
        let line = format_human(&sample(), &opts);
        assert!(line.starts_with("12:00:00.123 INFO  /node/"), "{line}");
        assert!(line.contains(" container allocated node=host1 app_id="), "{line}");

        let rec = json!({"ts": "2026-11-22T01:02:03Z", "level": "WARN", "msg": "m"});
        assert_eq!(format_human(&rec, &opts), "01:02:03.000 WARN  - m");
        let rec = json!({"ts": "2026-11-22T01:02:03.5Z", "level": "ERROR"});
        assert_eq!(format_human(&rec, &opts), "01:02:03.500 ERROR -");
        // Not a timestamp: printed as is.
        let rec = json!({"ts": "yesterday", "level": "DEBUG", "msg": "x"});
        assert_eq!(format_human(&rec, &opts), "yesterday DEBUG - x");
        let rec = json!({"ts": "2026-11-22Tß:00:00", "msg": "x"});
        assert_eq!(format_human(&rec, &opts), "2026-11-22Tß:00:00 -     - x");
    }

    #[test]
    fn color_codes() {
        let opts = HumanFormat {
            color: true,
            ..HumanFormat::default()
        };
        let rec = json!({"ts": "t", "level": "ERROR", "actor": "/a", "incarnation": 0, "msg": "boom"});
        assert_eq!(
            format_human(&rec, &opts),
            "t \x1b[31mERROR\x1b[0m \x1b[2m/a\x1b[0m#0 boom"
        );
        let rec = json!({"ts": "t", "level": "info", "actor": "/a", "msg": "ok"});
        assert_eq!(
            format_human(&rec, &opts),
            "t \x1b[32minfo\x1b[0m  \x1b[2m/a\x1b[0m ok"
        );
        let rec = json!({"ts": "t", "level": "TRACE"});
        assert!(format_human(&rec, &opts).starts_with("t \x1b[2mTRACE\x1b[0m "));
    }

    #[test]
    fn quoting_rules() {
        let rec = json!({
            "ts": "t", "level": "INFO", "actor": "/a", "msg": "m",
            "plain": "abc/def:1", "space": "a b", "tab": "a\tb", "eq": "k=v",
            "quote": "say \"hi\"", "empty": "", "null": null, "num": 1.5,
            "list": [1, "x"], "obj": {"k": 1},
        });
        let line = format_human(&rec, &HumanFormat::default());
        assert_eq!(
            line,
            "t INFO  /a m plain=abc/def:1 space=\"a b\" tab=\"a\\tb\" eq=\"k=v\" \
             quote=\"say \\\"hi\\\"\" empty=\"\" null=null num=1.5 list=[1,\"x\"] obj={\"k\":1}"
        );
    }

    #[test]
    fn control_characters_never_break_the_line() {
        let rec = json!({"ts": "t\n", "level": "IN\u{1b}FO", "actor": "/a\r", "msg": "two\nlines\u{7}", "k": "\u{1b}[31m"});
        let line = format_human(&rec, &HumanFormat::default());
        assert!(!line.contains('\n') && !line.contains('\r') && !line.contains('\u{1b}'));
        assert_eq!(
            line,
            "t\\n IN\\u{001b}FO /a\\r two\\nlines\\u{0007} k=\"\\u001b[31m\""
        );
    }

    #[test]
    fn missing_fields_and_odd_types() {
        let opts = HumanFormat::default();
        assert_eq!(format_human(&json!({}), &opts), "- -     -");
        assert_eq!(
            format_human(
                &json!({"ts": 5, "level": 3, "actor": 7, "incarnation": "x", "msg": {"a": 1}}),
                &opts
            ),
            "5 3     7#x {\"a\":1}"
        );
        assert_eq!(format_human(&json!([1, 2]), &opts), "[1,2]");
        assert_eq!(format_human(&json!("str"), &opts), "\"str\"");
        assert_eq!(format_human(&json!(null), &opts), "null");
        assert_eq!(format_human(&json!(12), &opts), "12");
    }

    #[test]
    fn hidden_fields_stay_hidden() {
        let line = format_human(&sample(), &HumanFormat::default());
        for hidden in ["cluster=", "node=", "actor_type=", "incarnation=", "ts=", "msg="] {
            assert!(!line.contains(hidden), "{hidden} in {line}");
        }
    }

    #[test]
    fn write_human_appends() {
        let mut buf = String::from(">> ");
        write_human(
            &mut buf,
            &json!({"ts": "t", "level": "WARN", "msg": "x"}),
            &HumanFormat::default(),
        );
        assert_eq!(buf, ">> t WARN  - x");
    }
}
