//! What a node's secrets are and what an application's containers may ask of its daemons.
//! Yarn layer: it reads Spark's authentication keys into the rpc layer's [`Keyring`], names
//! the application a container path belongs to, and gates what a connection that proved an
//! application's secret delivers (YARN checks an ApplicationMaster's calls against its
//! AMRMToken and a container start against its NMToken; here the connection's proof is that
//! token).
//!
//! An application's connection may deliver:
//! - anything to the actors of its own containers (a path holding one of its container ids)
//!   and, on the process running its driver, to `/submit`;
//! - to the ResourceManager, its own attempt's ApplicationMasterProtocol calls;
//! - to a NodeManager, ContainerManagementProtocol calls for its own containers;
//! - a death watch of any actor (it learns only that the actor ended), and the list of
//!   nodes (GetClusterNodes, which the allocator reads).
//!
//! Nothing else: not another application's actors, not the ResourceTracker (it cannot pose as
//! a node), not the client protocol (kills and reports go through the client port, which takes
//! the node's secret only), and not the `sparkyard.admin` service of fault injection.

use std::path::Path;
use std::sync::Arc;

use crate::conf::{self, SparkConf};
use crate::rpc::auth::{AcceptApps, Keyring, Secret};
use crate::rpc::remote::{Gate, Security};
use crate::runtime::remote::{RemoteMessage, WATCH};

use super::protocol::{
    Allocate, FinishApplicationMaster, ReadContainerOutput, RegisterApplicationMaster, StartContainer,
    StopContainer,
};
use super::records::{ApplicationId, ContainerId};

/// The application whose container serves `path` (a segment that is a container id, or an
/// application id), if any.
pub fn application_of_path(path: &str) -> Option<String> {
    path.split('/').find_map(|segment| {
        if let Ok(container) = segment.parse::<ContainerId>() {
            return Some(container.attempt.app.to_string());
        }
        segment.parse::<ApplicationId>().ok().map(|app| app.to_string())
    })
}

/// The node's secret as the configuration gives it: `spark.authenticate.secret.file`'s bytes
/// (Spark reads the file when both are set), else `spark.authenticate.secret`. `None` when
/// `spark.authenticate` is off; with it on and no secret, a new random one when `generate`
/// (a one-process embedded cluster), else an error naming the keys.
pub fn node_secret(conf: &SparkConf, generate: bool) -> Result<Option<Secret>, String> {
    if !conf.get(&conf::AUTHENTICATE).map_err(|e| e.to_string())? {
        return Ok(None);
    }
    if let Some(file) = conf
        .get(&conf::AUTHENTICATE_SECRET_FILE)
        .map_err(|e| e.to_string())?
    {
        let bytes = std::fs::read(Path::new(&file)).map_err(|e| {
            format!(
                "{}: cannot read {file}: {e}",
                conf::AUTHENTICATE_SECRET_FILE.name()
            )
        })?;
        let text = String::from_utf8(bytes).map_err(|_| {
            format!(
                "{}: {file} is not UTF-8 text",
                conf::AUTHENTICATE_SECRET_FILE.name()
            )
        })?;
        return Secret::from_text(&text)
            .map(Some)
            .map_err(|e| format!("{}: {file}: {e}", conf::AUTHENTICATE_SECRET_FILE.name()));
    }
    match conf.get(&conf::AUTHENTICATE_SECRET).map_err(|e| e.to_string())? {
        Some(text) => Secret::from_text(&text)
            .map(Some)
            .map_err(|e| format!("{}: {e}", conf::AUTHENTICATE_SECRET.name())),
        None if generate => Secret::generate().map(Some),
        None => Err(format!(
            "{} is true but neither {} nor {} is set",
            conf::AUTHENTICATE.name(),
            conf::AUTHENTICATE_SECRET.name(),
            conf::AUTHENTICATE_SECRET_FILE.name()
        )),
    }
}

/// `spark.network.crypto.enabled`.
pub fn encrypts(conf: &SparkConf) -> Result<bool, String> {
    conf.get(&conf::NETWORK_CRYPTO_ENABLED).map_err(|e| e.to_string())
}

