//! The settings the DAGScheduler core reads, with Spark's defaults (spark-reference §3.13).

/// Spark's `DAGScheduler.RESUBMIT_TIMEOUT`: how long to wait after a fetch failure before
/// resubmitting the failed stages (so that a burst of fetch failures leads to one resubmit).
pub const RESUBMIT_TIMEOUT_MS: u64 = 200;

/// `spark.stage.maxConsecutiveAttempts`.
pub const MAX_CONSECUTIVE_ATTEMPTS_KEY: &str = "spark.stage.maxConsecutiveAttempts";
/// `spark.stage.maxAttempts`.
pub const MAX_STAGE_ATTEMPTS_KEY: &str = "spark.stage.maxAttempts";
/// `spark.shuffle.service.enabled`.
pub const SHUFFLE_SERVICE_ENABLED_KEY: &str = "spark.shuffle.service.enabled";
/// `spark.files.fetchFailure.unRegisterOutputOnHost`.
pub const UNREGISTER_OUTPUT_ON_HOST_KEY: &str = "spark.files.fetchFailure.unRegisterOutputOnHost";
/// `spark.shuffle.reduceLocality.enabled`.
pub const REDUCE_LOCALITY_KEY: &str = "spark.shuffle.reduceLocality.enabled";

/// The DAGScheduler's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DagConfig {
    /// `spark.stage.maxConsecutiveAttempts` (4): consecutive failed attempts of a stage
    /// (fetch failures) before the stage is aborted.
    pub max_consecutive_attempts: u32,
    /// `spark.stage.maxAttempts` (Int.MaxValue): total attempts of a stage; the effective
    /// cap is the larger of this and `max_consecutive_attempts`.
    pub max_stage_attempts: i32,
    /// `spark.shuffle.service.enabled` (false): with an external shuffle service a lost
    /// executor keeps its map outputs.
    pub external_shuffle_service: bool,
    /// `spark.files.fetchFailure.unRegisterOutputOnHost` (false).
    pub unregister_output_on_host_on_fetch_failure: bool,
    /// `spark.shuffle.reduceLocality.enabled` (true): reduce tasks prefer the hosts holding
    /// most of their input.
    pub reduce_locality_enabled: bool,
}

impl Default for DagConfig {
    fn default() -> Self {
        DagConfig {
            max_consecutive_attempts: 4,
            max_stage_attempts: i32::MAX,
            external_shuffle_service: false,
            unregister_output_on_host_on_fetch_failure: false,
            reduce_locality_enabled: true,
        }
    }
}

impl DagConfig {
    /// Reads the settings from a configuration lookup (`key → value`); missing or
    /// unparsable values keep their defaults.
    pub fn from_lookup<'a>(get: impl Fn(&str) -> Option<&'a str>) -> DagConfig {
        let d = DagConfig::default();
        let parse_bool = |key: &str, default: bool| {
            get(key)
                .and_then(|v| v.trim().to_ascii_lowercase().parse::<bool>().ok())
                .unwrap_or(default)
        };
        DagConfig {
            max_consecutive_attempts: get(MAX_CONSECUTIVE_ATTEMPTS_KEY)
                .and_then(|v| v.trim().parse::<u32>().ok())
                .unwrap_or(d.max_consecutive_attempts),
            max_stage_attempts: get(MAX_STAGE_ATTEMPTS_KEY)
                .and_then(|v| v.trim().parse::<i32>().ok())
                .unwrap_or(d.max_stage_attempts),
            external_shuffle_service: parse_bool(SHUFFLE_SERVICE_ENABLED_KEY, d.external_shuffle_service),
            unregister_output_on_host_on_fetch_failure: parse_bool(
                UNREGISTER_OUTPUT_ON_HOST_KEY,
                d.unregister_output_on_host_on_fetch_failure,
            ),
            reduce_locality_enabled: parse_bool(REDUCE_LOCALITY_KEY, d.reduce_locality_enabled),
        }
    }

    /// Spark's `maxStageAttempts`: max(`spark.stage.maxAttempts`,
    /// `spark.stage.maxConsecutiveAttempts`).
    pub fn effective_max_stage_attempts(&self) -> u32 {
        let total = u32::try_from(self.max_stage_attempts).unwrap_or(0);
        total.max(self.max_consecutive_attempts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_lookup() {
        let d = DagConfig::default();
        assert_eq!(d.max_consecutive_attempts, 4);
        assert_eq!(d.effective_max_stage_attempts(), i32::MAX as u32);
        let c = DagConfig::from_lookup(|k| match k {
            "spark.stage.maxConsecutiveAttempts" => Some("2"),
            "spark.stage.maxAttempts" => Some("1"),
            "spark.shuffle.service.enabled" => Some("TRUE"),
            "spark.shuffle.reduceLocality.enabled" => Some("nope"),
            _ => None,
        });
        assert_eq!(c.max_consecutive_attempts, 2);
        assert_eq!(c.effective_max_stage_attempts(), 2);
        assert!(c.external_shuffle_service);
        assert!(c.reduce_locality_enabled);
    }
}
