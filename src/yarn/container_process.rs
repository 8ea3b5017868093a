//! The actor that owns one container's OS process, at `<container>/process`: YARN's
//! ContainerLaunch (start, watch, clean up) and the container's share of the
//! ContainersMonitor.
//!
//! Layer: yarn. [`container_process_child`] is the child spec a launcher puts in its
//! [`Process`](crate::yarn::launcher::Process): the container's significant child, never
//! restarted, so the container ends when its process does, with its exit status.
//!
//! [`ContainerProcess`] starts the process in `started()` ([`launch`]); a program that cannot
//! start ends the incarnation at once with `ExitReason::Exit` carrying bash's status (127,
//! 126, or -1 when its directories could not be made) and the diagnostics. It records the
//! pid in the node's [`ContainerProcesses`] table (for fault injection) and awaits the exit
//! on the actor's own runtime (tokio reaps it on SIGCHLD; nothing blocks). The process's
//! end is the incarnation's: `Exit { code: <YARN exit status>, message }`. Every
//! `yarn.nodemanager.container-monitor.interval-ms` it checks the process tree's memory
//! (read from `/proc` on tokio's blocking pool);
//! beyond the allocation (with `yarn.nodemanager.pmem-check-enabled`) the process is
//! stopped and the incarnation ends with exit status -104 and the monitor's diagnostics.
//!
//! A stop (its supervisor's shutdown, or fault injection's) sends SIGTERM to the process
//! group and SIGKILL `yarn.nodemanager.sleep-delay-before-sigkill.ms` later if it still
//! runs; the actor keeps running (`stopping()` answers `Continue`) until the process is
//! reaped, then ends with the process's status (143 after SIGTERM, 137 after SIGKILL).
//! Whatever is left of the group once its root is reaped (however it ended) gets SIGTERM,
//! then SIGKILL after the delay, as YARN's cleanup of a completed container. If the
//! actor is dropped with its process still running (an abort, its arbiter stopping, a
//! shutdown time-out), a guard kills the group with SIGKILL: no container process outlives
//! its actor.

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Running, WrapFuture};
use dashmap::DashMap;

use super::container_executor::{
    exit_diagnostics, launch, signal_group, yarn_exit_status, ContainerExecutorConf, ContainerProcessSpec,
    ProcessSignal,
};
use super::container_monitor::{
    check_memory, group_has_live, page_size, read_tree, MemoryKill, MemoryLimits, ProcInfo, ProcessTree,
};
use crate::runtime::timers::{run_later, run_with_fixed_delay};
use crate::runtime::{ChildSpec, ExitReason, Me, Restart, Shutdown};
use crate::yarn::records::ContainerId;

/// The id of the process child under a container's supervisor.
pub const PROCESS_CHILD: &str = "process";

/// How long a stopped container's actor may take beyond the SIGKILL delay before its
/// supervisor aborts it (its guard then kills the group).
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The node's running container processes: container id → pid (also the process group's
/// id). Cheap to clone; a process is in it from its start until it is reaped.
#[derive(Clone, Debug, Default)]
pub struct ContainerProcesses(Arc<DashMap<ContainerId, u32>>);

impl ContainerProcesses {
    pub fn new() -> ContainerProcesses {
        ContainerProcesses::default()
    }

    /// The pid of the container's process while it runs.
    pub fn pid(&self, id: &ContainerId) -> Option<u32> {
        self.0.get(id).map(|e| *e.value())
    }

    /// Every running container process, by container id.
    pub fn list(&self) -> Vec<(ContainerId, u32)> {
        let mut all: Vec<(ContainerId, u32)> = self.0.iter().map(|e| (*e.key(), *e.value())).collect();
        all.sort();
        all
    }

    /// Sends `signal` to the container's process group (fault injection); the pid it went
    /// to, or why it could not be sent.
    pub fn signal(&self, id: &ContainerId, signal: ProcessSignal) -> Result<u32, String> {
        let pid = self
            .pid(id)
            .ok_or_else(|| format!("container {id} has no running process on this node"))?;
        tracing::info!(
            event = "container_process_signal",
            container_id = %id,
            pid,
            signal = %signal,
            "Sending signal {signal} to container {id}'s process group {pid}"
        );
        signal_group(pid, signal)
            .map(|()| pid)
            .map_err(|e| format!("cannot send {signal} to process group {pid} of container {id}: {e}"))
    }

