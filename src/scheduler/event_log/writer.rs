//! Spark's EventLogFileWriter (SingleEventLogFileWriter, rolling and compression off): where
//! the log goes (`spark.eventLog.dir`, a path or a `file:` URI), its name
//! (`nameForAppAndAttempt`), the `.inprogress` file while the application runs and its rename
//! at the end, one whole line per event.
//!
//! Layer: scheduler (the driver's event log); the only part of it that touches files.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::json_protocol::{event_to_json, log_start_json, should_log, SPARK_VERSION};
use crate::logs::perms;
use crate::scheduler::events::SparkListenerEvent;

/// Suffix of a log still being written (Spark's `EventLogFileWriter.IN_PROGRESS`).
pub const IN_PROGRESS_SUFFIX: &str = ".inprogress";

/// Spark's `Utils.sanitizeDirName`: ` `, `:` and `/` become `-`; `.`, `$`, `{`, `}`, `'` and `"`
/// become `_`; then lower case.
pub(super) fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            ' ' | ':' | '/' => '-',
            '.' | '$' | '{' | '}' | '\'' | '"' => '_',
            other => other,
        })
        .collect::<String>()
        .to_lowercase()
}

/// The log's final file name: the sanitized app id, plus `_<sanitized attempt id>` when the
/// application has attempts (YARN cluster mode), as Spark's `nameForAppAndAttempt`.
pub fn log_file_name(app_id: &str, app_attempt_id: Option<&str>) -> String {
    match app_attempt_id {
        Some(attempt) => format!("{}_{}", sanitize(app_id), sanitize(attempt)),
        None => sanitize(app_id),
    }
}

pub(super) fn one_line(text: String) -> String {
    if text.contains(['\n', '\r']) {
        text.replace(['\n', '\r'], " ")
    } else {
        text
    }
}

/// How a path appears in messages: Spark's `file:` URI form of a local path.
pub(super) fn display_uri(path: &Path) -> String {
    format!("file:{}", path.display())
}

