//! Fault injection as sparkyard's users ask for it: which actors can be killed (the list
//! the fault-injection suite and actors.md share), and fault plans from the configuration
//! of an embedded run:
//!
//! Layer: chaos (fault plans from the configuration, above apps).
//!
//! - `spark.sparkyard.chaos.plan=<glob>@<k>[:panic],...`: kill what matches `<glob>` once
//!   the k-th task of the run has finished (as a stop, or as a panic with `:panic`);
//! - `spark.sparkyard.chaos.seed=<n>`: a seeded random plan of `spark.sparkyard.chaos.kills`
//!   kills (3) of actors drawn from `spark.sparkyard.chaos.targets` (by default every
//!   killable actor that exists in a run of this configuration: [`killable_in`]), each after
//!   a number of finished tasks drawn from `1..=spark.sparkyard.chaos.tasks` (10), killing
//!   one of the matching actors. The plan is a pure function of these settings, so anyone
//!   can replay a failing seed; and when a kill fires while its target restarts, it waits
//!   for the new incarnation (`Cluster::run_plan`), so a replay kills the same actors.

use crate::conf::{self, SparkConf};
use crate::runtime::{FaultError, FaultPlan, KillMode, PathGlob, PlannedFault, Span, Trigger};

/// One killable actor of a running application: a glob that finds it, its type, and where
/// it lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Killable {
    pub glob: &'static str,
    pub actor_type: &'static str,
}

/// Every named actor of a running application that fault injection aims at, in tree order
/// (actors.md describes what a kill of each does).
pub const KILLABLE: &[Killable] = &[
    Killable {
        glob: "/submit/spark-submit",
        actor_type: "SparkSubmit",
    },
    Killable {
        glob: "/submit/client",
        actor_type: "Client",
    },
    Killable {
        glob: "/node/rm",
        actor_type: "ResourceManager",
    },
    Killable {
        glob: "/node/nm-*/node-manager",
        actor_type: "NodeManager",
    },
    Killable {
        glob: "*/am/application-master",
        actor_type: "ApplicationMaster",
    },
    Killable {
        glob: "*/am/am-endpoint",
        actor_type: "AmEndpoint",
    },
    Killable {
        glob: "*/am/allocator",
        actor_type: "YarnAllocator",
    },
    Killable {
        glob: "*/am/reporter",
        actor_type: "Reporter",
    },
    Killable {
        glob: "*/am/launcher",
        actor_type: "ContainerLauncher",
    },
    Killable {
        glob: "*/driver/driver-endpoint",
        actor_type: "DriverEndpoint",
    },
    Killable {
        glob: "*/driver/yarn-scheduler-endpoint",
        actor_type: "YarnSchedulerEndpoint",
    },
    Killable {
        glob: "*/driver/dag-scheduler",
        actor_type: "DAGScheduler",
    },
    Killable {
        glob: "*/driver/revive-timer",
        actor_type: "ReviveTimer",
    },
    Killable {
        glob: "*/driver/speculation-timer",
        actor_type: "SpeculationTimer",
    },
    Killable {
        glob: "*/driver/executor-allocation-manager",
        actor_type: "ExecutorAllocationManager",
    },
    Killable {
        glob: "*/driver/heartbeat-receiver",
        actor_type: "HeartbeatReceiver",
    },
    Killable {
        glob: "*/driver/listener-bus",
        actor_type: "LiveListenerBus",
    },
    Killable {
        glob: "/node/nm-*/container_*/executor-*",
        actor_type: "CoarseGrainedExecutorBackend",
    },
    Killable {
        glob: "/node/nm-*/container_*/process",
        actor_type: "ContainerProcess",
    },
    Killable {
        glob: "*/driver/barrier-coordinator",
        actor_type: "BarrierCoordinator",
    },
];

/// The globs of [`KILLABLE`].
pub fn killable_globs() -> Vec<&'static str> {
    KILLABLE.iter().map(|k| k.glob).collect()
}

