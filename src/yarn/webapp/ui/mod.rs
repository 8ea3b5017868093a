//! The ResourceManager's web UI: the cluster, its applications and, for one application, its
//! attempts, containers, executors, jobs and stages, supervision tree and event timeline.
//!
//! Layer: yarn (above rpc; knows nothing of Spark). The executors, jobs, stages and the
//! actors' history come from the application's structured records (`crate::logs::timeline`),
//! not from the Spark side.
//!
//! YARN's page names: `/cluster` (metrics, nodes, queues), `/cluster/apps` and
//! `/cluster/apps/{STATE}`, `/cluster/nodes`, `/cluster/scheduler`, `/cluster/app/{id}` (with
//! `/cluster/app/{id}/sections`, the fragment its script polls every 2 s while the
//! application runs, and `/cluster/app/{id}/timeline.svg`). Pages are rendered on the
//! server, every value escaped; the one stylesheet and script are served here
//! (`/static/...`). Every page asks the ResourceManager through the client protocol's
//! [`client_service::serve`], so the view ACLs apply: the viewer is the `user.name` query
//! parameter, else `dr.who` (YARN's static web user).

mod app;
mod assets;
pub mod html;

use std::collections::VecDeque;
use std::sync::Mutex;

use actix_web::{http::header, http::StatusCode, web, HttpRequest, HttpResponse};

use self::html::{badge, esc, info, mb, meter, page, row, table, time_ms, user_query, Nav};
use super::{WebState, CALL_TIMEOUT};
use crate::logs::ctx::Instrumented;
use crate::logs::timeline::TimelineReader;
use crate::yarn::acls::Caller;
use crate::yarn::client_service;
use crate::yarn::protocol::{
    ApplicationListing, ClientCall, ClientRequest, ClientResponse, GetApplications, GetNodeReports,
};
use crate::yarn::records::{NodeReport, NodeState, YarnApplicationState};

/// The viewer when a request names none (YARN's `hadoop.http.staticuser.user`).
pub const DEFAULT_USER: &str = "dr.who";

/// The applications whose timeline readers the UI keeps (the most recently viewed).
pub const MAX_TIMELINES: usize = 16;

/// The UI's own state: one timeline reader per recently viewed application, so each
/// refresh reads only what its records gained since the last.
#[derive(Default)]
pub struct UiState {
    timelines: Mutex<VecDeque<(String, TimelineReader)>>,
}

impl UiState {
    /// Runs `f` with the reader of `app` (made, and the least recently viewed one dropped,
    /// when it has none), which becomes the most recently viewed.
    pub fn with_reader<R>(
        &self,
        log_dir: &std::path::Path,
        app: &str,
        f: impl FnOnce(&mut TimelineReader) -> R,
    ) -> R {
        let mut readers = self.timelines.lock().unwrap_or_else(|p| p.into_inner());
        let reader = match readers.iter().position(|(id, _)| id == app) {
            Some(i) => readers.remove(i).map(|(_, r)| r),
            None => None,
        };
        let mut reader = reader.unwrap_or_else(|| TimelineReader::new(log_dir, app));
        let answer = f(&mut reader);
        readers.push_front((app.to_string(), reader));
        readers.truncate(MAX_TIMELINES);
        answer
    }

    /// The applications whose readers are kept, most recently viewed first.
    pub fn kept(&self) -> Vec<String> {
        let readers = self.timelines.lock().unwrap_or_else(|p| p.into_inner());
        readers.iter().map(|(id, _)| id.clone()).collect()
    }
}

/// Registers the UI's pages.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/").route(web::get().to(home)))
        .service(web::resource("/static/sparkyard.css").route(web::get().to(css)))
        .service(web::resource("/static/sparkyard.js").route(web::get().to(js)))
        .service(web::resource("/cluster").route(web::get().to(cluster)))
        .service(web::resource("/cluster/cluster").route(web::get().to(cluster)))
        .service(web::resource("/cluster/apps").route(web::get().to(apps)))
        .service(web::resource("/cluster/apps/{state}").route(web::get().to(apps_in)))
        .service(web::resource("/cluster/nodes").route(web::get().to(nodes)))
        .service(web::resource("/cluster/scheduler").route(web::get().to(scheduler)))
        .service(web::resource("/cluster/app/{id}").route(web::get().to(app::page)))
        .service(web::resource("/cluster/app/{id}/sections").route(web::get().to(app::sections)))
        .service(web::resource("/cluster/app/{id}/timeline.svg").route(web::get().to(app::timeline_svg)));
}

