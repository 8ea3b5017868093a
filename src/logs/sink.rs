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
//!
//! A node stays up for days, so what the sink holds open is bounded, whatever runs on it:
//! a container's files close when its NodeManager sees it end ([`LogSink::close_container`]),
//! a file nothing wrote to for [`IDLE_CLOSE`] closes, and at most [`MAX_OPEN_FILES`] are open
//! at once (opening one more closes the least recently written). A closed file opens again,
//! in append mode, when a record for it comes later.
//!
//! A record that cannot be written (its file cannot be opened: no descriptor left, no space,
//! no permission; or writing it out fails) is counted, never silently lost: the first failure
//! goes to stderr at once with the file and the error, later ones in one summary line per
//! [`REPORT_EVERY`] and at the end, and [`LogSink::dropped`] tells the total. A file that
//! failed is tried again at most once per [`RETRY_OPEN`], so a full descriptor table costs no
//! system call per record.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::perms;

/// File name of a container's structured log.
pub const CONTAINER_LOG_FILE: &str = "sparkyard.jsonl";
/// File name of a container's application output.
pub const CONTAINER_STDOUT_FILE: &str = "stdout";

/// How often buffered records reach the files (a reader of a live node's logs is at most
/// this far behind while up to [`FILES_PER_TICK`] files are being written, a tick more for
/// each hundred files beyond; a clean stop flushes everything).
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// How many files' partial buffers the flusher writes out per tick, on average: after a
/// flush that wrote `n` files, the next one waits `n / FILES_PER_TICK` ticks more. Each file
/// written is a system call (with the file's lock held); a thousand executors writing their
/// records made it ten thousand a second, 6% of the machine's time in the 1,000-executor
/// tiny-task bench, which grew the per-task cost with the number of executors. So a thousand
/// busy containers' records reach their files within about a second.
pub const FILES_PER_TICK: usize = 100;

/// A file nothing wrote to for this long is closed (it opens again if needed).
pub const IDLE_CLOSE: Duration = Duration::from_secs(10);

/// The fewest and the most files one sink keeps open (see [`max_open_files`]).
pub const MIN_OPEN_FILES: usize = 256;
pub const MAX_OPEN_FILES: usize = 2048;

/// The most files one sink keeps open: a quarter of the process's descriptor limit, within
/// [`MIN_OPEN_FILES`]..=[`MAX_OPEN_FILES`]. Every container of a node writes its own file,
/// and when more containers log at once than files may stay open, each record opens and
/// closes one (a thousand one-core executors cost four times what ten did per task); the
/// rest of the descriptors stay for connections and processes.
pub fn max_open_files() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| {
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(u64::MAX);
        usize::try_from(soft / 4)
            .unwrap_or(usize::MAX)
            .clamp(MIN_OPEN_FILES, MAX_OPEN_FILES)
    })
}

/// After a file could not be opened or written, how long before it is tried again (records
/// for it meanwhile are counted as dropped).
pub const RETRY_OPEN: Duration = Duration::from_secs(1);

/// How often a summary of dropped records goes to stderr while records are being dropped.
pub const REPORT_EVERY: Duration = Duration::from_secs(10);

/// Buffer of one log file (a system call per 16 KiB, about a hundred task records; up to
/// [`MAX_OPEN_FILES`] files may be open).
const FILE_BUFFER: usize = 16 * 1024;

/// The most bytes of full buffers a sink lets wait for its flusher; past it, the thread
/// that fills one writes it out itself (the flusher fell behind: records are never dropped
/// for it, and memory stays bounded).
const MAX_PENDING: usize = 8 * 1024 * 1024;

/// Bytes of full buffers waiting at which the flusher is woken for them; below it they
/// wait for its next tick ([`FLUSH_INTERVAL`]). Waking a sleeping thread is a system call
/// that costs the thread that logs several microseconds: one per 16 KiB buffer was 8% of
/// the driver's thread at a hundred thousand tasks a second; one per 256 KiB is a sixteenth
/// of that, and a quiet sink's few buffers just wait for the tick.
const WAKE_FLUSHER_AT: usize = 256 * 1024;

/// Written-out buffers a sink keeps for reuse (a megabyte). A fresh 16 KiB buffer is memory
/// the allocator gives back to the system once freed (`purge_delay` 0, see `lib.rs`) and takes
/// again zeroed, a page fault per 4 KiB on the thread that logs: about a tenth of a
/// record's cost on its writer (`benches/records.rs`, under `perf`).
const MAX_SPARE: usize = 64;

/// How many ended containers the sink remembers (see [`LogSink::close_container`]).
const KEPT_CLOSED: usize = 4096;

/// Flusher ticks between two idle scans (one a second).
const SCAN_EVERY_TICKS: u64 = 10;

