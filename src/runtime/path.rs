//! Actor paths and path globs.
//!
//! Layer: runtime (above logs, under everything else).
//!
//! Every actor has a path in the supervision tree, such as `/node/rm` or
//! `/node/nm-host1/container_1_0001_01_000001/am/allocator`. A segment is the component's
//! name in kebab case (`driver-endpoint`), an executor's is `executor-<id>`, a container's is
//! its YARN id. Globs select actors for fault injection and log filtering: `*` matches any run
//! of characters, `/` included, so `*/allocator` finds every allocator.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::logs::glob::glob_match;

/// The path of an actor in its cluster's supervision tree. Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActorPath(Arc<str>);

/// A path or glob that is not well formed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathError(pub String);

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PathError {}

/// Checks one path segment: non-empty, ASCII letters, digits, `-`, `_` and `.` only.
pub fn validate_segment(segment: &str) -> Result<(), PathError> {
    if segment.is_empty() {
        return Err(PathError("an actor path segment cannot be empty".into()));
    }
    if let Some(c) = segment
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(PathError(format!(
            "invalid character {c:?} in actor path segment '{segment}' (allowed: letters, digits, '-', '_', '.')"
        )));
    }
    Ok(())
}

impl ActorPath {
    /// A top-level path, `/<name>`.
    pub fn root(name: &str) -> Result<ActorPath, PathError> {
        validate_segment(name)?;
        Ok(ActorPath(Arc::from(format!("/{name}"))))
    }

    /// A path built from parts that are already valid (constants, validated host names);
    /// not checked. Prefer [`ActorPath::parse`] for anything that comes from input.
    pub fn from_trusted(text: String) -> ActorPath {
        ActorPath(Arc::from(text))
    }

    /// Parses and validates a full path such as `/node/rm`.
    pub fn parse(text: &str) -> Result<ActorPath, PathError> {
        let Some(rest) = text.strip_prefix('/') else {
            return Err(PathError(format!("actor path '{text}' must start with '/'")));
        };
        for segment in rest.split('/') {
            validate_segment(segment).map_err(|e| PathError(format!("actor path '{text}': {e}")))?;
        }
        Ok(ActorPath(Arc::from(text)))
    }

    /// The path of a child of this actor.
    pub fn child(&self, segment: &str) -> Result<ActorPath, PathError> {
        validate_segment(segment)?;
        Ok(ActorPath(Arc::from(format!("{}/{segment}", self.0))))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The shared string, for log contexts that keep it without copying.
    pub fn as_arc(&self) -> Arc<str> {
        self.0.clone()
    }

    /// The last segment.
    pub fn name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or("")
    }

    /// The parent path, `None` for a top-level path.
    pub fn parent(&self) -> Option<ActorPath> {
        let idx = self.0.rfind('/')?;
        if idx == 0 {
            None
        } else {
            Some(ActorPath(Arc::from(&self.0[..idx])))
        }
    }

    /// Whether `other` lies strictly below this path.
    pub fn is_ancestor_of(&self, other: &ActorPath) -> bool {
        other.0.len() > self.0.len()
            && other.0.starts_with(&*self.0)
            && other.0.as_bytes()[self.0.len()] == b'/'
    }

    /// Number of segments (`/node/rm` has 2).
    pub fn depth(&self) -> usize {
        self.0.matches('/').count()
    }
}

impl fmt::Display for ActorPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ActorPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ActorPath({})", self.0)
    }
}

impl Serialize for ActorPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ActorPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        ActorPath::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A validated path pattern: a path in which `*` matches any run of characters, `/` included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathGlob {
    pattern: String,
}

