//! sparkyard: Spark-on-YARN's control plane rebuilt in Rust as a supervised actor system.

pub mod conf;
pub mod logs;
pub mod rpc;
pub mod runtime;