/// Where a sink takes the wall time of its records from: the cluster's clock, handed in by
/// the runtime that owns both (so the logs layer needs no clock of its own).
pub type WallClock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// One cluster's log destination.
///
/// Records are appended to a file's buffer. A full buffer is handed to the sink's flusher
/// thread, which writes it out: the thread that logs (an actor's, a task's) pays for a
/// copy, not for the system call and the kernel's copy, which at a hundred thousand task
/// records a second were a tenth of the driver's time. The flusher also writes out partial
/// buffers every [`FLUSH_INTERVAL`] while anything is pending (less often while more than
/// [`FILES_PER_TICK`] files are being written), closes idle files and reports
/// dropped records; dropping the sink (a cluster's shutdown) writes out the rest.
pub struct LogSink {
    /// Unique in the process (the thread-local file cache tells sinks apart by it).
    id: usize,
    dir: Option<PathBuf>,
    wall: WallClock,
    /// The open files (and those that failed and wait for a retry), by [`file_key`].
    files: Mutex<HashMap<String, Arc<LogFile>>>,
    /// Containers whose files were closed because they ended, most recent last (at most
    /// [`KEPT_CLOSED`]): a record for one of them (its completion, seen by the NodeManager
    /// and the ResourceManager) is appended with a file opened and closed for it alone.
    closed: Mutex<ClosedOwners>,
    /// Flusher ticks so far: a file's `last_tick` says how recently it was written.
    tick: AtomicU64,
    dirty: AtomicBool,
    drops: DropCounter,
    capture: Option<Mutex<Vec<Value>>>,
    /// Files with full buffers for the flusher (shared with it: the flusher does not keep
    /// the sink alive).
    ready: Arc<Ready>,
    /// Bytes of full buffers waiting for the flusher (see [`MAX_PENDING`]).
    pending: AtomicUsize,
    /// A flusher runs: full buffers go to it (else they are written out at once).
    flusher: AtomicBool,
    /// Empty buffers, written out, for the next full one (see [`MAX_SPARE`]).
    spare: Mutex<Vec<Vec<u8>>>,
}

/// The files whose full buffers wait for the flusher, and its bell.
#[derive(Default)]
struct Ready {
    files: Mutex<Vec<Arc<LogFile>>>,
    bell: Condvar,
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

/// One log file of the sink: where it is, whose it is, and its state.
struct LogFile {
    path: PathBuf,
    /// The container it belongs to (`app \0 container`), empty for a node's file.
    owner: String,
    /// The sink's tick at its last write (for idle closing and eviction).
    last_tick: AtomicU64,
    /// Not in the map: closed after each write (its container ended).
    once: AtomicBool,
    state: Mutex<FileState>,
    /// Held by whoever writes the file's buffers out, taken before `state` is let go: buffers
    /// reach the file in the order they were filled, whichever thread writes them.
    io: Mutex<()>,
}

impl LogFile {
    fn new(path: PathBuf, owner: String, tick: u64, once: bool) -> LogFile {
        LogFile {
            path,
            owner,
            last_tick: AtomicU64::new(tick),
            once: AtomicBool::new(once),
            state: Mutex::new(FileState::New),
            io: Mutex::new(()),
        }
    }
}

/// An open log file and the records not written to it yet.
struct OpenFile {
    file: Arc<File>,
    /// Records being appended, and how many.
    buf: Vec<u8>,
    buf_records: u64,
    /// Full buffers waiting for the flusher, oldest first, with their record counts.
    full: VecDeque<(Vec<u8>, u64)>,
}

impl OpenFile {
    /// Records not written yet (lost and counted if writing them fails).
    fn unwritten(&self) -> u64 {
        self.buf_records + self.full.iter().map(|(_, n)| n).sum::<u64>()
    }
}

enum FileState {
    /// Not opened yet (opened by the first write).
    New,
    /// Open, with what is not written yet.
    Open(OpenFile),
    /// Could not be opened or written: records are counted as dropped until `retry_at`.
    Failed { retry_at: Instant },
    /// Closed by the sink: a holder of this handle must look the file up again.
    Closed,
}

/// The owners (see [`LogFile::owner`]) of the containers that ended, oldest first.
#[derive(Default)]
struct ClosedOwners {
    order: std::collections::VecDeque<String>,
    set: std::collections::HashSet<String>,
}

impl ClosedOwners {
    fn insert(&mut self, owner: String) {
        if self.set.insert(owner.clone()) {
            self.order.push_back(owner);
        }
        while self.order.len() > KEPT_CLOSED {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }
}

/// What became of one write.
enum Written {
    Ok,
    /// The file was closed meanwhile: look it up again.
    Closed,
    Dropped,
}

/// Dropped records: how many, and what stderr has been told.
#[derive(Default)]
struct DropCounter {
    total: AtomicU64,
    /// The total when stderr was last told.
    reported: AtomicU64,
    /// The last failure (file and error) and when stderr was last told.
    last: Mutex<(String, Option<Instant>)>,
}

impl DropCounter {
    /// Counts `n` records lost to `problem` (names the file and the error); the first
    /// failure of the sink is reported at once.
    fn count(&self, n: u64, problem: String) {
        if n == 0 {
            return;
        }
        let before = self.total.fetch_add(n, Ordering::Relaxed);
        let mut last = lock(&self.last);
        if before == 0 && last.1.is_none() {
            eprintln!(
                "sparkyard: {problem}; the log records it cannot take are counted and dropped \
                 (a summary follows every {})",
                humantime::format_duration(REPORT_EVERY)
            );
            self.reported.store(before + n, Ordering::Relaxed);
            last.1 = Some(Instant::now());
        }
        last.0 = problem;
    }

