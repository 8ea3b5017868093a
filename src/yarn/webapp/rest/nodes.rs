//! The nodes: `/ws/v1/cluster/nodes` (by `states`) and `/nodes/{nodeid}`. A sparkyard
//! node's id is its host, as `sparkyard node -list` shows it; `host:port` finds it too.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

use actix_web::{web, HttpRequest, HttpResponse};

use super::errors::RestError;
use super::filters::parse_node_states;
use super::{caller, json, query, resource, respond, serve, unanswered};
use crate::yarn::acls::Caller;
use crate::yarn::protocol::{ClientRequest, ClientResponse, GetNodeReports};
use crate::yarn::records::{NodeReport, NodeState};
use crate::yarn::webapp::WebState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/ws/v1/cluster/nodes", "GET").route(web::get().to(list)))
        .service(resource("/ws/v1/cluster/nodes/{nodeid}", "GET").route(web::get().to(one)));
}

async fn reports(
    state: &WebState,
    user: &Caller,
    states: Vec<NodeState>,
) -> Result<Vec<NodeReport>, RestError> {
    match serve(
        state,
        user,
        ClientRequest::GetNodeReports(GetNodeReports { states }),
    )
    .await
    {
        ClientResponse::NodeReports(nodes) => Ok(nodes),
        other => Err(unanswered("nodes", other)),
    }
}

/// `GET /ws/v1/cluster/nodes[?states=...]`.
async fn list(req: HttpRequest, state: web::Data<WebState>) -> HttpResponse {
    let user = caller(&req);
    let answer = async {
        let wanted = parse_node_states(&query(&req)?)?;
        let nodes = if wanted.is_empty() {
            reports(&state, &user, Vec::new()).await?
        } else {
            let states: Vec<NodeState> = wanted.into_iter().flatten().collect();
            if states.is_empty() {
                // Only states no sparkyard node is ever in.
                Vec::new()
            } else {
                reports(&state, &user, states).await?
            }
        };
        Ok(HttpResponse::Ok().json(json::nodes_info(&nodes)))
    }
    .await;
    respond(&state, &req, &user, answer)
}

/// The host a node id names: the id itself, or the host of `host:port`; a malformed one is
/// refused as NodeId.fromString refuses it.
pub fn node_host(id: &str) -> Result<&str, RestError> {
    if id.is_empty() {
        return Err(RestError::NotFound(format!("nodeId, {id}, is empty or null")));
    }
    let host = match id.rsplit_once(':') {
        Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => host,
        Some(_) => "",
        None => id,
    };
    let valid = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    if !valid {
        return Err(RestError::IllegalArgument(format!(
            "Invalid NodeId [{id}]. Expected host:port"
        )));
    }
    Ok(host)
}

/// `GET /ws/v1/cluster/nodes/{nodeid}`.
async fn one(req: HttpRequest, state: web::Data<WebState>, id: web::Path<String>) -> HttpResponse {
    let user = caller(&req);
    let answer = async {
        let host = node_host(&id)?;
        let nodes = reports(&state, &user, Vec::new()).await?;
        let node = nodes
            .iter()
            .find(|n| n.host == host)
            .ok_or_else(|| RestError::NotFound(format!("nodeId, {id}, is not found")))?;
        Ok(HttpResponse::Ok().json(serde_json::json!({ "node": json::node_info(node) })))
    }
    .await;
    respond(&state, &req, &user, answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_are_hosts_or_host_and_port() {
        assert_eq!(node_host("host1"), Ok("host1"));
        assert_eq!(node_host("host1:8041"), Ok("host1"));
        assert_eq!(
            node_host("host1:x"),
            Err(RestError::IllegalArgument(
                "Invalid NodeId [host1:x]. Expected host:port".into()
            ))
        );
        assert!(matches!(node_host("a b"), Err(RestError::IllegalArgument(_))));
        assert!(matches!(node_host(""), Err(RestError::NotFound(_))));
    }
}
