//! Test support: what the built-in applications must print (SparkPi's estimate, JavaWordCount's
//! counts of a generated file).

use std::collections::BTreeMap;

pub fn check_pi(stdout: &str) {
    let v: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Pi is roughly "))
        .unwrap_or_else(|| panic!("no Pi line in:\n{stdout}"))
        .parse()
        .unwrap();
    assert!((v - std::f64::consts::PI).abs() < 0.01, "{v}");
}

/// A text file of words and the counts a plain count gives (words split on single spaces,
/// as Java's `split(" ")`: empty strings kept except trailing ones).
pub fn word_file() -> (tempfile::TempDir, String, BTreeMap<String, u64>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("words.txt");
    let words = [
        "spark", "yarn", "rdd", "stage", "task", "executor", "driver", "shuffle",
    ];
    let mut text = String::new();
    let mut x: u64 = 7;
    for line in 0..400 {
        let n = line % 9;
        let mut parts = Vec::new();
        for _ in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            parts.push(words[(x >> 33) as usize % words.len()]);
        }
        text.push_str(&parts.join(if line % 17 == 0 { "  " } else { " " }));
        text.push('\n');
    }
    std::fs::write(&path, &text).unwrap();
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let mut parts: Vec<&str> = line.split(' ').collect();
        while parts.last() == Some(&"") && parts.len() > 1 {
            parts.pop();
        }
        if line.is_empty() {
            parts = vec![""];
        }
        for p in parts {
            *counts.entry(p.to_string()).or_insert(0) += 1;
        }
    }
    (dir, path.to_str().unwrap().to_string(), counts)
}

pub fn check_word_count(stdout: &str, want: &BTreeMap<String, u64>) {
    let mut got = BTreeMap::new();
    for line in stdout.lines() {
        if let Some((w, n)) = line.rsplit_once(": ") {
            if let Ok(n) = n.parse::<u64>() {
                got.insert(w.to_string(), n);
            }
        }
    }
    assert_eq!(&got, want, "{stdout}");
}
