//! Structured actor logs: the record schema and writer, per-cluster routing to files per
//! node and per container, the readable console format, and the `sparkyard logs` reader.

pub mod ctx;
pub mod format;
pub mod reader;
pub mod sink;
pub mod writer;

pub use ctx::{LogCtx, LogIds, LogScope};
pub use writer::{init, init_for_tests, Console, LogInit};
