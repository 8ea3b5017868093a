//! The ResourceManager's container scheduler: which NodeManager gets which container.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).
//!
//! A plain, synchronous and deterministic data structure — no actors, no clock, no I/O — that the
//! ResourceManager actor owns and calls. It keeps the registered nodes (host, rack, capability,
//! what is in use), every live container and the node it sits on, and a container id counter per
//! application attempt. It answers with YARN's own rules and texts:
//!
//! - **Validation** (SchedulerUtils.validateResourceRequest): an ask above the maximum allowed
//!   allocation, checked resource type by resource type (`memory-mb`, then `vcores`), is refused
//!   with InvalidResourceRequestException's GREATER_THAN_MAX_RESOURCE text.
//! - **Normalization** (ResourceCalculator.normalize with the minimum allocation as the step, as
//!   AbstractYarnScheduler.getNormalizedResource calls it): each dimension is raised to the minimum,
//!   rounded up to a multiple of the minimum and capped at the maximum allowed allocation.
//! - **Maximum allowed allocation** (ClusterNodeTracker.getMaxAllowedAllocation): the configured
//!   maximum, capped per dimension by the largest registered NodeManager; the configured maximum
//!   while no node is registered.
//! - **Placement**: node-local, then rack-local, then off-switch, with YARN's relax-locality rules
//!   as AMRMClient expands a ContainerRequest (explicit racks always allowed; the racks of the
//!   requested nodes and "anywhere" only with relax-locality), and the application's blacklist
//!   matched against both host and rack (SchedulerAppUtils.isPlaceBlacklisted).
//! - **Container ids** count from 1 per attempt (AppSchedulingInfo.getNewContainerId), so the AM
//!   container is `..._000001`.
//!
//! Differences from YARN, on purpose: there is no delay scheduling (a request falls back from
//! node-local to rack-local to off-switch at once, instead of after missed scheduling
//! opportunities), no queues, no reservations and no preemption; requests are served in the order
//! the caller gives; vcores are normalized and accounted as the DominantResourceCalculator does
//! (YARN's DefaultResourceCalculator would report every container with 1 vcore), so a node is never
//! over-committed in either dimension.
//!
//! Cost: every map is a `BTreeMap` keyed by host or container id, so results never depend on hash
//! order. [`Scheduler::allocate`] costs O(requests × nodes × log) — each request scans the nodes at
//! most once per locality level — which is fine for hundreds of nodes and thousands of requests.
//! Release, node lookup and per-attempt release are logarithmic (plus the containers returned).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use super::protocol::YarnError;
use super::records::{
    ApplicationAttemptId, Container, ContainerId, ContainerRequest, NodeReport, NodeState, Resource,
};

/// YARN's name for the memory resource type (ResourceInformation.MEMORY_URI).
const MEMORY_MB: &str = "memory-mb";
/// YARN's name for the vcores resource type (ResourceInformation.VCORES_URI).
const VCORES: &str = "vcores";

/// The priority of the AM container (RMAppAttemptImpl's AM_CONTAINER_PRIORITY).
pub const AM_CONTAINER_PRIORITY: u32 = 0;

/// How well a granted container matches its request's locality.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Locality {
    /// On one of the requested nodes.
    NodeLocal,
    /// On another node of an allowed rack.
    RackLocal,
    /// Anywhere (relax-locality).
    OffSwitch,
}

/// One container granted by [`Scheduler::allocate_grants`]: which request it satisfies and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// Index of the satisfied request in the slice passed in.
    pub request: usize,
    pub locality: Locality,
    pub container: Container,
}

/// A registered NodeManager, as the scheduler accounts it.
#[derive(Clone, Debug)]
struct Node {
    rack: String,
    capability: Resource,
    used: Resource,
    containers: BTreeSet<ContainerId>,
    /// Being decommissioned gracefully: no room for anything new (YARN shrinks such a
    /// node's total resource to what its containers use).
    decommissioning: bool,
}

impl Node {
    fn free(&self) -> Resource {
        if self.decommissioning {
            return Resource::default();
        }
        self.capability.minus(&self.used)
    }
}

/// A live container: where it runs and what it holds.
#[derive(Clone, Debug)]
struct Placed {
    host: String,
    resource: Resource,
}

/// The ResourceManager's container scheduler. See the module documentation.
#[derive(Clone, Debug)]
pub struct Scheduler {
    minimum: Resource,
    maximum: Resource,
    nodes: BTreeMap<String, Node>,
    containers: BTreeMap<ContainerId, Placed>,
    /// The last container id handed out per attempt. Kept after the attempt's containers are
    /// released, so an id is never handed out twice.
    last_container_id: BTreeMap<ApplicationAttemptId, u64>,
}

impl Scheduler {
    /// maximum and minimum allocation from yarn.scheduler.{maximum,minimum}-allocation-{mb,vcores}.
    ///
    /// Never fails: a configuration YARN would refuse at startup (see
    /// [`Scheduler::validate_configuration`]) still gives defined, panic-free behaviour.
    pub fn new(minimum: Resource, maximum: Resource) -> Scheduler {
        Scheduler {
            minimum,
            maximum,
            nodes: BTreeMap::new(),
            containers: BTreeMap::new(),
            last_container_id: BTreeMap::new(),
        }
    }

    /// The CapacityScheduler's startup check of the allocation bounds: both minimum and maximum
    /// above zero and the maximum no smaller than the minimum, with YARN's texts.
    pub fn validate_configuration(minimum: &Resource, maximum: &Resource) -> Result<(), YarnError> {
        if minimum.memory_mb == 0 || minimum.memory_mb > maximum.memory_mb {
            return Err(YarnError::Other(format!(
                "Invalid resource scheduler memory allocation configuration, \
                 yarn.scheduler.minimum-allocation-mb={}, yarn.scheduler.maximum-allocation-mb={}, \
                 min and max should be greater than 0, max should be no smaller than min.",
                minimum.memory_mb, maximum.memory_mb
            )));
        }
        if minimum.vcores == 0 || minimum.vcores > maximum.vcores {
            return Err(YarnError::Other(format!(
                "Invalid resource scheduler vcores allocation configuration, \
                 yarn.scheduler.minimum-allocation-vcores={}, yarn.scheduler.maximum-allocation-vcores={}, \
                 min and max should be greater than 0, max should be no smaller than min.",
                minimum.vcores, maximum.vcores
            )));
        }
        Ok(())
    }

