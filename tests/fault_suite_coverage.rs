//! The fault-injection suite covers every killable actor, and its list matches actors.md:
//! each actor of `sparkyard::chaos::KILLABLE` has a section in actors.md that says what a
//! single kill and a kill beyond its restart intensity do, and at least two tests of the
//! suite (tests/fault_suite_*.rs) aim at its glob (killed once, killed beyond intensity);
//! every actor actors.md describes is killable or says why not.

use std::collections::BTreeSet;

use sparkyard::chaos::KILLABLE;
use sparkyard::runtime::PathGlob;

fn read(rel: &str) -> String {
    let path = format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// actors.md's actor sections: (type, text).
fn sections() -> Vec<(String, String)> {
    let text = read("actors.md");
    let every = text
        .split("## Every actor")
        .nth(1)
        .expect("an 'Every actor' part");
    every
        .split("\n### ")
        .skip(1)
        .map(|s| {
            let name = s.split([' ', '\n']).next().unwrap_or("").to_string();
            (name, s.to_string())
        })
        .collect()
}

/// Actors actors.md describes that fault injection does not aim at, and why.
const NOT_KILLED: &[(&str, &str)] = &[
    (
        "Supervisor",
        "supervisors are killed through their children's escalation (and the NM node by its path)",
    ),
    (
        "ClientRmService",
        "only in `sparkyard node`; the controls run through it",
    ),
    ("The", "the TaskSchedulerImpl is not an actor"),
    (
        "ConsoleProgressBar",
        "it runs only with stderr a terminal; tests/progress.rs kills it on a pseudo-terminal",
    ),
    (
        "RmWebApp",
        "only where the web app is served; the REST API and web UI tests drive it, and a kill restarts it on the same listener",
    ),
];

#[test]
fn every_killable_actor_has_its_section_in_actors_md() {
    let sections = sections();
    for k in KILLABLE {
        let (_, text) = sections
            .iter()
            .find(|(name, _)| name == k.actor_type)
            .unwrap_or_else(|| panic!("actors.md has no section for {}", k.actor_type));
        for needle in ["**Single kill**", "**Beyond intensity**", k.glob] {
            assert!(
                text.contains(needle),
                "actors.md's section on {} does not say {needle}",
                k.actor_type
            );
        }
    }
    let killable: BTreeSet<&str> = KILLABLE.iter().map(|k| k.actor_type).collect();
    for (name, _) in &sections {
        assert!(
            killable.contains(name.as_str()) || NOT_KILLED.iter().any(|(n, _)| n == name),
            "actors.md describes {name}, which is neither killable nor excused"
        );
    }
}

/// The quoted paths and globs in a test's body.
fn targets(body: &str) -> Vec<&str> {
    body.split('"')
        .skip(1)
        .step_by(2)
        .filter(|t| (t.starts_with('/') || t.starts_with("*/")) && !t.contains(' '))
        .collect()
}

#[test]
fn every_killable_actor_is_killed_once_and_beyond_intensity_by_the_suite() {
    let dir = format!("{}/tests", env!("CARGO_MANIFEST_DIR"));
    // (test name, its body) of every test of the suite.
    let mut tests: Vec<(String, String)> = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap().filter_map(Result::ok) {
        let file = entry.file_name().to_string_lossy().to_string();
        if file.starts_with("fault_suite_") && file.ends_with(".rs") && file != "fault_suite_coverage.rs" {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            // Tests are `#[test]` (through the binary) or `#[actix_rt::test]`.
            let bodies = text.split("\n#[").skip(1).filter_map(|chunk| {
                chunk
                    .strip_prefix("test]")
                    .or_else(|| chunk.strip_prefix("actix_rt::test]"))
            });
            for body in bodies {
                let name = body
                    .split("fn ")
                    .nth(1)
                    .and_then(|t| t.split('(').next())
                    .unwrap_or("")
                    .to_string();
                tests.push((name, body.to_string()));
            }
        }
    }
    for k in KILLABLE {
        let glob = PathGlob::parse(k.glob).unwrap();
        let aiming: Vec<&str> = tests
            .iter()
            .filter(|(_, body)| targets(body).iter().any(|t| glob.matches(t)))
            .map(|(name, _)| name.as_str())
            .collect();
        assert!(
            aiming.iter().any(|n| !n.contains("beyond")) && aiming.iter().any(|n| n.contains("beyond")),
            "the suite must kill {} ({}) once and beyond its intensity; tests aiming at it: {aiming:?}",
            k.actor_type,
            k.glob
        );
    }
}
