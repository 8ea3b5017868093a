//! Messaging between actors: endpoint refs by path (local now; the same refs will carry
//! typed messages over TCP), ask with a time-out, partitions applied on the way.

pub mod endpoint;

pub use endpoint::{AskError, EndpointRef};
pub mod tcp;