    /// The configured minimum allocation (also the normalization step).
    pub fn minimum_allocation(&self) -> Resource {
        self.minimum
    }

    /// The configured maximum allocation, before capping by the registered nodes.
    pub fn configured_maximum_allocation(&self) -> Resource {
        self.maximum
    }

    /// Registers a NodeManager. Registering a known host again replaces its rack and capability and
    /// keeps its containers accounted (the ResourceManager calls [`Scheduler::remove_node`] first
    /// when a restarted NodeManager lost them); a node left with more in use than its new
    /// capability simply gets nothing new until enough is released.
    pub fn add_node(&mut self, host: &str, rack: &str, capability: Resource) {
        match self.nodes.get_mut(host) {
            Some(node) => {
                node.rack = rack.to_string();
                node.capability = capability;
            }
            None => {
                self.nodes.insert(
                    host.to_string(),
                    Node {
                        rack: rack.to_string(),
                        capability,
                        used: Resource::default(),
                        containers: BTreeSet::new(),
                        decommissioning: false,
                    },
                );
            }
        }
    }

    /// Puts a node into graceful decommission (`true`: it gets no new container, AM or
    /// executor, while its running ones go on) or back to running. False for an unknown host.
    pub fn set_decommissioning(&mut self, host: &str, decommissioning: bool) -> bool {
        match self.nodes.get_mut(host) {
            Some(node) => {
                node.decommissioning = decommissioning;
                true
            }
            None => false,
        }
    }

    /// Removes a node (lost NodeManager); returns the containers that were on it, in id order.
    /// Unknown hosts give an empty list.
    pub fn remove_node(&mut self, host: &str) -> Vec<ContainerId> {
        let Some(node) = self.nodes.remove(host) else {
            return Vec::new();
        };
        for id in &node.containers {
            self.containers.remove(id);
        }
        node.containers.into_iter().collect()
    }

    /// Whether `host` is a registered node.
    pub fn has_node(&self, host: &str) -> bool {
        self.nodes.contains_key(host)
    }

    /// YARN's validation and normalization of a requested capability.
    ///
    /// Validation comes first, on the ask as given, against [`Scheduler::maximum_allocation`]:
    /// memory, then vcores; the first dimension above the maximum is refused with
    /// InvalidResourceRequestException's text. Normalization then raises each dimension to the
    /// minimum allocation, rounds it up to a multiple of the minimum and caps it at the maximum
    /// allowed allocation (so 1408 MB with a 1024 MB minimum becomes 2048 MB, and an ask of 0 MB
    /// becomes the minimum, as in YARN). An ask that still has no memory (only possible with a
    /// minimum of 0 MB, which YARN refuses at startup) is refused: such a container would take
    /// nothing from a node and could be granted without bound.
    pub fn normalize(&self, ask: &Resource) -> Result<Resource, YarnError> {
        let max_allowed = self.maximum_allocation();
        if ask.memory_mb > max_allowed.memory_mb {
            return Err(self.above_maximum(MEMORY_MB, ask, &max_allowed));
        }
        if ask.vcores > max_allowed.vcores {
            return Err(self.above_maximum(VCORES, ask, &max_allowed));
        }
        let memory_mb = round_up_u64(ask.memory_mb.max(self.minimum.memory_mb), self.minimum.memory_mb)
            .min(max_allowed.memory_mb);
        let vcores =
            round_up_u32(ask.vcores.max(self.minimum.vcores), self.minimum.vcores).min(max_allowed.vcores);
        if memory_mb == 0 {
            return Err(YarnError::InvalidResourceRequest(format!(
                "Invalid resource request! Cannot allocate containers as requested resource is zero \
                 after normalization (yarn.scheduler.minimum-allocation-mb={}). \
                 Requested resource type=[{MEMORY_MB}], Requested resource={ask}",
                self.minimum.memory_mb
            )));
        }
        Ok(Resource::new(memory_mb, vcores))
    }

    fn above_maximum(&self, resource_type: &str, ask: &Resource, max_allowed: &Resource) -> YarnError {
        YarnError::InvalidResourceRequest(format!(
            "Invalid resource request! Cannot allocate containers as requested resource is greater than \
             maximum allowed allocation. Requested resource type=[{resource_type}], Requested resource={ask}, \
             maximum allowed allocation={max_allowed}, please note that maximum allowed allocation is \
             calculated by scheduler based on maximum resource of registered NodeManagers, which might be \
             less than configured maximum allocation={}",
            self.maximum
        ))
    }

    /// The AM container of an attempt: any node with room (most free memory first, ties by host
    /// name), with priority [`AM_CONTAINER_PRIORITY`]. `Ok(None)` when no node has room now; no
    /// container id is used up then. An ask above the maximum allocation is an error.
    pub fn allocate_am(
        &mut self,
        attempt: ApplicationAttemptId,
        ask: &Resource,
    ) -> Result<Option<Container>, YarnError> {
        let resource = self.normalize(ask)?;
        let host = best_node(self.nodes.iter(), &resource, |_, _| true).map(str::to_string);
        Ok(host.and_then(|host| self.grant(attempt, &host, resource, AM_CONTAINER_PRIORITY)))
    }

    /// Schedules as many of `requests` (the attempt's whole outstanding table) as fit now,
    /// honouring locality, and returns the granted containers in request order. See
    /// [`Scheduler::allocate_grants`] for the rules; this drops which request each container
    /// satisfied.
    pub fn allocate(
        &mut self,
        attempt: ApplicationAttemptId,
        requests: &[ContainerRequest],
        blacklist: &[String],
    ) -> Result<Vec<Container>, YarnError> {
        Ok(self
            .allocate_grants(attempt, requests, blacklist)?
            .into_iter()
            .map(|g| g.container)
            .collect())
    }

