//! The decision logic of Spark's YarnAllocator as a plain synchronous state machine; the
//! classes it relies on sit beside it, one file each, at Spark's seams: the exit codes
//! (`exit_codes`: SparkExitCode, ExecutorExitCode), ExecutorFailureTracker
//! (`failure_tracker`), YarnAllocatorNodeHealthTracker (`node_health_tracker`) and
//! LocalityPreferredContainerPlacementStrategy (`placement`).
//!
//! Nothing here sends a message, reads a clock or touches I/O: every method that needs the
//! time takes `now`, and every method that decides something returns what should happen.
//! The allocator actor around it does the messaging: it calls [`YarnAllocatorCore::update_resource_requests`]
//! and sends Allocate to the ResourceManager with [`YarnAllocatorCore::pending_requests`] (plus
//! [`YarnAllocatorCore::take_excluded_nodes_update`]), feeds the answer to
//! [`YarnAllocatorCore::handle_allocated_containers`] and
//! [`YarnAllocatorCore::process_completed_containers`], starts the containers it is told to
//! launch (reporting back with `launch_succeeded` / `launch_failed`), releases the ones it is
//! told to release, and forwards RemoveExecutor and loss-reason replies to the driver.
//!
//! The state keeps what Hadoop's AMRMClient would hold for the application master: the table
//! of outstanding container requests, matched against granted containers by host, then rack,
//! then any host, oldest request first.
//!
//! One resource profile (id 0) is supported; per-profile state is keyed by the profile id so
//! more can be added.
//!
//! Layer: deploy (the AM's allocator); pure, under the actor in `deploy::yarn_allocator`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use super::exit_codes::NOT_APP_AND_SYSTEM_FAULT_EXIT_STATUS;
pub use super::exit_codes::{executor_exit_code, explain_exit_code};
pub use super::failure_tracker::max_num_executor_failures;
use super::failure_tracker::FailureTracker;
use super::node_health_tracker::NodeHealthTracker;
use super::placement::{locality_of_requested_containers, PlacementInput};

use crate::scheduler::loss_reason::ExecutorLossReason;
use crate::yarn::records::{
    exit_status, Container, ContainerId, ContainerRequest, ContainerState, ContainerStatus, Resource,
};

/// The default resource profile; its id is also the priority of its container requests.
pub const DEFAULT_RESOURCE_PROFILE_ID: u32 = 0;

/// The resource name YARN uses for "any host".
pub const ANY_HOST: &str = "*";

/// Scala's `Int.MaxValue`, which bounds Spark's counts.
pub(super) const SPARK_INT_MAX: u32 = i32::MAX as u32;

/// Severity of a log line, as Spark logs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
    Error,
}

/// A line the actor should log (Spark's wording).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    pub level: LogLevel,
    pub message: String,
}

/// What the allocator is built from; the caller derives these from the Spark configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocatorSettings {
    /// Initial target for profile 0 (SchedulerBackendUtils.getInitialTargetExecutorNumber).
    pub initial_target: u32,
    /// The executor container's capability: memory including overhead, and vcores.
    pub executor_resource: Resource,
    /// `spark.executor.memory` in MB (the executor's heap; passed on with each launch).
    pub executor_memory_mb: u64,
    /// The memory overhead in MB (for the request message).
    pub executor_memory_overhead_mb: u64,
    /// `spark.task.cpus`, to turn locality-aware task counts into executor counts.
    pub task_cpus: u32,
    /// The driver's answer to RetrieveLastAllocatedExecutorId; the first executor gets this + 1.
    pub executor_id_start: u32,
    /// See [`max_num_executor_failures`].
    pub max_executor_failures: u32,
    /// `spark.executor.failuresValidityInterval`; `None` (or zero) keeps failures forever.
    pub failures_validity_interval: Option<Duration>,
    /// `spark.yarn.executor.launch.excludeOnFailure.enabled`.
    pub launch_exclusion_enabled: bool,
    /// `spark.excludeOnFailure.application.maxFailedExecutorsPerNode`.
    pub max_failed_executors_per_node: u32,
    /// `spark.excludeOnFailure.timeout`: how long the allocator keeps a node excluded.
    pub exclusion_timeout: Duration,
    /// `spark.yarn.exclude.nodes`: always excluded.
    pub static_excluded_nodes: BTreeSet<String>,
}

impl Default for AllocatorSettings {
    /// Spark's defaults: 2 executors of 1 GB (+384 MB overhead) and 1 core, cap of 3 failures.
    fn default() -> Self {
        AllocatorSettings {
            initial_target: 2,
            executor_resource: Resource::new(1408, 1),
            executor_memory_mb: 1024,
            executor_memory_overhead_mb: 384,
            task_cpus: 1,
            executor_id_start: 0,
            max_executor_failures: 3,
            failures_validity_interval: None,
            launch_exclusion_enabled: false,
            max_failed_executors_per_node: 2,
            exclusion_timeout: Duration::from_secs(3600),
            static_excluded_nodes: BTreeSet::new(),
        }
    }
}

/// What [`YarnAllocatorCore::update_resource_requests`] changed in the outstanding-request table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestUpdate {
    /// New requests, in the order they were added.
    pub added: Vec<ContainerRequest>,
    /// Requests removed, in the order they were cancelled.
    pub cancelled: Vec<ContainerRequest>,
    pub log: Vec<LogLine>,
}

/// A container to start an executor in (ExecutorRunnable's inputs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub container: Container,
    pub executor_id: String,
    /// The NodeManager's host, passed to the executor as `--hostname`.
    pub host: String,
    /// The executor's heap in MB (`-Xmx`).
    pub executor_memory_mb: u64,
    pub executor_cores: u32,
    pub resource_profile_id: u32,
}

/// A matched container that was not launched because the target was already reached. Spark
/// neither launches nor releases it; its executor id is used up all the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub container: Container,
    pub executor_id: String,
}

/// What to do with the containers of one Allocate response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocationOutcome {
    pub to_launch: Vec<Launch>,
    /// Containers no request wanted; release them with the next Allocate.
    pub to_release: Vec<ContainerId>,
    pub skipped: Vec<Skipped>,
    pub log: Vec<LogLine>,
}

/// One completed container, as the allocator judged it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletedContainer {
    pub container_id: ContainerId,
    /// The executor it ran, if it had registered as running.
    pub executor_id: Option<String>,
    pub host: Option<String>,
    /// The allocator had released it (the driver asked to kill it).
    pub already_released: bool,
    pub loss_reason: ExecutorLossReason,
    /// Reported to the health tracker as a resource allocation failure (it counts towards
    /// the failure cap unless its host was already excluded).
    pub counts_as_failure: bool,
    /// Send RemoveExecutor(executor_id, loss_reason) to the driver.
    pub send_remove_executor: bool,
}

/// A reply owed to an earlier GetExecutorLossReason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LossReasonReply<T> {
    pub executor_id: String,
    pub token: T,
    pub reason: ExecutorLossReason,
}

/// What [`YarnAllocatorCore::process_completed_containers`] decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletionOutcome<T> {
    pub completed: Vec<CompletedContainer>,
    pub replies: Vec<LossReasonReply<T>>,
    pub log: Vec<LogLine>,
}

impl<T> CompletionOutcome<T> {
    /// The RemoveExecutor messages to send, in order.
    pub fn remove_executor_messages(&self) -> Vec<(&str, &ExecutorLossReason)> {
        self.completed
            .iter()
            .filter(|c| c.send_remove_executor)
            .filter_map(|c| c.executor_id.as_deref().map(|id| (id, &c.loss_reason)))
            .collect()
    }
}

/// The answer to a GetExecutorLossReason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LossReasonAnswer<T> {
    /// Known already: reply now.
    Reply { token: T, reason: ExecutorLossReason },
    /// The executor is still known; the reply comes with its container's completion.
    Queued,
    /// Unknown executor: fail the ask with this message.
    Failure { token: T, message: String },
}

/// Node exclusions to pass to YARN (AMRMClient.updateBlacklist), accumulated since the last
/// Allocate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExcludedNodesUpdate {
    pub additions: Vec<String>,
    pub removals: Vec<String>,
}

fn line(level: LogLevel, message: String) -> LogLine {
    LogLine { level, message }
}

pub(super) fn info(message: String) -> LogLine {
    line(LogLevel::Info, message)
}

fn warn(message: String) -> LogLine {
    line(LogLevel::Warn, message)
}

/// A container between "launch it" and the launch's result.
#[derive(Debug)]
struct InFlight {
    executor_id: String,
    rp_id: u32,
    container: Container,
    /// Cleared when the container completes before the launch reports back (Spark removes it
    /// from launchingExecutorContainerIds); a late success then registers nothing.
    launching: bool,
}

