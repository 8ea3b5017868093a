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
    memory(
        conf.get(&conf::EXECUTOR_MEMORY).unwrap_or(1 << 30),
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

/// An executor container's capability.
pub fn executor_resource(conf: &SparkConf) -> Resource {
    Resource::new(
        executor_memory(conf).total_mb(),
        conf.get(&conf::EXECUTOR_CORES).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
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