    /// Schedules as many of `requests` as fit now; each request is one container.
    ///
    /// Every request is validated and normalized first; one invalid request fails the whole call
    /// and grants nothing (YARN rejects the allocate). So is a request that turns off
    /// relax-locality without naming any node or rack (AMRMClient refuses to build one).
    ///
    /// Then, in the order given, each request is placed on the first locality level with a node
    /// that has room for its normalized resource (memory and vcores):
    /// 1. node-local: one of `request.nodes`;
    /// 2. rack-local: a node of one of `request.racks`, or — only with `relax_locality` — of the
    ///    racks of the requested nodes (AMRMClient marks explicit racks relaxable and the inferred
    ///    ones with the request's own flag);
    /// 3. off-switch: any node, only with `relax_locality`.
    ///
    /// Among the candidates of one level the node with the most free memory wins, ties going to
    /// the smaller host name. A node whose host or rack is in `blacklist` is never used. Each
    /// grant takes the attempt's next container id. Requests that do not fit stay unserved (the
    /// caller keeps them outstanding); the index in each [`Grant`] says which were served.
    pub fn allocate_grants(
        &mut self,
        attempt: ApplicationAttemptId,
        requests: &[ContainerRequest],
        blacklist: &[String],
    ) -> Result<Vec<Grant>, YarnError> {
        let mut normalized = Vec::with_capacity(requests.len());
        for request in requests {
            if !request.relax_locality && request.nodes.is_empty() && request.racks.is_empty() {
                return Err(YarnError::InvalidResourceRequest(
                    "Can't turn off locality relaxation on a request with no location constraints"
                        .to_string(),
                ));
            }
            normalized.push(self.normalize(&request.resource)?);
        }
        let blacklist: BTreeSet<&str> = blacklist.iter().map(String::as_str).collect();
        let mut grants = Vec::new();
        for (index, (request, resource)) in requests.iter().zip(normalized).enumerate() {
            let Some((host, locality)) = self.place(request, &resource, &blacklist) else {
                continue;
            };
            if let Some(container) = self.grant(attempt, &host, resource, request.priority) {
                grants.push(Grant {
                    request: index,
                    locality,
                    container,
                });
            }
        }
        Ok(grants)
    }

    /// Chooses the node for one request, or none if nothing allowed has room now.
    fn place(
        &self,
        request: &ContainerRequest,
        resource: &Resource,
        blacklist: &BTreeSet<&str>,
    ) -> Option<(String, Locality)> {
        let allowed =
            |host: &str, node: &Node| !blacklist.contains(host) && !blacklist.contains(node.rack.as_str());

        let requested = request
            .nodes
            .iter()
            .filter_map(|host| self.nodes.get_key_value(host.as_str()));
        if let Some(host) = best_node(requested, resource, allowed) {
            return Some((host.to_string(), Locality::NodeLocal));
        }

        let mut racks: BTreeSet<&str> = request.racks.iter().map(String::as_str).collect();
        if request.relax_locality {
            racks.extend(request.nodes.iter().filter_map(|host| self.rack_of(host)));
        }
        if !racks.is_empty() {
            let in_racks = self
                .nodes
                .iter()
                .filter(|(_, node)| racks.contains(node.rack.as_str()));
            if let Some(host) = best_node(in_racks, resource, allowed) {
                return Some((host.to_string(), Locality::RackLocal));
            }
        }

        if request.relax_locality {
            if let Some(host) = best_node(self.nodes.iter(), resource, allowed) {
                return Some((host.to_string(), Locality::OffSwitch));
            }
        }
        None
    }

    /// Accounts a new container of `resource` on `host` under the attempt's next id. `None` if the
    /// host is unknown, has no room, or the attempt's ids are exhausted.
    fn grant(
        &mut self,
        attempt: ApplicationAttemptId,
        host: &str,
        resource: Resource,
        priority: u32,
    ) -> Option<Container> {
        let node = self.nodes.get_mut(host)?;
        if !node.free().fits(&resource) {
            return None;
        }
        let last = self.last_container_id.get(&attempt).copied().unwrap_or(0);
        let id = ContainerId {
            attempt,
            id: last.checked_add(1)?,
        };
        self.last_container_id.insert(attempt, id.id);
        node.used = node.used.plus(&resource);
        node.containers.insert(id);
        self.containers.insert(
            id,
            Placed {
                host: host.to_string(),
                resource,
            },
        );
        Some(Container {
            id,
            node: host.to_string(),
            rack: node.rack.clone(),
            resource,
            priority,
        })
    }

    /// Frees a container's resources (completed or released); false if unknown.
    pub fn release(&mut self, container: &ContainerId) -> bool {
        let Some(placed) = self.containers.remove(container) else {
            return false;
        };
        if let Some(node) = self.nodes.get_mut(&placed.host) {
            node.used = node.used.minus(&placed.resource);
            node.containers.remove(container);
        }
        true
    }

    /// Frees every container of an attempt; returns them in id order.
    pub fn release_attempt(&mut self, attempt: &ApplicationAttemptId) -> Vec<ContainerId> {
        let ids = self.containers_of(attempt);
        for id in &ids {
            self.release(id);
        }
        ids
    }

    /// The live containers of an attempt, in id order.
    pub fn containers_of(&self, attempt: &ApplicationAttemptId) -> Vec<ContainerId> {
        let first = ContainerId {
            attempt: *attempt,
            id: 0,
        };
        let last = ContainerId {
            attempt: *attempt,
            id: u64::MAX,
        };
        self.containers.range(first..=last).map(|(id, _)| *id).collect()
    }