/// The keyring of a process holding the node's secret from `conf` (an open one when
/// `spark.authenticate` is off), accepting `accept`'s applications.
pub fn node_keyring(conf: &SparkConf, accept: AcceptApps, generate: bool) -> Result<Arc<Keyring>, String> {
    Ok(match node_secret(conf, generate)? {
        Some(secret) => Keyring::node(secret, accept, encrypts(conf)?, application_of_path),
        None => Keyring::open(),
    })
}

/// The keyring of a container of `app` holding `secret` (none: authentication is off).
pub fn container_keyring(app: &str, secret: Option<&str>, encrypt: bool) -> Result<Arc<Keyring>, String> {
    Ok(match secret {
        Some(text) => Keyring::application(app, Secret::from_text(text)?, encrypt, application_of_path),
        None => Keyring::open(),
    })
}

/// What a node's daemons serve under: `keyring`, with the gate on what applications send.
/// `driver_here`: the driver of the one application this process runs lives under `/submit`
/// (the embedded cluster of `sparkyard submit`).
pub fn daemon_security(keyring: Arc<Keyring>, driver_here: bool) -> Security {
    let gate: Gate = Arc::new(move |app: &str, message: &RemoteMessage| admit(app, message, driver_here));
    Security {
        keyring,
        gate: Some(gate),
    }
}

/// Whether application `app`'s connection may deliver `message` (see the module's rules).
pub fn admit(app: &str, message: &RemoteMessage, driver_here: bool) -> Result<(), String> {
    let refuse = |why: &str| {
        Err(format!(
            "application {app} may not send {} ({}) to {}: {why}",
            message.message, message.protocol, message.to
        ))
    };
    if message.protocol == crate::yarn::client_service::ADMIN_SERVICE {
        return refuse("fault injection and the actor list are for the node's own processes");
    }
    if let Some(owner) = application_of_path(&message.to) {
        return if owner == app {
            Ok(())
        } else {
            refuse(&format!("it belongs to application {owner}"))
        };
    }
    if message.to == "/submit" || message.to.starts_with("/submit/") {
        return if driver_here {
            Ok(())
        } else {
            refuse("no driver runs in this process")
        };
    }
    // A death watch tells only that an actor ended; the node list (the allocator reads it for
    // hosts and racks) is what every node heartbeat response also carries.
    if message.protocol == WATCH
        || (message.protocol == "ApplicationClientProtocol" && message.message == "GetClusterNodes")
    {
        return Ok(());
    }
    let for_app = |owner: &ApplicationId| owner.to_string() == app;
    let body = &message.body;
    let own = match (message.protocol.as_str(), message.message.as_str()) {
        ("ApplicationMasterProtocol", "RegisterApplicationMaster") => {
            decode::<RegisterApplicationMaster>(body).map(|m| for_app(&m.attempt_id.app))
        }
        ("ApplicationMasterProtocol", "Allocate") => {
            decode::<Allocate>(body).map(|m| for_app(&m.attempt_id.app))
        }
        ("ApplicationMasterProtocol", "FinishApplicationMaster") => {
            decode::<FinishApplicationMaster>(body).map(|m| for_app(&m.attempt_id.app))
        }
        ("ContainerManagementProtocol", "StartContainer") => {
            decode::<StartContainer>(body).map(|m| for_app(&m.container.id.attempt.app))
        }
        ("ContainerManagementProtocol", "StopContainer") => {
            decode::<StopContainer>(body).map(|m| for_app(&m.container_id.attempt.app))
        }
        ("ContainerManagementProtocol", "ReadContainerOutput") => {
            decode::<ReadContainerOutput>(body).map(|m| for_app(&m.container_id.attempt.app))
        }
        _ => return refuse("an application's containers do not make that call"),
    };
    match own {
        Some(true) => Ok(()),
        Some(false) => refuse("it names another application's attempt or container"),
        None => refuse("its body does not decode"),
    }
}

