//! The tracing layer that writes sparkyard's structured records.
//!
//! One JSON object per line, keys in a fixed order: `ts` (RFC 3339 UTC), `level`, `msg`,
//! `cluster`, `node`, `actor`, `actor_type`, `incarnation`, then where they apply `app_id`,
//! `attempt`, `container_id`, `executor_id`, `job_id`, `stage_id`, `task_id`, `msg_type`,
//! `event`, `reason`, `mode`, `target`, `by`, then any other field of the record. The
//! location fields come from the thread's [`LogCtx`](super::ctx::LogCtx); a field of the
//! same name in the record overrides them. tracing-subscriber's stock JSON layout nests
//! fields and names them differently, hence this layer.
//!
//! Records of a cluster go to its [`LogSink`](super::sink::LogSink) (files and capture);
//! every record also goes to the console on stderr when the process asked for it (the
//! command line does, tests do not). The level filter (`RUST_LOG` or `--log-level`) applies
//! to files and console alike.

use std::cell::Cell;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::sync::{Arc, Once};
use std::time::SystemTime;

use serde_json::{Map, Number, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;
use tracing_subscriber::EnvFilter;

use super::ctx::{self, LogCtx};
use super::format::{format_human, HumanFormat};
use super::sink;
use super::{HEADER_KEYS, ID_KEYS};

/// What the console (stderr) shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Console {
    /// Nothing (tests).
    Off,
    /// Readable lines for people.
    Human,
    /// The JSON records themselves.
    Json,
}

/// The process-wide logging set-up.
#[derive(Clone, Debug)]
pub struct LogInit {
    /// A filter directive (`info`, `debug`, `sparkyard=debug,actix=warn`); overrides `RUST_LOG`.
    pub level: Option<String>,
    pub console: Console,
    /// When no level was asked for (neither `level` nor `RUST_LOG`), show on the console only
    /// warnings and errors, and the INFO records of actors under these path prefixes (the
    /// submit side's progress); the files still get every INFO record.
    pub console_quiet_except: Option<Vec<String>>,
}

/// Collects a record's fields in the order they were given.
#[derive(Default)]
struct Fields {
    msg: String,
    fields: Vec<(&'static str, Value)>,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.msg, "{value:?}");
        } else {
            self.fields
                .push((field.name(), Value::String(format!("{value:?}"))));
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.msg.push_str(value);
        } else {
            self.fields.push((field.name(), Value::String(value.to_string())));
        }
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.fields.push((field.name(), Value::Number(value.into())));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.fields.push((field.name(), Value::Number(value.into())));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.fields.push((field.name(), Value::Bool(value)));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        let v = Number::from_f64(value).map(Value::Number).unwrap_or(Value::Null);
        self.fields.push((field.name(), v));
    }
}

fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "ERROR",
        Level::WARN => "WARN",
        Level::INFO => "INFO",
        Level::DEBUG => "DEBUG",
        Level::TRACE => "TRACE",
    }
}

fn ctx_value(ctx: &LogCtx, key: &str) -> Option<Value> {
    let s = |v: &Option<Arc<str>>| v.as_deref().map(|s| Value::String(s.to_string()));
    match key {
        "cluster" => s(&ctx.cluster),
        "node" => s(&ctx.node),
        "actor" => s(&ctx.actor),
        "actor_type" => ctx.actor_type.map(|t| Value::String(t.to_string())),
        "incarnation" => ctx.incarnation.map(|i| Value::Number(i.into())),
        "app_id" => s(&ctx.app_id),
        "attempt" => ctx.attempt.map(|a| Value::Number(a.into())),
        "container_id" => s(&ctx.container_id),
        "executor_id" => s(&ctx.executor_id),
        _ => None,
    }
}

/// Builds the ordered record of one event.
fn build_record(ts: SystemTime, level: &Level, fields: Fields, ctx: Option<&LogCtx>) -> Map<String, Value> {
    let Fields { msg, mut fields } = fields;
    let mut msg = Some(msg);
    let mut record = Map::with_capacity(HEADER_KEYS.len() + ID_KEYS.len() + fields.len());
    for key in HEADER_KEYS.iter().chain(ID_KEYS.iter()).copied() {
        let value = match key {
            "ts" => Some(Value::String(humantime::format_rfc3339_micros(ts).to_string())),
            "level" => Some(Value::String(level_name(level).to_string())),
            "msg" => msg.take().map(Value::String),
            _ => match fields.iter().position(|(k, _)| *k == key) {
                Some(i) => Some(fields.remove(i).1),
                None => ctx.and_then(|c| ctx_value(c, key)),
            },
        };
        if let Some(v) = value {
            record.insert(key.to_string(), v);
        }
    }
    for (k, v) in fields {
        record.insert(k.to_string(), v);
    }
    record
}

/// The layer; install with [`init`].
pub struct JsonLayer {
    console: Console,
    color: bool,
    quiet_except: Option<Vec<String>>,
    echoes: std::sync::Mutex<Echoes>,
}

/// How many warnings and errors the console remembers to recognise their echoes.
const ECHO_MEMORY: usize = 64;

/// The warnings and errors the console said lately, by actor: a failure climbs the
/// supervision tree (an actor fails with the error it logged, its supervisor fails with the
/// same reason, and so on up), and the console says it once, where it happened. The files
/// keep every record.
#[derive(Default)]
struct Echoes {
    /// Actor, message (or failure reason), and whether it was the actor's failure record.
    said: std::collections::VecDeque<(String, String, bool)>,
}

