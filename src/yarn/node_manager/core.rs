//! The NodeManager's rules as a pure state machine: the node's containers ([`NMContainer`],
//! YARN's ContainerImpl as the NMContext holds it), how each one ended and the completed
//! statuses the ResourceManager has not taken yet (the NodeStatusUpdater's pending list),
//! the containers the RM declared lost, and the content of a registration.
//!
//! Layer: yarn. [`NodeManagerCore`] is what survives a restart of the NodeManager actor (the node's
//! supervisor keeps it). Its methods decide: whether a start is refused (a container the RM
//! declared lost) or a repeat, what status a container that ended completes with (or none,
//! when it ended with its node), what to send the RM next and what to register with, and
//! what a restarted NodeManager does with each container it knew. The actor
//! ([`super::actor::NodeManager`]) starts and stops the containers and talks to the RM.
//! Nothing here sends a message, reads a clock or knows an actor.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use crate::logs::output::OutputSink;
use crate::runtime::ExitReason;
use crate::yarn::protocol::*;
use crate::yarn::records::*;

/// How many finished containers' outputs a NodeManager keeps.
const KEPT_FINISHED: usize = 256;

/// How many ids of containers the RM declared lost a NodeManager remembers.
const KEPT_LOST: usize = 1024;

/// YARN's ContainerExecutor.ExitCode.LOST: a container whose exit status could not be
/// recovered (it ended while its NodeManager was down and left no status).
pub const EXIT_CODE_LOST: i32 = 154;

/// The diagnostics of a container completed because its node was lost
/// (SchedulerUtils.LOST_CONTAINER).
pub const LOST_CONTAINER: &str = "Container released on a *lost* node";

/// The first pause before statuses the RM did not take are sent again.
pub const RETRY_DELAY: Duration = Duration::from_millis(10);

/// The longest pause between two sends of statuses the RM has not taken.
const MAX_FLUSH_DELAY: Duration = Duration::from_secs(1);

/// How a started container's incarnation ended, as the node recorded it the moment it ended
/// (YARN's exit-code file); `None` while it runs.
pub trait ExitRecord: Send + Sync {
    fn final_reason(&self) -> Option<ExitReason>;
}

/// A container of this node.
pub struct NMContainer {
    app_id: ApplicationId,
    /// Who asked to stop it, once someone did.
    stop: Option<StopRequester>,
    output: OutputSink,
    /// The container's incarnation once started: how it ended outlives it, so a restarted
    /// NodeManager can still report a container that ended while it was down.
    started: Option<Arc<dyn ExitRecord>>,
}

/// A container whose subtree ended, taken out of the node's records
/// ([`NodeManagerCore::take_ended`]); [`NodeManagerCore::complete`] decides what it completed with.
pub struct EndedContainer {
    id: ContainerId,
    app_id: ApplicationId,
    stop: Option<StopRequester>,
    output: OutputSink,
    reason: Option<ExitReason>,
}

impl EndedContainer {
    pub fn id(&self) -> ContainerId {
        self.id
    }
    pub fn app_id(&self) -> ApplicationId {
        self.app_id
    }
}

/// What a start request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartCheck {
    /// A container this node does not have: start it.
    New,
    /// Sent again (its first answer was lost): the container is already ours.
    AlreadyStarted,
}

/// What a restarted NodeManager does with a container it knew.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// Still running: watch it again.
    Watch,
    /// Its start died with the previous incarnation before the node ran it: forgotten.
    Forget,
    /// It ended while the NodeManager was down, with the reason its incarnation recorded.
    Ended(Option<ExitReason>),
}

/// What a NodeManager knows, kept by its node's supervisor across the NodeManager's
/// restarts (a restarted node starts with a new one).
#[derive(Default)]
pub struct NodeManagerCore {
    containers: BTreeMap<ContainerId, NMContainer>,
    finished: VecDeque<(ContainerId, OutputSink)>,
    /// Completed statuses the RM has not taken yet, oldest first.
    unacked: Vec<ContainerStatus>,
    /// Containers the RM declared lost when this node registered: never started here.
    lost: VecDeque<ContainerId>,
}

