//! Where a cluster's records go: files per node and per container, and an optional
//! in-memory capture for tests.
//!
//! Layout under the log directory (the `logs` reader relies on it):
//! - `nodes/<node>.jsonl`: records of actors that are not inside a container;
//! - `apps/<app_id>/<container_id>/sparkyard.jsonl`: records of actors inside a container,
//!   as YARN keeps container logs;
//! - `apps/<app_id>/<container_id>/stdout`: the application's output in that container.
//!
//! Each cluster registers its sink under its id; the tracing layer routes every record by the
//! `cluster` of its log context, so clusters in one process (parallel tests) never mix.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{LineWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use serde_json::Value;

use crate::runtime::clock::Clock;

/// File name of a container's structured log.
pub const CONTAINER_LOG_FILE: &str = "sparkyard.jsonl";
/// File name of a container's application output.
pub const CONTAINER_STDOUT_FILE: &str = "stdout";

/// One cluster's log destination.
pub struct LogSink {
    dir: Option<PathBuf>,
    clock: Clock,
    files: Mutex<HashMap<PathBuf, Option<LineWriter<File>>>>,
    capture: Option<Mutex<Vec<Value>>>,
}

impl std::fmt::Debug for LogSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LogSink(dir={:?}, capture={})",
            self.dir,
            self.capture.is_some()
        )
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl LogSink {
    /// A sink writing under `dir` (if any) and keeping records in memory if `capture`.
    pub fn new(dir: Option<PathBuf>, capture: bool, clock: Clock) -> LogSink {
        LogSink {
            dir,
            clock,
            files: Mutex::new(HashMap::new()),
            capture: capture.then(|| Mutex::new(Vec::new())),
        }
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The clock whose wall time stamps this cluster's records.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The file a record with these ids belongs in.
    pub fn file_for(
        dir: &Path,
        node: Option<&str>,
        app_id: Option<&str>,
        container_id: Option<&str>,
    ) -> PathBuf {
        match (app_id, container_id) {
            (Some(app), Some(container)) => dir
                .join("apps")
                .join(app)
                .join(container)
                .join(CONTAINER_LOG_FILE),
            _ => dir
                .join("nodes")
                .join(format!("{}.jsonl", node.unwrap_or("local"))),
        }
    }

    /// Writes one formatted record (`line` has no newline) and captures its value.
    pub fn write(&self, record: &Value, line: &str) {
        if let Some(capture) = &self.capture {
            lock(capture).push(record.clone());
        }
        let Some(dir) = &self.dir else { return };
        let field = |k: &str| record.get(k).and_then(Value::as_str);
        let path = Self::file_for(dir, field("node"), field("app_id"), field("container_id"));
        self.append(&path, line.as_bytes(), true);
    }

    /// Appends application output to a container's `stdout` file.
    pub fn append_stdout(&self, app_id: &str, container_id: &str, text: &str) {
        let Some(dir) = &self.dir else { return };
        let path = dir
            .join("apps")
            .join(app_id)
            .join(container_id)
            .join(CONTAINER_STDOUT_FILE);
        self.append(&path, text.as_bytes(), false);
    }

    fn append(&self, path: &Path, bytes: &[u8], newline: bool) {
        let mut files = lock(&self.files);
        let slot = files.entry(path.to_path_buf()).or_insert_with(|| open(path));
        if let Some(writer) = slot {
            let res = writer.write_all(bytes).and_then(|_| {
                if newline {
                    writer.write_all(b"\n")
                } else {
                    writer.flush()
                }
            });
            if let Err(e) = res {
                eprintln!(
                    "sparkyard: cannot write log file {}: {e}; its records are dropped",
                    path.display()
                );
                *slot = None;
            }
        }
    }

    /// Flushes every open file.
    pub fn flush(&self) {
        for writer in lock(&self.files).values_mut().flatten() {
            let _ = writer.flush();
        }
    }

    /// Every captured record so far (empty unless the sink captures).
    pub fn records(&self) -> Vec<Value> {
        self.capture.as_ref().map(|c| lock(c).clone()).unwrap_or_default()
    }

    /// Captured records whose `event` field equals `event`.
    pub fn events(&self, event: &str) -> Vec<Value> {
        self.capture
            .as_ref()
            .map(|c| {
                lock(c)
                    .iter()
                    .filter(|r| r.get("event").and_then(Value::as_str) == Some(event))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn open(path: &Path) -> Option<LineWriter<File>> {
    let result = path
        .parent()
        .map(std::fs::create_dir_all)
        .unwrap_or(Ok(()))
        .and_then(|_| OpenOptions::new().create(true).append(true).open(path));
    match result {
        Ok(f) => Some(LineWriter::new(f)),
        Err(e) => {
            eprintln!(
                "sparkyard: cannot open log file {}: {e}; its records are dropped",
                path.display()
            );
            None
        }
    }
}

impl Drop for LogSink {
    fn drop(&mut self) {
        self.flush();
    }
}

type Routes = RwLock<HashMap<Arc<str>, Arc<LogSink>>>;

fn routes() -> &'static Routes {
    static ROUTES: OnceLock<Routes> = OnceLock::new();
    ROUTES.get_or_init(|| RwLock::new(HashMap::new()))
}

/// Routes records of cluster `id` to `sink` from now on.
pub fn register(id: Arc<str>, sink: Arc<LogSink>) {
    routes()
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id, sink);
}

/// Stops routing records of cluster `id` (they go to the console only).
pub fn unregister(id: &str) {
    routes().write().unwrap_or_else(|p| p.into_inner()).remove(id);
}

/// The sink of cluster `id`, if registered.
pub fn sink_for(id: &str) -> Option<Arc<LogSink>> {
    routes()
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(id)
        .cloned()
}
