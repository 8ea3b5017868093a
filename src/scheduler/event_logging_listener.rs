//! EventLoggingListener: the listener that writes Spark's event log (`event_log`) when
//! `spark.eventLog.enabled=true`. It is created by the SparkContext before the first event
//! (so the LogStart and ResourceProfileAdded lines come first), sees every event the bus
//! carries, and on stop renames the `.inprogress` file to its final name. A failed write is
//! logged once and the log goes on (Spark logs and carries on too).
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use std::path::PathBuf;

use super::event_log::{self, EventLogWriter};
use super::events::SparkListenerEvent;
use super::listener_bus::SparkListener;

/// The event log listener; see the module docs.
pub struct EventLoggingListener {
    writer: Option<EventLogWriter>,
    failed_writes: u64,
}

impl EventLoggingListener {
    /// Starts the log for `app_id` (attempt `attempt_id`) in `dir`; the error is Spark's
    /// message (a missing directory, an existing log without `spark.eventLog.overwrite`).
    pub fn start(
        dir: &str,
        app_id: &str,
        attempt_id: Option<&str>,
        overwrite: bool,
        profile: (u64, u32, u32),
    ) -> Result<EventLoggingListener, String> {
        let mut writer = EventLogWriter::create(dir, app_id, attempt_id, overwrite)?;
        let (memory_mb, cores, task_cpus) = profile;
        writer.write_json(&event_log::resource_profile_added_json(
            memory_mb, cores, task_cpus,
        ))?;
        tracing::info!(
            event_log = %writer.in_progress_path().display(),
            "Logging events to {}",
            writer.in_progress_path().display()
        );
        Ok(EventLoggingListener {
            writer: Some(writer),
            failed_writes: 0,
        })
    }

    /// Where the log is being written.
    pub fn in_progress_path(&self) -> Option<PathBuf> {
        self.writer.as_ref().map(|w| w.in_progress_path().to_path_buf())
    }
}

impl SparkListener for EventLoggingListener {
    fn name(&self) -> &str {
        "EventLoggingListener"
    }

    fn on_event(&mut self, event: &SparkListenerEvent) {
        if !event_log::should_log(event) {
            return;
        }
        let Some(w) = self.writer.as_mut() else { return };
        if let Err(e) = w.write(event) {
            self.failed_writes += 1;
            if self.failed_writes == 1 {
                tracing::error!(
                    "Cannot write to the event log {}: {e}",
                    w.in_progress_path().display()
                );
            }
        }
    }

    fn on_stop(&mut self) {
        let Some(w) = self.writer.take() else { return };
        match w.stop() {
            Ok(path) => {
                tracing::info!(event_log = %path.display(), "Event log written to {}", path.display())
            }
            Err(e) => tracing::error!("Cannot finish the event log: {e}"),
        }
    }
}
