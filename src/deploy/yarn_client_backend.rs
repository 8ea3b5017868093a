//! Client mode's YarnClientSchedulerBackend over the embedded ResourceManager: the YARN side
//! of a driver that runs in the submitting process.
//!
//! Layer: deploy (the Spark side: spark-submit, the YARN Client, the ApplicationMaster; above context).
//!
//! **start** submits the application whose AM is the ExecutorLauncher and waits until it
//! runs (waitForApplication: an application that ends first fails the SparkContext with its
//! diagnostics), then starts the "YARN application state monitor", which follows the
//! application while the driver runs.
//!
//! **The monitor** (Spark's MonitorThread): if the application ends while the driver runs
//! (its AM attempts failed, it was killed), it logs Spark's error, "YARN application has
//! exited unexpectedly with state FAILED! Check the YARN application logs for more
//! details.", then the diagnostics, and stops the SparkContext at once, on a thread of its
//! own as Spark's monitor is one: the application's thread fails where it waits (for
//! executors: "Spark context stopped while waiting for backend"; in a job: "Job N cancelled
//! because SparkContext was shut down"). Once it has decided that, stopping the context no
//! longer interrupts it (Spark's `allowInterrupt`).
//!
//! **stop** stops the monitor before anything else (YarnClientSchedulerBackend.stop calls
//! `monitorThread.stopMonitor()` before `super.stop()`), so the end of the application that
//! the driver's own stop causes (the ExecutorLauncher finishes when its driver goes away) is
//! never taken for an unexpected one; after the driver's actors stopped it waits for the
//! application's final report, which SparkSubmit prints.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::client::{
    follow_running_application, log_report, monitor_application, submit_application, ClientArgs, RmConnection,
};
use crate::conf::{self, SparkConf};
use crate::context::{AppEnv, ClientLauncher, ContextStopper, DriverPaths};
use crate::rpc::EndpointRef;
use crate::runtime::blocking::block_on;
use crate::runtime::{CancelToken, Cluster};
use crate::scheduler::messages::Shutdown;
use crate::scheduler::messages::YarnSchedulerProtocol;
use crate::yarn::protocol::ReportWait;
use crate::yarn::records::{ApplicationId, ApplicationReport, YarnApplicationState};

/// Spark's message when the application ends before it runs (waitForApplication).
const ENDED_BEFORE_RUNNING: &str = "The YARN application has already ended! It might have been killed or the Application Master may have failed to start. Check the YARN application logs for more details.";

/// How long stop waits for the application's final report.
const FINAL_REPORT_BOUND: Duration = Duration::from_secs(60);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where the application state monitor is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum MonitorState {
    /// Following the application (or not started yet).
    #[default]
    Running,
    /// Stopped by the context's stop: whatever the application does next is expected.
    Interrupted,
    /// Saw the application end while the driver ran, and stops the context.
    Fired,
}

/// Spark's MonitorThread, as far as stop needs to reach it.
#[derive(Debug, Default)]
struct StateMonitor {
    state: Mutex<MonitorState>,
    /// Fires on stopMonitor: the monitor's follow ends.
    interrupt: CancelToken,
}

impl StateMonitor {
    /// stopMonitor: interrupts a monitor that has not fired (allowInterrupt).
    fn stop_monitor(&self) {
        let mut state = lock(&self.state);
        if *state == MonitorState::Running {
            *state = MonitorState::Interrupted;
            self.interrupt.cancel("the SparkContext is stopping");
        }
    }

    /// The application ended: true if the monitor now owns the context's stop.
    fn fire(&self) -> bool {
        let mut state = lock(&self.state);
        if *state == MonitorState::Running {
            *state = MonitorState::Fired;
            true
        } else {
            false
        }
    }
}

/// Client mode's YarnClientSchedulerBackend start/stop (see the module docs).
#[derive(Debug)]
pub struct ClientModeLauncher {
    /// The ResourceManager: the embedded one, or a running node's over its client port.
    rm: RmConnection,
    class: String,
    primary_resource: String,
    app: Mutex<Option<ApplicationId>>,
    final_report: Mutex<Option<ApplicationReport>>,
    monitor: Arc<StateMonitor>,
}

impl ClientModeLauncher {
    /// The backend of a client-mode driver running `class` from `primary_resource`.
    pub fn new(rm: RmConnection, class: String, primary_resource: String) -> ClientModeLauncher {
        ClientModeLauncher {
            rm,
            class,
            primary_resource,
            app: Mutex::new(None),
            final_report: Mutex::new(None),
            monitor: Arc::default(),
        }
    }

    /// The application's final report, once the context has stopped.
    pub fn final_report(&self) -> Option<ApplicationReport> {
        lock(&self.final_report).clone()
    }

    /// Kills the application, if it was submitted (Ctrl-C on `sparkyard submit`).
    pub fn kill(&self, cluster: &Cluster) {
        let app = *lock(&self.app);
        if let Some(app) = app {
            let rm = self.rm.clone();
            cluster.spawn_task(async move {
                let _ = rm.kill(app, "interrupted (Ctrl-C on sparkyard submit)").await;
            });
        }
    }
}