impl NodeManagerCore {
    fn remember(&mut self, id: ContainerId, output: OutputSink) {
        self.finished.push_back((id, output));
        while self.finished.len() > KEPT_FINISHED {
            self.finished.pop_front();
        }
    }

    /// The containers this node has, running or starting.
    pub fn containers(&self) -> Vec<ContainerId> {
        self.containers.keys().copied().collect()
    }

    /// Whether `id` may be started here: refused for a container the RM declared lost
    /// (YARN's NodeManager refuses a container token from before its re-registration).
    pub fn check_start(&self, id: &ContainerId, host: &str) -> Result<StartCheck, YarnError> {
        if self.containers.contains_key(id) {
            return Ok(StartCheck::AlreadyStarted);
        }
        if self.lost.contains(id) {
            return Err(YarnError::Other(format!(
                "Container {id} cannot be started: the ResourceManager released it when node {host} was lost"
            )));
        }
        Ok(StartCheck::New)
    }

    /// A container is being started: it is the node's from now on.
    pub fn starting(&mut self, id: ContainerId, output: OutputSink) {
        self.containers.insert(
            id,
            NMContainer {
                app_id: id.attempt.app,
                stop: None,
                output,
                started: None,
            },
        );
    }

    /// The node started the container's incarnation.
    pub fn started(&mut self, id: &ContainerId, incarnation: Arc<dyn ExitRecord>) {
        if let Some(record) = self.containers.get_mut(id) {
            record.started = Some(incarnation);
        }
    }

    /// The node could not start it: it is not the node's.
    pub fn start_failed(&mut self, id: &ContainerId) {
        self.containers.remove(id);
    }

    /// The launch command could not start (the process fails at once, as a JVM given bad
    /// arguments does): the container completes with exit status 1 and the launcher's
    /// message.
    pub fn launch_failed(&mut self, id: ContainerId, output: OutputSink, problem: &str) {
        self.remember(id, output);
        self.unacked.push(ContainerStatus {
            container_id: id,
            state: ContainerState::Complete,
            exit_status: 1,
            diagnostics: format!(
                "Exception from container-launch.\nContainer id: {id}\nExit code: 1\n{problem}\nContainer exited with a non-zero exit code 1."
            ),
        });
    }

    /// Someone asks to stop the container: the first requester is the one its completion
    /// names. Whether the container is still the node's (else it already completed).
    pub fn stop(&mut self, id: &ContainerId, requester: StopRequester) -> bool {
        let Some(record) = self.containers.get_mut(id) else {
            return false;
        };
        if record.stop.is_none() {
            record.stop = Some(requester);
        }
        true
    }

    /// A restarted NodeManager's decision for a container it knew: `running` says whether
    /// the node's supervisor still has it, `incarnation` its incarnation if registered.
    pub fn recover(
        &mut self,
        id: &ContainerId,
        running: bool,
        incarnation: Option<Arc<dyn ExitRecord>>,
    ) -> Recovery {
        if running {
            if let (Some(record), Some(incarnation)) = (self.containers.get_mut(id), incarnation) {
                record.started = Some(incarnation);
            }
            return Recovery::Watch;
        }
        match self.containers.get(id) {
            Some(record) if record.started.is_none() => {
                // Its start died with the previous incarnation before the node ran it: it
                // never ran. Forget it; its starter asks again (a start is idempotent), or
                // gives up and releases it.
                tracing::info!(
                    container_id = %id,
                    "Container {id} was never started; forgetting it"
                );
                self.containers.remove(id);
                Recovery::Forget
            }
            record => {
                let reason = record.and_then(|r| r.started.as_ref().and_then(|c| c.final_reason()));
                tracing::info!(
                    container_id = %id,
                    "Container {id} ended while the NodeManager was down"
                );
                Recovery::Ended(reason)
            }
        }
    }

    /// A container's subtree ended with `reason` (`None`: not known; its incarnation's
    /// record then says how it ended): it is the node's no more.
    pub fn take_ended(&mut self, id: ContainerId, reason: Option<ExitReason>) -> Option<EndedContainer> {
        let record = self.containers.remove(&id)?;
        let reason = reason.or_else(|| record.started.as_ref().and_then(|c| c.final_reason()));
        Some(EndedContainer {
            id,
            app_id: record.app_id,
            stop: record.stop,
            output: record.output,
            reason,
        })
    }

