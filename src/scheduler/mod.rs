//! The driver's schedulers and endpoints: DriverEndpoint, YarnSchedulerEndpoint, Spark's
//! cluster messages and executor loss reasons (the DAGScheduler and TaskScheduler come
//! with the driver-side milestone).

pub mod driver_endpoint;
pub mod loss_reason;
pub mod messages;
pub mod yarn_scheduler_endpoint;
