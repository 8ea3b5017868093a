//! The redaction of the environment's properties, as Spark's EventLoggingListener does before
//! it writes the environment update: a property whose key or value matches
//! `spark.redaction.regex` gets [`REDACTION_REPLACEMENT_TEXT`].
//!
//! Layer: scheduler (the driver's event log); the rule itself is `conf::Redactor`.

/// The value a redacted property gets (Spark's `REDACTION_REPLACEMENT_TEXT`).
pub use crate::conf::REDACTION_REPLACEMENT_TEXT;

/// The properties with the value of each sensitive one (its key or its value matches
/// `spark.redaction.regex`, which the properties themselves may set) replaced by
/// [`REDACTION_REPLACEMENT_TEXT`], as Spark's EventLoggingListener does for the environment.
pub fn redact_properties(properties: &[(String, String)]) -> Vec<(String, String)> {
    redact_with(&crate::conf::Redactor::from_pairs(properties), properties)
}

pub(super) fn redact_with(
    redactor: &crate::conf::Redactor,
    properties: &[(String, String)],
) -> Vec<(String, String)> {
    redactor.redact(properties.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}