/// The killable actors that exist in a run of `c`: the YARN Client only in cluster mode
/// (client mode has none), the speculation timer only with `spark.speculation=true`, the
/// allocation manager only with dynamic allocation, a container's process only with
/// `spark.sparkyard.containers=process`.
pub fn killable_in(c: &SparkConf) -> Vec<&'static str> {
    let cluster_mode = c.get(&conf::SUBMIT_DEPLOY_MODE) == Ok("cluster");
    let processes = c.get(&conf::CONTAINERS).ok().flatten().as_deref() == Some("process");
    let speculation = c.get(&conf::SPECULATION_ENABLED).unwrap_or(false);
    let dynamic_allocation = c.get(&conf::DYN_ALLOCATION_ENABLED).unwrap_or(false);
    KILLABLE
        .iter()
        .filter(|k| match k.actor_type {
            "Client" => cluster_mode,
            "SpeculationTimer" => speculation,
            "ExecutorAllocationManager" => dynamic_allocation,
            "ContainerProcess" => processes,
            _ => true,
        })
        .map(|k| k.glob)
        .collect()
}

/// A problem with a chaos setting: one line naming the key and the value.
fn bad(key: &str, value: &str, why: impl std::fmt::Display) -> String {
    format!("invalid value '{value}' for {key}: {why}")
}

/// Parses an explicit plan: `<glob>@<k>[:panic]` entries separated by commas; each kills
/// every match once k tasks have finished.
pub fn parse_plan(text: &str) -> Result<FaultPlan, String> {
    let key = conf::CHAOS_PLAN.name();
    let mut faults = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (target, rest) = entry
            .rsplit_once('@')
            .ok_or_else(|| bad(key, entry, "expected <glob>@<finished tasks>[:panic]"))?;
        let (count, mode) = match rest.split_once(':') {
            Some((n, m)) => (n, m.parse::<KillMode>().map_err(|e| bad(key, entry, e))?),
            None => (rest, KillMode::Stop),
        };
        let after: u64 = count
            .trim()
            .parse()
            .map_err(|_| bad(key, entry, format!("'{count}' is not a number of finished tasks")))?;
        PathGlob::parse(target.trim()).map_err(|e| bad(key, entry, e))?;
        faults.push(PlannedFault {
            when: Trigger::AfterTasks(after),
            target: target.trim().to_string(),
            mode,
            pick: None,
        });
    }
    if faults.is_empty() {
        return Err(bad(key, text, "no kill given"));
    }
    FaultPlan::new(faults).map_err(|e| e.to_string())
}

/// The fault plan an embedded run's configuration asks for, if any (an explicit plan
/// first, then a seeded one).
pub fn plan_from_conf(c: &SparkConf) -> Result<Option<FaultPlan>, String> {
    if let Some(text) = c.get(&conf::CHAOS_PLAN).map_err(|e| e.to_string())? {
        return parse_plan(&text).map(Some);
    }
    let Some(seed) = c.get(&conf::CHAOS_SEED).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let kills = c.get(&conf::CHAOS_KILLS).map_err(|e| e.to_string())?;
    let tasks = c.get(&conf::CHAOS_TASKS).map_err(|e| e.to_string())?;
    let targets: Vec<String> = match c.get(&conf::CHAOS_TARGETS).map_err(|e| e.to_string())? {
        Some(list) if !list.is_empty() => list,
        _ => killable_in(c).into_iter().map(str::to_string).collect(),
    };
    let refs: Vec<&str> = targets.iter().map(String::as_str).collect();
    FaultPlan::seeded(seed, &refs, kills as usize, Span::Tasks(u64::from(tasks)))
        .map(Some)
        .map_err(|e| match e {
            FaultError::BadPattern(p) => bad(conf::CHAOS_TARGETS.name(), &targets.join(","), p),
            other => other.to_string(),
        })
}

