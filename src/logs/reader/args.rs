//! The arguments of `sparkyard logs` (the log directory, the filters by application,
//! container, actor, level and text, the output form), what each filter matches, and the
//! command's errors, each printed as one line.
//!
//! Layer: logs (the reader of what the log writer wrote), the bottom layer.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde_json::Value;

use super::*;

/// Environment variable consulted when `--log-dir` is not given.
pub const LOG_DIR_ENV: &str = "SPARKYARD_LOG_DIR";
/// Log directory used when neither `--log-dir` nor [`LOG_DIR_ENV`] is set.
pub const DEFAULT_LOG_DIR: &str = "./logs";
/// Print the structured logs written by sparkyard's actors.
///
/// Without `--json`, records are grouped like `yarn logs -applicationId`:
/// first one block per node log, then one block per container (sorted by
/// container id) holding its actor records and its stdout. With `--json`,
/// matching records are printed as JSON lines merged in time order.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct LogsArgs {
    /// Log directory to read [default: $SPARKYARD_LOG_DIR, else ./logs]
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,

    /// Only logs of this application: its containers, plus node records tagged with its app_id
    /// (also spelled -applicationId, as `yarn logs` takes it)
    #[arg(long, value_name = "APP_ID")]
    pub app: Option<String>,

    /// Only logs of this container: its files, plus node records tagged with its container_id
    #[arg(long, value_name = "CONTAINER_ID")]
    pub container: Option<String>,

    /// Only records whose whole actor path matches GLOB; `*` matches anything, `/` included
    #[arg(long, value_name = "GLOB")]
    pub actor: Option<String>,

    /// Only records at LEVEL or more severe (error, warn, info, debug, trace; any case)
    #[arg(long, value_name = "LEVEL")]
    pub level: Option<String>,

    /// Only lines containing TEXT (plain substring of the raw line)
    #[arg(long, value_name = "TEXT")]
    pub grep: Option<String>,

    /// Keep running and print matching records as they are appended, until interrupted
    #[arg(long)]
    pub follow: bool,

    /// Print matching records as JSON lines merged in time order, without headers
    #[arg(long)]
    pub json: bool,

    /// Only the supervision story, in time order across all files: kills, partitions,
    /// failures, supervisors' decisions, restarts and escalations (with --app, also the
    /// submit side's and the node's own actors' records that concern the application)
    #[arg(long, conflicts_with = "follow")]
    pub supervision: bool,

    /// Draw the application's event timeline into FILE as an SVG picture: executors added and
    /// removed, jobs and stages, tasks as bars in executor lanes, and every kill, failure,
    /// restart and escalation marked where it happened (needs --app)
    #[arg(
        long,
        value_name = "FILE",
        requires = "app",
        conflicts_with_all = ["follow", "json", "supervision", "container", "actor", "level", "grep"]
    )]
    pub timeline: Option<PathBuf>,
}

/// Why `sparkyard logs` could not do its job. Every variant prints as one line.
#[derive(Debug)]
pub enum LogsError {
    /// The log directory does not exist.
    MissingLogDir(PathBuf),
    /// The log directory path exists but is not a directory.
    NotADirectory(PathBuf),
    /// `--app` named an application that left no logs.
    UnknownApp { app: String, log_dir: PathBuf },
    /// `--container` named a container that left no logs.
    UnknownContainer { container: String, log_dir: PathBuf },
    /// `--level` was not one of the known levels.
    BadLevel(String),
    /// `--app` or `--container` was not usable as a single directory name.
    BadId { flag: &'static str, value: String },
    /// Writing the output failed (for example a closed pipe).
    Output(io::Error),
    /// `--timeline` could not read the application's timeline (the reader's one line).
    Timeline(String),
    /// `--timeline` could not write its picture.
    TimelineWrite { path: PathBuf, error: io::Error },
}

impl fmt::Display for LogsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogsError::MissingLogDir(dir) => write!(
                f,
                "log directory {} does not exist (set --log-dir or {LOG_DIR_ENV})",
                dir.display()
            ),
            LogsError::NotADirectory(dir) => write!(
                f,
                "log directory {} is not a directory (set --log-dir or {LOG_DIR_ENV})",
                dir.display()
            ),
            LogsError::UnknownApp { app, log_dir } => {
                write!(f, "no logs for application {app} under {}", log_dir.display())
            }
            LogsError::UnknownContainer { container, log_dir } => {
                write!(f, "no logs for container {container} under {}", log_dir.display())
            }
            LogsError::BadLevel(value) => write!(
                f,
                "unknown log level {value:?} (expected one of: error, warn, info, debug, trace)"
            ),
            LogsError::BadId { flag, value } => write!(
                f,
                "invalid {flag} value {value:?}: expected a plain id such as application_1700000000000_0001"
            ),
            LogsError::Output(e) => write!(f, "cannot write output: {e}"),
            LogsError::Timeline(line) => f.write_str(line),
            LogsError::TimelineWrite { path, error } => {
                write!(f, "cannot write the timeline to {}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for LogsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LogsError::Output(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for LogsError {
    fn from(e: io::Error) -> Self {
        LogsError::Output(e)
    }
}

/// The log directory to read: `flag` when given, else `$SPARKYARD_LOG_DIR`
/// when set and non-empty, else `./logs`.
pub fn resolve_log_dir(flag: Option<&Path>) -> PathBuf {
    if let Some(dir) = flag {
        return dir.to_path_buf();
    }
    match std::env::var_os(LOG_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(DEFAULT_LOG_DIR),
    }
}

/// Record severity, most severe first (so `a <= b` means "a is at least as
/// severe as b").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl Level {
    /// All levels, most severe first.
    pub const ALL: [Level; 5] = [Level::Error, Level::Warn, Level::Info, Level::Debug, Level::Trace];

    /// The upper-case name the log writer uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
            Level::Trace => "TRACE",
        }
    }

    /// Parses a level name in any letter case.
    pub fn parse(name: &str) -> Option<Level> {
        Level::ALL
            .into_iter()
            .find(|level| level.as_str().eq_ignore_ascii_case(name))
    }
}