    /// The live containers placed on `host`, in id order (empty for an unknown host).
    pub fn containers_on(&self, host: &str) -> Vec<ContainerId> {
        self.nodes
            .get(host)
            .map(|node| node.containers.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The host a live container runs on.
    pub fn node_of(&self, container: &ContainerId) -> Option<&str> {
        self.containers.get(container).map(|placed| placed.host.as_str())
    }

    /// The resource a live container holds (normalized).
    pub fn resource_of(&self, container: &ContainerId) -> Option<Resource> {
        self.containers.get(container).map(|placed| placed.resource)
    }

    /// The rack of a registered node.
    pub fn rack_of(&self, host: &str) -> Option<&str> {
        self.nodes.get(host).map(|node| node.rack.as_str())
    }

    pub fn num_nodes(&self) -> u32 {
        u32::try_from(self.nodes.len()).unwrap_or(u32::MAX)
    }

    /// How many containers are live on all nodes.
    pub fn num_containers(&self) -> usize {
        self.containers.len()
    }

    /// Every registered node's capability together (the cluster resource).
    pub fn cluster_resource(&self) -> Resource {
        self.nodes
            .values()
            .fold(Resource::default(), |sum, node| sum.plus(&node.capability))
    }

    /// Forgets the last container id of an attempt whose application the RM no longer
    /// keeps (its containers are all released).
    pub fn forget_attempt(&mut self, attempt: &ApplicationAttemptId) {
        self.last_container_id.remove(attempt);
    }

    /// Total free resources (for AllocateResponse.available).
    pub fn available(&self) -> Resource {
        self.nodes
            .values()
            .fold(Resource::default(), |sum, node| sum.plus(&node.free()))
    }

    /// The largest container the cluster can grant: the configured maximum capped, dimension by
    /// dimension, by the largest registered node (YARN's "maximum allowed allocation ... calculated
    /// by scheduler based on maximum resource of registered NodeManagers"); the configured maximum
    /// while no node is registered, as YARN does.
    pub fn maximum_allocation(&self) -> Resource {
        if self.nodes.is_empty() {
            return self.maximum;
        }
        let largest = self.nodes.values().fold(Resource::default(), |max, node| {
            Resource::new(
                max.memory_mb.max(node.capability.memory_mb),
                max.vcores.max(node.capability.vcores),
            )
        });
        Resource::new(
            self.maximum.memory_mb.min(largest.memory_mb),
            self.maximum.vcores.min(largest.vcores),
        )
    }

    /// One report per node, by host name.
    pub fn node_reports(&self) -> Vec<NodeReport> {
        self.nodes
            .iter()
            .map(|(host, node)| NodeReport {
                host: host.clone(),
                rack: node.rack.clone(),
                capability: node.capability,
                used: node.used,
                num_containers: u32::try_from(node.containers.len()).unwrap_or(u32::MAX),
                state: if node.decommissioning {
                    NodeState::Decommissioning
                } else {
                    NodeState::Running
                },
            })
            .collect()
    }
}

/// The candidate with room for `resource` and the most free memory, ties to the smaller host name.
fn best_node<'a>(
    candidates: impl Iterator<Item = (&'a String, &'a Node)>,
    resource: &Resource,
    allowed: impl Fn(&str, &Node) -> bool,
) -> Option<&'a str> {
    let mut best: Option<(&'a str, u64)> = None;
    for (host, node) in candidates {
        let free = node.free();
        if !free.fits(resource) || !allowed(host, node) {
            continue;
        }
        let better = match best {
            None => true,
            Some((best_host, best_free)) => match free.memory_mb.cmp(&best_free) {
                Ordering::Greater => true,
                Ordering::Equal => host.as_str() < best_host,
                Ordering::Less => false,
            },
        };
        if better {
            best = Some((host.as_str(), free.memory_mb));
        }
    }
    best.map(|(host, _)| host)
}

/// `value` rounded up to a multiple of `step` (unchanged for a zero step), saturating.
fn round_up_u64(value: u64, step: u64) -> u64 {
    if step == 0 {
        return value;
    }
    value.div_ceil(step).saturating_mul(step)
}

fn round_up_u32(value: u32, step: u32) -> u32 {
    if step == 0 {
        return value;
    }
    value.div_ceil(step).saturating_mul(step)
}

#[cfg(test)]
mod tests {
    use super::super::records::ApplicationId;
    use super::*;

    fn attempt(app: u32, attempt: u32) -> ApplicationAttemptId {
        ApplicationAttemptId {
            app: ApplicationId {
                cluster_timestamp: 1700000000000,
                id: app,
            },
            attempt,
        }
    }

    fn sched() -> Scheduler {
        Scheduler::new(Resource::new(1024, 1), Resource::new(8192, 4))
    }

    /// r1: h1, h2; r2: h3 — 8192 MB / 8 vcores each.
    fn cluster() -> Scheduler {
        let mut s = sched();
        s.add_node("h1", "/r1", Resource::new(8192, 8));
        s.add_node("h2", "/r1", Resource::new(8192, 8));
        s.add_node("h3", "/r2", Resource::new(8192, 8));
        s
    }

    fn on(resource: Resource, nodes: &[&str], racks: &[&str], relax: bool) -> ContainerRequest {
        ContainerRequest {
            resource,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            racks: racks.iter().map(|r| r.to_string()).collect(),
            priority: 0,
            relax_locality: relax,
        }
    }

    fn hosts(containers: &[Container]) -> Vec<&str> {
        containers.iter().map(|c| c.node.as_str()).collect()
    }

    /// Takes all of a node's free memory with one container outside the attempts under test.
    fn fill(s: &mut Scheduler, host: &str) {
        let free = s
            .node_reports()
            .into_iter()
            .find(|r| r.host == host)
            .map(|r| r.capability.minus(&r.used));
        let ask = on(Resource::new(free.unwrap().memory_mb, 1), &[host], &[], false);
        let got = s.allocate(attempt(99, 1), &[ask], &[]).unwrap();
        assert_eq!(hosts(&got), vec![host]);
    }