    fn insert(&self, id: ContainerId, pid: u32) {
        self.0.insert(id, pid);
    }

    /// Forgets the container's process if it is `pid` (a later process of the same
    /// container is left alone).
    fn remove(&self, id: &ContainerId, pid: u32) {
        self.0.remove_if(id, |_, p| *p == pid);
    }
}

/// The child spec of a container's process: the container's significant child, never
/// restarted, stopped with SIGTERM then SIGKILL (its supervisor waits for that, plus a
/// grace).
pub fn container_process_child(
    spec: ContainerProcessSpec,
    conf: ContainerExecutorConf,
    processes: ContainerProcesses,
) -> ChildSpec {
    let shutdown = Shutdown::Timeout(conf.sigkill_delay + STOP_GRACE);
    ChildSpec::worker(PROCESS_CHILD, move |_, me| {
        ContainerProcess::new(me, spec.clone(), conf.clone(), processes.clone())
    })
    .restart(Restart::Temporary)
    .significant(true)
    .shutdown(shutdown)
}

/// Kills the process group if the actor goes away before its process is reaped, and takes
/// the process out of the node's table. Its `Drop` runs during unwinding too: nothing in it
/// may panic.
struct ProcessGuard {
    container_id: ContainerId,
    pid: u32,
    reaped: bool,
    processes: ContainerProcesses,
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        if !self.reaped {
            // The process is not reaped yet (its Child is dropped after the actor), so the
            // pid cannot have been reused.
            let sent = signal_group(self.pid, ProcessSignal::Kill).is_ok();
            tracing::warn!(
                event = "container_process_orphan_killed",
                container_id = %self.container_id,
                pid = self.pid,
                sent,
                "Container {}'s actor ended before its process; killed process group {}",
                self.container_id,
                self.pid
            );
        }
        self.processes.remove(&self.container_id, self.pid);
    }
}

/// Why the process is being stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StopCause {
    /// The actor was asked to stop (its container is stopped, or fault injection).
    Request,
    /// The monitor found it beyond its memory.
    Memory,
}

/// The actor; see the module docs.
pub struct ContainerProcess {
    me: Me,
    spec: ContainerProcessSpec,
    conf: ContainerExecutorConf,
    processes: ContainerProcesses,
    /// The running process (none before the start, or when it could not start).
    guard: Option<ProcessGuard>,
    /// The monitor's memory of the process tree between checks.
    tree: ProcessTree,
    /// Whether a read of the process tree is on its way.
    checking: bool,
    /// Set once SIGTERM went to the group.
    stopping: Option<StopCause>,
    /// The monitor's verdict, once it killed the process.
    memory_kill: Option<MemoryKill>,
}

impl ContainerProcess {
    pub fn new(
        me: Me,
        spec: ContainerProcessSpec,
        conf: ContainerExecutorConf,
        processes: ContainerProcesses,
    ) -> ContainerProcess {
        ContainerProcess {
            me,
            spec,
            conf,
            processes,
            guard: None,
            tree: ProcessTree::default(),
            checking: false,
            stopping: None,
            memory_kill: None,
        }
    }

    /// The pid of the process while it runs (not yet reaped).
    fn running_pid(&self) -> Option<u32> {
        self.guard.as_ref().filter(|g| !g.reaped).map(|g| g.pid)
    }

    /// SIGTERM to the group now, SIGKILL after the delay if it has not been reaped by then.
    fn terminate(&mut self, cause: StopCause, ctx: &mut Context<Self>) {
        let Some(pid) = self.running_pid() else {
            return;
        };
        if self.stopping.is_some() {
            return;
        }
        self.stopping = Some(cause);
        let id = self.spec.container_id;
        let delay = self.conf.sigkill_delay;
        let sent = signal_group(pid, ProcessSignal::Term);
        tracing::info!(
            event = "container_process_signalled",
            container_id = %id,
            pid,
            signal = "TERM",
            cause = ?cause,
            "Sending signal TERM to container {id}'s process group {pid}; KILL in {} if it still runs{}",
            humantime::format_duration(delay),
            sent.as_ref().err().map(|e| format!(" ({e})")).unwrap_or_default()
        );
        let clock = self.me.clock().clone();
        run_later(ctx, &clock, delay, move |act: &mut Self, _| {
            let Some(pid) = act.running_pid() else {
                return;
            };
            let sent = signal_group(pid, ProcessSignal::Kill);
            tracing::info!(
                event = "container_process_signalled",
                container_id = %id,
                pid,
                signal = "KILL",
                "Container {id}'s process group {pid} still runs {} after TERM; sending KILL{}",
                humantime::format_duration(delay),
                sent.as_ref().err().map(|e| format!(" ({e})")).unwrap_or_default()
            );
        });
    }