/// `/`: YARN's RM sends a browser to the cluster's page.
async fn home() -> HttpResponse {
    HttpResponse::Found()
        .insert_header((header::LOCATION, "/cluster"))
        .finish()
}

async fn css() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "max-age=300"))
        .body(assets::CSS)
}

async fn js() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "max-age=300"))
        .body(assets::JS)
}

/// The viewer a request names (`user.name`), if any.
fn viewer(req: &HttpRequest) -> Option<String> {
    web::Query::<std::collections::HashMap<String, String>>::from_query(req.query_string())
        .ok()
        .and_then(|q| q.get("user.name").cloned())
        .filter(|u| !u.trim().is_empty())
}

/// Asks the ResourceManager `request` as `user` (else [`DEFAULT_USER`]), under the ACLs, in
/// the web app's log context.
async fn ask(state: &WebState, user: Option<&str>, request: ClientRequest) -> ClientResponse {
    let caller = Caller {
        user: user.unwrap_or(DEFAULT_USER).to_string(),
        real_user: None,
    };
    let call = ClientCall::new(caller, request);
    Instrumented::new(
        client_service::serve(&state.rm, call, &state.acls, CALL_TIMEOUT),
        state.log_ctx.clone(),
    )
    .await
}

/// An HTML page with `status`.
fn html_page(status: StatusCode, body: String) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(body)
}

/// A page that says one thing went wrong, with `status`.
fn problem(status: StatusCode, title: &str, user: Option<&str>, sentence: &str) -> HttpResponse {
    let body = format!("<p class=\"problem\">{}</p>", esc(sentence));
    html_page(status, page(title, Nav::None, user, &body))
}

/// The ResourceManager did not answer as expected.
fn rm_failed(user: Option<&str>, what: &str, answer: ClientResponse) -> HttpResponse {
    let why = match answer {
        ClientResponse::Failed(e) | ClientResponse::Denied(e) => e,
        other => format!("unexpected answer {other:?}"),
    };
    tracing::warn!("Web UI: {what} failed: {why}");
    problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "ResourceManager unavailable",
        user,
        &format!("Failed to read {what} from the ResourceManager: {why}"),
    )
}

/// Every application the viewer may list (their reports limited where it lacks VIEW_APP).
async fn listings(state: &WebState, user: Option<&str>) -> Result<Vec<ApplicationListing>, ClientResponse> {
    let request = ClientRequest::GetApplications(GetApplications {
        states: Vec::new(),
        types: Vec::new(),
    });
    match ask(state, user, request).await {
        ClientResponse::Applications(a) => Ok(a),
        other => Err(other),
    }
}

/// Every node the RM knows, in every state.
async fn node_reports(state: &WebState, user: Option<&str>) -> Result<Vec<NodeReport>, ClientResponse> {
    match ask(
        state,
        user,
        ClientRequest::GetNodeReports(GetNodeReports { states: Vec::new() }),
    )
    .await
    {
        ClientResponse::NodeReports(n) => Ok(n),
        other => Err(other),
    }
}

