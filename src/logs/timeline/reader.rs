//! [`TimelineReader`]: an application's timeline kept up to date from its files under a log
//! directory, reading at each [`TimelineReader::refresh`] only what was appended since the
//! last one (each file's offset is kept; a cut-off last line waits for its end).
//!
//! The files (the layout `logs::sink` writes): every container file of the application
//! (`apps/<app>/<container>/sparkyard.jsonl`: its AM, driver and executors), and the node
//! files (`nodes/*.jsonl`), of which it takes the records that carry the application's id
//! and, as `sparkyard logs --app --supervision` does, the records that concern it from the
//! processes it ran in (told apart by their `cluster`): the submit side's (all of them: in
//! client mode its driver's jobs, stages, tasks and executors), and the node-level
//! actors' lifecycle records up to the application's last record (those from before its
//! first record only for the supervision tree) and their supervision records while it ran. A node-file record that cannot be placed yet (its process has not
//! been seen logging about the application, or it is later than the application's last
//! record so far) waits, at most [`MAX_PENDING`] of them, for later refreshes.
//!
//! Nothing outside the log directory is read (a link that leads out is skipped). Lines that
//! are not JSON records are skipped and counted; the first few are kept as warnings.
//!
//! Layer: logs, the bottom layer.

use std::collections::{HashSet, VecDeque};
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde_json::Value;

use super::model::{field, Timeline, TimelineBuilder};
use crate::logs::reader::{parse_line, Fence, Parsed};
use crate::logs::sink::CONTAINER_LOG_FILE;
use crate::logs::supervision::is_supervision_record;

/// The most node-file records waiting to be placed (the oldest are dropped).
pub const MAX_PENDING: usize = 10_000;
/// The most warnings kept about skipped lines and files.
pub const MAX_WARNINGS: usize = 20;
/// The longest line read (longer ones are skipped): a bound on memory per line.
pub const MAX_LINE: usize = 1 << 20;

/// One file being read incrementally.
struct Tail {
    path: PathBuf,
    /// A node file (its records are placed by the application's span), not a container's.
    node_file: bool,
    /// Bytes consumed so far (complete lines only).
    pos: u64,
    line_no: u64,
    /// Time of the last record with a readable `ts` (for records without one).
    last: i64,
    /// Reported as unreadable; not tried again.
    failed: bool,
}

/// What the reader learned about the application from its own records.
#[derive(Default)]
struct Span {
    clusters: HashSet<String>,
    first: Option<i64>,
    last: Option<i64>,
}

/// Whether a node-file record without the application's id belongs in its timeline.
enum Place {
    Take,
    /// Only for the supervision tree (a lifecycle record from before the application).
    Tree,
    Drop,
    Wait,
}

impl Span {
    fn note(&mut self, record: &Value, at: i64) {
        if let Some(c) = field(record, "cluster") {
            if !self.clusters.contains(c) {
                self.clusters.insert(c.to_string());
            }
        }
        self.first = Some(self.first.map_or(at, |f| f.min(at)));
        self.last = Some(self.last.map_or(at, |l| l.max(at)));
    }

    fn place(&self, record: &Value, at: i64) -> Place {
        let (Some(first), Some(last)) = (self.first, self.last) else {
            return Place::Wait;
        };
        if !field(record, "cluster").is_some_and(|c| self.clusters.contains(c)) {
            return Place::Wait;
        }
        if is_submit_side(record) {
            return Place::Take;
        }
        if at > last {
            return Place::Wait;
        }
        if at < first {
            return if is_lifecycle(record) {
                Place::Tree
            } else {
                Place::Drop
            };
        }
        Place::Take
    }
}

fn is_lifecycle(record: &Value) -> bool {
    matches!(
        field(record, "event"),
        Some("actor_started" | "actor_restarted" | "actor_failed" | "actor_stopped")
    )
}

/// A record of the submit side (`sparkyard submit`'s actors: its client, and in client
/// mode the driver).
fn is_submit_side(record: &Value) -> bool {
    let actor = field(record, "actor").unwrap_or("");
    actor == "/submit" || actor.starts_with("/submit/")
}

/// Whether a node-file record without an application id could concern the application.
fn node_candidate(record: &Value) -> bool {
    is_lifecycle(record) || is_supervision_record(record) || is_submit_side(record)
}

