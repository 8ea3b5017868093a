//! What the command line says to a person: clap's errors as one full line (the flag they
//! concern and clap's suggestion kept), `sparkyard help <command>`, shell completions, and
//! the built-in applications with a "did you mean" for a near miss of a class name.
//!
//! Layer: cli (the top).

use std::ffi::OsString;
use std::io::Write;

/// A clap error as one line, without clap's `error: ` prefix: its first line, the values
/// clap lists under it (the required arguments not provided, the accepted values) joined
/// after it, and clap's tips in parentheses, e.g. `the following required arguments were
/// not provided: --for <DURATION>`.
pub fn clap_error_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let mut head = String::new();
    let mut listed: Vec<String> = Vec::new();
    let mut tips: Vec<String> = Vec::new();
    for line in rendered.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("Usage:") || trimmed.starts_with("For more information") {
            break;
        }
        if trimmed.is_empty() {
            continue;
        }
        if head.is_empty() {
            head = trimmed.trim_start_matches("error: ").trim().to_string();
        } else if trimmed.starts_with("tip: ") {
            tips.push(trimmed.to_string());
        } else {
            listed.push(trimmed.to_string());
        }
    }
    if head.is_empty() {
        head = "invalid command line".to_string();
    }
    if !listed.is_empty() {
        let sep = if head.ends_with(':') { " " } else { ": " };
        head = format!("{head}{sep}{}", listed.join(", "));
    }
    for tip in tips {
        head = format!("{head} ({tip})");
    }
    head
}

/// The command a clap error concerns, from its usage line (`sparkyard chaos partition`),
/// for the `see '… --help'` pointer; `sparkyard` when the error has none.
pub fn clap_error_command(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let usage = rendered
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .unwrap_or("sparkyard");
    let words: Vec<&str> = usage
        .split_whitespace()
        .take_while(|w| !w.starts_with(['-', '<', '[']))
        .collect();
    if words.is_empty() {
        "sparkyard".to_string()
    } else {
        words.join(" ")
    }
}

/// `sparkyard help [COMMAND...]` as the command line it stands for: the command's `--help`.
pub fn help_args(program: OsString, command: &[String]) -> Vec<OsString> {
    let mut args = vec![program];
    args.extend(command.iter().map(OsString::from));
    args.push("--help".into());
    args
}

/// Writes the completion script of `shell` for the command line `cmd`.
pub fn completions(shell: clap_complete::Shell, cmd: &mut clap::Command, out: &mut dyn Write) {
    clap_complete::generate(shell, cmd, "sparkyard", out);
}

/// The list of built-in applications `sparkyard submit --help` ends with.
pub fn applications_help(names: &[String]) -> String {
    let mut text = String::from(
        "\nBuilt-in applications (--class NAME with any primary resource, or NAME as the primary resource):\n",
    );
    for name in names {
        text.push_str("  ");
        text.push_str(name);
        text.push('\n');
    }
    text
}

/// The registered class nearest to `class` when it is a near miss: a small edit away from a
/// whole name, or from a name's last segment (`SparkPi` for
/// `org.apache.spark.examples.SparkPi`), compared without case. None for an exact match.
pub fn nearest_class<'a>(class: &str, names: &'a [String]) -> Option<&'a str> {
    if names.iter().any(|n| n == class) {
        return None;
    }
    let lower = class.to_lowercase();
    let simple = lower.rsplit('.').next().unwrap_or(&lower);
    let mut best: Option<(usize, &str)> = None;
    for name in names {
        let cand = name.to_lowercase();
        let cand_simple = cand.rsplit('.').next().unwrap_or(&cand);
        let whole = strsim::damerau_levenshtein(&lower, &cand);
        let short = strsim::damerau_levenshtein(simple, cand_simple);
        let close = |d: usize, len: usize| d <= (len / 4).clamp(1, 3);
        let distance = if close(whole, cand.chars().count()) {
            whole
        } else if close(short, cand_simple.chars().count()) {
            short
        } else {
            continue;
        };
        if best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, name.as_str()));
        }
    }
    best.map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        [
            "org.apache.spark.examples.SparkPi",
            "org.apache.spark.examples.JavaWordCount",
            "sparkyard.examples.MapCount",
            "sparkyard.examples.SleepTasks",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    #[test]
    fn near_misses_of_a_class_name() {
        let n = names();
        assert_eq!(
            nearest_class("org.apache.spark.examples.SparkPie", &n),
            Some("org.apache.spark.examples.SparkPi")
        );
        assert_eq!(
            nearest_class("SparkPi", &n),
            Some("org.apache.spark.examples.SparkPi")
        );
        assert_eq!(
            nearest_class("org.example.sleeptask", &n),
            Some("sparkyard.examples.SleepTasks")
        );
        assert_eq!(nearest_class("sparkyard.examples.MapCount", &n), None);
        assert_eq!(nearest_class("com.example.Nope", &n), None);
    }

    #[test]
    fn the_application_list_names_every_class() {
        let text = applications_help(&names());
        for n in names() {
            assert!(text.contains(&format!("  {n}\n")), "{text}");
        }
    }
}
