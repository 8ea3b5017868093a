//! The ResourceManager's web UI: the cluster, its applications and, for one application, its
//! attempts, containers, executors, jobs and stages, supervision tree and event timeline.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

use actix_web::{http::header, web, HttpResponse};

/// Registers the UI's pages.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/").route(web::get().to(home)));
}

/// `/`: YARN's RM sends a browser to the cluster's page.
async fn home() -> HttpResponse {
    HttpResponse::Found()
        .insert_header((header::LOCATION, "/cluster"))
        .finish()
}
