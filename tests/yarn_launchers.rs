//! YARN without Spark: a node whose NodeManagers run the programs of a launcher registry
//! the test hands them, as a real NodeManager execs whatever command line a launch context
//! holds. The application master here is a one-line program that exits with the status its
//! arguments name; the ResourceManager and NodeManager report it with YARN's diagnostics.

use std::time::Duration;

use actix::{Actor, Context};
use sparkyard::conf::{NodeSpec, SparkConf};
use sparkyard::runtime::{ChildSpec, Cluster, ExitReason, Me, Restart};
use sparkyard::yarn::launcher::{Launch, LauncherRegistry, Process};
use sparkyard::yarn::node::{rm_path, start_node, wait_ready};
use sparkyard::yarn::protocol::ApplicationClientProtocol;
use sparkyard::yarn::protocol::{
    GetApplicationReport, GetContainerOutput, GetNewApplication, ReportWait, SubmitApplication,
};
use sparkyard::yarn::records::{
    ApplicationReport, ApplicationSubmissionContext, ContainerLaunchContext, FinalApplicationStatus,
    Resource, YarnApplicationState,
};

const WAIT: Duration = Duration::from_secs(10);

/// A process that exits at once with a status and a message.
struct Exits {
    me: Me,
    code: i32,
    message: String,
}

sparkyard::speaks!(Exits);

impl Actor for Exits {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let reason = ExitReason::Exit {
            code: self.code,
            message: self.message.clone(),
        };
        self.me.clone().exit(ctx, reason);
    }
}

/// `exit <code> <message words>`: exits with `code`, printing nothing; a code that is not a
/// number is refused, as a program refuses its arguments.
fn exit_program(launch: &Launch<'_>) -> Result<Process, String> {
    let args = &launch.context.command[1..];
    let code = args
        .first()
        .and_then(|c| c.parse::<i32>().ok())
        .ok_or_else(|| format!("exit: bad status {:?}", args.first()))?;
    let message = args[1..].join(" ");
    let spec = ChildSpec::worker("exit", move |_, me| Exits {
        me,
        code,
        message: message.clone(),
    })
    .restart(Restart::Temporary)
    .significant(true);
    Ok(Process::new(spec))
}

async fn node(launchers: LauncherRegistry) -> Cluster {
    sparkyard::logs::init_for_tests();
    let cluster = Cluster::builder()
        .capture_logs(true)
        .node("rmhost")
        .build()
        .unwrap();
    let nodes = [NodeSpec {
        host: "host1".into(),
        rack: "/rack1".into(),
        memory_mb: 8192,
        vcores: 8,
    }];
    start_node(&cluster, &SparkConf::new(), &nodes, &launchers, "rmhost", None).unwrap();
    wait_ready(&cluster, 1, WAIT).await.unwrap();
    cluster
}

/// Submits an application whose AM runs `command` once, and waits for its final report.
async fn run_am(cluster: &Cluster, command: &[&str]) -> ApplicationReport {
    let rm = cluster.endpoint::<ApplicationClientProtocol>(&rm_path());
    let app = rm.ask(GetNewApplication, WAIT).await.unwrap().unwrap();
    let submission = ApplicationSubmissionContext {
        app_id: app.app_id,
        name: "no spark".into(),
        queue: "default".into(),
        app_type: "YARN".into(),
        user: "tester".into(),
        max_app_attempts: Some(1),
        tags: Vec::new(),
        resource: Resource::new(1024, 1),
        am_container_spec: ContainerLaunchContext {
            command: command.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        acls: Default::default(),
    };
    rm.ask(SubmitApplication(submission), WAIT)
        .await
        .unwrap()
        .unwrap();
    let mut known = (YarnApplicationState::New, FinalApplicationStatus::Undefined);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let report = rm
            .ask(
                GetApplicationReport {
                    app_id: app.app_id,
                    wait: Some(ReportWait {
                        known,
                        max: Duration::from_secs(1),
                    }),
                },
                WAIT,
            )
            .await
            .unwrap()
            .unwrap();
        if report.state.is_final() {
            return report;
        }
        assert!(tokio::time::Instant::now() < deadline, "not final: {report:?}");
        known = (report.state, report.final_status);
    }
}

#[actix_rt::test]
async fn a_container_runs_the_program_its_command_names_and_ends_with_its_status() {
    let cluster = node(LauncherRegistry::new().register("exit", exit_program)).await;
    let report = run_am(&cluster, &["/usr/bin/exit", "3", "no", "luck"]).await;
    assert_eq!(
        (report.state, report.final_status),
        (YarnApplicationState::Failed, FinalApplicationStatus::Failed)
    );
    let container = report.am_container.unwrap();
    assert!(
        report.diagnostics.contains(&format!(
            "exited with  exitCode: 3\nFailing this attempt.Diagnostics: Exception from container-launch.\nContainer id: {container}\nExit code: 3\nno luck\nContainer exited with a non-zero exit code 3."
        )),
        "{}",
        report.diagnostics
    );
    cluster.shutdown(WAIT).await;
}

#[actix_rt::test]
async fn a_command_the_registry_cannot_start_fails_at_launch_with_exit_status_1() {
    let cluster = node(LauncherRegistry::new().register("exit", exit_program)).await;
    for (command, problem) in [
        (
            &["java", "-Xmx1g"][..],
            "cannot run 'java': containers run the exit binary",
        ),
        (&["exit", "three"][..], "exit: bad status Some(\"three\")"),
    ] {
        let report = run_am(&cluster, command).await;
        assert_eq!(report.state, YarnApplicationState::Failed, "{command:?}");
        let container = report.am_container.unwrap();
        assert!(
            report.diagnostics.contains(&format!(
                "exited with  exitCode: 1\nFailing this attempt.Diagnostics: Exception from container-launch.\nContainer id: {container}\nExit code: 1\n{problem}\nContainer exited with a non-zero exit code 1."
            )),
            "{}",
            report.diagnostics
        );
        // The process printed its problem on its stdout, which the NodeManager keeps.
        let rm = cluster.endpoint::<ApplicationClientProtocol>(&rm_path());
        let output = rm
            .ask(
                GetContainerOutput {
                    container_id: container,
                },
                WAIT,
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(output, format!("{problem}\n"));
    }
    cluster.shutdown(WAIT).await;
}
