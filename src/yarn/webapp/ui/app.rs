//! `/cluster/app/{id}`: one application's page. Its report, attempts and containers come from
//! the ResourceManager (under the view ACLs); its executors, jobs, stages, faults and the
//! history of its actors from its structured records (a [`TimelineReader`] kept per
//! application in [`super::UiState`]); for a running application the live actors of the
//! node's cluster join that history in the supervision tree. While the application runs, the
//! page's script replaces the sections with `/cluster/app/{id}/sections` every 2 s, until a
//! fragment says the application is final.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

use std::collections::BTreeMap;
use std::fmt::Write;

use actix_web::{http::StatusCode, web, HttpRequest, HttpResponse};

use super::html::{
    badge, elapsed, esc, info, long_text, mb, nowrap, row, table, time_ms, time_of_day, user_query, Nav,
};
use super::{ask, html_page, problem, viewer};
use crate::logs::timeline::{render_svg, Timeline};
use crate::runtime::registry::ActorInfo;
use crate::yarn::client_service;
use crate::yarn::protocol::{
    AdminRequest, AdminResponse, ApplicationAttemptReport, ClientRequest, ClientResponse, ContainerReport,
    GetApplicationReport, GetApplications, GetContainers, YarnError,
};
use crate::yarn::records::{ApplicationId, ApplicationReport, ContainerState, YarnApplicationState};
use crate::yarn::webapp::WebState;

/// The most jobs, stages and marks a page lists (the newest).
pub const MAX_ROWS: usize = 200;

/// What the page shows of one application.
struct AppView {
    report: ApplicationReport,
    attempts: Vec<ApplicationAttemptReport>,
    containers: Vec<ContainerReport>,
    /// The node's live actors of the application (running applications only).
    live: Vec<ActorInfo>,
}

/// Why there is no page: the answer to send instead.
type Refusal = HttpResponse;