    #[test]
    fn normalization_rounds_memory_up_to_a_multiple_of_the_minimum() {
        let s = sched();
        let n = |mb, vc| s.normalize(&Resource::new(mb, vc)).unwrap();
        assert_eq!(n(1408, 1), Resource::new(2048, 1));
        assert_eq!(n(1024, 1), Resource::new(1024, 1));
        assert_eq!(n(1025, 2), Resource::new(2048, 2));
        assert_eq!(n(2049, 4), Resource::new(3072, 4));
        assert_eq!(n(1, 1), Resource::new(1024, 1));
        // Zero is raised to the minimum, as YARN does.
        assert_eq!(n(0, 0), Resource::new(1024, 1));
        assert_eq!(n(8192, 3), Resource::new(8192, 3));

        // Vcores rounded to the vcores minimum; a maximum that is no multiple of the minimum caps.
        let s = Scheduler::new(Resource::new(512, 2), Resource::new(8000, 8));
        assert_eq!(
            s.normalize(&Resource::new(1408, 3)).unwrap(),
            Resource::new(1536, 4)
        );
        assert_eq!(
            s.normalize(&Resource::new(7900, 1)).unwrap(),
            Resource::new(8000, 2)
        );
        assert_eq!(
            s.normalize(&Resource::new(7900, 7)).unwrap(),
            Resource::new(8000, 8)
        );
    }

    #[test]
    fn zero_memory_after_normalization_is_refused() {
        let s = Scheduler::new(Resource::new(0, 0), Resource::new(8192, 4));
        assert_eq!(
            s.normalize(&Resource::new(1408, 0)).unwrap(),
            Resource::new(1408, 0)
        );
        let err = s.normalize(&Resource::new(0, 1)).unwrap_err();
        assert!(
            matches!(&err, YarnError::InvalidResourceRequest(t)
                if t.contains("type=[memory-mb], Requested resource=<memory:0, vCores:1>")),
            "{err:?}"
        );
    }

    #[test]
    fn above_the_maximum_is_refused_with_yarns_text() {
        let s = sched();
        assert_eq!(
            s.normalize(&Resource::new(9216, 1)),
            Err(YarnError::InvalidResourceRequest(
                "Invalid resource request! Cannot allocate containers as requested resource is greater than \
                 maximum allowed allocation. Requested resource type=[memory-mb], \
                 Requested resource=<memory:9216, vCores:1>, maximum allowed allocation=<memory:8192, vCores:4>, \
                 please note that maximum allowed allocation is calculated by scheduler based on maximum \
                 resource of registered NodeManagers, which might be less than configured maximum \
                 allocation=<memory:8192, vCores:4>"
                    .to_string()
            ))
        );
        // Memory is checked first; vcores alone.
        let err = s.normalize(&Resource::new(9216, 5)).unwrap_err();
        assert!(matches!(&err, YarnError::InvalidResourceRequest(t) if t.contains("type=[memory-mb]")));
        let err = s.normalize(&Resource::new(2048, 5)).unwrap_err();
        assert!(
            matches!(&err, YarnError::InvalidResourceRequest(t)
                if t.contains("type=[vcores], Requested resource=<memory:2048, vCores:5>")),
            "{err:?}"
        );

        // Once nodes registered, the allowed maximum is capped by the largest of them.
        let mut s = sched();
        s.add_node("h1", "/r1", Resource::new(6144, 8));
        let err = s.normalize(&Resource::new(7168, 1)).unwrap_err();
        assert_eq!(
            err,
            YarnError::InvalidResourceRequest(
                "Invalid resource request! Cannot allocate containers as requested resource is greater than \
                 maximum allowed allocation. Requested resource type=[memory-mb], \
                 Requested resource=<memory:7168, vCores:1>, maximum allowed allocation=<memory:6144, vCores:4>, \
                 please note that maximum allowed allocation is calculated by scheduler based on maximum \
                 resource of registered NodeManagers, which might be less than configured maximum \
                 allocation=<memory:8192, vCores:4>"
                    .to_string()
            )
        );
    }

    #[test]
    fn maximum_allocation_is_capped_by_the_largest_node() {
        let mut s = sched();
        assert_eq!(s.maximum_allocation(), Resource::new(8192, 4));
        s.add_node("small", "/r1", Resource::new(4096, 16));
        assert_eq!(s.maximum_allocation(), Resource::new(4096, 4));
        s.add_node("big", "/r1", Resource::new(6144, 2));
        assert_eq!(s.maximum_allocation(), Resource::new(6144, 4));
        s.add_node("huge", "/r2", Resource::new(65536, 64));
        assert_eq!(s.maximum_allocation(), Resource::new(8192, 4));
        s.remove_node("huge");
        s.remove_node("small");
        assert_eq!(s.maximum_allocation(), Resource::new(6144, 2));
        s.remove_node("big");
        assert_eq!(s.maximum_allocation(), Resource::new(8192, 4));
    }

    #[test]
    fn node_local_when_the_requested_node_has_room() {
        let mut s = cluster();
        // h1 and h3 have more free memory than h2 after this, yet h2 is asked for.
        s.allocate(
            attempt(99, 1),
            &[on(Resource::new(1024, 1), &["h2"], &[], false)],
            &[],
        )
        .unwrap();
        let a = attempt(1, 1);
        let grants = s
            .allocate_grants(a, &[on(Resource::new(2048, 1), &["h2"], &[], true)], &[])
            .unwrap();
        assert_eq!(grants.len(), 1);
        assert_eq!(grants[0].request, 0);
        assert_eq!(grants[0].locality, Locality::NodeLocal);
        assert_eq!(
            grants[0].container,
            Container {
                id: ContainerId { attempt: a, id: 1 },
                node: "h2".into(),
                rack: "/r1".into(),
                resource: Resource::new(2048, 1),
                priority: 0,
            }
        );
        // Among several requested nodes, the one with more free memory.
        let got = s
            .allocate(a, &[on(Resource::new(1024, 1), &["h2", "h1"], &[], false)], &[])
            .unwrap();
        assert_eq!(hosts(&got), vec!["h1"]);
    }

    #[test]
    fn rack_local_when_the_requested_node_is_full() {
        let mut s = cluster();
        fill(&mut s, "h2");
        let grants = s
            .allocate_grants(
                attempt(1, 1),
                &[on(Resource::new(2048, 1), &["h2"], &[], true)],
                &[],
            )
            .unwrap();
        assert_eq!(grants.len(), 1);
        assert_eq!(grants[0].locality, Locality::RackLocal);
        assert_eq!(grants[0].container.node, "h1");
        assert_eq!(grants[0].container.rack, "/r1");
        // An explicit rack, without nodes.
        let grants = s
            .allocate_grants(
                attempt(1, 1),
                &[on(Resource::new(2048, 1), &[], &["/r2"], true)],
                &[],
            )
            .unwrap();
        assert_eq!(
            (grants[0].locality, grants[0].container.node.as_str()),
            (Locality::RackLocal, "h3")
        );
    }