impl Echoes {
    /// Whether an `actor_failed` record of `actor` with `reason` repeats, word for word (but
    /// for an `exit code N: ` before it), what the console said: the error the actor logged
    /// itself, or the failure of an actor under it. What it repeats is forgotten (a later failure is news); the reason is remembered
    /// for the supervisor's echo.
    fn repeats(&mut self, actor: &str, reason: &str) -> bool {
        let below = |a: &str| a.strip_prefix(actor).is_some_and(|rest| rest.starts_with('/'));
        let cause = without_exit_code(reason);
        let before = self.said.len();
        self.said.retain(|(a, said, failure)| {
            let echoed = !said.is_empty()
                && without_exit_code(said) == cause
                && (below(a) || (a == actor && !failure));
            !echoed
        });
        let repeated = self.said.len() < before;
        self.remember(actor, reason, true);
        repeated
    }

    fn remember(&mut self, actor: &str, message: &str, failure: bool) {
        if self.said.len() == ECHO_MEMORY {
            self.said.pop_front();
        }
        self.said
            .push_back((actor.to_string(), message.to_string(), failure));
    }
}

/// A failure's reason without the `exit code N: ` a process-ending failure puts before it.
fn without_exit_code(reason: &str) -> &str {
    reason
        .strip_prefix("exit code ")
        .and_then(|rest| rest.split_once(": "))
        .filter(|(code, _)| !code.is_empty() && code.bytes().all(|b| b.is_ascii_digit()))
        .map_or(reason, |(_, cause)| cause)
}

impl JsonLayer {
    fn console_shows(&self, level: &Level, actor: Option<&str>) -> bool {
        let Some(prefixes) = &self.quiet_except else {
            return true;
        };
        if *level <= Level::WARN {
            return true;
        }
        match actor {
            Some(actor) => prefixes.iter().any(|p| actor.starts_with(p.as_str())),
            None => *level <= Level::INFO,
        }
    }
}

