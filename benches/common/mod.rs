//! What the in-process benchmarks share (`jobs`, `memory`, `data`): an embedded cluster of
//! NodeManagers in the bench's own process, one application submitted to it in cluster mode
//! and followed to its end.

use std::sync::Arc;
use std::time::Duration;

use sparkyard::conf::{NodeSpec, SparkConf};
use sparkyard::deploy::client::{follow_application, submit_application, ClientArgs, RmConnection};
use sparkyard::runtime::Cluster;
use sparkyard::yarn::node::{rm_path, start_node, wait_ready};
use sparkyard::yarn::protocol::ApplicationClientProtocol;

/// The level of the bench's records: `SPARKYARD_BENCH_LOG`, default `info`.
pub fn log_level() -> String {
    std::env::var("SPARKYARD_BENCH_LOG").unwrap_or_else(|_| "info".into())
}

/// Installs the bench's log subscriber: records at `level` to each cluster's files, nothing
/// on the console.
pub fn init_logs(level: &str) {
    sparkyard::logs::init(&sparkyard::logs::LogInit {
        level: Some(level.to_string()),
        console: sparkyard::logs::Console::Off,
        console_quiet_except: None,
    })
    .expect("subscriber");
}

/// The cluster and the application's executors.
pub struct Setup {
    /// NodeManagers, each of `node_memory_mb` and `node_vcores`.
    pub nodes: u32,
    pub node_memory_mb: u64,
    pub node_vcores: u32,
    pub executors: u32,
    pub cores: u32,
    pub executor_memory: &'static str,
    /// Records written to files in a temporary directory, as a node does (else formatted
    /// and not written).
    pub log_files: bool,
}

/// Runs `main_class` with `app_args` on a new embedded cluster of `setup`, in an actix
/// system of its own, and waits for the application to end successfully.
pub fn run_app(setup: &Setup, main_class: &str, app_args: Vec<String>) {
    let logs = tempfile::tempdir().unwrap();
    let log_dir = logs.path().to_path_buf();
    let sys = actix::System::new();
    sys.block_on(async move {
        let builder = Cluster::builder();
        let builder = if setup.log_files {
            builder.log_dir(&log_dir)
        } else {
            builder
        };
        let cluster = builder.node("rmhost").build().unwrap();
        let nodes: Vec<NodeSpec> = (1..=setup.nodes)
            .map(|i| NodeSpec {
                host: format!("host{i}"),
                rack: "/rack1".into(),
                memory_mb: setup.node_memory_mb,
                vcores: setup.node_vcores,
            })
            .collect();
        start_node(
            &cluster,
            &SparkConf::new(),
            &nodes,
            &sparkyard::cli::roles::launchers(),
            "rmhost",
            None,
        )
        .unwrap();
        wait_ready(&cluster, nodes.len(), Duration::from_secs(10))
            .await
            .unwrap();
        let rm = RmConnection::Local(cluster.endpoint::<ApplicationClientProtocol>(&rm_path()));
        let mut conf = SparkConf::new();
        conf.set("spark.executor.instances", setup.executors.to_string())
            .set("spark.executor.cores", setup.cores.to_string())
            .set("spark.executor.memory", setup.executor_memory)
            .set("spark.yarn.report.interval", "100ms")
            .set("spark.scheduler.minRegisteredResourcesRatio", "1.0")
            .set("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s")
            .set("spark.yarn.maxAppAttempts", "1");
        let args = ClientArgs {
            conf: Arc::new(conf),
            main_class: main_class.to_string(),
            primary_resource: "bench.jar".into(),
            app_args,
            client_mode_driver: None,
        };
        let app = submit_application(&rm, &args).await.unwrap();
        let outcome = follow_application(&rm, &args, app).await;
        assert!(outcome.verdict.is_ok(), "{:?}", outcome.verdict);
        cluster.shutdown(Duration::from_secs(10)).await;
    });
}
