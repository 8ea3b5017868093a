//! ClientRMService's dispatch: one ApplicationClientProtocol call ([`ClientRequest`]) served
//! by the local ResourceManager. The embedded cluster's Client calls it directly; the node's
//! TCP listener calls it for each request that arrives over the wire.

use std::time::Duration;

use super::protocol::{ClientRequest, ClientResponse, ReportWait};
use super::resource_manager::ResourceManager;
use crate::rpc::EndpointRef;

/// Serves `request` with the ResourceManager behind `rm`, waiting at most `timeout` (plus the
/// request's own report wait).
pub async fn serve(
    rm: &EndpointRef<ResourceManager>,
    request: ClientRequest,
    timeout: Duration,
) -> ClientResponse {
    let failed = |e: crate::rpc::AskError| ClientResponse::Failed(e.to_string());
    match request {
        ClientRequest::GetNewApplication(m) => match rm.ask(m, timeout).await {
            Ok(r) => ClientResponse::NewApplication(r),
            Err(e) => failed(e),
        },
        ClientRequest::SubmitApplication(m) => match rm.ask(m, timeout).await {
            Ok(r) => ClientResponse::SubmitApplication(r),
            Err(e) => failed(e),
        },
        ClientRequest::GetApplicationReport(m) => {
            let wait = m.wait.map(|w: ReportWait| w.max).unwrap_or(Duration::ZERO);
            match rm.ask(m, timeout + wait).await {
                Ok(r) => ClientResponse::ApplicationReport(r),
                Err(e) => failed(e),
            }
        }
        ClientRequest::KillApplication(m) => match rm.ask(m, timeout).await {
            Ok(r) => ClientResponse::KillApplication(r),
            Err(e) => failed(e),
        },
        ClientRequest::GetClusterNodes(m) => match rm.ask(m, timeout).await {
            Ok(r) => ClientResponse::ClusterNodes(r),
            Err(e) => failed(e),
        },
        ClientRequest::GetContainerOutput(m) => match rm.ask(m, timeout).await {
            Ok(r) => ClientResponse::ContainerOutput(r),
            Err(e) => failed(e),
        },
    }
}
