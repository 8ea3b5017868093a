//! The layers under the Spark side look only down. From the bottom: `logs` (the log context
//! and writer every actor's records go through), `runtime`, `conf`, `rpc`, `yarn`; each
//! imports, outside its test modules, only from itself and the layers under it. So none of
//! them is in an import cycle, and YARN knows nothing of the Spark side (a NodeManager starts
//! containers through a launcher registry; the TCP transport knows no protocol). Reads the
//! source as `shared/hooks/layers.py` does: every `crate::<module>` path counts, doc links
//! included.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use regex::Regex;

/// Bottom first.
const LAYERS: [&str; 5] = ["logs", "runtime", "conf", "rpc", "yarn"];

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

/// Every `file imports crate::module` that goes up (or sideways to a layer not under it).
fn upward_imports(src: &Path) -> Vec<String> {
    let top_level: BTreeSet<String> = {
        let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
        let decl = Regex::new(r"(?m)^pub mod (\w+);").unwrap();
        decl.captures_iter(&lib).map(|c| c[1].to_string()).collect()
    };
    let mut found = Vec::new();
    for (level, layer) in LAYERS.iter().enumerate() {
        let mut files = Vec::new();
        let dir = src.join(layer);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
        let single = src.join(format!("{layer}.rs"));
        if single.is_file() {
            files.push(single);
        }
        assert!(!files.is_empty(), "no source for layer {layer}");
        for file in files {
            let text = strip_test_modules(&std::fs::read_to_string(&file).unwrap());
            for module in imported_modules(&text) {
                let allowed = LAYERS[..=level].contains(&module.as_str());
                if top_level.contains(&module) && !allowed {
                    found.push(format!(
                        "{} ({layer}) imports crate::{module}",
                        file.strip_prefix(src).unwrap().display()
                    ));
                }
            }
        }
    }
    found
}

#[test]
fn the_layers_under_the_spark_side_import_only_from_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = upward_imports(&src);
    assert!(
        found.is_empty(),
        "imports from a layer above:\n{}",
        found.join("\n")
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

#[test]
fn an_upward_import_is_reported_with_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(
        src.join("lib.rs"),
        "pub mod cli;\npub mod conf;\npub mod logs;\npub mod rpc;\npub mod runtime;\npub mod yarn;\n",
    )
    .unwrap();
    for layer in LAYERS {
        std::fs::create_dir(src.join(layer)).unwrap();
        std::fs::write(src.join(layer).join("mod.rs"), "").unwrap();
    }
    std::fs::write(src.join("runtime/cell.rs"), "use crate::rpc::EndpointRef;\n").unwrap();
    std::fs::write(src.join("yarn/nm.rs"), "use crate::cli::roles::launchers;\n").unwrap();
    assert_eq!(
        upward_imports(src),
        vec![
            "runtime/cell.rs (runtime) imports crate::rpc".to_string(),
            "yarn/nm.rs (yarn) imports crate::cli".to_string(),
        ]
    );
}