    #[test]
    fn off_switch_when_relaxed_and_the_rack_is_full() {
        let mut s = cluster();
        fill(&mut s, "h1");
        fill(&mut s, "h2");
        let grants = s
            .allocate_grants(
                attempt(1, 1),
                &[on(Resource::new(2048, 1), &["h2"], &["/r1"], true)],
                &[],
            )
            .unwrap();
        assert_eq!(grants.len(), 1);
        assert_eq!(
            (grants[0].locality, grants[0].container.node.as_str()),
            (Locality::OffSwitch, "h3")
        );
        // No preference at all is off-switch too.
        let grants = s
            .allocate_grants(
                attempt(1, 1),
                &[ContainerRequest::any(Resource::new(1024, 1), 3)],
                &[],
            )
            .unwrap();
        assert_eq!(grants[0].locality, Locality::OffSwitch);
        assert_eq!(grants[0].container.priority, 3);
    }

    #[test]
    fn nothing_when_not_relaxed_and_the_preferred_places_are_full() {
        let mut s = cluster();
        fill(&mut s, "h2");
        let a = attempt(1, 1);
        // Strict node: h1 in the same rack has room, but the inferred rack is not relaxable.
        let strict = on(Resource::new(2048, 1), &["h2"], &[], false);
        assert_eq!(s.allocate(a, std::slice::from_ref(&strict), &[]).unwrap(), vec![]);
        // Explicit racks are always allowed.
        let with_rack = on(Resource::new(2048, 1), &["h2"], &["/r1"], false);
        assert_eq!(
            hosts(&s.allocate(a, std::slice::from_ref(&with_rack), &[]).unwrap()),
            vec!["h1"]
        );
        fill(&mut s, "h1");
        assert_eq!(s.allocate(a, &[with_rack, strict], &[]).unwrap(), vec![]);
        // h3 (another rack) still has all its room.
        assert_eq!(s.node_reports()[2].used, Resource::default());
        // A strict request with no place at all is refused, as AMRMClient refuses to build it.
        assert_eq!(
            s.allocate(a, &[on(Resource::new(1024, 1), &[], &[], false)], &[]),
            Err(YarnError::InvalidResourceRequest(
                "Can't turn off locality relaxation on a request with no location constraints".into()
            ))
        );
    }

    #[test]
    fn blacklisted_hosts_and_racks_are_never_used() {
        let mut s = cluster();
        let a = attempt(1, 1);
        let black = vec!["h1".to_string()];
        let asks: Vec<_> = (0..8)
            .map(|_| on(Resource::new(2048, 1), &["h1"], &[], true))
            .collect();
        let got = s.allocate(a, &asks, &black).unwrap();
        assert_eq!(got.len(), 8);
        assert!(got.iter().all(|c| c.node != "h1"), "{got:?}");
        assert_eq!(s.node_reports()[0].num_containers, 0);
        // A blacklisted rack: only h3 is left, and it is full now.
        let black = vec!["/r1".to_string()];
        let got = s
            .allocate(a, &[ContainerRequest::any(Resource::new(1024, 1), 0)], &black)
            .unwrap();
        assert_eq!(got, vec![]);
        let got = s
            .allocate(a, &[ContainerRequest::any(Resource::new(1024, 1), 0)], &[])
            .unwrap();
        assert_eq!(hosts(&got), vec!["h1"]);
    }

    #[test]
    fn capacity_is_never_exceeded() {
        let mut s = cluster();
        let a = attempt(1, 1);
        let asks: Vec<_> = (0..13)
            .map(|_| ContainerRequest::any(Resource::new(2048, 1), 0))
            .collect();
        let got = s.allocate(a, &asks, &[]).unwrap();
        assert_eq!(got.len(), 12);
        for host in ["h1", "h2", "h3"] {
            assert_eq!(got.iter().filter(|c| c.node == host).count(), 4, "{host}");
        }
        // Spread: most free memory first, ties by host name.
        assert_eq!(hosts(&got[..4]), vec!["h1", "h2", "h3", "h1"]);
        assert_eq!(s.available(), Resource::new(0, 12));
        // The 13th waits until a release.
        let last = vec![ContainerRequest::any(Resource::new(2048, 1), 0)];
        assert_eq!(s.allocate(a, &last, &[]).unwrap(), vec![]);
        let freed = got[4].id;
        assert_eq!(got[4].node, "h2");
        assert!(s.release(&freed));
        let again = s.allocate(a, &last, &[]).unwrap();
        assert_eq!(hosts(&again), vec!["h2"]);
        assert_eq!(again[0].id.id, 13);
        for report in s.node_reports() {
            assert!(report.capability.fits(&report.used), "{report:?}");
        }

        // Vcores bound too: two 1-vcore containers fill a 2-vcore node with memory to spare.
        let mut s = sched();
        s.add_node("h1", "/r1", Resource::new(8192, 2));
        let asks: Vec<_> = (0..3)
            .map(|_| ContainerRequest::any(Resource::new(1024, 1), 0))
            .collect();
        assert_eq!(s.allocate(a, &asks, &[]).unwrap().len(), 2);
        assert_eq!(s.available(), Resource::new(6144, 0));
    }