/// Whether `bytes` hold a byte JSON escapes (a control character, `"` or `\\`). Checked 16
/// bytes a step without an early exit, which the compiler turns into vector compares: a
/// record's message is scanned once per record.
fn needs_escape(bytes: &[u8]) -> bool {
    let special = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
    let mut chunks = bytes.chunks_exact(16);
    for chunk in &mut chunks {
        if chunk.iter().fold(false, |acc, &b| acc | special(b)) {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| special(b))
}

/// JSON-escapes `s` into `out` (quotes included).
fn write_json_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    if !needs_escape(bytes) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0..=0x1f => None,
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        match esc {
            Some(e) => out.extend_from_slice(e),
            None => {
                let _ = std::io::Write::write_fmt(out, format_args!("\\u{:04x}", b));
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// The keys of the header a log context gives (after `ts`, `level` and `msg`), in order.
const CTX_HEAD_KEYS: [&str; 5] = ["cluster", "node", "actor", "actor_type", "incarnation"];

/// The ids a log context gives, in order (the first of [`ID_KEYS`]).
const CTX_ID_KEYS: [&str; 4] = ["app_id", "attempt", "container_id", "executor_id"];

/// A log context's keys rendered once (`,"cluster":"c1","node":...`): every record of an
/// actor repeats them, so its records copy these bytes instead of formatting them again.
struct Rendered {
    head: RenderedKeys,
    ids: RenderedKeys,
}

/// Some keys of a log context rendered in order, and where each one's part lies, so that a
/// record naming one of them itself (a driver's task record names its `executor_id`) copies
/// the others' parts still.
struct RenderedKeys {
    bytes: Vec<u8>,
    /// The end of each key's part in `bytes` (a key the context lacks has an empty part).
    ends: Vec<usize>,
}

impl RenderedKeys {
    fn of(ctx: &LogCtx, keys: &[&str]) -> RenderedKeys {
        let mut bytes = Vec::with_capacity(160);
        let mut ends = Vec::with_capacity(keys.len());
        for k in keys {
            write_ctx_key(&mut bytes, ctx, k);
            ends.push(bytes.len());
        }
        RenderedKeys { bytes, ends }
    }

    /// The part of the `i`th key.
    fn part(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

impl Rendered {
    fn of(ctx: &LogCtx) -> Rendered {
        Rendered {
            head: RenderedKeys::of(ctx, &CTX_HEAD_KEYS),
            ids: RenderedKeys::of(ctx, &CTX_ID_KEYS),
        }
    }
}

/// Writes `,"key":` into `out`.
fn write_key(out: &mut Vec<u8>, k: &str) {
    out.push(b',');
    write_json_str(out, k);
    out.push(b':');
}

/// Writes `,"key":value` of the log context's `k` into `out`, if the context has it.
fn write_ctx_key(out: &mut Vec<u8>, c: &LogCtx, k: &str) {
    match k {
        "incarnation" | "attempt" => {
            let n = if k == "attempt" {
                c.attempt.map(u64::from)
            } else {
                c.incarnation
            };
            if let Some(n) = n {
                write_key(out, k);
                let _ = std::io::Write::write_fmt(out, format_args!("{n}"));
            }
        }
        "actor_type" => {
            if let Some(t) = c.actor_type {
                write_key(out, k);
                write_json_str(out, t);
            }
        }
        _ => {
            if let Some(v) = ctx_str(c, k) {
                write_key(out, k);
                write_json_str(out, v);
            }
        }
    }
}

/// Where a key stands in the record's schema: its index in [`HEADER_KEYS`] followed by
/// [`ID_KEYS`], or `None` for any other field (one match per field, not a search per key).
fn schema_slot(name: &str) -> Option<usize> {
    Some(match name {
        "ts" => 0,
        "level" => 1,
        "msg" => 2,
        "cluster" => 3,
        "node" => 4,
        "actor" => 5,
        "actor_type" => 6,
        "incarnation" => 7,
        "app_id" => 8,
        "attempt" => 9,
        "container_id" => 10,
        "executor_id" => 11,
        "job_id" => 12,
        "stage_id" => 13,
        "task_id" => 14,
        "msg_type" => 15,
        "event" => 16,
        "reason" => 17,
        "mode" => 18,
        "target" => 19,
        "by" => 20,
        _ => return None,
    })
}

/// The schema's keys, in order.
const SCHEMA_LEN: usize = HEADER_KEYS.len() + ID_KEYS.len();

/// A record's fields by schema slot: the first field of each schema key (as a search in
/// order would find), and which fields are no schema key.
struct Slots {
    at: [Option<u8>; SCHEMA_LEN],
    other: u64,
}

impl Slots {
    fn of(fields: &Fields) -> Slots {
        let mut slots = Slots {
            at: [None; SCHEMA_LEN],
            other: 0,
        };
        for (i, (k, _)) in fields.fields.iter().enumerate() {
            match schema_slot(k) {
                Some(s) if slots.at[s].is_none() => slots.at[s] = u8::try_from(i).ok(),
                Some(_) => {}
                None if i < 64 => slots.other |= 1 << i,
                None => {}
            }
        }
        slots
    }
}

/// Writes the schema keys of slots `range` in order: a field of that name, else the log
/// context's value. `pre` is the context's part for these keys, rendered once: copied whole
/// when no field names any of them, key by key otherwise.
fn write_keys(
    out: &mut Vec<u8>,
    range: std::ops::Range<usize>,
    fields: &Fields,
    slots: &Slots,
    ctx: Option<&LogCtx>,
    pre: Option<&RenderedKeys>,
) {
    if let Some(pre) = pre.filter(|pre| pre.ends.len() == range.len()) {
        if slots.at[range.clone()].iter().all(Option::is_none) {
            out.extend_from_slice(&pre.bytes);
            return;
        }
        for (i, slot) in range.enumerate() {
            match slots.at[slot].and_then(|f| fields.fields.get(f as usize)) {
                Some((k, v)) => {
                    write_key(out, k);
                    let _ = serde_json::to_writer(&mut *out, v);
                }
                None => out.extend_from_slice(pre.part(i)),
            }
        }
        return;
    }
    for slot in range {
        let k = if slot < HEADER_KEYS.len() {
            HEADER_KEYS[slot]
        } else {
            ID_KEYS[slot - HEADER_KEYS.len()]
        };
        if let Some((_, v)) = slots.at[slot].and_then(|i| fields.fields.get(i as usize)) {
            write_key(out, k);
            let _ = serde_json::to_writer(&mut *out, v);
        } else if let Some(c) = ctx {
            write_ctx_key(out, c, k);
        }
    }
}

thread_local! {
    /// The second this thread last wrote a record in, and its `YYYY-MM-DDTHH:MM:SS.` text.
    static TS_PREFIX: std::cell::Cell<(u64, [u8; 20])> = const { std::cell::Cell::new((u64::MAX, [0; 20])) };
}

/// Writes `ts` as RFC 3339 UTC with microseconds (`"2026-11-26T18:30:02.123456Z"`, as
/// humantime's `format_rfc3339_micros`), the date and time of day formatted once a second.
fn write_ts(out: &mut Vec<u8>, ts: SystemTime) {
    let Ok(since) = ts.duration_since(SystemTime::UNIX_EPOCH) else {
        let _ = std::io::Write::write_fmt(out, format_args!("\"{}\"", humantime::format_rfc3339_micros(ts)));
        return;
    };
    let secs = since.as_secs();
    let prefix = match TS_PREFIX.try_with(|c| c.get()) {
        Ok((s, prefix)) if s == secs => prefix,
        _ => {
            let mut prefix = [0u8; 20];
            let whole = humantime::format_rfc3339_seconds(ts).to_string();
            match whole.as_bytes().get(..19) {
                Some(date) if whole.len() == 20 => prefix[..19].copy_from_slice(date),
                _ => {
                    let _ = std::io::Write::write_fmt(
                        out,
                        format_args!("\"{}\"", humantime::format_rfc3339_micros(ts)),
                    );
                    return;
                }
            }
            prefix[19] = b'.';
            let _ = TS_PREFIX.try_with(|c| c.set((secs, prefix)));
            prefix
        }
    };
    out.push(b'"');
    out.extend_from_slice(&prefix);
    let micros = since.subsec_micros();
    let mut digits = [b'0'; 6];
    let mut m = micros;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (m % 10) as u8;
        m /= 10;
    }
    out.extend_from_slice(&digits);
    out.extend_from_slice(b"Z\"");
}

/// Writes the record of one event as a JSON line into `out`, with the keys in the order
/// [`build_record`] gives them, without building a JSON value first (the hot path: files).
/// `pre` is the log context's keys rendered once, if the caller has them.
fn write_record(
    out: &mut Vec<u8>,
    ts: SystemTime,
    level: &Level,
    fields: &Fields,
    ctx: Option<&LogCtx>,
    pre: Option<&Rendered>,
) {
    out.extend_from_slice(b"{\"ts\":");
    write_ts(out, ts);
    out.extend_from_slice(b",\"level\":");
    write_json_str(out, level_name(level));
    out.extend_from_slice(b",\"msg\":");
    write_json_str(out, &fields.msg);
    let slots = Slots::of(fields);
    let head = HEADER_KEYS.len() - CTX_HEAD_KEYS.len()..HEADER_KEYS.len();
    let ids = HEADER_KEYS.len()..HEADER_KEYS.len() + CTX_ID_KEYS.len();
    write_keys(out, head, fields, &slots, ctx, pre.map(|p| &p.head));
    write_keys(out, ids.clone(), fields, &slots, ctx, pre.map(|p| &p.ids));
    // The other ids and the supervision fields come from the record only.
    write_keys(out, ids.end..SCHEMA_LEN, fields, &slots, None, None);
    for (i, (k, v)) in fields.fields.iter().enumerate() {
        let other = if i < 64 {
            slots.other & (1 << i) != 0
        } else {
            schema_slot(k).is_none()
        };
        if other {
            write_key(out, k);
            let _ = serde_json::to_writer(&mut *out, v);
        }
    }
    out.push(b'}');
}

/// A string field of the log context.
fn ctx_str<'a>(ctx: &'a LogCtx, key: &str) -> Option<&'a str> {
    match key {
        "cluster" => ctx.cluster.as_deref(),
        "node" => ctx.node.as_deref(),
        "actor" => ctx.actor.as_deref(),
        "app_id" => ctx.app_id.as_deref(),
        "container_id" => ctx.container_id.as_deref(),
        "executor_id" => ctx.executor_id.as_deref(),
        _ => None,
    }
}

/// The record's value of a routing id: a field of that name, else the log context's.
fn routing_id<'a>(fields: &'a Fields, ctx: Option<&'a LogCtx>, key: &str) -> Option<&'a str> {
    match fields.fields.iter().find(|(k, _)| *k == key) {
        Some((_, v)) => v.as_str(),
        None => ctx.and_then(|c| ctx_str(c, key)),
    }
}

/// What a log context's records share, made at its first record (see [`LogCtx::memo`]):
/// the context's keys rendered, and its cluster's sink and file. An executor's context is
/// written in by the runtime's thread and by a task thread, which move between a thousand
/// executors' contexts: kept with the context, none of it is made again when a thread comes
/// back to one.
#[derive(Default)]
pub(crate) struct CtxMemo {
    rendered: std::sync::OnceLock<Rendered>,
    link: std::sync::Mutex<Option<Link>>,
}

/// A context's cluster sink and file, as of a generation of the routes.
#[derive(Clone)]
struct Link {
    /// The routes' generation when `sink` was looked up ([`sink::generation`]).
    generation: u64,
    /// Weak: a context must not keep a cluster's sink alive (dropping it flushes).
    sink: Option<std::sync::Weak<sink::LogSink>>,
    /// The file of the context's node, app and container in `sink` (checked at each write:
    /// the sink may have closed it since).
    route: Option<sink::FileRoute>,
}

/// A clone is a new context (its fields may be changed before its first record): it makes
/// its own.
impl Clone for CtxMemo {
    fn clone(&self) -> CtxMemo {
        CtxMemo::default()
    }
}

/// Derived from the fields: contexts are equal when their fields are.
impl PartialEq for CtxMemo {
    fn eq(&self, _: &CtxMemo) -> bool {
        true
    }
}

impl std::fmt::Debug for CtxMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CtxMemo")
    }
}

