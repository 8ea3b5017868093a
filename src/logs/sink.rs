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
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::Duration;

use serde_json::Value;

use crate::runtime::clock::Clock;

/// File name of a container's structured log.
pub const CONTAINER_LOG_FILE: &str = "sparkyard.jsonl";
/// File name of a container's application output.
pub const CONTAINER_STDOUT_FILE: &str = "stdout";

/// How often buffered records reach the files (a reader of a live node's logs is at most
/// this far behind; a clean stop flushes everything).
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// Buffer of one log file.
const FILE_BUFFER: usize = 64 * 1024;

/// One cluster's log destination.
///
/// Records are appended to buffered files (one system call per 64 KiB, not per record,
/// which matters at a hundred thousand task records a second); a flusher thread writes the
/// buffers out every [`FLUSH_INTERVAL`] while anything is pending, and dropping the sink (a
/// cluster's shutdown) flushes the rest.
pub struct LogSink {
    /// Unique in the process (the thread-local file cache tells sinks apart by it).
    id: usize,
    dir: Option<PathBuf>,
    clock: Clock,
    /// Open files by `node \0 app \0 container` (`None`: the file could not be opened).
    files: Mutex<HashMap<String, Arc<LogFile>>>,
    dirty: AtomicBool,
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

/// One open log file (`None` once it could not be opened or written).
type LogFile = Mutex<Option<BufWriter<File>>>;

/// The file a thread wrote its last record to: (sink, node, app, container) and the file.
/// A thread logs for one actor at a time, so this spares the map lookup almost always.
type LastFile = Option<(usize, String, String, String, Arc<LogFile>)>;

thread_local! {
    static LAST_FILE: std::cell::RefCell<LastFile> = const { std::cell::RefCell::new(None) };
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl LogSink {
    /// A sink writing under `dir` (if any) and keeping records in memory if `capture`.
    pub fn new(dir: Option<PathBuf>, capture: bool, clock: Clock) -> LogSink {
        static NEXT_ID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        LogSink {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            dir,
            clock,
            files: Mutex::new(HashMap::new()),
            dirty: AtomicBool::new(false),
            capture: capture.then(|| Mutex::new(Vec::new())),
        }
    }

    /// Starts the thread that flushes this sink's files while it lives (a sink without a
    /// directory needs none).
    pub fn start_flusher(sink: &Arc<LogSink>) {
        if sink.dir.is_none() {
            return;
        }
        let weak: Weak<LogSink> = Arc::downgrade(sink);
        let _ = std::thread::Builder::new()
            .name("sparkyard-log-flusher".into())
            .spawn(move || loop {
                std::thread::sleep(FLUSH_INTERVAL);
                let Some(sink) = weak.upgrade() else { break };
                if sink.dirty.swap(false, Ordering::AcqRel) {
                    sink.flush();
                }
            });
    }

    /// Whether records are kept in memory (tests).
    pub fn captures(&self) -> bool {
        self.capture.is_some()
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
        let field = |k: &str| record.get(k).and_then(Value::as_str);
        self.write_line(
            field("node"),
            field("app_id"),
            field("container_id"),
            line.as_bytes(),
            Some(record),
        );
    }

    /// Writes one formatted record (`line` has no newline) to the file of its node, app and
    /// container; captures `record` if this sink captures.
    pub fn write_line(
        &self,
        node: Option<&str>,
        app_id: Option<&str>,
        container_id: Option<&str>,
        line: &[u8],
        record: Option<&Value>,
    ) {
        if let (Some(capture), Some(record)) = (&self.capture, record) {
            lock(capture).push(record.clone());
        }
        let Some(dir) = &self.dir else { return };
        let (node, app, container) = (
            node.unwrap_or(""),
            app_id.unwrap_or(""),
            container_id.unwrap_or(""),
        );
        let me = self.id;
        let cached = LAST_FILE
            .try_with(|last| {
                last.borrow().as_ref().and_then(|(s, n, a, c, f)| {
                    (*s == me && n == node && a == app && c == container).then(|| f.clone())
                })
            })
            .ok()
            .flatten();
        let file = match cached {
            Some(f) => f,
            None => {
                let key = format!("{node}\0{app}\0{container}");
                let f = lock(&self.files)
                    .entry(key)
                    .or_insert_with(|| {
                        let path =
                            Self::file_for(dir, Some(node).filter(|n| !n.is_empty()), app_id, container_id);
                        Arc::new(Mutex::new(open(&path)))
                    })
                    .clone();
                let _ = LAST_FILE.try_with(|last| {
                    *last.borrow_mut() = Some((me, node.into(), app.into(), container.into(), f.clone()))
                });
                f
            }
        };
        let mut slot = lock(&file);
        if let Some(writer) = slot.as_mut() {
            if let Err(e) = writer.write_all(line).and_then(|_| writer.write_all(b"\n")) {
                eprintln!("sparkyard: cannot write a log file: {e}; its records are dropped");
                *slot = None;
            }
        }
        drop(slot);
        self.dirty.store(true, Ordering::Release);
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
        let file = lock(&self.files)
            .entry(path.to_string_lossy().into_owned())
            .or_insert_with(|| Arc::new(Mutex::new(open(path))))
            .clone();
        let mut slot = lock(&file);
        if let Some(writer) = slot.as_mut() {
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
        let files: Vec<Arc<LogFile>> = lock(&self.files).values().cloned().collect();
        for f in files {
            if let Some(w) = lock(&f).as_mut() {
                let _ = w.flush();
            }
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

fn open(path: &Path) -> Option<BufWriter<File>> {
    let result = path
        .parent()
        .map(std::fs::create_dir_all)
        .unwrap_or(Ok(()))
        .and_then(|_| OpenOptions::new().create(true).append(true).open(path));
    match result {
        Ok(f) => Some(BufWriter::with_capacity(FILE_BUFFER, f)),
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