    /// One check of the container monitor: the process tree is read from `/proc` on
    /// tokio's blocking pool (a scan of every process, milliseconds), then judged here.
    fn check_memory(&mut self, ctx: &mut Context<Self>) {
        let Some(pid) = self.running_pid() else {
            return;
        };
        if self.stopping.is_some() || self.checking {
            return;
        }
        self.checking = true;
        ctx.spawn(
            async move { tokio::task::spawn_blocking(move || read_tree(pid)).await }
                .into_actor(self)
                .map(move |tree, act: &mut Self, ctx| {
                    act.checking = false;
                    match tree {
                        Ok(tree) => act.judge_memory(pid, tree, ctx),
                        Err(e) => tracing::warn!(
                            container_id = %act.spec.container_id,
                            pid,
                            "Cannot read the process tree of container {}: {e}",
                            act.spec.container_id
                        ),
                    }
                }),
        );
    }

    /// The container monitor's decision on the tree of process `pid` just read.
    fn judge_memory(&mut self, pid: u32, tree: Vec<ProcInfo>, ctx: &mut Context<Self>) {
        // The process may have been reaped or stopped while its tree was read.
        if self.running_pid() != Some(pid) || self.stopping.is_some() {
            return;
        }
        let snapshot = self.tree.update(tree, page_size());
        let limits = MemoryLimits {
            pmem: self.spec.memory_limit_bytes,
            vmem: self.conf.vmem_limit(self.spec.memory_limit_bytes),
            pmem_check: self.conf.pmem_check,
        };
        tracing::debug!(
            container_id = %self.spec.container_id,
            pid,
            rss_bytes = snapshot.rss_bytes(0),
            vmem_bytes = snapshot.vmem_bytes(0),
            "Memory usage of ProcessTree {pid} for container-id {}",
            self.spec.container_id
        );
        if let Some(kill) = check_memory(&self.spec.container_id, pid, &snapshot, &limits) {
            tracing::warn!(
                event = "container_memory_exceeded",
                container_id = %self.spec.container_id,
                pid,
                exit_status = kill.exit_status,
                rss_bytes = snapshot.rss_bytes(0),
                limit_bytes = limits.pmem,
                "{}",
                kill.diagnostics
            );
            self.memory_kill = Some(kill);
            self.terminate(StopCause::Memory, ctx);
        }
    }

    /// The process was reaped with YARN exit status `code`: the incarnation ends with it.
    fn exited(&mut self, code: i32, ctx: &mut Context<Self>) {
        let Some(guard) = self.guard.as_mut() else {
            return;
        };
        guard.reaped = true;
        let pid = guard.pid;
        self.processes.remove(&self.spec.container_id, pid);
        let id = self.spec.container_id;
        let (exit_status, message) = match &self.memory_kill {
            Some(kill) => (
                kill.exit_status,
                format!(
                    "{}\nContainer killed on request. Exit code is {code}\nContainer exited with a non-zero exit code {code}.",
                    kill.diagnostics
                ),
            ),
            None => (code, exit_diagnostics(code, &self.spec.log_dir)),
        };
        tracing::info!(
            event = "container_process_exited",
            container_id = %id,
            pid,
            exit_status,
            process_exit_code = code,
            stopped = self.stopping.is_some(),
            "Container {id}'s process {pid} exited with exit code {code}"
        );
        self.clean_up_group(pid);
        // YARN's DeletionService: the container's working directory goes once its process
        // has exited (yarn.nodemanager.delete.debug-delay-sec is 0); its logs stay.
        if let Err(e) = std::fs::remove_dir_all(&self.spec.work_dir) {
            tracing::debug!(container_id = %id, "cannot delete {}: {e}", self.spec.work_dir.display());
        }
        // The process served the container's actors: the route to it goes with it, so a
        // node's routes do not pile up with its applications.
        if let Some(container) = self.me.path().parent() {
            self.me.cluster().forget_route(&container);
        }
        let me = self.me.clone();
        me.exit(
            ctx,
            ExitReason::Exit {
                code: exit_status,
                message,
            },
        );
    }

