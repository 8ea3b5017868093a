//! The REST API's failures as YARN's web services answer them: an HTTP status with Hadoop's
//! `RemoteException` JSON (GenericExceptionHandler's RemoteExceptionData), whose message is
//! the Java exception's: `java.lang.Exception: <text>` for the web app's own exceptions
//! (NotFoundException and BadRequestException wrap one), the bare text for the others.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

use actix_web::http::{header, StatusCode};
use actix_web::HttpResponse;

/// One refusal of a REST call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RestError {
    /// 404, NotFoundException: no such application, attempt, node or resource.
    NotFound(String),
    /// 400, BadRequestException: a malformed id, a bad filter value, a bad body.
    BadRequest(String),
    /// 400, BadRequestException wrapping another exception (the whole `toString` of the
    /// cause, e.g. a malformed application id's IllegalArgumentException).
    BadRequestCause(String),
    /// 400, IllegalArgumentException: an enum value Java's `valueOf` refuses (a final status,
    /// a node state).
    IllegalArgument(String),
    /// 405: the resource does not answer this method.
    MethodNotAllowed { method: String, allowed: &'static str },
    /// 413: a body over the limit the web app reads.
    PayloadTooLarge(usize),
    /// 500: the ResourceManager did not answer.
    Internal(String),
}

impl RestError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            RestError::NotFound(_) => StatusCode::NOT_FOUND,
            RestError::BadRequest(_) | RestError::BadRequestCause(_) | RestError::IllegalArgument(_) => {
                StatusCode::BAD_REQUEST
            }
            RestError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            RestError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            RestError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The exception's simple name, message and class, as RemoteExceptionData carries them.
    pub fn exception(&self) -> (&'static str, String, &'static str) {
        match self {
            RestError::NotFound(m) => (
                "NotFoundException",
                format!("java.lang.Exception: {m}"),
                "org.apache.hadoop.yarn.webapp.NotFoundException",
            ),
            RestError::BadRequest(m) => (
                "BadRequestException",
                format!("java.lang.Exception: {m}"),
                "org.apache.hadoop.yarn.webapp.BadRequestException",
            ),
            RestError::BadRequestCause(m) => (
                "BadRequestException",
                m.clone(),
                "org.apache.hadoop.yarn.webapp.BadRequestException",
            ),
            RestError::IllegalArgument(m) => (
                "IllegalArgumentException",
                m.clone(),
                "java.lang.IllegalArgumentException",
            ),
            RestError::MethodNotAllowed { method, allowed } => (
                "WebApplicationException",
                format!("HTTP method {method} is not allowed here (allowed: {allowed})"),
                "javax.ws.rs.WebApplicationException",
            ),
            RestError::PayloadTooLarge(limit) => (
                "WebApplicationException",
                format!("the request body is over the limit of {limit} bytes"),
                "javax.ws.rs.WebApplicationException",
            ),
            RestError::Internal(m) => (
                "YarnRuntimeException",
                m.clone(),
                "org.apache.hadoop.yarn.exceptions.YarnRuntimeException",
            ),
        }
    }

    /// `{"RemoteException":{"exception":..., "message":..., "javaClassName":...}}`.
    pub fn body(&self) -> serde_json::Value {
        let (exception, message, class) = self.exception();
        serde_json::json!({
            "RemoteException": {
                "exception": exception,
                "message": message,
                "javaClassName": class,
            }
        })
    }

    /// The whole answer.
    pub fn response(&self) -> HttpResponse {
        let mut answer = HttpResponse::build(self.status());
        if let RestError::MethodNotAllowed { allowed, .. } = self {
            answer.insert_header((header::ALLOW, *allowed));
        }
        answer.json(self.body())
    }
}

impl std::fmt::Display for RestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (exception, message, _) = self.exception();
        write!(f, "{} {exception}: {message}", self.status().as_u16())
    }
}

impl actix_web::ResponseError for RestError {
    fn status_code(&self) -> StatusCode {
        self.status()
    }

    fn error_response(&self) -> HttpResponse {
        self.response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_hadoops_remote_exception() {
        let e = RestError::NotFound("app with id: application_1_0001 not found".into());
        assert_eq!(e.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            e.body(),
            serde_json::json!({"RemoteException": {
                "exception": "NotFoundException",
                "message": "java.lang.Exception: app with id: application_1_0001 not found",
                "javaClassName": "org.apache.hadoop.yarn.webapp.NotFoundException"
            }})
        );
        let e = RestError::IllegalArgument(
            "No enum constant org.apache.hadoop.yarn.api.records.NodeState.BUSY".into(),
        );
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            e.body()["RemoteException"]["javaClassName"],
            "java.lang.IllegalArgumentException"
        );
        let e = RestError::MethodNotAllowed {
            method: "DELETE".into(),
            allowed: "GET",
        };
        assert_eq!(e.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(e.response().headers().get(header::ALLOW).unwrap(), "GET");
    }
}
