//! Whole-configuration validation: every known key that is set is parsed and checked (so a
//! bad value anywhere is reported before anything starts), unknown `spark.*` and `yarn.*`
//! keys produce warnings with the nearest known key, and a few rules that span several keys
//! are enforced (the same ones Spark and YARN check at start-up).
//!
//! Layer: conf (above the runtime).

use std::fmt;

use super::keys::{self, find_key, known_keys};
use super::parse::format_duration;
use super::{ConfError, SparkConf};

/// Something worth telling the user about a configuration that is still usable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfWarning {
    /// A `spark.*` or `yarn.*` key sparkyard does not know; it is ignored.
    UnknownKey {
        /// The key as set.
        key: String,
        /// A known key (or key pattern) with a similar name, if one is close enough.
        suggestion: Option<&'static str>,
    },
    /// An older name of a known key; it is still read when the new name is unset.
    DeprecatedKey {
        /// The older name as set.
        key: String,
        /// The current name.
        replacement: &'static str,
    },
}

impl ConfWarning {
    /// The key the warning is about.
    pub fn key(&self) -> &str {
        match self {
            ConfWarning::UnknownKey { key, .. } | ConfWarning::DeprecatedKey { key, .. } => key,
        }
    }
}

impl fmt::Display for ConfWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |k: &str| super::parse::one_line(k);
        match self {
            ConfWarning::UnknownKey {
                key,
                suggestion: Some(s),
            } => write!(
                f,
                "ignoring unknown configuration key '{}' (did you mean '{s}'?)",
                shown(key)
            ),
            ConfWarning::UnknownKey {
                key,
                suggestion: None,
            } => write!(f, "ignoring unknown configuration key '{}'", shown(key)),
            ConfWarning::DeprecatedKey { key, replacement } => write!(
                f,
                "configuration key '{}' is deprecated; use '{replacement}' instead",
                shown(key)
            ),
        }
    }
}

/// Whether `distance` edits between names of these lengths count as "reasonably close".
fn close_enough(distance: usize, len: usize) -> bool {
    distance <= 2 || distance * 6 <= len
}

/// The known key or pattern nearest to `key` (case-insensitive Damerau-Levenshtein), when it
/// is reasonably close.
pub fn nearest_known_key(key: &str) -> Option<&'static str> {
    let lower = key.to_lowercase();
    let without_last = lower.rsplit_once('.').map_or(lower.as_str(), |(head, _)| head);
    let mut best: Option<(usize, usize, &'static str)> = None;
    for info in known_keys() {
        let (distance, len) = match info.prefix {
            None => {
                let cand = info.key.to_lowercase();
                let d = strsim::damerau_levenshtein(&lower, &cand);
                (d, lower.chars().count().max(cand.chars().count()))
            }
            Some(prefix) => {
                let stem = prefix.trim_end_matches('.').to_lowercase();
                let d = strsim::damerau_levenshtein(without_last, &stem)
                    .min(strsim::damerau_levenshtein(&lower, &stem));
                (d, stem.chars().count())
            }
        };
        if close_enough(distance, len) && best.is_none_or(|(bd, _, _)| distance < bd) {
            best = Some((distance, len, info.key));
        }
    }
    best.map(|(_, _, k)| k)
}

/// See [`SparkConf::validate`].
pub(crate) fn validate(conf: &SparkConf) -> Result<Vec<ConfWarning>, ConfError> {
    let mut warnings = Vec::new();
    for (key, value) in conf.iter() {
        match find_key(key) {
            // Spark reads these counts as Int: a negative one is its ExecutorAllocationManager's
            // to refuse (with dynamic allocation on; unused otherwise), see check_relations.
            Some(_) if DA_COUNTS.contains(&key) && negative_int(value) => {}
            Some(info) => {
                info.check_value(key, value)?;
                if info.prefix.is_none() && info.key != key {
                    warnings.push(ConfWarning::DeprecatedKey {
                        key: key.to_string(),
                        replacement: info.key,
                    });
                }
            }
            None if key.starts_with("spark.") || key.starts_with("yarn.") => {
                warnings.push(ConfWarning::UnknownKey {
                    key: key.to_string(),
                    suggestion: nearest_known_key(key),
                });
            }
            None => {}
        }
    }
    check_relations(conf)?;
    Ok(warnings)
}