/// Milliseconds since the epoch of a record's `ts`.
fn record_ms(record: &Value) -> Option<i64> {
    let ts = field(record, "ts")?;
    let time = humantime::parse_rfc3339_weak(ts).ok()?;
    let ms = match time.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    };
    Some(ms)
}

/// An application's timeline, read from a log directory and kept up to date.
pub struct TimelineReader {
    dir: PathBuf,
    app_id: String,
    builder: TimelineBuilder,
    files: Vec<Tail>,
    known: HashSet<PathBuf>,
    fence: Fence,
    span: Span,
    pending: VecDeque<(i64, Value)>,
    pending_dropped: u64,
    app_dir_found: bool,
    skipped: u64,
    warnings: Vec<String>,
}

impl TimelineReader {
    /// A reader of application `app_id`'s records under `log_dir`; nothing is read before
    /// the first [`refresh`](Self::refresh).
    pub fn new(log_dir: &Path, app_id: &str) -> TimelineReader {
        TimelineReader {
            dir: log_dir.to_path_buf(),
            app_id: app_id.to_string(),
            builder: TimelineBuilder::new(app_id),
            files: Vec::new(),
            known: HashSet::new(),
            fence: Fence::new(log_dir),
            span: Span::default(),
            pending: VecDeque::new(),
            pending_dropped: 0,
            app_dir_found: false,
            skipped: 0,
            warnings: Vec::new(),
        }
    }

