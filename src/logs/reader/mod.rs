//! `sparkyard logs`: reads the JSON-lines logs that sparkyard actors write
//! and prints them, either grouped per node file and per container the way
//! `yarn logs -applicationId <id>` prints aggregated container logs, or as raw
//! JSON lines merged across files in timestamp order. `--supervision` prints only the
//! story of kills, failures, restarts and escalations (see [`super::supervision`]).
//!
//! One file per concern: `args` (the arguments, filters and errors), `tail` (a file read
//! line by line while it grows), `merge` (the `--json` merge in time order) and `print`
//! (the grouped human output); this module finds the files and drives them.
//!
//! Layer: logs (the bottom layer: it reads what `logs::writer` wrote).
//!
//! Layout of a log directory:
//!
//! ```text
//! <dir>/nodes/<node>.jsonl                              actors outside any container
//! <dir>/apps/<app_id>/<container_id>/sparkyard.jsonl    actors inside that container
//! <dir>/apps/<app_id>/<container_id>/stdout             the application's own output
//! ```
//!
//! Files are read line by line and may still be growing. Lines that are not
//! JSON objects, and files that cannot be read, are reported on the error
//! stream and skipped; nothing in the input can stop or crash the reader.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

mod args;
mod fence;
mod merge;
mod print;
mod tail;

pub use args::*;
pub(crate) use fence::Fence;
use merge::*;
use print::*;
use tail::*;
pub(super) use tail::{parse_line, warn_skipped, Parsed};

/// How often `--follow` looks for appended lines and new files.
pub const FOLLOW_POLL_INTERVAL: Duration = Duration::from_millis(250);

pub use super::glob::glob_match;
use super::sink::{CONTAINER_LOG_FILE as CONTAINER_LOG, CONTAINER_STDOUT_FILE as STDOUT_LOG};

/// Runs `sparkyard logs`. With `--follow` this only returns on an error
/// (typically a closed output pipe); the process is expected to be
/// interrupted.
pub fn run(args: &LogsArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), LogsError> {
    run_until(args, out, err, FOLLOW_POLL_INTERVAL, &|| false)
}

/// [`run`] with a controllable follow loop: after printing what exists, and
/// only with `--follow`, it asks `stop` before each poll, sleeps
/// `poll_interval`, then prints whatever was appended or created meanwhile.
/// It returns once `stop` answers true.
pub fn run_until(
    args: &LogsArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
    poll_interval: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<(), LogsError> {
    let filter = Filter::from_args(args)?;
    let dir = resolve_log_dir(args.log_dir.as_deref());
    match fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(LogsError::NotADirectory(dir)),
        Err(_) => return Err(LogsError::MissingLogDir(dir)),
    }

    let mut out = BufWriter::new(out);
    if let (Some(file), Some(app)) = (&args.timeline, &filter.app) {
        super::timeline::write_svg(&dir, app, file, &mut out, err)?;
        out.flush()?;
        return Ok(());
    }
    if args.supervision {
        super::supervision::run(&dir, &filter, args.json, &mut out, err)?;
        out.flush()?;
        return Ok(());
    }
    let mut session = Session::new(dir, filter, args.json);
    session.discover(err);
    session.read_all(&mut out, err, args.follow)?;
    session.check_found()?;

    if args.follow {
        follow(&mut session, &mut out, err, poll_interval, stop)?;
    }
    session.printer.close(&mut out)?;
    out.flush()?;
    Ok(())
}

