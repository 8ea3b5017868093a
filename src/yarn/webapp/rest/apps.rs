//! The applications: `/ws/v1/cluster/apps` (with YARN's filters), `/apps/{appid}`,
//! `/apps/{appid}/appattempts` and `/apps/{appid}/state` (GET, and PUT `{"state":"KILLED"}`:
//! the kill). Every view lists what the RM keeps, as the caller may see it (ACLs on: a
//! report limited to what YARN shows a caller without VIEW_APP); a kill needs MODIFY_APP.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};

use super::errors::RestError;
use super::filters::AppsFilter;
use super::{caller, json, now_ms, parse_app_id, query, read_body, resource, respond, serve, unanswered};
use crate::logs::ctx::in_scope;
use crate::yarn::acls::{audit_failure, Caller};
use crate::yarn::protocol::{
    ApplicationListing, ClientRequest, ClientResponse, GetApplications, GetQueueInfo, KillApplication,
    YarnError,
};
use crate::yarn::records::YarnApplicationState;
use crate::yarn::webapp::{WebState, CALL_TIMEOUT};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/ws/v1/cluster/apps", "GET").route(web::get().to(list)))
        .service(resource("/ws/v1/cluster/apps/{appid}", "GET").route(web::get().to(one)))
        .service(resource("/ws/v1/cluster/apps/{appid}/appattempts", "GET").route(web::get().to(attempts)))
        .service(
            resource("/ws/v1/cluster/apps/{appid}/state", "GET, PUT")
                .route(web::get().to(get_state))
                .route(web::put().to(put_state)),
        );
}

/// Every application the RM keeps, as `user` may see them, by id.
async fn listings(state: &WebState, user: &Caller) -> Result<Vec<ApplicationListing>, RestError> {
    let request = ClientRequest::GetApplications(GetApplications {
        states: Vec::new(),
        types: Vec::new(),
    });
    match serve(state, user, request).await {
        ClientResponse::Applications(listed) => Ok(listed),
        other => Err(unanswered("applications", other)),
    }
}

/// The application of the path, or YARN's 400/404.
async fn find(state: &WebState, user: &Caller, id: &str) -> Result<ApplicationListing, RestError> {
    let app_id = parse_app_id(id)?;
    listings(state, user)
        .await?
        .into_iter()
        .find(|l| l.report.app_id == app_id)
        .ok_or_else(|| RestError::NotFound(format!("app with id: {id} not found")))
}

/// `GET /ws/v1/cluster/apps`: `state` (deprecated), `states`, `finalStatus`, `user`,
/// `queue`, `limit`, `startedTimeBegin`/`End`, `finishedTimeBegin`/`End`,
/// `applicationTypes`, `name`; `applicationTags` is accepted and ignored.
async fn list(req: HttpRequest, state: web::Data<WebState>) -> HttpResponse {
    let user = caller(&req);
    let answer = async {
        let filter = AppsFilter::parse(&query(&req)?)?;
        if let Some(queue) = &filter.queue {
            // ApplicationsRequestBuilder.validateQueueExists (the capacity scheduler's).
            let queues = state.rm.ask(GetQueueInfo, CALL_TIMEOUT).await.map_err(|e| {
                RestError::Internal(format!("queues: the ResourceManager did not answer: {e}"))
            })?;
            if !queues.iter().any(|q| &q.name == queue) {
                return Err(RestError::BadRequest(format!("Unknown queue: {queue}")));
            }
        }
        let listed = filter.apply(listings(&state, &user).await?);
        Ok(HttpResponse::Ok().json(json::apps_info(&listed, now_ms(&state))))
    }
    .await;
    respond(&state, &req, &user, answer)
}

/// `GET /ws/v1/cluster/apps/{appid}`: `{"app":{...}}`.
async fn one(req: HttpRequest, state: web::Data<WebState>, id: web::Path<String>) -> HttpResponse {
    let user = caller(&req);
    let answer = async {
        let l = find(&state, &user, &id).await?;
        Ok(HttpResponse::Ok().json(serde_json::json!({ "app": json::app_info(&l, now_ms(&state)) })))
    }
    .await;
    respond(&state, &req, &user, answer)
}

/// `GET /ws/v1/cluster/apps/{appid}/appattempts`.
async fn attempts(req: HttpRequest, state: web::Data<WebState>, id: web::Path<String>) -> HttpResponse {
    let user = caller(&req);
    let answer = async {
        let l = find(&state, &user, &id).await?;
        Ok(HttpResponse::Ok().json(json::app_attempts_info(&l.attempts)))
    }
    .await;
    respond(&state, &req, &user, answer)
}

/// `GET /ws/v1/cluster/apps/{appid}/state`: `{"state":"RUNNING"}`.
async fn get_state(req: HttpRequest, state: web::Data<WebState>, id: web::Path<String>) -> HttpResponse {
    let user = caller(&req);
    let answer = async {
        let l = find(&state, &user, &id).await?;
        Ok(HttpResponse::Ok().json(json::app_state(l.report.state)))
    }
    .await;
    respond(&state, &req, &user, answer)
}

