//! `sparkyard logs --supervision`: the story of every kill, failure, restart and escalation,
//! in time order across all the files of a log directory, so one command answers "what was
//! killed, what noticed, and what recovered".
//!
//! Layer: logs, the bottom layer (under the runtime; see actors.md "Layers").
//!
//! A supervision record is one of:
//!
//! - the fault injector's `fault_injected`, `fault_skipped` and `partition_started`;
//! - an incarnation's end: `actor_failed` (and an `actor_stopped` whose reason is not
//!   normal), `cleanup_panicked`;
//! - a supervisor's decision about a child: its INFO records with `child` and `strategy`
//!   ("child X ended (…); one_for_one restarts X"), a child that ended abnormally and is not
//!   restarted, and `supervisor_escalated`;
//! - a new incarnation: `actor_restarted`;
//! - a peer noticing a silent one: `executor_expired`, and `task_lost`;
//! - the driver noticing and recovering: `executor_removed` (with the loss reason),
//!   `executor_registered` (the first executors and their replacements), `reconciled` (a
//!   restarted DriverEndpoint, DAGScheduler or listener bus taking up where its predecessor
//!   left, and the executors reporting again);
//! - with `--app`, the ResourceManager's warnings and errors about the application (an AM
//!   container that exited fails its attempt; the next attempt is YARN's recovery).
//!
//! With `--app`, the application's own records (its containers' files, and records of the
//! node's files that carry its `app_id`) come with the records that concern it from the
//! processes it ran in: the submit side's (`/submit/...`) records of a process that logged
//! about the application, and the node-level actors' (`/node/rm`, the NodeManagers, …)
//! records of such a process while the application ran (from its first record to its last).
//! Records of different processes are told apart by their `cluster` id.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use super::reader::{parse_line, warn_skipped, Fence, Filter, LogsError, Parsed};
use super::sink::CONTAINER_LOG_FILE;

/// The events that are always part of the supervision story.
pub const SUPERVISION_EVENTS: &[&str] = &[
    "fault_injected",
    "fault_skipped",
    "partition_started",
    "actor_failed",
    "actor_restarted",
    "supervisor_escalated",
    "cleanup_panicked",
    "executor_expired",
    "task_lost",
    "executor_removed",
    "executor_registered",
    "reconciled",
];

/// Whether an exit reason, as records write it, is an abnormal end.
pub(crate) fn abnormal_reason(reason: &str) -> bool {
    !(reason == "normal"
        || reason == "shutdown"
        || reason == "exit code 0"
        || reason.starts_with("exit code 0:"))
}

/// Whether `record` is part of the supervision story (see the module docs).
pub fn is_supervision_record(record: &Value) -> bool {
    let field = |k: &str| record.get(k).and_then(Value::as_str);
    match field("event") {
        Some(e) if SUPERVISION_EVENTS.contains(&e) => return true,
        Some("actor_stopped") => return field("reason").is_some_and(abnormal_reason),
        Some(_) => return false,
        None => {}
    }
    if field("child").is_none() {
        return false;
    }
    field("strategy").is_some() || field("reason").is_some_and(abnormal_reason)
}

/// Whether `record` is a warning or error of the ResourceManager (YARN's own supervision of
/// an application: an AM container that exited fails its attempt).
pub(crate) fn is_rm_warning(record: &Value) -> bool {
    let field = |k: &str| record.get(k).and_then(Value::as_str);
    field("actor_type") == Some("ResourceManager") && matches!(field("level"), Some("WARN" | "ERROR"))
}

/// One selected record.
struct Found {
    time: SystemTime,
    /// File order, then line order: ties in time keep the order they were written in.
    order: (usize, u64),
    record: Value,
    raw: String,
    /// From a node file (not a container's), so the `--app` rule applies to it.
    node_file: bool,
}

/// What `--app` learns about the application while reading.
#[derive(Default)]
struct AppSpan {
    clusters: HashSet<String>,
    first: Option<SystemTime>,
    last: Option<SystemTime>,
    seen: bool,
}

impl AppSpan {
    fn note(&mut self, record: &Value, time: SystemTime) {
        self.seen = true;
        if let Some(c) = record.get("cluster").and_then(Value::as_str) {
            if !self.clusters.contains(c) {
                self.clusters.insert(c.to_string());
            }
        }
        self.first = Some(self.first.map_or(time, |f| f.min(time)));
        self.last = Some(self.last.map_or(time, |l| l.max(time)));
    }

