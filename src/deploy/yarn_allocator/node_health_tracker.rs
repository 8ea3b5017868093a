//! Spark's YarnAllocatorNodeHealthTracker: which nodes are excluded from allocation and why
//! (the configured exclusions, the scheduler's, and the allocator's own after launch
//! failures), and the additions and removals to pass to YARN.
//!
//! Layer: deploy (the AM's allocator), pure: every method takes `now`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::core::{info, LogLine};
use super::failure_tracker::FailureTracker;

/// Which nodes are excluded and why (YarnAllocatorNodeHealthTracker).
#[derive(Debug)]
pub(super) struct NodeHealthTracker {
    pub(super) failures: FailureTracker,
    pub(super) launch_exclusion_enabled: bool,
    pub(super) max_failures_per_host: u32,
    pub(super) exclusion_timeout: Duration,
    pub(super) static_excluded: BTreeSet<String>,
    pub(super) scheduler_excluded: BTreeSet<String>,
    /// Host → time its exclusion ends.
    pub(super) allocator_excluded: BTreeMap<String, Duration>,
    /// The set last synchronized with YARN.
    pub(super) current: BTreeSet<String>,
    pub(super) num_cluster_nodes: u32,
    pub(super) pending_additions: BTreeSet<String>,
    pub(super) pending_removals: BTreeSet<String>,
}

/// Scala's `List(a, b)` rendering, as Spark's exclusion messages print node lists.
pub(super) fn scala_list(items: &[String]) -> String {
    format!("List({})", items.join(", "))
}

impl NodeHealthTracker {
    pub(super) fn handle_resource_allocation_failure(
        &mut self,
        host: Option<&str>,
        now: Duration,
        log: &mut Vec<LogLine>,
    ) {
        match host {
            Some(host) if self.launch_exclusion_enabled => {
                // A late failure on a node already excluded is not counted: requests are
                // asynchronous, and counting it could end the application needlessly.
                if !self.scheduler_excluded.contains(host) && !self.allocator_excluded.contains_key(host) {
                    self.failures.register_failure_on_host(host, now);
                    let on_host = self.failures.num_failures_on_host(host, now);
                    if on_host > self.max_failures_per_host {
                        log.push(info(format!(
                            "excluding {host} as YARN allocation failed {on_host} times"
                        )));
                        let until = now.saturating_add(self.exclusion_timeout);
                        self.allocator_excluded.insert(host.to_string(), until);
                        self.refresh(now, log);
                    }
                }
            }
            _ => self.failures.register_executor_failure(now),
        }
    }

    pub(super) fn set_scheduler_excluded(
        &mut self,
        nodes: BTreeSet<String>,
        now: Duration,
        log: &mut Vec<LogLine>,
    ) {
        self.scheduler_excluded = nodes;
        self.refresh(now, log);
    }

    pub(super) fn excluded_at(&self, now: Duration) -> BTreeSet<String> {
        let mut all = self.static_excluded.clone();
        all.extend(self.scheduler_excluded.iter().cloned());
        all.extend(
            self.allocator_excluded
                .iter()
                .filter(|(_, until)| **until > now)
                .map(|(host, _)| host.clone()),
        );
        all
    }

    pub(super) fn refresh(&mut self, now: Duration, log: &mut Vec<LogLine>) {
        self.allocator_excluded.retain(|_, until| *until > now);
        let all = self.excluded_at(now);
        let additions: Vec<String> = all.difference(&self.current).cloned().collect();
        let removals: Vec<String> = self.current.difference(&all).cloned().collect();
        if !additions.is_empty() {
            log.push(info(format!(
                "adding nodes to YARN application master's excluded node list: {}",
                scala_list(&additions)
            )));
        }
        if !removals.is_empty() {
            log.push(info(format!(
                "removing nodes from YARN application master's excluded node list: {}",
                scala_list(&removals)
            )));
        }
        // AMRMClient.updateBlacklist semantics: the latest word on a node wins.
        for node in &additions {
            self.pending_removals.remove(node);
            self.pending_additions.insert(node.clone());
        }
        for node in &removals {
            self.pending_additions.remove(node);
            self.pending_removals.insert(node.clone());
        }
        self.current = all;
    }

    pub(super) fn is_all_node_excluded(&self) -> bool {
        if self.num_cluster_nodes == 0 {
            false
        } else {
            self.current.len() >= self.num_cluster_nodes as usize
        }
    }
}
