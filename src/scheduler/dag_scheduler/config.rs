//! The settings the DAGScheduler core reads, with Spark's defaults (spark-reference §3.13).
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

/// Spark's `DAGScheduler.RESUBMIT_TIMEOUT`: how long to wait after a fetch failure before
/// resubmitting the failed stages (so that a burst of fetch failures leads to one resubmit).
pub const RESUBMIT_TIMEOUT_MS: u64 = 200;

/// `spark.stage.maxConsecutiveAttempts`.
pub const MAX_CONSECUTIVE_ATTEMPTS_KEY: &str = "spark.stage.maxConsecutiveAttempts";
/// `spark.stage.maxAttempts`.
pub const MAX_STAGE_ATTEMPTS_KEY: &str = "spark.stage.maxAttempts";
/// `spark.shuffle.service.enabled`.
pub const SHUFFLE_SERVICE_ENABLED_KEY: &str = "spark.shuffle.service.enabled";
/// `spark.files.fetchFailure.unRegisterOutputOnHost`.
pub const UNREGISTER_OUTPUT_ON_HOST_KEY: &str = "spark.files.fetchFailure.unRegisterOutputOnHost";
/// `spark.shuffle.reduceLocality.enabled`.
pub const REDUCE_LOCALITY_KEY: &str = "spark.shuffle.reduceLocality.enabled";
/// `spark.dynamicAllocation.enabled`.
pub const DYN_ALLOCATION_ENABLED_KEY: &str = "spark.dynamicAllocation.enabled";
/// `spark.stage.ignoreDecommissionFetchFailure`.
pub const IGNORE_DECOMMISSION_FETCH_FAILURE_KEY: &str = "spark.stage.ignoreDecommissionFetchFailure";
/// `spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures`.
pub const BARRIER_CHECK_MAX_FAILURES_KEY: &str =
    "spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures";

/// [SPARK-24819]: a barrier stage needs more slots than the cluster has.
pub const BARRIER_SLOTS_MESSAGE: &str = "[SPARK-24819]: Barrier execution mode does not allow run a barrier stage that requires more slots than the total number of slots in the cluster currently. Please init a new cluster with more resources(e.g. CPU, GPU) or repartition the input RDD(s) to reduce the number of slots required to run this barrier stage.";
/// [SPARK-24942]: barrier stages and dynamic allocation.
pub const BARRIER_DYN_ALLOCATION_MESSAGE: &str = "[SPARK-24942]: Barrier execution mode does not support dynamic resource allocation for now. You can disable dynamic resource allocation by setting Spark conf \"spark.dynamicAllocation.enabled\" to \"false\".";
/// [SPARK-24820][SPARK-24821]: a barrier stage's RDD chain.
pub const BARRIER_RDD_CHAIN_MESSAGE: &str = "[SPARK-24820][SPARK-24821]: Barrier execution mode does not allow the following pattern of RDD chain within a barrier stage:\n1. Ancestor RDDs that have different number of partitions from the resulting RDD (e.g. union()/coalesce()/first()/take()/PartitionPruningRDD). A workaround for first()/take() can be barrierRdd.collect().head (scala) or barrierRdd.collect()[0] (python).\n2. An RDD that depends on multiple barrier RDDs (e.g. barrierRdd1.zip(barrierRdd2)).";

/// The exception class Spark throws for a job refused by one of the barrier checks
/// (`BarrierJobAllocationFailed`'s subclasses), from its message.
pub fn barrier_exception_class(message: &str) -> Option<&'static str> {
    if message.starts_with("[SPARK-24819]") {
        Some("org.apache.spark.scheduler.BarrierJobSlotsNumberCheckFailed")
    } else if message.starts_with("[SPARK-24942]") {
        Some("org.apache.spark.scheduler.BarrierJobRunWithDynamicAllocationException")
    } else if message.starts_with("[SPARK-24820]") {
        Some("org.apache.spark.scheduler.BarrierJobUnsupportedRDDChainException")
    } else {
        None
    }
}