    /// What an ended container completed with, queued for the RM: the requester's exit
    /// status if it was stopped (-105, -106, -107), else its process's, or 154 (LOST) if
    /// none is known. One that ended with its node (shut down or aborted while nobody
    /// stopped it) is not reported: the RM learns it was lost when the node registers. A
    /// negative status of YARN's own (the container monitor's -104) completes with its
    /// diagnostics as they are; a process killed by a signal on request (137, 143) without
    /// the launch exception. Whether a status was queued.
    pub fn complete(&mut self, ended: EndedContainer) -> bool {
        // How a container process's diagnostics begin when it was killed by a signal
        // (YARN's DefaultContainerExecutor).
        const KILLED_ON_REQUEST: &str = "Container killed on request.";
        let EndedContainer {
            id,
            app_id,
            stop,
            output,
            reason,
        } = ended;
        if stop.is_none()
            && matches!(
                reason,
                Some(ExitReason::Shutdown) | Some(ExitReason::Aborted { .. })
            )
        {
            // Only the node's supervisor stops a container this NodeManager did not stop:
            // the node is going down, and its containers with it. The RM learns they were
            // lost when the node registers again.
            tracing::info!(
                container_id = %id,
                app_id = %app_id,
                "Container {id} ended with its node ({}); not reported",
                reason.as_ref().map(ToString::to_string).unwrap_or_default()
            );
            self.remember(id, output);
            return false;
        }
        let (exit_status, diagnostics) = match stop {
            Some(StopRequester::ApplicationMaster) => (
                exit_status::KILLED_BY_APPMASTER,
                "Container killed by the ApplicationMaster.\nContainer killed on request. Exit code is 143\nContainer exited with a non-zero exit code 143.".to_string(),
            ),
            Some(StopRequester::ResourceManager) => (
                exit_status::KILLED_BY_RESOURCEMANAGER,
                "Container killed by the ResourceManager.\nContainer killed on request. Exit code is 143".to_string(),
            ),
            Some(StopRequester::AppCompletion) => (
                exit_status::KILLED_AFTER_APP_COMPLETION,
                "Container Killed since the application completed.".to_string(),
            ),
            None => match &reason {
                None | Some(ExitReason::NoProc) => (
                    EXIT_CODE_LOST,
                    format!(
                        "Container {id} ended while its NodeManager was down and left no exit status.\nContainer exited with a non-zero exit code {EXIT_CODE_LOST}."
                    ),
                ),
                Some(reason) => {
                    let code = reason.exit_code();
                    let diagnostics = match reason {
                        _ if code == 0 => String::new(),
                        // A negative status is YARN's own, not a process's (the container
                        // monitor's -104): its diagnostics are complete as they are.
                        ExitReason::Exit { message, .. } if code < 0 => message.clone(),
                        // A process killed on request (SIGTERM 143, SIGKILL 137): YARN says
                        // so, without the launch exception.
                        ExitReason::Exit { message, .. }
                            if (code == 137 || code == 143)
                                && message.starts_with(KILLED_ON_REQUEST) =>
                        {
                            format!("{message}\nContainer exited with a non-zero exit code {code}.")
                        }
                        ExitReason::Exit { message, .. } => format!(
                            "Exception from container-launch.\nContainer id: {id}\nExit code: {code}\n{message}\nContainer exited with a non-zero exit code {code}."
                        ),
                        other => format!(
                            "Exception from container-launch.\nContainer id: {id}\nExit code: {code}\n{other}\nContainer exited with a non-zero exit code {code}."
                        ),
                    };
                    (code, diagnostics)
                }
            },
        };
        tracing::info!(
            container_id = %id,
            app_id = %app_id,
            exit_status,
            "Container {id} transitioned from RUNNING to EXITED with exit code {exit_status}"
        );
        self.remember(id, output);
        self.unacked.push(ContainerStatus {
            container_id: id,
            state: ContainerState::Complete,
            exit_status,
            diagnostics,
        });
        true
    }

