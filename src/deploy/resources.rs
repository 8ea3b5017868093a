//! Container sizes as Spark computes them: memory plus overhead, where the overhead is
//! `spark.{executor,driver}.memoryOverhead` if set, else
//! `max(memoryOverheadFactor × memory, minMemoryOverhead)` (0.10 and 384 MB by default).

use crate::conf::{self, SparkConf};
use crate::yarn::records::Resource;

const MIB: u64 = 1 << 20;

/// A container's memory split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContainerMemory {
    pub memory_mb: u64,
    pub overhead_mb: u64,
}

impl ContainerMemory {
    pub fn total_mb(&self) -> u64 {
        self.memory_mb + self.overhead_mb
    }
}

fn memory(mem: u64, explicit: Option<u64>, factor: f64, min: u64) -> ContainerMemory {
    let memory_mb = mem / MIB;
    let overhead_mb = match explicit {
        Some(bytes) => bytes / MIB,
        None => ((factor * memory_mb as f64) as u64).max(min / MIB),
    };
    ContainerMemory {
        memory_mb,
        overhead_mb,
    }
}

/// An executor container's memory.
pub fn executor_memory(conf: &SparkConf) -> ContainerMemory {
    executor_memory_of(conf, conf.get(&conf::EXECUTOR_MEMORY).unwrap_or(1 << 30) / MIB)
}

/// The container of an executor whose heap is `memory_mb` MB, with this configuration's
/// overhead rule.
pub fn executor_memory_of(conf: &SparkConf, memory_mb: u64) -> ContainerMemory {
    memory(
        memory_mb.saturating_mul(MIB),
        conf.get(&conf::EXECUTOR_MEMORY_OVERHEAD).ok().flatten(),
        conf.get(&conf::EXECUTOR_MEMORY_OVERHEAD_FACTOR).unwrap_or(0.1),
        conf.get(&conf::EXECUTOR_MIN_MEMORY_OVERHEAD).unwrap_or(384 * MIB),
    )
}

/// The AM container's memory in cluster mode (the driver's).
pub fn driver_memory(conf: &SparkConf) -> ContainerMemory {
    memory(
        conf.get(&conf::DRIVER_MEMORY).unwrap_or(1 << 30),
        conf.get(&conf::DRIVER_MEMORY_OVERHEAD).ok().flatten(),
        conf.get(&conf::DRIVER_MEMORY_OVERHEAD_FACTOR).unwrap_or(0.1),
        conf.get(&conf::DRIVER_MIN_MEMORY_OVERHEAD).unwrap_or(384 * MIB),
    )
}

/// The AM container's memory and vcores: in cluster mode the driver's
/// (`spark.driver.memory`, `spark.driver.cores`), in client mode the ExecutorLauncher's
/// (`spark.yarn.am.memory`, 512 MB, with `spark.yarn.am.memoryOverhead` or 10 %, at least
/// 384 MB; `spark.yarn.am.cores`).
pub fn am_container(conf: &SparkConf, cluster_mode: bool) -> (ContainerMemory, u32) {
    if cluster_mode {
        return (driver_memory(conf), conf.get(&conf::DRIVER_CORES).unwrap_or(1));
    }
    let memory_mb = conf.get(&conf::AM_MEMORY).unwrap_or(512 * MIB) / MIB;
    let overhead_mb = conf
        .get(&conf::AM_MEMORY_OVERHEAD)
        .ok()
        .flatten()
        .map(|b| b / MIB)
        .unwrap_or_else(|| ((0.1 * memory_mb as f64) as u64).max(384));
    let memory = ContainerMemory {
        memory_mb,
        overhead_mb,
    };
    (memory, conf.get(&conf::AM_CORES).unwrap_or(1))
}

/// An executor container's capability.
pub fn executor_resource(conf: &SparkConf) -> Resource {
    Resource::new(
        executor_memory(conf).total_mb(),
        conf.get(&conf::EXECUTOR_CORES).unwrap_or(1),
    )
}

/// `local-cluster[N,C,M]`, as Spark means it: N executors of C cores and M MB each, with the
/// driver's resources besides them. On YARN the ApplicationMaster needs a container too (the
/// driver in cluster mode, the ExecutorLauncher in client mode), so each of the N
/// NodeManagers (`host1`…, one rack) offers room for one executor of C vcores whose heap is
/// M MB (its YARN overhead added) and, besides, room for the AM container of `conf`, both
/// rounded up to `yarn.scheduler.minimum-allocation-mb` as the scheduler rounds them:
/// wherever the AM lands, it never takes an executor's place.
pub fn local_cluster_nodes(n: u32, cores: u32, memory_mb: u64, conf: &SparkConf) -> Vec<conf::NodeSpec> {
    let cluster_mode = conf.get(&conf::SUBMIT_DEPLOY_MODE) == Ok("cluster");
    let (am_memory, am_cores) = am_container(conf, cluster_mode);
    let executor = executor_memory_of(conf, memory_mb);
    let step = conf
        .get(&conf::RM_SCHEDULER_MINIMUM_ALLOCATION_MB)
        .unwrap_or(1024)
        .max(1);
    let rounded = |mb: u64| mb.div_ceil(step).saturating_mul(step);
    let node_memory = rounded(executor.total_mb()).saturating_add(rounded(am_memory.total_mb()));
    (1..=n)
        .map(|i| conf::NodeSpec {
            host: format!("host{i}"),
            rack: conf::DEFAULT_RACK.to_string(),
            memory_mb: node_memory,
            vcores: cores.saturating_add(am_cores),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn local_cluster_nodes_hold_an_executor_besides_the_am() {
        // Client mode: an executor of 2048 MB heap is 2432 MB, 3072 rounded; the
        // ExecutorLauncher's 896 MB, 1024 rounded; one vcore each.
        let conf = SparkConf::new();
        let nodes = local_cluster_nodes(2, 1, 2048, &conf);
        assert_eq!(nodes.len(), 2);
        for (i, n) in nodes.iter().enumerate() {
            assert_eq!(n.host, format!("host{}", i + 1));
            assert_eq!((n.memory_mb, n.vcores), (4096, 2));
        }
        // Cluster mode: the AM is the driver (1 GB + 384 MB, 2048 rounded; spark.driver.cores).
        let mut conf = SparkConf::new();
        conf.set("spark.submit.deployMode", "cluster")
            .set("spark.driver.cores", "2")
            .set("yarn.scheduler.minimum-allocation-mb", "512");
        let nodes = local_cluster_nodes(1, 4, 1024, &conf);
        assert_eq!((nodes[0].memory_mb, nodes[0].vcores), (1536 + 1536, 6));
    }

    use super::*;

    #[test]
    fn spark_overheads() {
        let conf = SparkConf::new();
        assert_eq!(
            executor_memory(&conf),
            ContainerMemory {
                memory_mb: 1024,
                overhead_mb: 384
            }
        );
        assert_eq!(executor_resource(&conf), Resource::new(1408, 1));
        let mut conf = SparkConf::new();
        conf.set("spark.executor.memory", "8g")
            .set("spark.driver.memoryOverhead", "1g");
        assert_eq!(executor_memory(&conf).overhead_mb, 819);
        assert_eq!(
            driver_memory(&conf),
            ContainerMemory {
                memory_mb: 1024,
                overhead_mb: 1024
            }
        );
    }
}