    /// Whether a node-file record without the application's id concerns it.
    fn concerns(&self, record: &Value, time: SystemTime) -> bool {
        let cluster = record.get("cluster").and_then(Value::as_str).unwrap_or("");
        if !self.clusters.contains(cluster) {
            return false;
        }
        let actor = record.get("actor").and_then(Value::as_str).unwrap_or("");
        if actor == "/submit" || actor.starts_with("/submit/") {
            return true;
        }
        match (self.first, self.last) {
            (Some(first), Some(last)) => first <= time && time <= last,
            _ => false,
        }
    }
}

fn record_time(record: &Value, last: &mut SystemTime) -> SystemTime {
    if let Some(time) = record
        .get("ts")
        .and_then(Value::as_str)
        .and_then(|ts| humantime::parse_rfc3339_weak(ts).ok())
    {
        *last = time;
    }
    *last
}

fn sorted_entries(dir: &Path, err: &mut dyn Write) -> Vec<(String, PathBuf)> {
    match fs::read_dir(dir) {
        Ok(entries) => {
            let mut v: Vec<(String, PathBuf)> = entries
                .filter_map(Result::ok)
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .collect();
            v.sort();
            v
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            let _ = writeln!(
                err,
                "sparkyard logs: {}: skipped: cannot list directory ({e})",
                dir.display()
            );
            Vec::new()
        }
    }
}

/// The files to read: node files, then the record files of the containers `filter` allows.
/// The entries of `d` inside the fence.
fn entries(d: &Path, fence: &mut Fence, err: &mut dyn Write) -> Vec<(String, PathBuf)> {
    if !fence.allows(d, err) {
        return Vec::new();
    }
    let mut v = sorted_entries(d, err);
    v.retain(|(_, p)| fence.allows(p, err));
    v
}

/// Nothing outside `dir` is read: a link that leads out is skipped with one line.
fn files(dir: &Path, filter: &Filter, err: &mut dyn Write) -> (Vec<PathBuf>, Vec<PathBuf>, bool) {
    let mut fence = Fence::new(dir);
    let nodes = entries(&dir.join("nodes"), &mut fence, err)
        .into_iter()
        .filter(|(name, path)| name.ends_with(".jsonl") && path.is_file())
        .map(|(_, p)| p)
        .collect();
    let apps = match &filter.app {
        Some(app) => vec![(app.clone(), dir.join("apps").join(app))],
        None => entries(&dir.join("apps"), &mut fence, err),
    };
    let mut containers = Vec::new();
    let mut app_dir_found = false;
    for (_, app_dir) in apps {
        if !app_dir.is_dir() || !fence.allows(&app_dir, err) {
            continue;
        }
        app_dir_found = true;
        for (name, cdir) in entries(&app_dir, &mut fence, err) {
            if filter.container.as_ref().is_some_and(|c| c != &name) {
                continue;
            }
            let file = cdir.join(CONTAINER_LOG_FILE);
            if file.is_file() && fence.allows(&file, err) {
                containers.push(file);
            }
        }
    }
    (nodes, containers, app_dir_found)
}

/// Reads one file, handing each record (with its time and raw text) to `each`.
fn read_file(path: &Path, err: &mut dyn Write, mut each: impl FnMut(u64, Value, SystemTime, &str)) {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return,
        Err(e) => {
            let _ = writeln!(
                err,
                "sparkyard logs: {}: skipped: cannot read file ({e})",
                path.display()
            );
            return;
        }
    };
    let mut reader = BufReader::new(file);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let mut last = SystemTime::UNIX_EPOCH;
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) => {
                let _ = writeln!(
                    err,
                    "sparkyard logs: {}:{}: skipped: cannot read file ({e}); rest of file ignored",
                    path.display(),
                    line_no + 1
                );
                return;
            }
        }
        line_no += 1;
        let complete = buf.last() == Some(&b'\n');
        let text = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        match parse_line(text, complete) {
            Parsed::Blank => {}
            Parsed::Bad(reason) => warn_skipped(err, path, line_no, &reason),
            Parsed::Record(record, raw) => {
                let time = record_time(&record, &mut last);
                each(line_no, record, time, raw);
            }
        }
    }
}