fn conflict(message: String) -> ConfError {
    ConfError::Conflict { message }
}

/// The executor counts of dynamic allocation, which Spark reads as signed integers.
const DA_COUNTS: [&str; 3] = [
    "spark.dynamicAllocation.minExecutors",
    "spark.dynamicAllocation.initialExecutors",
    "spark.dynamicAllocation.maxExecutors",
];

fn negative_int(value: &str) -> bool {
    value.trim().parse::<i64>().is_ok_and(|v| v < 0)
}

/// A dynamic-allocation count as Spark's `intConf` reads it (negative values included);
/// anything else that does not parse is the key's own error.
fn da_count(conf: &SparkConf, entry: &keys::U32Entry, default: i64) -> Result<i64, ConfError> {
    match conf.get_str(entry.name()) {
        Some(raw) if negative_int(raw) => Ok(raw.trim().parse::<i64>().unwrap_or(default)),
        Some(_) => conf.get(entry).map(i64::from),
        None => Ok(default),
    }
}

/// A boolean setting sparkyard does not model yet, read as Spark reads it (`true`/`false`
/// in any case), for the conditions of the rules below.
fn raw_bool(conf: &SparkConf, key: &str, default: bool) -> bool {
    conf.get_str(key)
        .and_then(|v| super::parse::parse_bool(v).ok())
        .unwrap_or(default)
}

/// Dynamic allocation's start-up checks, in the order Spark meets them on YARN: the
/// scheduler backend's `SchedulerBackendUtils.getInitialTargetExecutorNumber` (the initial
/// number, `Utils.getDynamicAllocationInitialExecutors`, within [min, max]), then the
/// ExecutorAllocationManager's `validateSettings`. The texts are Spark's.
fn check_dynamic_allocation(conf: &SparkConf) -> Result<(), ConfError> {
    let min = da_count(conf, &keys::DYN_ALLOCATION_MIN_EXECUTORS, 0)?;
    let max = da_count(conf, &keys::DYN_ALLOCATION_MAX_EXECUTORS, i64::from(i32::MAX))?;
    let initial = da_count(conf, &keys::DYN_ALLOCATION_INITIAL_EXECUTORS, min)?;
    let instances = conf.get(&keys::EXECUTOR_INSTANCES)?.map_or(0, i64::from);
    let effective = min.max(initial).max(instances);
    if effective < min || effective > max {
        return Err(conflict(format!(
            "requirement failed: initial executor number {effective} must between min executor number {min} and max executor number {max}"
        )));
    }
    if min < 0 || max < 0 {
        return Err(conflict(format!(
            "{} and {} must be positive!",
            keys::DYN_ALLOCATION_MIN_EXECUTORS.name(),
            keys::DYN_ALLOCATION_MAX_EXECUTORS.name()
        )));
    }
    if max == 0 {
        return Err(conflict(format!(
            "{} cannot be 0!",
            keys::DYN_ALLOCATION_MAX_EXECUTORS.name()
        )));
    }
    if min > max {
        return Err(conflict(format!(
            "{} ({min}) must be less than or equal to {} ({max})!",
            keys::DYN_ALLOCATION_MIN_EXECUTORS.name(),
            keys::DYN_ALLOCATION_MAX_EXECUTORS.name()
        )));
    }
    if conf
        .get(&keys::DYN_ALLOCATION_SCHEDULER_BACKLOG_TIMEOUT)?
        .as_secs()
        == 0
    {
        return Err(conflict(format!(
            "{} must be > 0!",
            keys::DYN_ALLOCATION_SCHEDULER_BACKLOG_TIMEOUT.name()
        )));
    }
    if conf
        .get(&keys::DYN_ALLOCATION_SUSTAINED_SCHEDULER_BACKLOG_TIMEOUT)?
        .as_secs()
        == 0
    {
        // The doubled "s" is in Spark's message (`s"s${...key} must be > 0!"`).
        return Err(conflict(format!(
            "s{} must be > 0!",
            keys::DYN_ALLOCATION_SUSTAINED_SCHEDULER_BACKLOG_TIMEOUT.name()
        )));
    }
    // Removing an executor loses its map output unless something keeps it: the external
    // shuffle service, shuffle tracking (which keeps such executors), or decommissioning
    // that migrates shuffle blocks. `spark.dynamicAllocation.testing` skips the check.
    let shuffle_decommission = raw_bool(conf, "spark.decommission.enabled", false)
        && raw_bool(conf, "spark.storage.decommission.shuffleBlocks.enabled", true);
    if !conf.get(&keys::SHUFFLE_SERVICE_ENABLED)?
        && !conf.get(&keys::DYN_ALLOCATION_SHUFFLE_TRACKING_ENABLED)?
        && !shuffle_decommission
        && !conf.get(&keys::DYN_ALLOCATION_TESTING)?
    {
        return Err(conflict(format!(
            "Dynamic allocation of executors requires one of the following conditions: 1) enabling external shuffle service through {}. 2) enabling shuffle tracking through {}. 3) enabling shuffle blocks decommission through spark.decommission.enabled and spark.storage.decommission.shuffleBlocks.enabled. 4) (Experimental) configuring spark.shuffle.sort.io.plugin.class to use a custom ShuffleDataIO who's ShuffleDriverComponents supports reliable storage.",
            keys::SHUFFLE_SERVICE_ENABLED.name(),
            keys::DYN_ALLOCATION_SHUFFLE_TRACKING_ENABLED.name()
        )));
    }
    let ratio = conf.get(&keys::DYN_ALLOCATION_EXECUTOR_ALLOCATION_RATIO)?;
    if ratio > 1.0 || ratio <= 0.0 {
        return Err(conflict(format!(
            "{} must be > 0 and <= 1.0",
            keys::DYN_ALLOCATION_EXECUTOR_ALLOCATION_RATIO.name()
        )));
    }
    Ok(())
}

