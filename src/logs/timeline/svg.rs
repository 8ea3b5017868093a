//! [`render_svg`]: a [`Timeline`] as one self-contained SVG picture (its style inside it, no
//! scripts, no links): a time axis; a band of jobs and one of stages; one lane per executor,
//! labelled with its id and host, with its tasks as bars coloured by outcome and its
//! registration and removal marked; and every kill, failure, restart and escalation as a
//! marker at its time, on the executor lane it concerns or on a row of its actor in the
//! actors band, with a `<title>` tooltip naming the actor's path and the reason.
//!
//! Elements a browser test can find: `<g class="lane" data-executor="1" data-attempt="1"
//! data-host="…">` per executor, `<rect class="task success|failed|killed|running"
//! data-task="…">`, `<g class="job …">`, `<g class="stage …">`, `<line
//! class="executor-added|executor-removed">`, and `<g class="mark <kind>" data-kind="<kind>"
//! data-actor="<path>">` per mark (kinds as [`MarkKind::as_str`] spells them: `kill`,
//! `failure`, `restart`, `escalation`, `executor-lost`, …).
//!
//! Bounded: a timeline holds at most [`super::MAX_TASKS`] bars; jobs, stages and a lane's
//! tasks stack into at most a few rows (overlaps beyond them share the last row), at most
//! [`MAX_ACTOR_ROWS`] actors get a row, and every text is cut to a bounded length.
//!
//! Layer: logs, the bottom layer.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, UNIX_EPOCH};

use super::model::{Mark, MarkKind, Timeline};

/// The picture's width in pixels.
pub const WIDTH: i64 = 1400;
/// The most actors that get a row of their own in the actors band.
pub const MAX_ACTOR_ROWS: usize = 40;

const LEFT: i64 = 230;
const RIGHT: i64 = 30;
const MAX_JOB_ROWS: usize = 4;
const MAX_STAGE_ROWS: usize = 8;
const MAX_TASK_ROWS: usize = 8;
const TASK_ROW: i64 = 7;
const BAND_ROW: i64 = 16;
const ACTOR_ROW: i64 = 22;
/// The longest label drawn, in characters.
const MAX_LABEL: usize = 200;

const STYLE: &str = "\
text{font-family:sans-serif;font-size:11px;fill:#222}\
.title{font-size:14px;font-weight:bold}\
.note{fill:#a33}\
.axis line{stroke:#999}.axis text{fill:#555;font-size:10px}\
.band-label,.lane-label{font-weight:bold}\
.lane-bg{fill:#f6f6f6;stroke:#ddd}\
.band-bg{fill:#fbfbfb;stroke:#eee}\
.job rect{fill:#9db7d6;stroke:#4a6f9c}.stage rect{fill:#c7d9ea;stroke:#6f8fb4}\
.job.failed rect,.stage.failed rect{fill:#e8a3a1;stroke:#b33}\
.job.running rect,.stage.running rect{fill:#dfeef8;stroke-dasharray:3 2}\
.job text,.stage text{font-size:9px}\
.task{stroke:none}.task.success{fill:#5cb85c}.task.failed{fill:#d9534f}\
.task.killed{fill:#f0ad4e}.task.running{fill:#5bc0de}\
.executor-added{stroke:#2a8a2a;stroke-width:2}.executor-removed{stroke:#b33;stroke-width:2}\
.mark path,.legend-mark path{stroke:#222;stroke-width:0.7}\
.kill path{fill:#d00}.kill-skipped path{fill:#bbb}.partition path{fill:#36c}\
.failure path{fill:#f60}.restart path{fill:#2a2}.escalation path{fill:#80c}\
.executor-lost path{fill:#a50}.attempt-failed path{fill:#700}\
.actor-row line{stroke:#eee}";

/// Text made safe for XML character data and attribute values: the five special
/// characters escaped, characters XML does not allow replaced, cut to `max` characters.
fn esc(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max) + 8);
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(' '),
            c if (c as u32) < 0x20 || matches!(c, '\u{FFFE}' | '\u{FFFF}') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// An id attribute's value: only letters, digits, `-` and `_`.
