//! The query parameters of `/ws/v1/cluster/apps` and `/ws/v1/cluster/nodes`, checked as
//! RMWebServices checks them (ApplicationsRequestBuilder, WebServices.parseQueries), with
//! YARN's words for a bad value.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

use super::errors::RestError;
use crate::yarn::protocol::ApplicationListing;
use crate::yarn::records::{FinalApplicationStatus, NodeState, YarnApplicationState};

/// YARN's final statuses.
const FINAL_STATUSES: [FinalApplicationStatus; 5] = [
    FinalApplicationStatus::Undefined,
    FinalApplicationStatus::Succeeded,
    FinalApplicationStatus::Failed,
    FinalApplicationStatus::Killed,
    FinalApplicationStatus::Ended,
];

/// YARN's node states sparkyard's nodes have; YARN's others (NEW, UNHEALTHY, REBOOTED,
/// SHUTDOWN) are accepted in a filter and match no node.
const NODE_STATES: [NodeState; 4] = [
    NodeState::Running,
    NodeState::Decommissioning,
    NodeState::Decommissioned,
    NodeState::Lost,
];
const OTHER_NODE_STATES: [&str; 4] = ["NEW", "UNHEALTHY", "REBOOTED", "SHUTDOWN"];

/// The filters of `GET /ws/v1/cluster/apps`. `applicationTags` is accepted and ignored:
/// sparkyard's applications carry no tags the RM keeps.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppsFilter {
    /// `state` (deprecated) and `states`, comma-separated; empty: every state.
    pub states: Vec<YarnApplicationState>,
    pub final_status: Option<FinalApplicationStatus>,
    pub user: Option<String>,
    pub queue: Option<String>,
    /// At most this many (YARN's limit: greater than 0).
    pub limit: Option<u64>,
    pub started: (u64, u64),
    pub finished: (u64, u64),
    /// `applicationTypes`, comma-separated, compared without case; empty: every type.
    pub types: Vec<String>,
    pub name: Option<String>,
}

/// The parameter pairs of a query string, in order (a key may repeat).
pub type Params = [(String, String)];