impl CtxMemo {
    /// `ctx`'s keys rendered (`ctx` is the context this memo is part of).
    fn rendered(&self, ctx: &LogCtx) -> &Rendered {
        self.rendered.get_or_init(|| Rendered::of(ctx))
    }

    /// `ctx`'s sink and file, looked up again if the routes changed since.
    fn link(&self, ctx: &LogCtx) -> Link {
        let generation = sink::generation();
        let mut link = self.link.lock().unwrap_or_else(|p| p.into_inner());
        match &*link {
            Some(l) if l.generation == generation => l.clone(),
            _ => {
                let fresh = Link {
                    generation,
                    sink: ctx
                        .cluster
                        .as_deref()
                        .and_then(sink::sink_for)
                        .map(|s| Arc::downgrade(&s)),
                    route: None,
                };
                *link = Some(fresh.clone());
                fresh
            }
        }
    }

    /// Remembers the file a record of the context went to, if the routes did not change.
    fn set_route(&self, generation: u64, route: &Option<sink::FileRoute>) {
        let mut link = self.link.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = link.as_mut().filter(|l| l.generation == generation) {
            l.route = route.clone();
        }
    }
}

/// What a thread remembers of the log context it wrote its last record in: the context and
/// its sink and file, so a thread's records in one context touch nothing shared but their
/// file. Coming back to a context it left, a thread takes them from the context's memo.
struct CtxCache {
    /// The context (its pointer is the key; holding it keeps the pointer from being reused).
    ctx: Arc<LogCtx>,
    link: Link,
}

thread_local! {
    /// The thread's line buffer: a record is formatted into it, written, and it is kept.
    static LINE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    static CTX_CACHE: std::cell::RefCell<Option<CtxCache>> = const { std::cell::RefCell::new(None) };
    /// The thread's record fields, kept between its records (see `on_event`).
    static FIELDS: Cell<Option<Fields>> = const { Cell::new(None) };
}

impl CtxCache {
    fn new(ctx: &Arc<LogCtx>) -> CtxCache {
        CtxCache {
            ctx: ctx.clone(),
            link: ctx.memo.link(ctx),
        }
    }

    fn fits(&self, ctx: &Arc<LogCtx>) -> bool {
        Arc::ptr_eq(&self.ctx, ctx) && self.link.generation == sink::generation()
    }
}