impl FromStr for Level {
    type Err = LogsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Level::parse(s).ok_or_else(|| LogsError::BadLevel(s.to_owned()))
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which records and lines `sparkyard logs` prints. All conditions that are
/// set must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// The record's `app_id` must equal this.
    pub app: Option<String>,
    /// The record's `container_id` must equal this.
    pub container: Option<String>,
    /// The record's `actor` must match this glob (see [`glob_match`]).
    pub actor: Option<String>,
    /// The record's `level` must be this severe or more.
    pub min_level: Option<Level>,
    /// The raw line must contain this text.
    pub grep: Option<String>,
}

impl Filter {
    /// Builds the filter for `args`, validating `--level`, `--app` and
    /// `--container`.
    pub fn from_args(args: &LogsArgs) -> Result<Filter, LogsError> {
        let min_level = args.level.as_deref().map(str::parse).transpose()?;
        if let Some(app) = &args.app {
            check_id("--app", app)?;
        }
        if let Some(container) = &args.container {
            check_id("--container", container)?;
        }
        Ok(Filter {
            app: args.app.clone(),
            container: args.container.clone(),
            actor: args.actor.clone(),
            min_level,
            grep: args.grep.clone(),
        })
    }

    /// Whether a parsed record (and the raw line it came from) passes.
    /// A record lacking a field that a condition looks at does not pass it.
    pub fn matches(&self, record: &Value, raw_line: &str) -> bool {
        if let Some(grep) = &self.grep {
            if !raw_line.contains(grep.as_str()) {
                return false;
            }
        }
        let field = |key: &str| record.get(key).and_then(Value::as_str);
        if let Some(app) = &self.app {
            if field("app_id") != Some(app.as_str()) {
                return false;
            }
        }
        if let Some(container) = &self.container {
            if field("container_id") != Some(container.as_str()) {
                return false;
            }
        }
        if let Some(min) = self.min_level {
            match field("level").and_then(Level::parse) {
                Some(level) if level <= min => {}
                _ => return false,
            }
        }
        if let Some(pattern) = &self.actor {
            match field("actor") {
                Some(actor) if glob_match(pattern, actor) => {}
                _ => return false,
            }
        }
        true
    }

    /// Whether a plain-text line (a container's stdout) passes: only
    /// `--grep` applies to such lines.
    pub fn matches_text(&self, line: &str) -> bool {
        self.grep.as_deref().is_none_or(|grep| line.contains(grep))
    }

    /// Whether stdout files are shown at all: plain text has no actor or
    /// level, so either filter hides them.
    pub fn shows_stdout(&self) -> bool {
        self.actor.is_none() && self.min_level.is_none()
    }

    /// The filter for records read from a container's own file: the file's
    /// location already settles `--app` and `--container`.
    pub(super) fn inside_container(&self) -> Filter {
        Filter {
            app: None,
            container: None,
            ..self.clone()
        }
    }
}

/// An id given on the command line becomes a directory name, so it must be
/// one plain path component.
pub(super) fn check_id(flag: &'static str, value: &str) -> Result<(), LogsError> {
    let bad = value.is_empty()
        || value == "."
        || value == ".."
        || value.chars().any(|c| c == '/' || c == '\\' || c.is_control());
    if bad {
        Err(LogsError::BadId {
            flag,
            value: value.to_owned(),
        })
    } else {
        Ok(())
    }
}