/// The target of `PUT .../state` (Hadoop's AppState: `state`, optional `diagnostics`).
#[derive(Debug, PartialEq, Eq)]
pub struct TargetState {
    pub state: String,
    pub diagnostics: Option<String>,
}

/// Parses an AppState body.
pub fn parse_target(body: &[u8]) -> Result<TargetState, RestError> {
    let bad = || RestError::BadRequest("the body must be an AppState such as {\"state\":\"KILLED\"}".into());
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|_| bad())?;
    let state = value
        .get("state")
        .and_then(|s| s.as_str())
        .ok_or_else(bad)?
        .to_string();
    let diagnostics = match value.get("diagnostics") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(d)) => Some(d.clone()),
        Some(_) => return Err(bad()),
    };
    Ok(TargetState { state, diagnostics })
}

/// `PUT /ws/v1/cluster/apps/{appid}/state` with `{"state":"KILLED"}`: kills the application
/// (YARN's updateAppState). The application already in the target state: 200 with it; a
/// kill of a running one: 202 with the state it had and `Location` (where to poll); of a
/// finished one: 200 with its final state; without MODIFY_APP: 403 with YARN's words; any
/// other target: 400.
async fn put_state(
    req: HttpRequest,
    state: web::Data<WebState>,
    id: web::Path<String>,
    payload: web::Payload,
) -> HttpResponse {
    let user = caller(&req);
    let answer = put_state_inner(&req, &state, &user, &id, payload).await;
    respond(&state, &req, &user, answer)
}

async fn put_state_inner(
    req: &HttpRequest,
    state: &WebState,
    user: &Caller,
    id: &str,
    payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    let body = read_body(req, payload).await?;
    let app_id = parse_app_id(id)?;
    let target = parse_target(&body)?;
    let l = match find(state, user, id).await {
        Err(RestError::NotFound(m)) => {
            in_scope(&state.log_ctx, || {
                audit_failure(
                    &user.user,
                    "Kill Application Request",
                    "RMWebService",
                    &format!("Trying to kill an absent application {id}"),
                    None,
                )
            });
            return Err(RestError::NotFound(m));
        }
        other => other?,
    };
    let current = l.report.state;
    if current.to_string() == target.state {
        return Ok(HttpResponse::Ok().json(json::app_state(current)));
    }
    if target.state != YarnApplicationState::Killed.to_string() {
        return Err(RestError::BadRequest(
            "Only 'KILLED' is allowed as a target state.".into(),
        ));
    }
    let kill = ClientRequest::KillApplication(KillApplication {
        app_id,
        diagnostics: target.diagnostics.unwrap_or_default(),
    });
    match serve(state, user, kill).await {
        ClientResponse::KillApplication(Ok(())) => {
            let location = req.full_url().to_string();
            in_scope(&state.log_ctx, || {
                tracing::info!(
                    event = "app_kill_requested",
                    user = user.user.as_str(),
                    app_id = %app_id,
                    state = %current,
                    "USER={}\tOPERATION=Kill Application Request\tTARGET=RMWebService\tRESULT=SUCCESS\tAPPID={app_id} (application was {current})",
                    user.user
                )
            });
            if current.is_final() {
                // Nothing left to kill: the kill is complete.
                Ok(HttpResponse::Ok().json(json::app_state(current)))
            } else {
                Ok(HttpResponse::Accepted()
                    .insert_header((header::LOCATION, location))
                    .json(json::app_state(current)))
            }
        }
        ClientResponse::KillApplication(Err(YarnError::AccessControl(_))) => {
            // Logged at WARN (access_denied) where the ACLs refused it.
            Ok(HttpResponse::Forbidden()
                .content_type("text/plain; charset=utf-8")
                .body(format!(
                    "Unauthorized attempt to kill appid {app_id} by remote user {}",
                    user.user
                )))
        }
        ClientResponse::KillApplication(Err(YarnError::ApplicationNotFound(_))) => {
            Err(RestError::NotFound(format!("app with id: {id} not found")))
        }
        ClientResponse::KillApplication(Err(e)) => Err(RestError::Internal(e.to_string())),
        other => Err(unanswered("kill", other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_state_bodies_are_parsed_or_refused() {
        assert_eq!(
            parse_target(br#"{"state":"KILLED"}"#),
            Ok(TargetState {
                state: "KILLED".into(),
                diagnostics: None
            })
        );
        assert_eq!(
            parse_target(br#"{"state":"KILLED","diagnostics":"enough"}"#)
                .unwrap()
                .diagnostics,
            Some("enough".into())
        );
        for bad in [
            &b"{}"[..],
            b"KILLED",
            b"{\"state\":3}",
            b"",
            b"{\"state\":\"KILLED\",\"diagnostics\":1}",
        ] {
            assert!(
                matches!(parse_target(bad), Err(RestError::BadRequest(_))),
                "{bad:?}"
            );
        }
    }
}