/// Prints the supervision records of the log directory `dir` that pass `filter`, in time
/// order: readable lines, or with `json` the records as they were written.
pub fn run(
    dir: &Path,
    filter: &Filter,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), LogsError> {
    let (nodes, containers, app_dir_found) = files(dir, filter, err);
    let mut span = AppSpan::default();
    let mut found: Vec<Found> = Vec::new();
    let app = filter.app.as_deref();
    // The node files: every record is checked for the application's id; the supervision
    // records are kept for the decision below.
    let node_filter = Filter {
        app: None,
        ..filter.clone()
    };
    for (index, path) in nodes.iter().enumerate() {
        read_file(path, err, |line, record, time, raw| {
            let own = app.is_some_and(|a| record.get("app_id").and_then(Value::as_str) == Some(a));
            if own {
                span.note(&record, time);
            }
            let wanted = is_supervision_record(&record) || (own && is_rm_warning(&record));
            if wanted && node_filter.matches(&record, raw) {
                found.push(Found {
                    time,
                    order: (index, line),
                    record,
                    raw: raw.to_string(),
                    node_file: true,
                });
            }
        });
    }
    let inside = Filter {
        app: None,
        container: None,
        ..filter.clone()
    };
    for (i, path) in containers.iter().enumerate() {
        let index = nodes.len() + i;
        read_file(path, err, |line, record, time, raw| {
            if app.is_some() {
                span.note(&record, time);
            }
            if is_supervision_record(&record) && inside.matches(&record, raw) {
                found.push(Found {
                    time,
                    order: (index, line),
                    record,
                    raw: raw.to_string(),
                    node_file: false,
                });
            }
        });
    }
    if let Some(app) = app {
        if !span.seen && !app_dir_found {
            return Err(LogsError::UnknownApp {
                app: app.to_string(),
                log_dir: dir.to_path_buf(),
            });
        }
        found.retain(|f| {
            !f.node_file
                || f.record.get("app_id").and_then(Value::as_str) == Some(app)
                || span.concerns(&f.record, f.time)
        });
    }
    found.sort_by_key(|f| (f.time, f.order));
    for f in &found {
        if json {
            writeln!(out, "{}", f.raw)?;
        } else {
            writeln!(out, "{}", format_line(&f.record))?;
        }
    }
    Ok(())
}

/// One readable line: time, what happened, the actor and its incarnation, and the detail
/// (the record's message, which names the reason).
pub fn format_line(record: &Value) -> String {
    let field = |k: &str| record.get(k).and_then(Value::as_str).unwrap_or("");
    let what = match field("event") {
        "" if record.get("strategy").is_some() => "supervisor_decision",
        "" if record.get("child").is_some() => "supervisor",
        "" if field("level") == "ERROR" => "rm_error",
        "" => "rm_warning",
        e => e,
    };
    let actor = match field("actor") {
        "" => "-",
        a => a,
    };
    let incarnation = match record.get("incarnation") {
        Some(Value::Number(n)) => format!("#{n}"),
        _ => String::new(),
    };
    let mut detail = field("msg").split_whitespace().collect::<Vec<_>>().join(" ");
    let by = field("by");
    if !by.is_empty() && !detail.contains(by) {
        detail.push_str(&format!(" (by {by})"));
    }
    if let Some(app) = record.get("app_id").and_then(Value::as_str) {
        if actor == "-" || !actor.contains("container_") {
            detail.push_str(&format!(" app_id={app}"));
        }
    }
    format!("{} {what:<21} {actor}{incarnation} {detail}", field("ts"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn what_counts_as_supervision() {
        assert!(is_supervision_record(&rec(r#"{"event":"fault_injected"}"#)));
        assert!(is_supervision_record(&rec(r#"{"event":"actor_restarted"}"#)));
        assert!(!is_supervision_record(&rec(r#"{"event":"actor_started"}"#)));
        assert!(!is_supervision_record(&rec(
            r#"{"event":"actor_stopped","reason":"shutdown"}"#
        )));
        assert!(is_supervision_record(&rec(
            r#"{"event":"actor_stopped","reason":"killed by x"}"#
        )));
        assert!(is_supervision_record(&rec(
            r#"{"child":"allocator","strategy":"one_for_one","reason":"killed by x"}"#
        )));
        assert!(!is_supervision_record(&rec(
            r#"{"child":"executor-1","reason":"exit code 0"}"#
        )));
        assert!(is_supervision_record(&rec(
            r#"{"child":"executor-1","reason":"exit code 143"}"#
        )));
        assert!(!is_supervision_record(&rec(r#"{"msg":"Finished task 1.0"}"#)));
    }

    #[test]
    fn readable_lines_name_the_actor_and_incarnation() {
        let line = format_line(&rec(
            r#"{"ts":"2026-01-01T00:00:00.000001Z","msg":"failed: killed by sparkyard chaos kill","actor":"/node/rm","incarnation":1,"event":"actor_failed"}"#,
        ));
        assert_eq!(
            line,
            "2026-01-01T00:00:00.000001Z actor_failed          /node/rm#1 failed: killed by sparkyard chaos kill"
        );
        let line = format_line(&rec(
            r#"{"ts":"t","msg":"child rm ended (x); one_for_one restarts rm","actor":"/node","incarnation":1,"child":"rm","strategy":"one_for_one"}"#,
        ));
        assert!(
            line.contains("supervisor_decision   /node#1 child rm ended"),
            "{line}"
        );
    }
}
