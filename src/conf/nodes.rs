//! The NodeManagers of sparkyard's all-in-one node, declared in `yarn-site.conf` with one key
//! per node: `yarn.sparkyard.nodemanager.<host> = rack=/rack1,memory-mb=8192,vcores=8`.
//!
//! Layer: conf (above the runtime).
//!
//! Every field is optional: `rack` defaults to `/default-rack` (YARN's default rack),
//! `memory-mb` to `yarn.nodemanager.resource.memory-mb` and `vcores` to
//! `yarn.nodemanager.resource.cpu-vcores`. Without any node key there is one node, `host1`.

use super::entry::check_host_name;
use super::keys::{NM_PMEM_MB, NM_VCORES, NODE_MANAGER_PREFIX};
use super::parse::quote;
use super::{ConfError, SparkConf};

/// YARN's rack for hosts without topology information.
pub const DEFAULT_RACK: &str = "/default-rack";
/// Host of the single NodeManager used when no node key is configured.
pub const DEFAULT_NODE_HOST: &str = "host1";

/// One NodeManager: where it is and what it offers to containers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeSpec {
    /// Host name (the part of the key after `yarn.sparkyard.nodemanager.`).
    pub host: String,
    /// Rack path, starting with `/`.
    pub rack: String,
    /// Memory for containers, in MB.
    pub memory_mb: u64,
    /// Vcores for containers.
    pub vcores: u32,
}

/// Fields given in one node value; `None` means "use the default".
#[derive(Debug, Default, PartialEq, Eq)]
struct NodeFields {
    rack: Option<String>,
    memory_mb: Option<u64>,
    vcores: Option<u32>,
}

fn node_error(key: &str, value: &str, why: String) -> ConfError {
    ConfError::InvalidValue {
        key: key.to_string(),
        value: value.to_string(),
        reason: format!("({why})"),
    }
}

/// Parses the host out of `key` and the fields out of `value`, naming both on error.
fn parse_node(key: &str, value: &str) -> Result<(String, NodeFields), ConfError> {
    let host = key.strip_prefix(NODE_MANAGER_PREFIX).unwrap_or(key);
    check_host_name(host).map_err(|why| node_error(key, value, format!("host {why}")))?;
    let mut fields = NodeFields::default();
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, raw) = item.split_once('=').ok_or_else(|| {
            node_error(
                key,
                value,
                format!(
                    "{} is not name=value; fields are rack, memory-mb, vcores",
                    quote(item)
                ),
            )
        })?;
        let (name, raw) = (name.trim(), raw.trim());
        let duplicate = || node_error(key, value, format!("field {name} is given twice"));
        match name {
            "rack" => {
                if !raw.starts_with('/') || raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    return Err(node_error(
                        key,
                        value,
                        format!(
                            "rack {} must be a path starting with '/', e.g. /rack1",
                            quote(raw)
                        ),
                    ));
                }
                if fields.rack.replace(raw.to_string()).is_some() {
                    return Err(duplicate());
                }
            }
            "memory-mb" => {
                let mb = raw.parse::<u64>().ok().filter(|mb| *mb > 0).ok_or_else(|| {
                    node_error(
                        key,
                        value,
                        format!(
                            "memory-mb {} must be a whole number of MB, at least 1",
                            quote(raw)
                        ),
                    )
                })?;
                if fields.memory_mb.replace(mb).is_some() {
                    return Err(duplicate());
                }
            }
            "vcores" => {
                let vc = raw.parse::<u32>().ok().filter(|v| *v > 0).ok_or_else(|| {
                    node_error(
                        key,
                        value,
                        format!("vcores {} must be a whole number, at least 1", quote(raw)),
                    )
                })?;
                if fields.vcores.replace(vc).is_some() {
                    return Err(duplicate());
                }
            }
            other => {
                return Err(node_error(
                    key,
                    value,
                    format!(
                        "unknown field {}; fields are rack, memory-mb, vcores",
                        quote(other)
                    ),
                ))
            }
        }
    }
    Ok((host.to_string(), fields))
}

/// Syntax check of one node key and value, used by `validate` (defaults are not needed).
pub(crate) fn check_node_key(key: &str, value: &str) -> Result<(), ConfError> {
    parse_node(key, value).map(|_| ())
}