fn values<'a>(params: &'a Params, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    params
        .iter()
        .filter(move |(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The last non-empty value of `key` (as a servlet's getParameter, which takes the first;
/// either is YARN's behaviour for a key given once).
fn single<'a>(params: &'a Params, key: &'a str) -> Option<&'a str> {
    values(params, key).find(|v| !v.is_empty())
}

/// `query`'s comma-separated, trimmed, non-empty parts over every value of `key`.
fn parts<'a>(params: &'a Params, key: &'a str) -> Vec<&'a str> {
    values(params, key)
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

/// Java's `Long.parseLong` of a query value, refused in ApplicationsRequestBuilder's words.
fn long(value: &str, query: &str) -> Result<i64, RestError> {
    value
        .parse::<i64>()
        .map_err(|_| RestError::BadRequest(format!("{query} value must be a number!")))
}

/// YARN's name of an application state.
pub fn parse_app_state(text: &str) -> Option<YarnApplicationState> {
    YarnApplicationState::ALL
        .into_iter()
        .find(|s| s.to_string() == text.to_ascii_uppercase())
}

/// The list of application states as Java prints `Arrays.toString(values())`.
fn app_states_list() -> String {
    let names: Vec<String> = YarnApplicationState::ALL.iter().map(|s| s.to_string()).collect();
    format!("[{}]", names.join(", "))
}

impl AppsFilter {
    /// Parses and checks the parameters of `GET /apps`; a bad value is refused with YARN's
    /// answer (400).
    pub fn parse(params: &Params) -> Result<AppsFilter, RestError> {
        let mut f = AppsFilter {
            started: (0, i64::MAX as u64),
            finished: (0, i64::MAX as u64),
            ..AppsFilter::default()
        };
        let mut state_parts = parts(params, "state");
        state_parts.extend(parts(params, "states"));
        for part in state_parts {
            let state = parse_app_state(part).ok_or_else(|| {
                RestError::BadRequest(format!(
                    "Invalid application-state {part} specified. It should be one of {}",
                    app_states_list()
                ))
            })?;
            if !f.states.contains(&state) {
                f.states.push(state);
            }
        }
        if let Some(status) = single(params, "finalStatus") {
            // FinalApplicationStatus.valueOf: exact, upper case.
            f.final_status = Some(
                FINAL_STATUSES
                    .into_iter()
                    .find(|s| s.to_string() == status)
                    .ok_or_else(|| {
                        RestError::IllegalArgument(format!(
                        "No enum constant org.apache.hadoop.yarn.api.records.FinalApplicationStatus.{status}"
                    ))
                    })?,
            );
        }
        f.user = single(params, "user").map(str::to_string);
        f.queue = single(params, "queue").map(str::to_string);
        if let Some(limit) = single(params, "limit") {
            let n = long(limit, "limit")?;
            if n <= 0 {
                return Err(RestError::BadRequest("limit value must be greater then 0".into()));
            }
            f.limit = Some(n as u64);
        }
        let range = |begin_key: &str, end_key: &str, begin_name: &str, end_name: &str| {
            let begin = single(params, begin_key)
                .map(|v| long(v, begin_key))
                .transpose()?
                .unwrap_or(0);
            let end = single(params, end_key)
                .map(|v| long(v, end_key))
                .transpose()?
                .unwrap_or(i64::MAX);
            if begin < 0 {
                return Err(RestError::BadRequest(format!(
                    "{begin_name} must be greater than 0"
                )));
            }
            if end < 0 {
                return Err(RestError::BadRequest(format!(
                    "{end_name} must be greater than 0"
                )));
            }
            Ok((begin as u64, end as u64))
        };
        f.started = range(
            "startedTimeBegin",
            "startedTimeEnd",
            "startedTimeBegin",
            "startedTimeEnd",
        )?;
        if f.started.0 > f.started.1 {
            return Err(RestError::BadRequest(
                "startedTimeEnd must be greater than startTimeBegin".into(),
            ));
        }
        f.finished = range(
            "finishedTimeBegin",
            "finishedTimeEnd",
            "finishTimeBegin",
            "finishTimeEnd",
        )?;
        if f.finished.0 > f.finished.1 {
            return Err(RestError::BadRequest(
                "finishTimeEnd must be greater than finishTimeBegin".into(),
            ));
        }
        let mut types: Vec<String> = parts(params, "applicationTypes")
            .into_iter()
            .map(str::to_ascii_lowercase)
            .collect();
        types.dedup();
        f.types = types;
        f.name = single(params, "name").map(str::to_string);
        Ok(f)
    }

    /// Whether `l` passes every filter but the limit.
    pub fn matches(&self, l: &ApplicationListing) -> bool {
        let r = &l.report;
        (self.states.is_empty() || self.states.contains(&r.state))
            && self.final_status.is_none_or(|s| s == r.final_status)
            && self.user.as_deref().is_none_or(|u| u == r.user)
            && self.queue.as_deref().is_none_or(|q| q == r.queue)
            && (self.started.0..=self.started.1).contains(&r.start_time)
            && (self.finished.0..=self.finished.1).contains(&r.finish_time)
            && (self.types.is_empty() || self.types.iter().any(|t| t.eq_ignore_ascii_case(&r.app_type)))
            && self.name.as_deref().is_none_or(|n| n == r.name)
    }

    /// The listings that pass, at most `limit` of them, in the order given (by id).
    pub fn apply(&self, listed: Vec<ApplicationListing>) -> Vec<ApplicationListing> {
        let limit = self
            .limit
            .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        listed
            .into_iter()
            .filter(|l| self.matches(l))
            .take(limit)
            .collect()
    }
}

/// The `states` of `GET /nodes` (NodeState.valueOf of each upper-cased part; none: every
/// node). `None` in the answer stands for YARN's states no sparkyard node is in.
pub fn parse_node_states(params: &Params) -> Result<Vec<Option<NodeState>>, RestError> {
    parts(params, "states")
        .into_iter()
        .map(|part| {
            let upper = part.to_ascii_uppercase();
            if let Some(s) = NODE_STATES.into_iter().find(|s| s.to_string() == upper) {
                Ok(Some(s))
            } else if OTHER_NODE_STATES.contains(&upper.as_str()) {
                Ok(None)
            } else {
                Err(RestError::IllegalArgument(format!(
                    "No enum constant org.apache.hadoop.yarn.api.records.NodeState.{upper}"
                )))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn parse(pairs: &[(&str, &str)]) -> Result<AppsFilter, RestError> {
        AppsFilter::parse(&params(pairs))
    }

    #[test]
    fn no_filter_takes_everything() {
        let f = parse(&[]).unwrap();
        assert!(f.states.is_empty() && f.types.is_empty() && f.limit.is_none());
        assert_eq!(f.started, (0, i64::MAX as u64));
        assert_eq!(f.finished, (0, i64::MAX as u64));
    }

    #[test]
    fn states_merge_the_deprecated_state_and_ignore_case() {
        let f = parse(&[
            ("state", "running"),
            ("states", "FINISHED, killed,,"),
            ("states", "RUNNING"),
        ])
        .unwrap();
        assert_eq!(
            f.states,
            vec![
                YarnApplicationState::Running,
                YarnApplicationState::Finished,
                YarnApplicationState::Killed
            ]
        );
    }

    #[test]
    fn a_bad_state_is_refused_naming_every_state() {
        assert_eq!(
            parse(&[("states", "RUNNING,SLEEPING")]),
            Err(RestError::BadRequest(
                "Invalid application-state SLEEPING specified. It should be one of [NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED]".into()
            ))
        );
    }

    #[test]
    fn final_status_is_exact_as_valueof() {
        assert_eq!(
            parse(&[("finalStatus", "SUCCEEDED")]).unwrap().final_status,
            Some(FinalApplicationStatus::Succeeded)
        );
        assert_eq!(
            parse(&[("finalStatus", "succeeded")]),
            Err(RestError::IllegalArgument(
                "No enum constant org.apache.hadoop.yarn.api.records.FinalApplicationStatus.succeeded".into()
            ))
        );
    }

    #[test]
    fn limit_and_times_are_checked_as_yarn_does() {
        assert_eq!(parse(&[("limit", "2")]).unwrap().limit, Some(2));
        assert_eq!(
            parse(&[("limit", "0")]),
            Err(RestError::BadRequest("limit value must be greater then 0".into()))
        );
        assert_eq!(
            parse(&[("limit", "ten")]),
            Err(RestError::BadRequest("limit value must be a number!".into()))
        );
        assert_eq!(
            parse(&[("limit", "99999999999999999999")]),
            Err(RestError::BadRequest("limit value must be a number!".into()))
        );
        assert_eq!(
            parse(&[("startedTimeBegin", "-1")]),
            Err(RestError::BadRequest(
                "startedTimeBegin must be greater than 0".into()
            ))
        );
        assert_eq!(
            parse(&[("startedTimeBegin", "5"), ("startedTimeEnd", "4")]),
            Err(RestError::BadRequest(
                "startedTimeEnd must be greater than startTimeBegin".into()
            ))
        );
        assert_eq!(
            parse(&[("finishedTimeEnd", "x")]),
            Err(RestError::BadRequest(
                "finishedTimeEnd value must be a number!".into()
            ))
        );
        assert_eq!(
            parse(&[("finishedTimeBegin", "9"), ("finishedTimeEnd", "3")]),
            Err(RestError::BadRequest(
                "finishTimeEnd must be greater than finishTimeBegin".into()
            ))
        );
        let f = parse(&[("startedTimeBegin", "10"), ("finishedTimeEnd", "20")]).unwrap();
        assert_eq!(f.started, (10, i64::MAX as u64));
        assert_eq!(f.finished, (0, 20));
    }

    #[test]
    fn types_split_and_lower_and_tags_are_ignored() {
        let f = parse(&[
            ("applicationTypes", "SPARK,MapReduce"),
            ("applicationTags", "a,b"),
        ])
        .unwrap();
        assert_eq!(f.types, vec!["spark".to_string(), "mapreduce".to_string()]);
        assert_eq!(
            f,
            AppsFilter {
                types: f.types.clone(),
                ..parse(&[]).unwrap()
            }
        );
    }

    #[test]
    fn node_states_are_valueof_upper_cased() {
        let p = params(&[("states", "running,LOST,unhealthy")]);
        assert_eq!(
            parse_node_states(&p),
            Ok(vec![Some(NodeState::Running), Some(NodeState::Lost), None])
        );
        assert_eq!(
            parse_node_states(&params(&[("states", "busy")])),
            Err(RestError::IllegalArgument(
                "No enum constant org.apache.hadoop.yarn.api.records.NodeState.BUSY".into()
            ))
        );
        assert_eq!(parse_node_states(&params(&[])), Ok(vec![]));
    }
}