fn id_part(text: &str) -> String {
    text.chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The time axis: milliseconds to x.
struct Scale {
    t0: i64,
    t1: i64,
}

impl Scale {
    fn x(&self, t: i64) -> i64 {
        let span = (self.t1 - self.t0).max(1) as i128;
        let w = (WIDTH - LEFT - RIGHT) as i128;
        let d = (t.clamp(self.t0, self.t1) - self.t0) as i128;
        LEFT + (d * w / span) as i64
    }

    /// `x` of the start and the width (at least 1) of a span that may still run.
    fn bar(&self, start: i64, end: Option<i64>) -> (i64, i64) {
        let x0 = self.x(start);
        let x1 = self.x(end.unwrap_or(self.t1));
        (x0, (x1 - x0).max(1))
    }
}

/// A time as UTC, to the millisecond.
fn clock(ms: i64) -> String {
    if ms < 0 {
        return format!("{ms} ms");
    }
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms as u64)).to_string()
}

/// A duration for the axis and tooltips: "850 ms", "12.4 s", "3 min 05 s".
fn dur(ms: i64) -> String {
    if ms < 1_000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} min {:02} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// Greedy rows: each span goes in the first row free at its start; past `max` rows, in the
/// row that frees first. Answers each span's row and the number of rows.
fn pack(spans: &[(i64, i64)], max: usize) -> (Vec<usize>, usize) {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| spans[i].0);
    let mut ends: Vec<i64> = Vec::new();
    let mut row = vec![0; spans.len()];
    for i in order {
        let (s, e) = spans[i];
        let r = match ends.iter().position(|&end| end <= s) {
            Some(r) => r,
            None if ends.len() < max => {
                ends.push(i64::MIN);
                ends.len() - 1
            }
            None => (0..ends.len()).min_by_key(|&r| ends[r]).unwrap_or(0),
        };
        ends[r] = ends[r].max(e);
        row[i] = r;
    }
    let rows = ends.len().max(1);
    (row, rows)
}

/// A marker's outline around (0, 0): a star-like cross for a kill, an octagon for a
/// failure, a triangle for a restart, a diamond for an escalation, a square otherwise.
fn shape(kind: MarkKind) -> &'static str {
    match kind {
        MarkKind::Kill | MarkKind::KillSkipped => {
            "M-2,-5L0,-3L2,-5L5,-2L3,0L5,2L2,5L0,3L-2,5L-5,2L-3,0L-5,-2Z"
        }
        MarkKind::Failure | MarkKind::AttemptFailed => "M-2,-5L2,-5L5,-2L5,2L2,5L-2,5L-5,2L-5,-2Z",
        MarkKind::Restart => "M0,-5L5,4L-5,4Z",
        MarkKind::Escalation => "M0,-6L6,0L0,6L-6,0Z",
        MarkKind::ExecutorLost | MarkKind::Partition => "M-4,-4L4,-4L4,4L-4,4Z",
    }
}

/// Draws the marks of one row around `y`: marks that would cover each other are moved up
/// and down, and kills come last so that they are drawn on top.
fn marks_row(out: &mut String, marks: &[&Mark], scale: &Scale, y: i64, spread: i64) {
    let mut sorted: Vec<&Mark> = marks.to_vec();
    sorted.sort_by_key(|m| (m.kind == MarkKind::Kill, m.at));
    let mut placed: Vec<(i64, i64)> = Vec::new();
    for m in sorted {
        let x = scale.x(m.at);
        let offsets = [0, -spread, spread];
        let dy = offsets
            .iter()
            .copied()
            .find(|dy| !placed.iter().any(|&(px, py)| (px - x).abs() < 10 && py == y + dy))
            .unwrap_or(0);
        placed.push((x, y + dy));
        mark(out, m, x, y + dy, scale.t0);
    }
}

/// One marker: its shape at (x, y), with a tooltip.
fn mark(out: &mut String, m: &Mark, x: i64, y: i64, t0: i64) {
    let kind = m.kind.as_str();
    let shape = shape(m.kind);
    let incarnation = m.incarnation.map(|i| format!("#{i}")).unwrap_or_default();
    let title = format!(
        "{kind}: {}{incarnation} at {} (+{}): {}",
        m.actor,
        clock(m.at),
        dur(m.at - t0),
        m.text
    );
    let _ = writeln!(
        out,
        "<g class=\"mark {kind}\" data-kind=\"{kind}\" data-actor=\"{}\" data-at=\"{}\" transform=\"translate({x},{y})\"><title>{}</title><path d=\"{shape}\"/></g>",
        esc(&m.actor, MAX_LABEL),
        m.at,
        esc(&title, 600)
    );
}