impl PathGlob {
    /// Parses a path or glob. It must start with `/` or `*`, have no empty segment, and use
    /// only the characters of path segments plus `*`.
    pub fn parse(pattern: &str) -> Result<PathGlob, PathError> {
        let bad = |why: &str| {
            Err(PathError(format!(
                "malformed actor path or glob '{pattern}': {why}"
            )))
        };
        if pattern.is_empty() {
            return bad("it is empty");
        }
        if !(pattern.starts_with('/') || pattern.starts_with('*')) {
            return bad("it must start with '/' or '*'");
        }
        if pattern.contains("//") {
            return bad("it has an empty segment ('//')");
        }
        if pattern.len() > 1 && pattern.ends_with('/') {
            return bad("it ends with '/'");
        }
        if let Some(c) = pattern
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '*')))
        {
            return bad(&format!("invalid character {c:?}"));
        }
        Ok(PathGlob {
            pattern: pattern.to_string(),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether the pattern has no `*`, i.e. names exactly one path.
    pub fn is_literal(&self) -> bool {
        !self.pattern.contains('*')
    }

    pub fn matches(&self, path: &str) -> bool {
        glob_match(&self.pattern, path)
    }
}

impl fmt::Display for PathGlob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.pattern)
    }
}

/// `DriverEndpoint` → `driver-endpoint`: the kebab-case path segment of a component name.
pub fn kebab_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower = i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) && !out.ends_with('-') {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else if c == '_' || c == ' ' {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The last segment of a Rust type name, without generics: `a::b::Foo<c::D>` → `Foo`.
pub fn short_type_name<T: ?Sized>() -> &'static str {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_build_and_parse() {
        let node = ActorPath::root("node").unwrap();
        let rm = node.child("rm").unwrap();
        assert_eq!(rm.as_str(), "/node/rm");
        assert_eq!(rm.name(), "rm");
        assert_eq!(rm.parent(), Some(node.clone()));
        assert_eq!(node.parent(), None);
        assert!(node.is_ancestor_of(&rm));
        assert!(!rm.is_ancestor_of(&node));
        assert!(!ActorPath::parse("/nodex").unwrap().is_ancestor_of(&rm));
        assert_eq!(ActorPath::parse("/node/rm").unwrap(), rm);
        assert_eq!(rm.depth(), 2);
        assert!(ActorPath::parse("node/rm").is_err());
        assert!(ActorPath::parse("/node//rm").is_err());
        assert!(ActorPath::parse("/node/r m").is_err());
        assert!(node.child("a/b").is_err());
        assert!(node.child("container_1_0001_01_000001").is_ok());
    }

    #[test]
    fn glob_matches_across_segments() {
        assert!(glob_match(
            "*/allocator",
            "/node/nm-host1/container_1/am/allocator"
        ));
        assert!(glob_match("/node/*", "/node/rm"));
        assert!(glob_match("/node/*", "/node/nm-host1/x"));
        assert!(!glob_match("/node/*", "/node"));
        assert!(glob_match("*", "/anything/at/all"));
        assert!(glob_match("/a/*-*/c", "/a/executor-1/c"));
        assert!(!glob_match("/a/b", "/a/b/c"));
        assert!(glob_match("*executor-*", "/x/executor-12"));
        assert!(!glob_match("*a*a*a*b", &"a".repeat(5000)));
    }

    #[test]
    fn globs_are_validated() {
        assert!(PathGlob::parse("*/allocator").is_ok());
        assert!(PathGlob::parse("/node/rm").unwrap().is_literal());
        for bad in ["", "node", "/a//b", "/a b", "/a/", "/a/[x]"] {
            let err = PathGlob::parse(bad).unwrap_err();
            assert!(err.0.contains("malformed"), "{bad}: {err}");
        }
    }

    #[test]
    fn kebab_case_names() {
        assert_eq!(kebab_case("DriverEndpoint"), "driver-endpoint");
        assert_eq!(kebab_case("YarnSchedulerEndpoint"), "yarn-scheduler-endpoint");
        assert_eq!(kebab_case("AMEndpoint"), "am-endpoint");
        assert_eq!(kebab_case("DAGScheduler"), "dag-scheduler");
        assert_eq!(kebab_case("revive_timer"), "revive-timer");
    }

    #[test]
    fn short_names() {
        assert_eq!(short_type_name::<Vec<String>>(), "Vec");
        assert_eq!(short_type_name::<ActorPath>(), "ActorPath");
    }
}
