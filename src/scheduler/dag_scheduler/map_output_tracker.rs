//! The driver's map output tracker (Spark's `MapOutputTrackerMaster`): for every registered
//! shuffle, the [`MapStatus`] of each map task whose output is available, plus the epoch that
//! is bumped whenever outputs are lost so that stale task results can be recognised.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! It is plain data owned by the DAGScheduler core: no locks, no messages. The costs follow
//! Spark's: registering or looking up one output is O(1); dropping the outputs of an
//! executor or host scans every registered output (executor loss is rare).

use std::collections::{BTreeMap, HashMap};

use crate::rdd::ShuffleId;
use crate::scheduler::task::{MapOutputLocation, MapStatus, ShuffleLocations};

/// Spark's `SHUFFLE_PREF_MAP_THRESHOLD`: reduce-side locality is only computed for shuffles
/// with fewer map tasks than this.
pub const SHUFFLE_PREF_MAP_THRESHOLD: u32 = 1000;
/// Spark's `SHUFFLE_PREF_REDUCE_THRESHOLD`: ... and fewer reduce partitions than this.
pub const SHUFFLE_PREF_REDUCE_THRESHOLD: u32 = 1000;
/// Spark's `REDUCER_PREF_LOCS_FRACTION`: a location is preferred for a reduce partition when
/// it holds at least this fraction of the partition's input.
pub const REDUCER_PREF_LOCS_FRACTION: f64 = 0.2;

/// One shuffle's map outputs (Spark's `ShuffleStatus`).
#[derive(Clone, Debug, Default)]
struct ShuffleStatus {
    num_reducers: u32,
    statuses: Vec<Option<MapStatus>>,
    num_available: u32,
}

impl ShuffleStatus {
    fn remove_where(&mut self, mut pred: impl FnMut(&MapStatus) -> bool) -> u32 {
        let mut removed = 0;
        for slot in self.statuses.iter_mut() {
            if slot.as_ref().is_some_and(&mut pred) {
                *slot = None;
                removed += 1;
            }
        }
        self.num_available = self.num_available.saturating_sub(removed);
        removed
    }
}

/// Where every shuffle's map outputs are, and the epoch.
#[derive(Clone, Debug, Default)]
pub struct MapOutputTracker {
    shuffles: HashMap<ShuffleId, ShuffleStatus>,
    epoch: u64,
}

