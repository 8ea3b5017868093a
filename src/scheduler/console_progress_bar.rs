//! The ConsoleProgressBar: Spark's one-line view of the running stages on the driver's
//! console (stderr), `[Stage 0:=======>          (12 + 2) / 40]`.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! As Spark's does, it samples instead of listening: a timer (first after 500 ms, then every
//! `spark.ui.consoleProgress.update.interval`, 200 ms) asks the DriverEndpoint, which owns
//! the TaskSchedulerImpl, for the active stage attempts' progress ([`GetStageProgress`]:
//! tasks, finished, running, submission time; what Spark's AppStatusStore answers it). So it
//! adds nothing per task: no listener event is built for it.
//!
//! The rules are Spark's ([`ProgressBarCore`]): nothing within 500 ms of the last job's
//! end; a stage shows once it has run for more than 500 ms; at most 3 stages side by side,
//! by stage id, each in an equal share of the width (`COLUMNS`, else 80); the line is
//! written as `\r<bar>\r` only when it changed (or after a minute, so an idle ssh session
//! is kept alive); when a job ends the SparkContext sends [`FinishAll`], which erases the
//! line (`\r`, a width of spaces, `\r`) before the job's result is used.
//!
//! It runs with `spark.ui.showConsoleProgress=true` (false unless set: Spark turns it on by
//! default only in its shells), in client mode (the driver's console is the submitting
//! terminal; in cluster mode the driver's stderr is its container's log), and only when
//! stderr is a terminal (a bar drawn into a file is noise; Spark draws it anyway, see the
//! README's departures). The core (what has been drawn, when the last job ended) is kept
//! by the driver's supervisor, so a restarted bar still erases what its predecessor drew.

use std::io::Write;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, WrapFuture};

use crate::runtime::timers::run_at_fixed_rate;
use crate::runtime::{ActorPath, Kept, Me};

/// Spark's first-show delay: a stage shows only after it ran this long, and nothing shows
/// this soon after a job ended.
pub const FIRST_DELAY_MS: u64 = 500;

/// At most this many stages share the line.
pub const MAX_STAGES: usize = 3;

/// The width without `COLUMNS`.
pub const DEFAULT_WIDTH: usize = 80;

/// An unchanged bar is written again after this long (an idle ssh session may be closed).
const REDRAW_UNCHANGED_MS: u64 = 60_000;

/// One active stage attempt's progress (Spark's StageData as the bar reads it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageProgress {
    pub stage_id: u32,
    pub stage_attempt: u32,
    pub num_tasks: u32,
    /// Tasks that finished successfully.
    pub completed: u32,
    /// Task attempts running now.
    pub active: u32,
    /// Milliseconds since the epoch.
    pub submission_time_ms: u64,
}

/// Asks the DriverEndpoint for the active stage attempts' progress, by stage id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, actix::Message)]
#[rtype(result = "Vec<StageProgress>")]
pub struct GetStageProgress;

/// A job ended (SparkContext.runJob returned): erase the bar, hold it back for 500 ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, actix::Message)]
#[rtype(result = "()")]
pub struct FinishAll;

/// The bar's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgressBarSettings {
    pub update_interval: Duration,
    pub width: usize,
}

/// The terminal's width from `COLUMNS` (Spark's rule), else 80. A value that is not a
/// positive number is taken as unset (Spark's constructor would throw on it).
pub fn terminal_width(columns: Option<&str>) -> usize {
    match columns.map(str::trim).filter(|c| !c.is_empty()) {
        None => DEFAULT_WIDTH,
        Some(c) => match c.parse::<usize>() {
            Ok(w) if w > 0 => w,
            _ => {
                tracing::warn!(
                    columns = c,
                    "COLUMNS={c} is not a positive number; the console progress bar is {DEFAULT_WIDTH} wide"
                );
                DEFAULT_WIDTH
            }
        },
    }
}

/// Spark's YarnAllocator reports this constant progress in every Allocate; sparkyard's AM
/// reports it while no stage runs.
pub const YARN_IDLE_PROGRESS: f32 = 0.1;

/// The progress a cluster-mode AM reports to YARN (a departure: Spark reports 0.1 always):
/// the finished share of the active stages' tasks, 0 to 1; [`YARN_IDLE_PROGRESS`] while no
/// stage runs.
pub fn application_progress(stages: &[StageProgress]) -> f32 {
    let total: u64 = stages.iter().map(|s| s.num_tasks as u64).sum();
    if total == 0 {
        return YARN_IDLE_PROGRESS;
    }
    let done: u64 = stages.iter().map(|s| s.completed.min(s.num_tasks) as u64).sum();
    (done as f64 / total as f64) as f32
}