/// Whether a record's own fields route it (name its node, app or container).
fn routes_itself(fields: &Fields) -> bool {
    fields
        .fields
        .iter()
        .any(|(k, _)| matches!(*k, "node" | "app_id" | "container_id"))
}

impl<S: Subscriber> Layer<S> for JsonLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        // The thread's buffers of its last record (none inside a record being written, or
        // on a thread ending): sized for a task's record at first (a message of about a
        // hundred bytes, up to eight fields), so recording one rarely allocates but for its
        // string fields.
        let mut fields = FIELDS
            .try_with(Cell::take)
            .ok()
            .flatten()
            .unwrap_or_else(|| Fields {
                msg: String::with_capacity(160),
                fields: Vec::with_capacity(8),
            });
        event.record(&mut fields);
        self.write_event(event, &fields);
        // Kept for the thread's next record, unless a rare long one grew them.
        if fields.msg.capacity() <= 4096 && fields.fields.capacity() <= 64 {
            fields.msg.clear();
            fields.fields.clear();
            let _ = FIELDS.try_with(|f| f.set(Some(fields)));
        }
    }
}

impl JsonLayer {
    /// Writes the record of `event`, whose fields are `fields`, in the current log context.
    fn write_event(&self, event: &Event<'_>, fields: &Fields) {
        let log_ctx = ctx::current();
        match &log_ctx {
            Some(c) => {
                let written = CTX_CACHE.try_with(|cache| {
                    let Ok(mut cache) = cache.try_borrow_mut() else {
                        return false;
                    };
                    if !cache.as_ref().is_some_and(|k| k.fits(c)) {
                        *cache = Some(CtxCache::new(c));
                    }
                    let Some(cache) = cache.as_mut() else {
                        return false;
                    };
                    let sink = cache.link.sink.as_ref().and_then(std::sync::Weak::upgrade);
                    let before = sink::FileRoute::addr(&cache.link.route);
                    self.emit(event, fields, Some(c), sink, Some(cache));
                    if before != sink::FileRoute::addr(&cache.link.route) {
                        // Found (or found again): the context's other writers take it too.
                        c.memo.set_route(cache.link.generation, &cache.link.route);
                    }
                    true
                });
                if written != Ok(true) {
                    let sink = c.cluster.as_deref().and_then(sink::sink_for);
                    self.emit(event, fields, Some(c), sink, None);
                }
            }
            None => self.emit(event, fields, None, None, None),
        }
    }

    /// Formats and writes one record: to its cluster's `sink` (through `cache`'s remembered
    /// file when the record's ids are its context's) and to the console.
    fn emit(
        &self,
        event: &Event<'_>,
        fields: &Fields,
        ctx_ref: Option<&Arc<LogCtx>>,
        cluster_sink: Option<Arc<sink::LogSink>>,
        cache: Option<&mut CtxCache>,
    ) {
        let level = event.metadata().level();
        let ctx_ref = ctx_ref.map(|c| &**c);
        let ts = cluster_sink
            .as_ref()
            .map(|s| s.wall())
            .unwrap_or_else(SystemTime::now);
        let actor = routing_id(fields, ctx_ref, "actor");
        // A record whose line the process also prints on stderr itself (`printed = true`: the
        // spark-submit's "Exception in thread ..." line) goes to the files only, so the console
        // says it once.
        let printed = fields
            .fields
            .iter()
            .any(|(k, v)| *k == "printed" && *v == Value::Bool(true));
        let mut console = !printed && self.console != Console::Off && self.console_shows(level, actor);
        if console && *level <= Level::WARN {
            if let Some(actor) = actor {
                let field = |key: &str| {
                    fields
                        .fields
                        .iter()
                        .find(|(k, _)| *k == key)
                        .and_then(|(_, v)| v.as_str())
                };
                let mut echoes = self.echoes.lock().unwrap_or_else(|p| p.into_inner());
                match (field("event"), field("reason")) {
                    (Some("actor_failed"), Some(reason)) => console = !echoes.repeats(actor, reason),
                    _ => echoes.remember(actor, &fields.msg, false),
                }
            }
        }
        let captures = cluster_sink.as_ref().is_some_and(|s| s.captures());
        let mut line = LINE.try_with(|l| l.take()).unwrap_or_default();
        line.clear();
        line.reserve(512 + fields.msg.len());
        write_record(
            &mut line,
            ts,
            level,
            fields,
            ctx_ref,
            cache.as_ref().map(|c| c.ctx.memo.rendered(&c.ctx)),
        );
        // The JSON value is built only where it is needed: captured for tests, or shown as
        // a readable line on the console.
        let record = (captures || (console && self.console == Console::Human))
            .then(|| Value::Object(build_record(ts, level, fields_clone(fields), ctx_ref)));
        if let Some(s) = &cluster_sink {
            let (node, app, container) = (
                routing_id(fields, ctx_ref, "node"),
                routing_id(fields, ctx_ref, "app_id"),
                routing_id(fields, ctx_ref, "container_id"),
            );
            match cache {
                Some(cache) if !routes_itself(fields) => s.write_line_routed(
                    &mut cache.link.route,
                    node,
                    app,
                    container,
                    &line,
                    record.as_ref(),
                ),
                _ => s.write_line(node, app, container, &line, record.as_ref()),
            }
        }
        if console {
            self.to_console(&line, record.as_ref());
        }
        // The buffer serves the thread's next record, unless a rare long one grew it.
        if line.capacity() <= 64 * 1024 {
            let _ = LINE.try_with(|l| l.set(line));
        }
    }

