//! sparkyard: Spark-on-YARN's control plane rebuilt in Rust as a supervised actor system.

pub mod conf;
pub mod deploy;
pub mod executor;
pub mod logs;
pub mod rpc;
pub mod runtime;
