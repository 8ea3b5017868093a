//! Spark's LocalityPreferredContainerPlacementStrategy: the locality preferences of the
//! containers the allocator asks for, from the pending tasks' preferred hosts and the
//! containers already allocated or requested there.
//!
//! Layer: deploy (the AM's allocator), pure.

use std::collections::{BTreeMap, BTreeSet};

use crate::yarn::records::{ContainerId, ContainerRequest};

/// One container's locality preference from the placement strategy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LocalityPreference {
    pub(super) nodes: Vec<String>,
    pub(super) racks: Vec<String>,
}

/// The inputs of Spark's LocalityPreferredContainerPlacementStrategy.
pub(super) struct PlacementInput<'a> {
    pub(super) num_containers: i64,
    pub(super) num_locality_aware_tasks: u32,
    pub(super) host_to_local_task_count: &'a BTreeMap<String, u32>,
    pub(super) allocated_host_to_containers: Option<&'a BTreeMap<String, BTreeSet<ContainerId>>>,
    pub(super) locality_matched_pending: &'a [&'a ContainerRequest],
    pub(super) tasks_per_executor: u32,
}

/// Scala's `Double.toInt`: truncating, saturating at the Int range, NaN → 0 (as `as i32` does).
pub(super) fn to_int(value: f64) -> i64 {
    (value as i32) as i64
}

/// The containers the location-matched pending requests may bring to each host: every request
/// counts once for each node it names, and the counts are scaled so they add up to the number
/// of requests (3 requests over hosts counted 20:20:10 → 1.2, 1.2, 0.6).
pub(super) fn pending_host_to_container_count(pending: &[&ContainerRequest]) -> BTreeMap<String, f64> {
    let mut per_host: BTreeMap<String, i64> = BTreeMap::new();
    for request in pending {
        for node in &request.nodes {
            *per_host.entry(node.clone()).or_insert(0) += 1;
        }
    }
    let possible_total: i64 = per_host.values().sum();
    let matched = pending.len() as f64;
    per_host
        .into_iter()
        .map(|(host, n)| (host, n as f64 * matched / possible_total as f64))
        .collect()
}

/// How many more containers each preferred host should get, given the executors the pending
/// locality-aware tasks need and the containers (allocated or requested) already there.
pub(super) fn expected_host_to_container_count(input: &PlacementInput<'_>) -> BTreeMap<String, i64> {
    let total_local_tasks: i64 = input.host_to_local_task_count.values().map(|c| *c as i64).sum();
    let pending = pending_host_to_container_count(input.locality_matched_pending);
    let executors_needed =
        to_int((input.num_locality_aware_tasks as f64 / input.tasks_per_executor as f64).ceil());
    input
        .host_to_local_task_count
        .iter()
        .map(|(host, count)| {
            let expected = *count as f64 * executors_needed as f64 / total_local_tasks as f64;
            let allocated = input
                .allocated_host_to_containers
                .and_then(|m| m.get(host))
                .map_or(0, |set| set.len() as i64);
            let existing = allocated as f64 + pending.get(host).copied().unwrap_or(0.0);
            (host.clone(), to_int((expected - existing).ceil()).max(0))
        })
        .collect()
}

/// Spark's LocalityPreferredContainerPlacementStrategy.localityOfRequestedContainers, for the
/// containers that get a preference: of `num_containers`, as many as the hosts still need
/// (at most), each naming the hosts still short of their share, every host used as often as
/// its share (scaled to the number of such containers) allows, plus those hosts' racks.
pub(super) fn locality_of_requested_containers(
    input: &PlacementInput<'_>,
    rack_of: &dyn Fn(&str) -> Option<String>,
) -> Vec<LocalityPreference> {
    let wanted = expected_host_to_container_count(input);
    let locality_aware_total: i64 = wanted.values().sum();
    let free = (input.num_containers - locality_aware_total).max(0);
    let aware = input.num_containers - free;

    // Spark lists `free` containers without preference first; its only caller ignores them,
    // so they are left out here.
    let mut out: Vec<LocalityPreference> = Vec::new();
    if aware > 0 {
        let largest = wanted.values().copied().max().unwrap_or(0);
        let mut ratio: BTreeMap<&str, i64> = wanted
            .iter()
            .map(|(host, n)| {
                (
                    host.as_str(),
                    to_int((*n as f64 * aware as f64 / largest as f64).ceil()),
                )
            })
            .collect();
        for _ in 0..aware {
            let nodes: Vec<String> = ratio
                .iter()
                .filter(|(_, r)| **r > 0)
                .map(|(h, _)| h.to_string())
                .collect();
            let racks: BTreeSet<String> = nodes.iter().filter_map(|h| rack_of(h)).collect();
            out.push(LocalityPreference {
                nodes,
                racks: racks.into_iter().collect(),
            });
            for r in ratio.values_mut() {
                *r -= 1;
            }
        }
    }
    out
}