/// `/cluster`: the cluster's metrics, its nodes and its queues.
async fn cluster(state: web::Data<WebState>, req: HttpRequest) -> HttpResponse {
    let user = viewer(&req);
    let user = user.as_deref();
    let apps = match listings(&state, user).await {
        Ok(a) => a,
        Err(e) => return rm_failed(user, "the applications", e),
    };
    let nodes = match node_reports(&state, user).await {
        Ok(n) => n,
        Err(e) => return rm_failed(user, "the nodes", e),
    };
    let count = |f: &dyn Fn(YarnApplicationState) -> bool| apps.iter().filter(|a| f(a.report.state)).count();
    let running = count(&|s| s == YarnApplicationState::Running);
    let pending = count(&|s| {
        matches!(
            s,
            YarnApplicationState::New
                | YarnApplicationState::NewSaving
                | YarnApplicationState::Submitted
                | YarnApplicationState::Accepted
        )
    });
    let completed = count(&|s| s.is_final());
    let failed = count(&|s| matches!(s, YarnApplicationState::Failed | YarnApplicationState::Killed));
    let live: Vec<&NodeReport> = nodes.iter().filter(|n| n.state == NodeState::Running).collect();
    let containers: u64 = nodes.iter().map(|n| u64::from(n.num_containers)).sum();
    let (mem_used, mem_total) = live.iter().fold((0, 0), |(u, t), n| {
        (u + n.used.memory_mb, t + n.capability.memory_mb)
    });
    let (vc_used, vc_total) = live.iter().fold((0u64, 0u64), |(u, t), n| {
        (u + u64::from(n.used.vcores), t + u64::from(n.capability.vcores))
    });
    let metric = |v: String, k: &str, class: &str| {
        format!(
            "<div class=\"metric {class}\"><div class=\"v\">{}</div><div class=\"k\">{}</div></div>",
            esc(&v),
            esc(k)
        )
    };
    let mut body = String::from("<div class=\"cards cluster-metrics\">");
    body.push_str(&metric(
        apps.len().to_string(),
        "Apps submitted",
        "apps-submitted",
    ));
    body.push_str(&metric(pending.to_string(), "Apps pending", "apps-pending"));
    body.push_str(&metric(running.to_string(), "Apps running", "apps-running"));
    body.push_str(&metric(completed.to_string(), "Apps completed", "apps-completed"));
    body.push_str(&metric(
        failed.to_string(),
        "Apps failed or killed",
        "apps-failed",
    ));
    body.push_str(&metric(
        containers.to_string(),
        "Containers running",
        "containers",
    ));
    body.push_str(&metric(
        format!("{} / {}", mb(mem_used), mb(mem_total)),
        "Memory used / total",
        "memory",
    ));
    body.push_str(&metric(
        format!("{vc_used} / {vc_total}"),
        "VCores used / total",
        "vcores",
    ));
    body.push_str(&metric(live.len().to_string(), "Active nodes", "active-nodes"));
    let other = |s: NodeState| nodes.iter().filter(|n| n.state == s).count().to_string();
    body.push_str(&metric(
        other(NodeState::Decommissioning),
        "Decommissioning nodes",
        "decommissioning",
    ));
    body.push_str(&metric(
        other(NodeState::Decommissioned),
        "Decommissioned nodes",
        "decommissioned",
    ));
    body.push_str(&metric(other(NodeState::Lost), "Lost nodes", "lost"));
    body.push_str("</div>");
    body.push_str("<section class=\"card\"><h2>Nodes</h2>");
    body.push_str(&nodes_table(&nodes));
    body.push_str("</section><section class=\"card\"><h2>Queues</h2>");
    body.push_str(&queues_table(&apps, user));
    body.push_str("</section><section class=\"card\"><h2>Recent applications</h2>");
    let mut recent = apps.clone();
    newest_first(&mut recent);
    recent.truncate(10);
    body.push_str(&apps_table(&recent, user));
    body.push_str("</section>");
    html_page(StatusCode::OK, page("Cluster", Nav::Cluster, user, &body))
}

/// Newest application first (by id: ids grow with submission).
fn newest_first(apps: &mut [ApplicationListing]) {
    apps.sort_by_key(|a| std::cmp::Reverse(a.report.app_id));
}

/// The nodes, one row each.
fn nodes_table(nodes: &[NodeReport]) -> String {
    let rows: Vec<String> = nodes
        .iter()
        .map(|n| {
            row(
                &format!("class=\"node\" data-host=\"{}\"", esc(&n.host)),
                &[
                    esc(&n.rack),
                    format!("<code>{}</code>", esc(&n.host)),
                    badge(&n.state.to_string()),
                    n.num_containers.to_string(),
                    meter(
                        n.used.memory_mb,
                        n.capability.memory_mb,
                        &format!("{} of {}", mb(n.used.memory_mb), mb(n.capability.memory_mb)),
                    ),
                    meter(
                        u64::from(n.used.vcores),
                        u64::from(n.capability.vcores),
                        &format!("{} of {}", n.used.vcores, n.capability.vcores),
                    ),
                ],
            )
        })
        .collect();
    table(
        "nodes",
        &[
            "Rack",
            "Node address",
            "State",
            "Containers",
            "Memory used",
            "VCores used",
        ],
        &rows,
        "No NodeManager has registered.",
    )
}