    /// Reads what was appended (and the files created) since the last call and answers the
    /// timeline. Fails, with one line, when the log directory is missing or the application
    /// left no records in it.
    pub fn refresh(&mut self) -> Result<&Timeline, String> {
        let bad = self.app_id.is_empty()
            || self.app_id == "."
            || self.app_id == ".."
            || self
                .app_id
                .chars()
                .any(|c| c == '/' || c == '\\' || c.is_control());
        if bad {
            return Err(format!(
                "invalid application id {:?}: expected a plain id such as application_1700000000000_0001",
                self.app_id
            ));
        }
        match fs::metadata(&self.dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("log directory {} is not a directory", self.dir.display())),
            Err(_) => return Err(format!("log directory {} does not exist", self.dir.display())),
        }
        self.discover();
        for i in 0..self.files.len() {
            self.read(i);
        }
        self.place_pending();
        if self.span.first.is_none() && !self.app_dir_found {
            return Err(format!(
                "no logs for application {} under {}",
                self.app_id,
                self.dir.display()
            ));
        }
        Ok(self.builder.timeline())
    }

    /// The timeline as of the last refresh.
    pub fn timeline(&mut self) -> &Timeline {
        self.builder.timeline()
    }

    /// Lines skipped (not JSON records, too long) and files that could not be read.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The first [`MAX_WARNINGS`] of them, one line each.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Node-file records dropped while waiting to be placed (over [`MAX_PENDING`]).
    pub fn pending_dropped(&self) -> u64 {
        self.pending_dropped
    }

    fn warn(&mut self, line: String) {
        self.skipped += 1;
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(line);
        }
    }

    fn entries(&mut self, d: &Path) -> Vec<PathBuf> {
        let mut sink = io::sink();
        if !self.fence.allows(d, &mut sink) {
            return Vec::new();
        }
        let Ok(read) = fs::read_dir(d) else {
            return Vec::new();
        };
        let mut v: Vec<PathBuf> = read.filter_map(Result::ok).map(|e| e.path()).collect();
        v.sort();
        v.retain(|p| self.fence.allows(p, &mut sink));
        v
    }

    /// Finds files not known yet: node files, and the application's container files.
    fn discover(&mut self) {
        let mut new = Vec::new();
        for p in self.entries(&self.dir.join("nodes")) {
            if p.extension().is_some_and(|e| e == "jsonl") && p.is_file() {
                new.push((p, true));
            }
        }
        let app_dir = self.dir.join("apps").join(&self.app_id);
        if app_dir.is_dir() {
            self.app_dir_found = true;
            for c in self.entries(&app_dir) {
                let file = c.join(CONTAINER_LOG_FILE);
                if file.is_file() && self.fence.allows(&file, &mut io::sink()) {
                    new.push((file, false));
                }
            }
        }
        for (path, node_file) in new {
            if self.known.insert(path.clone()) {
                self.files.push(Tail {
                    path,
                    node_file,
                    pos: 0,
                    line_no: 0,
                    last: 0,
                    failed: false,
                });
            }
        }
    }

    /// Reads the complete lines appended to file `i` since the last time.
    fn read(&mut self, i: usize) {
        if self.files[i].failed {
            return;
        }
        let path = self.files[i].path.clone();
        let opened = File::open(&path).and_then(|mut f| {
            let len = f.metadata()?.len();
            if len < self.files[i].pos {
                // Truncated or replaced: read it again from the start.
                self.files[i].pos = 0;
                self.files[i].line_no = 0;
            }
            f.seek(SeekFrom::Start(self.files[i].pos))?;
            Ok(f)
        });
        let file = match opened {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(e) => {
                self.files[i].failed = true;
                self.warn(format!("{}: skipped: cannot read file ({e})", path.display()));
                return;
            }
        };
        let mut reader = BufReader::new(file);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = match (&mut reader)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut buf)
            {
                Ok(n) => n,
                Err(e) => {
                    self.files[i].failed = true;
                    self.warn(format!(
                        "{}: skipped the rest: cannot read file ({e})",
                        path.display()
                    ));
                    return;
                }
            };
            if n == 0 {
                return;
            }
            if buf.last() != Some(&b'\n') {
                if buf.len() > MAX_LINE {
                    // Too long: skip to the end of this line.
                    let mut rest = Vec::new();
                    let more = reader.read_until(b'\n', &mut rest).unwrap_or(0);
                    if rest.last() != Some(&b'\n') {
                        return; // its end is not written yet
                    }
                    self.files[i].pos += (n + more) as u64;
                    self.files[i].line_no += 1;
                    let line = self.files[i].line_no;
                    self.warn(format!(
                        "{}:{line}: skipped: a line longer than {MAX_LINE} bytes",
                        path.display()
                    ));
                    continue;
                }
                // A cut-off last line: wait for the rest of it.
                return;
            }
            self.files[i].pos += n as u64;
            self.files[i].line_no += 1;
            let text = buf.strip_suffix(b"\n").unwrap_or(&buf);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            match parse_line(text, true) {
                Parsed::Blank => {}
                Parsed::Bad(reason) => {
                    let line = self.files[i].line_no;
                    self.warn(format!(
                        "{}:{line}: skipped: not a JSON record ({reason})",
                        path.display()
                    ));
                }
                Parsed::Record(record, _) => {
                    let at = record_ms(&record).unwrap_or(self.files[i].last);
                    self.files[i].last = at;
                    self.take(record, at, self.files[i].node_file);
                }
            }
        }
    }

    /// Hands a record to the builder, or keeps a node record that may concern the
    /// application for [`Self::place_pending`].
    fn take(&mut self, record: Value, at: i64, node_file: bool) {
        let own = field(&record, "app_id").map(|a| a == self.app_id);
        if !node_file || own == Some(true) {
            self.span.note(&record, at);
            self.builder.push(&record, at);
            return;
        }
        if own.is_some() || !node_candidate(&record) {
            return;
        }
        if let Some((at, record)) = self.place(at, record) {
            if self.pending.len() >= MAX_PENDING {
                self.pending.pop_front();
                self.pending_dropped += 1;
            }
            self.pending.push_back((at, record));
        }
    }

    /// Hands a node record to the builder as the application's span decides, or gives it
    /// back to wait.
    fn place(&mut self, at: i64, record: Value) -> Option<(i64, Value)> {
        match self.span.place(&record, at) {
            // The submit side's records are the application's own (in client mode, its
            // driver's jobs, stages, tasks and executors).
            Place::Take if is_submit_side(&record) => self.builder.push(&record, at),
            Place::Take => self.builder.push_related(&record, at),
            Place::Tree => self.builder.push_tree(&record, at),
            Place::Drop => {}
            Place::Wait => return Some((at, record)),
        }
        None
    }

    /// Places the waiting node records the application's span now decides.
    fn place_pending(&mut self) {
        let mut still = VecDeque::new();
        while let Some((at, record)) = self.pending.pop_front() {
            if let Some(wait) = self.place(at, record) {
                still.push_back(wait);
            }
        }
        self.pending = still;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::timeline::MarkKind;
    use std::io::Write as _;

    const APP: &str = "application_1_0001";
    const AM: &str = "container_1_0001_01_000001";

    fn line(ts: &str, extra: &str) -> String {
        format!("{{\"ts\":\"2026-01-01T00:00:{ts}Z\",\"level\":\"INFO\",\"cluster\":\"c1\",{extra}}}\n")
    }

    fn append(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    fn am_file(dir: &Path) -> PathBuf {
        dir.join("apps").join(APP).join(AM).join(CONTAINER_LOG_FILE)
    }

    fn own(msg: &str, more: &str) -> String {
        format!("\"msg\":\"{msg}\",\"actor\":\"/node/nm-host1/{AM}/am/driver/dag-scheduler\",\"app_id\":\"{APP}\",\"attempt\":1,\"container_id\":\"{AM}\"{more}")
    }

    #[test]
    fn a_refresh_reads_only_what_was_appended_and_waits_for_a_cut_off_line() {
        let dir = tempfile::tempdir().unwrap();
        let am = am_file(dir.path());
        append(
            &am,
            &line(
                "01.000",
                &own("Got job 0 (count at X) with 2 output partitions", ",\"job_id\":0"),
            ),
        );
        let mut r = TimelineReader::new(dir.path(), APP);
        let t = r.refresh().unwrap();
        assert_eq!((t.jobs.len(), t.records), (1, 1));
        assert_eq!(t.start, 1_767_225_601_000);
        // Half a line: not read until its end is written.
        let rest = line(
            "02.500",
            &own("Job 0 finished: count at X, took 1500.0 ms", ",\"job_id\":0"),
        );
        let (head, tail) = rest.split_at(30);
        append(&am, head);
        let t = r.refresh().unwrap();
        assert_eq!((t.records, t.jobs[0].end), (1, None));
        append(&am, tail);
        let t = r.refresh().unwrap();
        assert_eq!(t.records, 2, "the first record was not read twice");
        assert_eq!(t.jobs[0].end, Some(1_767_225_602_500));
        // A container created later is found; a bad line is skipped and said once.
        let exec = dir
            .path()
            .join("apps")
            .join(APP)
            .join("container_1_0001_01_000002")
            .join(CONTAINER_LOG_FILE);
        append(&exec, "not json\n");
        append(&exec, &line("03.000", "\"msg\":\"failed: killed\",\"event\":\"actor_failed\",\"actor\":\"/node/nm-host2/container_1_0001_01_000002/executor-1\",\"incarnation\":1,\"reason\":\"killed by t\""));
        let t = r.refresh().unwrap();
        assert_eq!(t.marks.len(), 1);
        assert_eq!(t.actors.len(), 1);
        assert_eq!(r.skipped(), 1);
        assert!(
            r.warnings()[0].contains(":1: skipped: not a JSON record"),
            "{:?}",
            r.warnings()
        );
        assert_eq!(r.refresh().unwrap().records, 3);
    }

    #[test]
    fn node_records_count_when_they_concern_the_application() {
        let dir = tempfile::tempdir().unwrap();
        let node = dir.path().join("nodes").join("rmhost.jsonl");
        let rm = |ts: &str, event: &str, inc: u32, cluster: &str| {
            line(ts, &format!("\"msg\":\"{event}\",\"event\":\"{event}\",\"actor\":\"/node/rm\",\"actor_type\":\"ResourceManager\",\"incarnation\":{inc},\"reason\":\"killed by t\"")).replace("\"c1\"", &format!("\"{cluster}\""))
        };
        // Before the application: the RM's start (tree) and a kill (not this app's story).
        append(&node, &rm("00.100", "actor_started", 1, "c1"));
        append(&node, &rm("00.200", "actor_failed", 1, "c1"));
        append(&node, &rm("00.300", "actor_restarted", 2, "c1"));
        // Another process's RM, never part of it.
        append(&node, &rm("01.500", "actor_failed", 1, "other"));
        append(&node, &line("01.000", &format!("\"msg\":\"Application {APP} submitted\",\"actor\":\"/node/rm\",\"actor_type\":\"ResourceManager\",\"app_id\":\"{APP}\"")));
        let mut r = TimelineReader::new(dir.path(), APP);
        let t = r.refresh().unwrap();
        assert_eq!(
            t.start, 1_767_225_601_000,
            "the node's earlier records do not move the start"
        );
        let tree: Vec<(&str, u64, bool)> = t
            .actors
            .iter()
            .map(|a| (a.path.as_str(), a.incarnation, a.alive))
            .collect();
        assert_eq!(tree, [("/node/rm", 2, true)]);
        assert!(t.marks.is_empty(), "{:?}", t.marks);
        // A kill of the RM later than anything of the application waits; once the
        // application's records pass it, it is its mark.
        append(&node, &rm("02.000", "actor_failed", 2, "c1"));
        assert!(r.refresh().unwrap().marks.is_empty());
        append(
            &am_file(dir.path()),
            &line("03.000", &own("Job 0 finished: x", ",\"job_id\":0")),
        );
        let t = r.refresh().unwrap();
        let marks: Vec<(MarkKind, &str)> = t.marks.iter().map(|m| (m.kind, m.actor.as_str())).collect();
        assert_eq!(marks, [(MarkKind::Failure, "/node/rm")]);
        assert!(!t.actors[0].alive);
    }

    #[test]
    fn in_client_mode_the_submit_sides_driver_is_the_applications() {
        let dir = tempfile::tempdir().unwrap();
        let node = dir.path().join("nodes").join("laptop.jsonl");
        let submit =
            |ts: &str, cluster: &str, body: &str| line(ts, body).replace("\"c1\"", &format!("\"{cluster}\""));
        let driver = "\"actor\":\"/submit/driver/dag-scheduler\",\"actor_type\":\"DAGScheduler\"";
        // Another submit process's driver, never this application's.
        append(
            &node,
            &submit(
                "00.500",
                "s2",
                &format!("\"msg\":\"Got job 9 (x) with 1 output partitions\",{driver},\"job_id\":9"),
            ),
        );
        // The driver starts before its client submits the application.
        append(&node, &submit("00.900", "s1", "\"msg\":\"actor_started\",\"event\":\"actor_started\",\"actor\":\"/submit/driver\",\"incarnation\":1"));
        append(&node, &submit("01.000", "s1", &format!("\"msg\":\"Submitting application {APP} to ResourceManager\",\"actor\":\"/submit/client\",\"app_id\":\"{APP}\"")));
        append(
            &node,
            &submit(
                "02.000",
                "s1",
                &format!("\"msg\":\"Got job 0 (count at X) with 2 output partitions\",{driver},\"job_id\":0"),
            ),
        );
        let mut r = TimelineReader::new(dir.path(), APP);
        let t = r.refresh().unwrap();
        assert_eq!(t.jobs.iter().map(|j| j.id).collect::<Vec<_>>(), [0]);
        assert_eq!(
            t.start, 1_767_225_600_900,
            "the driver's start is the application's"
        );
        assert_eq!(
            t.actors.iter().map(|a| a.path.as_str()).collect::<Vec<_>>(),
            ["/submit/driver"]
        );
        append(
            &node,
            &submit(
                "03.000",
                "s1",
                &format!("\"msg\":\"Job 0 finished: count at X, took 1000.0 ms\",{driver},\"job_id\":0"),
            ),
        );
        assert_eq!(r.refresh().unwrap().jobs[0].end, Some(1_767_225_603_000));
    }

    #[test]
    fn a_reader_can_be_shared_with_a_web_servers_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<TimelineReader>();
        send_sync::<crate::logs::timeline::Timeline>();
    }

    #[test]
    fn an_application_without_records_or_a_missing_directory_is_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = TimelineReader::new(dir.path(), APP);
        let e = r.refresh().unwrap_err();
        assert_eq!(
            e,
            format!("no logs for application {APP} under {}", dir.path().display())
        );
        let mut r = TimelineReader::new(&dir.path().join("nope"), APP);
        assert!(r.refresh().unwrap_err().contains("does not exist"));
        let mut r = TimelineReader::new(dir.path(), "../etc");
        assert!(r
            .refresh()
            .unwrap_err()
            .starts_with("invalid application id \"../etc\""));
    }

    #[test]
    fn a_truncated_file_is_read_again_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let am = am_file(dir.path());
        append(
            &am,
            &line(
                "01.000",
                &own("Got job 0 (a) with 1 output partitions", ",\"job_id\":0"),
            ),
        );
        append(
            &am,
            &line(
                "01.100",
                &own("Got job 1 (b) with 1 output partitions", ",\"job_id\":1"),
            ),
        );
        let mut r = TimelineReader::new(dir.path(), APP);
        assert_eq!(r.refresh().unwrap().jobs.len(), 2);
        fs::write(
            &am,
            line(
                "05.000",
                &own("Got job 2 (c) with 1 output partitions", ",\"job_id\":2"),
            ),
        )
        .unwrap();
        let t = r.refresh().unwrap();
        assert_eq!(t.jobs.iter().map(|j| j.id).collect::<Vec<_>>(), [0, 1, 2]);
    }
}