    #[test]
    fn container_ids_count_per_attempt_from_the_am() {
        let mut s = cluster();
        let a = attempt(1, 1);
        let b = attempt(2, 1);
        let am = s.allocate_am(a, &Resource::new(1408, 1)).unwrap().unwrap();
        assert_eq!(am.id.to_string(), "container_1700000000000_0001_01_000001");
        assert_eq!(am.resource, Resource::new(2048, 1));
        assert_eq!(am.priority, AM_CONTAINER_PRIORITY);
        let asks: Vec<_> = (0..2)
            .map(|_| ContainerRequest::any(Resource::new(1024, 1), 0))
            .collect();
        let got = s.allocate(a, &asks, &[]).unwrap();
        assert_eq!(got.iter().map(|c| c.id.id).collect::<Vec<_>>(), vec![2, 3]);
        // Another application's AM starts at 1 again; so does a second attempt.
        assert_eq!(
            s.allocate_am(b, &Resource::new(1024, 1)).unwrap().unwrap().id.id,
            1
        );
        let a2 = attempt(1, 2);
        let am2 = s.allocate_am(a2, &Resource::new(1024, 1)).unwrap().unwrap();
        assert_eq!(am2.id.to_string(), "container_1700000000000_0001_02_000001");
        // Ids are not reused after a release.
        assert_eq!(s.release_attempt(&a).len(), 3);
        assert_eq!(s.allocate(a, &asks[..1], &[]).unwrap()[0].id.id, 4);
    }

    #[test]
    fn am_goes_to_the_node_with_most_free_memory_and_may_wait() {
        let mut s = sched();
        let a = attempt(1, 1);
        // No node yet: nothing, and no id used up.
        assert_eq!(s.allocate_am(a, &Resource::new(1024, 1)).unwrap(), None);
        s.add_node("b", "/r1", Resource::new(4096, 4));
        s.add_node("a", "/r1", Resource::new(4096, 4));
        s.add_node("c", "/r1", Resource::new(2048, 4));
        let am = s.allocate_am(a, &Resource::new(1024, 1)).unwrap().unwrap();
        assert_eq!((am.node.as_str(), am.id.id), ("a", 1));
        let next = s
            .allocate_am(attempt(2, 1), &Resource::new(1024, 1))
            .unwrap()
            .unwrap();
        assert_eq!(next.node, "b");
        // Too big for any node's free room: waits. Too big for the maximum: refused.
        assert_eq!(
            s.allocate_am(attempt(3, 1), &Resource::new(4096, 1)).unwrap(),
            None
        );
        assert!(s.allocate_am(attempt(3, 1), &Resource::new(9000, 1)).is_err());
    }

    #[test]
    fn an_invalid_request_fails_the_whole_call() {
        let mut s = cluster();
        let a = attempt(1, 1);
        let asks = vec![
            ContainerRequest::any(Resource::new(1024, 1), 0),
            ContainerRequest::any(Resource::new(16384, 1), 0),
        ];
        assert!(matches!(
            s.allocate(a, &asks, &[]),
            Err(YarnError::InvalidResourceRequest(_))
        ));
        assert_eq!(s.num_containers(), 0);
        assert_eq!(s.available(), Resource::new(3 * 8192, 24));
        // Nothing was used up: the next grant is still id 1.
        assert_eq!(s.allocate(a, &asks[..1], &[]).unwrap()[0].id.id, 1);
    }

    #[test]
    fn a_decommissioning_node_gets_no_new_container_and_keeps_its_running_ones() {
        let mut s = cluster();
        let on_h1 = s
            .allocate(
                attempt(1, 1),
                &[on(Resource::new(1024, 1), &["h1"], &[], false)],
                &[],
            )
            .unwrap();
        assert_eq!(hosts(&on_h1), vec!["h1"]);
        assert!(s.set_decommissioning("h1", true));
        assert!(!s.set_decommissioning("h9", true), "unknown host");
        let h1 = s.node_reports().into_iter().find(|n| n.host == "h1").unwrap();
        assert_eq!((h1.state, h1.num_containers), (NodeState::Decommissioning, 1));
        // Not on h1, even when asked for it: strictly there is nothing; relaxed elsewhere.
        let strict = s
            .allocate(
                attempt(1, 1),
                &[on(Resource::new(1024, 1), &["h1"], &[], false)],
                &[],
            )
            .unwrap();
        assert!(strict.is_empty());
        let relaxed = s
            .allocate(
                attempt(1, 1),
                &[on(Resource::new(1024, 1), &["h1"], &[], true)],
                &[],
            )
            .unwrap();
        assert_eq!(relaxed.len(), 1);
        assert_ne!(relaxed[0].node, "h1");
        // Nor an AM container, whatever room it has.
        for app in 2..20 {
            if let Some(c) = s.allocate_am(attempt(app, 1), &Resource::new(1024, 1)).unwrap() {
                assert_ne!(c.node, "h1");
            }
        }
        // Its running container is still accounted until it ends.
        assert_eq!(s.containers_on("h1"), vec![on_h1[0].id]);
        assert!(s.release(&on_h1[0].id));
        assert!(s.containers_on("h1").is_empty());
        // Recommissioned, it takes containers again.
        assert!(s.set_decommissioning("h1", false));
        let back = s
            .allocate(
                attempt(1, 1),
                &[on(Resource::new(1024, 1), &["h1"], &[], false)],
                &[],
            )
            .unwrap();
        assert_eq!(hosts(&back), vec!["h1"]);
    }

    #[test]
    fn release_and_node_loss_accounting() {
        let mut s = cluster();
        let a = attempt(1, 1);
        let b = attempt(2, 1);
        let am = s.allocate_am(a, &Resource::new(1024, 1)).unwrap().unwrap();
        let mine = s
            .allocate(a, &[on(Resource::new(2048, 2), &["h3"], &[], false)], &[])
            .unwrap();
        let theirs = s
            .allocate(
                b,
                &[
                    on(Resource::new(4096, 1), &["h3"], &[], false),
                    on(Resource::new(1024, 1), &["h2"], &[], false),
                ],
                &[],
            )
            .unwrap();
        assert_eq!(s.num_containers(), 4);
        assert_eq!(s.node_of(&am.id), Some("h1"));
        assert_eq!(s.node_of(&mine[0].id), Some("h3"));
        assert_eq!(s.resource_of(&mine[0].id), Some(Resource::new(2048, 2)));
        assert_eq!(
            s.available(),
            Resource::new(3 * 8192 - 1024 - 2048 - 4096 - 1024, 24 - 5)
        );

        // release: once.
        assert!(s.release(&am.id));
        assert!(!s.release(&am.id));
        assert_eq!(s.node_of(&am.id), None);
        let h1 = &s.node_reports()[0];
        assert_eq!((h1.used, h1.num_containers), (Resource::default(), 0));

        // containers_on: what sits on a node, whoever holds it.
        assert_eq!(s.containers_on("h3"), vec![mine[0].id, theirs[0].id]);
        assert_eq!(s.containers_on("nowhere"), vec![]);

        // remove_node: the containers on it are gone, whoever held them.
        let lost = s.remove_node("h3");
        assert_eq!(lost, vec![mine[0].id, theirs[0].id]);
        assert_eq!(s.num_nodes(), 2);
        assert_eq!(s.rack_of("h3"), None);
        assert_eq!(s.node_of(&theirs[0].id), None);
        assert!(!s.release(&mine[0].id));
        assert_eq!(s.containers_of(&a), vec![]);
        assert_eq!(s.remove_node("h3"), vec![]);

        // release_attempt: the rest of b.
        assert_eq!(s.release_attempt(&b), vec![theirs[1].id]);
        assert_eq!(s.release_attempt(&b), vec![]);
        assert_eq!(s.num_containers(), 0);
        assert_eq!(s.available(), Resource::new(2 * 8192, 16));
    }