/// Whether AMRMClient files `request` under the resource name `location`: any host ("*") for
/// every request, each of its nodes, its racks, and the racks its nodes resolve to.
fn registered_at(
    request: &ContainerRequest,
    location: &str,
    rack_of: &dyn Fn(&str) -> Option<String>,
) -> bool {
    location == ANY_HOST
        || request.nodes.iter().any(|n| n == location)
        || request.racks.iter().any(|r| r == location)
        || request
            .nodes
            .iter()
            .any(|n| rack_of(n).as_deref() == Some(location))
}

/// The first "<mem> of <mem> <kind> memory used" in YARN's diagnostics, where <mem> is
/// `[0-9.]+ [KMG]B` (Spark's MEM_REGEX).
fn find_memory_usage(diagnostics: &str, kind: &str) -> Option<String> {
    fn mem_token(bytes: &[u8], at: usize) -> Option<usize> {
        let digits = bytes[at..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'.')
            .count();
        if digits == 0 {
            return None;
        }
        let rest = &bytes[at + digits..];
        if rest.len() >= 3 && rest[0] == b' ' && matches!(rest[1], b'K' | b'M' | b'G') && rest[2] == b'B' {
            Some(at + digits + 3)
        } else {
            None
        }
    }
    let bytes = diagnostics.as_bytes();
    let middle = b" of ";
    let tail = format!(" {kind} memory used");
    let tail = tail.as_bytes();
    for start in 0..bytes.len() {
        let Some(end) = mem_token(bytes, start) else {
            continue;
        };
        if !bytes[end..].starts_with(middle) {
            continue;
        }
        let Some(end) = mem_token(bytes, end + middle.len()) else {
            continue;
        };
        if bytes[end..].starts_with(tail) {
            // The match is ASCII, so these are character boundaries.
            return diagnostics.get(start..end + tail.len()).map(str::to_string);
        }
    }
    None
}

fn state_name(state: ContainerState) -> &'static str {
    match state {
        ContainerState::New => "NEW",
        ContainerState::Running => "RUNNING",
        ContainerState::Complete => "COMPLETE",
    }
}

/// YarnAllocator's state. `T` is whatever the actor needs to answer a GetExecutorLossReason
/// later (a reply channel); the state only stores and returns it.
#[derive(Debug)]
pub struct YarnAllocatorCore<T = ()> {
    executor_memory_mb: u64,
    executor_memory_overhead_mb: u64,
    task_cpus: u32,
    initial_target: u32,
    max_executor_failures: u32,
    profile_resources: BTreeMap<u32, Resource>,
    targets: BTreeMap<u32, u32>,
    running: BTreeMap<u32, BTreeSet<String>>,
    starting: BTreeMap<u32, u32>,
    host_to_local_task_count: BTreeMap<u32, BTreeMap<String, u32>>,
    num_locality_aware_tasks: BTreeMap<u32, u32>,
    /// The outstanding requests (AMRMClient's table), oldest first.
    requests: Vec<ContainerRequest>,
    allocated_host_to_containers: BTreeMap<u32, BTreeMap<String, BTreeSet<ContainerId>>>,
    allocated_container_to_host: BTreeMap<ContainerId, String>,
    /// Containers released by the allocator and not yet reported completed.
    released_containers: BTreeSet<ContainerId>,
    in_flight: BTreeMap<ContainerId, InFlight>,
    executor_to_container: BTreeMap<String, Container>,
    container_to_executor: BTreeMap<ContainerId, (String, u32)>,
    pending_loss_reason_requests: BTreeMap<String, Vec<T>>,
    released_executor_loss_reasons: BTreeMap<String, ExecutorLossReason>,
    executor_id_counter: u64,
    num_unexpected_container_release: u64,
    health: NodeHealthTracker,
    shutdown: bool,
    /// Log lines not yet handed out (see [`YarnAllocatorCore::take_logs`]).
    logs: Vec<LogLine>,
}

impl<T> YarnAllocatorCore<T> {
    pub fn new(settings: AllocatorSettings) -> Self {
        let rp = DEFAULT_RESOURCE_PROFILE_ID;
        let mut state = YarnAllocatorCore {
            executor_memory_mb: settings.executor_memory_mb,
            executor_memory_overhead_mb: settings.executor_memory_overhead_mb,
            task_cpus: settings.task_cpus,
            initial_target: settings.initial_target,
            max_executor_failures: settings.max_executor_failures,
            profile_resources: BTreeMap::from([(rp, settings.executor_resource)]),
            targets: BTreeMap::from([(rp, settings.initial_target)]),
            running: BTreeMap::from([(rp, BTreeSet::new())]),
            starting: BTreeMap::from([(rp, 0)]),
            host_to_local_task_count: BTreeMap::from([(rp, BTreeMap::new())]),
            num_locality_aware_tasks: BTreeMap::from([(rp, 0)]),
            requests: Vec::new(),
            allocated_host_to_containers: BTreeMap::from([(rp, BTreeMap::new())]),
            allocated_container_to_host: BTreeMap::new(),
            released_containers: BTreeSet::new(),
            in_flight: BTreeMap::new(),
            executor_to_container: BTreeMap::new(),
            container_to_executor: BTreeMap::new(),
            pending_loss_reason_requests: BTreeMap::new(),
            released_executor_loss_reasons: BTreeMap::new(),
            executor_id_counter: u64::from(settings.executor_id_start),
            num_unexpected_container_release: 0,
            health: NodeHealthTracker {
                failures: FailureTracker {
                    validity: settings.failures_validity_interval,
                    global: VecDeque::new(),
                    per_host: BTreeMap::new(),
                },
                launch_exclusion_enabled: settings.launch_exclusion_enabled,
                max_failures_per_host: settings.max_failed_executors_per_node,
                exclusion_timeout: settings.exclusion_timeout,
                static_excluded: settings.static_excluded_nodes,
                scheduler_excluded: BTreeSet::new(),
                allocator_excluded: BTreeMap::new(),
                current: BTreeSet::new(),
                num_cluster_nodes: SPARK_INT_MAX,
                pending_additions: BTreeSet::new(),
                pending_removals: BTreeSet::new(),
            },
            shutdown: false,
            logs: Vec::new(),
        };
        // Spark's tracker synchronizes once when built, so the static exclusions reach YARN
        // with the first Allocate.
        state.health.refresh(Duration::ZERO, &mut state.logs);
        state
    }

    // ----- queries -----

    /// The outstanding container requests, oldest first (what AMRMClient holds).
    pub fn pending_requests(&self) -> &[ContainerRequest] {
        &self.requests
    }

    /// Requests still waiting for a container (getNumContainersPendingAllocate).
    pub fn num_containers_pending_allocate(&self) -> usize {
        self.profile_resources
            .keys()
            .map(|rp| self.pending_indices(*rp).len())
            .sum()
    }

    /// Target for profile 0.
    pub fn target(&self) -> u32 {
        self.target_for(DEFAULT_RESOURCE_PROFILE_ID)
    }

    /// Running executor ids (all profiles), sorted.
    pub fn running_executors(&self) -> Vec<&str> {
        let all: BTreeSet<&str> = self.running.values().flatten().map(String::as_str).collect();
        all.into_iter().collect()
    }

    pub fn num_executors_running(&self) -> usize {
        self.running.values().map(BTreeSet::len).sum()
    }

    pub fn num_executors_starting(&self) -> u32 {
        self.starting.values().fold(0u32, |acc, n| acc.saturating_add(*n))
    }

    pub fn num_failed_executors(&self, now: Duration) -> u32 {
        self.health.failures.num_failed_executors(now)
    }

    /// The cap from the settings; the reporter finishes the attempt (exit 11) once
    /// `num_failed_executors(now) >= max_executor_failures()`.
    pub fn max_executor_failures(&self) -> u32 {
        self.max_executor_failures
    }

    /// All nodes excluded (as last synchronized with YARN) while the cluster reports at least
    /// one node. The reporter finishes the attempt with exit 11 when this holds.
    pub fn is_all_node_excluded(&self) -> bool {
        self.health.is_all_node_excluded()
    }

    /// Static ∪ scheduler-excluded ∪ allocator-excluded nodes whose exclusion has not expired.
    pub fn excluded_nodes(&self, now: Duration) -> BTreeSet<String> {
        self.health.excluded_at(now)
    }

    /// The excluded set as last passed to YARN.
    pub fn yarn_excluded_nodes(&self) -> &BTreeSet<String> {
        &self.health.current
    }

    /// Executors with loss-reason requests waiting (getNumPendingLossReasonRequests).
    pub fn num_pending_loss_reason_requests(&self) -> usize {
        self.pending_loss_reason_requests.len()
    }

    pub fn num_released_containers(&self) -> usize {
        self.released_containers.len()
    }

    /// Executors whose containers ended without the allocator releasing them.
    pub fn num_unexpected_container_release(&self) -> u64 {
        self.num_unexpected_container_release
    }

