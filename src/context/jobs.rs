//! The SparkContext's side of the RDD API: the `JobRunner` that gives RDDs their ids and
//! runs their jobs through the driver's actors (SparkContext.runJob → DAGScheduler
//! submitJob → JobWaiter).
//!
//! Layer: context (the Spark side: SparkContext, above executor).
//!
//! runJob asks the DAGScheduler to submit the job (bounded by the ask time-out) and then
//! waits on the job's waiter. The wait ends when the job ends, when the application is
//! cancelled (its container stops: the job is cancelled as SparkContext.stop cancels
//! jobs), or when the driver's DAGScheduler is gone (its waiter is dropped): never hangs.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use crate::conf::{self, SparkConf};
use crate::rdd::api::{JobError, JobRunner};
use crate::rdd::{Lineage, RddId, ResultFunc, ShuffleId, Value};
use crate::rpc::{AskError, EndpointRef};
use crate::runtime::blocking::block_on;
use crate::runtime::{ActorPath, CancelToken, Cluster};
use crate::scheduler::console_progress_bar::{ConsoleProgressBarProtocol, FinishAll};
use crate::scheduler::dag_scheduler::DagSchedulerProtocol;
use crate::scheduler::dag_scheduler::{CancelJobs, SubmitJob};
use crate::scheduler::messages::DriverProtocol;
use crate::scheduler::messages::GetExecutors;

/// How often a waiting application thread looks at its cancellation token.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// The pause before a job is submitted again to a DAGScheduler that was restarting.
const RESUBMIT_PAUSE: Duration = Duration::from_millis(5);

/// The driver's JobRunner (shared by every RDD of one SparkContext).
pub struct DriverJobRunner {
    cluster: Cluster,
    conf: Arc<SparkConf>,
    dag: ActorPath,
    driver_endpoint: ActorPath,
    cancel: CancelToken,
    app_short_name: String,
    next_rdd_id: AtomicU32,
    next_shuffle_id: AtomicU32,
    bound: Duration,
    /// The console progress bar, told when each job ends.
    progress_bar: Option<ActorPath>,
}

impl DriverJobRunner {
    pub fn new(
        cluster: Cluster,
        conf: Arc<SparkConf>,
        dag: ActorPath,
        driver_endpoint: ActorPath,
        cancel: CancelToken,
        class_name: &str,
        bound: Duration,
    ) -> DriverJobRunner {
        let app_short_name = class_name.rsplit('.').next().unwrap_or(class_name).to_string();
        DriverJobRunner {
            cluster,
            conf,
            dag,
            driver_endpoint,
            cancel,
            app_short_name,
            next_rdd_id: AtomicU32::new(0),
            next_shuffle_id: AtomicU32::new(0),
            bound,
            progress_bar: None,
        }
    }

    /// Tells `progress_bar` (the ConsoleProgressBar) when each job ends.
    pub fn with_progress_bar(mut self, progress_bar: Option<ActorPath>) -> Self {
        self.progress_bar = progress_bar;
        self
    }

    /// SparkContext.runJob's `progressBar.foreach(_.finishAll())`: the bar is erased before
    /// the job's result (or its failure) is used; bounded by a second (the bar restarting or
    /// gone is no reason to hold the job's result back).
    fn finish_progress_bar(&self) {
        let Some(bar) = &self.progress_bar else { return };
        let bound = Duration::from_secs(1);
        let ask = self
            .cluster
            .endpoint::<ConsoleProgressBarProtocol>(bar)
            .ask(FinishAll, bound);
        let _ = block_on(&self.cluster, ask, bound);
    }

    fn dag(&self) -> EndpointRef<DagSchedulerProtocol> {
        self.cluster.endpoint(&self.dag)
    }

    /// The registered executors' cores.
    pub fn total_cores(&self) -> u32 {
        let de: EndpointRef<DriverProtocol> = self.cluster.endpoint(&self.driver_endpoint);
        block_on(&self.cluster, de.ask(GetExecutors, self.bound), self.bound)
            .ok()
            .and_then(|r| r.ok())
            .map(|execs| execs.iter().map(|e| e.total_cores).sum())
            .unwrap_or(0)
    }