/// The `--follow` loop: poll until `stop` says so, flushing after every
/// round so that output appears promptly.
fn follow(
    session: &mut Session,
    out: &mut dyn Write,
    err: &mut dyn Write,
    poll_interval: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<(), LogsError> {
    out.flush()?;
    while !stop() {
        std::thread::sleep(poll_interval);
        session.discover(err);
        session.read_all(out, err, true)?;
        out.flush()?;
    }
    Ok(())
}

/// Everything `sparkyard logs` knows about one log directory while reading it.
struct Session {
    dir: PathBuf,
    filter: Filter,
    /// `filter` without the location conditions, for container files.
    container_filter: Filter,
    json: bool,
    /// Known files in output order.
    sources: Vec<Source>,
    known: HashSet<PathBuf>,
    /// Directories already reported as unlistable.
    reported: HashSet<PathBuf>,
    /// Keeps the reading inside `dir`.
    fence: Fence,
    /// Node of each container, from the first record of its records file.
    nodes: HashMap<Origin, String>,
    found_container: bool,
    printed_any: bool,
    printer: HumanPrinter,
}

impl Session {
    fn new(dir: PathBuf, filter: Filter, json: bool) -> Session {
        let container_filter = filter.inside_container();
        Session {
            fence: Fence::new(&dir),
            dir,
            filter,
            container_filter,
            json,
            sources: Vec::new(),
            known: HashSet::new(),
            reported: HashSet::new(),
            nodes: HashMap::new(),
            found_container: false,
            printed_any: false,
            printer: HumanPrinter::new(),
        }
    }

    /// Sorted entries of `dir`; missing directories are silently empty,
    /// other failures are reported once.
    fn list(&mut self, dir: &Path, err: &mut dyn Write) -> Vec<(String, PathBuf)> {
        if !self.fence.allows(dir, err) {
            return Vec::new();
        }
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => {
                if e.kind() != io::ErrorKind::NotFound && self.reported.insert(dir.to_path_buf()) {
                    let _ = writeln!(
                        err,
                        "sparkyard logs: {}: skipped: cannot list directory ({e})",
                        dir.display()
                    );
                }
                return Vec::new();
            }
        };
        let mut names: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            .map(|entry| (entry.file_name().to_string_lossy().into_owned(), entry.path()))
            .collect();
        names.sort();
        names.retain(|(_, path)| self.fence.allows(path, err));
        names
    }

    /// Finds the files to read (again, when following, to pick up new ones).
    fn discover(&mut self, err: &mut dyn Write) {
        let mut added = false;

        let nodes_dir = self.dir.join("nodes");
        for (name, path) in self.list(&nodes_dir, err) {
            let Some(node) = name.strip_suffix(".jsonl") else {
                continue;
            };
            if node.is_empty() || !path.is_file() {
                continue;
            }
            let origin = Origin::Node {
                node: node.to_owned(),
            };
            added |= self.add(origin, Kind::Records, path, name.clone());
        }

        let apps_dir = self.dir.join("apps");
        let apps = match &self.filter.app {
            Some(app) => vec![(app.clone(), apps_dir.join(app))],
            None => self.list(&apps_dir, err),
        };
        for (app, app_dir) in apps {
            if !app_dir.is_dir() || !self.fence.allows(&app_dir, err) {
                continue;
            }
            let containers = match &self.filter.container {
                Some(container) => vec![(container.clone(), app_dir.join(container))],
                None => self.list(&app_dir, err),
            };
            for (container, container_dir) in containers {
                if !container_dir.is_dir() || !self.fence.allows(&container_dir, err) {
                    continue;
                }
                self.found_container = true;
                let origin = Origin::Container {
                    container,
                    app: app.clone(),
                };
                let records = container_dir.join(CONTAINER_LOG);
                if records.is_file() && self.fence.allows(&records, err) {
                    added |= self.add(origin.clone(), Kind::Records, records, CONTAINER_LOG.to_owned());
                }
                let stdout = container_dir.join(STDOUT_LOG);
                if !self.json
                    && self.filter.shows_stdout()
                    && stdout.is_file()
                    && self.fence.allows(&stdout, err)
                {
                    added |= self.add(origin, Kind::Stdout, stdout, STDOUT_LOG.to_owned());
                }
            }
        }

        if added {
            self.sources.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        }
    }

    fn add(&mut self, origin: Origin, kind: Kind, path: PathBuf, log_type: String) -> bool {
        if !self.known.insert(path.clone()) {
            return false;
        }
        self.sources.push(Source::new(origin, kind, path, log_type));
        true
    }

    /// Reads every file from where it was left and prints what matches.
    /// `following` holds cut-off last lines back until they are complete.
    fn read_all(
        &mut self,
        out: &mut dyn Write,
        err: &mut dyn Write,
        following: bool,
    ) -> Result<(), LogsError> {
        for src in &mut self.sources {
            src.restart_if_truncated(err);
        }
        if self.json {
            self.json_merge(out, err, following)
        } else {
            self.human(out, err, following)
        }
    }

    fn human(&mut self, out: &mut dyn Write, err: &mut dyn Write, following: bool) -> Result<(), LogsError> {
        let Session {
            filter,
            container_filter,
            sources,
            nodes,
            printer,
            printed_any,
            ..
        } = self;
        for src in sources.iter_mut() {
            match src.kind {
                Kind::Records => {
                    let filter = match src.origin {
                        Origin::Node { .. } => &*filter,
                        Origin::Container { .. } => &*container_filter,
                    };
                    while let Some((record, _)) = next_matching(src, filter, nodes, following, err) {
                        printer.record(out, src, nodes, &record)?;
                        *printed_any = true;
                    }
                }
                Kind::Stdout => {
                    while src.next_line(following, err).is_some() {
                        let text = String::from_utf8_lossy(line_text(&src.buf));
                        if filter.matches_text(&text) {
                            printer.text(out, src, nodes, text.as_bytes())?;
                            *printed_any = true;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// After the first pass: an `--app` or `--container` that matched
    /// nothing and has no directory is most likely a typo.
    fn check_found(&self) -> Result<(), LogsError> {
        if self.printed_any {
            return Ok(());
        }
        if let Some(app) = &self.filter.app {
            if !self.dir.join("apps").join(app).is_dir() {
                return Err(LogsError::UnknownApp {
                    app: app.clone(),
                    log_dir: self.dir.clone(),
                });
            }
        }
        if let Some(container) = &self.filter.container {
            if !self.found_container {
                return Err(LogsError::UnknownContainer {
                    container: container.clone(),
                    log_dir: self.dir.clone(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::format::HumanFormat;
    use serde_json::Value;
    use std::cell::Cell;
    use std::fs::OpenOptions;
    use tempfile::TempDir;

    const APP1: &str = "application_1700000000000_0001";
    const APP2: &str = "application_1700000000000_0002";
    const C1: &str = "container_1700000000000_0001_01_000001";
    const C2: &str = "container_1700000000000_0001_01_000002";
    const C3: &str = "container_1700000000000_0002_01_000001";

    const RM_STARTED: &str = r#"{"ts":"2026-11-22T12:00:00.000100Z","level":"INFO","msg":"resource manager started","cluster":"c1","node":"host1","actor":"/rm","actor_type":"ResourceManager","incarnation":0,"event":"actor_started"}"#;
    const APP1_SUBMITTED: &str = r#"{"ts":"2026-11-22T12:00:01.000000Z","level":"INFO","msg":"application submitted","cluster":"c1","node":"host1","actor":"/rm/apps","actor_type":"RMAppManager","incarnation":0,"app_id":"application_1700000000000_0001"}"#;
    const CONTAINER_LOST: &str = r#"{"ts":"2026-11-22T12:00:05.000000Z","level":"WARN","msg":"container lost","cluster":"c1","node":"host1","actor":"/node/nm-host1","actor_type":"NodeManager","incarnation":1,"app_id":"application_1700000000000_0001","container_id":"container_1700000000000_0001_01_000002","reason":"heartbeat timeout"}"#;
    const APP2_SUBMITTED: &str = r#"{"ts":"2026-11-22T12:00:06.000000Z","level":"INFO","msg":"application submitted","cluster":"c1","node":"host1","actor":"/rm/apps","actor_type":"RMAppManager","incarnation":0,"app_id":"application_1700000000000_0002"}"#;
    const NM2_REGISTERED: &str = r#"{"ts":"2026-11-22T12:00:00.500000Z","level":"DEBUG","msg":"node manager registered","cluster":"c1","node":"host2","actor":"/node/nm-host2","actor_type":"NodeManager","incarnation":0}"#;
    const CUT_OFF: &str = r#"{"ts":"2026-11-22T12:00:07.000000Z","level":"INFO","msg":"cut"#;
    const AM_STARTED: &str = r#"{"ts":"2026-11-22T12:00:02.000000Z","level":"INFO","msg":"am started","cluster":"c1","node":"host1","actor":"/node/nm-host1/container_1700000000000_0001_01_000001/am","actor_type":"ApplicationMaster","incarnation":0,"app_id":"application_1700000000000_0001","attempt":1,"container_id":"container_1700000000000_0001_01_000001","event":"actor_started"}"#;
    const ALLOC_FAILED: &str = r#"{"ts":"2026-11-22T12:00:03.000000Z","level":"ERROR","msg":"allocator failed","cluster":"c1","node":"host1","actor":"/node/nm-host1/container_1700000000000_0001_01_000001/am/allocator","actor_type":"YarnAllocator","incarnation":0,"app_id":"application_1700000000000_0001","attempt":1,"event":"actor_failed","reason":"injected fault"}"#;
    const ALLOC_RESTARTED: &str = r#"{"ts":"2026-11-22T12:00:03.500000Z","level":"INFO","msg":"allocator restarted","cluster":"c1","node":"host1","actor":"/node/nm-host1/container_1700000000000_0001_01_000001/am/allocator","actor_type":"YarnAllocator","incarnation":1,"app_id":"application_1700000000000_0001","attempt":1,"event":"actor_restarted"}"#;
    const EXEC_STARTED: &str = r#"{"ts":"2026-11-22T12:00:04.000000Z","level":"INFO","msg":"executor started","cluster":"c1","node":"host2","actor":"/node/nm-host2/container_1700000000000_0001_01_000002/executor","actor_type":"Executor","incarnation":0,"app_id":"application_1700000000000_0001","executor_id":"1"}"#;
    const EXEC_HEARTBEAT: &str = r#"{"ts":"2026-11-22T12:00:04.500000Z","level":"TRACE","msg":"heartbeat","cluster":"c1","node":"host2","actor":"/node/nm-host2/container_1700000000000_0001_01_000002/executor/heartbeat","actor_type":"Heartbeater","incarnation":0,"app_id":"application_1700000000000_0001"}"#;
    const APP2_AM: &str = r#"{"ts":"2026-11-22T12:00:06.500000Z","level":"INFO","msg":"am started","cluster":"c1","node":"host2","actor":"/node/nm-host2/container_1700000000000_0002_01_000001/am","actor_type":"ApplicationMaster","incarnation":0,"app_id":"application_1700000000000_0002","attempt":1}"#;

    fn write(path: &Path, text: &str) {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("create test dir");
        }
        fs::write(path, text).expect("write test file");
    }

    fn append(path: &Path, text: &str) {
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .expect("open for append");
        file.write_all(text.as_bytes()).expect("append");
    }

    fn lines(records: &[&str]) -> String {
        records.iter().map(|r| format!("{r}\n")).collect()
    }

    /// Two node logs and three containers over two applications, with a
    /// malformed line, a non-object line and a cut-off last line.
    fn fixture() -> TempDir {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        write(
            &dir.join("nodes/host1.jsonl"),
            &format!(
                "{RM_STARTED}\n{APP1_SUBMITTED}\nthis is not json\n{CONTAINER_LOST}\n{APP2_SUBMITTED}\n"
            ),
        );
        write(
            &dir.join("nodes/host2.jsonl"),
            &format!("{NM2_REGISTERED}\n[1,2]\n\n{CUT_OFF}"),
        );
        write(&dir.join("nodes/README.txt"), "not a log\n");
        // Created before C1 so that directory order alone would get it wrong.
        write(
            &dir.join(format!("apps/{APP1}/{C2}/sparkyard.jsonl")),
            &lines(&[EXEC_STARTED, EXEC_HEARTBEAT]),
        );
        write(
            &dir.join(format!("apps/{APP1}/{C1}/sparkyard.jsonl")),
            &lines(&[AM_STARTED, ALLOC_FAILED, ALLOC_RESTARTED]),
        );
        write(
            &dir.join(format!("apps/{APP1}/{C1}/stdout")),
            "Pi is roughly 3.14\nsecond line\n",
        );
        write(
            &dir.join(format!("apps/{APP2}/{C3}/sparkyard.jsonl")),
            &lines(&[APP2_AM]),
        );
        write(&dir.join(format!("apps/{APP2}/{C3}/stdout")), "hello from app2\n");
        tmp
    }

    fn args(dir: &Path) -> LogsArgs {
        LogsArgs {
            log_dir: Some(dir.to_path_buf()),
            ..LogsArgs::default()
        }
    }

    fn run_to_strings(args: &LogsArgs) -> (Result<(), LogsError>, String, String) {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let result = run(args, &mut out, &mut err);
        (
            result,
            String::from_utf8(out).expect("utf-8 output"),
            String::from_utf8(err).expect("utf-8 errors"),
        )
    }

    fn ok_output(args: &LogsArgs) -> String {
        let (result, out, _) = run_to_strings(args);
        if let Err(e) = result {
            panic!("run failed: {e}");
        }
        out
    }

    fn human(record: &str) -> String {
        let value: Value = serde_json::from_str(record).expect("fixture record");
        crate::logs::format::format_human(&value, &HumanFormat::default())
    }

    fn block(header: &str, log_type: &str, body: &[String]) -> String {
        let mut text = String::new();
        if !header.is_empty() {
            text.push_str(&format!("{header}\n{RULE}\n"));
        }
        text.push_str(&format!("LogType:{log_type}\nLog Contents:\n"));
        for line in body {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str(&format!("End of LogType:{log_type}\n\n"));
        text
    }

    fn h(records: &[&str]) -> Vec<String> {
        records.iter().map(|r| human(r)).collect()
    }

    fn t(text: &[&str]) -> Vec<String> {
        text.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn groups_everything_like_yarn_logs() {
        let tmp = fixture();
        let (result, out, err) = run_to_strings(&args(tmp.path()));
        assert!(result.is_ok());
        let expected = [
            block(
                "Node: host1",
                "host1.jsonl",
                &h(&[RM_STARTED, APP1_SUBMITTED, CONTAINER_LOST, APP2_SUBMITTED]),
            ),
            block("Node: host2", "host2.jsonl", &h(&[NM2_REGISTERED])),
            block(
                &format!("Container: {C1} on host1"),
                "sparkyard.jsonl",
                &h(&[AM_STARTED, ALLOC_FAILED, ALLOC_RESTARTED]),
            ),
            block("", "stdout", &t(&["Pi is roughly 3.14", "second line"])),
            block(
                &format!("Container: {C2} on host2"),
                "sparkyard.jsonl",
                &h(&[EXEC_STARTED, EXEC_HEARTBEAT]),
            ),
            block(
                &format!("Container: {C3} on host2"),
                "sparkyard.jsonl",
                &h(&[APP2_AM]),
            ),
            block("", "stdout", &t(&["hello from app2"])),
        ]
        .concat();
        assert_eq!(out, expected);

        let host1 = tmp.path().join("nodes/host1.jsonl");
        let host2 = tmp.path().join("nodes/host2.jsonl");
        assert_eq!(
            err,
            format!(
                "sparkyard logs: {}:3: skipped: not a JSON record (expected ident at column 2)\n\
                 sparkyard logs: {}:2: skipped: not a JSON record (a JSON array, not an object)\n\
                 sparkyard logs: {}:4: skipped: not a JSON record (last line cut off, no newline at end of file)\n",
                host1.display(),
                host2.display(),
                host2.display()
            )
        );
    }

    #[test]
    fn human_lines_look_right() {
        let tmp = fixture();
        let out = ok_output(&LogsArgs {
            container: Some(C1.to_owned()),
            ..args(tmp.path())
        });
        assert!(out.contains(
            "\n2026-11-22T12:00:03.000000Z ERROR \
             /node/nm-host1/container_1700000000000_0001_01_000001/am/allocator#0 allocator failed \
             app_id=application_1700000000000_0001 attempt=1 event=actor_failed reason=\"injected fault\"\n"
        ));
    }

    #[test]
    fn app_filter() {
        let tmp = fixture();
        let out = ok_output(&LogsArgs {
            app: Some(APP1.to_owned()),
            ..args(tmp.path())
        });
        let expected = [
            block(
                "Node: host1",
                "host1.jsonl",
                &h(&[APP1_SUBMITTED, CONTAINER_LOST]),
            ),
            block(
                &format!("Container: {C1} on host1"),
                "sparkyard.jsonl",
                &h(&[AM_STARTED, ALLOC_FAILED, ALLOC_RESTARTED]),
            ),
            block("", "stdout", &t(&["Pi is roughly 3.14", "second line"])),
            block(
                &format!("Container: {C2} on host2"),
                "sparkyard.jsonl",
                &h(&[EXEC_STARTED, EXEC_HEARTBEAT]),
            ),
        ]
        .concat();
        assert_eq!(out, expected);

        let out = ok_output(&LogsArgs {
            app: Some(APP2.to_owned()),
            ..args(tmp.path())
        });
        let expected = [
            block("Node: host1", "host1.jsonl", &h(&[APP2_SUBMITTED])),
            block(
                &format!("Container: {C3} on host2"),
                "sparkyard.jsonl",
                &h(&[APP2_AM]),
            ),
            block("", "stdout", &t(&["hello from app2"])),
        ]
        .concat();
        assert_eq!(out, expected);
    }

    #[test]
    fn container_filter() {
        let tmp = fixture();
        let out = ok_output(&LogsArgs {
            container: Some(C2.to_owned()),
            ..args(tmp.path())
        });
        let expected = [
            block("Node: host1", "host1.jsonl", &h(&[CONTAINER_LOST])),
            block(
                &format!("Container: {C2} on host2"),
                "sparkyard.jsonl",
                &h(&[EXEC_STARTED, EXEC_HEARTBEAT]),
            ),
        ]
        .concat();
        assert_eq!(out, expected);

        // Combined with the wrong application, nothing is left.
        let (result, out, _) = run_to_strings(&LogsArgs {
            app: Some(APP2.to_owned()),
            container: Some(C2.to_owned()),
            ..args(tmp.path())
        });
        assert_eq!(out, "");
        assert_eq!(
            result.map_err(|e| e.to_string()),
            Err(format!(
                "no logs for container {C2} under {}",
                tmp.path().display()
            ))
        );
    }

    #[test]
    fn actor_filter_uses_glob_and_hides_stdout() {
        let tmp = fixture();
        let out = ok_output(&LogsArgs {
            actor: Some("*/allocator".to_owned()),
            ..args(tmp.path())
        });
        let expected = block(
            &format!("Container: {C1} on host1"),
            "sparkyard.jsonl",
            &h(&[ALLOC_FAILED, ALLOC_RESTARTED]),
        );
        assert_eq!(out, expected);

        let out = ok_output(&LogsArgs {
            actor: Some("/rm*".to_owned()),
            ..args(tmp.path())
        });
        assert_eq!(
            out,
            block(
                "Node: host1",
                "host1.jsonl",
                &h(&[RM_STARTED, APP1_SUBMITTED, APP2_SUBMITTED])
            )
        );

        // The glob must cover the whole path.
        let out = ok_output(&LogsArgs {
            actor: Some("/rm".to_owned()),
            ..args(tmp.path())
        });
        assert_eq!(out, block("Node: host1", "host1.jsonl", &h(&[RM_STARTED])));
    }

    #[test]
    fn a_container_is_shown_on_its_node_managers_host_not_the_resource_managers() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let allocated = r#"{"ts":"2026-11-22T12:00:01.000000Z","level":"INFO","msg":"Allocated container","cluster":"c1","node":"rmhost","actor":"/node/rm","actor_type":"ResourceManager","incarnation":1,"app_id":"application_1700000000000_0001","container_id":"container_1700000000000_0001_01_000002"}"#;
        let asked = r#"{"ts":"2026-11-22T12:00:01.500000Z","level":"INFO","msg":"Launching container","cluster":"c1","node":"host1","actor":"/node/nm-host1/container_1700000000000_0001_01_000001/am/allocator","actor_type":"YarnAllocator","incarnation":1,"app_id":"application_1700000000000_0001","container_id":"container_1700000000000_0001_01_000002"}"#;
        let file = tmp.path().join(format!("apps/{APP1}/{C2}/sparkyard.jsonl"));
        write(&file, &lines(&[allocated, asked, EXEC_STARTED]));
        let out = ok_output(&args(tmp.path()));
        assert!(out.starts_with(&format!("Container: {C2} on host2\n")), "{out}");
        // With no record of its NodeManager or its own actors, the first record's host.
        write(&file, &lines(&[allocated]));
        let out = ok_output(&args(tmp.path()));
        assert!(out.starts_with(&format!("Container: {C2} on rmhost\n")), "{out}");
    }

    #[test]
    fn level_filter() {
        let tmp = fixture();
        let out = ok_output(&LogsArgs {
            level: Some("Warn".to_owned()),
            ..args(tmp.path())
        });
        let expected = [
            block("Node: host1", "host1.jsonl", &h(&[CONTAINER_LOST])),
            block(
                &format!("Container: {C1} on host1"),
                "sparkyard.jsonl",
                &h(&[ALLOC_FAILED]),
            ),
        ]
        .concat();
        assert_eq!(out, expected);

        let out = ok_output(&LogsArgs {
            level: Some("debug".to_owned()),
            app: Some(APP1.to_owned()),
            ..args(tmp.path())
        });
        assert!(!out.contains("executor/heartbeat"), "TRACE record shown:\n{out}");
        assert!(out.contains("executor started"));
        assert!(!out.contains("LogType:stdout"));

        let out = ok_output(&LogsArgs {
            level: Some("TRACE".to_owned()),
            container: Some(C2.to_owned()),
            ..args(tmp.path())
        });
        assert!(out.contains("executor/heartbeat#0 heartbeat"));
    }

    #[test]
    fn bad_level_is_a_one_line_error() {
        let tmp = fixture();
        let (result, out, _) = run_to_strings(&LogsArgs {
            level: Some("verbose".to_owned()),
            ..args(tmp.path())
        });
        assert_eq!(out, "");
        let message = result.map_err(|e| e.to_string()).unwrap_err();
        assert_eq!(
            message,
            "unknown log level \"verbose\" (expected one of: error, warn, info, debug, trace)"
        );
        assert!(!message.contains('\n'));
    }

    #[test]
    fn grep_filter_applies_to_records_and_stdout() {
        let tmp = fixture();
        let out = ok_output(&LogsArgs {
            grep: Some("submitted".to_owned()),
            ..args(tmp.path())
        });
        assert_eq!(
            out,
            block(
                "Node: host1",
                "host1.jsonl",
                &h(&[APP1_SUBMITTED, APP2_SUBMITTED])
            )
        );

        // Only stdout matches: the container header still names its node.
        let out = ok_output(&LogsArgs {
            grep: Some("roughly".to_owned()),
            ..args(tmp.path())
        });
        let expected = format!(
            "Container: {C1} on host1\n{RULE}\n{}",
            block("", "stdout", &t(&["Pi is roughly 3.14"]))
        );
        assert_eq!(out, expected);

        // The raw line is searched, so field names match too.
        let out = ok_output(&LogsArgs {
            grep: Some("\"executor_id\":\"1\"".to_owned()),
            ..args(tmp.path())
        });
        assert_eq!(
            out,
            block(
                &format!("Container: {C2} on host2"),
                "sparkyard.jsonl",
                &h(&[EXEC_STARTED])
            )
        );
    }

    #[test]
    fn json_output_is_merged_in_time_order() {
        let tmp = fixture();
        let (result, out, err) = run_to_strings(&LogsArgs {
            json: true,
            ..args(tmp.path())
        });
        assert!(result.is_ok());
        let expected = lines(&[
            RM_STARTED,
            NM2_REGISTERED,
            APP1_SUBMITTED,
            AM_STARTED,
            ALLOC_FAILED,
            ALLOC_RESTARTED,
            EXEC_STARTED,
            EXEC_HEARTBEAT,
            CONTAINER_LOST,
            APP2_SUBMITTED,
            APP2_AM,
        ]);
        assert_eq!(out, expected);
        assert!(!out.contains("hello from app2"));
        assert_eq!(err.lines().count(), 3, "{err}");

        let out = ok_output(&LogsArgs {
            json: true,
            app: Some(APP1.to_owned()),
            level: Some("info".to_owned()),
            ..args(tmp.path())
        });
        assert_eq!(
            out,
            lines(&[
                APP1_SUBMITTED,
                AM_STARTED,
                ALLOC_FAILED,
                ALLOC_RESTARTED,
                EXEC_STARTED,
                CONTAINER_LOST,
            ])
        );
    }

    #[test]
    fn json_merge_is_stable_for_equal_timestamps() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let rec = |node: &str, n: u32, ts: &str| {
            format!(r#"{{"ts":"{ts}","level":"INFO","msg":"m{n}","node":"{node}"}}"#)
        };
        let same = "2026-11-22T12:00:00.000000Z";
        let later = "2026-11-22T12:00:01.000000Z";
        let a = [rec("a", 1, same), rec("a", 2, same), rec("a", 5, later)];
        let b = [
            rec("b", 3, same),
            // No timestamp: ordered as if it had the previous record's.
            r#"{"level":"INFO","msg":"m4","node":"b"}"#.to_owned(),
            rec("b", 6, later),
        ];
        write(&tmp.path().join("nodes/a.jsonl"), &(a.join("\n") + "\n"));
        write(&tmp.path().join("nodes/b.jsonl"), &(b.join("\n") + "\n"));
        let out = ok_output(&LogsArgs {
            json: true,
            ..args(tmp.path())
        });
        let order: Vec<&str> = out
            .lines()
            .filter_map(|line| line.split("\"msg\":\"").nth(1))
            .filter_map(|rest| rest.split('"').next())
            .collect();
        assert_eq!(order, ["m1", "m2", "m3", "m4", "m5", "m6"]);
    }

    #[test]
    fn missing_log_dir() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let missing = tmp.path().join("nope");
        let (result, out, _) = run_to_strings(&args(&missing));
        assert_eq!(out, "");
        assert_eq!(
            result.map_err(|e| e.to_string()),
            Err(format!(
                "log directory {} does not exist (set --log-dir or SPARKYARD_LOG_DIR)",
                missing.display()
            ))
        );

        let file = tmp.path().join("file");
        write(&file, "");
        let (result, _, _) = run_to_strings(&args(&file));
        assert!(matches!(result, Err(LogsError::NotADirectory(_))));
    }

    #[test]
    fn unknown_app_and_bad_ids() {
        let tmp = fixture();
        let (result, out, _) = run_to_strings(&LogsArgs {
            app: Some("application_1_0001".to_owned()),
            ..args(tmp.path())
        });
        assert_eq!(out, "");
        assert_eq!(
            result.map_err(|e| e.to_string()),
            Err(format!(
                "no logs for application application_1_0001 under {}",
                tmp.path().display()
            ))
        );

        for bad in ["", "..", "a/b", "../apps"] {
            let (result, _, _) = run_to_strings(&LogsArgs {
                app: Some(bad.to_owned()),
                ..args(tmp.path())
            });
            assert!(
                matches!(result, Err(LogsError::BadId { flag: "--app", .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn app_known_only_from_node_records() {
        let tmp = tempfile::tempdir().expect("tempdir");
        write(&tmp.path().join("nodes/host1.jsonl"), &lines(&[APP2_SUBMITTED]));
        let out = ok_output(&LogsArgs {
            app: Some(APP2.to_owned()),
            ..args(tmp.path())
        });
        assert_eq!(out, block("Node: host1", "host1.jsonl", &h(&[APP2_SUBMITTED])));
    }

    #[test]
    fn empty_log_dir_prints_nothing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (result, out, err) = run_to_strings(&args(tmp.path()));
        assert!(result.is_ok());
        assert_eq!((out.as_str(), err.as_str()), ("", ""));
    }

    #[test]
    fn links_out_of_the_log_dir_are_skipped_with_one_line_and_links_inside_followed() {
        let tmp = fixture();
        let outside = tempfile::tempdir().expect("tempdir");
        let secret = outside.path().join("secret.jsonl");
        write(&secret, &lines(&[NM2_REGISTERED]));
        write(&outside.path().join("app/c/stdout"), "another user's output\n");
        let dir = tmp.path();
        // A node file, an application directory, a container directory and a stdout file,
        // each a link out of the log directory.
        std::os::unix::fs::symlink(&secret, dir.join("nodes/evil.jsonl")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("app"),
            dir.join("apps/application_1700000000000_0009"),
        )
        .unwrap();
        let c9 = "container_1700000000000_0002_01_000009";
        std::os::unix::fs::symlink(
            outside.path().join("app/c"),
            dir.join(format!("apps/{APP2}/{c9}")),
        )
        .unwrap();
        fs::remove_file(dir.join(format!("apps/{APP2}/{C3}/stdout"))).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("app/c/stdout"),
            dir.join(format!("apps/{APP2}/{C3}/stdout")),
        )
        .unwrap();
        // A link that stays inside is read.
        std::os::unix::fs::symlink(dir.join("nodes/host1.jsonl"), dir.join("nodes/alias.jsonl")).unwrap();

        for supervision in [false, true] {
            let (result, out, err) = run_to_strings(&LogsArgs {
                supervision,
                ..args(dir)
            });
            assert!(result.is_ok(), "{result:?}");
            assert!(
                !out.contains("another user's output") && !out.contains("host2 registered"),
                "{out}"
            );
            let skipped: Vec<&str> = err.lines().filter(|l| l.contains("a symbolic link to")).collect();
            let named = |p: &Path| {
                skipped
                    .iter()
                    .filter(|l| {
                        l.starts_with(&format!(
                            "sparkyard logs: {}: skipped: a symbolic link to ",
                            p.display()
                        ))
                    })
                    .count()
            };
            assert_eq!(named(&dir.join("nodes/evil.jsonl")), 1, "{err}");
            assert_eq!(
                named(&dir.join("apps/application_1700000000000_0009")),
                1,
                "{err}"
            );
            assert_eq!(named(&dir.join(format!("apps/{APP2}/{c9}"))), 1, "{err}");
            if !supervision {
                assert_eq!(named(&dir.join(format!("apps/{APP2}/{C3}/stdout"))), 1, "{err}");
                assert!(out.contains("Node: alias"), "{out}");
            }
            assert_eq!(named(&dir.join("nodes/alias.jsonl")), 0, "{err}");
            assert_eq!(skipped.len(), if supervision { 3 } else { 4 }, "{err}");
        }
    }

    #[test]
    fn odd_files_are_reported_and_skipped() {
        let tmp = tempfile::tempdir().expect("tempdir");
        // `nodes` is a file, not a directory.
        write(&tmp.path().join("nodes"), "oops");
        let dir = tmp.path().join(format!("apps/{APP1}/{C1}"));
        let mut bytes = b"\xff\xfe not utf-8\n".to_vec();
        bytes.extend_from_slice(b"\"just a string\"\n{\"level\":\"INFO\",\"msg\":\"ok\"}\r\n{\"a\":}\n");
        fs::create_dir_all(&dir).expect("mkdir");
        fs::write(dir.join("sparkyard.jsonl"), bytes).expect("write");
        let (result, out, err) = run_to_strings(&args(tmp.path()));
        assert!(result.is_ok());
        assert_eq!(
            out,
            block(
                &format!("Container: {C1} on unknown"),
                "sparkyard.jsonl",
                &t(&["- INFO  - ok"])
            )
        );
        let file = dir.join("sparkyard.jsonl");
        let expected = format!(
            "sparkyard logs: {nodes}: skipped: cannot list directory (",
            nodes = tmp.path().join("nodes").display()
        );
        let mut err_lines = err.lines();
        assert!(
            err_lines.next().is_some_and(|l| l.starts_with(&expected)),
            "{err}"
        );
        assert_eq!(
            err_lines.collect::<Vec<_>>(),
            [
                format!(
                    "sparkyard logs: {}:1: skipped: not a JSON record (invalid UTF-8)",
                    file.display()
                ),
                format!(
                    "sparkyard logs: {}:2: skipped: not a JSON record (a JSON string, not an object)",
                    file.display()
                ),
                format!(
                    "sparkyard logs: {}:4: skipped: not a JSON record (expected value at column 6)",
                    file.display()
                ),
            ]
        );
    }

    #[test]
    fn follow_prints_appended_lines_and_new_files() {
        let tmp = fixture();
        let host2 = tmp.path().join("nodes/host2.jsonl");
        let c4_dir = tmp
            .path()
            .join(format!("apps/{APP1}/container_1700000000000_0001_01_000004"));
        let new_exec = EXEC_STARTED
            .replace("12:00:04.000000", "12:00:08.000000")
            .replace(C2, "container_1700000000000_0001_01_000004");
        let rest_of_cut = r#"","cluster":"c1","node":"host2","actor":"/node/nm-host2","incarnation":0}"#;
        let calls = Cell::new(0);
        let stop = || {
            calls.set(calls.get() + 1);
            match calls.get() {
                1 => {
                    // Complete the cut-off line and start a new container.
                    append(&host2, &format!("{rest_of_cut}\n"));
                    write(&c4_dir.join("sparkyard.jsonl"), &lines(&[&new_exec]));
                    false
                }
                2 => {
                    // A further record for the same container keeps its block open;
                    // the next one stays cut off until its newline arrives.
                    append(
                        &c4_dir.join("sparkyard.jsonl"),
                        &format!("{EXEC_HEARTBEAT}\n{{\"ts\":"),
                    );
                    false
                }
                3 => {
                    append(
                        &c4_dir.join("sparkyard.jsonl"),
                        "\"2026-11-22T12:00:09Z\",\"msg\":\"late\"}\n",
                    );
                    false
                }
                _ => true,
            }
        };
        let mut out = Vec::new();
        let mut err = Vec::new();
        let result = run_until(
            &LogsArgs {
                follow: true,
                ..args(tmp.path())
            },
            &mut out,
            &mut err,
            Duration::from_millis(5),
            &stop,
        );
        assert!(result.is_ok());
        assert_eq!(calls.get(), 4);
        let out = String::from_utf8(out).expect("utf-8");
        let err = String::from_utf8(err).expect("utf-8");

        // The snapshot is the same as without --follow, minus the closing of
        // the last block, which stays open for more lines.
        let snapshot = ok_output(&args(tmp.path()));
        let completed = format!("{CUT_OFF}{rest_of_cut}");
        let tail = [
            "End of LogType:stdout\n\n".to_owned(),
            block("Node: host2", "host2.jsonl", &h(&[&completed])),
            block(
                "Container: container_1700000000000_0001_01_000004 on host2",
                "sparkyard.jsonl",
                &[
                    h(&[&new_exec, EXEC_HEARTBEAT]),
                    t(&["2026-11-22T12:00:09Z -     - late"]),
                ]
                .concat(),
            ),
        ]
        .concat();
        let Some(initial) = out.strip_suffix(&tail) else {
            panic!("unexpected follow output:\n{out}");
        };
        // Before the appends the snapshot ended inside app2's stdout block.
        assert!(
            initial.ends_with("LogType:stdout\nLog Contents:\nhello from app2\n"),
            "{initial}"
        );
        assert!(!snapshot.is_empty());

        // The cut-off line was held, not reported.
        assert!(!err.contains("cut off"), "{err}");
        assert_eq!(err.lines().count(), 2, "{err}");
    }

    #[test]
    fn follow_json_prints_new_records_in_time_order() {
        let tmp = fixture();
        let host1 = tmp.path().join("nodes/host1.jsonl");
        let c1 = tmp.path().join(format!("apps/{APP1}/{C1}/sparkyard.jsonl"));
        let early = AM_STARTED.replace("12:00:02.000000", "12:00:10.000000");
        let late = APP1_SUBMITTED.replace("12:00:01.000000", "12:00:11.000000");
        let calls = Cell::new(0);
        let stop = || {
            calls.set(calls.get() + 1);
            if calls.get() == 1 {
                append(&host1, &format!("{late}\n"));
                append(&c1, &format!("{early}\n"));
            }
            calls.get() > 1
        };
        let mut out = Vec::new();
        let mut err = Vec::new();
        let result = run_until(
            &LogsArgs {
                follow: true,
                json: true,
                app: Some(APP1.to_owned()),
                ..args(tmp.path())
            },
            &mut out,
            &mut err,
            Duration::from_millis(5),
            &stop,
        );
        assert!(result.is_ok());
        let out = String::from_utf8(out).expect("utf-8");
        assert!(out.ends_with(&lines(&[CONTAINER_LOST, &early, &late])), "{out}");
    }

    #[test]
    fn follow_restarts_a_truncated_file() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let node = tmp.path().join("nodes/host1.jsonl");
        write(&node, &lines(&[RM_STARTED, APP1_SUBMITTED]));
        let calls = Cell::new(0);
        let stop = || {
            calls.set(calls.get() + 1);
            if calls.get() == 1 {
                write(&node, &lines(&[APP2_SUBMITTED]));
            }
            calls.get() > 1
        };
        let mut out = Vec::new();
        let mut err = Vec::new();
        let result = run_until(
            &LogsArgs {
                follow: true,
                json: true,
                ..args(tmp.path())
            },
            &mut out,
            &mut err,
            Duration::from_millis(5),
            &stop,
        );
        assert!(result.is_ok());
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            lines(&[RM_STARTED, APP1_SUBMITTED, APP2_SUBMITTED])
        );
        assert!(String::from_utf8(err).expect("utf-8").contains("truncated"));
    }

    #[test]
    fn filter_matches_without_files() {
        let rec: Value = serde_json::from_str(ALLOC_FAILED).expect("record");
        let all = Filter::default();
        assert!(all.matches(&rec, ALLOC_FAILED));
        assert!(all.matches(&Value::Null, "null"));

        let f = Filter {
            app: Some(APP1.to_owned()),
            actor: Some("/node/*/am/*".to_owned()),
            min_level: Some(Level::Error),
            grep: Some("injected".to_owned()),
            container: None,
        };
        assert!(f.matches(&rec, ALLOC_FAILED));
        let wrong = |change: fn(&mut Filter)| {
            let mut g = f.clone();
            change(&mut g);
            g.matches(&rec, ALLOC_FAILED)
        };
        assert!(!wrong(|g| g.app = Some(APP2.to_owned())));
        assert!(
            !wrong(|g| g.container = Some(C1.to_owned())),
            "record has no container_id"
        );
        assert!(!wrong(|g| g.actor = Some("*/am".to_owned())));
        assert!(!wrong(|g| g.grep = Some("INJECTED".to_owned())));
        assert!(wrong(|g| g.min_level = Some(Level::Trace)));

        let info: Value = serde_json::from_str(AM_STARTED).expect("record");
        let errors_only = Filter {
            min_level: Some(Level::Warn),
            ..Filter::default()
        };
        assert!(!errors_only.matches(&info, AM_STARTED));
        let no_level = serde_json::json!({"msg": "x"});
        assert!(!errors_only.matches(&no_level, "{}"));
        let odd_level = serde_json::json!({"level": "fatal"});
        assert!(!errors_only.matches(&odd_level, "{}"));
        let lower = serde_json::json!({"level": "error"});
        assert!(errors_only.matches(&lower, "{}"));

        assert!(Filter::default().matches_text("anything"));
        let grep = Filter {
            grep: Some("Pi".to_owned()),
            ..Filter::default()
        };
        assert!(grep.matches_text("Pi is 3") && !grep.matches_text("pi is 3"));
        assert!(grep.shows_stdout());
        assert!(!errors_only.shows_stdout());
    }

    #[test]
    fn levels_parse_in_any_case() {
        for (name, level) in [
            ("error", Level::Error),
            ("WARN", Level::Warn),
            ("Info", Level::Info),
            ("dEbUg", Level::Debug),
            ("trace", Level::Trace),
        ] {
            assert_eq!(name.parse::<Level>().ok(), Some(level));
        }
        assert!("warning".parse::<Level>().is_err());
        assert!("".parse::<Level>().is_err());
        assert!(Level::Error < Level::Trace);
    }

    #[test]
    fn glob_edge_cases() {
        let alloc = "/node/nm-host1/container_1700000000000_0001_01_000001/am/allocator";
        assert!(glob_match("*/allocator", alloc));
        assert!(glob_match("/node/*/allocator", alloc));
        assert!(glob_match("*", alloc));
        assert!(glob_match("**", alloc));
        assert!(glob_match(alloc, alloc));
        assert!(!glob_match("*/am", alloc));
        assert!(!glob_match("/node", alloc));
        assert!(!glob_match("allocator", alloc));
        assert!(glob_match("*allocator*", alloc));

        assert!(glob_match("", ""));
        assert!(!glob_match("", "a"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a*", ""));
        // Prefix and suffix may not share characters.
        assert!(!glob_match("ab*ba", "aba"));
        assert!(glob_match("ab*ba", "abba"));
        assert!(glob_match("a*b*c", "abc"));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "acb"));
        assert!(glob_match("*a*a*", "aa"));
        assert!(!glob_match("*a*a*", "a"));
        // Characters other than `*` are literal.
        assert!(glob_match("a?c", "a?c") && !glob_match("a?c", "abc"));
        assert!(glob_match("[ab]", "[ab]") && !glob_match("[ab]", "a"));
        assert!(glob_match("é*ü", "éxü") && !glob_match("é*ü", "éü!"));
        assert!(glob_match("*ü*", "aüb"));

        // Many stars against a long non-matching text stays fast.
        let text = "a".repeat(20_000);
        let started = std::time::Instant::now();
        assert!(!glob_match(&format!("{}b", "*a".repeat(50)), &text));
        assert!(!glob_match(&format!("{}*b*", "*a".repeat(50)), &text));
        assert!(!glob_match("*a*a*a*b", &text));
        assert!(glob_match(&format!("{}*", "*a".repeat(50)), &text));
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn log_dir_resolution() {
        assert_eq!(resolve_log_dir(Some(Path::new("/x/y"))), PathBuf::from("/x/y"));
        // Only this test touches the variable.
        std::env::set_var(LOG_DIR_ENV, "/from/env");
        let from_env = resolve_log_dir(None);
        std::env::set_var(LOG_DIR_ENV, "");
        let empty = resolve_log_dir(None);
        std::env::remove_var(LOG_DIR_ENV);
        let unset = resolve_log_dir(None);
        assert_eq!(from_env, PathBuf::from("/from/env"));
        assert_eq!(empty, PathBuf::from("./logs"));
        assert_eq!(unset, PathBuf::from("./logs"));
    }

    #[test]
    fn cli_flags_parse() {
        use clap::Parser;

        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            logs: LogsArgs,
        }

        let cli = Cli::try_parse_from([
            "sparkyard-logs",
            "--log-dir",
            "/tmp/l",
            "--app",
            APP1,
            "--container",
            C1,
            "--actor",
            "*/allocator",
            "--level",
            "warn",
            "--grep",
            "lost",
            "--follow",
            "--json",
        ])
        .expect("valid flags");
        assert_eq!(
            cli.logs,
            LogsArgs {
                log_dir: Some(PathBuf::from("/tmp/l")),
                app: Some(APP1.to_owned()),
                container: Some(C1.to_owned()),
                actor: Some("*/allocator".to_owned()),
                level: Some("warn".to_owned()),
                grep: Some("lost".to_owned()),
                follow: true,
                json: true,
                supervision: false,
                timeline: None,
            }
        );
        let help = <Cli as clap::CommandFactory>::command()
            .render_long_help()
            .to_string();
        assert!(
            help.contains("--log-dir <DIR>") && help.contains("--follow"),
            "{help}"
        );
    }
}