    #[test]
    fn node_reports_and_lookups() {
        let mut s = cluster();
        s.allocate(
            attempt(1, 1),
            &[on(Resource::new(1500, 1), &["h3"], &[], true)],
            &[],
        )
        .unwrap();
        assert_eq!(s.num_nodes(), 3);
        assert_eq!(s.rack_of("h1"), Some("/r1"));
        assert!(s.has_node("h2") && !s.has_node("h9"));
        assert_eq!(
            s.node_reports()[2],
            NodeReport {
                host: "h3".into(),
                rack: "/r2".into(),
                capability: Resource::new(8192, 8),
                used: Resource::new(2048, 1),
                num_containers: 1,
                state: NodeState::Running,
            }
        );
        // Re-registering keeps the containers accounted.
        s.add_node("h3", "/r3", Resource::new(16384, 16));
        let h3 = &s.node_reports()[2];
        assert_eq!(
            (h3.rack.as_str(), h3.used, h3.num_containers),
            ("/r3", Resource::new(2048, 1), 1)
        );
        // Unknown requested nodes are ignored; relaxed, the request goes anywhere.
        let got = s
            .allocate(
                attempt(1, 1),
                &[on(Resource::new(1024, 1), &["nowhere"], &[], true)],
                &[],
            )
            .unwrap();
        assert_eq!(hosts(&got), vec!["h3"]);
    }

    #[test]
    fn same_calls_give_the_same_containers() {
        let run = || {
            let mut s = Scheduler::new(Resource::new(512, 1), Resource::new(16384, 8));
            for i in 0..20u32 {
                let host = format!("node{:02}", (i * 7) % 20);
                s.add_node(
                    &host,
                    &format!("/rack{}", i % 3),
                    Resource::new(4096 + 1024 * u64::from(i % 4), 4),
                );
            }
            let a = attempt(1, 1);
            let mut out = vec![s.allocate_am(a, &Resource::new(1408, 1)).unwrap()];
            let asks: Vec<_> = (0..40u32)
                .map(|i| ContainerRequest {
                    resource: Resource::new(700 + 300 * u64::from(i % 5), 1 + i % 3),
                    nodes: vec![format!("node{:02}", i % 23)],
                    racks: if i % 4 == 0 {
                        vec![format!("/rack{}", i % 3)]
                    } else {
                        vec![]
                    },
                    priority: i % 2,
                    relax_locality: i % 6 != 5,
                })
                .collect();
            let first = s.allocate(a, &asks, &["node03".to_string()]).unwrap();
            s.release(&first[3].id);
            s.remove_node("node07");
            let second = s.allocate(a, &asks, &[]).unwrap();
            out.extend(first.into_iter().chain(second).map(Some));
            (out, s.node_reports(), s.available())
        };
        let (one, two) = (run(), run());
        assert!(one.0.len() > 20);
        assert_eq!(one, two);
        for report in &one.1 {
            assert!(report.capability.fits(&report.used), "{report:?}");
        }
    }

    #[test]
    fn configuration_check_uses_yarns_texts() {
        assert_eq!(
            Scheduler::validate_configuration(&Resource::new(1024, 1), &Resource::new(8192, 4)),
            Ok(())
        );
        assert_eq!(
            Scheduler::validate_configuration(&Resource::new(9000, 1), &Resource::new(8192, 4)),
            Err(YarnError::Other(
                "Invalid resource scheduler memory allocation configuration, \
                 yarn.scheduler.minimum-allocation-mb=9000, yarn.scheduler.maximum-allocation-mb=8192, \
                 min and max should be greater than 0, max should be no smaller than min."
                    .into()
            ))
        );
        assert_eq!(
            Scheduler::validate_configuration(&Resource::new(1024, 0), &Resource::new(8192, 4)),
            Err(YarnError::Other(
                "Invalid resource scheduler vcores allocation configuration, \
                 yarn.scheduler.minimum-allocation-vcores=0, yarn.scheduler.maximum-allocation-vcores=4, \
                 min and max should be greater than 0, max should be no smaller than min."
                    .into()
            ))
        );
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let mut s = Scheduler::new(Resource::new(4096, 8), Resource::new(1024, 1));
        s.add_node("", "", Resource::new(0, 0));
        s.add_node("h", "/r", Resource::new(u64::MAX, u32::MAX));
        let a = attempt(u32::MAX, u32::MAX);
        let n = s.normalize(&Resource::new(1, 1)).unwrap();
        assert_eq!(n, Resource::new(1024, 1));
        let asks = vec![on(Resource::new(0, 0), &["", "h", "h"], &["", "/r"], false)];
        assert_eq!(s.allocate(a, &asks, &[String::new()]).unwrap().len(), 1);
        assert!(s.normalize(&Resource::new(u64::MAX, u32::MAX)).is_err());
        assert!(!s.release(&ContainerId {
            attempt: a,
            id: u64::MAX
        }));
        assert_eq!(s.available().memory_mb, u64::MAX - 1024);
    }
}
