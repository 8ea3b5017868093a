//! Container sizes as Spark computes them (ResourceProfile.getResourcesForClusterManager,
//! the YARN Client): memory plus overhead, where the overhead is
//! `spark.{executor,driver}.memoryOverhead` if set, else
//! `max(memoryOverheadFactor × memory, minMemoryOverhead)` (0.10 and 384 MB by default);
//! for an executor also its off-heap memory (`spark.memory.offHeap.size`, when
//! `spark.memory.offHeap.enabled`) and, for a Python application, its PySpark memory
//! (`spark.executor.pyspark.memory`).
//!
//! Layer: deploy (the Spark side: spark-submit, the YARN Client, the ApplicationMaster; above context).

use crate::conf::{self, SparkConf};
use crate::yarn::records::Resource;

const MIB: u64 = 1 << 20;

/// A container's memory split, in MB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContainerMemory {
    /// The heap.
    pub memory_mb: u64,
    pub overhead_mb: u64,
    /// Off-heap memory (executors with `spark.memory.offHeap.enabled` only).
    pub off_heap_mb: u64,
    /// The Python workers' memory (executors of Python applications only).
    pub pyspark_mb: u64,
}

impl ContainerMemory {
    /// What YARN is asked for: every term added.
    pub fn total_mb(&self) -> u64 {
        self.memory_mb + self.overhead_mb + self.off_heap_mb + self.pyspark_mb
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
        ..ContainerMemory::default()
    }
}

/// An executor container's memory.
pub fn executor_memory(conf: &SparkConf) -> ContainerMemory {
    executor_memory_of(conf, conf.get(&conf::EXECUTOR_MEMORY).unwrap_or(1 << 30) / MIB)
}

