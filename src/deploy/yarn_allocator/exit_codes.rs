//! Spark's executor exit codes (SparkExitCode and ExecutorExitCode, with
//! `explainExitCode`) and the YARN exit statuses YarnAllocator counts as nobody's fault.
//!
//! Layer: deploy (the AM's allocator), pure: no messages, no clock.

use crate::yarn::records::exit_status;

/// Spark's own executor exit codes (SparkExitCode and ExecutorExitCode).
pub mod executor_exit_code {
    pub const UNCAUGHT_EXCEPTION: i32 = 50;
    pub const UNCAUGHT_EXCEPTION_TWICE: i32 = 51;
    pub const OOM: i32 = 52;
    pub const DISK_STORE_FAILED_TO_CREATE_DIR: i32 = 53;
    pub const EXTERNAL_BLOCK_STORE_FAILED_TO_INITIALIZE: i32 = 54;
    pub const EXTERNAL_BLOCK_STORE_FAILED_TO_CREATE_DIR: i32 = 55;
    pub const HEARTBEAT_FAILURE: i32 = 56;
    pub const KILLED_BY_TASK_REAPER: i32 = 57;
    pub const BLOCK_MANAGER_REREGISTRATION_FAILED: i32 = 58;
}

/// Spark's `ExecutorExitCode.explainExitCode`: a readable cause for an executor's exit code.
pub fn explain_exit_code(exit_code: i32) -> String {
    use executor_exit_code::*;
    let known = match exit_code {
        UNCAUGHT_EXCEPTION => "Uncaught exception",
        UNCAUGHT_EXCEPTION_TWICE => "Uncaught exception, and logging the exception failed",
        OOM => "OutOfMemoryError",
        DISK_STORE_FAILED_TO_CREATE_DIR => "Failed to create local directory (bad spark.local.dir?)",
        EXTERNAL_BLOCK_STORE_FAILED_TO_INITIALIZE => "ExternalBlockStore failed to initialize.",
        EXTERNAL_BLOCK_STORE_FAILED_TO_CREATE_DIR => {
            "ExternalBlockStore failed to create a local temporary directory."
        }
        HEARTBEAT_FAILURE => "Unable to send heartbeats to driver.",
        BLOCK_MANAGER_REREGISTRATION_FAILED => {
            "Executor killed due to a failure of block manager re-registration."
        }
        KILLED_BY_TASK_REAPER => "Executor killed by TaskReaper.",
        _ => {
            let signal = if exit_code > 128 {
                format!(" (died from signal {}?)", exit_code - 128)
            } else {
                String::new()
            };
            return format!("Unknown executor exit code ({exit_code}){signal}");
        }
    };
    known.to_string()
}

/// YARN exit statuses that are neither the application's nor the node's fault
/// (Spark's NOT_APP_AND_SYSTEM_FAULT_EXIT_STATUS).
pub(super) const NOT_APP_AND_SYSTEM_FAULT_EXIT_STATUS: [i32; 5] = [
    exit_status::KILLED_BY_RESOURCEMANAGER,
    exit_status::KILLED_BY_APPMASTER,
    exit_status::KILLED_AFTER_APP_COMPLETION,
    exit_status::ABORTED,
    exit_status::DISKS_FAILED,
];