impl MapOutputTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a shuffle with `num_maps` map outputs and `num_reducers` reduce partitions.
    /// Returns false (and changes nothing) if it was already registered.
    pub fn register_shuffle(&mut self, shuffle_id: ShuffleId, num_maps: u32, num_reducers: u32) -> bool {
        if self.shuffles.contains_key(&shuffle_id) {
            return false;
        }
        self.shuffles.insert(
            shuffle_id,
            ShuffleStatus {
                num_reducers,
                statuses: vec![None; num_maps as usize],
                num_available: 0,
            },
        );
        true
    }

    /// Forgets a shuffle and its outputs.
    pub fn unregister_shuffle(&mut self, shuffle_id: ShuffleId) -> bool {
        self.shuffles.remove(&shuffle_id).is_some()
    }

    pub fn contains_shuffle(&self, shuffle_id: ShuffleId) -> bool {
        self.shuffles.contains_key(&shuffle_id)
    }

    /// The number of map tasks of a registered shuffle.
    pub fn num_maps(&self, shuffle_id: ShuffleId) -> Option<u32> {
        self.shuffles.get(&shuffle_id).map(|s| s.statuses.len() as u32)
    }

    /// Records map task `map_index`'s output. Returns false if the shuffle is unknown or the
    /// index is out of range.
    pub fn register_map_output(&mut self, shuffle_id: ShuffleId, map_index: u32, status: MapStatus) -> bool {
        let Some(shuffle) = self.shuffles.get_mut(&shuffle_id) else {
            return false;
        };
        let Some(slot) = shuffle.statuses.get_mut(map_index as usize) else {
            return false;
        };
        if slot.is_none() {
            shuffle.num_available += 1;
        }
        *slot = Some(status);
        true
    }

    /// Drops map output `map_index` if it is the one that lives on `executor_id` / `host`
    /// (Spark's `unregisterMapOutput` with a BlockManagerId; without a location nothing is
    /// dropped), and bumps the epoch. Returns whether an output was dropped.
    pub fn unregister_map_output(
        &mut self,
        shuffle_id: ShuffleId,
        map_index: u32,
        executor_id: Option<&str>,
        host: Option<&str>,
    ) -> bool {
        let Some(shuffle) = self.shuffles.get_mut(&shuffle_id) else {
            return false;
        };
        let mut removed = false;
        if let (Some(exec), Some(slot)) = (executor_id, shuffle.statuses.get_mut(map_index as usize)) {
            let matches = slot
                .as_ref()
                .is_some_and(|s| s.executor_id == exec && host.is_none_or(|h| h == s.host));
            if matches {
                *slot = None;
                shuffle.num_available = shuffle.num_available.saturating_sub(1);
                removed = true;
            }
        }
        self.increment_epoch();
        removed
    }

    /// Drops every output of a shuffle and bumps the epoch.
    pub fn unregister_all_map_outputs(&mut self, shuffle_id: ShuffleId) {
        if let Some(shuffle) = self.shuffles.get_mut(&shuffle_id) {
            shuffle.remove_where(|_| true);
            self.increment_epoch();
        }
    }

    /// Drops every output that lives on `executor_id` and bumps the epoch. Returns how many.
    pub fn remove_outputs_on_executor(&mut self, executor_id: &str) -> u32 {
        let removed = self
            .shuffles
            .values_mut()
            .map(|s| s.remove_where(|m| m.executor_id == executor_id))
            .sum();
        self.increment_epoch();
        removed
    }

    /// Drops every output that lives on `host` and bumps the epoch. Returns how many.
    pub fn remove_outputs_on_host(&mut self, host: &str) -> u32 {
        let removed = self
            .shuffles
            .values_mut()
            .map(|s| s.remove_where(|m| m.host == host))
            .sum();
        self.increment_epoch();
        removed
    }

    /// How many map outputs of the shuffle are registered (0 if unknown).
    pub fn num_available_outputs(&self, shuffle_id: ShuffleId) -> u32 {
        self.shuffles.get(&shuffle_id).map_or(0, |s| s.num_available)
    }

    /// Whether every map output of the shuffle is registered.
    pub fn is_available(&self, shuffle_id: ShuffleId) -> bool {
        self.shuffles
            .get(&shuffle_id)
            .is_some_and(|s| s.num_available as usize == s.statuses.len())
    }

    /// The map indexes without a registered output, in order; None if the shuffle is unknown.
    pub fn find_missing_partitions(&self, shuffle_id: ShuffleId) -> Option<Vec<u32>> {
        let shuffle = self.shuffles.get(&shuffle_id)?;
        Some(
            shuffle
                .statuses
                .iter()
                .enumerate()
                .filter(|(_, s)| s.is_none())
                .map(|(i, _)| i as u32)
                .collect(),
        )
    }

    /// The status of one map output.
    pub fn map_status(&self, shuffle_id: ShuffleId, map_index: u32) -> Option<&MapStatus> {
        self.shuffles
            .get(&shuffle_id)?
            .statuses
            .get(map_index as usize)?
            .as_ref()
    }

    /// Where each map output of the shuffle is, by map index (what a reduce stage's binary
    /// carries); None if the shuffle is unknown.
    pub fn locations(&self, shuffle_id: ShuffleId) -> Option<ShuffleLocations> {
        let shuffle = self.shuffles.get(&shuffle_id)?;
        let outputs = shuffle
            .statuses
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_ref().map(|m| MapOutputLocation {
                    map_index: i as u32,
                    map_id: m.map_id,
                    executor_id: m.executor_id.clone(),
                    host: m.host.clone(),
                    executor_ref: m.executor_ref.clone(),
                })
            })
            .collect();
        Some(ShuffleLocations { shuffle_id, outputs })
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    pub fn increment_epoch(&mut self) {
        self.epoch += 1;
    }

    /// Spark's `getLocationsWithLargestOutputs`: the hosts whose map outputs hold at least
    /// `fraction` of reduce partition `reduce_id`'s input (sorted, without duplicates); None
    /// when no location qualifies or nothing is known.
    pub fn locations_with_largest_outputs(
        &self,
        shuffle_id: ShuffleId,
        reduce_id: u32,
        fraction: f64,
    ) -> Option<Vec<String>> {
        let shuffle = self.shuffles.get(&shuffle_id)?;
        let mut by_location: BTreeMap<(&str, &str), u64> = BTreeMap::new();
        let mut total: u64 = 0;
        for status in shuffle.statuses.iter().flatten() {
            let size = status.sizes.get(reduce_id as usize).copied().unwrap_or(0);
            if size > 0 {
                *by_location
                    .entry((status.host.as_str(), status.executor_id.as_str()))
                    .or_insert(0) += size;
                total = total.saturating_add(size);
            }
        }
        if total == 0 {
            return None;
        }
        let mut hosts: Vec<String> = by_location
            .into_iter()
            .filter(|(_, size)| *size as f64 / total as f64 >= fraction)
            .map(|((host, _), _)| host.to_string())
            .collect();
        hosts.dedup();
        if hosts.is_empty() {
            None
        } else {
            Some(hosts)
        }
    }

    /// Spark's `getPreferredLocationsForShuffle`: the preferred hosts of reduce partition
    /// `reduce_id` of a shuffle, when the shuffle is small enough for it to be worth it
    /// (fewer than [`SHUFFLE_PREF_MAP_THRESHOLD`] maps and [`SHUFFLE_PREF_REDUCE_THRESHOLD`]
    /// reduces).
    pub fn preferred_hosts_for_shuffle(&self, shuffle_id: ShuffleId, reduce_id: u32) -> Vec<String> {
        let Some(shuffle) = self.shuffles.get(&shuffle_id) else {
            return vec![];
        };
        if (shuffle.statuses.len() as u64) < SHUFFLE_PREF_MAP_THRESHOLD as u64
            && shuffle.num_reducers < SHUFFLE_PREF_REDUCE_THRESHOLD
        {
            self.locations_with_largest_outputs(shuffle_id, reduce_id, REDUCER_PREF_LOCS_FRACTION)
                .unwrap_or_default()
        } else {
            vec![]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(exec: &str, host: &str, map_id: u64, sizes: Vec<u64>) -> MapStatus {
        MapStatus {
            executor_id: exec.into(),
            host: host.into(),
            executor_ref: format!("ref-{exec}"),
            map_id,
            sizes,
        }
    }

    #[test]
    fn register_unregister_and_epoch() {
        let mut t = MapOutputTracker::new();
        assert!(t.register_shuffle(0, 2, 3));
        assert!(!t.register_shuffle(0, 2, 3));
        assert!(!t.is_available(0));
        assert!(t.register_map_output(0, 0, status("1", "h1", 10, vec![1, 2, 3])));
        assert!(!t.register_map_output(0, 5, status("1", "h1", 10, vec![])));
        assert!(!t.register_map_output(9, 0, status("1", "h1", 10, vec![])));
        assert!(t.register_map_output(0, 1, status("2", "h2", 11, vec![1, 2, 3])));
        assert!(t.is_available(0));
        assert_eq!(t.find_missing_partitions(0), Some(vec![]));
        let locs = t.locations(0).unwrap();
        assert_eq!(locs.outputs.len(), 2);
        assert_eq!(locs.outputs[1].as_ref().unwrap().executor_id, "2");

        let e = t.epoch();
        // Wrong location: nothing dropped, epoch still bumped.
        assert!(!t.unregister_map_output(0, 0, Some("2"), Some("h2")));
        assert!(!t.unregister_map_output(0, 0, None, None));
        assert!(t.unregister_map_output(0, 0, Some("1"), Some("h1")));
        assert_eq!(t.epoch(), e + 3);
        assert_eq!(t.find_missing_partitions(0), Some(vec![0]));
        assert_eq!(t.num_available_outputs(0), 1);

        assert_eq!(t.remove_outputs_on_executor("2"), 1);
        assert_eq!(t.num_available_outputs(0), 0);
        t.register_map_output(0, 0, status("3", "h3", 12, vec![]));
        assert_eq!(t.remove_outputs_on_host("h3"), 1);
        assert_eq!(t.find_missing_partitions(0), Some(vec![0, 1]));
        assert_eq!(t.find_missing_partitions(7), None);
    }

    #[test]
    fn reduce_side_preferences() {
        let mut t = MapOutputTracker::new();
        t.register_shuffle(1, 3, 2);
        t.register_map_output(1, 0, status("1", "a", 0, vec![100, 1]));
        t.register_map_output(1, 1, status("2", "b", 1, vec![10, 1]));
        t.register_map_output(1, 2, status("3", "c", 2, vec![300, 0]));
        // Reducer 0: a = 100/410, b = 10/410, c = 300/410.
        assert_eq!(
            t.preferred_hosts_for_shuffle(1, 0),
            vec!["a".to_string(), "c".to_string()]
        );
        // Reducer 1: a and b hold half each.
        assert_eq!(
            t.preferred_hosts_for_shuffle(1, 1),
            vec!["a".to_string(), "b".to_string()]
        );
        assert!(t.preferred_hosts_for_shuffle(1, 7).is_empty());
        // Too many reducers: no preference.
        t.register_shuffle(2, 1, 1000);
        t.register_map_output(2, 0, status("1", "a", 0, vec![5; 1000]));
        assert!(t.preferred_hosts_for_shuffle(2, 0).is_empty());
    }
}
