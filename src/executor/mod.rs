//! The executor side: CoarseGrainedExecutorBackend (registration, LaunchTask, KillTask,
//! shuffle block serving), its command-line arguments, the bounded task pool task bodies
//! run on, the task runner, and the block store for shuffle output.
//!
//! Layer: executor (the Spark side, above scheduler).

pub mod args;
pub mod backend;
pub mod block_store;
pub mod task_pool;
pub mod task_runner;
