//! Messaging between actors, rpc layer (above the runtime, below YARN): the TCP transport,
//! generic over the protocol it carries ([`tcp`]), and the endpoint refs by path the runtime
//! defines (re-exported here: a ref resolves through the runtime's registry and fault
//! routes, so it lives with them).

pub use crate::runtime::endpoint::{AskError, EndpointRef};
pub mod auth;
pub mod outbox;
pub mod remote;
pub mod tcp;
