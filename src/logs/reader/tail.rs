//! Tailing: one log file read line by line from where it was left, while it may still be
//! growing (a cut-off last line is held back until it is complete when following), with each
//! line parsed as a JSON record and its time for ordering.
//!
//! Layer: logs (the reader), the bottom layer.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

/// Where a file's lines come from. The derived order is the output order:
/// node logs (by node name) before containers (by container id).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Origin {
    Node { node: String },
    Container { container: String, app: String },
}

/// What a file holds; within a container the records come before stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Kind {
    Records,
    Stdout,
}

pub(super) enum ReadState {
    /// Not opened yet (or vanished before it could be opened).
    Closed,
    Open(BufReader<File>),
    /// Reported as unreadable; ignored from now on.
    Failed,
}

/// One log file being read incrementally.
pub(super) struct Source {
    pub(super) origin: Origin,
    pub(super) kind: Kind,
    pub(super) path: PathBuf,
    /// The name shown after `LogType:`.
    pub(super) log_type: String,
    pub(super) state: ReadState,
    /// Bytes read so far, used to notice truncation while following.
    pub(super) pos: u64,
    /// Number of the last line handed out.
    pub(super) line_no: u64,
    /// The line being assembled; may hold a cut-off tail between polls.
    pub(super) buf: Vec<u8>,
    /// `buf` holds a line that was already handed out.
    pub(super) buf_done: bool,
    /// Time of the last record with a readable `ts`, for ordering records
    /// that have none.
    pub(super) last_time: SystemTime,
}

/// Where the line handed out by [`Source::next_line`] sits; its text is
/// [`Source::line`].
#[derive(Debug, Clone, Copy)]
pub(super) struct LineInfo {
    pub(super) number: u64,
    /// False for a final line with no newline after it.
    pub(super) complete: bool,
}

impl Source {
    pub(super) fn new(origin: Origin, kind: Kind, path: PathBuf, log_type: String) -> Source {
        Source {
            origin,
            kind,
            path,
            log_type,
            state: ReadState::Closed,
            pos: 0,
            line_no: 0,
            buf: Vec::new(),
            buf_done: false,
            last_time: SystemTime::UNIX_EPOCH,
        }
    }

    pub(super) fn sort_key(&self) -> (&Origin, Kind) {
        (&self.origin, self.kind)
    }

    /// Starts over when the file became shorter than what was already read
    /// (truncated or replaced by a shorter one).
    pub(super) fn restart_if_truncated(&mut self, err: &mut dyn Write) {
        if !matches!(self.state, ReadState::Open(_)) {
            return;
        }
        match fs::metadata(&self.path) {
            Ok(meta) if meta.len() < self.pos => {
                let _ = writeln!(
                    err,
                    "sparkyard logs: {}: file was truncated; reading it again from the start",
                    self.path.display()
                );
                self.state = ReadState::Closed;
                self.pos = 0;
                self.line_no = 0;
                self.buf.clear();
                self.buf_done = false;
            }
            _ => {}
        }
    }

    /// The next line, without its line ending. A final line with no newline
    /// is held back (left in the buffer for the next call) when
    /// `hold_partial` is set, and handed out as incomplete otherwise.
    pub(super) fn next_line(&mut self, hold_partial: bool, err: &mut dyn Write) -> Option<LineInfo> {
        if self.buf_done {
            self.buf.clear();
            self.buf_done = false;
        }
        if matches!(self.state, ReadState::Closed) {
            match File::open(&self.path) {
                Ok(file) => self.state = ReadState::Open(BufReader::new(file)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
                Err(e) => {
                    let _ = writeln!(
                        err,
                        "sparkyard logs: {}: skipped: cannot read file ({e})",
                        self.path.display()
                    );
                    self.state = ReadState::Failed;
                    return None;
                }
            }
        }
        let ReadState::Open(reader) = &mut self.state else {
            return None;
        };
        loop {
            match reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => {
                    if self.buf.is_empty() || hold_partial {
                        return None;
                    }
                    self.line_no += 1;
                    self.buf_done = true;
                    return Some(LineInfo {
                        number: self.line_no,
                        complete: false,
                    });
                }
                Ok(n) => {
                    self.pos += n as u64;
                    if self.buf.last() == Some(&b'\n') {
                        self.line_no += 1;
                        self.buf_done = true;
                        return Some(LineInfo {
                            number: self.line_no,
                            complete: true,
                        });
                    }
                    // Reached the end of the file mid-line; the next read
                    // reports end of file.
                }
                Err(e) => {
                    let _ = writeln!(
                        err,
                        "sparkyard logs: {}:{}: skipped: cannot read file ({e}); rest of file ignored",
                        self.path.display(),
                        self.line_no + 1
                    );
                    self.state = ReadState::Failed;
                    self.buf.clear();
                    return None;
                }
            }
        }
    }
}

/// The text of `buf` without its line ending.
pub(super) fn line_text(buf: &[u8]) -> &[u8] {
    let line = buf.strip_suffix(b"\n").unwrap_or(buf);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Outcome of parsing one line of a records file.
pub(in crate::logs) enum Parsed<'a> {
    Record(Value, &'a str),
    Blank,
    Bad(String),
}

pub(in crate::logs) fn parse_line<'a>(bytes: &'a [u8], complete: bool) -> Parsed<'a> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Parsed::Bad("invalid UTF-8".to_owned());
    };
    if text.trim().is_empty() {
        return Parsed::Blank;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Parsed::Record(value, text),
        Ok(other) => Parsed::Bad(format!("a JSON {}, not an object", json_kind(&other))),
        Err(e) if !complete && e.is_eof() => {
            Parsed::Bad("last line cut off, no newline at end of file".to_owned())
        }
        Err(e) => {
            let full = e.to_string();
            let message = full
                .find(" at line ")
                .map_or(full.as_str(), |at| full.get(..at).unwrap_or(full.as_str()));
            Parsed::Bad(format!("{message} at column {}", e.column()))
        }
    }
}

pub(super) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(in crate::logs) fn warn_skipped(err: &mut dyn Write, path: &Path, line: u64, reason: &str) {
    let _ = writeln!(
        err,
        "sparkyard logs: {}:{line}: skipped: not a JSON record ({reason})",
        path.display()
    );
}

/// Time used to order a record: its `ts`, else that of the record before it
/// in the same file.
pub(super) fn record_time(record: &Value, last: &mut SystemTime) -> SystemTime {
    if let Some(time) = record
        .get("ts")
        .and_then(Value::as_str)
        .and_then(|ts| humantime::parse_rfc3339_weak(ts).ok())
    {
        *last = time;
    }
    *last
}