    /// Tells stderr how many records were dropped since it was last told, if any and if
    /// `force` or [`REPORT_EVERY`] has passed.
    fn report(&self, force: bool) {
        let total = self.total.load(Ordering::Relaxed);
        let reported = self.reported.load(Ordering::Relaxed);
        if total == reported {
            return;
        }
        let mut last = lock(&self.last);
        if !force && last.1.is_some_and(|t| t.elapsed() < REPORT_EVERY) {
            return;
        }
        eprintln!(
            "sparkyard: {} log record(s) could not be written since the last report ({total} in all); last problem: {}",
            total - reported,
            last.0
        );
        self.reported.store(total, Ordering::Relaxed);
        last.1 = Some(Instant::now());
    }
}

/// The file a thread wrote its last record to: (sink, node, app, container) and the file.
/// A thread logs for one actor at a time, so this spares the map lookup almost always.
type LastFile = Option<(usize, String, String, String, Arc<LogFile>)>;

thread_local! {
    static LAST_FILE: std::cell::RefCell<LastFile> = const { std::cell::RefCell::new(None) };
}

/// A file of a sink that records went to, remembered by a writer to skip the lookup (see
/// [`LogSink::write_line_routed`]). Valid for the sink that gave it only.
#[derive(Clone)]
pub struct FileRoute(Arc<LogFile>);

impl FileRoute {
    /// Whether `a` and `b` are the same file (or both none).
    pub fn same(a: &Option<FileRoute>, b: &Option<FileRoute>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => Arc::ptr_eq(&a.0, &b.0),
            (None, None) => true,
            _ => false,
        }
    }

    /// Which file `route` is, as an address (0 for none): taken before a write and compared
    /// after it, it tells whether the write found another file, without the cost of cloning
    /// the route (two atomic operations a record). Were the file freed and another allocated
    /// at its address during the write, the change would go unseen: the context's memo would
    /// keep the file it had, which every write checks and looks up again if closed.
    pub fn addr(route: &Option<FileRoute>) -> usize {
        route.as_ref().map_or(0, |r| Arc::as_ptr(&r.0) as usize)
    }
}

/// A record's node, app and container as the file map keys them: a record without both an
/// app and a container goes to its node's file.
fn route_ids<'a>(
    node: Option<&'a str>,
    app: Option<&'a str>,
    container: Option<&'a str>,
) -> (&'a str, &'a str, &'a str) {
    let (node, app, container) = (node.unwrap_or(""), app.unwrap_or(""), container.unwrap_or(""));
    if app.is_empty() || container.is_empty() {
        (node, "", "")
    } else {
        (node, app, container)
    }
}