/// One line per planned kill, for the console and the logs.
pub fn describe(plan: &FaultPlan) -> Vec<String> {
    plan.faults
        .iter()
        .map(|f| {
            format!(
                "{} {}{} {}",
                f.mode,
                f.target,
                if f.pick.is_some() {
                    " (one of the matches)"
                } else {
                    ""
                },
                f.when
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_plans_parse_and_bad_ones_name_the_problem() {
        let p = parse_plan("*/am/allocator@5, /submit/client@2:panic").unwrap();
        assert_eq!(
            p.faults,
            vec![
                PlannedFault {
                    when: Trigger::AfterTasks(2),
                    target: "/submit/client".into(),
                    mode: KillMode::Panic,
                    pick: None
                },
                PlannedFault {
                    when: Trigger::AfterTasks(5),
                    target: "*/am/allocator".into(),
                    mode: KillMode::Stop,
                    pick: None
                },
            ]
        );
        for (text, needle) in [
            ("*/allocator", "expected <glob>@<finished tasks>"),
            ("*/allocator@x", "'x' is not a number"),
            ("*/allocator@3:maim", "unknown kill mode 'maim'"),
            ("allocator@3", "allocator"),
            ("", "no kill given"),
        ] {
            let e = parse_plan(text).unwrap_err();
            assert!(
                e.contains("spark.sparkyard.chaos.plan") && e.contains(needle),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn a_seeded_plan_is_a_pure_function_of_the_settings() {
        let mut c = SparkConf::new();
        assert_eq!(plan_from_conf(&c), Ok(None));
        c.set("spark.sparkyard.chaos.seed", "7");
        let a = plan_from_conf(&c).unwrap().unwrap();
        assert_eq!(a, plan_from_conf(&c).unwrap().unwrap());
        assert_eq!(a.faults.len(), 3);
        assert!(a
            .faults
            .iter()
            .all(|f| killable_in(&c).contains(&f.target.as_str()) && f.pick.is_some()));
        assert!(a
            .faults
            .iter()
            .all(|f| matches!(f.when, Trigger::AfterTasks(n) if (1..=10).contains(&n))));
        c.set("spark.sparkyard.chaos.kills", "5")
            .set("spark.sparkyard.chaos.targets", "*/am/allocator");
        let b = plan_from_conf(&c).unwrap().unwrap();
        assert_eq!(b.faults.len(), 5);
        assert!(b.faults.iter().all(|f| f.target == "*/am/allocator"));
        c.set("spark.sparkyard.chaos.targets", "no slash");
        assert!(plan_from_conf(&c)
            .unwrap_err()
            .contains("spark.sparkyard.chaos.targets"));
        // An explicit plan wins over the seed.
        c.set("spark.sparkyard.chaos.plan", "/node/rm@1");
        assert_eq!(plan_from_conf(&c).unwrap().unwrap().faults.len(), 1);
    }

    #[test]
    fn seeded_plans_draw_only_actors_that_exist_in_the_run() {
        let mut c = SparkConf::new();
        let client = killable_in(&c);
        for absent in [
            "/submit/client",
            "*/driver/speculation-timer",
            "*/driver/executor-allocation-manager",
            "/node/nm-*/container_*/process",
        ] {
            assert!(!client.contains(&absent), "{absent}");
        }
        assert_eq!(client.len(), KILLABLE.len() - 4);
        c.set("spark.submit.deployMode", "cluster")
            .set("spark.speculation", "true")
            .set("spark.dynamicAllocation.enabled", "true")
            .set("spark.sparkyard.containers", "process");
        assert_eq!(killable_in(&c), killable_globs());
        // Over many seeds, a client-mode plan never names the Client.
        let mut c = SparkConf::new();
        c.set("spark.sparkyard.chaos.kills", "20");
        for seed in 0..50 {
            c.set("spark.sparkyard.chaos.seed", seed.to_string());
            let plan = plan_from_conf(&c).unwrap().unwrap();
            assert!(plan.faults.iter().all(|f| client.contains(&f.target.as_str())));
        }
    }

    #[test]
    fn every_killable_glob_is_valid() {
        for k in KILLABLE {
            PathGlob::parse(k.glob).unwrap();
        }
    }
}
