//! The driver's subtree: where its endpoints live and how it starts and stops.
//!
//! `<parent>/driver` is a supervisor (one_for_one) with `driver-endpoint` (DriverEndpoint)
//! and `yarn-scheduler-endpoint` (YarnSchedulerEndpoint); `<parent>` is the AM's supervisor
//! in cluster mode and `/submit` in client mode. The endpoints' backend state is kept by the
//! child specs, so a restarted endpoint keeps its executors and its AM.

use std::sync::Arc;
use std::time::Duration;

use crate::conf::{self, SparkConf};
use crate::runtime::supervisor::TerminateChild;
use crate::runtime::{
    ActorPath, ChildSpec, Cluster, Kept, Strategy, Supervision, Supervisor, SupervisorSpec,
};
use crate::scheduler::driver_endpoint::{DriverEndpoint, DriverState};
use crate::scheduler::messages::{RequestExecutors, StopExecutors};
use crate::scheduler::yarn_scheduler_endpoint::YarnSchedulerEndpoint;

/// The driver supervisor's path segment.
pub const DRIVER_SEGMENT: &str = "driver";

/// Where a driver's actors are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverPaths {
    pub parent: ActorPath,
    pub driver: ActorPath,
    pub driver_endpoint: ActorPath,
    pub yarn_scheduler: ActorPath,
}

impl DriverPaths {
    /// The paths of a driver started under `parent`.
    pub fn under(parent: &ActorPath) -> DriverPaths {
        let driver =
            ActorPath::parse(&format!("{parent}/{DRIVER_SEGMENT}")).unwrap_or_else(|_| parent.clone());
        let child =
            |seg: &str| ActorPath::parse(&format!("{driver}/{seg}")).unwrap_or_else(|_| driver.clone());
        DriverPaths {
            parent: parent.clone(),
            driver_endpoint: child("driver-endpoint"),
            yarn_scheduler: child("yarn-scheduler-endpoint"),
            driver,
        }
    }
}

/// The child spec of the driver supervisor.
pub fn driver_spec(conf: &Arc<SparkConf>, paths: &DriverPaths) -> ChildSpec {
    let supervision = Supervision::from_conf(conf).unwrap_or_default();
    let ask_timeout = conf
        .get(&conf::RPC_ASK_TIMEOUT)
        .unwrap_or(Duration::from_secs(120));
    let driver_state = Kept::new(DriverState::default());
    let am = Kept::new(None);
    let (conf, paths) = (conf.clone(), paths.clone());
    ChildSpec::supervisor(DRIVER_SEGMENT, move || {
        let (c, yse, st) = (conf.clone(), paths.yarn_scheduler.clone(), driver_state.clone());
        let (de, am) = (paths.driver_endpoint.clone(), am.clone());
        SupervisorSpec::new(Strategy::OneForOne)
            .supervision(&supervision)
            .child(ChildSpec::worker("driver-endpoint", move |_, me| {
                DriverEndpoint::new(me, c.clone(), yse.clone(), st.clone())
            }))
            .child(ChildSpec::worker("yarn-scheduler-endpoint", move |_, me| {
                YarnSchedulerEndpoint::new(me, de.clone(), am.clone(), ask_timeout)
            }))
    })
    .restart(crate::runtime::Restart::Temporary)
}

/// SparkContext.stop's effect on the cluster side: the executor target goes to 0 (so the
/// AM cancels its requests and replaces nobody), every executor is told to stop, and the
/// driver's subtree stops. Each step is bounded by `bound`; a step whose actor is already
/// gone is skipped.
pub async fn stop_driver(cluster: &Cluster, paths: &DriverPaths, bound: Duration) {
    let yse = cluster.endpoint::<YarnSchedulerEndpoint>(&paths.yarn_scheduler);
    let _ = yse.ask(RequestExecutors::default(), bound).await;
    let de = cluster.endpoint::<DriverEndpoint>(&paths.driver_endpoint);
    let _ = de.ask(StopExecutors, bound).await;
    let sup = cluster.endpoint::<Supervisor>(&paths.parent);
    let _ = sup.ask(TerminateChild(DRIVER_SEGMENT.to_string()), bound).await;
}
