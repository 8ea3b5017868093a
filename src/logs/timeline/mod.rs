//! An application's event timeline and supervision tree, rebuilt from the structured records
//! its actors wrote: executors added and removed, jobs and stages, tasks as bars in executor
//! lanes, every kill, failure, restart and escalation marked where it happened, and the tree
//! of actors with their incarnations. `sparkyard logs --app <id> --timeline out.svg` draws
//! it after the fact; the web UI draws it while the application runs.
//!
//! Three parts, one file each:
//! - [`model`]: the pure core, [`Timeline`] and the [`TimelineBuilder`] that folds records
//!   into it (no files, no clock);
//! - [`reader`]: [`TimelineReader`], which finds the application's files under a log
//!   directory and feeds the builder only what was appended since its last refresh;
//! - [`svg`]: [`render_svg`], a self-contained SVG picture of a timeline.
//!
//! Layer: logs, the bottom layer (it reads what `logs::writer` wrote; nothing above `logs`).
//!
//! Bounded: a timeline keeps at most [`MAX_TASKS`] task bars (the newest; the older ones
//! are counted in [`Timeline::tasks_dropped`] and the picture says so), [`MAX_MARKS`]
//! marks, [`MAX_ACTORS`] actors, [`MAX_EXECUTORS`] executor lanes, [`MAX_JOBS`] jobs and
//! [`MAX_STAGES`] stages, whatever the logs hold.

pub mod model;
pub mod reader;
pub mod svg;
pub mod xml;

pub use model::{
    ActorNode, ExecutorLane, JobSpan, Mark, MarkKind, Outcome, StageSpan, TaskBar, Timeline, TimelineBuilder,
    MAX_ACTORS, MAX_EXECUTORS, MAX_JOBS, MAX_MARKS, MAX_STAGES, MAX_TASKS,
};
pub use reader::TimelineReader;
pub use svg::render_svg;

use std::io::Write;
use std::path::Path;

use super::reader::LogsError;

/// `sparkyard logs --app <app> --timeline <file>`: reads the application's timeline from the
/// log directory `dir`, writes its picture to `file`, and prints one line on `out` saying
/// where and how much. Skipped lines are reported on `err`. An application that left no
/// records, or a file that cannot be written, is an error (and no file is written).
pub fn write_svg(
    dir: &Path,
    app: &str,
    file: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), LogsError> {
    let mut reader = TimelineReader::new(dir, app);
    let result = reader.refresh().map(|t| (render_svg(t), svg::summary(t)));
    for w in reader.warnings() {
        let _ = writeln!(err, "sparkyard logs: {w}");
    }
    let more = reader.skipped().saturating_sub(reader.warnings().len() as u64);
    if more > 0 {
        let _ = writeln!(err, "sparkyard logs: {more} more lines or files skipped");
    }
    let (picture, summary) = result.map_err(LogsError::Timeline)?;
    std::fs::write(file, &picture).map_err(|error| LogsError::TimelineWrite {
        path: file.to_path_buf(),
        error,
    })?;
    writeln!(
        out,
        "Wrote the timeline of {app} to {} ({} bytes): {summary}",
        file.display(),
        picture.len()
    )?;
    Ok(())
}