/// The DAGScheduler's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DagConfig {
    /// `spark.stage.maxConsecutiveAttempts` (4): consecutive failed attempts of a stage
    /// (fetch failures) before the stage is aborted.
    pub max_consecutive_attempts: u32,
    /// `spark.stage.maxAttempts` (Int.MaxValue): total attempts of a stage; the effective
    /// cap is the larger of this and `max_consecutive_attempts`.
    pub max_stage_attempts: i32,
    /// `spark.shuffle.service.enabled` (false): with an external shuffle service a lost
    /// executor keeps its map outputs.
    pub external_shuffle_service: bool,
    /// `spark.files.fetchFailure.unRegisterOutputOnHost` (false).
    pub unregister_output_on_host_on_fetch_failure: bool,
    /// `spark.shuffle.reduceLocality.enabled` (true): reduce tasks prefer the hosts holding
    /// most of their input.
    pub reduce_locality_enabled: bool,
    /// `spark.dynamicAllocation.enabled` (false): barrier stages are refused with it.
    pub dynamic_allocation_enabled: bool,
    /// `spark.stage.ignoreDecommissionFetchFailure` (false): a fetch failure from a
    /// decommissioning executor does not count towards the consecutive failed attempts.
    pub ignore_decommission_fetch_failure: bool,
    /// `spark.scheduler.barrier.maxConcurrentTasksCheck.interval` (15 s): how long a job
    /// whose barrier stage needs more slots than the cluster has waits before it is
    /// submitted again.
    pub barrier_check_interval_ms: u64,
    /// `spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures` (40): failed slot checks
    /// before the job fails.
    pub barrier_check_max_failures: u32,
}

impl Default for DagConfig {
    fn default() -> Self {
        DagConfig {
            max_consecutive_attempts: 4,
            max_stage_attempts: i32::MAX,
            external_shuffle_service: false,
            unregister_output_on_host_on_fetch_failure: false,
            reduce_locality_enabled: true,
            dynamic_allocation_enabled: false,
            ignore_decommission_fetch_failure: false,
            barrier_check_interval_ms: 15_000,
            barrier_check_max_failures: 40,
        }
    }
}

impl DagConfig {
    /// Reads the settings from a configuration lookup (`key → value`); missing or
    /// unparsable values keep their defaults.
    pub fn from_lookup<'a>(get: impl Fn(&str) -> Option<&'a str>) -> DagConfig {
        let d = DagConfig::default();
        let parse_bool = |key: &str, default: bool| {
            get(key)
                .and_then(|v| v.trim().to_ascii_lowercase().parse::<bool>().ok())
                .unwrap_or(default)
        };
        DagConfig {
            max_consecutive_attempts: get(MAX_CONSECUTIVE_ATTEMPTS_KEY)
                .and_then(|v| v.trim().parse::<u32>().ok())
                .unwrap_or(d.max_consecutive_attempts),
            max_stage_attempts: get(MAX_STAGE_ATTEMPTS_KEY)
                .and_then(|v| v.trim().parse::<i32>().ok())
                .unwrap_or(d.max_stage_attempts),
            external_shuffle_service: parse_bool(SHUFFLE_SERVICE_ENABLED_KEY, d.external_shuffle_service),
            unregister_output_on_host_on_fetch_failure: parse_bool(
                UNREGISTER_OUTPUT_ON_HOST_KEY,
                d.unregister_output_on_host_on_fetch_failure,
            ),
            reduce_locality_enabled: parse_bool(REDUCE_LOCALITY_KEY, d.reduce_locality_enabled),
            dynamic_allocation_enabled: parse_bool(DYN_ALLOCATION_ENABLED_KEY, d.dynamic_allocation_enabled),
            ignore_decommission_fetch_failure: parse_bool(
                IGNORE_DECOMMISSION_FETCH_FAILURE_KEY,
                d.ignore_decommission_fetch_failure,
            ),
            // Times are read by the caller (Spark's time strings); see `context::driver`.
            barrier_check_interval_ms: d.barrier_check_interval_ms,
            barrier_check_max_failures: get(BARRIER_CHECK_MAX_FAILURES_KEY)
                .and_then(|v| v.trim().parse::<u32>().ok())
                .unwrap_or(d.barrier_check_max_failures),
        }
    }

    /// Spark's `maxStageAttempts`: max(`spark.stage.maxAttempts`,
    /// `spark.stage.maxConsecutiveAttempts`).
    pub fn effective_max_stage_attempts(&self) -> u32 {
        let total = u32::try_from(self.max_stage_attempts).unwrap_or(0);
        total.max(self.max_consecutive_attempts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_lookup() {
        let d = DagConfig::default();
        assert_eq!(d.max_consecutive_attempts, 4);
        assert_eq!(d.effective_max_stage_attempts(), i32::MAX as u32);
        let c = DagConfig::from_lookup(|k| match k {
            "spark.stage.maxConsecutiveAttempts" => Some("2"),
            "spark.stage.maxAttempts" => Some("1"),
            "spark.shuffle.service.enabled" => Some("TRUE"),
            "spark.shuffle.reduceLocality.enabled" => Some("nope"),
            _ => None,
        });
        assert_eq!(c.max_consecutive_attempts, 2);
        assert_eq!(c.effective_max_stage_attempts(), 2);
        assert!(c.external_shuffle_service);
        assert!(c.reduce_locality_enabled);
    }
}
