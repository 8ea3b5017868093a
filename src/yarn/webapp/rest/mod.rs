//! RMWebServices: YARN's REST API under `/ws/v1/cluster`, in Hadoop's JSON shapes, so that
//! YARN's own clients (the `yarn-api-client` Python package among them) read it unchanged.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).
//!
//! One concept a file: [`cluster`] (`/`, `/info`, `/metrics`, `/scheduler`), [`apps`]
//! (`/apps`, one application, its attempts, its state and the kill), [`nodes`] (`/nodes`,
//! one node); [`filters`] parses the query parameters, [`json`] builds Hadoop's shapes,
//! [`errors`] answers failures with Hadoop's `RemoteException`.
//!
//! Every call asks the ResourceManager through the client protocol's dispatch
//! (`client_service::serve`), as the client port does, so the same ACLs apply to the same
//! caller: the `user.name` query parameter (Hadoop's pseudo authentication) or, without it,
//! the anonymous web user `dr.who`. What a client sends is bounded: a body is read up to
//! [`MAX_BODY`] bytes, query strings and paths by the server's own request limits, and every
//! answer lists at most what the RM keeps.

pub mod apps;
pub mod cluster;
pub mod errors;
pub mod filters;
pub mod json;
pub mod nodes;

use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::StreamExt;

use self::errors::RestError;
use super::{WebState, CALL_TIMEOUT};
use crate::logs::ctx::in_scope;
use crate::yarn::acls::Caller;
use crate::yarn::client_service;
use crate::yarn::protocol::{ClientCall, ClientRequest, ClientResponse};
use crate::yarn::records::ApplicationId;

/// The most bytes of a request body the REST API reads (an AppState is a few dozen).
pub const MAX_BODY: usize = 4096;

/// Hadoop's anonymous web user (`hadoop.http.staticuser.user`'s default), the caller of a
/// request that names none.
pub const DEFAULT_WEB_USER: &str = "dr.who";

/// The prefix of every REST resource.
pub const PREFIX: &str = "/ws/v1/cluster";

/// Registers the REST API's routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cluster::configure(cfg);
    apps::configure(cfg);
    nodes::configure(cfg);
    // Anything else under the API: YARN's 404.
    cfg.service(web::resource(["/ws/v1/cluster/{tail:.*}", "/ws/v1/{tail:.*}"]).to(unknown_resource));
}

async fn unknown_resource(req: HttpRequest, state: web::Data<WebState>) -> HttpResponse {
    let user = caller(&req);
    let r = Err(RestError::NotFound(format!("no resource at {}", req.path())));
    respond(&state, &req, &user, r)
}

/// A resource of the API at `path` answering the methods `routes` give, and YARN's 405 with
/// the allowed ones for any other method.
pub fn resource(path: &str, allowed: &'static str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(
        move |req: HttpRequest, state: web::Data<WebState>| async move {
            let user = caller(&req);
            let r = Err(RestError::MethodNotAllowed {
                method: req.method().to_string(),
                allowed,
            });
            respond(&state, &req, &user, r)
        },
    ))
}

/// The caller: `user.name` (pseudo authentication) or [`DEFAULT_WEB_USER`].
pub fn caller(req: &HttpRequest) -> Caller {
    let named = query(req)
        .ok()
        .and_then(|p| {
            p.into_iter()
                .find(|(k, v)| k == "user.name" && !v.trim().is_empty())
        })
        .map(|(_, v)| v.trim().to_string());
    Caller {
        user: named.unwrap_or_else(|| DEFAULT_WEB_USER.to_string()),
        real_user: None,
    }
}

/// The query string's pairs, in order.
pub fn query(req: &HttpRequest) -> Result<Vec<(String, String)>, RestError> {
    web::Query::<Vec<(String, String)>>::from_query(req.query_string())
        .map(|q| q.into_inner())
        .map_err(|e| RestError::BadRequest(format!("malformed query string: {e}")))
}

/// Logs the answer (one DEBUG record for a view or a bad request; refusals are logged where
/// they are decided, at WARN) and returns it.
pub fn respond(
    state: &WebState,
    req: &HttpRequest,
    caller: &Caller,
    answer: Result<HttpResponse, RestError>,
) -> HttpResponse {
    let response = match answer {
        Ok(r) => r,
        Err(e) => e.response(),
    };
    let status = response.status().as_u16();
    in_scope(&state.log_ctx, || {
        tracing::debug!(
            method = %req.method(),
            path = req.path(),
            user = caller.user.as_str(),
            status,
            "REST {} {} by {}: {status}",
            req.method(),
            req.path(),
            caller.user
        )
    });
    response
}

/// Serves `request` as `caller` through the client protocol's dispatch (its ACLs).
pub async fn serve(state: &WebState, caller: &Caller, request: ClientRequest) -> ClientResponse {
    client_service::serve(
        &state.rm,
        ClientCall::new(caller.clone(), request),
        &state.acls,
        CALL_TIMEOUT,
    )
    .await
}

/// A 500 for an RM that did not answer, or answered out of turn.
pub fn unanswered(what: &str, response: ClientResponse) -> RestError {
    match response {
        ClientResponse::Failed(e) | ClientResponse::Denied(e) => {
            RestError::Internal(format!("{what}: the ResourceManager did not answer: {e}"))
        }
        other => RestError::Internal(format!("{what}: unexpected answer {other:?}")),
    }
}

/// An application id from a path, as WebAppUtils.parseApplicationId refuses one: empty 404,
/// malformed 400 (ApplicationId.fromString's IllegalArgumentException).
pub fn parse_app_id(text: &str) -> Result<ApplicationId, RestError> {
    if text.is_empty() {
        return Err(RestError::NotFound(format!("appId, {text}, is empty or null")));
    }
    if !text.starts_with("application_") {
        return Err(RestError::BadRequestCause(format!(
            "java.lang.IllegalArgumentException: Invalid ApplicationId prefix: {text}. The valid ApplicationId should start with prefix application"
        )));
    }
    text.parse::<ApplicationId>().map_err(|_| {
        RestError::BadRequestCause(format!(
            "java.lang.IllegalArgumentException: Invalid ApplicationId: {text}"
        ))
    })
}

/// The request body, at most [`MAX_BODY`] bytes (a longer one is refused with 413 as soon
/// as its length says so, before it is read).
pub async fn read_body(req: &HttpRequest, mut payload: web::Payload) -> Result<Vec<u8>, RestError> {
    let declared = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(RestError::PayloadTooLarge(MAX_BODY));
    }
    let mut body = Vec::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| RestError::BadRequest(format!("cannot read the request body: {e}")))?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(RestError::PayloadTooLarge(MAX_BODY));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The web app's clock (epoch ms).
pub fn now_ms(state: &WebState) -> u64 {
    state.cluster.clock().epoch_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_ids_are_refused_as_webapputils_does() {
        assert_eq!(
            parse_app_id("application_1700000000000_0001")
                .unwrap()
                .to_string(),
            "application_1700000000000_0001"
        );
        assert_eq!(
            parse_app_id("job_1"),
            Err(RestError::BadRequestCause(
                "java.lang.IllegalArgumentException: Invalid ApplicationId prefix: job_1. The valid ApplicationId should start with prefix application".into()
            ))
        );
        assert_eq!(
            parse_app_id("application_x_1"),
            Err(RestError::BadRequestCause(
                "java.lang.IllegalArgumentException: Invalid ApplicationId: application_x_1".into()
            ))
        );
        assert!(matches!(parse_app_id(""), Err(RestError::NotFound(_))));
    }
}
