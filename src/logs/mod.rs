//! Structured actor logs: the record schema and writer, per-cluster routing to files per
//! node and per container, the readable console format, and the `sparkyard logs` reader.
//!
//! Layer: the bottom, under the runtime. The runtime enters each actor's log context
//! ([`ctx`]) around everything the actor runs and owns each cluster's [`sink::LogSink`], so it
//! stands on this module; nothing here imports the runtime (a sink takes its wall time from
//! a function the runtime hands it).

pub mod ctx;
pub mod format;
pub mod glob;
pub mod output;
pub mod perms;
pub mod reader;
pub mod sink;
pub mod supervision;
pub mod timeline;
pub mod writer;

pub use ctx::{LogCtx, LogIds, LogScope};

/// The record schema's leading keys, in order: when, how severe, what, and where it
/// happened (`cluster` … `incarnation` come from the actor's log context).
pub const HEADER_KEYS: [&str; 8] = [
    "ts",
    "level",
    "msg",
    "cluster",
    "node",
    "actor",
    "actor_type",
    "incarnation",
];

/// The keys that follow the header when present, in order: the ids that apply, the
/// message type, then the supervision and fault fields. Other fields come after them.
pub const ID_KEYS: [&str; 13] = [
    "app_id",
    "attempt",
    "container_id",
    "executor_id",
    "job_id",
    "stage_id",
    "task_id",
    "msg_type",
    "event",
    "reason",
    "mode",
    "target",
    "by",
];
pub use writer::{init, init_for_tests, Console, LogInit};