/// Draws `stages` (already chosen: at most [`MAX_STAGES`]) side by side in `width`
/// columns, as Spark's `show` does: each stage gets `width / n` columns for
/// `[Stage <id>:` + bar + `(<finished> + <running>) / <total>]`; the bar is `=` up to the
/// finished share, `>` at it, spaces after, and left out when there is no room.
pub fn render(width: usize, stages: &[StageProgress]) -> String {
    if stages.is_empty() {
        return String::new();
    }
    let share = width / stages.len();
    let mut line = String::new();
    for s in stages {
        let header = format!("[Stage {}:", s.stage_id);
        let tailer = format!("({} + {}) / {}]", s.completed, s.active, s.num_tasks);
        line.push_str(&header);
        let room = share.saturating_sub(header.len() + tailer.len());
        if room > 0 && s.num_tasks > 0 {
            let done = room * s.completed.min(s.num_tasks) as usize / s.num_tasks as usize;
            for i in 0..room {
                line.push(match i.cmp(&done) {
                    std::cmp::Ordering::Less => '=',
                    std::cmp::Ordering::Equal => '>',
                    std::cmp::Ordering::Greater => ' ',
                });
            }
        }
        line.push_str(&tailer);
    }
    line
}

/// Cluster mode's line for an application's progress from its YARN reports (the submitting
/// terminal has no stages to show: the driver runs in the AM's container), in the bar's
/// style: `[application_..._0001:=========>              (25%)]` in `width` columns;
/// `progress` is the report's, 0 to 1.
pub fn render_application_progress(width: usize, app_id: &str, progress: f32) -> String {
    let progress = if progress.is_finite() {
        progress.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let percent = (progress * 100.0).floor() as usize;
    let header = format!("[{app_id}:");
    let tailer = format!("({percent}%)]");
    let room = width.saturating_sub(header.len() + tailer.len());
    let mut line = header;
    if room > 0 {
        let done = ((room as f64) * progress as f64).floor() as usize;
        for i in 0..room {
            line.push(match i.cmp(&done) {
                std::cmp::Ordering::Less => '=',
                std::cmp::Ordering::Equal => '>',
                std::cmp::Ordering::Greater => ' ',
            });
        }
    }
    line.push_str(&tailer);
    line
}

/// What the bar has drawn and when the last job ended; decides what to write (pure: every
/// call takes the time).
#[derive(Clone, Debug)]
pub struct ProgressBarCore {
    width: usize,
    last_finish_ms: u64,
    last_update_ms: u64,
    last_bar: String,
}

impl ProgressBarCore {
    pub fn new(width: usize) -> Self {
        ProgressBarCore {
            width: width.max(1),
            last_finish_ms: 0,
            last_update_ms: 0,
            last_bar: String::new(),
        }
    }

    /// The stages that show at `now`: run for more than 500 ms, with tasks, the first 3 by
    /// stage id.
    pub fn shown(now_ms: u64, stages: &[StageProgress]) -> Vec<StageProgress> {
        let mut shown: Vec<StageProgress> = stages
            .iter()
            .filter(|s| s.num_tasks > 0 && now_ms.saturating_sub(s.submission_time_ms) > FIRST_DELAY_MS)
            .cloned()
            .collect();
        shown.sort_by_key(|s| (s.stage_id, s.stage_attempt));
        shown.truncate(MAX_STAGES);
        shown
    }

    /// A timer tick with the active stages: what to write to the console, if anything.
    pub fn refresh(&mut self, now_ms: u64, stages: &[StageProgress]) -> Option<String> {
        if now_ms.saturating_sub(self.last_finish_ms) < FIRST_DELAY_MS {
            return None;
        }
        let shown = Self::shown(now_ms, stages);
        if shown.is_empty() {
            return None;
        }
        let bar = render(self.width, &shown);
        let write = bar != self.last_bar || now_ms.saturating_sub(self.last_update_ms) > REDRAW_UNCHANGED_MS;
        let out = write.then(|| {
            self.last_update_ms = now_ms;
            format!("\r{bar}\r")
        });
        self.last_bar = bar;
        out
    }

    /// Erases the bar if one is drawn: what to write.
    pub fn clear(&mut self) -> Option<String> {
        if self.last_bar.is_empty() {
            return None;
        }
        self.last_bar.clear();
        Some(format!("\r{}\r", " ".repeat(self.width)))
    }

    /// A job ended at `now`: erase, and show nothing for the next 500 ms.
    pub fn finish_all(&mut self, now_ms: u64) -> Option<String> {
        let out = self.clear();
        self.last_finish_ms = now_ms;
        out
    }

    /// The line drawn now (empty when none).
    pub fn drawn(&self) -> &str {
        &self.last_bar
    }
}

/// The ConsoleProgressBar actor; see the module docs.
pub struct ConsoleProgressBar {
    me: Me,
    core: Kept<ProgressBarCore>,
    driver_endpoint: ActorPath,
    settings: ProgressBarSettings,
    /// A GetStageProgress is out (a slow answer skips ticks instead of piling asks up).
    asking: bool,
    /// The stage ids last drawn (logged when they change).
    last_ids: Vec<u32>,
}

impl ConsoleProgressBar {
    pub fn new(
        me: Me,
        core: Kept<ProgressBarCore>,
        driver_endpoint: ActorPath,
        settings: ProgressBarSettings,
    ) -> Self {
        ConsoleProgressBar {
            me,
            core,
            driver_endpoint,
            settings,
            asking: false,
            last_ids: Vec::new(),
        }
    }

    fn now(&self) -> u64 {
        self.me.clock().epoch_millis()
    }

    fn write(text: &str) {
        let mut err = std::io::stderr().lock();
        // A console that is gone is no reason to fail the driver.
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.asking {
            return;
        }
        self.asking = true;
        let ask = self
            .me
            .endpoint::<crate::scheduler::driver_endpoint::TaskSchedulerProtocol>(&self.driver_endpoint)
            .ask(
                GetStageProgress,
                self.settings.update_interval.max(Duration::from_secs(1)),
            );
        ctx.spawn(ask.into_actor(self).map(|answer, act, _| {
            act.asking = false;
            // The endpoint restarting or slow: this tick draws nothing.
            let Ok(stages) = answer else { return };
            let now = act.now();
            let out = act.core.lock().refresh(now, &stages);
            let Some(text) = out else { return };
            let ids: Vec<u32> = ProgressBarCore::shown(now, &stages)
                .iter()
                .map(|s| s.stage_id)
                .collect();
            if ids != act.last_ids {
                tracing::debug!(
                    stage_ids = ?ids,
                    "Console progress bar shows stage(s) {ids:?}"
                );
                act.last_ids = ids;
            }
            Self::write(&text);
        }));
    }
}

impl Actor for ConsoleProgressBar {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let s = self.settings;
        tracing::info!(
            update_interval_ms = s.update_interval.as_millis() as u64,
            first_delay_ms = FIRST_DELAY_MS,
            width = s.width as u64,
            "Console progress bar on stderr: every {}, a stage after {FIRST_DELAY_MS} ms, {} columns",
            humantime::format_duration(s.update_interval),
            s.width
        );
        let clock = self.me.clock().clone();
        run_at_fixed_rate(
            ctx,
            &clock,
            Duration::from_millis(FIRST_DELAY_MS),
            s.update_interval,
            |act: &mut Self, ctx| act.tick(ctx),
        );
    }
}