/// The queues the applications went to, with how many of them are where.
fn queues_table(apps: &[ApplicationListing], user: Option<&str>) -> String {
    let mut queues: std::collections::BTreeMap<&str, (usize, usize, usize)> = Default::default();
    queues.entry("default").or_default();
    for a in apps {
        let e = queues.entry(a.report.queue.as_str()).or_default();
        match a.report.state {
            YarnApplicationState::Running => e.0 += 1,
            s if s.is_final() => e.2 += 1,
            _ => e.1 += 1,
        }
    }
    let q = user_query(user);
    let rows: Vec<String> = queues
        .iter()
        .map(|(name, (running, pending, done))| {
            row(
                &format!("class=\"queue\" data-queue=\"{}\"", esc(name)),
                &[
                    format!(
                        "<a href=\"/cluster/scheduler{q}\"><code>root.{}</code></a>",
                        esc(name)
                    ),
                    running.to_string(),
                    pending.to_string(),
                    done.to_string(),
                ],
            )
        })
        .collect();
    table(
        "queues",
        &["Queue", "Apps running", "Apps pending", "Apps completed"],
        &rows,
        "No queue.",
    )
}

/// The applications, one row each, with links to their pages.
fn apps_table(apps: &[ApplicationListing], user: Option<&str>) -> String {
    let q = user_query(user);
    let rows: Vec<String> = apps
        .iter()
        .map(|a| {
            let r = &a.report;
            let id = r.app_id.to_string();
            let progress = (a.progress.clamp(0.0, 1.0) * 100.0).round() as u64;
            let tracking = match r.tracking_url.as_deref() {
                Some(u) if !u.is_empty() && u != client_service::UNAVAILABLE => {
                    let label = if r.state.is_final() {
                        "History"
                    } else {
                        "ApplicationMaster"
                    };
                    format!("<a href=\"/cluster/app/{id}{q}\">{label}</a>")
                }
                _ => "Unassigned".into(),
            };
            row(
                &format!(
                    "class=\"app\" data-app=\"{}\" data-state=\"{}\"",
                    esc(&id),
                    r.state
                ),
                &[
                    format!(
                        "<a href=\"/cluster/app/{}{q}\"><code>{}</code></a>",
                        esc(&id),
                        esc(&id)
                    ),
                    esc(&r.user),
                    esc(&r.name),
                    esc(&r.app_type),
                    esc(&r.queue),
                    html::nowrap(&time_ms(r.start_time)),
                    html::nowrap(&time_ms(r.finish_time)),
                    badge(&r.state.to_string()),
                    badge(&r.final_status.to_string()),
                    meter(progress, 100, &format!("{progress}%")),
                    tracking,
                ],
            )
        })
        .collect();
    table(
        "apps",
        &[
            "ID",
            "User",
            "Name",
            "Application Type",
            "Queue",
            "StartTime",
            "FinishTime",
            "State",
            "FinalStatus",
            "Progress",
            "Tracking UI",
        ],
        &rows,
        "No applications.",
    )
}

/// `/cluster/apps`: every application, newest first.
async fn apps(state: web::Data<WebState>, req: HttpRequest) -> HttpResponse {
    apps_page(&state, &req, None).await
}

/// `/cluster/apps/{STATE}`: the applications in one state.
async fn apps_in(state: web::Data<WebState>, req: HttpRequest, path: web::Path<String>) -> HttpResponse {
    let name = path.into_inner();
    let Some(s) = app_state(&name) else {
        let user = viewer(&req);
        return problem(
            StatusCode::BAD_REQUEST,
            "Bad request",
            user.as_deref(),
            &format!(
                "Invalid application state: {name} (one of NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED)"
            ),
        );
    };
    apps_page(&state, &req, Some(s)).await
}

/// A YarnApplicationState by its name (any case).
fn app_state(name: &str) -> Option<YarnApplicationState> {
    use YarnApplicationState::*;
    [
        New, NewSaving, Submitted, Accepted, Running, Finished, Failed, Killed,
    ]
    .into_iter()
    .find(|s| s.to_string().eq_ignore_ascii_case(name))
}