/// Rules spanning several keys. Every key involved has already been checked on its own.
fn check_relations(conf: &SparkConf) -> Result<(), ConfError> {
    // Spark's SparkConf.validateSettings (SPARK-22754): heartbeats must come more often than
    // the timeout that declares an executor dead.
    let timeout = conf.get(&keys::NETWORK_TIMEOUT)?;
    let heartbeat = conf.get(&keys::EXECUTOR_HEARTBEAT_INTERVAL)?;
    if timeout <= heartbeat {
        return Err(conflict(format!(
            "{} ({}) must be greater than {} ({})",
            keys::NETWORK_TIMEOUT.name(),
            format_duration(timeout),
            keys::EXECUTOR_HEARTBEAT_INTERVAL.name(),
            format_duration(heartbeat)
        )));
    }

    // HeartbeatReceiver's requirement: the expiry check cannot come less often than the
    // time-out it enforces.
    let executor_timeout = conf
        .get(&keys::STORAGE_BLOCKMANAGER_HEARTBEAT_TIMEOUT)?
        .unwrap_or(timeout);
    let check_interval = conf.get(&keys::NETWORK_TIMEOUT_INTERVAL)?;
    if check_interval > executor_timeout {
        return Err(conflict(format!(
            "{} ({}) should be less than or equal to {} ({})",
            keys::NETWORK_TIMEOUT_INTERVAL.name(),
            format_duration(check_interval),
            keys::STORAGE_BLOCKMANAGER_HEARTBEAT_TIMEOUT.name(),
            format_duration(executor_timeout)
        )));
    }

    // SparkContext refuses executors that cannot run a single task.
    let cores = conf.get(&keys::EXECUTOR_CORES)?;
    let task_cpus = conf.get(&keys::CPUS_PER_TASK)?;
    if cores < task_cpus {
        return Err(conflict(format!(
            "{} ({cores}) must be at least {} ({task_cpus})",
            keys::EXECUTOR_CORES.name(),
            keys::CPUS_PER_TASK.name()
        )));
    }

    // The scheduler backend's and the ExecutorAllocationManager's checks, made only when
    // dynamic allocation is on.
    if conf.get(&keys::DYN_ALLOCATION_ENABLED)? {
        check_dynamic_allocation(conf)?;
    }

    // Utils.checkOffHeapEnabled, which the YARN Client meets sizing executors: off-heap
    // memory that is on must be at least 1 MiB (the size counts in whole MiB).
    if conf.get(&keys::MEMORY_OFFHEAP_ENABLED)? && conf.get(&keys::MEMORY_OFFHEAP_SIZE)? < 1 << 20 {
        return Err(conflict(format!(
            "requirement failed: {} must be > 0 when {} == true",
            keys::MEMORY_OFFHEAP_SIZE.name(),
            keys::MEMORY_OFFHEAP_ENABLED.name()
        )));
    }

    // The ResourceManager refuses to start when a minimum allocation exceeds the maximum.
    let min_mb = conf.get(&keys::RM_SCHEDULER_MINIMUM_ALLOCATION_MB)?;
    let max_mb = conf.get(&keys::RM_SCHEDULER_MAXIMUM_ALLOCATION_MB)?;
    if min_mb > max_mb {
        return Err(conflict(format!(
            "{} ({min_mb}) must be at most {} ({max_mb})",
            keys::RM_SCHEDULER_MINIMUM_ALLOCATION_MB.name(),
            keys::RM_SCHEDULER_MAXIMUM_ALLOCATION_MB.name()
        )));
    }
    let min_vc = conf.get(&keys::RM_SCHEDULER_MINIMUM_ALLOCATION_VCORES)?;
    let max_vc = conf.get(&keys::RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES)?;
    if min_vc > max_vc {
        return Err(conflict(format!(
            "{} ({min_vc}) must be at most {} ({max_vc})",
            keys::RM_SCHEDULER_MINIMUM_ALLOCATION_VCORES.name(),
            keys::RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES.name()
        )));
    }

    // sparkyard's supervisor: the first backoff cannot exceed its cap.
    let backoff = conf.get(&keys::SUPERVISOR_BACKOFF)?;
    let max_backoff = conf.get(&keys::SUPERVISOR_MAX_BACKOFF)?;
    if backoff > max_backoff {
        return Err(conflict(format!(
            "{} ({}) must be at most {} ({})",
            keys::SUPERVISOR_BACKOFF.name(),
            format_duration(backoff),
            keys::SUPERVISOR_MAX_BACKOFF.name(),
            format_duration(max_backoff)
        )));
    }

    // Node values were checked key by key; this also resolves their defaults.
    super::nodes::node_managers(conf)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(pairs: &[(&str, &str)]) -> SparkConf {
        let mut c = SparkConf::new();
        for (k, v) in pairs {
            c.set(*k, *v);
        }
        c
    }

    #[test]
    fn empty_and_valid_configurations_have_no_warnings() {
        assert_eq!(SparkConf::new().validate(), Ok(vec![]));
        let c = conf(&[
            ("spark.master", "yarn"),
            ("spark.submit.deployMode", "cluster"),
            ("spark.executor.memory", "2g"),
            ("spark.executorEnv.JAVA_HOME", "/opt/java"),
            ("yarn.sparkyard.nodemanager.host1", "rack=/rack1"),
            ("other.namespace.key", "whatever"),
            ("", "empty key is not ours"),
        ]);
        assert_eq!(c.validate(), Ok(vec![]));
    }

    #[test]
    fn unknown_keys_get_the_nearest_known_key() {
        let c = conf(&[
            ("spark.executor.memroy", "2g"),
            ("spark.Executor.Cores", "2"),
            ("spark.dynamicAllocation.maxExecutor", "5"),
            ("spark.completely.different", "1"),
            ("yarn.sparkyard.nodemanagers.host1", "vcores=2"),
            ("yarn.resourcemanager.adress", "x"),
            ("spark.serializer", "org.apache.spark.serializer.KryoSerializer"),
        ]);
        let warnings = c.validate().unwrap();
        let shown: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            shown,
            vec![
                "ignoring unknown configuration key 'spark.Executor.Cores' (did you mean 'spark.executor.cores'?)",
                "ignoring unknown configuration key 'spark.completely.different'",
                "ignoring unknown configuration key 'spark.dynamicAllocation.maxExecutor' (did you mean 'spark.dynamicAllocation.maxExecutors'?)",
                "ignoring unknown configuration key 'spark.executor.memroy' (did you mean 'spark.executor.memory'?)",
                "ignoring unknown configuration key 'spark.serializer'",
                "ignoring unknown configuration key 'yarn.resourcemanager.adress' (did you mean 'yarn.resourcemanager.address'?)",
                "ignoring unknown configuration key 'yarn.sparkyard.nodemanagers.host1' (did you mean 'yarn.sparkyard.nodemanager.<host>'?)",
            ]
        );
        assert_eq!(warnings[0].key(), "spark.Executor.Cores");
    }

    #[test]
    fn nearest_key_thresholds() {
        assert_eq!(
            nearest_known_key("spark.task.maxFailure"),
            Some("spark.task.maxFailures")
        );
        assert_eq!(
            nearest_known_key("spark.executorenv.PATH"),
            Some("spark.executorEnv.<name>")
        );
        assert_eq!(nearest_known_key("spark.foo"), None);
        assert_eq!(nearest_known_key("yarn.nothing.like.it"), None);
    }

    #[test]
    fn deprecated_alternatives_warn_and_are_checked() {
        let c = conf(&[("spark.yarn.max.executor.failures", "6")]);
        assert_eq!(
            c.validate().unwrap(),
            vec![ConfWarning::DeprecatedKey {
                key: "spark.yarn.max.executor.failures".to_string(),
                replacement: "spark.executor.maxNumFailures",
            }]
        );
        assert_eq!(
            c.validate().unwrap()[0].to_string(),
            "configuration key 'spark.yarn.max.executor.failures' is deprecated; use 'spark.executor.maxNumFailures' instead"
        );
        let c = conf(&[("spark.yarn.max.executor.failures", "many")]);
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("invalid value for spark.yarn.max.executor.failures: 'many'"));
    }

    #[test]
    fn first_error_in_key_order_wins() {
        let c = conf(&[
            ("spark.task.maxFailures", "0"),
            ("spark.executor.memory", "12x"),
            ("spark.network.timeout", "never"),
        ]);
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "invalid value for spark.executor.memory: '12x' is not a size (expected a number with an optional unit b, k, m, g, t, p, e.g. 512m or 4g)"
        );
        let c = conf(&[("yarn.sparkyard.nodemanager.host1", "vcores=zero")]);
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("invalid value for yarn.sparkyard.nodemanager.host1: 'vcores=zero'"));
    }

    #[test]
    fn cross_key_rules() {
        let e = conf(&[("spark.executor.heartbeatInterval", "200s")])
            .validate()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "inconsistent configuration: spark.network.timeout (2m) must be greater than spark.executor.heartbeatInterval (3m 20s)"
        );
        let e = conf(&[("spark.task.cpus", "2")]).validate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "inconsistent configuration: spark.executor.cores (1) must be at least spark.task.cpus (2)"
        );
        let c = conf(&[("spark.network.timeoutInterval", "3m")]);
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "inconsistent configuration: spark.network.timeoutInterval (3m) should be less than or equal to spark.storage.blockManagerHeartbeatTimeoutMs (2m)"
        );
        let c = conf(&[("yarn.scheduler.minimum-allocation-mb", "9000")]);
        assert!(c.validate().unwrap_err().to_string().contains("yarn.scheduler.minimum-allocation-mb (9000) must be at most yarn.scheduler.maximum-allocation-mb (8192)"));
        let c = conf(&[("yarn.scheduler.minimum-allocation-vcores", "5")]);
        assert!(c.validate().is_err());
        let c = conf(&[("spark.sparkyard.supervisor.backoff", "2s")]);
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "inconsistent configuration: spark.sparkyard.supervisor.backoff (2s) must be at most spark.sparkyard.supervisor.maxBackoff (1s)"
        );
    }

    /// The error of dynamic allocation on with `extra` set.
    fn da_error(extra: &[(&str, &str)]) -> String {
        let mut c = conf(&[("spark.dynamicAllocation.enabled", "true")]);
        for (k, v) in extra {
            c.set(*k, *v);
        }
        match c.validate() {
            Err(e) => e.to_string(),
            Ok(w) => panic!("{extra:?} was accepted (warnings {w:?})"),
        }
    }

    #[test]
    fn dynamic_allocation_start_up_checks_give_sparks_messages_in_sparks_order() {
        let prefix = "inconsistent configuration: ";
        let cases: &[(&[(&str, &str)], &str)] = &[
            // SchedulerBackendUtils.getInitialTargetExecutorNumber, before anything else.
            (
                &[
                    ("spark.dynamicAllocation.initialExecutors", "5"),
                    ("spark.dynamicAllocation.maxExecutors", "3"),
                ],
                "requirement failed: initial executor number 5 must between min executor number 0 and max executor number 3",
            ),
            // spark.executor.instances counts towards the initial number too.
            (
                &[
                    ("spark.executor.instances", "4"),
                    ("spark.dynamicAllocation.minExecutors", "1"),
                    ("spark.dynamicAllocation.maxExecutors", "2"),
                ],
                "requirement failed: initial executor number 4 must between min executor number 1 and max executor number 2",
            ),
            // min > max raises the initial number above max first.
            (
                &[
                    ("spark.dynamicAllocation.minExecutors", "5"),
                    ("spark.dynamicAllocation.maxExecutors", "3"),
                ],
                "requirement failed: initial executor number 5 must between min executor number 5 and max executor number 3",
            ),
            // ExecutorAllocationManager.validateSettings.
            (
                &[("spark.dynamicAllocation.minExecutors", "-1")],
                "spark.dynamicAllocation.minExecutors and spark.dynamicAllocation.maxExecutors must be positive!",
            ),
            (
                &[("spark.dynamicAllocation.maxExecutors", "0")],
                "spark.dynamicAllocation.maxExecutors cannot be 0!",
            ),
            (
                &[
                    ("spark.dynamicAllocation.minExecutors", "5"),
                    ("spark.dynamicAllocation.initialExecutors", "-3"),
                    ("spark.dynamicAllocation.maxExecutors", "-4"),
                ],
                "requirement failed: initial executor number 5 must between min executor number 5 and max executor number -4",
            ),
            (
                &[("spark.dynamicAllocation.schedulerBacklogTimeout", "0")],
                "spark.dynamicAllocation.schedulerBacklogTimeout must be > 0!",
            ),
            (
                &[("spark.dynamicAllocation.sustainedSchedulerBacklogTimeout", "0s")],
                "sspark.dynamicAllocation.sustainedSchedulerBacklogTimeout must be > 0!",
            ),
            (
                &[("spark.dynamicAllocation.shuffleTracking.enabled", "false")],
                "Dynamic allocation of executors requires one of the following conditions: 1) enabling external shuffle service through spark.shuffle.service.enabled. 2) enabling shuffle tracking through spark.dynamicAllocation.shuffleTracking.enabled. 3) enabling shuffle blocks decommission through spark.decommission.enabled and spark.storage.decommission.shuffleBlocks.enabled. 4) (Experimental) configuring spark.shuffle.sort.io.plugin.class to use a custom ShuffleDataIO who's ShuffleDriverComponents supports reliable storage.",
            ),
            (
                &[("spark.dynamicAllocation.executorAllocationRatio", "0")],
                "spark.dynamicAllocation.executorAllocationRatio must be > 0 and <= 1.0",
            ),
            (
                &[("spark.dynamicAllocation.executorAllocationRatio", "1.5")],
                "spark.dynamicAllocation.executorAllocationRatio must be > 0 and <= 1.0",
            ),
        ];
        for (extra, message) in cases {
            assert_eq!(da_error(extra), format!("{prefix}{message}"), "{extra:?}");
        }
        // A count that is not a number is the key's own error.
        assert!(da_error(&[("spark.dynamicAllocation.minExecutors", "two")])
            .starts_with("invalid value for spark.dynamicAllocation.minExecutors: 'two'"));
    }

    #[test]
    fn dynamic_allocation_settings_spark_accepts() {
        let da = |extra: &[(&str, &str)]| {
            let mut c = conf(&[("spark.dynamicAllocation.enabled", "true")]);
            for (k, v) in extra {
                c.set(*k, *v);
            }
            c.validate()
        };
        // initialExecutors below minExecutors is ignored (Spark warns), not refused.
        assert_eq!(
            da(&[
                ("spark.dynamicAllocation.minExecutors", "3"),
                ("spark.dynamicAllocation.initialExecutors", "1"),
                ("spark.dynamicAllocation.maxExecutors", "3"),
            ]),
            Ok(vec![])
        );
        assert_eq!(
            da(&[
                ("spark.dynamicAllocation.initialExecutors", "4"),
                ("spark.dynamicAllocation.maxExecutors", "4"),
                ("spark.dynamicAllocation.executorAllocationRatio", "1.0"),
            ]),
            Ok(vec![])
        );
        // Keeping shuffle output some other way satisfies the shuffle rule.
        for keep in [
            [
                ("spark.shuffle.service.enabled", "true"),
                ("spark.dynamicAllocation.testing", "false"),
            ],
            [
                ("spark.decommission.enabled", "true"),
                ("spark.dynamicAllocation.testing", "false"),
            ],
            [
                ("spark.shuffle.service.enabled", "false"),
                ("spark.dynamicAllocation.testing", "true"),
            ],
        ] {
            let mut extra = vec![("spark.dynamicAllocation.shuffleTracking.enabled", "false")];
            extra.extend(keep);
            let res = da(&extra);
            assert!(
                res.as_ref()
                    .is_ok_and(|w| w.iter().all(|w| matches!(w, ConfWarning::UnknownKey { .. }))),
                "{extra:?}: {res:?}"
            );
        }
        // Without dynamic allocation Spark looks at none of these.
        for (k, v) in [
            ("spark.dynamicAllocation.maxExecutors", "0"),
            ("spark.dynamicAllocation.minExecutors", "-1"),
            ("spark.dynamicAllocation.executorAllocationRatio", "0"),
            ("spark.dynamicAllocation.schedulerBacklogTimeout", "0"),
            ("spark.dynamicAllocation.initialExecutors", "99"),
        ] {
            assert_eq!(
                conf(&[("spark.dynamicAllocation.maxExecutors", "3"), (k, v)]).validate(),
                Ok(vec![]),
                "{k}={v}"
            );
        }
    }

    #[test]
    fn speculation_quantile_takes_any_number_as_spark_does() {
        for q in ["1", "1.0", "0", "1.5", "-0.5", "0.75"] {
            assert_eq!(
                conf(&[("spark.speculation.quantile", q)]).validate(),
                Ok(vec![]),
                "{q}"
            );
        }
        assert!(conf(&[("spark.speculation.quantile", "most")])
            .validate()
            .is_err());
    }

    #[test]
    fn memory_keys_are_known_and_off_heap_must_have_a_size() {
        let c = conf(&[
            ("spark.memory.offHeap.enabled", "true"),
            ("spark.memory.offHeap.size", "512m"),
            ("spark.executor.pyspark.memory", "256m"),
            ("spark.yarn.isPython", "true"),
            ("spark.executor.memoryOverhead", "500m"),
            ("spark.executor.memoryOverheadFactor", "0.2"),
            ("spark.executor.minMemoryOverhead", "500m"),
            ("spark.yarn.am.memory", "1g"),
            ("spark.yarn.am.memoryOverhead", "400m"),
            ("spark.driver.memoryOverhead", "1g"),
            ("spark.driver.memoryOverheadFactor", "0.3"),
            ("spark.driver.minMemoryOverhead", "500m"),
            ("spark.redaction.regex", "(?i)secret"),
        ]);
        assert_eq!(c.validate(), Ok(vec![]));
        let prefix = "inconsistent configuration: requirement failed: spark.memory.offHeap.size must be > 0 when spark.memory.offHeap.enabled == true";
        let e = conf(&[("spark.memory.offHeap.enabled", "true")])
            .validate()
            .unwrap_err();
        assert_eq!(e.to_string(), prefix);
        // The size counts in whole MiB, as Spark's memoryStringToMb.
        let e = conf(&[
            ("spark.memory.offHeap.enabled", "true"),
            ("spark.memory.offHeap.size", "1000k"),
        ])
        .validate()
        .unwrap_err();
        assert_eq!(e.to_string(), prefix);
        // Spark's older name still works, with a deprecation warning.
        assert_eq!(
            conf(&[
                ("spark.unsafe.offHeap", "true"),
                ("spark.memory.offHeap.size", "1m")
            ])
            .validate(),
            Ok(vec![ConfWarning::DeprecatedKey {
                key: "spark.unsafe.offHeap".into(),
                replacement: "spark.memory.offHeap.enabled",
            }])
        );
        // Off by default: a size alone adds nothing and needs nothing.
        assert_eq!(conf(&[("spark.memory.offHeap.size", "0")]).validate(), Ok(vec![]));
    }
}