impl Handler<FinishAll> for ConsoleProgressBar {
    type Result = ();

    fn handle(&mut self, _: FinishAll, _: &mut Context<Self>) {
        let now = self.now();
        let out = self.core.lock().finish_all(now);
        if let Some(text) = out {
            tracing::debug!(stage_ids = ?self.last_ids, "Console progress bar erased: the job ended");
            Self::write(&text);
        }
        self.last_ids.clear();
    }
}

crate::protocol! {
    /// What the ConsoleProgressBar is told: a job ended (FinishAll).
    pub ConsoleProgressBarProtocol { FinishAll }
}

crate::speaks!(ConsoleProgressBar: ConsoleProgressBarProtocol);

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(id: u32, tasks: u32, done: u32, running: u32, at: u64) -> StageProgress {
        StageProgress {
            stage_id: id,
            stage_attempt: 0,
            num_tasks: tasks,
            completed: done,
            active: running,
            submission_time_ms: at,
        }
    }

    #[test]
    fn one_stage_fills_the_width_with_spark_s_format() {
        let line = render(80, &[stage(0, 40, 12, 2, 0)]);
        assert_eq!(line.len(), 80);
        assert!(line.starts_with("[Stage 0:"), "{line}");
        assert!(line.ends_with("(12 + 2) / 40]"), "{line}");
        // 80 - 9 - 14 = 57 columns of bar; 57 * 12 / 40 = 17 '=' then '>'.
        let bar = &line[9..line.len() - 14];
        assert_eq!(bar.len(), 57);
        assert_eq!(&bar[..18], &format!("{}>", "=".repeat(17)));
        assert!(bar[18..].chars().all(|c| c == ' '), "{bar:?}");
    }

    #[test]
    fn nothing_done_shows_an_arrow_at_the_start_and_all_done_a_full_bar() {
        let line = render(40, &[stage(3, 10, 0, 2, 0)]);
        assert!(line.starts_with("[Stage 3:>"), "{line}");
        let full = render(40, &[stage(3, 10, 10, 0, 0)]);
        assert_eq!(
            full,
            format!("[Stage 3:{}(10 + 0) / 10]", "=".repeat(40 - 9 - 14))
        );
    }

    #[test]
    fn several_stages_share_the_width_and_a_narrow_share_drops_the_bar() {
        let stages = [stage(1, 4, 1, 1, 0), stage(2, 4, 0, 2, 0)];
        let line = render(80, &stages);
        assert_eq!(line.len(), 80);
        assert!(line.starts_with("[Stage 1:"));
        assert!(line.contains("(1 + 1) / 4][Stage 2:>"), "{line}");
        // 20 columns for a stage of 1000 tasks: no room, header and tailer only.
        let narrow = render(40, &[stage(7, 1000, 5, 3, 0), stage(8, 1000, 0, 0, 0)]);
        assert_eq!(narrow, "[Stage 7:(5 + 3) / 1000][Stage 8:(0 + 0) / 1000]");
    }

    #[test]
    fn the_am_reports_the_finished_share_of_the_active_stages() {
        assert_eq!(application_progress(&[]), YARN_IDLE_PROGRESS);
        assert_eq!(application_progress(&[stage(0, 40, 10, 2, 0)]), 0.25);
        assert_eq!(
            application_progress(&[stage(0, 10, 10, 0, 0), stage(1, 30, 0, 2, 0)]),
            0.25
        );
    }

    #[test]
    fn an_application_s_progress_line_fills_the_width() {
        let app = "application_1795708687213_0001";
        let line = render_application_progress(80, app, 0.25);
        assert_eq!(line.len(), 80);
        assert!(line.starts_with(&format!("[{app}:")), "{line}");
        assert!(line.ends_with("(25%)]"), "{line}");
        let bar = &line[app.len() + 2..line.len() - 6];
        let done = bar.len() / 4;
        assert_eq!(&bar[..=done], &format!("{}>", "=".repeat(done)));
        assert!(render_application_progress(80, app, 1.0).ends_with("=(100%)]"));
        assert_eq!(
            render_application_progress(20, app, f32::NAN),
            format!("[{app}:(0%)]")
        );
    }

    #[test]
    fn terminal_width_comes_from_columns_else_80() {
        assert_eq!(terminal_width(None), 80);
        assert_eq!(terminal_width(Some("")), 80);
        assert_eq!(terminal_width(Some("132")), 132);
        assert_eq!(terminal_width(Some("wide")), 80);
        assert_eq!(terminal_width(Some("0")), 80);
    }

    #[test]
    fn a_stage_shows_only_after_it_ran_500_ms() {
        let mut core = ProgressBarCore::new(80);
        let s = [stage(0, 40, 0, 2, 10_000)];
        assert_eq!(core.refresh(10_500, &s), None, "exactly 500 ms: not yet");
        let out = core.refresh(10_501, &s).expect("shown after 500 ms");
        assert!(
            out.starts_with("\r[Stage 0:>") && out.ends_with("(0 + 2) / 40]\r"),
            "{out:?}"
        );
    }

    #[test]
    fn at_most_three_stages_by_id_and_young_ones_wait() {
        let stages = [
            stage(4, 2, 0, 1, 0),
            stage(1, 2, 0, 1, 0),
            stage(3, 2, 0, 1, 0),
            stage(2, 2, 0, 1, 0),
            stage(0, 2, 0, 1, 900),
        ];
        let shown: Vec<u32> = ProgressBarCore::shown(1_000, &stages)
            .iter()
            .map(|s| s.stage_id)
            .collect();
        assert_eq!(shown, vec![1, 2, 3]);
    }

    #[test]
    fn an_unchanged_bar_is_not_written_again_until_a_minute_passed() {
        let mut core = ProgressBarCore::new(80);
        let s = [stage(0, 40, 5, 2, 0)];
        assert!(core.refresh(1_000, &s).is_some());
        assert_eq!(core.refresh(1_200, &s), None);
        assert!(core.refresh(1_400, &[stage(0, 40, 6, 2, 0)]).is_some());
        assert!(core.refresh(61_401, &[stage(0, 40, 6, 2, 0)]).is_some());
    }

    #[test]
    fn finish_all_erases_once_and_holds_the_bar_back_500_ms() {
        let mut core = ProgressBarCore::new(20);
        assert_eq!(core.finish_all(500), None, "nothing drawn: nothing to erase");
        let s = [stage(0, 40, 5, 2, 0)];
        assert!(core.refresh(1_100, &s).is_some());
        assert_eq!(core.finish_all(1_200), Some(format!("\r{}\r", " ".repeat(20))));
        assert_eq!(core.drawn(), "");
        assert_eq!(core.clear(), None);
        let next = [stage(1, 40, 5, 2, 0)];
        assert_eq!(core.refresh(1_699, &next), None, "within 500 ms of the job's end");
        assert!(core.refresh(1_700, &next).is_some());
    }
}
