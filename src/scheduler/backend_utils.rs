//! SchedulerBackendUtils: how many executors an application starts with, as the driver's
//! backend, the ExecutorAllocationManager and the AM's allocator all count them
//! (`getInitialTargetExecutorNumber`, with Utils.getDynamicAllocationInitialExecutors under
//! dynamic allocation).
//!
//! Layer: scheduler (the driver's side of the Spark layers, under executor, context and
//! deploy, which use it from here).

use crate::conf::{self, SparkConf};

/// SchedulerBackendUtils.getInitialTargetExecutorNumber. With dynamic allocation it is
/// Utils.getDynamicAllocationInitialExecutors, which warns (as Spark does, each time it is
/// asked) about an initial number or instance count below the minimum, both ignored; the
/// configuration's validation has already refused a number above the maximum.
pub fn initial_target_executors(conf: &SparkConf) -> u32 {
    let instances = conf.get(&conf::EXECUTOR_INSTANCES).ok().flatten();
    if conf.get(&conf::DYN_ALLOCATION_ENABLED).unwrap_or(false) {
        let min = conf.get(&conf::DYN_ALLOCATION_MIN_EXECUTORS).unwrap_or(0);
        let initial = conf.get(&conf::DYN_ALLOCATION_INITIAL_EXECUTORS).unwrap_or(min);
        let (min_key, initial_key, instances_key) = (
            conf::DYN_ALLOCATION_MIN_EXECUTORS.name(),
            conf::DYN_ALLOCATION_INITIAL_EXECUTORS.name(),
            conf::EXECUTOR_INSTANCES.name(),
        );
        if initial < min {
            tracing::warn!("{initial_key} less than {min_key} is invalid, ignoring its setting, please update your configs.");
        }
        if instances.unwrap_or(0) < min {
            tracing::warn!("{instances_key} less than {min_key} is invalid, ignoring its setting, please update your configs.");
        }
        let n = min.max(initial).max(instances.unwrap_or(0));
        tracing::info!("Using initial executors = {n}, max of {initial_key}, {min_key} and {instances_key}");
        n
    } else {
        instances.unwrap_or(DEFAULT_NUMBER_EXECUTORS)
    }
}

/// SchedulerBackendUtils.DEFAULT_NUMBER_EXECUTORS.
pub const DEFAULT_NUMBER_EXECUTORS: u32 = 2;