    fn cancel_job(&self, job_id: u32, reason: &str) {
        let ask = self.dag().ask(
            CancelJobs {
                job_id: Some(job_id),
                reason: Some(reason.to_string()),
            },
            self.bound,
        );
        let _ = block_on(&self.cluster, ask, self.bound);
    }
}

impl JobRunner for DriverJobRunner {
    fn new_rdd_id(&self) -> RddId {
        self.next_rdd_id.fetch_add(1, Ordering::Relaxed)
    }

    fn new_shuffle_id(&self) -> ShuffleId {
        self.next_shuffle_id.fetch_add(1, Ordering::Relaxed)
    }

    /// `spark.default.parallelism`, else the executors' total cores, at least 2.
    fn default_parallelism(&self) -> u32 {
        self.default_parallelism_set()
            .unwrap_or_else(|| self.total_cores().max(2))
    }

    fn default_parallelism_set(&self) -> Option<u32> {
        self.conf.get(&conf::DEFAULT_PARALLELISM).ok().flatten()
    }

    fn app_short_name(&self) -> String {
        self.app_short_name.clone()
    }

    fn run_job(
        &self,
        lineage: &Arc<Lineage>,
        rdd: RddId,
        partitions: &[u32],
        func: &ResultFunc,
        call_site: &str,
    ) -> Result<Vec<Value>, JobError> {
        let result = self.run_job_to_end(lineage, rdd, partitions, func, call_site);
        self.finish_progress_bar();
        result
    }
}

impl DriverJobRunner {
    fn run_job_to_end(
        &self,
        lineage: &Arc<Lineage>,
        rdd: RddId,
        partitions: &[u32],
        func: &ResultFunc,
        call_site: &str,
    ) -> Result<Vec<Value>, JobError> {
        if self.cancel.is_cancelled() {
            return Err(JobError::with_class(
                "java.lang.IllegalStateException",
                "SparkContext has been shutdown",
            ));
        }
        let (tx, rx) = mpsc::sync_channel(1);
        let clock = self.cluster.clock().clone();
        let deadline = clock.now() + self.bound;
        // A SubmitJob that reached a DAGScheduler which then failed was never registered
        // (its mailbox died with it): submit it again to the next incarnation, within the
        // bound.
        let job_id = loop {
            let submit = SubmitJob {
                lineage: lineage.clone(),
                rdd,
                partitions: partitions.to_vec(),
                func: func.clone(),
                call_site: call_site.to_string(),
                properties: vec![("callSite.short".into(), call_site.to_string())],
                waiter: tx.clone(),
            };
            let left = deadline.saturating_sub(clock.now());
            match block_on(&self.cluster, self.dag().ask(submit, left), left) {
                Ok(Ok(Ok(id))) => break id,
                Ok(Ok(Err(refused))) => {
                    return Err(JobError::with_class(
                        "java.lang.IllegalArgumentException",
                        refused,
                    ))
                }
                Ok(Err(e @ (AskError::Died { .. } | AskError::Lookup(_)))) if clock.now() < deadline => {
                    tracing::warn!("The DAGScheduler did not take the job ({e}); submitting it again");
                    clock
                        .blocking_sleep(RESUBMIT_PAUSE, Some(&self.cancel))
                        .map_err(|c| JobError::new(c.to_string()))?;
                }
                Ok(Err(e)) => return Err(JobError::new(format!("cannot submit the job: {e}"))),
                Err(e) => return Err(JobError::new(format!("cannot submit the job: {e}"))),
            }
        };
        drop(tx);
        loop {
            match rx.recv_timeout(WAIT_SLICE) {
                Ok(Ok(values)) => return Ok(values),
                Ok(Err(message)) => {
                    // A job refused by a barrier check throws Spark's BarrierJobAllocationFailed.
                    return Err(
                        match crate::scheduler::dag_scheduler::barrier_exception_class(&message) {
                            Some(class) => JobError::with_class(class, message),
                            None => JobError::new(message),
                        },
                    );
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if self.cancel.is_cancelled() {
                        self.cancel_job(job_id, "because SparkContext was shut down");
                        return Err(JobError::new(format!(
                            "Job {job_id} cancelled because SparkContext was shut down"
                        )));
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(JobError::new(format!(
                        "Job {job_id} cancelled because SparkContext was shut down"
                    )))
                }
            }
        }
    }
}