/// The container of an executor whose heap is `memory_mb` MB, with this configuration's
/// overhead, off-heap and PySpark terms.
pub fn executor_memory_of(conf: &SparkConf, memory_mb: u64) -> ContainerMemory {
    let mut m = memory(
        memory_mb.saturating_mul(MIB),
        conf.get(&conf::EXECUTOR_MEMORY_OVERHEAD).ok().flatten(),
        conf.get(&conf::EXECUTOR_MEMORY_OVERHEAD_FACTOR).unwrap_or(0.1),
        conf.get(&conf::EXECUTOR_MIN_MEMORY_OVERHEAD).unwrap_or(384 * MIB),
    );
    // Utils.executorOffHeapMemorySizeAsMb: whole MiB, only when off-heap is on.
    if conf.get(&conf::MEMORY_OFFHEAP_ENABLED).unwrap_or(false) {
        m.off_heap_mb = conf.get(&conf::MEMORY_OFFHEAP_SIZE).unwrap_or(0) / MIB;
    }
    // "only add in pyspark memory if actually a python application"
    if conf.get(&conf::IS_PYTHON_APP).unwrap_or(false) {
        m.pyspark_mb = conf
            .get(&conf::PYSPARK_EXECUTOR_MEMORY)
            .ok()
            .flatten()
            .map_or(0, |b| b / MIB);
    }
    m
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
        ..ContainerMemory::default()
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
                overhead_mb: 384,
                ..ContainerMemory::default()
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
                overhead_mb: 1024,
                ..ContainerMemory::default()
            }
        );
    }

    /// Settings, then the heap, overhead, off-heap, PySpark and total MB of an executor.
    type ExecutorCase = (&'static [(&'static str, &'static str)], u64, u64, u64, u64, u64);
    /// Settings, cluster mode, then the AM's heap and overhead MB.
    type AmCase = (&'static [(&'static str, &'static str)], bool, u64, u64);

    fn with(pairs: &[(&str, &str)]) -> SparkConf {
        let mut c = SparkConf::new();
        for (k, v) in pairs {
            c.set(*k, *v);
        }
        c
    }

    #[test]
    fn executor_containers_add_every_term_spark_adds() {
        // (settings, heap, overhead, off-heap, PySpark, what YARN is asked for), in MB.
        let cases: &[ExecutorCase] = &[
            // 1 GB heap: 10 % is 102 MB, below the 384 MB floor.
            (&[], 1024, 384, 0, 0, 1408),
            // 8 GB: 10 % is 819 MB (truncated).
            (&[("spark.executor.memory", "8g")], 8192, 819, 0, 0, 9011),
            // The factor, then the floor, each configurable; an explicit overhead wins over both.
            (
                &[
                    ("spark.executor.memory", "4g"),
                    ("spark.executor.memoryOverheadFactor", "0.25"),
                ],
                4096,
                1024,
                0,
                0,
                5120,
            ),
            (
                &[("spark.executor.minMemoryOverhead", "500m")],
                1024,
                500,
                0,
                0,
                1524,
            ),
            (
                &[
                    ("spark.executor.memoryOverhead", "200"),
                    ("spark.executor.memoryOverheadFactor", "0.5"),
                    ("spark.executor.minMemoryOverhead", "1g"),
                ],
                1024,
                200,
                0,
                0,
                1224,
            ),
            (
                &[("spark.yarn.executor.memoryOverhead", "300")],
                1024,
                300,
                0,
                0,
                1324,
            ),
            // Off-heap memory counts only when it is on, in whole MiB.
            (&[("spark.memory.offHeap.size", "512m")], 1024, 384, 0, 0, 1408),
            (
                &[
                    ("spark.executor.memory", "2g"),
                    ("spark.memory.offHeap.enabled", "true"),
                    ("spark.memory.offHeap.size", "512m"),
                ],
                2048,
                384,
                512,
                0,
                2944,
            ),
            (
                &[
                    ("spark.memory.offHeap.enabled", "true"),
                    ("spark.memory.offHeap.size", "1572864000"),
                ],
                1024,
                384,
                1500,
                0,
                2908,
            ),
            // PySpark memory only for a Python application.
            (&[("spark.executor.pyspark.memory", "1g")], 1024, 384, 0, 0, 1408),
            (
                &[
                    ("spark.executor.pyspark.memory", "1g"),
                    ("spark.yarn.isPython", "true"),
                ],
                1024,
                384,
                0,
                1024,
                2432,
            ),
            // All of them.
            (
                &[
                    ("spark.executor.memory", "3g"),
                    ("spark.executor.memoryOverheadFactor", "0.2"),
                    ("spark.memory.offHeap.enabled", "true"),
                    ("spark.memory.offHeap.size", "1g"),
                    ("spark.executor.pyspark.memory", "512"),
                    ("spark.yarn.isPython", "true"),
                ],
                3072,
                614,
                1024,
                512,
                5222,
            ),
        ];
        for (pairs, heap, overhead, off_heap, pyspark, total) in cases {
            let m = executor_memory(&with(pairs));
            assert_eq!(
                (
                    m.memory_mb,
                    m.overhead_mb,
                    m.off_heap_mb,
                    m.pyspark_mb,
                    m.total_mb()
                ),
                (*heap, *overhead, *off_heap, *pyspark, *total),
                "{pairs:?}"
            );
            assert_eq!(executor_resource(&with(pairs)).memory_mb, *total, "{pairs:?}");
        }
    }

    #[test]
    fn the_am_container_adds_its_overhead_and_nothing_else() {
        // (settings, cluster mode, heap, overhead); off-heap and PySpark memory are executors'.
        let executor_terms = [
            ("spark.memory.offHeap.enabled", "true"),
            ("spark.memory.offHeap.size", "1g"),
            ("spark.executor.pyspark.memory", "1g"),
            ("spark.yarn.isPython", "true"),
        ];
        let cases: &[AmCase] = &[
            // Cluster mode: the driver's memory and overhead rule.
            (&[], true, 1024, 384),
            (&[("spark.driver.memory", "8g")], true, 8192, 819),
            (
                &[
                    ("spark.driver.memory", "4g"),
                    ("spark.driver.memoryOverheadFactor", "0.3"),
                ],
                true,
                4096,
                1228,
            ),
            (&[("spark.driver.minMemoryOverhead", "600m")], true, 1024, 600),
            (&[("spark.driver.memoryOverhead", "700")], true, 1024, 700),
            (&[("spark.yarn.am.memory", "2g")], true, 1024, 384),
            // Client mode: the ExecutorLauncher's, factor 0.10 and floor 384 MB fixed.
            (&[], false, 512, 384),
            (&[("spark.yarn.am.memory", "8g")], false, 8192, 819),
            (
                &[
                    ("spark.yarn.am.memory", "1g"),
                    ("spark.yarn.am.memoryOverhead", "500"),
                ],
                false,
                1024,
                500,
            ),
            (
                &[
                    ("spark.driver.memory", "4g"),
                    ("spark.driver.memoryOverheadFactor", "0.5"),
                    ("spark.driver.minMemoryOverhead", "1g"),
                ],
                false,
                512,
                384,
            ),
        ];
        for (pairs, cluster, heap, overhead) in cases {
            let mut all: Vec<(&str, &str)> = pairs.to_vec();
            all.extend(executor_terms);
            let (m, _) = am_container(&with(&all), *cluster);
            assert_eq!(
                (
                    m.memory_mb,
                    m.overhead_mb,
                    m.off_heap_mb,
                    m.pyspark_mb,
                    m.total_mb()
                ),
                (*heap, *overhead, 0, 0, heap + overhead),
                "{pairs:?} cluster={cluster}"
            );
        }
    }
}
