//! The cluster's resources: `/ws/v1/cluster` and `/info` (ClusterInfo), `/metrics`
//! (ClusterMetricsInfo) and `/scheduler` (the capacity scheduler's queues).
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

use actix_web::{web, HttpRequest, HttpResponse};

use super::errors::RestError;
use super::{caller, json, resource, respond};
use crate::yarn::protocol::{GetClusterMetrics, GetQueueInfo};
use crate::yarn::webapp::{WebState, CALL_TIMEOUT};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/ws/v1/cluster", "GET").route(web::get().to(info)))
        .service(resource("/ws/v1/cluster/", "GET").route(web::get().to(info)))
        .service(resource("/ws/v1/cluster/info", "GET").route(web::get().to(info)))
        .service(resource("/ws/v1/cluster/metrics", "GET").route(web::get().to(metrics)))
        .service(resource("/ws/v1/cluster/scheduler", "GET").route(web::get().to(scheduler)));
}

/// `GET /ws/v1/cluster[/info]`: the ResourceManager's identity and start time.
async fn info(req: HttpRequest, state: web::Data<WebState>) -> HttpResponse {
    let user = caller(&req);
    let answer = HttpResponse::Ok().json(json::cluster_info(state.started_ms));
    respond(&state, &req, &user, Ok(answer))
}

/// `GET /ws/v1/cluster/metrics`: applications by state, resources, containers, nodes.
async fn metrics(req: HttpRequest, state: web::Data<WebState>) -> HttpResponse {
    let user = caller(&req);
    let answer = match state.rm.ask(GetClusterMetrics, CALL_TIMEOUT).await {
        Ok(m) => Ok(HttpResponse::Ok().json(json::cluster_metrics(&m))),
        Err(e) => Err(RestError::Internal(format!(
            "cluster metrics: the ResourceManager did not answer: {e}"
        ))),
    };
    respond(&state, &req, &user, answer)
}

/// `GET /ws/v1/cluster/scheduler`: the capacity scheduler's root and leaf queues.
async fn scheduler(req: HttpRequest, state: web::Data<WebState>) -> HttpResponse {
    let user = caller(&req);
    let answer = async {
        let unanswered = |e: crate::rpc::AskError| {
            RestError::Internal(format!("scheduler: the ResourceManager did not answer: {e}"))
        };
        let queues = state
            .rm
            .ask(GetQueueInfo, CALL_TIMEOUT)
            .await
            .map_err(unanswered)?;
        let metrics = state
            .rm
            .ask(GetClusterMetrics, CALL_TIMEOUT)
            .await
            .map_err(unanswered)?;
        Ok(HttpResponse::Ok().json(json::scheduler_info(&queues, &metrics.total)))
    }
    .await;
    respond(&state, &req, &user, answer)
}
