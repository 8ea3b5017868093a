//! The pieces every page is built of: escaping, the page frame with its navigation, tables,
//! times and sizes. Every value that reaches a page goes through [`esc`].
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

use std::fmt::Write;
use std::time::{Duration, UNIX_EPOCH};

/// `text` made safe for HTML character data and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// `value` made safe for a URL's query or path segment (RFC 3986 unreserved kept).
pub fn url_part(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// The query that carries the viewer on to the next page (`?user.name=…`), or nothing.
pub fn user_query(user: Option<&str>) -> String {
    match user {
        Some(u) => format!("?user.name={}", url_part(u)),
        None => String::new(),
    }
}

/// Which part of the navigation a page belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Cluster,
    Apps,
    Nodes,
    Scheduler,
    None,
}

/// A whole page: the frame (title, navigation, stylesheet and script served by the app
/// itself) around `body`, which must already be escaped.
pub fn page(title: &str, nav: Nav, user: Option<&str>, body: &str) -> String {
    let q = user_query(user);
    let link = |href: &str, label: &str, this: Nav| {
        let class = if nav == this { " class=\"current\"" } else { "" };
        format!("<a href=\"{href}{q}\"{class}>{label}</a>")
    };
    let states = [
        "NEW",
        "SUBMITTED",
        "ACCEPTED",
        "RUNNING",
        "FINISHED",
        "FAILED",
        "KILLED",
    ];
    let mut sub = String::new();
    for s in states {
        let _ = write!(sub, "<a href=\"/cluster/apps/{s}{q}\">{s}</a>");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{t} · sparkyard</title><link rel=\"stylesheet\" href=\"/static/sparkyard.css\">\
<script src=\"/static/sparkyard.js\" defer></script></head>\n<body>\
<header class=\"top\"><a class=\"brand\" href=\"/cluster{q}\">spark<b>yard</b></a>\
<span class=\"what\">ResourceManager</span><nav>{cluster}{apps}{nodes}{scheduler}</nav>\
<span class=\"viewer\">{viewer}</span></header>\
<nav class=\"states\">{sub}</nav>\n<main><h1>{t}</h1>\n{body}\n</main>\
<footer>sparkyard {version} · <a href=\"/ws/v1/cluster/info\">REST API</a></footer></body></html>\n",
        t = esc(title),
        cluster = link("/cluster", "Cluster", Nav::Cluster),
        apps = link("/cluster/apps", "Applications", Nav::Apps),
        nodes = link("/cluster/nodes", "Nodes", Nav::Nodes),
        scheduler = link("/cluster/scheduler", "Scheduler", Nav::Scheduler),
        viewer = esc(&format!("logged in as: {}", user.unwrap_or(super::DEFAULT_USER))),
        version = esc(env!("CARGO_PKG_VERSION")),
    )
}

/// A table with a heading per column and `rows` (each cell already escaped HTML), or a
/// line saying there is nothing when there are no rows.
pub fn table(class: &str, heads: &[&str], rows: &[String], empty: &str) -> String {
    if rows.is_empty() {
        return format!("<p class=\"empty {class}\">{}</p>", esc(empty));
    }
    let mut s = format!("<table class=\"grid {class}\"><thead><tr>");
    for h in heads {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>");
    for r in rows {
        s.push_str(r);
    }
    s.push_str("</tbody></table>");
    s
}

/// One row of cells already escaped, with the row's attributes (`class=…`, `data-…`).
pub fn row(attrs: &str, cells: &[String]) -> String {
    let mut s = format!("<tr{}{attrs}>", if attrs.is_empty() { "" } else { " " });
    for c in cells {
        let _ = write!(s, "<td>{c}</td>");
    }
    s.push_str("</tr>");
    s
}

/// A key/value box (YARN's "info" block): each value already escaped.
pub fn info(class: &str, pairs: &[(&str, String)]) -> String {
    let mut s = format!("<dl class=\"info {class}\">");
    for (k, v) in pairs {
        let _ = write!(s, "<dt>{}</dt><dd>{v}</dd>", esc(k));
    }
    s.push_str("</dl>");
    s
}

/// Text that may run long (a container's diagnostics, a stderr tail): its first
/// [`SHORT_TEXT`] characters, the whole behind a disclosure.
pub fn long_text(text: &str) -> String {
    if text.chars().count() <= SHORT_TEXT {
        return esc(text);
    }
    let head: String = text.chars().take(SHORT_TEXT).collect();
    format!(
        "<details class=\"long\"><summary>{}…</summary><code>{}</code></details>",
        esc(&head),
        esc(text)
    )
}

/// How much of a long text a table shows before its disclosure.
pub const SHORT_TEXT: usize = 160;

/// A time that does not wrap.
pub fn nowrap(text: &str) -> String {
    format!("<span class=\"nowrap\">{}</span>", esc(text))
}

/// A state as a coloured badge.
pub fn badge(state: &str) -> String {
    let class: String = state
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("<span class=\"badge s-{class}\">{}</span>", esc(state))
}

/// Epoch milliseconds as a UTC time to the second, or `N/A` for 0.
pub fn time_ms(ms: u64) -> String {
    if ms == 0 {
        return "N/A".into();
    }
    let t = UNIX_EPOCH + Duration::from_millis(ms);
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace('T', " ")
        .replace('Z', "")
}

/// Epoch milliseconds (signed, as the records give them) as a UTC time of day with ms.
pub fn time_of_day(ms: i64) -> String {
    let Ok(ms) = u64::try_from(ms) else {
        return "N/A".into();
    };
    let t = UNIX_EPOCH + Duration::from_millis(ms);
    let s = humantime::format_rfc3339_millis(t).to_string();
    s.split('T')
        .nth(1)
        .unwrap_or(&s)
        .trim_end_matches('Z')
        .to_string()
}

/// A span of milliseconds, as "1m 5s" or "350ms".
pub fn elapsed(ms: u64) -> String {
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = ms / 1000;
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{}.{}s", s, ms % 1000 / 100),
        (0, _) => format!("{m}m {s}s"),
        _ => format!("{h}h {m}m {s}s"),
    }
}