/// A bar's label, drawn only when it fits inside the bar (about 6 px a character).
fn label_inside(label: &str, x: i64, w: i64, y: i64) -> String {
    if (label.chars().count() as i64) * 6 + 4 > w {
        return String::new();
    }
    format!("<text x=\"{}\" y=\"{y}\">{}</text>", x + 2, esc(label, MAX_LABEL))
}

/// The axis ticks: a round step giving about ten ticks over `span` ms.
fn tick_step(span: i64) -> i64 {
    const STEPS: [i64; 19] = [
        1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000,
        300_000, 600_000,
    ];
    STEPS
        .iter()
        .copied()
        .find(|s| span / s <= 12)
        .unwrap_or_else(|| (span / 12 / 600_000 + 1) * 600_000)
}

/// Draws `t` as a self-contained SVG document.
pub fn render_svg(t: &Timeline) -> String {
    let t0 = t.start;
    let t1 = t.end.unwrap_or(t.last).max(t0 + 1);
    let scale = Scale { t0, t1 };
    let mut body = String::new();
    let mut y: i64 = 20;

    // Title and summary.
    let state = match (&t.final_state, t.end) {
        (Some(s), _) => match &t.final_status {
            Some(f) => format!("{s}, final status {f}"),
            None => s.clone(),
        },
        (None, Some(_)) => "ended".to_string(),
        (None, None) => "running (or its logs end before it did)".to_string(),
    };
    let _ = writeln!(
        body,
        "<text class=\"title\" x=\"10\" y=\"{y}\">Timeline of {}: {}</text>",
        esc(&t.app_id, MAX_LABEL),
        esc(&state, MAX_LABEL)
    );
    y += 18;
    let _ = writeln!(
        body,
        "<text class=\"summary\" x=\"10\" y=\"{y}\">from {} to {} ({}): {} executors, {} jobs, {} stages, {} tasks, {} marks, {} actors</text>",
        clock(t0),
        clock(t1),
        dur(t1 - t0),
        t.executors.len(),
        t.jobs.len(),
        t.stages.len(),
        t.tasks.len() as u64 + t.tasks_dropped,
        t.marks.len(),
        t.actors.len()
    );
    let dropped = [
        (t.tasks_dropped, "task bars"),
        (t.marks_dropped, "marks"),
        (t.jobs_dropped, "jobs"),
        (t.stages_dropped, "stages"),
    ];
    for (n, what) in dropped {
        if n > 0 {
            y += 15;
            let _ = writeln!(
                body,
                "<text class=\"note dropped\" x=\"10\" y=\"{y}\">The oldest {n} {what} are not drawn: a timeline keeps only the newest.</text>"
            );
        }
    }
    for (n, what) in [(t.executors_dropped, "executors"), (t.actors_dropped, "actors")] {
        if n > 0 {
            y += 15;
            let _ = writeln!(
                body,
                "<text class=\"note dropped\" x=\"10\" y=\"{y}\">{n} more {what} are not drawn: a timeline keeps a bounded number.</text>"
            );
        }
    }
    y += 14;

    // The axis; its ticks are drawn down the whole picture once its height is known.
    let axis_y = y + 12;
    let step = tick_step(t1 - t0);
    y = axis_y + 10;

    // Jobs.
    let band = |body: &mut String, y: &mut i64, class: &str, label: &str, rows: usize| {
        let h = rows as i64 * BAND_ROW + 6;
        let _ = writeln!(
            body,
            "<g class=\"band {class}-band\"><rect class=\"band-bg\" x=\"{LEFT}\" y=\"{}\" width=\"{}\" height=\"{h}\"/><text class=\"band-label\" x=\"10\" y=\"{}\">{label}</text></g>",
            *y,
            WIDTH - LEFT - RIGHT,
            *y + 14
        );
        let top = *y + 3;
        *y += h + 6;
        top
    };
    let spans: Vec<(i64, i64)> = t.jobs.iter().map(|j| (j.start, j.end.unwrap_or(t1))).collect();
    let (rows, n) = pack(&spans, MAX_JOB_ROWS);
    let top = band(&mut body, &mut y, "jobs", "Jobs", n);
    for (j, row) in t.jobs.iter().zip(rows) {
        let (x, w) = scale.bar(j.start, j.end);
        let ry = top + row as i64 * BAND_ROW;
        let took = j
            .end
            .map(|e| dur(e - j.start))
            .unwrap_or_else(|| "running".into());
        let _ = writeln!(
            body,
            "<g class=\"job {}\" data-job=\"{}\" data-attempt=\"{}\"><title>Job {} (attempt {}): {} — {}, {took}</title><rect x=\"{x}\" y=\"{ry}\" width=\"{w}\" height=\"{}\"/>{}</g>",
            j.outcome.as_str(),
            j.id,
            j.attempt,
            j.id,
            j.attempt,
            esc(&j.name, MAX_LABEL),
            j.outcome.as_str(),
            BAND_ROW - 3,
            label_inside(&format!("Job {}", j.id), x, w, ry + 10)
        );
    }

    // Stages.
    let spans: Vec<(i64, i64)> = t.stages.iter().map(|s| (s.start, s.end.unwrap_or(t1))).collect();
    let (rows, n) = pack(&spans, MAX_STAGE_ROWS);
    let top = band(&mut body, &mut y, "stages", "Stages", n);
    for (s, row) in t.stages.iter().zip(rows) {
        let (x, w) = scale.bar(s.start, s.end);
        let ry = top + row as i64 * BAND_ROW;
        let took = s
            .end
            .map(|e| dur(e - s.start))
            .unwrap_or_else(|| "running".into());
        let job = s.job_id.map(|j| format!(", job {j}")).unwrap_or_default();
        let _ = writeln!(
            body,
            "<g class=\"stage {}\" data-stage=\"{}\" data-stage-attempt=\"{}\" data-attempt=\"{}\"><title>Stage {}.{} (attempt {}{job}): {}, {} tasks — {}, {took}</title><rect x=\"{x}\" y=\"{ry}\" width=\"{w}\" height=\"{}\"/>{}</g>",
            s.outcome.as_str(),
            s.id,
            s.stage_attempt,
            s.attempt,
            s.id,
            s.stage_attempt,
            s.attempt,
            esc(&s.name, MAX_LABEL),
            s.tasks,
            s.outcome.as_str(),
            BAND_ROW - 3,
            label_inside(&format!("{}.{}", s.id, s.stage_attempt), x, w, ry + 10)
        );
    }

    // Executor lanes, with their tasks and marks.
    let mut tasks_of: BTreeMap<(u32, &str), Vec<usize>> = BTreeMap::new();
    for (i, b) in t.tasks.iter().enumerate() {
        tasks_of
            .entry((b.attempt, b.executor_id.as_str()))
            .or_default()
            .push(i);
    }
    let mut marks_of: BTreeMap<(u32, &str), Vec<&Mark>> = BTreeMap::new();
    let mut actor_marks: BTreeMap<&str, Vec<&Mark>> = BTreeMap::new();
    let lanes: std::collections::HashSet<(u32, &str)> =
        t.executors.iter().map(|e| (e.attempt, e.id.as_str())).collect();
    for m in &t.marks {
        match m.executor_id.as_deref() {
            Some(e) if lanes.contains(&(m.attempt, e)) => marks_of.entry((m.attempt, e)).or_default().push(m),
            _ => actor_marks.entry(m.actor.as_str()).or_default().push(m),
        }
    }
    let _ = writeln!(
        body,
        "<text class=\"band-label\" x=\"10\" y=\"{}\">Executors</text>",
        y + 11
    );
    y += 16;
    for e in &t.executors {
        let key = (e.attempt, e.id.as_str());
        let bars = tasks_of.get(&key).map(Vec::as_slice).unwrap_or(&[]);
        let spans: Vec<(i64, i64)> = bars
            .iter()
            .map(|&i| (t.tasks[i].start, t.tasks[i].end.unwrap_or(t1)))
            .collect();
        let (rows, n) = pack(&spans, MAX_TASK_ROWS);
        let marks = marks_of.get(&key).map(Vec::as_slice).unwrap_or(&[]);
        let h = (n as i64 * TASK_ROW + 8).max(if marks.is_empty() { 26 } else { 36 });
        let _ = writeln!(
            body,
            "<g class=\"lane\" id=\"lane-{}-{}\" data-executor=\"{}\" data-attempt=\"{}\" data-host=\"{}\">",
            e.attempt,
            id_part(&e.id),
            esc(&e.id, MAX_LABEL),
            e.attempt,
            esc(&e.host, MAX_LABEL)
        );
        let attempt = if t.executors.iter().any(|o| o.attempt != 1) {
            format!(" [attempt {}]", e.attempt)
        } else {
            String::new()
        };
        let container = e.container_id.as_deref().unwrap_or("container unknown");
        let _ = writeln!(
            body,
            "<rect class=\"lane-bg\" x=\"{LEFT}\" y=\"{y}\" width=\"{}\" height=\"{h}\"/><text class=\"lane-label\" x=\"10\" y=\"{}\">executor {} ({}){attempt}<title>executor {} on {}, {}: {} tasks</title></text>",
            WIDTH - LEFT - RIGHT,
            y + 15,
            esc(&e.id, 40),
            esc(&e.host, 60),
            esc(&e.id, MAX_LABEL),
            esc(&e.host, MAX_LABEL),
            esc(container, MAX_LABEL),
            e.tasks
        );
        for (&i, row) in bars.iter().zip(rows) {
            let b = &t.tasks[i];
            let (x, w) = scale.bar(b.start, b.end);
            let by = y + 4 + row as i64 * TASK_ROW;
            let took = b
                .end
                .map(|end| dur(end - b.start))
                .unwrap_or_else(|| "running".into());
            let reason = b
                .reason
                .as_deref()
                .map(|r| format!(": {}", esc(r, 400)))
                .unwrap_or_default();
            let _ = writeln!(
                body,
                "<rect class=\"task {}\" data-task=\"{}\" x=\"{x}\" y=\"{by}\" width=\"{w}\" height=\"{}\"><title>task {} (stage {}.{}, partition {}) on executor {}: {}, {took}{reason}</title></rect>",
                b.outcome.as_str(),
                b.id,
                TASK_ROW - 1,
                b.id,
                b.stage_id,
                b.stage_attempt,
                b.index,
                esc(&b.executor_id, 40),
                b.outcome.as_str()
            );
        }
        if let Some(at) = e.added {
            let x = scale.x(at);
            let _ = writeln!(
                body,
                "<line class=\"executor-added\" x1=\"{x}\" x2=\"{x}\" y1=\"{y}\" y2=\"{}\"><title>executor {} added on {} at {}</title></line>",
                y + h,
                esc(&e.id, 40),
                esc(&e.host, 60),
                clock(at)
            );
        }
        if let Some(at) = e.removed {
            let x = scale.x(at);
            let _ = writeln!(
                body,
                "<line class=\"executor-removed\" x1=\"{x}\" x2=\"{x}\" y1=\"{y}\" y2=\"{}\"><title>executor {} removed at {}: {}</title></line>",
                y + h,
                esc(&e.id, 40),
                clock(at),
                esc(e.removed_reason.as_deref().unwrap_or(""), 400)
            );
        }
        marks_row(&mut body, marks, &scale, y + h / 2, 9);
        body.push_str("</g>\n");
        y += h + 3;
    }

    // Actors with marks that belong on no lane.
    if !actor_marks.is_empty() {
        y += 8;
        let _ = writeln!(
            body,
            "<text class=\"band-label\" x=\"10\" y=\"{}\">Actors</text>",
            y + 11
        );
        y += 16;
        let rows = actor_marks.len();
        for (i, (actor, marks)) in actor_marks.into_iter().enumerate() {
            if i == MAX_ACTOR_ROWS {
                let _ = writeln!(
                    body,
                    "<text class=\"note\" x=\"10\" y=\"{}\">and {} more actors with marks, not drawn</text>",
                    y + 12,
                    rows - MAX_ACTOR_ROWS
                );
                y += ACTOR_ROW;
                break;
            }
            // The end of a long path is what tells actors apart.
            let chars: Vec<char> = actor.chars().collect();
            let label: String = if chars.len() > 36 {
                format!("…{}", chars[chars.len() - 35..].iter().collect::<String>())
            } else {
                actor.to_string()
            };
            let _ = writeln!(
                body,
                "<g class=\"actor-row\" data-actor=\"{}\"><line x1=\"{LEFT}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/><text x=\"10\" y=\"{}\">{}<title>{}</title></text>",
                esc(actor, MAX_LABEL),
                WIDTH - RIGHT,
                y + ACTOR_ROW / 2,
                y + ACTOR_ROW / 2,
                y + 13,
                esc(&label, 60),
                esc(actor, MAX_LABEL)
            );
            marks_row(&mut body, &marks, &scale, y + ACTOR_ROW / 2, 5);
            body.push_str("</g>\n");
            y += ACTOR_ROW;
        }
    }

    // Legend.
    y += 22;
    let legend: [(&str, &str); 4] = [
        ("task success", "succeeded"),
        ("task failed", "failed"),
        ("task killed", "killed"),
        ("task running", "running"),
    ];
    let mut x = LEFT;
    body.push_str("<g class=\"legend\">");
    for (class, label) in legend {
        let _ = write!(
            body,
            "<rect class=\"{class}\" x=\"{x}\" y=\"{}\" width=\"12\" height=\"8\"/><text x=\"{}\" y=\"{}\">{label}</text>",
            y - 8,
            x + 16,
            y
        );
        x += 90;
    }
    for kind in [
        MarkKind::Kill,
        MarkKind::Failure,
        MarkKind::Restart,
        MarkKind::Escalation,
        MarkKind::ExecutorLost,
        MarkKind::Partition,
    ] {
        let _ = write!(
            body,
            "<g class=\"legend-mark {}\" transform=\"translate({},{})\"><path d=\"{}\"/></g><text x=\"{}\" y=\"{}\">{}</text>",
            kind.as_str(),
            x + 5,
            y - 4,
            shape(kind),
            x + 14,
            y,
            kind.as_str()
        );
        x += 100;
    }
    body.push_str("</g>\n");
    let height = y + 12;

    // The axis and its ticks, now that the height is known.
    let mut axis = String::new();
    let _ = write!(
        axis,
        "<g class=\"axis\"><line x1=\"{LEFT}\" x2=\"{}\" y1=\"{axis_y}\" y2=\"{axis_y}\"/>",
        WIDTH - RIGHT
    );
    let mut tick = 0;
    while t0 + tick <= t1 {
        let x = scale.x(t0 + tick);
        let _ = write!(
            axis,
            "<line x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\" stroke-opacity=\"0.3\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">+{}</text>",
            axis_y,
            height - 20,
            axis_y - 3,
            dur(tick)
        );
        tick += step;
    }
    axis.push_str("</g>\n");

    let mut svg = String::with_capacity(body.len() + axis.len() + STYLE.len() + 300);
    let _ = writeln!(
        svg,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" data-app=\"{}\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\">",
        esc(&t.app_id, MAX_LABEL)
    );
    let _ = writeln!(svg, "<style>{STYLE}</style>");
    let _ = writeln!(
        svg,
        "<rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"#fff\"/>"
    );
    svg.push_str(&axis);
    svg.push_str(&body);
    svg.push_str("</svg>\n");
    svg
}

