//! Loading and checking the configuration a command starts with.
//!
//! Layer: cli (the top: parses commands and assembles processes).
//!
//! `submit` and `node` read `<config dir>/spark-defaults.conf` and `<config dir>/yarn-site.conf`
//! (the directory from `--config-dir`, else `$SPARKYARD_CONF_DIR`, else `./config`), apply
//! `--conf key=value` on top, and validate every known key before anything starts, so a bad
//! value ends the command with one line naming the key, the value and what was expected.

use std::path::{Path, PathBuf};

use crate::conf::{self, ConfWarning, SparkConf};

/// A command's configuration, checked.
#[derive(Debug)]
pub struct Loaded {
    pub conf: SparkConf,
    /// The configuration directory used (it may not exist: then only defaults apply).
    pub dir: PathBuf,
    pub warnings: Vec<ConfWarning>,
}

/// Splits a `--conf key=value` argument on its first `=`.
pub fn parse_conf_pair(pair: &str) -> Result<(String, String), String> {
    match pair.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("--conf expects key=value, got '{pair}'")),
    }
}

/// The configuration directory for `flag`; an explicit directory that does not exist is an
/// error, the default one may be missing (built-in defaults then apply).
pub fn config_dir(flag: Option<&Path>) -> Result<PathBuf, String> {
    let dir = conf::resolve_config_dir(flag);
    if flag.is_some() && !dir.is_dir() {
        return Err(format!("config directory {} does not exist", dir.display()));
    }
    Ok(dir)
}

/// Loads the directory's two files, applies `overrides` in order and validates the result.
pub fn load(flag: Option<&Path>, overrides: &[(String, String)]) -> Result<Loaded, String> {
    let dir = config_dir(flag)?;
    let mut conf = conf::load_config_dir(&dir).map_err(|e| e.to_string())?;
    for (k, v) in overrides {
        conf.set(k.as_str(), v.as_str());
    }
    validate(conf, dir)
}

/// Validates `conf`: the first bad value is the error; unknown keys are warnings.
pub fn validate(conf: SparkConf, dir: PathBuf) -> Result<Loaded, String> {
    let warnings = conf.validate().map_err(|e| e.to_string())?;
    Ok(Loaded { conf, dir, warnings })
}

/// Keeps the `spark.*` and `yarn.*` pairs; the others are returned as warnings, as Spark
/// drops non-Spark properties.
pub fn spark_and_yarn_only(pairs: Vec<(String, String)>) -> (Vec<(String, String)>, Vec<String>) {
    let mut warnings = Vec::new();
    let kept = pairs
        .into_iter()
        .filter(|(k, _)| {
            let ok = k.starts_with("spark.") || k.starts_with("yarn.");
            if !ok {
                warnings.push(format!("Ignoring non-Spark config property: {k}"));
            }
            ok
        })
        .collect();
    (kept, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conf_pairs() {
        assert_eq!(parse_conf_pair("a.b=c=d").unwrap(), ("a.b".into(), "c=d".into()));
        assert_eq!(parse_conf_pair("a=").unwrap(), ("a".into(), "".into()));
        assert_eq!(
            parse_conf_pair("nothing").unwrap_err(),
            "--conf expects key=value, got 'nothing'"
        );
        assert!(parse_conf_pair("=v").is_err());
    }

    #[test]
    fn missing_explicit_dir_is_an_error() {
        let err = config_dir(Some(Path::new("/no/such/dir"))).unwrap_err();
        assert_eq!(err, "config directory /no/such/dir does not exist");
    }

    #[test]
    fn bad_value_names_key_and_value() {
        let dir = tempfile::tempdir().unwrap();
        let err = load(
            Some(dir.path()),
            &[("spark.scheduler.revive.interval".into(), "soon".into())],
        )
        .unwrap_err();
        assert!(err.contains("spark.scheduler.revive.interval"), "{err}");
        assert!(err.contains("'soon'"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn unknown_keys_warn_with_nearest() {
        let dir = tempfile::tempdir().unwrap();
        let loaded = load(Some(dir.path()), &[("spark.executor.memroy".into(), "2g".into())]).unwrap();
        assert_eq!(loaded.warnings.len(), 1);
        assert!(loaded.warnings[0].to_string().contains("spark.executor.memory"));
    }

    #[test]
    fn non_spark_keys_are_dropped_with_a_warning() {
        let (kept, warnings) = spark_and_yarn_only(vec![
            ("spark.a".into(), "1".into()),
            ("yarn.b".into(), "2".into()),
            ("other".into(), "3".into()),
        ]);
        assert_eq!(kept.len(), 2);
        assert_eq!(warnings, ["Ignoring non-Spark config property: other"]);
    }
}