/// Megabytes as "2 GB" or "512 MB".
pub fn mb(mb: u64) -> String {
    if mb >= 1024 && mb.is_multiple_of(1024) {
        format!("{} GB", mb / 1024)
    } else if mb >= 1024 {
        format!("{:.1} GB", mb as f64 / 1024.0)
    } else {
        format!("{mb} MB")
    }
}

/// A bar of `used` out of `total`, with its text.
pub fn meter(used: u64, total: u64, text: &str) -> String {
    let pct = (used.min(total) * 100).checked_div(total).unwrap_or(0);
    format!(
        "<span class=\"meter\" title=\"{t}\"><span class=\"fill\" style=\"width:{pct}%\"></span></span> <span class=\"meter-text\">{t}</span>",
        t = esc(text)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_special_character_is_escaped() {
        assert_eq!(
            esc("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(esc("a\u{1}b"), "a\u{FFFD}b");
        assert_eq!(url_part("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }

    #[test]
    fn times_sizes_and_spans_read_well() {
        assert_eq!(time_ms(0), "N/A");
        assert_eq!(time_ms(1_700_000_000_000), "2023-11-14 22:13:20");
        assert_eq!(time_of_day(1_700_000_000_250), "22:13:20.250");
        assert_eq!(time_of_day(-5), "N/A");
        assert_eq!(elapsed(350), "350ms");
        assert_eq!(elapsed(2_500), "2.5s");
        assert_eq!(elapsed(65_000), "1m 5s");
        assert_eq!(elapsed(3_725_000), "1h 2m 5s");
        assert_eq!(mb(512), "512 MB");
        assert_eq!(mb(2048), "2 GB");
        assert_eq!(mb(1536), "1.5 GB");
    }

    #[test]
    fn long_text_is_cut_with_the_whole_behind_a_disclosure() {
        assert_eq!(long_text("<short>"), "&lt;short&gt;");
        let long = format!("{}<x>", "a".repeat(SHORT_TEXT));
        let shown = long_text(&long);
        assert!(
            shown.starts_with(&format!(
                "<details class=\"long\"><summary>{}…</summary>",
                "a".repeat(SHORT_TEXT)
            )),
            "{shown}"
        );
        assert!(shown.contains("&lt;x&gt;</code>"), "{shown}");
    }

    #[test]
    fn a_page_escapes_its_title_and_viewer() {
        let p = page("<b>", Nav::Apps, Some("<u>"), "");
        assert!(p.contains("<h1>&lt;b&gt;</h1>"), "{p}");
        assert!(p.contains("logged in as: &lt;u&gt;"), "{p}");
        assert!(
            p.contains("href=\"/cluster/apps?user.name=%3Cu%3E\" class=\"current\""),
            "{p}"
        );
        assert!(!p.contains("http"), "no external fetch: {p}");
    }
}