/// Reads the application `raw` names, as `user` may see it, or the page that says why not:
/// a malformed id (400), an unknown application (404), a viewer without VIEW_APP (403).
async fn load(state: &WebState, user: Option<&str>, raw: &str) -> Result<AppView, Refusal> {
    let app_id: ApplicationId = match raw.parse() {
        Ok(id) => id,
        Err(_) => {
            tracing::debug!(app = raw, "Web UI: invalid application id {raw:?}");
            return Err(problem(
                StatusCode::BAD_REQUEST,
                "Bad request",
                user,
                &format!("Invalid Application ID: {raw}"),
            ));
        }
    };
    let report = match ask(
        state,
        user,
        ClientRequest::GetApplicationReport(GetApplicationReport { app_id, wait: None }),
    )
    .await
    {
        ClientResponse::ApplicationReport(Ok(r)) => r,
        ClientResponse::ApplicationReport(Err(YarnError::ApplicationNotFound(_))) => {
            return Err(problem(
                StatusCode::NOT_FOUND,
                "Not found",
                user,
                &format!("Application not found: {app_id}"),
            ))
        }
        ClientResponse::ApplicationReport(Err(e @ YarnError::AccessControl(_))) => {
            tracing::info!(app_id = %app_id, user = user.unwrap_or(super::DEFAULT_USER), "Web UI: {e}");
            return Err(problem(
                StatusCode::FORBIDDEN,
                "Access denied",
                user,
                &e.to_string(),
            ));
        }
        other => {
            return Err(super::rm_failed(
                user,
                &format!("the application {app_id}"),
                other,
            ))
        }
    };
    let attempts = match ask(
        state,
        user,
        ClientRequest::GetApplications(GetApplications {
            states: vec![report.state],
            types: Vec::new(),
        }),
    )
    .await
    {
        ClientResponse::Applications(listed) => listed
            .into_iter()
            .find(|l| l.report.app_id == app_id)
            .map(|l| l.attempts)
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let mut containers = Vec::new();
    for a in &attempts {
        if let ClientResponse::Containers(Ok(c)) = ask(
            state,
            user,
            ClientRequest::GetContainers(GetContainers {
                attempt_id: a.attempt_id,
            }),
        )
        .await
        {
            containers.extend(c);
        }
    }
    let live = if report.state.is_final() {
        Vec::new()
    } else {
        match client_service::serve_admin(&state.cluster, AdminRequest::ListActors { app: Some(app_id) })
            .await
        {
            AdminResponse::Actors(a) => a,
            _ => Vec::new(),
        }
    };
    Ok(AppView {
        report,
        attempts,
        containers,
        live,
    })
}

/// `/cluster/app/{id}`: the whole page.
pub async fn page(state: web::Data<WebState>, req: HttpRequest, path: web::Path<String>) -> HttpResponse {
    let user = viewer(&req);
    let user = user.as_deref();
    let raw = path.into_inner();
    let view = match load(&state, user, &raw).await {
        Ok(v) => v,
        Err(refusal) => return refusal,
    };
    let body = render_sections(&state, &view, user);
    let title = format!("Application {}", view.report.app_id);
    html_page(StatusCode::OK, super::html::page(&title, Nav::Apps, user, &body))
}

/// `/cluster/app/{id}/sections`: the part of the page that changes while it runs.
pub async fn sections(state: web::Data<WebState>, req: HttpRequest, path: web::Path<String>) -> HttpResponse {
    let user = viewer(&req);
    let user = user.as_deref();
    let raw = path.into_inner();
    match load(&state, user, &raw).await {
        Ok(view) => html_page(StatusCode::OK, render_sections(&state, &view, user)),
        Err(refusal) => refusal,
    }
}

/// `/cluster/app/{id}/timeline.svg`: the event timeline alone.
pub async fn timeline_svg(
    state: web::Data<WebState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> HttpResponse {
    let user = viewer(&req);
    let user = user.as_deref();
    let raw = path.into_inner();
    let view = match load(&state, user, &raw).await {
        Ok(v) => v,
        Err(refusal) => return refusal,
    };
    let id = view.report.app_id.to_string();
    let Some(dir) = state.log_dir.as_deref() else {
        return problem(
            StatusCode::NOT_FOUND,
            "No timeline",
            user,
            &format!("No timeline for {id}: the node keeps no log directory (--log-dir)."),
        );
    };
    match state.ui.with_reader(dir, &id, |r| r.refresh().map(render_svg)) {
        Ok(svg) => HttpResponse::Ok()
            .content_type("image/svg+xml; charset=utf-8")
            .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
            .body(svg),
        Err(e) => problem(
            StatusCode::NOT_FOUND,
            "No timeline",
            user,
            &format!("No timeline for {id}: {e}"),
        ),
    }
}

/// The page's changing part, wrapped in the element its script replaces.
fn render_sections(state: &WebState, view: &AppView, user: Option<&str>) -> String {
    let id = view.report.app_id.to_string();
    let final_ = view.report.state.is_final();
    format!(
        "<div id=\"app-sections\" data-app=\"{id}\" data-state=\"{st}\" data-final=\"{final_}\" data-refresh=\"/cluster/app/{id}/sections{q}\">{inner}</div>",
        id = esc(&id),
        st = view.report.state,
        q = esc(&user_query(user)),
        inner = inner_sections(state, view, user),
    )
}

fn inner_sections(state: &WebState, view: &AppView, user: Option<&str>) -> String {
    let id = view.report.app_id.to_string();
    let from_records = match state.log_dir.as_deref() {
        None => {
            Err("the node keeps no log directory (--log-dir), so there are no records to read".to_string())
        }
        Some(dir) => state
            .ui
            .with_reader(dir, &id, |r| r.refresh().map(|t| from_timeline(t, view))),
    };
    let mut s = overview(view);
    match from_records {
        Ok((picture, tables)) => {
            s.push_str(&picture);
            s.push_str(&attempts(view));
            s.push_str(&containers(view));
            s.push_str(&tables);
        }
        Err(e) => {
            s.push_str(&attempts(view));
            s.push_str(&containers(view));
            let _ = write!(
                s,
                "<section class=\"card records\"><h2>Executors, jobs, stages and timeline</h2><p class=\"empty\">Nothing from the application's records yet: {}</p></section>",
                esc(&e)
            );
            s.push_str(&supervision(&view.live, None));
        }
    }
    let _ = user;
    s
}

/// YARN's application overview.
fn overview(view: &AppView) -> String {
    let r = &view.report;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let end = if r.finish_time > 0 { r.finish_time } else { now };
    let state = match r.state {
        YarnApplicationState::New => "NEW: waiting for application to be initialized".to_string(),
        YarnApplicationState::NewSaving => {
            "NEW_SAVING: waiting for application to be persisted in state-store.".to_string()
        }
        YarnApplicationState::Submitted => {
            "SUBMITTED: waiting for application to be accepted by scheduler.".to_string()
        }
        YarnApplicationState::Accepted => {
            "ACCEPTED: waiting for AM container to be allocated, launched and register with RM.".to_string()
        }
        YarnApplicationState::Running => {
            "RUNNING: AM has registered with RM and started running.".to_string()
        }
        s => s.to_string(),
    };
    let final_status = match r.final_status {
        crate::yarn::records::FinalApplicationStatus::Undefined => {
            "Application has not completed yet.".to_string()
        }
        s => s.to_string(),
    };
    let live = if r.state.is_final() {
        String::new()
    } else {
        "<span class=\"live\">live: updates every 2 s</span>".to_string()
    };
    let tracking = match r.tracking_url.as_deref() {
        Some(u) if !u.is_empty() && u != client_service::UNAVAILABLE => esc(u),
        _ => "Unassigned".to_string(),
    };
    let am_host = match (&r.host, r.rpc_port) {
        (Some(h), Some(p)) if p > 0 => format!("{h}:{p}"),
        (Some(h), _) => h.clone(),
        _ => "N/A".into(),
    };
    let box_ = info(
        "overview",
        &[
            ("User:", esc(&r.user)),
            ("Name:", esc(&r.name)),
            ("Application Type:", esc(&r.app_type)),
            ("Queue:", esc(&r.queue)),
            (
                "YarnApplicationState:",
                format!("{} {}", badge(&r.state.to_string()), esc(&state)),
            ),
            (
                "FinalStatus Reported by AM:",
                format!("{} {}", badge(&r.final_status.to_string()), esc(&final_status)),
            ),
            ("Started:", esc(&time_ms(r.start_time))),
            ("Elapsed:", esc(&elapsed(end.saturating_sub(r.start_time)))),
            ("ApplicationMaster:", format!("<code>{}</code>", esc(&am_host))),
            ("Tracking URL:", tracking),
            ("Diagnostics:", long_text(&r.diagnostics)),
        ],
    );
    format!("<section class=\"card overview\"><h2>Application Overview{live}</h2>{box_}</section>")
}

fn attempts(view: &AppView) -> String {
    let rows: Vec<String> = view
        .attempts
        .iter()
        .rev()
        .map(|a| {
            row(
                &format!("class=\"attempt\" data-attempt=\"{}\"", a.attempt_id.attempt),
                &[
                    format!("<code>{}</code>", esc(&a.attempt_id.to_string())),
                    badge(&a.state),
                    a.am_container
                        .map(|c| format!("<code>{}</code>", esc(&c.to_string())))
                        .unwrap_or_else(|| "N/A".into()),
                    esc(a.host.as_deref().unwrap_or("N/A")),
                    long_text(&a.diagnostics),
                ],
            )
        })
        .collect();
    format!(
        "<section class=\"card attempts\"><h2>Application Attempts</h2>{}</section>",
        table(
            "attempts",
            &["Attempt ID", "State", "AM Container", "AM Host", "Diagnostics"],
            &rows,
            "No attempt has started."
        )
    )
}

fn containers(view: &AppView) -> String {
    let rows: Vec<String> = view
        .containers
        .iter()
        .map(|c| {
            let state = match c.state {
                ContainerState::New => "NEW",
                ContainerState::Running => "RUNNING",
                ContainerState::Complete => "COMPLETE",
            };
            let am = view
                .attempts
                .iter()
                .any(|a| a.am_container == Some(c.container_id));
            row(
                &format!(
                    "class=\"container\" data-container=\"{}\" data-host=\"{}\" data-state=\"{state}\"",
                    esc(&c.container_id.to_string()),
                    esc(&c.host)
                ),
                &[
                    format!(
                        "<code>{}</code>{}",
                        esc(&c.container_id.to_string()),
                        if am {
                            " <span class=\"flag restart\">AM</span>"
                        } else {
                            ""
                        }
                    ),
                    format!("<code>{}</code>", esc(&c.host)),
                    badge(state),
                    esc(&format!(
                        "{}, {} vcores",
                        mb(c.resource.memory_mb),
                        c.resource.vcores
                    )),
                    nowrap(&time_ms(c.start_time)),
                    nowrap(&time_ms(c.finish_time)),
                    c.exit_status.map(|e| e.to_string()).unwrap_or_default(),
                    long_text(&c.diagnostics),
                ],
            )
        })
        .collect();
    format!(
        "<section class=\"card containers\"><h2>Containers</h2>{}</section>",
        table(
            "containers",
            &[
                "Container ID",
                "Host",
                "State",
                "Resource",
                "Started",
                "Finished",
                "Exit status",
                "Diagnostics"
            ],
            &rows,
            "No container has been granted."
        )
    )
}

/// What the records tell: the timeline picture, then executors, jobs, stages, faults and
/// the supervision tree.
fn from_timeline(t: &Timeline, view: &AppView) -> (String, String) {
    let mut s = String::new();
    // Executors.
    let rows: Vec<String> = t
        .executors
        .iter()
        .map(|e| {
            let state = if e.removed.is_some() { "REMOVED" } else { "ACTIVE" };
            row(
                &format!(
                    "class=\"executor\" data-executor=\"{}\" data-attempt=\"{}\" data-state=\"{state}\"",
                    esc(&e.id),
                    e.attempt
                ),
                &[
                    esc(&e.id),
                    e.attempt.to_string(),
                    format!("<code>{}</code>", esc(&e.host)),
                    format!("<code>{}</code>", esc(e.container_id.as_deref().unwrap_or(""))),
                    badge(state),
                    esc(&e.added.map(time_of_day).unwrap_or_default()),
                    esc(&e.removed.map(time_of_day).unwrap_or_default()),
                    long_text(e.removed_reason.as_deref().unwrap_or("")),
                    e.tasks.to_string(),
                ],
            )
        })
        .collect();
    let _ = write!(
        s,
        "<section class=\"card executors\"><h2>Executors</h2>{}</section>",
        table(
            "executors",
            &[
                "Executor",
                "Attempt",
                "Host",
                "Container",
                "State",
                "Added",
                "Removed",
                "Reason",
                "Tasks"
            ],
            &rows,
            "No executor has registered yet."
        )
    );
    // Jobs and stages, newest first.
    let span = |start: i64, end: Option<i64>| match end {
        Some(e) => elapsed(u64::try_from(e - start).unwrap_or(0)),
        None => format!("{} so far", elapsed(u64::try_from(t.last - start).unwrap_or(0))),
    };
    let rows: Vec<String> = t
        .jobs
        .iter()
        .rev()
        .take(MAX_ROWS)
        .map(|j| {
            row(
                &format!("class=\"job-row\" data-job=\"{}\"", j.id),
                &[
                    j.id.to_string(),
                    j.attempt.to_string(),
                    esc(&j.name),
                    esc(&time_of_day(j.start)),
                    esc(&span(j.start, j.end)),
                    badge(j.outcome.as_str()),
                ],
            )
        })
        .collect();
    let _ = write!(
        s,
        "<section class=\"card jobs\"><h2>Jobs</h2>{}</section>",
        table(
            "jobs",
            &["Job", "Attempt", "Description", "Submitted", "Duration", "Status"],
            &rows,
            "No job has started yet."
        )
    );
    let rows: Vec<String> = t
        .stages
        .iter()
        .rev()
        .take(MAX_ROWS)
        .map(|st| {
            row(
                &format!("class=\"stage-row\" data-stage=\"{}\"", st.id),
                &[
                    format!("{}.{}", st.id, st.stage_attempt),
                    st.job_id.map(|j| j.to_string()).unwrap_or_default(),
                    esc(&st.name),
                    st.tasks.to_string(),
                    esc(&time_of_day(st.start)),
                    esc(&span(st.start, st.end)),
                    badge(st.outcome.as_str()),
                ],
            )
        })
        .collect();
    let _ = write!(
        s,
        "<section class=\"card stages\"><h2>Stages</h2>{}</section>",
        table(
            "stages",
            &[
                "Stage",
                "Job",
                "Description",
                "Tasks",
                "Submitted",
                "Duration",
                "Status"
            ],
            &rows,
            "No stage has started yet."
        )
    );
    // Faults and recoveries.
    let rows: Vec<String> = t
        .marks
        .iter()
        .rev()
        .take(MAX_ROWS)
        .map(|m| {
            row(
                &format!("class=\"fault\" data-kind=\"{}\"", m.kind.as_str()),
                &[
                    esc(&time_of_day(m.at)),
                    badge(m.kind.as_str()),
                    format!("<code>{}</code>", esc(&m.actor)),
                    long_text(&m.text),
                ],
            )
        })
        .collect();
    let _ = write!(
        s,
        "<section class=\"card faults\"><h2>Faults and recoveries</h2>{}</section>",
        table(
            "faults",
            &["At", "What", "Actor", "Record"],
            &rows,
            "No kill, failure or restart."
        )
    );
    s.push_str(&supervision(&view.live, Some(t)));
    let svg = render_svg(t);
    let svg = match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg.as_str(),
    };
    let id = esc(&view.report.app_id.to_string());
    let picture = format!(
        "<section class=\"card timeline-card\"><h2>Event timeline <a class=\"svg-link\" href=\"/cluster/app/{id}/timeline.svg\">(SVG)</a></h2><div class=\"timeline-wrap\">{svg}</div></section>"
    );
    (picture, s)
}

/// One actor of the supervision tree, live and recorded joined.
#[derive(Default)]
struct TreeRow {
    actor_type: String,
    incarnation: u64,
    restarts: u64,
    failures: u64,
    status: String,
    ended: Option<String>,
}

/// The supervision tree: every actor's path (indented by depth), type and incarnation,
/// restarts and failures marked; the live actors of a running application joined with what
/// the records tell of every actor that ever ran.
fn supervision(live: &[ActorInfo], t: Option<&Timeline>) -> String {
    let mut tree: BTreeMap<String, TreeRow> = BTreeMap::new();
    if let Some(t) = t {
        for a in &t.actors {
            tree.insert(
                a.path.clone(),
                TreeRow {
                    actor_type: a.actor_type.clone(),
                    incarnation: a.incarnation,
                    restarts: u64::from(a.restarts),
                    failures: u64::from(a.failures),
                    status: if a.alive { "running".into() } else { "ended".into() },
                    ended: a.ended.clone(),
                },
            );
        }
    }
    for a in live {
        let e = tree.entry(a.path.as_str().to_string()).or_default();
        if e.actor_type.is_empty() {
            e.actor_type = a.actor_type.clone();
        }
        e.incarnation = e.incarnation.max(a.incarnation);
        e.restarts = e.restarts.max(a.restarts);
        e.status = a.status.clone();
        e.ended = None;
    }
    let base = tree.keys().map(|p| p.matches('/').count()).min().unwrap_or(0);
    let rows: Vec<String> = tree
        .iter()
        .map(|(path, a)| {
            let depth = path.matches('/').count().saturating_sub(base);
            let mut class = String::from("actor");
            let mut flags = String::new();
            if a.restarts > 0 {
                class.push_str(" restarted");
                let _ = write!(flags, "<span class=\"flag restart\">restarted ×{}</span>", a.restarts);
            }
            if a.failures > 0 {
                class.push_str(" failed");
                let _ = write!(flags, "<span class=\"flag failure\">failed ×{}</span>", a.failures);
            }
            if a.status == "ended" {
                class.push_str(" ended");
            }
            let name = path.rsplit('/').next().unwrap_or(path);
            row(
                &format!(
                    "class=\"{class}\" data-path=\"{}\" data-incarnation=\"{}\" data-restarts=\"{}\" data-failures=\"{}\"",
                    esc(path),
                    a.incarnation,
                    a.restarts,
                    a.failures
                ),
                &[
                    format!(
                        "<span class=\"path\" style=\"padding-left:{}px\" title=\"{}\">{}</span>{flags}",
                        depth * 16,
                        esc(path),
                        esc(name)
                    ),
                    esc(&a.actor_type),
                    a.incarnation.to_string(),
                    a.restarts.to_string(),
                    a.failures.to_string(),
                    format!(
                        "{}{}",
                        badge(if a.status.is_empty() { "unknown" } else { &a.status }),
                        a.ended
                            .as_deref()
                            .map(|e| format!(" {}", esc(e)))
                            .unwrap_or_default()
                    ),
                ],
            )
        })
        .collect();
    let mut s = String::from("<section class=\"card supervision\"><h2>Supervision tree</h2>");
    s.push_str(&table(
        "actors",
        &["Actor", "Type", "Incarnation", "Restarts", "Failures", "Status"],
        &rows,
        "No actor of this application is known.",
    ));
    s.push_str("</section>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::supervisor::ChildKind;

    fn actor(path: &str, incarnation: u64) -> ActorInfo {
        ActorInfo {
            path: crate::runtime::ActorPath::parse(path).unwrap(),
            actor_type: "X<y>".into(),
            incarnation,
            restarts: incarnation - 1,
            kind: ChildKind::Worker,
            node: None,
            status: "running".into(),
        }
    }

    #[test]
    fn the_tree_marks_restarts_indents_by_depth_and_escapes() {
        let s = supervision(
            &[
                actor("/node/nm/container_1/executor", 1),
                actor("/node/nm/container_1/executor/timer", 3),
            ],
            None,
        );
        assert!(s.contains("data-path=\"/node/nm/container_1/executor/timer\" data-incarnation=\"3\" data-restarts=\"2\""), "{s}");
        assert!(s.contains("class=\"actor restarted\""), "{s}");
        assert!(s.contains("restarted ×2"), "{s}");
        assert!(s.contains("padding-left:16px"), "{s}");
        assert!(s.contains("X&lt;y&gt;"), "{s}");
        assert!(!s.contains("X<y>"), "{s}");
    }

    #[test]
    fn an_empty_tree_says_so() {
        assert!(supervision(&[], None).contains("No actor of this application is known."));
    }
}