    pub fn executor_for_container(&self, container_id: &ContainerId) -> Option<&str> {
        self.container_to_executor
            .get(container_id)
            .map(|(id, _)| id.as_str())
    }

    pub fn container_for_executor(&self, executor_id: &str) -> Option<ContainerId> {
        self.executor_to_container.get(executor_id).map(|c| c.id)
    }

    /// The last executor id handed out (or the start value).
    pub fn last_executor_id(&self) -> u64 {
        self.executor_id_counter
    }

    // ----- inputs -----

    /// The cluster size from the last Allocate response.
    pub fn set_num_cluster_nodes(&mut self, n: u32) {
        self.health.num_cluster_nodes = n;
    }

    /// Set once the application is shutting down: completions are then never blamed on it.
    pub fn set_shutdown(&mut self, shutdown: bool) {
        self.shutdown = shutdown;
    }

    /// Log lines produced by calls that return no outcome of their own (construction,
    /// `request_total_executors`, `kill_executor`, `launch_succeeded`/`launch_failed`,
    /// `enqueue_get_loss_reason`).
    pub fn take_logs(&mut self) -> Vec<LogLine> {
        std::mem::take(&mut self.logs)
    }

    /// Node exclusion changes to send with the next Allocate, if any.
    pub fn take_excluded_nodes_update(&mut self) -> Option<ExcludedNodesUpdate> {
        if self.health.pending_additions.is_empty() && self.health.pending_removals.is_empty() {
            return None;
        }
        Some(ExcludedNodesUpdate {
            additions: std::mem::take(&mut self.health.pending_additions)
                .into_iter()
                .collect(),
            removals: std::mem::take(&mut self.health.pending_removals)
                .into_iter()
                .collect(),
        })
    }

    /// RequestExecutors from the driver for profile 0: stores the locality hints, and sets the
    /// target. Returns whether the target changed; only then are the scheduler's excluded
    /// nodes taken over. Running executors are never killed here; the next
    /// `update_resource_requests` adds or cancels requests.
    pub fn request_total_executors(
        &mut self,
        total: u32,
        num_locality_aware_tasks: u32,
        host_to_local_task_count: BTreeMap<String, u32>,
        excluded_nodes: BTreeSet<String>,
        now: Duration,
    ) -> bool {
        let rp = DEFAULT_RESOURCE_PROFILE_ID;
        self.num_locality_aware_tasks = BTreeMap::from([(rp, num_locality_aware_tasks)]);
        self.host_to_local_task_count = BTreeMap::from([(rp, host_to_local_task_count)]);
        if total == self.target_for(rp) {
            return false;
        }
        self.logs.push(info(format!(
            "Driver requested a total number of {total} executor(s) for resource profile id: {rp}."
        )));
        self.targets.insert(rp, total);
        self.health
            .set_scheduler_excluded(excluded_nodes, now, &mut self.logs);
        true
    }

    /// Brings the outstanding requests in line with the targets: for each profile,
    /// `missing = target − pending − running − starting`. When positive, stale locality
    /// requests are cancelled and the placement strategy spreads the missing containers (plus
    /// the cancelled ones, plus any-host requests it may replace) over the preferred hosts;
    /// when negative, pending requests are cancelled, stale first, then any-host, then
    /// locality-matched.
    pub fn update_resource_requests(&mut self, rack_of: &dyn Fn(&str) -> Option<String>) -> RequestUpdate {
        let mut update = RequestUpdate::default();
        let profiles: Vec<u32> = self.targets.keys().copied().collect();
        for rp in profiles {
            self.update_profile_requests(rp, rack_of, &mut update);
        }
        update
    }

    fn update_profile_requests(
        &mut self,
        rp: u32,
        rack_of: &dyn Fn(&str) -> Option<String>,
        update: &mut RequestUpdate,
    ) {
        let Some(resource) = self.profile_resources.get(&rp).copied() else {
            return;
        };
        let pending = self.pending_indices(rp);
        let target = i64::from(self.target_for(rp));
        let running = self.running.get(&rp).map_or(0, BTreeSet::len) as i64;
        let starting = i64::from(self.starting.get(&rp).copied().unwrap_or(0));
        let missing = target - pending.len() as i64 - running - starting;

        let empty = BTreeMap::new();
        let hints = self.host_to_local_task_count.get(&rp).unwrap_or(&empty);
        let (local, stale, any_host) = self.split_by_locality(&pending, hints);

        let mut cancel: Vec<usize> = Vec::new();
        let mut new_requests: Vec<ContainerRequest> = Vec::new();
        if missing > 0 {
            update.log.push(info(format!(
                "Will request {missing} executor container(s) for ResourceProfile Id: {rp}, each with {} \
                 core(s) and {} MB memory (including {} MB of overhead)",
                resource.vcores, resource.memory_mb, self.executor_memory_overhead_mb
            )));

            // Requests for hosts no task prefers any more are re-placed from scratch.
            cancel.extend(&stale);
            if !stale.is_empty() {
                update.log.push(info(format!(
                    "Canceled {} container request(s) (locality no longer needed)",
                    stale.len()
                )));
            }
            let available = missing + stale.len() as i64;
            // Any-host requests may give way to better-placed ones.
            let potential = available + any_host.len() as i64;

            let local_requests: Vec<&ContainerRequest> = local.iter().map(|i| &self.requests[*i]).collect();
            let input = PlacementInput {
                num_containers: potential,
                num_locality_aware_tasks: self.num_locality_aware_tasks.get(&rp).copied().unwrap_or(0),
                host_to_local_task_count: hints,
                allocated_host_to_containers: self.allocated_host_to_containers.get(&rp),
                locality_matched_pending: &local_requests,
                tasks_per_executor: resource.vcores.checked_div(self.task_cpus).unwrap_or(0),
            };
            for preference in locality_of_requested_containers(&input, rack_of) {
                new_requests.push(ContainerRequest {
                    resource,
                    nodes: preference.nodes,
                    racks: preference.racks,
                    priority: rp,
                    relax_locality: true,
                });
            }
            let localized = new_requests.len() as i64;
            if available >= localized {
                for _ in 0..(available - localized) {
                    new_requests.push(ContainerRequest::any(resource, rp));
                }
            } else {
                let to_cancel = localized - available;
                cancel.extend(
                    any_host
                        .iter()
                        .take(usize::try_from(to_cancel).unwrap_or(usize::MAX)),
                );
                update.log.push(info(format!(
                    "Canceled {to_cancel} unlocalized container requests to resubmit with locality"
                )));
            }

            let unlocalized = new_requests.iter().filter(|r| r.nodes.is_empty()).count();
            if unlocalized > 0 {
                update.log.push(info(format!(
                    "Submitted {unlocalized} unlocalized container requests."
                )));
            }
            for request in new_requests.iter().filter(|r| !r.nodes.is_empty()) {
                update.log.push(info(format!(
                    "Submitted container request for host {}.",
                    request.nodes.join(",")
                )));
            }
        } else if missing < 0 && !pending.is_empty() {
            let to_cancel = (pending.len() as i64).min(-missing);
            update.log.push(info(format!(
                "Canceling requests for {to_cancel} executor container(s) to have a new desired total \
                 {target} executors."
            )));
            let order = stale.iter().chain(&any_host).chain(&local);
            cancel.extend(order.take(usize::try_from(to_cancel).unwrap_or(usize::MAX)));
        }

        for index in &cancel {
            update.cancelled.push(self.requests[*index].clone());
        }
        let doomed: BTreeSet<usize> = cancel.into_iter().collect();
        let mut index = 0;
        self.requests.retain(|_| {
            let keep = !doomed.contains(&index);
            index += 1;
            keep
        });
        update.added.extend(new_requests.iter().cloned());
        self.requests.extend(new_requests);
    }

    /// Indices of the profile's outstanding requests (same priority and resource), oldest first.
    fn pending_indices(&self, rp: u32) -> Vec<usize> {
        let Some(resource) = self.profile_resources.get(&rp) else {
            return Vec::new();
        };
        self.requests
            .iter()
            .enumerate()
            .filter(|(_, r)| r.priority == rp && r.resource == *resource)
            .map(|(i, _)| i)
            .collect()
    }

