//! The supervision settings of `spark.sparkyard.supervisor.*`. Conf layer: the runtime takes
//! a plain [`Supervision`] value and reads no configuration itself; whoever assembles a tree
//! (the node, the AM, the driver, the embedded submission) reads it here and passes it down.

use crate::runtime::supervisor::{Backoff, Intensity, Supervision};

use super::{keys, ConfError, SparkConf};

/// Reads `spark.sparkyard.supervisor.{maxRestarts, restartPeriod, backoff, maxBackoff,
/// shutdownTimeout}`; a backoff of 0 means restart at once.
pub fn supervision(conf: &SparkConf) -> Result<Supervision, ConfError> {
    let initial = conf.get(&keys::SUPERVISOR_BACKOFF)?;
    Ok(Supervision {
        intensity: Intensity {
            max_restarts: conf.get(&keys::SUPERVISOR_MAX_RESTARTS)?,
            period: conf.get(&keys::SUPERVISOR_RESTART_PERIOD)?,
        },
        backoff: (!initial.is_zero()).then_some(Backoff {
            initial,
            max: conf.get(&keys::SUPERVISOR_MAX_BACKOFF)?,
        }),
        shutdown_timeout: conf.get(&keys::SUPERVISOR_SHUTDOWN_TIMEOUT)?,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::runtime::supervisor::{Strategy, SupervisorSpec};

    #[test]
    fn supervision_from_configuration() {
        assert_eq!(supervision(&SparkConf::new()).unwrap(), Supervision::default());
        let mut conf = SparkConf::new();
        conf.set("spark.sparkyard.supervisor.maxRestarts", "1")
            .set("spark.sparkyard.supervisor.restartPeriod", "1m 30s")
            .set("spark.sparkyard.supervisor.backoff", "50ms")
            .set("spark.sparkyard.supervisor.maxBackoff", "2s")
            .set("spark.sparkyard.supervisor.shutdownTimeout", "250");
        let s = supervision(&conf).unwrap();
        assert_eq!(
            s.intensity,
            Intensity {
                max_restarts: 1,
                period: Duration::from_secs(90)
            }
        );
        assert_eq!(
            s.backoff,
            Some(Backoff {
                initial: Duration::from_millis(50),
                max: Duration::from_secs(2)
            })
        );
        assert_eq!(s.shutdown_timeout, Duration::from_millis(250));
        let spec = SupervisorSpec::new(Strategy::OneForAll).supervision(&s);
        assert_eq!(spec.intensity.max_restarts, 1);
        conf.set("spark.sparkyard.supervisor.restartPeriod", "0");
        let err = supervision(&conf).unwrap_err().to_string();
        assert!(err.contains("spark.sparkyard.supervisor.restartPeriod"), "{err}");
    }
}
