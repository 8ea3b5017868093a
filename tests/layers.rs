//! Every top-level module looks only down. From the bottom: `logs` (the log context and
//! writer every actor's records go through), `runtime`, `conf`, `rpc`, `yarn`, then the
//! Spark side: `rdd` (lineage and operations), `scheduler` (the driver's schedulers),
//! `executor`, `context` (what an application sees), `deploy` (submission and the AM), then
//! `apps`, `chaos` (fault plans of the command line) and `cli` on top. Each imports, outside
//! its test modules, only from itself and the layers under it, so there is no import cycle
//! between top-level modules, and YARN knows nothing of the Spark side (a NodeManager starts
//! containers through a launcher registry; the TCP transport knows no protocol; the
//! applications are handed down by the command line).
//!
//! No import goes up: a peer is addressed by an endpoint reference typed by the protocol it
//! speaks, declared in a layer both sides see, never by the actor behind it, so
//! [`ALLOWED_UPWARD`] is empty. Reads the source as `shared/hooks/layers.py` does: every `crate::<module>` path counts,
//! doc links included; test modules (`#[cfg(test)] mod x { .. }` and `tests.rs` files) do
//! not.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

/// Bottom first; every top-level module of the crate is in it.
const LAYERS: [&str; 13] = [
    "logs",
    "runtime",
    "conf",
    "rpc",
    "yarn",
    "rdd",
    "scheduler",
    "executor",
    "context",
    "deploy",
    "apps",
    "chaos",
    "cli",
];

/// The imports allowed to go up, as (file under `src`, module it imports): none. The last
/// two (the DriverEndpoint's `EndpointRef<CoarseGrainedExecutorBackend>`, the
/// YarnSchedulerEndpoint's `EndpointRef<AmEndpoint>`) went when references came to be typed
/// by protocol. An entry needs its reason beside it, and the test fails on one that no
/// longer matches an import.
const ALLOWED_UPWARD: &[(&str, &str)] = &[];

