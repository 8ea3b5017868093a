//! RMWebServices: YARN's REST API under `/ws/v1/cluster`, in Hadoop's JSON shapes, so that
//! YARN's own clients (the `yarn-api-client` Python package among them) read it unchanged.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

use actix_web::{web, HttpResponse};

use super::WebState;

/// Registers the REST API's routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/ws/v1/cluster/info").route(web::get().to(cluster_info)));
}

/// `GET /ws/v1/cluster/info`: the ResourceManager's identity and start time.
async fn cluster_info(state: web::Data<WebState>) -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({
        "clusterInfo": {
            "id": state.started_ms,
            "startedOn": state.started_ms,
            "state": "STARTED",
            "haState": "ACTIVE",
            "resourceManagerVersion": env!("CARGO_PKG_VERSION"),
            "hadoopVersion": env!("CARGO_PKG_VERSION"),
        }
    }))
}