    /// After the root process is reaped, what is left of its process group (a background
    /// child, one that ignores SIGTERM) gets SIGTERM, then SIGKILL after the delay, as
    /// YARN's cleanup of a completed container signals its group. Runs on the cluster's
    /// arbiter, so it outlives this actor.
    fn clean_up_group(&self, pgid: u32) {
        let (clock, delay, id) = (
            self.me.clock().clone(),
            self.conf.sigkill_delay,
            self.spec.container_id,
        );
        let live = move || async move {
            tokio::task::spawn_blocking(move || group_has_live(pgid))
                .await
                .unwrap_or(false)
        };
        self.me.cluster().spawn_task(async move {
            if !live().await {
                return;
            }
            tracing::info!(
                event = "container_process_signalled",
                container_id = %id,
                pid = pgid,
                signal = "TERM",
                cause = "cleanup",
                "Container {id}'s process ended but its process group {pgid} still has processes; sending TERM"
            );
            let _ = signal_group(pgid, ProcessSignal::Term);
            clock.sleep(delay).await;
            if live().await {
                let _ = signal_group(pgid, ProcessSignal::Kill);
                tracing::info!(
                    event = "container_process_signalled",
                    container_id = %id,
                    pid = pgid,
                    signal = "KILL",
                    cause = "cleanup",
                    "Container {id}'s process group {pgid} still has processes {} after TERM; sending KILL",
                    humantime::format_duration(delay)
                );
            }
        });
    }
}

impl Actor for ContainerProcess {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let id = self.spec.container_id;
        let mut launched = match launch(&self.spec, &self.conf) {
            Ok(launched) => launched,
            Err(failure) => {
                let diagnostics = match exit_diagnostics(failure.exit_code, &self.spec.log_dir) {
                    d if d.is_empty() || failure.exit_code < 0 => failure.message.clone(),
                    d => d,
                };
                tracing::warn!(
                    event = "container_process_launch_failed",
                    container_id = %id,
                    exit_status = failure.exit_code,
                    program = %self.spec.program.display(),
                    "Container {id} failed to launch: {}",
                    failure.message
                );
                let me = self.me.clone();
                me.exit(
                    ctx,
                    ExitReason::Exit {
                        code: failure.exit_code,
                        message: diagnostics,
                    },
                );
                return;
            }
        };
        let pid = launched.pid;
        self.processes.insert(id, pid);
        self.guard = Some(ProcessGuard {
            container_id: id,
            pid,
            reaped: false,
            processes: self.processes.clone(),
        });
        tracing::info!(
            event = "container_process_started",
            container_id = %id,
            pid,
            program = %self.spec.program.display(),
            work_dir = %self.spec.work_dir.display(),
            log_dir = %self.spec.log_dir.display(),
            memory_limit_bytes = self.spec.memory_limit_bytes,
            "Launched container {id} as process {pid}"
        );
        ctx.spawn(async move { launched.child.wait().await }.into_actor(self).map(
            |status, act: &mut Self, ctx| {
                let code = match status {
                    Ok(status) => yarn_exit_status(status),
                    Err(e) => {
                        tracing::error!(
                            container_id = %act.spec.container_id,
                            "Cannot wait for container {}'s process: {e}",
                            act.spec.container_id
                        );
                        super::container_executor::EXIT_LAUNCH_FAILED
                    }
                };
                act.exited(code, ctx);
            },
        ));
        if self.conf.pmem_check {
            let (clock, interval) = (self.me.clock().clone(), self.conf.monitor_interval);
            run_with_fixed_delay(ctx, &clock, interval, interval, |act: &mut Self, ctx| {
                act.check_memory(ctx)
            });
        }
    }

    fn stopping(&mut self, ctx: &mut Context<Self>) -> Running {
        if self.running_pid().is_none() {
            return Running::Stop;
        }
        // Asked to stop while the process runs: TERM now, KILL later, and the actor ends
        // when the process is reaped.
        self.terminate(StopCause::Request, ctx);
        Running::Continue
    }
}

crate::speaks!(ContainerProcess);