pub(super) fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The local directory for `spark.eventLog.dir`: a plain path (made absolute against the
/// working directory, as Spark's `Utils.resolveURI` does) or a `file:` URI (`file:/x`,
/// `file:///x`, `file://localhost/x`, percent-escapes decoded). Other schemes (hdfs:, s3a:, ...)
/// are refused with an error naming the value: sparkyard writes local files only.
pub fn resolve_log_dir(dir: &str) -> Result<PathBuf, String> {
    let raw = dir.trim();
    let scheme_end = raw.find(':').filter(|&i| {
        i > 1
            && raw[..i].starts_with(|c: char| c.is_ascii_alphabetic())
            && raw[..i]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    let local = match scheme_end {
        None => PathBuf::from(raw),
        Some(i) if raw[..i].eq_ignore_ascii_case("file") => {
            let rest = &raw[i + 1..];
            let path = match rest.strip_prefix("//") {
                Some(after) => {
                    let (authority, path) = match after.find('/') {
                        Some(p) => (&after[..p], &after[p..]),
                        None => (after, ""),
                    };
                    if !(authority.is_empty() || authority.eq_ignore_ascii_case("localhost")) {
                        return Err(one_line(format!(
                            "Unsupported event log directory {raw}: a file: URI must name a local path"
                        )));
                    }
                    path
                }
                None => rest,
            };
            if !path.starts_with('/') {
                return Err(one_line(format!(
                    "Unsupported event log directory {raw}: a file: URI must hold an absolute path"
                )));
            }
            let path = percent_decode(path).ok_or_else(|| {
                one_line(format!(
                    "Unsupported event log directory {raw}: bad percent-escape in the URI"
                ))
            })?;
            PathBuf::from(path)
        }
        Some(i) => {
            return Err(one_line(format!(
                "Unsupported event log directory {raw}: sparkyard writes event logs to local files \
                 only (a path or a file: URI), not to {}:",
                &raw[..i]
            )))
        }
    };
    if local.as_os_str().is_empty() {
        return Err("Unsupported event log directory: the path is empty".into());
    }
    Ok(std::path::absolute(&local).unwrap_or(local))
}

/// Writes one application's event log as Spark's `SingleEventLogFileWriter` does (rolling and
/// compression off). Each event is one complete line, written with a single `write` on the
/// unbuffered file (as good as Spark's flush after every event): a reader (the History Server)
/// sees a live application's progress at once and never a cut-off line; a write that fails
/// part-way is cut back to the last complete line.
#[derive(Debug)]
pub struct EventLogWriter {
    pub(super) file: File,
    in_progress_path: PathBuf,
    final_path: PathBuf,
    overwrite: bool,
    /// Length of the file up to its last complete line.
    written: u64,
}

impl EventLogWriter {
    /// Starts the log of application `app_id` (attempt `attempt_id`, set in YARN cluster mode)
    /// in `dir` (`spark.eventLog.dir`: a local path or a `file:` URI, which must name an
    /// existing directory): creates `<dir>/<name>.inprogress` (see [`log_file_name`]; a stale
    /// file of that name is replaced, as Spark does) and writes the LogStart line
    /// ([`SPARK_VERSION`]). A completed log `<dir>/<name>` already there is refused with Spark's
    /// message unless `overwrite` (`spark.eventLog.overwrite`), in which case
    /// [`EventLogWriter::stop`] replaces it.
    pub fn create(
        dir: &str,
        app_id: &str,
        attempt_id: Option<&str>,
        overwrite: bool,
    ) -> Result<EventLogWriter, String> {
        let dir = resolve_log_dir(dir)?;
        match std::fs::metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(one_line(format!(
                    "Log directory {} is not a directory.",
                    display_uri(&dir)
                )))
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(one_line(format!("File {} does not exist", display_uri(&dir))))
            }
            Err(e) => {
                return Err(one_line(format!(
                    "Cannot access log directory {}: {e}",
                    display_uri(&dir)
                )))
            }
        }
        if app_id.is_empty() {
            return Err(one_line(format!(
                "Cannot start an event log in {}: the application id is empty",
                display_uri(&dir)
            )));
        }
        if attempt_id.is_some_and(str::is_empty) {
            return Err(one_line(format!(
                "Cannot start the event log of {app_id} in {}: the attempt id is empty",
                display_uri(&dir)
            )));
        }
        let name = log_file_name(app_id, attempt_id);
        let final_path = dir.join(&name);
        let in_progress_path = dir.join(format!("{name}{IN_PROGRESS_SUFFIX}"));
        if !overwrite && std::fs::symlink_metadata(&final_path).is_ok() {
            return Err(one_line(format!(
                "Target log file already exists ({})",
                display_uri(&final_path)
            )));
        }
        if overwrite {
            match std::fs::remove_file(&in_progress_path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(one_line(format!(
                        "Cannot replace event log {}: {e}",
                        display_uri(&in_progress_path)
                    )))
                }
            }
        }
        // Spark's EventLogFileWriter.LOG_FILE_PERMISSIONS (rw-rw----), from its creation on.
        let file = perms::create(&in_progress_path, perms::EVENT_LOG_FILE_MODE).map_err(|e| {
            one_line(format!(
                "Cannot create event log {}: {e}",
                display_uri(&in_progress_path)
            ))
        })?;
        let mut writer = EventLogWriter {
            file,
            in_progress_path,
            final_path,
            overwrite,
            written: 0,
        };
        writer.write_json(&log_start_json(SPARK_VERSION))?;
        Ok(writer)
    }

    /// The file being written (`....inprogress`).
    pub fn in_progress_path(&self) -> &Path {
        &self.in_progress_path
    }

    /// The name the log gets when [`EventLogWriter::stop`] succeeds.
    pub fn final_path(&self) -> &Path {
        &self.final_path
    }

    /// Logs one event as one line (nothing for events Spark does not log, see [`should_log`]).
    pub fn write(&mut self, event: &SparkListenerEvent) -> Result<(), String> {
        if !should_log(event) {
            return Ok(());
        }
        self.write_json(&event_to_json(event))
    }

    /// Logs an event already in JSON form (such as [`resource_profile_added_json`]). It must be
    /// an object with a string "Event" field.
    pub fn write_json(&mut self, event: &Value) -> Result<(), String> {
        let name = match event.get("Event") {
            Some(Value::String(name)) if event.is_object() => name.clone(),
            _ => {
                return Err(one_line(format!(
                    "Cannot write to event log {}: the event is not a JSON object with an \"Event\" name",
                    display_uri(&self.in_progress_path)
                )))
            }
        };
        let mut line = event.to_string();
        line.push('\n');
        let result = self
            .file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush());
        match result {
            Ok(()) => {
                self.written += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Cut a partly written line off, so later lines do not follow a broken one.
                let _ = self.file.set_len(self.written);
                let _ = self.file.seek(SeekFrom::Start(self.written));
                Err(one_line(format!(
                    "Cannot write {name} to event log {}: {e}",
                    display_uri(&self.in_progress_path)
                )))
            }
        }
    }

    /// Closes the log and renames it to its final name (the application has completed).
    /// An existing file of that name is replaced only with `overwrite`; otherwise this fails
    /// with Spark's message and the `.inprogress` file stays.
    pub fn stop(self) -> Result<PathBuf, String> {
        let EventLogWriter {
            file,
            in_progress_path,
            final_path,
            overwrite,
            ..
        } = self;
        drop(file);
        match std::fs::symlink_metadata(&final_path) {
            Ok(meta) if overwrite => {
                let removed = if meta.is_dir() {
                    std::fs::remove_dir_all(&final_path)
                } else {
                    std::fs::remove_file(&final_path)
                };
                if let Err(e) = removed {
                    return Err(one_line(format!(
                        "Cannot replace event log {}: {e}",
                        display_uri(&final_path)
                    )));
                }
            }
            Ok(_) => {
                return Err(one_line(format!(
                    "Target log file already exists ({})",
                    display_uri(&final_path)
                )))
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                return Err(one_line(format!(
                    "Cannot access event log {}: {e}",
                    display_uri(&final_path)
                )))
            }
        }
        std::fs::rename(&in_progress_path, &final_path).map_err(|e| {
            one_line(format!(
                "Cannot rename event log {} to {}: {e}",
                display_uri(&in_progress_path),
                display_uri(&final_path)
            ))
        })?;
        // Like Spark, make the completed log's modification time current.
        if let Ok(f) = OpenOptions::new().append(true).open(&final_path) {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
        Ok(final_path)
    }
}
