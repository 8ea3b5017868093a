//! The submission side and the ApplicationMaster: SparkSubmit and its arguments, the YARN
//! Client, the ApplicationMaster with its AMEndpoint, YarnAllocator (and its decision
//! logic), the allocation reporter, ExecutorRunnable's launcher, and client mode's
//! YarnClientSchedulerBackend.
//!
//! Layer: deploy (the Spark side: spark-submit, the YARN Client, the ApplicationMaster; above context).

pub mod am_args;
pub mod am_endpoint;
pub mod application_master;
pub mod client;
pub mod executor_runnable;
pub mod launch_command;
pub mod reporter;
pub mod resources;
pub mod spark_submit;
pub mod spark_submit_arguments;
pub mod yarn_allocator;
pub mod yarn_client_backend;