/// Writes `buffers` out in order with as few system calls as the kernel allows (`writev` of
/// up to [`GATHER`] buffers at a time). One call for many 16 KiB buffers costs the kernel
/// far less per byte than a call each (ext4 fills its large page-cache folios a whole
/// write at a time: `dd` here writes 3–5 GB/s in 256 KiB blocks, 1.1–3.3 GB/s in 16 KiB ones).
/// On an error, says how many of the buffers were written out whole before it.
fn write_all_gathered(out: &File, buffers: &[(Vec<u8>, u64)]) -> Result<(), (usize, std::io::Error)> {
    let mut done = 0;
    for chunk in buffers.chunks(GATHER) {
        let mut slices: Vec<std::io::IoSlice<'_>> =
            chunk.iter().map(|(b, _)| std::io::IoSlice::new(b)).collect();
        let mut left = &mut slices[..];
        while !left.is_empty() {
            let error = match (&*out).write_vectored(left) {
                Ok(0) => std::io::ErrorKind::WriteZero.into(),
                Ok(n) => {
                    let before = left.len();
                    std::io::IoSlice::advance_slices(&mut left, n);
                    done += before - left.len();
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => e,
            };
            return Err((done, error));
        }
    }
    Ok(())
}

/// The most buffers one `writev` takes (Linux's `IOV_MAX` is 1024).
const GATHER: usize = 256;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The key of a file in the sink's map: its kind, then its node, app and container.
fn file_key(kind: char, node: &str, app: &str, container: &str) -> String {
    format!("{kind}\0{node}\0{app}\0{container}")
}

/// The records file of routed ids (see [`route_ids`]; empty means none).
fn record_file(dir: &Path, node: &str, app: &str, container: &str) -> PathBuf {
    fn given(s: &str) -> Option<&str> {
        (!s.is_empty()).then_some(s)
    }
    LogSink::file_for(dir, given(node), given(app), given(container))
}

/// The owner of a container's files (see [`LogFile::owner`]).
fn owner(app: &str, container: &str) -> String {
    if app.is_empty() || container.is_empty() {
        String::new()
    } else {
        format!("{app}\0{container}")
    }
}

impl LogSink {
    /// A sink writing under `dir` (if any) and keeping records in memory if `capture`.
    pub fn new(dir: Option<PathBuf>, capture: bool, wall: WallClock) -> LogSink {
        static NEXT_ID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        LogSink {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            dir,
            wall,
            files: Mutex::new(HashMap::new()),
            closed: Mutex::new(ClosedOwners::default()),
            tick: AtomicU64::new(0),
            dirty: AtomicBool::new(false),
            drops: DropCounter::default(),
            capture: capture.then(|| Mutex::new(Vec::new())),
            ready: Arc::new(Ready::default()),
            pending: AtomicUsize::new(0),
            flusher: AtomicBool::new(false),
            spare: Mutex::new(Vec::new()),
        }
    }

    /// Starts the thread that, while this sink lives, flushes its files, closes idle ones
    /// and reports dropped records (a sink without a directory needs none).
    pub fn start_flusher(sink: &Arc<LogSink>) {
        if sink.dir.is_none() {
            return;
        }
        let weak: Weak<LogSink> = Arc::downgrade(sink);
        let ready = sink.ready.clone();
        let started = std::thread::Builder::new()
            .name("sparkyard-log-flusher".into())
            .spawn(move || {
                let mut next_tick = Instant::now() + FLUSH_INTERVAL;
                // The tick from which partial buffers are written out again.
                let mut partial_due = 0u64;
                loop {
                    let batch = {
                        let mut files = lock(&ready.files);
                        loop {
                            let now = Instant::now();
                            if !files.is_empty() || now >= next_tick {
                                break;
                            }
                            files = ready
                                .bell
                                .wait_timeout(files, next_tick - now)
                                .unwrap_or_else(|p| p.into_inner())
                                .0;
                        }
                        std::mem::take(&mut *files)
                    };
                    let Some(sink) = weak.upgrade() else { break };
                    for file in batch {
                        sink.write_full(&file);
                    }
                    if Instant::now() < next_tick {
                        continue;
                    }
                    next_tick += FLUSH_INTERVAL;
                    let tick = sink.tick.fetch_add(1, Ordering::Relaxed) + 1;
                    if tick >= partial_due && sink.dirty.swap(false, Ordering::AcqRel) {
                        let written = sink.flush();
                        partial_due = tick + 1 + (written / FILES_PER_TICK) as u64;
                    }
                    if tick % SCAN_EVERY_TICKS == 0 {
                        sink.close_idle(tick);
                        sink.drops.report(false);
                    }
                    // A flusher that fell far behind (a stopped process) does not race to
                    // catch up with the ticks it missed.
                    let now = Instant::now();
                    if next_tick < now {
                        next_tick = now + FLUSH_INTERVAL;
                    }
                }
            });
        sink.flusher.store(started.is_ok(), Ordering::Release);
    }

    /// Whether records are kept in memory (tests).
    pub fn captures(&self) -> bool {
        self.capture.is_some()
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The wall time that stamps this cluster's records now (its clock's: a paused clock's
    /// time in tests).
    pub fn wall(&self) -> SystemTime {
        (self.wall)()
    }

    /// How many records (and lines of output) could not be written so far.
    pub fn dropped(&self) -> u64 {
        self.drops.total.load(Ordering::Relaxed)
    }

    /// How many files are open now (or wait for a retry after a failure).
    pub fn open_files(&self) -> usize {
        lock(&self.files).len()
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
    /// container; captures `record` if this sink captures. The thread remembers the file it
    /// wrote to last (a thread logs for one actor at a time).
    pub fn write_line(
        &self,
        node: Option<&str>,
        app_id: Option<&str>,
        container_id: Option<&str>,
        line: &[u8],
        record: Option<&Value>,
    ) {
        let (node, app, container) = route_ids(node, app_id, container_id);
        let me = self.id;
        let mut route = LAST_FILE
            .try_with(|last| {
                last.borrow().as_ref().and_then(|(s, n, a, c, f)| {
                    (*s == me && n == node && a == app && c == container).then(|| FileRoute(f.clone()))
                })
            })
            .ok()
            .flatten();
        let known = route.is_some();
        self.write_line_routed(&mut route, Some(node), Some(app), Some(container), line, record);
        if !known {
            let _ = LAST_FILE.try_with(|last| {
                *last.borrow_mut() =
                    route.map(|FileRoute(f)| (me, node.into(), app.into(), container.into(), f))
            });
        }
    }

    /// [`write_line`](Self::write_line) with the caller's own memory of the file: `route`
    /// is the file these ids went to before (found and remembered if `None`). A caller that
    /// writes many records with the same ids (an actor's log context) finds the file once.
    pub fn write_line_routed(
        &self,
        route: &mut Option<FileRoute>,
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
        let (node, app, container) = route_ids(node, app_id, container_id);
        // Twice at most: a remembered file may have been closed since.
        for _ in 0..2 {
            let file = match route {
                Some(FileRoute(f)) => f.clone(),
                None => {
                    let key = if app.is_empty() {
                        file_key('r', node, "", "")
                    } else {
                        file_key('r', "", app, container)
                    };
                    let f = self.lookup(key, || {
                        (record_file(dir, node, app, container), owner(app, container))
                    });
                    *route = Some(FileRoute(f.clone()));
                    f
                }
            };
            match self.write_to(&file, line, true) {
                Written::Ok => {
                    if !self.dirty.load(Ordering::Relaxed) {
                        self.dirty.store(true, Ordering::Release);
                    }
                    return;
                }
                Written::Dropped => return,
                Written::Closed => *route = None,
            }
        }
        // Closed twice under it: more containers write at once than files may stay open, and
        // others' records took its place each time. This record gets a file of its own,
        // opened, written and closed at once, as a record of an ended container does.
        let once = Arc::new(LogFile::new(
            record_file(dir, node, app, container),
            owner(app, container),
            0,
            true,
        ));
        if let Written::Closed = self.write_to(&once, line, true) {
            self.drops.count(
                1,
                "a log file was closed twice while a record was being written".into(),
            );
        }
    }

    /// Appends application output to a container's `stdout` file (written out at once).
    pub fn append_stdout(&self, app_id: &str, container_id: &str, text: &str) {
        let Some(dir) = &self.dir else { return };
        for _ in 0..2 {
            let file = self.lookup(file_key('o', "", app_id, container_id), || {
                (
                    super::output::stdout_file(dir, app_id, container_id),
                    owner(app_id, container_id),
                )
            });
            match self.write_to(&file, text.as_bytes(), false) {
                Written::Ok | Written::Dropped => return,
                Written::Closed => {}
            }
        }
        self.drops.count(
            1,
            "a log file was closed twice while output was being written".into(),
        );
    }

    /// The file under `key`, made (not opened yet) by `make` if it is not in the map. Making
    /// one more than [`max_open_files`] first closes the least recently written.
    fn lookup(&self, key: String, make: impl FnOnce() -> (PathBuf, String)) -> Arc<LogFile> {
        let mut files = lock(&self.files);
        if let Some(f) = files.get(&key) {
            return f.clone();
        }
        let (path, owner) = make();
        let file = Arc::new(LogFile::new(
            path,
            owner,
            self.tick.load(Ordering::Relaxed),
            false,
        ));
        if !file.owner.is_empty() && lock(&self.closed).set.contains(&file.owner) {
            // Its container ended: this record is appended with a file of its own, closed
            // at once (see `write_to`), and the map keeps nothing open for it.
            file.once.store(true, Ordering::Relaxed);
            return file;
        }
        let mut evicted = Vec::new();
        while files.len() >= max_open_files() {
            let Some(oldest) = files
                .iter()
                .min_by_key(|(_, f)| f.last_tick.load(Ordering::Relaxed))
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            evicted.extend(files.remove(&oldest));
        }
        files.insert(key, file.clone());
        drop(files);
        for f in evicted {
            self.close_file(&f);
        }
        file
    }

    /// Appends `bytes` (and a newline if `record`) to `file`, opening it if needed. A
    /// container's output (`record` false) is written out at once.
    fn write_to(&self, file: &Arc<LogFile>, bytes: &[u8], record: bool) -> Written {
        // Stored only when it changes (once a tick): threads on other cores writing the same
        // file would otherwise pass the cache line back and forth on every record.
        let tick = self.tick.load(Ordering::Relaxed);
        if file.last_tick.load(Ordering::Relaxed) != tick {
            file.last_tick.store(tick, Ordering::Relaxed);
        }
        let mut state = lock(&file.state);
        match &*state {
            FileState::Closed => return Written::Closed,
            FileState::Failed { retry_at } if Instant::now() < *retry_at => {
                self.drops
                    .count(1, format!("cannot write log file {}", file.path.display()));
                return Written::Dropped;
            }
            FileState::Open(_) => {}
            FileState::New | FileState::Failed { .. } => match open(&file.path) {
                Ok(f) => {
                    *state = FileState::Open(OpenFile {
                        file: Arc::new(f),
                        buf: Vec::with_capacity(FILE_BUFFER),
                        buf_records: 0,
                        full: VecDeque::new(),
                    })
                }
                Err(e) => {
                    *state = FileState::Failed {
                        retry_at: Instant::now() + RETRY_OPEN,
                    };
                    self.drops
                        .count(1, format!("cannot open log file {}: {e}", file.path.display()));
                    return Written::Dropped;
                }
            },
        }
        let FileState::Open(open) = &mut *state else {
            return Written::Dropped;
        };
        // A full buffer goes to the flusher before this record would overflow it.
        let mut handed = false;
        let mut wake = false;
        if open.buf.len() + bytes.len() + 1 > FILE_BUFFER && !open.buf.is_empty() {
            let full = std::mem::replace(&mut open.buf, self.spare_buffer());
            let before = self.pending.fetch_add(full.len(), Ordering::Relaxed);
            wake = before < WAKE_FLUSHER_AT && before + full.len() >= WAKE_FLUSHER_AT;
            open.full.push_back((full, std::mem::take(&mut open.buf_records)));
            handed = true;
        }
        open.buf.extend_from_slice(bytes);
        if record {
            open.buf.push(b'\n');
            open.buf_records += 1;
        }
        let at_once = !record
            || file.once.load(Ordering::Relaxed)
            || (handed
                && (!self.flusher.load(Ordering::Acquire)
                    || self.pending.load(Ordering::Relaxed) > MAX_PENDING));
        if at_once {
            self.flush_file(file, &mut state);
            if file.once.load(Ordering::Relaxed) {
                *state = FileState::Closed;
            }
            // Whatever failed was counted as dropped: this record was taken.
            return Written::Ok;
        }
        if handed && open.full.len() == 1 {
            // The flusher is told once per file until it has written what the file had; it
            // looks at the files it was told of before it sleeps and at every tick, and is
            // woken only when what waits for it reaches WAKE_FLUSHER_AT.
            drop(state);
            lock(&self.ready.files).push(file.clone());
        }
        if wake {
            self.ready.bell.notify_one();
        }
        Written::Ok
    }

    /// Writes out what a file has not written yet (its full buffers, then the one being
    /// filled); the records are counted as dropped if that fails. Called with the file's
    /// state locked.
    fn flush_file(&self, file: &LogFile, state: &mut FileState) -> bool {
        let FileState::Open(open) = state else {
            return false;
        };
        if open.full.is_empty() && open.buf.is_empty() {
            return false;
        }
        let _io = lock(&file.io);
        let mut result = Ok(());
        if !open.full.is_empty() {
            let full = open.full.make_contiguous();
            let written = match write_all_gathered(&open.file, full) {
                Ok(()) => full.len(),
                Err((written, e)) => {
                    result = Err(e);
                    written
                }
            };
            let bytes: usize = full[..written].iter().map(|(b, _)| b.len()).sum();
            self.pending.fetch_sub(bytes, Ordering::Relaxed);
            self.keep_spare(open.full.drain(..written).map(|(b, _)| b));
        }
        if result.is_ok() && !open.buf.is_empty() {
            result = (&*open.file).write_all(&open.buf);
            if result.is_ok() {
                open.buf.clear();
                open.buf_records = 0;
            }
        }
        if let Err(e) = result {
            let lost = open.unwritten();
            self.fail(state, lost, &file.path, &e);
        }
        true
    }

    /// The flusher's part: writes out the full buffers of `file`, without holding its state
    /// while the system calls run (records keep being appended meanwhile).
    fn write_full(&self, file: &LogFile) {
        let mut state = lock(&file.state);
        let FileState::Open(open) = &mut *state else {
            // Closed or failed meanwhile: whoever did it wrote them out or counted them.
            return;
        };
        let full: Vec<(Vec<u8>, u64)> = open.full.drain(..).collect();
        if full.is_empty() {
            return;
        }
        let out = open.file.clone();
        let io = lock(&file.io);
        drop(state);
        let bytes: usize = full.iter().map(|(b, _)| b.len()).sum();
        self.pending.fetch_sub(bytes, Ordering::Relaxed);
        let (error, mut lost) = match write_all_gathered(&out, &full) {
            Ok(()) => (None, 0),
            Err((written, e)) => (Some(e), full[written..].iter().map(|(_, n)| n).sum()),
        };
        drop(io);
        self.keep_spare(full.into_iter().map(|(b, _)| b));
        if let Some(e) = error {
            let mut state = lock(&file.state);
            if let FileState::Open(open) = &*state {
                // The file is given up, with what it held since.
                lost += open.unwritten();
                self.fail(&mut state, lost, &file.path, &e);
            } else {
                self.drops.count(
                    lost,
                    format!("cannot write log file {}: {e}", file.path.display()),
                );
            }
        }
    }

    /// An empty buffer for a file's records: a spare one if any.
    fn spare_buffer(&self) -> Vec<u8> {
        lock(&self.spare)
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(FILE_BUFFER))
    }

    /// Keeps written-out `buffers` for reuse, up to [`MAX_SPARE`] (a rare long record's
    /// grown buffer is let go).
    fn keep_spare(&self, buffers: impl Iterator<Item = Vec<u8>>) {
        let mut spare = lock(&self.spare);
        for mut b in buffers {
            if spare.len() >= MAX_SPARE {
                break;
            }
            if b.capacity() == FILE_BUFFER {
                b.clear();
                spare.push(b);
            }
        }
    }

    /// Gives up a file that could not be written (tried again after [`RETRY_OPEN`]) and
    /// counts the `lost` records.
    fn fail(&self, state: &mut FileState, lost: u64, path: &Path, e: &std::io::Error) {
        if let FileState::Open(open) = state {
            let waiting: usize = open.full.iter().map(|(b, _)| b.len()).sum();
            self.pending.fetch_sub(waiting, Ordering::Relaxed);
        }
        // Dropping the open file writes nothing: what it held is written out or counted.
        *state = FileState::Failed {
            retry_at: Instant::now() + RETRY_OPEN,
        };
        self.drops
            .count(lost, format!("cannot write log file {}: {e}", path.display()));
    }

    /// Flushes and closes a file no longer in the map.
    fn close_file(&self, file: &LogFile) {
        let mut state = lock(&file.state);
        self.flush_file(file, &mut state);
        *state = FileState::Closed;
    }

    /// Closes the files of a container that ended (its records and its output). A record
    /// that comes for it later opens the file again.
    pub fn close_container(&self, app_id: &str, container_id: &str) {
        let owner = owner(app_id, container_id);
        if owner.is_empty() {
            return;
        }
        lock(&self.closed).insert(owner.clone());
        self.close_where(|f| f.owner == owner);
    }

    /// Closes the files nothing wrote to for [`IDLE_CLOSE`] (`tick` is the flusher's).
    fn close_idle(&self, tick: u64) {
        let idle_ticks = (IDLE_CLOSE.as_millis() / FLUSH_INTERVAL.as_millis()) as u64;
        self.close_where(|f| tick.saturating_sub(f.last_tick.load(Ordering::Relaxed)) >= idle_ticks);
    }

    fn close_where(&self, which: impl Fn(&LogFile) -> bool) {
        let closing: Vec<Arc<LogFile>> = {
            let mut files = lock(&self.files);
            let keys: Vec<String> = files
                .iter()
                .filter(|(_, f)| which(f))
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter().filter_map(|k| files.remove(k)).collect()
        };
        for f in closing {
            self.close_file(&f);
        }
    }

    /// Flushes every open file; answers how many had something to write.
    pub fn flush(&self) -> usize {
        let files: Vec<Arc<LogFile>> = lock(&self.files).values().cloned().collect();
        let mut written = 0;
        for f in files {
            let mut state = lock(&f.state);
            if self.flush_file(&f, &mut state) {
                written += 1;
            }
        }
        written
    }

    /// Every captured record so far (empty unless the sink captures).
    pub fn records(&self) -> Vec<Value> {
        self.capture.as_ref().map(|c| lock(c).clone()).unwrap_or_default()
    }

    /// The captured records from the `from`-th on (a watcher that keeps its place reads
    /// each record once instead of copying them all at every look).
    pub fn records_since(&self, from: usize) -> Vec<Value> {
        self.capture
            .as_ref()
            .map(|c| lock(c).get(from..).map(<[Value]>::to_vec).unwrap_or_default())
            .unwrap_or_default()
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

/// Opens a log file for appending: its directories 0750 and the file 0640, as YARN's
/// container logs (see [`super::perms`]).
fn open(path: &Path) -> std::io::Result<File> {
    if let Some(parent) = path.parent() {
        perms::create_dir_all(parent, perms::LOG_DIR_MODE)?;
    }
    perms::open_append(path, perms::LOG_FILE_MODE)
}

impl Drop for LogSink {
    fn drop(&mut self) {
        self.flush();
        self.drops.report(true);
        // The flusher finds the sink gone and ends.
        self.ready.bell.notify_one();
    }
}

type Routes = RwLock<HashMap<Arc<str>, Arc<LogSink>>>;

fn routes() -> &'static Routes {
    static ROUTES: OnceLock<Routes> = OnceLock::new();
    ROUTES.get_or_init(|| RwLock::new(HashMap::new()))
}

/// Bumped by every change of the routes, so a writer that remembers a cluster's sink knows
/// when to look it up again.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The routes' generation: it changes whenever a cluster's sink is registered or removed.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// Routes records of cluster `id` to `sink` from now on.
pub fn register(id: Arc<str>, sink: Arc<LogSink>) {
    let _bump = Bump;
    routes()
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id, sink);
}

/// Stops routing records of cluster `id` (they go to the console only).
pub fn unregister(id: &str) {
    let _bump = Bump;
    routes().write().unwrap_or_else(|p| p.into_inner()).remove(id);
}

/// Bumps the generation when dropped, once the change is made: a writer reads the
/// generation before it looks a sink up, so one that read the old generation looks again at
/// its next record, and one that read the new one found the new routes.
struct Bump;

impl Drop for Bump {
    fn drop(&mut self) {
        GENERATION.fetch_add(1, Ordering::AcqRel);
    }
}

/// The sink of cluster `id`, if registered.
pub fn sink_for(id: &str) -> Option<Arc<LogSink>> {
    routes()
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(id)
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink(dir: &Path) -> LogSink {
        LogSink::new(Some(dir.to_path_buf()), false, Arc::new(SystemTime::now))
    }

    fn record(sink: &LogSink, app: &str, container: &str, line: &str) {
        sink.write_line(Some("n1"), Some(app), Some(container), line.as_bytes(), None);
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn full_buffers_are_written_by_the_flusher_in_order_and_the_rest_when_the_sink_ends() {
        let dir = tempfile::tempdir().unwrap();
        let sink = Arc::new(sink(dir.path()));
        LogSink::start_flusher(&sink);
        let path = LogSink::file_for(dir.path(), Some("n1"), Some("app"), Some("c1"));
        // Two threads, each its own numbered records: each thread's appear in its order.
        let writers: Vec<_> = (0..2)
            .map(|t| {
                let sink = sink.clone();
                std::thread::spawn(move || {
                    for i in 0..3000 {
                        record(&sink, "app", "c1", &format!("{t} {i:05} {}", "x".repeat(60)));
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        // Full buffers reach the file without a flush being asked for.
        let deadline = Instant::now() + Duration::from_secs(20);
        while lines(&path).len() < 1000 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(lines(&path).len() >= 1000, "the flusher wrote the full buffers");
        // The last holder (this test, or the flusher for a moment) writes out the rest.
        drop(sink);
        let deadline = Instant::now() + Duration::from_secs(20);
        while lines(&path).len() < 6000 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        let got = lines(&path);
        assert_eq!(got.len(), 6000, "every record, once");
        for t in 0..2 {
            let mine: Vec<&String> = got.iter().filter(|l| l.starts_with(&format!("{t} "))).collect();
            let expected: Vec<String> = (0..3000)
                .map(|i| format!("{t} {i:05} {}", "x".repeat(60)))
                .collect();
            assert!(mine
                .iter()
                .map(|l| l.as_str())
                .eq(expected.iter().map(String::as_str)));
        }
    }

    #[test]
    fn a_container_that_ends_has_its_files_closed_and_later_records_still_appended() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let sink = sink(tmp.path());
        record(&sink, "app_1", "c_1", "first");
        sink.append_stdout("app_1", "c_1", "out\n");
        sink.write_line(Some("n1"), None, None, b"node record", None);
        assert_eq!(sink.open_files(), 3);

        sink.close_container("app_1", "c_1");
        assert_eq!(sink.open_files(), 1, "only the node's file stays open");

        // The NodeManager's record of the container's completion comes after it ended.
        record(&sink, "app_1", "c_1", "late");
        assert_eq!(sink.open_files(), 1, "a late record keeps nothing open");
        let path = LogSink::file_for(tmp.path(), Some("n1"), Some("app_1"), Some("c_1"));
        assert_eq!(lines(&path), ["first", "late"]);
        assert_eq!(sink.dropped(), 0);
    }

    #[test]
    fn a_remembered_route_is_used_until_its_file_closes_then_found_again() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let sink = sink(tmp.path());
        let mut route = None;
        let write = |route: &mut Option<FileRoute>, line: &str| {
            sink.write_line_routed(
                route,
                Some("n1"),
                Some("app_1"),
                Some("c_1"),
                line.as_bytes(),
                None,
            )
        };
        write(&mut route, "first");
        let remembered = route.clone().expect("the file is remembered");
        write(&mut route, "second");
        assert!(
            Arc::ptr_eq(&remembered.0, &route.clone().unwrap().0),
            "no second lookup"
        );
        sink.close_container("app_1", "c_1");
        write(&mut route, "late");
        assert!(
            !Arc::ptr_eq(&remembered.0, &route.clone().unwrap().0),
            "found again once closed"
        );
        assert_eq!(sink.open_files(), 0, "a late record keeps nothing open");
        let path = LogSink::file_for(tmp.path(), Some("n1"), Some("app_1"), Some("c_1"));
        assert_eq!(lines(&path), ["first", "second", "late"]);
        assert_eq!(sink.dropped(), 0);
        let before = generation();
        register(
            Arc::from("gen-test"),
            Arc::new(LogSink::new(None, false, Arc::new(SystemTime::now))),
        );
        unregister("gen-test");
        assert!(generation() >= before + 2, "every change of the routes is seen");
    }

    #[test]
    fn a_flush_counts_the_files_it_wrote_which_spaces_the_flushers_next() {
        // The flusher waits a tick more per FILES_PER_TICK files its last flush wrote: the
        // count is of files that had records waiting, not of files open.
        let tmp = tempfile::tempdir().expect("tempdir");
        let sink = sink(tmp.path());
        for c in 0..3 {
            record(&sink, "app_1", &format!("c_{c}"), "first");
        }
        assert_eq!(sink.flush(), 3);
        assert_eq!(sink.flush(), 0, "nothing new to write");
        record(&sink, "app_1", "c_1", "second");
        assert_eq!(sink.flush(), 1);
        let file = LogSink::file_for(tmp.path(), None, Some("app_1"), Some("c_1"));
        assert_eq!(lines(&file), ["first", "second"]);
    }

    #[test]
    fn threads_writing_more_containers_than_files_may_stay_open_lose_no_record() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let sink = Arc::new(sink(tmp.path()));
        let containers = max_open_files() + 64;
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let sink = sink.clone();
                std::thread::spawn(move || {
                    for round in 0..3 {
                        for c in (t..containers).step_by(4).chain((0..containers).rev().step_by(7)) {
                            record(&sink, "app_1", &format!("c_{c}"), &format!("t{t}r{round}"));
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        sink.flush();
        assert_eq!(sink.dropped(), 0);
        assert!(sink.open_files() <= max_open_files());
        let written: usize = (0..containers)
            .map(|c| {
                lines(&LogSink::file_for(
                    tmp.path(),
                    None,
                    Some("app_1"),
                    Some(&format!("c_{c}")),
                ))
                .len()
            })
            .sum();
        let expected: usize = (0..4)
            .map(|t| 3 * ((t..containers).step_by(4).count() + (0..containers).rev().step_by(7).count()))
            .sum();
        assert_eq!(written, expected);
    }

    #[test]
    fn no_more_than_the_cap_of_files_is_open_and_no_record_is_lost() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let sink = sink(tmp.path());
        let containers = max_open_files() + 40;
        for round in 0..2 {
            for c in 0..containers {
                record(&sink, "app_1", &format!("c_{c}"), &format!("r{round}"));
                assert!(sink.open_files() <= max_open_files());
            }
        }
        sink.flush();
        for c in 0..containers {
            let path = LogSink::file_for(tmp.path(), None, Some("app_1"), Some(&format!("c_{c}")));
            assert_eq!(lines(&path), ["r0", "r1"], "container c_{c}");
        }
        assert_eq!(sink.dropped(), 0);
    }

    #[test]
    fn records_that_cannot_be_written_are_counted() {
        let tmp = tempfile::tempdir().expect("tempdir");
        // The log directory is a regular file: nothing under it can be opened.
        let not_a_dir = tmp.path().join("plain");
        std::fs::write(&not_a_dir, "x").expect("write");
        let sink = sink(&not_a_dir);
        for i in 0..5 {
            record(&sink, "app_1", "c_1", &format!("r{i}"));
        }
        sink.write_line(Some("n1"), None, None, b"node record", None);
        assert_eq!(sink.dropped(), 6);
    }

    #[test]
    fn files_nothing_wrote_to_close_when_idle() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let sink = sink(tmp.path());
        record(&sink, "app_1", "c_1", "old");
        let idle_ticks = (IDLE_CLOSE.as_millis() / FLUSH_INTERVAL.as_millis()) as u64;
        sink.tick.store(idle_ticks, Ordering::Relaxed);
        record(&sink, "app_1", "c_2", "recent");
        sink.close_idle(idle_ticks);
        assert_eq!(sink.open_files(), 1, "c_1 was idle, c_2 was not");
        record(&sink, "app_1", "c_1", "again");
        sink.flush();
        let path = LogSink::file_for(tmp.path(), None, Some("app_1"), Some("c_1"));
        assert_eq!(lines(&path), ["old", "again"]);
    }
}