/// The picture's counts, for the line `sparkyard logs --timeline` prints.
pub fn summary(t: &Timeline) -> String {
    let mut s = format!(
        "{} executor lanes, {} tasks, {} marks",
        t.executors.len(),
        t.tasks.len(),
        t.marks.len()
    );
    if t.tasks_dropped > 0 {
        let _ = write!(s, " ({} older task bars not drawn)", t.tasks_dropped);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_bounded() {
        assert_eq!(esc("a<b>&\"c'", 100), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(esc("x\u{1}y\nz", 100), "x\u{FFFD}y z");
        assert_eq!(esc("abcdef", 3), "abc…");
        assert_eq!(id_part("1 <x>"), "1__x_");
    }

    #[test]
    fn spans_pack_into_rows_bounded() {
        let (rows, n) = pack(&[(0, 10), (5, 15), (10, 20), (12, 13)], 8);
        assert_eq!(n, 3);
        assert_eq!(rows, [0, 1, 0, 2]);
        let (rows, n) = pack(&[(0, 10), (1, 10), (2, 10)], 2);
        assert_eq!(n, 2);
        assert_eq!(rows.len(), 3);
    }

    fn sample() -> Timeline {
        use crate::logs::timeline::{ExecutorLane, Outcome, TaskBar};
        let lane = |id: &str, host: &str| ExecutorLane {
            attempt: 1,
            id: id.into(),
            host: host.into(),
            container_id: None,
            added: Some(1_000),
            removed: None,
            removed_reason: None,
            tasks: 1,
        };
        let bar = |id: u64, exec: &str, outcome| TaskBar {
            attempt: 1,
            id,
            stage_id: 0,
            stage_attempt: 0,
            index: id,
            executor_id: exec.into(),
            host: "h".into(),
            start: 1_100,
            end: (outcome != Outcome::Running).then_some(1_500),
            outcome,
            reason: None,
        };
        let m = |kind, actor: &str, exec: Option<&str>| Mark {
            at: 1_300,
            kind,
            actor: actor.into(),
            text: "killed by <chaos> & \"friends\"".into(),
            incarnation: Some(1),
            container_id: None,
            executor_id: exec.map(str::to_string),
            attempt: 1,
        };
        Timeline {
            app_id: "application_1_0001".into(),
            start: 1_000,
            last: 2_000,
            executors: vec![lane("1", "host<1>"), lane("2", "host2")],
            tasks: vec![
                bar(0, "1", Outcome::Succeeded),
                bar(1, "1", Outcome::Failed),
                bar(2, "2", Outcome::Killed),
                bar(3, "2", Outcome::Running),
            ],
            marks: vec![
                m(MarkKind::Kill, "/node/nm-h/container_1/executor-1", Some("1")),
                m(MarkKind::Restart, "/node/rm", None),
                m(MarkKind::Escalation, "/node/a&b", None),
            ],
            tasks_dropped: 7,
            ..Timeline::default()
        }
    }

    #[test]
    fn the_picture_is_well_formed_with_its_lanes_bars_and_marks() {
        let svg = render_svg(&sample());
        let doc = crate::logs::timeline::xml::parse(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
        let all = doc.descendants();
        let with = |class: &str| -> Vec<&crate::logs::timeline::xml::Element> {
            all.iter()
                .copied()
                .filter(|e| {
                    let classes: Vec<&str> = e.attr("class").unwrap_or("").split_whitespace().collect();
                    class.split(' ').all(|c| classes.contains(&c))
                })
                .collect()
        };
        let lanes: Vec<(&str, &str)> = with("lane")
            .iter()
            .map(|e| (e.attr("data-executor").unwrap(), e.attr("data-host").unwrap()))
            .collect();
        assert_eq!(lanes, [("1", "host<1>"), ("2", "host2")]);
        assert_eq!(with("task").len(), 4 + 4, "four bars and four legend swatches");
        assert_eq!(with("task killed").len(), 2);
        let kills = with("mark kill");
        assert_eq!(kills.len(), 1);
        assert_eq!(
            kills[0].attr("data-actor"),
            Some("/node/nm-h/container_1/executor-1")
        );
        let title = &kills[0].children[0];
        assert_eq!(title.name, "title");
        assert!(
            title.text.contains("/node/nm-h/container_1/executor-1#1"),
            "{}",
            title.text
        );
        assert!(
            title.text.contains("killed by <chaos> & \"friends\""),
            "{}",
            title.text
        );
        // The kill is on executor 1's lane; the others on their actors' rows.
        let lane1 = with("lane")[0];
        assert_eq!(
            lane1
                .descendants()
                .iter()
                .filter(|e| e.attr("data-kind") == Some("kill"))
                .count(),
            1
        );
        let rows: Vec<&str> = with("actor-row")
            .iter()
            .map(|e| e.attr("data-actor").unwrap())
            .collect();
        assert_eq!(rows, ["/node/a&b", "/node/rm"]);
        assert_eq!(with("mark escalation").len(), 1);
        assert_eq!(with("mark restart").len(), 1);
        // The bound is said on the picture.
        assert!(svg.contains("The oldest 7 task bars are not drawn"), "{svg}");
    }

    #[test]
    fn an_empty_timeline_still_draws() {
        let svg = render_svg(&Timeline::default());
        assert!(crate::logs::timeline::xml::parse(&svg).is_ok(), "{svg}");
    }

    #[test]
    fn ticks_are_round_and_few() {
        assert_eq!(tick_step(1_000), 100);
        assert_eq!(tick_step(12_000), 1_000);
        assert!(tick_step(10 * 3_600_000) >= 3_000_000);
    }
}