/// The source without its `#[cfg(test)] mod name { ... }` blocks.
fn strip_test_modules(text: &str) -> String {
    let start = Regex::new(r"#\[cfg\(test\)\]\s*(pub(\([a-z]+\))?\s+)?mod\s+\w+\s*\{").unwrap();
    let mut out = String::new();
    let mut at = 0;
    for m in start.find_iter(text) {
        if m.start() < at {
            continue;
        }
        out.push_str(&text[at..m.start()]);
        let mut depth = 1;
        let mut end = m.end();
        for (i, c) in text[m.end()..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                end = m.end() + i + 1;
                break;
            }
        }
        if depth != 0 {
            end = text.len();
        }
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The top-level modules a source names through `crate::` paths (`crate::a::b`,
/// `crate::{a, b::c}`).
fn imported_modules(text: &str) -> BTreeSet<String> {
    let path = Regex::new(r"crate::(\w+|\{[^;]*?\})").unwrap();
    let item = Regex::new(r"(?:^|[{,])\s*(\w+)").unwrap();
    let mut modules = BTreeSet::new();
    for m in path.captures_iter(text) {
        let target = &m[1];
        if target.starts_with('{') {
            for i in item.captures_iter(target) {
                modules.insert(i[1].to_string());
            }
        } else {
            modules.insert(target.to_string());
        }
    }
    modules
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules `lib.rs` declares.
fn top_level_modules(src: &Path) -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let decl = Regex::new(r"(?m)^pub mod (\w+);").unwrap();
    decl.captures_iter(&lib).map(|c| c[1].to_string()).collect()
}

/// One file's import of another top-level module.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Import {
    /// The importing file, under `src`, with `/` separators.
    file: String,
    /// The importing file's top-level module.
    from: String,
    /// The module it imports.
    to: String,
}

/// Every import between top-level modules, outside test modules (`#[cfg(test)]` blocks and
/// the `tests.rs` files of out-of-line ones); the crate's own are read once.
fn imports(src: &Path) -> Vec<Import> {
    static CRATE: OnceLock<Vec<Import>> = OnceLock::new();
    if src == self::src() {
        return CRATE.get_or_init(|| read_imports(src)).clone();
    }
    read_imports(src)
}

fn read_imports(src: &Path) -> Vec<Import> {
    let top_level = top_level_modules(src);
    let mut found = Vec::new();
    for module in &top_level {
        let mut files = Vec::new();
        let dir = src.join(module);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
        let single = src.join(format!("{module}.rs"));
        if single.is_file() {
            files.push(single);
        }
        assert!(!files.is_empty(), "no source for module {module}");
        files.sort();
        for file in files {
            if file.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let name = file
                .strip_prefix(src)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let text = strip_test_modules(&std::fs::read_to_string(&file).unwrap());
            for to in imported_modules(&text) {
                if top_level.contains(&to) && &to != module {
                    found.push(Import {
                        file: name.clone(),
                        from: module.clone(),
                        to,
                    });
                }
            }
        }
    }
    found
}

fn is_allowed(import: &Import, allowed: &[(&str, &str)]) -> bool {
    allowed
        .iter()
        .any(|(file, to)| import.file == *file && import.to == *to)
}

/// Every `file imports crate::module` that goes up (or to a module in no layer), except the
/// `allowed` ones.
fn upward_imports(src: &Path, allowed: &[(&str, &str)]) -> Vec<String> {
    let level = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut found = Vec::new();
    for import in imports(src) {
        let up = match (level(&import.from), level(&import.to)) {
            (Some(from), Some(to)) => to > from,
            _ => true,
        };
        if up && !is_allowed(&import, allowed) {
            found.push(format!(
                "{} ({}) imports crate::{}",
                import.file, import.from, import.to
            ));
        }
    }
    found
}

/// The entries of `allowed` that match no import any more.
fn stale_allowances(src: &Path, allowed: &[(&str, &str)]) -> Vec<String> {
    let found = imports(src);
    allowed
        .iter()
        .filter(|(file, to)| !found.iter().any(|i| i.file == *file && i.to == *to))
        .map(|(file, to)| format!("{file} imports crate::{to}"))
        .collect()
}

/// The cycles between top-level modules once the `allowed` imports are left out: each the
/// sorted set of modules that reach each other.
fn cycles(src: &Path, allowed: &[(&str, &str)]) -> Vec<Vec<String>> {
    let modules: Vec<String> = top_level_modules(src).into_iter().collect();
    let n = modules.len();
    let index = |m: &str| modules.iter().position(|x| x == m).unwrap();
    let mut reach = vec![vec![false; n]; n];
    for import in imports(src) {
        if !is_allowed(&import, allowed) {
            reach[index(&import.from)][index(&import.to)] = true;
        }
    }
    // Warshall's closure: reach[i][j] once any path leads from i to j.
    for k in 0..n {
        let through = reach[k].clone();
        for row in reach.iter_mut() {
            if row[k] {
                for (to, via) in row.iter_mut().zip(&through) {
                    *to |= *via;
                }
            }
        }
    }
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for (i, row) in reach.iter().enumerate() {
        if row[i] {
            let cycle = (0..n)
                .filter(|&j| row[j] && reach[j][i])
                .map(|j| modules[j].clone())
                .collect();
            found.insert(cycle);
        }
    }
    found.into_iter().collect()
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_top_level_module_has_its_layer() {
    let outside: Vec<String> = top_level_modules(&src())
        .into_iter()
        .filter(|m| !LAYERS.contains(&m.as_str()))
        .collect();
    assert!(outside.is_empty(), "modules in no layer: {outside:?}");
}

#[test]
fn every_module_imports_only_from_below() {
    let found = upward_imports(&src(), ALLOWED_UPWARD);
    assert!(
        found.is_empty(),
        "imports from a layer above:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_allowed_upward_imports_still_exist() {
    let stale = stale_allowances(&src(), ALLOWED_UPWARD);
    assert!(
        stale.is_empty(),
        "remove from ALLOWED_UPWARD what is gone:\n{}",
        stale.join("\n")
    );
}

#[test]
fn no_cycle_between_top_level_modules_but_through_the_allowed_imports() {
    let found = cycles(&src(), ALLOWED_UPWARD);
    assert!(
        found.is_empty(),
        "import cycles between top-level modules: {found:?}"
    );
}

#[test]
fn the_check_sees_paths_in_every_form_and_skips_test_modules() {
    let text = "use crate::runtime::Me;\nuse crate::{conf, yarn::records::Container};\n\
                /// See [`crate::logs::sink`].\n\
                #[cfg(test)]\nmod tests {\n    use crate::cli::roles;\n    fn f() { let _ = {1}; }\n}\n\
                fn g() -> crate::rpc::EndpointRef<()> { todo!() }\n";
    let modules = imported_modules(&strip_test_modules(text));
    let expected: BTreeSet<String> = ["conf", "logs", "rpc", "runtime", "yarn"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(modules, expected);
}

/// A crate with every layer, each an empty `mod.rs`, plus `files`.
fn fake_crate(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let lib: String = LAYERS.iter().map(|l| format!("pub mod {l};\n")).collect();
    std::fs::write(src.join("lib.rs"), lib).unwrap();
    for layer in LAYERS {
        std::fs::create_dir(src.join(layer)).unwrap();
        std::fs::write(src.join(layer).join("mod.rs"), "").unwrap();
    }
    for (file, text) in files {
        std::fs::write(src.join(file), text).unwrap();
    }
    dir
}

#[test]
fn an_upward_import_is_reported_with_its_file() {
    let dir = fake_crate(&[
        ("runtime/cell.rs", "use crate::rpc::EndpointRef;\n"),
        ("yarn/nm.rs", "use crate::cli::roles::launchers;\n"),
        (
            "context/app.rs",
            "pub fn f() { crate::apps::register_operations(); }\n",
        ),
        ("executor/tests.rs", "use crate::cli::roles;\n"),
        ("deploy/am.rs", "use crate::context::AppEnv;\n"),
    ]);
    assert_eq!(
        upward_imports(dir.path(), &[]),
        vec![
            "context/app.rs (context) imports crate::apps".to_string(),
            "runtime/cell.rs (runtime) imports crate::rpc".to_string(),
            "yarn/nm.rs (yarn) imports crate::cli".to_string(),
        ]
    );
    assert_eq!(
        upward_imports(
            dir.path(),
            &[("context/app.rs", "apps"), ("runtime/cell.rs", "rpc")]
        ),
        vec!["yarn/nm.rs (yarn) imports crate::cli".to_string()]
    );
}

#[test]
fn a_cycle_is_found_unless_an_allowed_import_closes_it_and_a_stale_allowance_is_reported() {
    let dir = fake_crate(&[
        ("scheduler/driver.rs", "use crate::executor::backend::Backend;\n"),
        (
            "executor/backend.rs",
            "use crate::scheduler::messages::LaunchTask;\n",
        ),
        ("rdd/api.rs", "use crate::rdd::ops;\n"),
    ]);
    let allowed = [
        ("scheduler/driver.rs", "executor"),
        ("scheduler/gone.rs", "deploy"),
    ];
    assert_eq!(
        cycles(dir.path(), &[]),
        vec![vec!["executor".to_string(), "scheduler".to_string()]]
    );
    assert!(cycles(dir.path(), &allowed).is_empty());
    assert_eq!(
        stale_allowances(dir.path(), &allowed),
        vec!["scheduler/gone.rs imports crate::deploy".to_string()]
    );
}

/// The files under `src` whose module head (the leading `//!` lines) does not say what layer
/// the file belongs to: the word "layer" and the name of its top-level module.
fn heads_without_their_layer(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy();
        let top = first.trim_end_matches(".rs");
        if top == "lib" || top == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let head: String = text
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .collect::<Vec<_>>()
            .join("\n")
            .to_lowercase();
        if !head.contains("layer") || !head.contains(top) {
            found.push(rel.display().to_string());
        }
    }
    found.sort();
    found
}

#[test]
fn every_module_head_says_its_layer() {
    let found = heads_without_their_layer(&src());
    assert!(
        found.is_empty(),
        "module heads that do not name their layer:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_head_without_its_layer_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("yarn")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod yarn;\n").unwrap();
    std::fs::write(src.join("yarn/mod.rs"), "//! YARN. Layer: yarn.\n").unwrap();
    std::fs::write(src.join("yarn/node.rs"), "//! A node.\n\nuse std::fmt;\n").unwrap();
    std::fs::write(src.join("yarn/rm.rs"), "use std::fmt;\n//! Layer: yarn.\n").unwrap();
    assert_eq!(heads_without_their_layer(src), vec!["yarn/node.rs", "yarn/rm.rs"]);
}