    /// The completed statuses the RM has not taken, to send it (oldest first).
    pub fn pending_statuses(&self) -> Vec<ContainerStatus> {
        self.unacked.clone()
    }

    /// The RM took these statuses.
    pub fn taken(&mut self, sent: &BTreeSet<ContainerId>) {
        self.unacked.retain(|s| !sent.contains(&s.container_id));
    }

    /// What this node registers with (RegisterNodeManagerRequest with its container
    /// statuses): the containers it has and the completed statuses not yet taken, with the
    /// protocol version it speaks and the cluster it joins.
    pub fn registration(
        &self,
        host: &str,
        rack: &str,
        capability: Resource,
        cluster_id: &str,
    ) -> RegisterNode {
        RegisterNode {
            host: host.to_string(),
            rack: rack.to_string(),
            capability,
            running: self.containers(),
            completed: self.unacked.clone(),
            version: NODE_PROTOCOL_VERSION,
            cluster_id: cluster_id.to_string(),
        }
    }

    /// The RM answered a registration: the statuses it carried are taken, and the
    /// containers the RM declared lost are the node's no more and may not be started.
    pub fn registered(&mut self, sent: &BTreeSet<ContainerId>, lost: &[ContainerId]) {
        self.taken(sent);
        for id in lost {
            self.containers.remove(id);
            self.lost.push_back(*id);
        }
        while self.lost.len() > KEPT_LOST {
            self.lost.pop_front();
        }
    }

    /// A container's stdout, running or among the last finished ones.
    pub fn output(&self, id: &ContainerId) -> Option<String> {
        self.containers
            .get(id)
            .map(|r| r.output.text())
            .or_else(|| self.finished.iter().find(|(f, _)| f == id).map(|(_, o)| o.text()))
    }
}

/// When statuses go to the RM: one NodeStatusUpdate at a time; after a failure the next
/// waits 10 ms, doubling up to 1 s; a success resets the pause. Not kept: a restarted
/// NodeManager starts afresh.
#[derive(Debug)]
pub struct StatusFlush {
    in_flight: bool,
    delay: Duration,
}

impl Default for StatusFlush {
    fn default() -> Self {
        StatusFlush {
            in_flight: false,
            delay: RETRY_DELAY,
        }
    }
}

impl StatusFlush {
    /// A send is on its way or waiting to be retried: no other starts.
    pub fn busy(&self) -> bool {
        self.in_flight
    }

    /// A send starts.
    pub fn sending(&mut self) {
        self.in_flight = true;
    }

    /// The RM took the statuses.
    pub fn succeeded(&mut self) {
        self.in_flight = false;
        self.delay = RETRY_DELAY;
    }

    /// The send failed: how long to wait before the next one (the send stays busy until
    /// [`Self::retry_due`]).
    pub fn failed(&mut self) -> Duration {
        let delay = self.delay;
        self.delay = (delay * 2).min(MAX_FLUSH_DELAY);
        delay
    }