/// The NodeManagers of the all-in-one node, sorted by host. Without any
/// `yarn.sparkyard.nodemanager.<host>` key, one default node `host1` is returned. Missing
/// fields take their defaults (rack `/default-rack`, `yarn.nodemanager.resource.memory-mb`,
/// `yarn.nodemanager.resource.cpu-vcores`); a malformed key or value is an error naming both.
pub fn node_managers(conf: &SparkConf) -> Result<Vec<NodeSpec>, ConfError> {
    let default_memory = conf.get(&NM_PMEM_MB)?;
    let default_vcores = conf.get(&NM_VCORES)?;
    let mut nodes = Vec::new();
    for (key, value) in conf.iter() {
        if !key.starts_with(NODE_MANAGER_PREFIX) {
            continue;
        }
        let (host, fields) = parse_node(key, value)?;
        nodes.push(NodeSpec {
            host,
            rack: fields.rack.unwrap_or_else(|| DEFAULT_RACK.to_string()),
            memory_mb: fields.memory_mb.unwrap_or(default_memory),
            vcores: fields.vcores.unwrap_or(default_vcores),
        });
    }
    if nodes.is_empty() {
        nodes.push(NodeSpec {
            host: DEFAULT_NODE_HOST.to_string(),
            rack: DEFAULT_RACK.to_string(),
            memory_mb: default_memory,
            vcores: default_vcores,
        });
    }
    nodes.sort_by(|a, b| a.host.cmp(&b.host));
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(host: &str, rack: &str, memory_mb: u64, vcores: u32) -> NodeSpec {
        NodeSpec {
            host: host.to_string(),
            rack: rack.to_string(),
            memory_mb,
            vcores,
        }
    }

    #[test]
    fn default_single_node() {
        let conf = SparkConf::new();
        assert_eq!(
            node_managers(&conf),
            Ok(vec![node("host1", "/default-rack", 8192, 8)])
        );
        let mut conf = SparkConf::new();
        conf.set("yarn.nodemanager.resource.memory-mb", "4096")
            .set("yarn.nodemanager.resource.cpu-vcores", "2");
        assert_eq!(
            node_managers(&conf),
            Ok(vec![node("host1", "/default-rack", 4096, 2)])
        );
    }

    #[test]
    fn nodes_with_fields_and_defaults_sorted_by_host() {
        let mut conf = SparkConf::new();
        conf.set(
            "yarn.sparkyard.nodemanager.host3",
            "rack=/rack2, memory-mb=4096 , vcores=2",
        )
        .set(
            "yarn.sparkyard.nodemanager.host1",
            "rack=/rack1,memory-mb=8192,vcores=8",
        )
        .set("yarn.sparkyard.nodemanager.host2", "")
        .set("yarn.sparkyard.nodemanager.node-4.example.com", "vcores=16,")
        .set("yarn.nodemanager.resource.memory-mb", "2048");
        assert_eq!(
            node_managers(&conf),
            Ok(vec![
                node("host1", "/rack1", 8192, 8),
                node("host2", "/default-rack", 2048, 8),
                node("host3", "/rack2", 4096, 2),
                node("node-4.example.com", "/default-rack", 2048, 16),
            ])
        );
    }

    fn error_for(key_host: &str, value: &str) -> String {
        let mut conf = SparkConf::new();
        conf.set(format!("yarn.sparkyard.nodemanager.{key_host}"), value);
        let e = node_managers(&conf).unwrap_err().to_string();
        assert_eq!(
            check_node_key(&format!("yarn.sparkyard.nodemanager.{key_host}"), value)
                .unwrap_err()
                .to_string(),
            e
        );
        assert!(!e.contains('\n'));
        e
    }

    #[test]
    fn node_errors_name_key_and_value() {
        let e = error_for("host1", "rack=/r1,cpu=4");
        assert_eq!(
            e,
            "invalid value for yarn.sparkyard.nodemanager.host1: 'rack=/r1,cpu=4' (unknown field 'cpu'; fields are rack, memory-mb, vcores)"
        );
        assert!(error_for("host1", "memory-mb=lots").contains("memory-mb 'lots' must be a whole number"));
        assert!(error_for("host1", "memory-mb=0").contains("at least 1"));
        assert!(error_for("host1", "memory-mb=-5").contains("memory-mb '-5'"));
        assert!(error_for("host1", "vcores=0").contains("vcores '0'"));
        assert!(error_for("host1", "vcores=1.5").contains("vcores '1.5'"));
        assert!(error_for("host1", "rack=rack1").contains("rack 'rack1' must be a path starting with '/'"));
        assert!(error_for("host1", "rack=/a b").contains("rack '/a b'"));
        assert!(error_for("host1", "rack").contains("'rack' is not name=value"));
        assert!(error_for("host1", "vcores=1,vcores=2").contains("field vcores is given twice"));
        let e = error_for("bad_host", "vcores=1");
        assert!(
            e.starts_with("invalid value for yarn.sparkyard.nodemanager.bad_host: 'vcores=1' (host 'bad_host' is not a valid host name"),
            "{e}"
        );
        assert!(error_for("", "vcores=1").contains("host name is empty"));
        assert!(error_for("-a.b", "").contains("not a valid host name"));
        assert!(error_for("a..b", "").contains("not a valid host name"));
    }

    #[test]
    fn bad_default_resources_are_reported() {
        let mut conf = SparkConf::new();
        conf.set("yarn.nodemanager.resource.cpu-vcores", "many");
        let e = node_managers(&conf).unwrap_err().to_string();
        assert!(e.starts_with("invalid value for yarn.nodemanager.resource.cpu-vcores: 'many'"));
    }
}
