//! HeartbeatReceiver: being written.