    /// The pause after a failure is over.
    pub fn retry_due(&mut self) {
        self.in_flight = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "host1";

    fn container(id: u64) -> ContainerId {
        ContainerId {
            attempt: ApplicationAttemptId {
                app: ApplicationId {
                    cluster_timestamp: 1,
                    id: 1,
                },
                attempt: 1,
            },
            id,
        }
    }

    fn output(id: &ContainerId) -> OutputSink {
        OutputSink::container(None, &id.attempt.app.to_string(), &id.to_string())
    }

    /// An incarnation that ended with `reason` (or still runs: `None`).
    struct Recorded(Option<ExitReason>);

    impl ExitRecord for Recorded {
        fn final_reason(&self) -> Option<ExitReason> {
            self.0.clone()
        }
    }

    /// A node with container `id` started, whose incarnation says `recorded`.
    fn running(nm: &mut NodeManagerCore, id: u64, recorded: Option<ExitReason>) -> ContainerId {
        let id = container(id);
        assert_eq!(nm.check_start(&id, HOST).unwrap(), StartCheck::New);
        nm.starting(id, output(&id));
        nm.started(&id, Arc::new(Recorded(recorded)));
        id
    }

    /// Ends container `id` with `reason` and answers the status queued for the RM.
    fn end(nm: &mut NodeManagerCore, id: ContainerId, reason: Option<ExitReason>) -> Option<ContainerStatus> {
        let ended = nm.take_ended(id, reason).expect("the node's container");
        assert_eq!(ended.id(), id);
        if !nm.complete(ended) {
            return None;
        }
        nm.pending_statuses().into_iter().find(|s| s.container_id == id)
    }

    #[test]
    fn a_start_is_refused_for_a_container_the_rm_declared_lost_and_a_repeat_is_no_new_start() {
        let mut nm = NodeManagerCore::default();
        let id = running(&mut nm, 1, None);
        assert_eq!(nm.check_start(&id, HOST).unwrap(), StartCheck::AlreadyStarted);
        let lost = container(2);
        nm.registered(&BTreeSet::new(), &[id, lost]);
        assert!(
            nm.containers().is_empty(),
            "a lost container is the node's no more"
        );
        let refused = nm.check_start(&lost, HOST).unwrap_err().to_string();
        assert!(
            refused.contains(&format!(
                "Container {lost} cannot be started: the ResourceManager released it when node {HOST} was lost"
            )),
            "{refused}"
        );
        assert!(nm.check_start(&container(3), HOST).is_ok());
    }

    #[test]
    fn a_stopped_container_completes_with_its_requesters_exit_status() {
        let mut nm = NodeManagerCore::default();
        for (requester, exit) in [
            (StopRequester::ApplicationMaster, exit_status::KILLED_BY_APPMASTER),
            (
                StopRequester::ResourceManager,
                exit_status::KILLED_BY_RESOURCEMANAGER,
            ),
            (
                StopRequester::AppCompletion,
                exit_status::KILLED_AFTER_APP_COMPLETION,
            ),
        ] {
            let id = running(&mut nm, exit.unsigned_abs().into(), None);
            assert!(nm.stop(&id, requester));
            // A later requester does not change who stopped it.
            assert!(nm.stop(&id, StopRequester::ResourceManager));
            let status = end(&mut nm, id, Some(ExitReason::Shutdown)).expect("reported");
            assert_eq!(status.exit_status, exit);
            assert_eq!(status.state, ContainerState::Complete);
        }
        assert!(
            !nm.stop(&container(99), StopRequester::ApplicationMaster),
            "already completed"
        );
    }

    #[test]
    fn a_container_completes_with_its_processs_exit_status_or_lost_when_none_is_known() {
        let mut nm = NodeManagerCore::default();
        let id = running(&mut nm, 1, None);
        let status = end(
            &mut nm,
            id,
            Some(ExitReason::Exit {
                code: 13,
                message: "boom".into(),
            }),
        )
        .unwrap();
        assert_eq!(status.exit_status, 13);
        assert_eq!(
            status.diagnostics,
            format!("Exception from container-launch.\nContainer id: {id}\nExit code: 13\nboom\nContainer exited with a non-zero exit code 13.")
        );
        let id = running(&mut nm, 2, Some(ExitReason::Normal));
        let status = end(&mut nm, id, None).unwrap();
        assert_eq!((status.exit_status, status.diagnostics.as_str()), (0, ""));
        // Ended while the NodeManager was down and left no status: YARN's LOST.
        let id = running(&mut nm, 3, None);
        let status = end(&mut nm, id, None).unwrap();
        assert_eq!(status.exit_status, EXIT_CODE_LOST);
        // Gone with its node (nobody stopped it): not reported, the RM learns it was lost.
        let id = running(&mut nm, 4, None);
        assert_eq!(end(&mut nm, id, Some(ExitReason::Shutdown)), None);
        assert!(nm.take_ended(id, None).is_none(), "ends once");
        assert_eq!(nm.pending_statuses().len(), 3);
    }

    #[test]
    fn a_yarn_status_from_the_monitor_completes_with_its_diagnostics_as_they_are() {
        let mut nm = NodeManagerCore::default();
        let id = running(&mut nm, 1, None);
        let diagnostics = format!(
            "Container [pid=42,containerID={id}] is running 1B beyond the 'PHYSICAL' memory limit. Current usage: ..."
        );
        let status = end(
            &mut nm,
            id,
            Some(ExitReason::Exit {
                code: exit_status::KILLED_EXCEEDED_PMEM,
                message: diagnostics.clone(),
            }),
        )
        .unwrap();
        assert_eq!(status.exit_status, -104);
        assert_eq!(status.diagnostics, diagnostics);
        // A process killed by a signal on request: no launch exception.
        let id = running(&mut nm, 2, None);
        let status = end(
            &mut nm,
            id,
            Some(ExitReason::Exit {
                code: 137,
                message: "Container killed on request. Exit code is 137".into(),
            }),
        )
        .unwrap();
        assert_eq!(
            (status.exit_status, status.diagnostics.as_str()),
            (
                137,
                "Container killed on request. Exit code is 137\nContainer exited with a non-zero exit code 137."
            )
        );
    }

    #[test]
    fn statuses_stay_pending_until_taken_and_ride_with_a_registration() {
        let mut nm = NodeManagerCore::default();
        let done = running(&mut nm, 1, None);
        let still = running(&mut nm, 2, None);
        end(
            &mut nm,
            done,
            Some(ExitReason::Exit {
                code: 1,
                message: String::new(),
            }),
        )
        .unwrap();
        let failed = container(3);
        nm.launch_failed(failed, output(&failed), "unknown program");
        let pending = nm.pending_statuses();
        assert_eq!(
            pending.iter().map(|s| s.container_id).collect::<Vec<_>>(),
            vec![done, failed]
        );
        assert_eq!(pending[1].exit_status, 1);
        assert!(pending[1].diagnostics.contains("unknown program"));

        let request = nm.registration(HOST, "/rack", Resource::new(4096, 4), "sparkyard");
        assert_eq!(
            (request.version, request.cluster_id.as_str()),
            (NODE_PROTOCOL_VERSION, "sparkyard")
        );
        assert_eq!(request.running, vec![still]);
        assert_eq!(request.completed, pending);
        // The RM took what the registration carried (and declared nothing lost).
        let sent: BTreeSet<ContainerId> = request.completed.iter().map(|s| s.container_id).collect();
        nm.registered(&sent, &[]);
        assert!(nm.pending_statuses().is_empty());
        assert_eq!(nm.containers(), vec![still]);

        end(&mut nm, still, Some(ExitReason::Normal)).unwrap();
        nm.taken(&BTreeSet::from([done]));
        assert_eq!(nm.pending_statuses().len(), 1, "only what was sent is taken");
        // The outputs of finished containers are kept.
        assert!(nm.output(&done).is_some());
        assert!(nm.output(&failed).is_some());
        assert!(nm.output(&container(9)).is_none());
    }

    #[test]
    fn a_restarted_node_manager_watches_forgets_or_completes_each_container() {
        let mut nm = NodeManagerCore::default();
        let alive = running(&mut nm, 1, None);
        let ended = running(
            &mut nm,
            2,
            Some(ExitReason::Exit {
                code: 3,
                message: String::new(),
            }),
        );
        let never = container(3);
        nm.starting(never, output(&never));
        assert_eq!(nm.recover(&alive, true, None), Recovery::Watch);
        assert_eq!(nm.recover(&never, false, None), Recovery::Forget);
        assert!(!nm.containers().contains(&never));
        let Recovery::Ended(reason) = nm.recover(&ended, false, None) else {
            panic!("ended");
        };
        assert_eq!(end(&mut nm, ended, reason).unwrap().exit_status, 3);
    }

    #[test]
    fn failed_sends_back_off_from_10ms_doubling_to_1s_and_a_success_resets() {
        let mut flush = StatusFlush::default();
        assert!(!flush.busy());
        flush.sending();
        assert!(flush.busy());
        let delays: Vec<u64> = (0..9).map(|_| flush.failed().as_millis() as u64).collect();
        assert_eq!(delays, vec![10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        assert!(flush.busy(), "busy until the retry is due");
        flush.retry_due();
        assert!(!flush.busy());
        flush.sending();
        flush.succeeded();
        assert!(!flush.busy());
        assert_eq!(flush.failed(), RETRY_DELAY);
    }
}
