//! ApplicationMasterArguments: the AM container's command-line arguments, as the Client
//! writes them into the AM's launch command and the NodeManager hands them back.
//!
//! Layer: deploy (the Spark side: spark-submit, the YARN Client, the ApplicationMaster; above context).
//!
//! `--jar`, `--class`, `--primary-py-file`, `--primary-r-file`, `--arg` (repeated, in
//! order), `--properties-file`, `--dist-cache-conf`. An unknown argument is refused with
//! Spark's "Unknown/unsupported param" and the usage text; the container then exits 1.

use std::fmt;

/// The parsed arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AmArgs {
    pub user_jar: Option<String>,
    pub user_class: Option<String>,
    pub primary_py_file: Option<String>,
    pub primary_r_file: Option<String>,
    pub user_args: Vec<String>,
    pub properties_file: Option<String>,
    pub dist_cache_conf: Option<String>,
}

/// A bad AM command line (the container exits 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AmArgsError(pub String);

impl fmt::Display for AmArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AmArgsError {}

/// The usage text Spark prints.
pub fn am_usage(program: &str) -> String {
    format!(
        "Usage: {program} [options]\n\
         Options:\n  \
         --jar JAR_PATH       Path to your application's JAR file\n  \
         --class CLASS_NAME   Name of your application's main class\n  \
         --primary-py-file    A main Python file\n  \
         --primary-r-file     A main R file\n  \
         --arg ARG            Argument to be passed to your application's main class.\n                       \
         Multiple invocations are possible, each will be passed in order.\n  \
         --properties-file FILE Path to a custom Spark properties file.\n"
    )
}

/// Parses the AM's arguments (without the program and role names).
pub fn parse_am_args(args: &[String]) -> Result<AmArgs, AmArgsError> {
    let mut out = AmArgs::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| AmArgsError(format!("Missing value for {name}")))
        };
        match arg.as_str() {
            "--jar" => out.user_jar = Some(value("--jar")?),
            "--class" => out.user_class = Some(value("--class")?),
            "--primary-py-file" => out.primary_py_file = Some(value("--primary-py-file")?),
            "--primary-r-file" => out.primary_r_file = Some(value("--primary-r-file")?),
            "--arg" => out.user_args.push(value("--arg")?),
            "--properties-file" => out.properties_file = Some(value("--properties-file")?),
            "--dist-cache-conf" => out.dist_cache_conf = Some(value("--dist-cache-conf")?),
            other => return Err(AmArgsError(format!("Unknown/unsupported param {other}"))),
        }
    }
    if out.primary_py_file.is_some() && out.primary_r_file.is_some() {
        return Err(AmArgsError(
            "Cannot have primary-py-file and primary-r-file at the same time".into(),
        ));
    }
    Ok(out)
}

/// The argument vector for `args` (the inverse of [`parse_am_args`]).
pub fn am_command_args(args: &AmArgs) -> Vec<String> {
    let mut out = Vec::new();
    let push = |out: &mut Vec<String>, k: &str, v: &Option<String>| {
        if let Some(v) = v {
            out.push(k.to_string());
            out.push(v.clone());
        }
    };
    push(&mut out, "--jar", &args.user_jar);
    push(&mut out, "--class", &args.user_class);
    push(&mut out, "--primary-py-file", &args.primary_py_file);
    push(&mut out, "--primary-r-file", &args.primary_r_file);
    for a in &args.user_args {
        out.push("--arg".into());
        out.push(a.clone());
    }
    push(&mut out, "--properties-file", &args.properties_file);
    push(&mut out, "--dist-cache-conf", &args.dist_cache_conf);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn round_trip_and_errors() {
        let args = parse_am_args(&v(&[
            "--class",
            "org.apache.spark.examples.SparkPi",
            "--jar",
            "spark-examples.jar",
            "--arg",
            "10",
            "--arg",
            "--not-an-option",
            "--properties-file",
            "__spark_conf__.properties",
        ]))
        .unwrap();
        assert_eq!(args.user_args, v(&["10", "--not-an-option"]));
        assert_eq!(parse_am_args(&am_command_args(&args)).unwrap(), args);
        assert_eq!(
            parse_am_args(&v(&["--bogus"])).unwrap_err().to_string(),
            "Unknown/unsupported param --bogus"
        );
        assert_eq!(
            parse_am_args(&v(&["--class"])).unwrap_err().to_string(),
            "Missing value for --class"
        );
        assert!(am_usage("sparkyard application-master").starts_with("Usage: sparkyard application-master"));
    }
}