    /// (locality-matched, stale, any-host) among the given requests, by the preferred hosts.
    fn split_by_locality(
        &self,
        pending: &[usize],
        hints: &BTreeMap<String, u32>,
    ) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
        let (mut local, mut stale, mut any_host) = (Vec::new(), Vec::new(), Vec::new());
        for index in pending {
            let request = &self.requests[*index];
            if request.nodes.is_empty() {
                any_host.push(*index);
            } else if request.nodes.iter().any(|n| hints.contains_key(n)) {
                local.push(*index);
            } else {
                stale.push(*index);
            }
        }
        (local, stale, any_host)
    }

    fn target_for(&self, rp: u32) -> u32 {
        self.targets.get(&rp).copied().unwrap_or(self.initial_target)
    }

    /// Removes the oldest outstanding request of the container's profile filed under
    /// `location`; false if there is none.
    fn take_matching_request(
        &mut self,
        container: &Container,
        location: &str,
        rack_of: &dyn Fn(&str) -> Option<String>,
    ) -> bool {
        let rp = container.priority;
        let Some(resource) = self.profile_resources.get(&rp).copied() else {
            return false;
        };
        let found = self
            .requests
            .iter()
            .position(|r| r.priority == rp && r.resource == resource && registered_at(r, location, rack_of));
        match found {
            Some(index) => {
                self.requests.remove(index);
                true
            }
            None => false,
        }
    }

    /// Granted containers: each is matched to an outstanding request by its host, then its
    /// rack, then any host; a match removes that request. Containers nothing asked for are
    /// released. Each matched container uses up the next executor id; it is launched while
    /// running + starting executors are below the target, and skipped otherwise.
    pub fn handle_allocated_containers(
        &mut self,
        containers: Vec<Container>,
        rack_of: &dyn Fn(&str) -> Option<String>,
    ) -> AllocationOutcome {
        let mut outcome = AllocationOutcome::default();
        let received = containers.len();
        let mut to_use: Vec<Container> = Vec::with_capacity(received);

        let mut after_host = Vec::new();
        for container in containers {
            let host = container.node.clone();
            if self.take_matching_request(&container, &host, rack_of) {
                to_use.push(container);
            } else {
                after_host.push(container);
            }
        }

        let mut after_rack = Vec::new();
        for container in after_host {
            let rack =
                rack_of(&container.node).or_else(|| Some(container.rack.clone()).filter(|r| !r.is_empty()));
            let matched = match rack {
                Some(rack) => self.take_matching_request(&container, &rack, rack_of),
                None => false,
            };
            if matched {
                to_use.push(container);
            } else {
                after_rack.push(container);
            }
        }

        let mut unwanted = Vec::new();
        for container in after_rack {
            if self.take_matching_request(&container, ANY_HOST, rack_of) {
                to_use.push(container);
            } else {
                unwanted.push(container);
            }
        }

        if !unwanted.is_empty() {
            outcome.log.push(line(
                LogLevel::Debug,
                format!(
                    "Releasing {} unneeded containers that were allocated to us",
                    unwanted.len()
                ),
            ));
            for container in &unwanted {
                self.released_containers.insert(container.id);
                outcome.to_release.push(container.id);
            }
        }

        let used = to_use.len();
        self.run_allocated_containers(to_use, &mut outcome);
        outcome.log.push(info(format!(
            "Received {received} containers from YARN, launching executors on {used} of them."
        )));
        outcome
    }

    fn run_allocated_containers(&mut self, containers: Vec<Container>, outcome: &mut AllocationOutcome) {
        for container in containers {
            let rp = container.priority;
            self.executor_id_counter = self.executor_id_counter.saturating_add(1);
            let executor_id = self.executor_id_counter.to_string();
            let host = container.node.clone();
            outcome.log.push(info(format!(
                "Launching container {} on host {host} for executor with ID {executor_id} for ResourceProfile Id {rp}",
                container.id
            )));

            let running = self.running.get(&rp).map_or(0, BTreeSet::len);
            let starting = self.starting.get(&rp).copied().unwrap_or(0) as usize;
            let target = self.target_for(rp);
            let active = running.saturating_add(starting);
            if active < target as usize {
                let counter = self.starting.entry(rp).or_insert(0);
                *counter = counter.saturating_add(1);
                let cores = self.profile_resources.get(&rp).map_or(0, |r| r.vcores);
                self.in_flight.insert(
                    container.id,
                    InFlight {
                        executor_id: executor_id.clone(),
                        rp_id: rp,
                        container: container.clone(),
                        launching: true,
                    },
                );
                outcome.to_launch.push(Launch {
                    container,
                    executor_id,
                    host,
                    executor_memory_mb: self.executor_memory_mb,
                    executor_cores: cores,
                    resource_profile_id: rp,
                });
            } else {
                outcome.log.push(info(format!(
                    "Skip launching executorRunnable as running executors count: {active} reached target \
                     executors count: {target}."
                )));
                outcome.skipped.push(Skipped {
                    container,
                    executor_id,
                });
            }
        }
    }

    /// The executor in `container_id` started: it now counts as running (unless its container
    /// completed meanwhile). Returns false for a container that was not being launched.
    pub fn launch_succeeded(&mut self, container_id: &ContainerId) -> bool {
        let Some(entry) = self.in_flight.remove(container_id) else {
            return false;
        };
        let rp = entry.rp_id;
        if entry.launching {
            let host = entry.container.node.clone();
            self.running
                .entry(rp)
                .or_default()
                .insert(entry.executor_id.clone());
            self.container_to_executor
                .insert(*container_id, (entry.executor_id.clone(), rp));
            self.executor_to_container
                .insert(entry.executor_id, entry.container);
            self.allocated_host_to_containers
                .entry(rp)
                .or_default()
                .entry(host.clone())
                .or_default()
                .insert(*container_id);
            self.allocated_container_to_host.insert(*container_id, host);
        }
        if let Some(n) = self.starting.get_mut(&rp) {
            *n = n.saturating_sub(1);
        }
        true
    }

    /// Starting the executor failed: it no longer counts as starting, and its container is to
    /// be released (returned). As in Spark, this release is not recorded as a driver-requested
    /// one, so the completion that follows is judged by its exit status.
    pub fn launch_failed(&mut self, container_id: &ContainerId, message: &str) -> Option<ContainerId> {
        let entry = self.in_flight.remove(container_id)?;
        if let Some(n) = self.starting.get_mut(&entry.rp_id) {
            *n = n.saturating_sub(1);
        }
        self.logs.push(line(
            LogLevel::Error,
            format!(
                "Failed to launch executor {} on container {container_id}: {message}",
                entry.executor_id
            ),
        ));
        Some(*container_id)
    }

    /// KillExecutors from the driver: returns the container to release, or `None` (with a
    /// warning) when the executor is unknown or already released.
    pub fn kill_executor(&mut self, executor_id: &str) -> Option<ContainerId> {
        let container_id = self
            .executor_to_container
            .get(executor_id)
            .map(|c| c.id)
            .filter(|id| !self.released_containers.contains(id));
        let Some(container_id) = container_id else {
            self.logs
                .push(warn(format!("Attempted to kill unknown executor {executor_id}!")));
            return None;
        };
        let rp = self
            .container_to_executor
            .get(&container_id)
            .map_or(DEFAULT_RESOURCE_PROFILE_ID, |(_, rp)| *rp);
        self.released_containers.insert(container_id);
        if let Some(set) = self.running.get_mut(&rp) {
            set.remove(executor_id);
        }
        Some(container_id)
    }

    /// GetExecutorLossReason: answered now if the reason is already known, queued while the
    /// executor's container is still alive, failed for an executor never seen.
    pub fn enqueue_get_loss_reason(&mut self, executor_id: &str, token: T) -> LossReasonAnswer<T> {
        if self.executor_to_container.contains_key(executor_id) {
            self.pending_loss_reason_requests
                .entry(executor_id.to_string())
                .or_default()
                .push(token);
            LossReasonAnswer::Queued
        } else if let Some(reason) = self.released_executor_loss_reasons.remove(executor_id) {
            LossReasonAnswer::Reply { token, reason }
        } else {
            self.logs.push(warn(format!(
                "Tried to get the loss reason for non-existent executor {executor_id}"
            )));
            LossReasonAnswer::Failure {
                token,
                message: format!("Fail to find loss reason for non-existent executor {executor_id}"),
            }
        }
    }

    /// Completed containers from an Allocate response: works out each one's loss reason,
    /// counts failures, answers waiting loss-reason requests, and says which executors the
    /// driver must be told about (those the allocator had not released itself).
    pub fn process_completed_containers(
        &mut self,
        statuses: Vec<ContainerStatus>,
        now: Duration,
    ) -> CompletionOutcome<T> {
        let mut outcome = CompletionOutcome {
            completed: Vec::new(),
            replies: Vec::new(),
            log: Vec::new(),
        };
        for status in statuses {
            let completed = self.complete_one(&status, now, &mut outcome);
            outcome.completed.push(completed);
        }
        outcome
    }

    fn complete_one(
        &mut self,
        status: &ContainerStatus,
        now: Duration,
        outcome: &mut CompletionOutcome<T>,
    ) -> CompletedContainer {
        let id = status.container_id;
        if let Some(entry) = self.in_flight.get_mut(&id) {
            entry.launching = false;
        }
        let executor = self.container_to_executor.get(&id).cloned();
        let rp = executor
            .as_ref()
            .map_or(DEFAULT_RESOURCE_PROFILE_ID, |(_, rp)| *rp);
        let already_released = self.released_containers.remove(&id);
        let host = self.allocated_container_to_host.get(&id).cloned();
        let on_host = host.as_ref().map_or(String::new(), |h| format!(" on host: {h}"));
        let code = status.exit_status;
        let mut counts_as_failure = false;

        let reason = if !already_released {
            match &executor {
                Some((executor_id, _)) => {
                    if let Some(set) = self.running.get_mut(&rp) {
                        set.remove(executor_id);
                    }
                }
                None => outcome
                    .log
                    .push(warn(format!("Cannot find executorId for container: {id}"))),
            }
            outcome.log.push(info(format!(
                "Completed container {id}{on_host} (state: {}, exit status: {code})",
                state_name(status.state)
            )));
            let diagnostics = &status.diagnostics;
            let (caused_by_app, message) = if self.shutdown {
                (
                    false,
                    format!("Executor for container {id} exited after Application shutdown."),
                )
            } else {
                match code {
                    exit_status::SUCCESS => (
                        false,
                        format!(
                            "Executor for container {id} exited because of a YARN event (e.g., preemption) \
                             and not because of an error in the running job."
                        ),
                    ),
                    // Preemption is YARN sharing resources, not a fault of the tasks.
                    exit_status::PREEMPTED => (false, format!("Container {id}{on_host} was preempted.")),
                    // Memory kills still count towards task failures, not executor failures.
                    exit_status::KILLED_EXCEEDED_VMEM => {
                        let usage =
                            find_memory_usage(diagnostics, "virtual").map_or(String::new(), |u| u + ".");
                        (
                            true,
                            format!(
                                "Container killed by YARN for exceeding virtual memory limits. {usage} Consider \
                                 boosting spark.executor.memoryOverhead or boosting \
                                 yarn.nodemanager.vmem-pmem-ratio or disabling \
                                 yarn.nodemanager.vmem-check-enabled because of YARN-4714."
                            ),
                        )
                    }
                    exit_status::KILLED_EXCEEDED_PMEM => {
                        let usage =
                            find_memory_usage(diagnostics, "physical").map_or(String::new(), |u| u + ".");
                        (
                            true,
                            format!(
                                "Container killed by YARN for exceeding physical memory limits. {usage} Consider \
                                 boosting spark.executor.memoryOverhead."
                            ),
                        )
                    }
                    other => {
                        let causes = explain_exit_code(other);
                        if NOT_APP_AND_SYSTEM_FAULT_EXIT_STATUS.contains(&other) {
                            (
                                false,
                                format!(
                                    "Container marked as failed: {id}{on_host}. Exit status: {other}. \
                                     Possible causes: {causes} Diagnostics: {diagnostics}."
                                ),
                            )
                        } else {
                            // Anything else is blamed on the node the container ran on.
                            counts_as_failure = true;
                            self.health.handle_resource_allocation_failure(
                                host.as_deref(),
                                now,
                                &mut outcome.log,
                            );
                            (
                                true,
                                format!(
                                    "Container from a bad node: {id}{on_host}. Exit status: {other}. \
                                     Possible causes: {causes} Diagnostics: {diagnostics}."
                                ),
                            )
                        }
                    }
                }
            };
            let level = if caused_by_app {
                LogLevel::Warn
            } else {
                LogLevel::Info
            };
            outcome.log.push(line(level, message.clone()));
            ExecutorLossReason::ExecutorExited {
                exit_code: code,
                exit_caused_by_app: caused_by_app,
                reason: message,
            }
        } else {
            // Released by us, so the driver asked for it to go.
            ExecutorLossReason::ExecutorExited {
                exit_code: code,
                exit_caused_by_app: false,
                reason: format!("Container {id} exited from explicit termination request."),
            }
        };

        if let Some(host_name) = &host {
            if let Some(per_host) = self.allocated_host_to_containers.get_mut(&rp) {
                if let Some(set) = per_host.get_mut(host_name) {
                    set.remove(&id);
                    if set.is_empty() {
                        per_host.remove(host_name);
                    }
                }
            }
            self.allocated_container_to_host.remove(&id);
        }

        let mut send_remove_executor = false;
        if let Some((executor_id, _)) = self.container_to_executor.remove(&id) {
            self.executor_to_container.remove(&executor_id);
            match self.pending_loss_reason_requests.remove(&executor_id) {
                Some(tokens) => {
                    for token in tokens {
                        outcome.replies.push(LossReasonReply {
                            executor_id: executor_id.clone(),
                            token,
                            reason: reason.clone(),
                        });
                    }
                }
                // Usually a kill: the driver's question comes after this completion.
                None => {
                    self.released_executor_loss_reasons
                        .insert(executor_id.clone(), reason.clone());
                }
            }
            if !already_released {
                self.num_unexpected_container_release =
                    self.num_unexpected_container_release.saturating_add(1);
                send_remove_executor = true;
            }
        }

        CompletedContainer {
            container_id: id,
            executor_id: executor.map(|(e, _)| e),
            host,
            already_released,
            loss_reason: reason,
            counts_as_failure,
            send_remove_executor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yarn::records::{ApplicationAttemptId, ApplicationId};

    const MB: u64 = 1408;

    fn cid(n: u64) -> ContainerId {
        ContainerId {
            attempt: ApplicationAttemptId {
                app: ApplicationId {
                    cluster_timestamp: 1700000000000,
                    id: 1,
                },
                attempt: 1,
            },
            id: n,
        }
    }

    fn container(n: u64, host: &str) -> Container {
        Container {
            id: cid(n),
            node: host.to_string(),
            rack: String::new(),
            resource: Resource::new(MB, 1),
            priority: 0,
        }
    }

    fn status(n: u64, code: i32, diagnostics: &str) -> ContainerStatus {
        ContainerStatus {
            container_id: cid(n),
            state: ContainerState::Complete,
            exit_status: code,
            diagnostics: diagnostics.to_string(),
        }
    }

    /// h1, h2 on /r1; h3, h4 on /r2; everything else on /r9.
    fn racks(host: &str) -> Option<String> {
        Some(
            match host {
                "h1" | "h2" => "/r1",
                "h3" | "h4" => "/r2",
                _ => "/r9",
            }
            .to_string(),
        )
    }

    fn no_racks(_: &str) -> Option<String> {
        None
    }

    fn settings(target: u32) -> AllocatorSettings {
        AllocatorSettings {
            initial_target: target,
            ..AllocatorSettings::default()
        }
    }

    fn state(target: u32) -> YarnAllocatorCore<u32> {
        YarnAllocatorCore::new(settings(target))
    }

    fn hints(pairs: &[(&str, u32)]) -> BTreeMap<String, u32> {
        pairs.iter().map(|(h, n)| (h.to_string(), *n)).collect()
    }

    fn set_target(s: &mut YarnAllocatorCore<u32>, total: u32) -> bool {
        s.request_total_executors(total, 0, BTreeMap::new(), BTreeSet::new(), Duration::ZERO)
    }

    fn messages(log: &[LogLine]) -> Vec<&str> {
        log.iter().map(|l| l.message.as_str()).collect()
    }

    /// Requests `n` any-host containers, allocates them on `hosts` and reports all launched.
    fn run_executors(s: &mut YarnAllocatorCore<u32>, hosts: &[&str]) -> Vec<String> {
        set_target(s, hosts.len() as u32);
        s.update_resource_requests(&no_racks);
        let containers: Vec<Container> = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| container(100 + i as u64, h))
            .collect();
        let outcome = s.handle_allocated_containers(containers, &no_racks);
        assert_eq!(outcome.to_launch.len(), hosts.len());
        for launch in &outcome.to_launch {
            assert!(s.launch_succeeded(&launch.container.id));
        }
        outcome.to_launch.into_iter().map(|l| l.executor_id).collect()
    }

    #[test]
    fn max_failures_rule() {
        // Static allocation without spark.executor.instances: 3 (though 2 executors run).
        assert_eq!(max_num_executor_failures(None, false, SPARK_INT_MAX, None), 3);
        assert_eq!(max_num_executor_failures(None, false, 0, Some(1)), 3);
        assert_eq!(max_num_executor_failures(None, false, 0, Some(2)), 4);
        assert_eq!(max_num_executor_failures(None, false, 0, Some(5)), 10);
        // Dynamic allocation: twice its max; the default max (Int.MaxValue) gives Int.MaxValue.
        assert_eq!(max_num_executor_failures(None, true, 10, Some(5)), 20);
        assert_eq!(max_num_executor_failures(None, true, 1, None), 3);
        assert_eq!(
            max_num_executor_failures(None, true, SPARK_INT_MAX, None),
            2147483647
        );
        assert_eq!(
            max_num_executor_failures(None, true, 1073741823, None),
            2147483646
        );
        assert_eq!(
            max_num_executor_failures(None, true, 1073741824, None),
            2147483647
        );
        // Explicit wins, even below 3.
        assert_eq!(max_num_executor_failures(Some(7), true, 100, Some(50)), 7);
        assert_eq!(max_num_executor_failures(Some(1), false, 0, None), 1);
    }

    #[test]
    fn explain_exit_codes() {
        assert_eq!(explain_exit_code(52), "OutOfMemoryError");
        assert_eq!(explain_exit_code(56), "Unable to send heartbeats to driver.");
        assert_eq!(explain_exit_code(1), "Unknown executor exit code (1)");
        assert_eq!(
            explain_exit_code(137),
            "Unknown executor exit code (137) (died from signal 9?)"
        );
        assert_eq!(explain_exit_code(-1000), "Unknown executor exit code (-1000)");
    }

    #[test]
    fn missing_is_target_minus_pending_running_starting() {
        let mut s = state(5);
        let first = s.update_resource_requests(&no_racks);
        assert_eq!(first.added.len(), 5);
        assert!(first
            .added
            .iter()
            .all(|r| *r == ContainerRequest::any(Resource::new(MB, 1), 0)));
        assert_eq!(
            messages(&first.log),
            [
                "Will request 5 executor container(s) for ResourceProfile Id: 0, each with 1 core(s) and 1408 \
                 MB memory (including 384 MB of overhead)",
                "Submitted 5 unlocalized container requests."
            ]
        );
        assert_eq!(s.num_containers_pending_allocate(), 5);

        // Two granted: pending 3, starting 2; one reports launched: running 1, starting 1.
        let outcome = s.handle_allocated_containers(vec![container(1, "h1"), container(2, "h2")], &no_racks);
        assert_eq!(outcome.to_launch.len(), 2);
        assert_eq!(s.num_containers_pending_allocate(), 3);
        assert_eq!(s.num_executors_starting(), 2);
        assert!(s.launch_succeeded(&cid(1)));
        assert_eq!((s.num_executors_running(), s.num_executors_starting()), (1, 1));

        // Nothing missing at the same target: 5 - 3 - 1 - 1 = 0.
        let same = s.update_resource_requests(&no_racks);
        assert!(same.added.is_empty() && same.cancelled.is_empty() && same.log.is_empty());

        // Target 8: 8 - 3 - 1 - 1 = 3 more.
        assert!(s.request_total_executors(8, 0, BTreeMap::new(), BTreeSet::new(), Duration::ZERO));
        assert!(!s.request_total_executors(8, 0, BTreeMap::new(), BTreeSet::new(), Duration::ZERO));
        let up = s.update_resource_requests(&no_racks);
        assert_eq!((up.added.len(), up.cancelled.len()), (3, 0));
        assert_eq!(s.num_containers_pending_allocate(), 6);

        // Target 2: 2 - 6 - 1 - 1 = -6, cancel min(6, 6); running executors are kept.
        assert!(set_target(&mut s, 2));
        let down = s.update_resource_requests(&no_racks);
        assert_eq!((down.added.len(), down.cancelled.len()), (0, 6));
        assert_eq!(
            messages(&down.log),
            ["Canceling requests for 6 executor container(s) to have a new desired total 2 executors."]
        );
        assert_eq!(s.num_containers_pending_allocate(), 0);
        assert_eq!(s.running_executors(), ["1"]);
        assert_eq!(s.target(), 2);
        assert!(s
            .take_logs()
            .iter()
            .any(|l| l.message
                == "Driver requested a total number of 8 executor(s) for resource profile id: 0."));
    }

    #[test]
    fn locality_hints_become_node_and_rack_requests() {
        let mut s = state(0);
        // 25 locality-aware tasks, 1 core per executor: 25 executors wanted, 10:10:5.
        s.request_total_executors(
            4,
            25,
            hints(&[("h1", 10), ("h2", 10), ("h3", 5)]),
            BTreeSet::new(),
            Duration::ZERO,
        );
        let update = s.update_resource_requests(&racks);
        let shape: Vec<(Vec<&str>, Vec<&str>)> = update
            .added
            .iter()
            .map(|r| {
                (
                    r.nodes.iter().map(String::as_str).collect(),
                    r.racks.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        // Ratios ceil(10*4/10)=4, 4, ceil(5*4/10)=2, decremented per container.
        assert_eq!(
            shape,
            [
                (vec!["h1", "h2", "h3"], vec!["/r1", "/r2"]),
                (vec!["h1", "h2", "h3"], vec!["/r1", "/r2"]),
                (vec!["h1", "h2"], vec!["/r1"]),
                (vec!["h1", "h2"], vec!["/r1"]),
            ]
        );
        assert!(update.added.iter().all(|r| r.relax_locality && r.priority == 0));
        assert_eq!(
            update.log[1].message,
            "Submitted container request for host h1,h2,h3."
        );

        // New hints elsewhere: the four requests are stale. Target 5 → missing 1, available 5;
        // h4 wants 2 (2 tasks), the other 3 go anywhere.
        s.request_total_executors(5, 2, hints(&[("h4", 2)]), BTreeSet::new(), Duration::ZERO);
        let update = s.update_resource_requests(&racks);
        assert_eq!(update.cancelled.len(), 4);
        assert!(
            messages(&update.log).contains(&"Canceled 4 container request(s) (locality no longer needed)")
        );
        let nodes: Vec<Vec<String>> = update.added.iter().map(|r| r.nodes.clone()).collect();
        assert_eq!(
            nodes,
            [
                vec!["h4".to_string()],
                vec!["h4".to_string()],
                vec![],
                vec![],
                vec![]
            ]
        );
        assert_eq!(s.pending_requests().len(), 5);
    }

    #[test]
    fn localized_requests_replace_any_host_ones() {
        let mut s = state(2);
        s.update_resource_requests(&racks);
        assert_eq!(s.pending_requests().len(), 2);
        // Target 3, 4 tasks prefer h1: missing 1, available 1, potential 3, h1 wants 4 → 3
        // localized requests, so both any-host requests make room.
        s.request_total_executors(3, 4, hints(&[("h1", 4)]), BTreeSet::new(), Duration::ZERO);
        let update = s.update_resource_requests(&racks);
        assert_eq!(update.cancelled.len(), 2);
        assert!(update.cancelled.iter().all(|r| r.nodes.is_empty()));
        assert_eq!(update.added.len(), 3);
        assert!(messages(&update.log)
            .contains(&"Canceled 2 unlocalized container requests to resubmit with locality"));
        assert!(s
            .pending_requests()
            .iter()
            .all(|r| r.nodes == ["h1"] && r.racks == ["/r1"]));

        // Locality-matched pending requests count as containers on their hosts: nothing more.
        let again = s.update_resource_requests(&racks);
        assert!(again.added.is_empty() && again.cancelled.is_empty());
    }

    #[test]
    fn containers_match_by_host_then_rack_then_any() {
        let mut s = YarnAllocatorCore::<u32>::new(AllocatorSettings {
            executor_id_start: 10,
            ..settings(0)
        });
        // Target 3, 2 tasks prefer h1: two requests [h1]/[/r1], then one any-host.
        s.request_total_executors(3, 2, hints(&[("h1", 2)]), BTreeSet::new(), Duration::ZERO);
        s.update_resource_requests(&racks);
        let nodes: Vec<usize> = s.pending_requests().iter().map(|r| r.nodes.len()).collect();
        assert_eq!(nodes, [1, 1, 0]);

        let granted = vec![
            container(1, "h5"), // other rack: the any-host request
            container(2, "h6"), // other rack too, but nothing is left for it
            container(3, "h2"), // same rack as h1: the second h1 request
            container(4, "h1"), // preferred host: the first h1 request
        ];
        let outcome = s.handle_allocated_containers(granted, &racks);
        assert!(s.pending_requests().is_empty());
        assert_eq!(outcome.to_release, [cid(2)]);
        let launched: Vec<(ContainerId, &str, &str)> = outcome
            .to_launch
            .iter()
            .map(|l| (l.container.id, l.executor_id.as_str(), l.host.as_str()))
            .collect();
        // Matched in the order host pass, rack pass, any pass; ids continue from 10.
        assert_eq!(
            launched,
            [(cid(4), "11", "h1"), (cid(3), "12", "h2"), (cid(1), "13", "h5")]
        );
        assert_eq!(outcome.to_launch[0].executor_memory_mb, 1024);
        assert_eq!(outcome.to_launch[0].executor_cores, 1);
        assert_eq!(s.num_released_containers(), 1);
        assert_eq!(
            outcome.log.last().map(|l| l.message.as_str()),
            Some("Received 4 containers from YARN, launching executors on 3 of them.")
        );
        assert!(messages(&outcome.log)
            .contains(&"Launching container container_1700000000000_0001_01_000004 on host h1 for executor with ID 11 for ResourceProfile Id 0"));
    }

    #[test]
    fn the_rack_of_a_container_falls_back_to_its_record() {
        let mut s = state(0);
        s.request_total_executors(1, 1, hints(&[("h1", 1)]), BTreeSet::new(), Duration::ZERO);
        s.update_resource_requests(&racks);
        let mut c = container(1, "h2");
        c.rack = "/r1".to_string();
        let outcome = s.handle_allocated_containers(vec![c], &no_racks);
        assert_eq!(outcome.to_launch.len(), 1);
    }

    #[test]
    fn every_matched_container_uses_an_executor_id_even_when_skipped() {
        let mut s = state(2);
        s.update_resource_requests(&no_racks);
        // Lower the target without touching the requests: both containers still match.
        set_target(&mut s, 1);
        let outcome = s.handle_allocated_containers(vec![container(1, "h1"), container(2, "h2")], &no_racks);
        assert_eq!(outcome.to_launch.len(), 1);
        assert_eq!(outcome.to_launch[0].executor_id, "1");
        assert_eq!(outcome.skipped.len(), 1);
        assert_eq!(outcome.skipped[0].executor_id, "2");
        assert!(outcome.to_release.is_empty());
        assert!(messages(&outcome.log).contains(
            &"Skip launching executorRunnable as running executors count: 1 reached target executors count: 1."
        ));
        // The next container gets id 3.
        set_target(&mut s, 2);
        s.update_resource_requests(&no_racks);
        let next = s.handle_allocated_containers(vec![container(3, "h3")], &no_racks);
        assert_eq!(next.to_launch[0].executor_id, "3");
        assert_eq!(s.last_executor_id(), 3);
    }

    #[test]
    fn failed_launch_releases_the_container() {
        let mut s = state(1);
        s.update_resource_requests(&no_racks);
        s.handle_allocated_containers(vec![container(1, "h1")], &no_racks);
        assert_eq!(s.num_executors_starting(), 1);
        assert_eq!(s.launch_failed(&cid(1), "connection refused"), Some(cid(1)));
        assert_eq!(s.num_executors_starting(), 0);
        assert_eq!(s.launch_failed(&cid(1), "again"), None);
        assert!(!s.launch_succeeded(&cid(1)));
        assert_eq!(
            s.take_logs().last().map(|l| l.message.clone()),
            Some("Failed to launch executor 1 on container container_1700000000000_0001_01_000001: connection refused".into())
        );
        // Not a driver kill: its completion is judged by the exit status, with no executor.
        let done = s.process_completed_containers(
            vec![status(1, exit_status::KILLED_BY_APPMASTER, "")],
            Duration::ZERO,
        );
        assert!(!done.completed[0].already_released && !done.completed[0].send_remove_executor);
        assert!(messages(&done.log)
            .contains(&"Cannot find executorId for container: container_1700000000000_0001_01_000001"));
        // Missing again: 1 - 0 - 0 - 0.
        assert_eq!(s.update_resource_requests(&no_racks).added.len(), 1);
    }

    #[test]
    fn a_container_completing_during_its_launch_never_runs() {
        let mut s = state(1);
        s.update_resource_requests(&no_racks);
        s.handle_allocated_containers(vec![container(1, "h1")], &no_racks);
        s.process_completed_containers(vec![status(1, 1, "")], Duration::ZERO);
        assert!(s.launch_succeeded(&cid(1)));
        assert_eq!((s.num_executors_running(), s.num_executors_starting()), (0, 0));
    }

    /// (status, diagnostics) → (caused by app, counts as failure, message).
    fn judge(code: i32, diagnostics: &str) -> (bool, bool, String, bool) {
        let mut s = state(0);
        run_executors(&mut s, &["h1"]);
        let done =
            s.process_completed_containers(vec![status(100, code, diagnostics)], Duration::from_secs(1));
        let c = &done.completed[0];
        let ExecutorLossReason::ExecutorExited {
            exit_code,
            exit_caused_by_app,
            reason,
        } = &c.loss_reason
        else {
            panic!("not ExecutorExited: {:?}", c.loss_reason)
        };
        assert_eq!(*exit_code, code);
        assert_eq!(
            s.num_failed_executors(Duration::from_secs(1)),
            u32::from(c.counts_as_failure)
        );
        assert_eq!(c.executor_id.as_deref(), Some("1"));
        assert_eq!(done.remove_executor_messages().len(), 1);
        (
            *exit_caused_by_app,
            c.counts_as_failure,
            reason.clone(),
            c.send_remove_executor,
        )
    }

    #[test]
    fn exit_status_table() {
        let c = "container_1700000000000_0001_01_000100";
        assert_eq!(
            judge(0, ""),
            (
                false,
                false,
                format!(
                    "Executor for container {c} exited because of a YARN event (e.g., preemption) and not \
                     because of an error in the running job."
                ),
                true
            )
        );
        assert_eq!(
            judge(-102, ""),
            (
                false,
                false,
                format!("Container {c} on host: h1 was preempted."),
                true
            )
        );
        let vmem =
            "Container [pid=1] is running beyond virtual memory limits. Current usage: 1.1 GB of 2 GB \
                    physical memory used; 4.3 GB of 4.2 GB virtual memory used. Killing container.";
        assert_eq!(
            judge(-103, vmem),
            (
                true,
                false,
                "Container killed by YARN for exceeding virtual memory limits. 4.3 GB of 4.2 GB virtual memory \
                 used. Consider boosting spark.executor.memoryOverhead or boosting \
                 yarn.nodemanager.vmem-pmem-ratio or disabling yarn.nodemanager.vmem-check-enabled because of \
                 YARN-4714."
                    .to_string(),
                true
            )
        );
        let pmem =
            "Container is running beyond physical memory limits. Current usage: 2.1 GB of 2 GB physical \
                    memory used; 3.0 GB of 4.2 GB virtual memory used.";
        assert_eq!(
            judge(-104, pmem),
            (
                true,
                false,
                "Container killed by YARN for exceeding physical memory limits. 2.1 GB of 2 GB physical memory \
                 used. Consider boosting spark.executor.memoryOverhead."
                    .to_string(),
                true
            )
        );
        // Without a usage figure in the diagnostics the gap stays.
        assert_eq!(
            judge(-104, "killed").2,
            "Container killed by YARN for exceeding physical memory limits.  Consider boosting \
             spark.executor.memoryOverhead."
        );
        for code in [-106, -105, -107, -100, -101] {
            assert_eq!(
                judge(code, "diag"),
                (
                    false,
                    false,
                    format!(
                        "Container marked as failed: {c} on host: h1. Exit status: {code}. Possible causes: \
                         Unknown executor exit code ({code}) Diagnostics: diag."
                    ),
                    true
                )
            );
        }
        for (code, causes) in [
            (1, "Unknown executor exit code (1)".to_string()),
            (52, "OutOfMemoryError".to_string()),
            (
                143,
                "Unknown executor exit code (143) (died from signal 15?)".to_string(),
            ),
            (-1000, "Unknown executor exit code (-1000)".to_string()),
        ] {
            assert_eq!(
                judge(code, "Exception from container-launch."),
                (
                    true,
                    true,
                    format!(
                        "Container from a bad node: {c} on host: h1. Exit status: {code}. Possible causes: \
                         {causes} Diagnostics: Exception from container-launch.."
                    ),
                    true
                )
            );
        }
    }

    #[test]
    fn after_shutdown_nothing_is_blamed_on_the_app() {
        let mut s = state(0);
        run_executors(&mut s, &["h1"]);
        s.set_shutdown(true);
        let done = s.process_completed_containers(vec![status(100, 1, "")], Duration::ZERO);
        let c = &done.completed[0];
        assert!(!c.loss_reason.caused_by_app() && !c.counts_as_failure && c.send_remove_executor);
        assert_eq!(
            c.loss_reason.message(),
            "Executor for container container_1700000000000_0001_01_000100 exited after Application shutdown."
        );
        assert_eq!(s.num_failed_executors(Duration::ZERO), 0);
    }

    #[test]
    fn a_killed_executor_completes_as_explicit_termination() {
        let mut s = state(0);
        let ids = run_executors(&mut s, &["h1", "h2"]);
        assert_eq!(ids, ["1", "2"]);
        assert_eq!(s.container_for_executor("1"), Some(cid(100)));
        assert_eq!(s.executor_for_container(&cid(101)), Some("2"));
        assert_eq!(s.kill_executor("1"), Some(cid(100)));
        assert_eq!(s.running_executors(), ["2"]);
        // Already released: a second kill is refused, as is an unknown id.
        assert_eq!(s.kill_executor("1"), None);
        assert_eq!(s.kill_executor("9"), None);
        let logs = s.take_logs();
        assert!(messages(&logs).contains(&"Attempted to kill unknown executor 9!"));
        assert!(messages(&logs).contains(&"Attempted to kill unknown executor 1!"));

        let done = s.process_completed_containers(vec![status(100, 1, "")], Duration::ZERO);
        let c = &done.completed[0];
        assert!(c.already_released && !c.send_remove_executor && !c.counts_as_failure);
        assert_eq!(
            c.loss_reason,
            ExecutorLossReason::ExecutorExited {
                exit_code: 1,
                exit_caused_by_app: false,
                reason: "Container container_1700000000000_0001_01_000100 exited from explicit termination \
                         request."
                    .to_string()
            }
        );
        assert!(done.remove_executor_messages().is_empty());
        assert_eq!(s.num_failed_executors(Duration::ZERO), 0);
        assert_eq!(s.num_released_containers(), 0);
        assert_eq!(s.num_unexpected_container_release(), 0);
        // The reason waits for the driver's question.
        match s.enqueue_get_loss_reason("1", 7) {
            LossReasonAnswer::Reply { token, reason } => {
                assert_eq!(token, 7);
                assert_eq!(reason, c.loss_reason);
            }
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn loss_reasons_now_queued_or_unknown() {
        let mut s = state(0);
        run_executors(&mut s, &["h1", "h2"]);
        // Executor 1 is alive: queue two asks.
        assert_eq!(s.enqueue_get_loss_reason("1", 1), LossReasonAnswer::Queued);
        assert_eq!(s.enqueue_get_loss_reason("1", 2), LossReasonAnswer::Queued);
        assert_eq!(s.num_pending_loss_reason_requests(), 1);
        let done = s.process_completed_containers(vec![status(100, -102, "")], Duration::ZERO);
        let tokens: Vec<(u32, &str)> = done
            .replies
            .iter()
            .map(|r| (r.token, r.executor_id.as_str()))
            .collect();
        assert_eq!(tokens, [(1, "1"), (2, "1")]);
        assert!(done
            .replies
            .iter()
            .all(|r| r.reason == done.completed[0].loss_reason));
        assert_eq!(s.num_pending_loss_reason_requests(), 0);
        // Answered through the queue, so nothing is kept: a later ask fails.
        assert_eq!(
            s.enqueue_get_loss_reason("1", 3),
            LossReasonAnswer::Failure {
                token: 3,
                message: "Fail to find loss reason for non-existent executor 1".to_string()
            }
        );
        // Executor 2 ends before anyone asks: answered at once, then forgotten.
        s.process_completed_containers(vec![status(101, 0, "")], Duration::ZERO);
        assert!(matches!(
            s.enqueue_get_loss_reason("2", 4),
            LossReasonAnswer::Reply { token: 4, .. }
        ));
        assert!(matches!(
            s.enqueue_get_loss_reason("2", 5),
            LossReasonAnswer::Failure { token: 5, .. }
        ));
        assert!(matches!(
            s.enqueue_get_loss_reason("77", 6),
            LossReasonAnswer::Failure { token: 6, .. }
        ));
        assert!(
            messages(&s.take_logs()).contains(&"Tried to get the loss reason for non-existent executor 77")
        );
    }

    #[test]
    fn failures_expire_after_the_validity_interval() {
        let mut s = YarnAllocatorCore::<u32>::new(AllocatorSettings {
            failures_validity_interval: Some(Duration::from_secs(10)),
            ..settings(0)
        });
        run_executors(&mut s, &["h1", "h2", "h3"]);
        for (n, at) in [(100, 0), (101, 5), (102, 12)] {
            s.process_completed_containers(vec![status(n, 1, "")], Duration::from_secs(at));
        }
        assert_eq!(s.num_failed_executors(Duration::from_secs(12)), 2); // t=0 is older than 2s
        assert_eq!(s.num_failed_executors(Duration::from_secs(15)), 2); // 5 is not older than 5
        assert_eq!(s.num_failed_executors(Duration::from_secs(16)), 1);
        assert_eq!(s.num_failed_executors(Duration::from_secs(30)), 0);

        let mut forever = state(0);
        run_executors(&mut forever, &["h1", "h2", "h3"]);
        for (n, at) in [(100, 0), (101, 5), (102, 12)] {
            forever.process_completed_containers(vec![status(n, 1, "")], Duration::from_secs(at));
        }
        assert_eq!(forever.num_failed_executors(Duration::from_secs(100_000)), 3);
    }

    #[test]
    fn hosts_are_excluded_after_too_many_failures() {
        let mut s = YarnAllocatorCore::<u32>::new(AllocatorSettings {
            launch_exclusion_enabled: true,
            max_failed_executors_per_node: 2,
            exclusion_timeout: Duration::from_secs(60),
            static_excluded_nodes: BTreeSet::from(["h9".to_string()]),
            ..settings(0)
        });
        assert_eq!(
            s.take_excluded_nodes_update(),
            Some(ExcludedNodesUpdate {
                additions: vec!["h9".to_string()],
                removals: vec![]
            })
        );
        assert_eq!(s.take_excluded_nodes_update(), None);
        s.set_num_cluster_nodes(3);
        run_executors(&mut s, &["h1", "h1", "h1", "h1"]);
        let t = Duration::from_secs(10);
        s.process_completed_containers(vec![status(100, 1, ""), status(101, 1, "")], t);
        assert_eq!(s.excluded_nodes(t), BTreeSet::from(["h9".to_string()]));
        // The third failure is more than 2: h1 is excluded for 60 s.
        let third = s.process_completed_containers(vec![status(102, 1, "")], t);
        assert!(messages(&third.log).contains(&"excluding h1 as YARN allocation failed 3 times"));
        assert!(messages(&third.log)
            .contains(&"adding nodes to YARN application master's excluded node list: List(h1)"));
        assert_eq!(
            s.excluded_nodes(t),
            BTreeSet::from(["h1".to_string(), "h9".to_string()])
        );
        assert_eq!(
            s.take_excluded_nodes_update(),
            Some(ExcludedNodesUpdate {
                additions: vec!["h1".to_string()],
                removals: vec![]
            })
        );
        assert!(!s.is_all_node_excluded());
        // A failure on an excluded host is not counted.
        let fourth = s.process_completed_containers(vec![status(103, 1, "")], t);
        assert!(fourth.completed[0].counts_as_failure);
        assert_eq!(s.num_failed_executors(t), 3);

        // The scheduler excludes h2: three of three nodes.
        s.request_total_executors(1, 0, BTreeMap::new(), BTreeSet::from(["h2".to_string()]), t);
        assert!(s.is_all_node_excluded());
        s.set_num_cluster_nodes(4);
        assert!(!s.is_all_node_excluded());
        s.set_num_cluster_nodes(0);
        assert!(!s.is_all_node_excluded());

        // After the timeout h1 is free again; YARN hears of it at the next refresh.
        let later = t + Duration::from_secs(61);
        assert_eq!(
            s.excluded_nodes(later),
            BTreeSet::from(["h2".to_string(), "h9".to_string()])
        );
        s.take_excluded_nodes_update();
        s.request_total_executors(2, 0, BTreeMap::new(), BTreeSet::from(["h2".to_string()]), later);
        assert_eq!(
            s.take_excluded_nodes_update(),
            Some(ExcludedNodesUpdate {
                additions: vec![],
                removals: vec!["h1".to_string()]
            })
        );
        assert_eq!(
            s.yarn_excluded_nodes(),
            &BTreeSet::from(["h2".to_string(), "h9".to_string()])
        );
    }

    #[test]
    fn without_launch_exclusion_failures_only_count() {
        let mut s = state(0);
        s.set_num_cluster_nodes(1);
        run_executors(&mut s, &["h1", "h1", "h1", "h1"]);
        let statuses = (100..104).map(|n| status(n, 1, "")).collect();
        s.process_completed_containers(statuses, Duration::ZERO);
        assert_eq!(s.num_failed_executors(Duration::ZERO), 4);
        assert!(s.excluded_nodes(Duration::ZERO).is_empty());
        assert!(!s.is_all_node_excluded());
        assert_eq!(s.num_unexpected_container_release(), 4);
    }

    #[test]
    fn completed_executors_are_replaced() {
        let mut s = state(0);
        run_executors(&mut s, &["h1", "h2"]);
        s.process_completed_containers(vec![status(100, 1, "")], Duration::ZERO);
        assert_eq!(s.running_executors(), ["2"]);
        // Target unchanged at 2: 2 - 0 - 1 - 0 = 1 replacement.
        assert_eq!(s.update_resource_requests(&no_racks).added.len(), 1);
    }

    #[test]
    fn memory_usage_is_found_in_diagnostics() {
        assert_eq!(
            find_memory_usage("x 12.5 MB of 1 GB physical memory used; y", "physical").as_deref(),
            Some("12.5 MB of 1 GB physical memory used")
        );
        assert_eq!(
            find_memory_usage("1 TB of 1 GB physical memory used", "physical"),
            None
        );
        assert_eq!(find_memory_usage("", "virtual"), None);
        assert_eq!(
            find_memory_usage("é 1 KB of 2 KB virtual memory used", "virtual").as_deref(),
            Some("1 KB of 2 KB virtual memory used")
        );
    }
}