async fn apps_page(state: &WebState, req: &HttpRequest, only: Option<YarnApplicationState>) -> HttpResponse {
    let user = viewer(req);
    let user = user.as_deref();
    let mut apps = match listings(state, user).await {
        Ok(a) => a,
        Err(e) => return rm_failed(user, "the applications", e),
    };
    if let Some(s) = only {
        apps.retain(|a| a.report.state == s);
    }
    newest_first(&mut apps);
    let title = match only {
        Some(s) => format!("{s} Applications"),
        None => "All Applications".into(),
    };
    let body = format!("<section class=\"card\">{}</section>", apps_table(&apps, user));
    html_page(StatusCode::OK, page(&title, Nav::Apps, user, &body))
}

/// `/cluster/nodes`: every node the RM knows.
async fn nodes(state: web::Data<WebState>, req: HttpRequest) -> HttpResponse {
    let user = viewer(&req);
    let user = user.as_deref();
    match node_reports(&state, user).await {
        Ok(n) => {
            let body = format!("<section class=\"card\">{}</section>", nodes_table(&n));
            html_page(
                StatusCode::OK,
                page("Nodes of the cluster", Nav::Nodes, user, &body),
            )
        }
        Err(e) => rm_failed(user, "the nodes", e),
    }
}

/// `/cluster/scheduler`: the scheduler, its resources and its queues.
async fn scheduler(state: web::Data<WebState>, req: HttpRequest) -> HttpResponse {
    let user = viewer(&req);
    let user = user.as_deref();
    let (apps, nodes) = match (listings(&state, user).await, node_reports(&state, user).await) {
        (Ok(a), Ok(n)) => (a, n),
        (Err(e), _) | (_, Err(e)) => return rm_failed(user, "the scheduler's state", e),
    };
    let live: Vec<&NodeReport> = nodes.iter().filter(|n| n.state == NodeState::Running).collect();
    let used_mb: u64 = live.iter().map(|n| n.used.memory_mb).sum();
    let total_mb: u64 = live.iter().map(|n| n.capability.memory_mb).sum();
    let used_vc: u64 = live.iter().map(|n| u64::from(n.used.vcores)).sum();
    let total_vc: u64 = live.iter().map(|n| u64::from(n.capability.vcores)).sum();
    let overview = info(
        "scheduler",
        &[
            (
                "Scheduler Type:",
                esc("CapacityScheduler (leaf queues, FIFO within a queue)"),
            ),
            (
                "Memory:",
                meter(
                    used_mb,
                    total_mb,
                    &format!("{} of {} used", mb(used_mb), mb(total_mb)),
                ),
            ),
            (
                "VCores:",
                meter(used_vc, total_vc, &format!("{used_vc} of {total_vc} used")),
            ),
            ("Nodes:", esc(&live.len().to_string())),
        ],
    );
    let body = format!(
        "<section class=\"card\"><h2>Scheduler</h2>{overview}</section>\
<section class=\"card\"><h2>Application Queues</h2>{}</section>",
        queues_table(&apps, user)
    );
    html_page(StatusCode::OK, page("Scheduler", Nav::Scheduler, user, &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_parse_by_name_in_any_case() {
        assert_eq!(app_state("running"), Some(YarnApplicationState::Running));
        assert_eq!(app_state("NEW_SAVING"), Some(YarnApplicationState::NewSaving));
        assert_eq!(app_state("RUNNIN"), None);
    }

    #[test]
    fn the_reader_cache_keeps_the_most_recently_viewed() {
        let ui = UiState::default();
        let dir = std::env::temp_dir();
        for i in 0..(MAX_TIMELINES + 3) {
            ui.with_reader(&dir, &format!("application_1_{i:04}"), |_| ());
        }
        let kept = ui.kept();
        assert_eq!(kept.len(), MAX_TIMELINES);
        assert_eq!(kept[0], format!("application_1_{:04}", MAX_TIMELINES + 2));
        // Viewing an old one again brings it to the front without a second reader.
        ui.with_reader(&dir, "application_1_0005", |_| ());
        let kept = ui.kept();
        assert_eq!(kept.len(), MAX_TIMELINES);
        assert_eq!(kept[0], "application_1_0005");
        assert_eq!(kept.iter().filter(|k| *k == "application_1_0005").count(), 1);
    }
}