    /// Shows a record on stderr: its JSON `line`, or its readable form from `record`.
    fn to_console(&self, line: &[u8], record: Option<&Value>) {
        match self.console {
            Console::Off => {}
            Console::Json => {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(line);
                let _ = err.write_all(b"\n");
            }
            Console::Human => {
                if let Some(record) = record {
                    let opts = HumanFormat {
                        full_timestamp: false,
                        color: self.color,
                        show_node: true,
                    };
                    let _ = writeln!(std::io::stderr().lock(), "{}", format_human(record, &opts));
                }
            }
        }
    }
}

fn fields_clone(f: &Fields) -> Fields {
    Fields {
        msg: f.msg.clone(),
        fields: f.fields.clone(),
    }
}

/// The levels a log-level setting names alone.
const LEVEL_NAMES: &[&str] = &["error", "warn", "info", "debug", "trace", "off"];

/// A `--log-level` part that is neither a level nor a directive with `=` (`loud`, `infp`):
/// `RUST_LOG` reads such a word as a target's name, which the flag's user never means.
fn unknown_level_word(directive: &str) -> Option<&str> {
    directive.split(',').map(str::trim).find(|part| {
        !part.is_empty()
            && !part.contains(['=', '['])
            && !LEVEL_NAMES.iter().any(|l| part.eq_ignore_ascii_case(l))
    })
}

fn filter_from(level: Option<&str>) -> Result<EnvFilter, String> {
    if let Some(word) = level.and_then(unknown_level_word) {
        return Err(format!(
            "invalid log level '{word}' (expected error, warn, info, debug, trace, off or a RUST_LOG directive such as sparkyard=debug)"
        ));
    }
    match level {
        Some(directive) => EnvFilter::try_new(quiet_http_server(directive))
            .map_err(|e| format!("invalid log level '{directive}': {e} (expected error, warn, info, debug, trace or a RUST_LOG directive)")),
        None => match std::env::var("RUST_LOG") {
            Ok(v) if !v.trim().is_empty() => {
                EnvFilter::try_new(quiet_http_server(&v)).map_err(|e| format!("invalid RUST_LOG '{v}': {e}"))
            }
            _ => Ok(EnvFilter::new(quiet_http_server("info"))),
        },
    }
}

/// `directive` with the web app's HTTP server (actix-server, which says at INFO each time it
/// starts a worker or stops accepting) at WARN, unless the directive names it.
fn quiet_http_server(directive: &str) -> String {
    if directive.contains("actix_server") {
        directive.to_string()
    } else {
        format!("{directive},actix_server=warn")
    }
}

/// Installs the process-wide subscriber. Fails with a one-line message when the level
/// directive is invalid or a subscriber is already installed.
pub fn init(opts: &LogInit) -> Result<(), String> {
    let filter = filter_from(opts.level.as_deref())?;
    let explicit = opts.level.is_some() || std::env::var("RUST_LOG").is_ok_and(|v| !v.trim().is_empty());
    let layer = JsonLayer {
        console: opts.console,
        color: std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        quiet_except: if explicit {
            None
        } else {
            opts.console_quiet_except.clone()
        },
        echoes: Default::default(),
    };
    tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .try_init()
        .map_err(|e| format!("cannot install the log subscriber: {e}"))
}

