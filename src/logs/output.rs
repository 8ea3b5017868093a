//! Process output: what an application prints through its environment, kept as its
//! container's stdout. Logs layer: a container's stdout is written beside its records
//! (`apps/<app>/<container>/stdout`), and the NodeManager that runs the container keeps it;
//! neither needs to know what runs inside.
//!
//! In client mode it goes to the submitting process's stdout. In cluster mode it goes to
//! the driver container's stdout, which the NodeManager keeps (so the Client can fetch and
//! print it after the final report) and which the log directory keeps beside the
//! container's records (`apps/<app>/<container>/stdout`).

use std::io::Write;
use std::sync::{Arc, Mutex};

use super::sink::LogSink;

/// How much of a container's stdout its NodeManager keeps in memory (the file under the log
/// directory keeps everything).
pub const MAX_KEPT_OUTPUT: usize = 1 << 20;

#[derive(Debug)]
enum Target {
    Stdout,
    Container {
        kept: Mutex<String>,
        file: Option<(Arc<LogSink>, String, String)>,
    },
}

/// Where an application's output goes; cheap to clone.
#[derive(Clone, Debug)]
pub struct OutputSink(Arc<Target>);

impl OutputSink {
    /// The process's stdout (client mode).
    pub fn stdout() -> OutputSink {
        OutputSink(Arc::new(Target::Stdout))
    }

    /// A container's stdout, also appended to `apps/<app_id>/<container_id>/stdout` under
    /// the sink's log directory, if it has one.
    pub fn container(sink: Option<Arc<LogSink>>, app_id: &str, container_id: &str) -> OutputSink {
        OutputSink(Arc::new(Target::Container {
            kept: Mutex::new(String::new()),
            file: sink.map(|s| (s, app_id.to_string(), container_id.to_string())),
        }))
    }

    /// Writes one line.
    pub fn println(&self, line: &str) {
        match &*self.0 {
            Target::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            Target::Container { kept, file } => {
                {
                    let mut k = kept.lock().unwrap_or_else(|p| p.into_inner());
                    if k.len() + line.len() < MAX_KEPT_OUTPUT {
                        k.push_str(line);
                        k.push('\n');
                    }
                }
                if let Some((sink, app, container)) = file {
                    sink.append_stdout(app, container, &format!("{line}\n"));
                }
            }
        }
    }

    /// What was written so far (empty for stdout). A container whose process wrote its
    /// stdout file itself (a container that is an OS process) answers that file's first
    /// [`MAX_KEPT_OUTPUT`] bytes.
    pub fn text(&self) -> String {
        match &*self.0 {
            Target::Stdout => String::new(),
            Target::Container { kept, file } => {
                let kept = kept.lock().unwrap_or_else(|p| p.into_inner()).clone();
                match file {
                    Some((sink, app, container)) if kept.is_empty() => sink
                        .dir()
                        .map(|dir| read_head(&stdout_file(dir, app, container)))
                        .unwrap_or_default(),
                    _ => kept,
                }
            }
        }
    }
}

/// Where a container's stdout file lives under a log directory:
/// `<dir>/apps/<app_id>/<container_id>/stdout` (what a container process's stdout is
/// redirected to).
pub fn stdout_file(dir: &std::path::Path, app_id: &str, container_id: &str) -> std::path::PathBuf {
    dir.join("apps")
        .join(app_id)
        .join(container_id)
        .join(super::sink::CONTAINER_STDOUT_FILE)
}

/// The first [`MAX_KEPT_OUTPUT`] bytes of `path`, cut at a line end; empty if unreadable.
fn read_head(path: &std::path::Path) -> String {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(path) else {
        return String::new();
    };
    let mut bytes = Vec::new();
    let _ = file.take(MAX_KEPT_OUTPUT as u64).read_to_end(&mut bytes);
    if bytes.len() >= MAX_KEPT_OUTPUT {
        let end = bytes
            .iter()
            .rposition(|b| *b == b'\n')
            .map(|i| i + 1)
            .unwrap_or(0);
        bytes.truncate(end);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_output_is_kept() {
        let out = OutputSink::container(None, "application_1_0001", "container_1_0001_01_000001");
        out.println("Pi is roughly 3.14");
        out.clone().println("done");
        assert_eq!(out.text(), "Pi is roughly 3.14\ndone\n");
    }
}