fn launch_bound(conf: &SparkConf) -> Duration {
    conf.get(&conf::AM_MAX_WAIT_TIME)
        .unwrap_or(Duration::from_secs(100))
        + Duration::from_secs(60)
}

/// waitForApplication: follows `id` until it runs; an end before that is Spark's error.
async fn wait_for_application(
    rm: &RmConnection,
    id: ApplicationId,
    interval: Duration,
) -> Result<(), String> {
    let mut known = None;
    loop {
        let wait = known.map(|k| ReportWait {
            known: k,
            max: interval,
        });
        let r = rm.report(id, wait).await?.map_err(|e| e.to_string())?;
        log_report(&r, known);
        match r.state {
            YarnApplicationState::Running => return Ok(()),
            s if s.is_final() => {
                if r.diagnostics.is_empty() {
                    return Err(ENDED_BEFORE_RUNNING.to_string());
                }
                tracing::error!(app_id = %id, "{ENDED_BEFORE_RUNNING}");
                return Err(r.diagnostics);
            }
            _ => known = Some((r.state, r.final_status)),
        }
    }
}

/// The "YARN application state monitor": follows the application until it ends or the
/// monitor is interrupted; an end while it runs stops the context (see the module docs).
async fn monitor_while_running(
    rm: RmConnection,
    app_id: ApplicationId,
    interval: Duration,
    monitor: Arc<StateMonitor>,
    context: ContextStopper,
) {
    let interrupted = monitor.interrupt.clone();
    let report = tokio::select! {
        report = follow_running_application(&rm, app_id, interval) => report,
        _ = interrupted.cancelled() => {
            tracing::info!(app_id = %app_id, "Interrupting monitor thread");
            return;
        }
    };
    if !monitor.fire() {
        tracing::info!(app_id = %app_id, "Interrupting monitor thread");
        return;
    }
    tracing::error!(
        app_id = %app_id,
        event = "application_ended_unexpectedly",
        state = %report.state,
        final_status = %report.final_status,
        "YARN application has exited unexpectedly with state {}! Check the YARN application logs for more details.",
        report.final_status
    );
    if !report.diagnostics.is_empty() {
        tracing::error!(app_id = %app_id, "Diagnostics message: {}", report.diagnostics);
    }
    // sc.stop() waits on the driver's actors: never on the arbiter's thread.
    let log = crate::logs::ctx::current();
    let spawned = std::thread::Builder::new()
        .name("YARN application state monitor".into())
        .spawn(move || {
            let _scope = log.as_ref().map(crate::logs::LogScope::enter);
            context.stop();
        });
    if let Err(e) = spawned {
        tracing::error!(app_id = %app_id, "cannot start a thread to stop the SparkContext: {e}");
    }
}

impl ClientLauncher for ClientModeLauncher {
    fn launch(&self, env: &AppEnv, driver: &DriverPaths, context: ContextStopper) -> Result<String, String> {
        let rm = self.rm.clone();
        let args = ClientArgs {
            conf: env.conf.clone(),
            main_class: self.class.clone(),
            primary_resource: self.primary_resource.clone(),
            app_args: Vec::new(),
            client_mode_driver: Some(env.cluster.url_of(&driver.yarn_scheduler)),
        };
        let interval = env
            .conf
            .get(&conf::REPORT_INTERVAL)
            .unwrap_or(Duration::from_secs(1));
        let rm2 = rm.clone();
        let app_id = block_on(
            &env.cluster,
            async move {
                let id = submit_application(&rm2, &args).await?;
                wait_for_application(&rm2, id, interval).await.map(|()| id)
            },
            launch_bound(&env.conf),
        )
        .map_err(|e| e.to_string())??;
        *lock(&self.app) = Some(app_id);
        tracing::info!(app_id = %app_id, "Application {app_id} has started running.");
        let monitor = self.monitor.clone();
        env.cluster
            .spawn_task(monitor_while_running(rm, app_id, interval, monitor, context));
        Ok(app_id.to_string())
    }

    fn stopping(&self) {
        self.monitor.stop_monitor();
    }

    fn stopped(&self, env: &AppEnv, driver: &DriverPaths) {
        let yse: EndpointRef<YarnSchedulerProtocol> = env.cluster.endpoint(&driver.yarn_scheduler);
        let _ = yse.tell(Shutdown { exit_code: 0 });
        let app = *lock(&self.app);
        let Some(app) = app else { return };
        let rm = self.rm.clone();
        let report = block_on(
            &env.cluster,
            async move { monitor_application(&rm, app, Duration::from_millis(500), false).await },
            FINAL_REPORT_BOUND,
        );
        if let Ok(report) = report {
            *lock(&self.final_report) = Some(report);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_monitor_never_fires_and_a_fired_one_is_not_interrupted() {
        let m = StateMonitor::default();
        m.stop_monitor();
        assert!(m.interrupt.is_cancelled());
        assert!(!m.fire(), "the end the stop caused is expected");

        let m = StateMonitor::default();
        assert!(m.fire());
        m.stop_monitor();
        assert!(
            !m.interrupt.is_cancelled(),
            "allowInterrupt is false once it fired"
        );
        assert!(!m.fire());
    }
}