/// For tests: installs a subscriber once per process (level from `RUST_LOG`, default info;
/// no console output). Records reach each cluster's sink.
pub fn init_for_tests() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = init(&LogInit {
            level: None,
            console: Console::Off,
            console_quiet_except: None,
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_order_and_overrides() {
        let ctx = LogCtx {
            cluster: Some(Arc::from("c1")),
            node: Some(Arc::from("host1")),
            actor: Some(Arc::from("/node/rm")),
            actor_type: Some("ResourceManager"),
            incarnation: Some(2),
            ..LogCtx::default()
        };
        let fields = Fields {
            msg: "restarted".into(),
            fields: vec![
                ("extra", Value::Bool(true)),
                ("event", Value::String("actor_restarted".into())),
                ("incarnation", Value::Number(3.into())),
            ],
        };
        let rec = build_record(SystemTime::UNIX_EPOCH, &Level::INFO, fields, Some(&ctx));
        let keys: Vec<&str> = rec.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "ts",
                "level",
                "msg",
                "cluster",
                "node",
                "actor",
                "actor_type",
                "incarnation",
                "event",
                "extra"
            ]
        );
        assert_eq!(rec["incarnation"], 3);
        assert_eq!(rec["ts"], "1970-01-01T00:00:00.000000Z");
        assert_eq!(rec["msg"], "restarted");
        // The line written to files has the same keys, order and values.
        let fields = Fields {
            msg: "restarted \"now\"\n\u{1}".into(),
            fields: vec![
                ("extra", Value::Bool(true)),
                ("event", Value::String("actor_restarted".into())),
                ("incarnation", Value::Number(3.into())),
            ],
        };
        let mut line = Vec::new();
        write_record(
            &mut line,
            SystemTime::UNIX_EPOCH,
            &Level::INFO,
            &fields,
            Some(&ctx),
            None,
        );
        let parsed: Value = serde_json::from_slice(&line).unwrap();
        let built = Value::Object(build_record(
            SystemTime::UNIX_EPOCH,
            &Level::INFO,
            fields,
            Some(&ctx),
        ));
        assert_eq!(parsed, built);
        assert_eq!(
            serde_json::to_string(&parsed).unwrap(),
            String::from_utf8(line).unwrap(),
            "same key order"
        );
    }

    #[test]
    fn a_context_rendered_once_gives_the_same_line_as_rendered_per_record() {
        assert_eq!(HEADER_KEYS[3..], CTX_HEAD_KEYS);
        assert_eq!(ID_KEYS[..CTX_ID_KEYS.len()], CTX_ID_KEYS);
        let full = executor_ctx("c1", "1");
        // A context without some keys: their parts are empty.
        let partial = LogCtx {
            attempt: None,
            actor_type: None,
            ..executor_ctx("c1", "1")
        };
        let cases = [
            vec![
                ("task_id", Value::Number(7.into())),
                ("tid", Value::Number(9.into())),
            ],
            vec![
                ("executor_id", Value::String("2".into())),
                ("stage_id", Value::Number(0.into())),
            ],
            vec![
                ("container_id", Value::String("container_9".into())),
                ("attempt", Value::Number(2.into())),
                ("node", Value::String("host9".into())),
            ],
            vec![("actor", Value::String("/elsewhere".into()))],
            vec![],
        ];
        let contexts = [&full, &partial];
        for (ctx, fields) in contexts
            .iter()
            .flat_map(|c| cases.iter().map(move |f| (*c, f.clone())))
        {
            let pre = Rendered::of(ctx);
            let fields = Fields {
                msg: "Running task 0.0 in stage 0.0 (TID 7)".into(),
                fields,
            };
            let ts = SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(1_764_181_802_000_042);
            let (mut with, mut without) = (Vec::new(), Vec::new());
            write_record(&mut with, ts, &Level::INFO, &fields, Some(ctx), Some(&pre));
            write_record(&mut without, ts, &Level::INFO, &fields, Some(ctx), None);
            assert_eq!(String::from_utf8_lossy(&with), String::from_utf8_lossy(&without));
            let built = Value::Object(build_record(ts, &Level::INFO, fields_clone(&fields), Some(ctx)));
            assert_eq!(
                serde_json::to_string(&built).unwrap(),
                String::from_utf8(with).unwrap()
            );
        }
    }

    fn executor_ctx(cluster: &str, executor: &str) -> LogCtx {
        LogCtx {
            cluster: Some(Arc::from(cluster)),
            node: Some(Arc::from("host1")),
            actor: Some(Arc::from("/node/nm-host1/container_1/executor")),
            actor_type: Some("CoarseGrainedExecutorBackend"),
            incarnation: Some(1),
            app_id: Some(Arc::from("application_1_0001")),
            attempt: Some(1),
            container_id: Some(Arc::from("container_1_0001_01_000002")),
            executor_id: Some(Arc::from(executor)),
            ..LogCtx::default()
        }
    }

    #[test]
    fn a_context_keeps_its_rendering_which_is_the_per_record_one_and_a_clone_makes_its_own() {
        let ctx = Arc::new(executor_ctx("c1", "1"));
        let first: *const Rendered = ctx.memo.rendered(&ctx);
        let again = ctx.memo.rendered(&ctx);
        assert!(std::ptr::eq(first, again), "rendered once per context");
        let per_record = Rendered::of(&ctx);
        assert_eq!(again.head.bytes, per_record.head.bytes);
        assert_eq!(again.ids.bytes, per_record.ids.bytes);
        assert_eq!(again.ids.ends, per_record.ids.ends);
        let fields = Fields {
            msg: "Running task 0.0 in stage 0.0 (TID 7)".into(),
            fields: vec![("task_id", Value::Number(7.into()))],
        };
        let ts = SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(1_764_181_802_000_042);
        let (mut kept, mut rendered_now) = (Vec::new(), Vec::new());
        write_record(&mut kept, ts, &Level::INFO, &fields, Some(&ctx), Some(again));
        write_record(&mut rendered_now, ts, &Level::INFO, &fields, Some(&ctx), None);
        assert_eq!(
            String::from_utf8_lossy(&kept),
            String::from_utf8_lossy(&rendered_now)
        );
        // A clone changed before its first record renders its own fields, not the original's.
        let mut other = (*ctx).clone();
        other.executor_id = Some(Arc::from("2"));
        assert_eq!(other, executor_ctx("c1", "2"));
        let theirs = other.memo.rendered(&other);
        assert_eq!(theirs.ids.bytes, Rendered::of(&other).ids.bytes);
        assert_ne!(theirs.ids.bytes, per_record.ids.bytes);
    }

    #[test]
    fn a_thread_back_in_a_context_takes_the_sink_and_file_the_context_kept() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let id = "writer-memo-test";
        let sink = Arc::new(sink::LogSink::new(
            Some(tmp.path().to_path_buf()),
            false,
            Arc::new(SystemTime::now),
        ));
        sink::register(Arc::from(id), sink.clone());
        let ctx = Arc::new(executor_ctx(id, "1"));
        // Other tests register clusters in parallel: a change of the routes between the
        // steps makes the context look its sink up again; try until none came in between.
        let mut checked = false;
        for _ in 0..100 {
            let link = ctx.memo.link(&ctx);
            let linked = link.sink.as_ref().and_then(std::sync::Weak::upgrade);
            assert!(
                linked.is_some_and(|s| Arc::ptr_eq(&s, &sink)),
                "the cluster's sink"
            );
            let mut route = link.route.clone();
            sink.write_line_routed(
                &mut route,
                ctx.node.as_deref(),
                ctx.app_id.as_deref(),
                ctx.container_id.as_deref(),
                b"{}",
                None,
            );
            assert!(route.is_some());
            ctx.memo.set_route(link.generation, &route);
            let back = ctx.memo.link(&ctx);
            if back.generation == link.generation {
                assert!(
                    sink::FileRoute::same(&back.route, &route),
                    "the file the context kept"
                );
                checked = true;
                break;
            }
        }
        sink::unregister(id);
        assert!(checked, "the routes kept changing");
        // Once the routes change, the kept sink and file are not used.
        let after = ctx.memo.link(&ctx);
        assert!(after.route.is_none());
        assert!(after.sink.as_ref().and_then(std::sync::Weak::upgrade).is_none());
    }

    #[test]
    fn schema_slots_follow_the_schema() {
        for (i, k) in HEADER_KEYS.iter().chain(ID_KEYS.iter()).enumerate() {
            assert_eq!(schema_slot(k), Some(i), "{k}");
        }
        assert_eq!(schema_slot("tid"), None);
        // A field named twice: the first is written, as a search in order finds it.
        let fields = Fields {
            msg: "m".into(),
            fields: vec![
                ("stage_id", Value::Number(1.into())),
                ("stage_id", Value::Number(2.into())),
                ("x", Value::Bool(true)),
            ],
        };
        let mut line = Vec::new();
        write_record(
            &mut line,
            SystemTime::UNIX_EPOCH,
            &Level::INFO,
            &fields,
            None,
            None,
        );
        assert_eq!(
            String::from_utf8(line).unwrap(),
            r#"{"ts":"1970-01-01T00:00:00.000000Z","level":"INFO","msg":"m","stage_id":1,"x":true}"#
        );
    }

    #[test]
    fn a_byte_to_escape_is_found_wherever_it_is() {
        for len in [0usize, 1, 15, 16, 17, 31, 32, 100] {
            let plain = "a".repeat(len);
            assert!(!needs_escape(plain.as_bytes()));
            for at in 0..len {
                for special in [b'"', b'\\', b'\n', 0x1f, 0] {
                    let mut bytes = plain.clone().into_bytes();
                    bytes[at] = special;
                    assert!(needs_escape(&bytes), "{len} {at} {special}");
                }
            }
        }
        let mut out = Vec::new();
        write_json_str(
            &mut out,
            "Finished task 0.0 in stage 0.0 (TID 7) in 1 ms on host1 \"x\"",
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string("Finished task 0.0 in stage 0.0 (TID 7) in 1 ms on host1 \"x\"").unwrap()
        );
    }

    #[test]
    fn timestamps_formatted_once_a_second_are_humantimes() {
        let base = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_764_181_802);
        for micros in [
            0u64,
            1,
            999_999,
            1_000_000,
            1_000_001,
            59_999_999,
            86_400_000_000,
            3,
        ] {
            let ts = base + std::time::Duration::from_micros(micros);
            let mut out = Vec::new();
            write_ts(&mut out, ts);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                format!("\"{}\"", humantime::format_rfc3339_micros(ts))
            );
        }
    }

    #[test]
    fn bad_level_is_one_line_error() {
        let err = filter_from(Some("info,[[")).unwrap_err();
        assert!(err.starts_with("invalid log level 'info,[['"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn a_failure_climbing_the_tree_is_said_once() {
        let mut echoes = Echoes::default();
        let container = "/node/nm-host1/container_1";
        let am = "/node/nm-host1/container_1/am";
        let master = "/node/nm-host1/container_1/am/application-master";
        echoes.remember(
            master,
            "User class threw exception: java.lang.IllegalStateException: boom",
            false,
        );
        let reason = "exit code 13: User class threw exception: java.lang.IllegalStateException: boom";
        assert!(echoes.repeats(master, reason));
        assert!(echoes.repeats(am, reason));
        assert!(echoes.repeats(container, reason));
        // A supervisor that escalates says something new: its line stays.
        echoes.remember(master, "panic: injected panic", true);
        assert!(!echoes.repeats(
            am,
            "escalated: reached maximum restart intensity; last: child application-master ended with panic: injected panic"
        ));
        // A later failure of the same actor with the same reason is news.
        assert!(!echoes.repeats(container, reason));
        // Another container's, or a sibling's, failure is news.
        assert!(!echoes.repeats("/node/nm-host1/container_2/am", "exit code 13: other"));
        echoes.remember("/node/nm-host1/container_1/am2/x", "exit code 1: y", true);
        assert!(!echoes.repeats(am, "exit code 1: y"));
        // A prefix that is not a parent path is not an ancestor.
        echoes.remember(master, "z", true);
        assert!(!echoes.repeats("/node/nm-host1/container_1/a", "exit code 1: z"));
        // Bounded: the oldest is forgotten.
        echoes.remember(master, "w", true);
        for i in 0..ECHO_MEMORY {
            echoes.remember("/a", &format!("m{i}"), false);
        }
        assert_eq!(echoes.said.len(), ECHO_MEMORY);
        assert!(!echoes.repeats(am, "exit code 1: w"));
    }

    #[test]
    fn a_word_that_is_no_level_is_refused() {
        for (given, word) in [
            ("loud", "loud"),
            ("infp", "infp"),
            ("warn,sparkyard", "sparkyard"),
        ] {
            let err = filter_from(Some(given)).unwrap_err();
            assert!(
                err.starts_with(&format!("invalid log level '{word}' (expected error, warn, info")),
                "{err}"
            );
        }
        for ok in ["INFO", "off", "warn,sparkyard::yarn=debug", "info,[span]"] {
            assert!(filter_from(Some(ok)).is_ok(), "{ok}");
        }
    }
}