fn decode<T: serde::de::DeserializeOwned>(body: &[u8]) -> Option<T> {
    rmp_serde::from_slice(body).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(to: &str, protocol: &str, name: &str, body: Vec<u8>) -> RemoteMessage {
        RemoteMessage {
            to: to.into(),
            from: None,
            protocol: protocol.into(),
            message: name.into(),
            body,
            ask: None,
            origin: None,
            hops: 0,
        }
    }

    #[test]
    fn the_node_secret_comes_from_the_file_or_the_key_and_a_missing_one_names_both() {
        let mut conf = SparkConf::new();
        assert!(node_secret(&conf, false).unwrap().is_none(), "off by default");
        conf.set("spark.authenticate", "true");
        let err = node_secret(&conf, false).unwrap_err();
        assert!(
            err.contains("spark.authenticate.secret") && err.contains("spark.authenticate.secret.file"),
            "{err}"
        );
        assert!(
            node_secret(&conf, true).unwrap().is_some(),
            "an embedded cluster draws one"
        );
        conf.set("spark.authenticate.secret", "");
        assert!(node_secret(&conf, false).unwrap_err().contains("empty"));
        conf.set("spark.authenticate.secret", "text");
        let from_key = node_secret(&conf, false).unwrap().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        conf.set("spark.authenticate.secret.file", file.to_str().unwrap());
        let err = node_secret(&conf, false).unwrap_err();
        assert!(
            err.starts_with("spark.authenticate.secret.file: cannot read"),
            "{err}"
        );
        std::fs::write(&file, "text").unwrap();
        assert_eq!(node_secret(&conf, false).unwrap().unwrap(), from_key);
    }

    #[test]
    fn a_path_names_its_containers_application() {
        assert_eq!(
            application_of_path("/node/nm-a/container_17_0003_01_000002/executor").as_deref(),
            Some("application_17_0003")
        );
        assert_eq!(application_of_path("/node/rm"), None);
        assert_eq!(application_of_path("/submit/driver"), None);
    }

    #[test]
    fn an_application_reaches_its_own_actors_and_calls_only() {
        let a = "application_17_0003";
        let own = "/node/nm-a/container_17_0003_01_000001/am/driver/x";
        let other = "/node/nm-a/container_17_0004_01_000001/am/driver/x";
        assert!(admit(
            a,
            &message(own, "CoarseGrainedClusterMessage", "RegisterExecutor", vec![]),
            false
        )
        .is_ok());
        let refused = admit(
            a,
            &message(other, "CoarseGrainedClusterMessage", "RegisterExecutor", vec![]),
            false,
        )
        .unwrap_err();
        assert!(
            refused.contains("belongs to application application_17_0004"),
            "{refused}"
        );
        assert!(admit(a, &message("/node", "sparkyard.admin", "Kill", vec![]), false).is_err());
        assert!(admit(
            a,
            &message("/node/rm", "ResourceTracker", "NodeHeartbeat", vec![]),
            false
        )
        .is_err());
        assert!(admit(
            a,
            &message("/node/rm", "ApplicationClientProtocol", "KillApplication", vec![]),
            false
        )
        .is_err());
        assert!(admit(a, &message("/submit/driver/x", "P", "M", vec![]), false).is_err());
        assert!(admit(a, &message("/submit/driver/x", "P", "M", vec![]), true).is_ok());
        let stop = |app: u32| StopContainer {
            container_id: format!("container_17_{app:04}_01_000002").parse().unwrap(),
            requester: super::super::protocol::StopRequester::ApplicationMaster,
        };
        let body = |m: &StopContainer| rmp_serde::to_vec(m).unwrap();
        assert!(admit(
            a,
            &message(
                "/node/nm-a",
                "ContainerManagementProtocol",
                "StopContainer",
                body(&stop(3))
            ),
            false
        )
        .is_ok());
        assert!(admit(
            a,
            &message(
                "/node/nm-a",
                "ContainerManagementProtocol",
                "StopContainer",
                body(&stop(4))
            ),
            false
        )
        .is_err());
        assert!(admit(
            a,
            &message(
                "/node/nm-a",
                "ContainerManagementProtocol",
                "StopContainer",
                vec![1, 2]
            ),
            false
        )
        .is_err());
    }
}
