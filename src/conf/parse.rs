//! Value parsers for configuration strings, following the rules Spark applies when it reads
//! its own configuration: time strings (`JavaUtils.timeStringAs`), byte-size strings
//! (`JavaUtils.byteStringAs`), booleans, integers, decimals and comma lists.
//!
//! Layer: conf (above the runtime).
//!
//! Every parser is total: any input gives `Ok` or an `Err` with a one-line message that
//! quotes the offending value (control characters escaped); none of them panics, and
//! arithmetic overflow is reported as an error.

use std::time::Duration;

/// The unit a bare number (one without a suffix) is read in by [`parse_time`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeUnit {
    Microseconds,
    Milliseconds,
    Seconds,
    Minutes,
    Hours,
    Days,
}

impl TimeUnit {
    /// The suffix Spark uses for this unit (`us`, `ms`, `s`, `min`, `h`, `d`).
    pub const fn suffix(self) -> &'static str {
        match self {
            TimeUnit::Microseconds => "us",
            TimeUnit::Milliseconds => "ms",
            TimeUnit::Seconds => "s",
            TimeUnit::Minutes => "min",
            TimeUnit::Hours => "h",
            TimeUnit::Days => "d",
        }
    }

    /// `n` of this unit as a duration, or `None` when it does not fit.
    pub fn duration(self, n: u64) -> Option<Duration> {
        let secs_per = match self {
            TimeUnit::Microseconds => return Some(Duration::from_micros(n)),
            TimeUnit::Milliseconds => return Some(Duration::from_millis(n)),
            TimeUnit::Seconds => 1u64,
            TimeUnit::Minutes => 60,
            TimeUnit::Hours => 3_600,
            TimeUnit::Days => 86_400,
        };
        n.checked_mul(secs_per).map(Duration::from_secs)
    }

    fn from_suffix(s: &str) -> Option<TimeUnit> {
        Some(match s {
            "us" => TimeUnit::Microseconds,
            "ms" => TimeUnit::Milliseconds,
            "s" => TimeUnit::Seconds,
            "m" | "min" => TimeUnit::Minutes,
            "h" => TimeUnit::Hours,
            "d" => TimeUnit::Days,
            _ => return None,
        })
    }
}

/// The unit a bare number is read in by [`parse_size`]; all multiples are binary (KiB = 1024).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SizeUnit {
    Byte,
    KiB,
    MiB,
    GiB,
    TiB,
    PiB,
}

impl SizeUnit {
    /// Number of bytes in one of this unit.
    pub const fn bytes(self) -> u64 {
        match self {
            SizeUnit::Byte => 1,
            SizeUnit::KiB => 1 << 10,
            SizeUnit::MiB => 1 << 20,
            SizeUnit::GiB => 1 << 30,
            SizeUnit::TiB => 1 << 40,
            SizeUnit::PiB => 1 << 50,
        }
    }

    /// The short suffix Spark accepts for this unit (`b`, `k`, `m`, `g`, `t`, `p`).
    pub const fn suffix(self) -> &'static str {
        match self {
            SizeUnit::Byte => "b",
            SizeUnit::KiB => "k",
            SizeUnit::MiB => "m",
            SizeUnit::GiB => "g",
            SizeUnit::TiB => "t",
            SizeUnit::PiB => "p",
        }
    }

    fn from_suffix(s: &str) -> Option<SizeUnit> {
        Some(match s {
            "b" => SizeUnit::Byte,
            "k" | "kb" => SizeUnit::KiB,
            "m" | "mb" => SizeUnit::MiB,
            "g" | "gb" => SizeUnit::GiB,
            "t" | "tb" => SizeUnit::TiB,
            "p" | "pb" => SizeUnit::PiB,
            _ => return None,
        })
    }
}

/// What a time string should look like; used in error messages.
pub(crate) const TIME_EXPECTED: &str =
    "expected a number with an optional unit us, ms, s, m/min, h, d, e.g. 100ms or 3s";
/// What a time string of a `spark.sparkyard.*` key may look like.
pub(crate) const HUMANE_TIME_EXPECTED: &str =
    "expected a number with an optional unit us, ms, s, m/min, h, d, e.g. 100ms or 3s, \
     or a compound duration such as 1m 30s";
/// What a size string should look like; used in error messages.
pub(crate) const SIZE_EXPECTED: &str =
    "expected a number with an optional unit b, k, m, g, t, p, e.g. 512m or 4g";

/// The largest number Spark can hold (a Java `long`); larger values are rejected.
const JAVA_LONG_MAX: u64 = i64::MAX as u64;

/// Why a number-with-suffix string was rejected (internal; turned into messages).
#[derive(Debug, PartialEq, Eq)]
enum Bad {
    /// Malformed in a way the "expected ..." hint explains (no extra detail).
    Malformed,
    Empty,
    Negative,
    Fractional,
    TooLarge,
}

impl Bad {
    fn detail(&self) -> Option<&'static str> {
        match self {
            Bad::Malformed => None,
            Bad::Empty => Some("the value is empty"),
            Bad::Negative => Some("negative values are not allowed"),
            Bad::Fractional => Some("fractional values are not supported"),
            Bad::TooLarge => Some("the value is too large"),
        }
    }
}

/// Splits a lower-cased, trimmed string into (digits, suffix), classifying what is wrong.
fn split_number(s: &str) -> Result<(u64, &str), Bad> {
    if s.is_empty() {
        return Err(Bad::Empty);
    }
    let (negative, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let digits_end = body
        .char_indices()
        .find(|(_, c)| !c.is_ascii_digit())
        .map_or(body.len(), |(i, _)| i);
    let (digits, rest) = body.split_at(digits_end);
    if digits.is_empty() {
        return Err(Bad::Malformed);
    }
    if let Some(after_dot) = rest.strip_prefix('.') {
        let frac_end = after_dot
            .char_indices()
            .find(|(_, c)| !c.is_ascii_digit())
            .map_or(after_dot.len(), |(i, _)| i);
        let (frac, suffix) = after_dot.split_at(frac_end);
        if !frac.is_empty() && suffix.chars().all(|c| c.is_ascii_lowercase()) {
            return Err(Bad::Fractional);
        }
        return Err(Bad::Malformed);
    }
    if !rest.chars().all(|c| c.is_ascii_lowercase()) {
        return Err(Bad::Malformed);
    }
    if negative {
        return Err(Bad::Negative);
    }
    let n: u64 = digits.parse().map_err(|_| Bad::TooLarge)?;
    if n > JAVA_LONG_MAX {
        return Err(Bad::TooLarge);
    }
    Ok((n, rest))
}

/// Java's `String.trim` after `toLowerCase`: drops every char up to U+0020 at both ends.
fn java_trim_lower(s: &str) -> String {
    s.to_lowercase().trim_matches(|c: char| c <= ' ').to_string()
}

fn time_inner(s: &str, default_unit: TimeUnit) -> Result<Duration, Bad> {
    let lower = java_trim_lower(s);
    let (n, suffix) = split_number(&lower)?;
    let unit = if suffix.is_empty() {
        default_unit
    } else {
        TimeUnit::from_suffix(suffix).ok_or(Bad::Malformed)?
    };
    unit.duration(n).ok_or(Bad::TooLarge)
}

fn size_inner(s: &str, default_unit: SizeUnit) -> Result<u64, Bad> {
    let lower = java_trim_lower(s);
    let (n, suffix) = split_number(&lower)?;
    let unit = if suffix.is_empty() {
        default_unit
    } else {
        SizeUnit::from_suffix(suffix).ok_or(Bad::Malformed)?
    };
    match n.checked_mul(unit.bytes()) {
        Some(bytes) if bytes <= JAVA_LONG_MAX => Ok(bytes),
        _ => Err(Bad::TooLarge),
    }
}

fn reason(what: &str, bad: &Bad, expected: &str) -> String {
    match bad.detail() {
        Some(detail) => format!("is not {what} ({detail}; {expected})"),
        None => format!("is not {what} ({expected})"),
    }
}

/// Reason (without the value) why `s` is not a Spark time string, or the duration.
pub(crate) fn time_reason(s: &str, default_unit: TimeUnit) -> Result<Duration, String> {
    time_inner(s, default_unit).map_err(|bad| reason("a time", &bad, TIME_EXPECTED))
}

/// Like [`time_reason`], but also accepts humantime's compound durations.
pub(crate) fn humane_time_reason(s: &str, default_unit: TimeUnit) -> Result<Duration, String> {
    match time_inner(s, default_unit) {
        Ok(d) => Ok(d),
        Err(bad) => {
            let trimmed = s.trim();
            match humantime::parse_duration(trimmed) {
                Ok(d) if !trimmed.is_empty() => Ok(d),
                _ => Err(reason("a time", &bad, HUMANE_TIME_EXPECTED)),
            }
        }
    }
}

/// Reason (without the value) why `s` is not a Spark size string, or the byte count.
pub(crate) fn size_reason(s: &str, default_unit: SizeUnit) -> Result<u64, String> {
    size_inner(s, default_unit).map_err(|bad| reason("a size", &bad, SIZE_EXPECTED))
}

/// Parses a time string the way Spark's `JavaUtils.timeStringAs` does: the string is
/// lower-cased and trimmed, then must be a whole number followed by an optional unit
/// (`us`, `ms`, `s`, `m` or `min`, `h`, `d`); a bare number is read in `default_unit`.
/// Negative and fractional values are rejected (Spark's pattern allows a minus sign, but no
/// sparkyard setting has a meaning for a negative time), as is a number above Java's
/// `Long.MAX_VALUE` or a result that does not fit a [`Duration`].
///
/// Unlike Spark, which converts to the key's unit and truncates (`1500us` read as
/// milliseconds gives 1), the result keeps full precision.
///
/// The error is one line quoting the value, e.g.
/// `'abc' is not a time (expected a number with an optional unit us, ms, s, m/min, h, d, e.g. 100ms or 3s)`.
pub fn parse_time(s: &str, default_unit: TimeUnit) -> Result<Duration, String> {
    time_reason(s, default_unit).map_err(|r| format!("{} {r}", quote(s)))
}

/// Parses a time for a key in sparkyard's own namespace (`spark.sparkyard.*`): everything
/// [`parse_time`] accepts, and additionally the compound forms of the `humantime` crate such
/// as `1m 30s`, `250ms`, `2h 15min` or `1day`.
pub fn parse_humane_time(s: &str, default_unit: TimeUnit) -> Result<Duration, String> {
    humane_time_reason(s, default_unit).map_err(|r| format!("{} {r}", quote(s)))
}

/// Parses a byte size the way Spark's `JavaUtils.byteStringAs` does and returns bytes: the
/// string is lower-cased and trimmed, then must be a whole number followed by an optional
/// unit (`b`, `k`/`kb`, `m`/`mb`, `g`/`gb`, `t`/`tb`, `p`/`pb`, binary multiples); a bare
/// number is read in `default_unit`. Fractional values are rejected ("fractional values are
/// not supported", as Spark says), so are negative values and results above Java's
/// `Long.MAX_VALUE` bytes.
///
/// Spark converts the result to the key's unit and truncates (`1500k` read as MiB gives 1);
/// this returns the exact byte count and leaves rounding to the caller.
pub fn parse_size(s: &str, default_unit: SizeUnit) -> Result<u64, String> {
    size_reason(s, default_unit).map_err(|r| format!("{} {r}", quote(s)))
}

/// Parses a boolean as Spark does: surrounding whitespace ignored, `true` or `false` in any
/// letter case.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if t.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(format!("{} is not a boolean (expected true or false)", quote(s)))
    }
}

/// Splits a comma-separated list as Spark's `stringToSeq` does: items are trimmed and empty
/// items dropped.
pub fn parse_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_string)
        .collect()
}

/// Formats a duration for messages, in humantime's style (`1m 30s`, `250ms`, `0s`).
pub fn format_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// Formats a byte count with the largest binary unit that divides it exactly
/// (`1g`, `384m`, `1536k`, `10b`), in the syntax [`parse_size`] reads back.
pub fn format_size(bytes: u64) -> String {
    for unit in [
        SizeUnit::PiB,
        SizeUnit::TiB,
        SizeUnit::GiB,
        SizeUnit::MiB,
        SizeUnit::KiB,
    ] {
        if bytes != 0 && bytes.is_multiple_of(unit.bytes()) {
            return format!("{}{}", bytes / unit.bytes(), unit.suffix());
        }
    }
    format!("{bytes}b")
}

/// Escapes control characters so a user-supplied string can sit inside a one-line message;
/// very long strings are cut to keep messages readable.
pub(crate) fn one_line(s: &str) -> String {
    escape_controls(s, Some(200))
}

/// [`one_line`] without the cut, for sparkyard's own messages (Spark's texts, whole).
pub(crate) fn one_line_uncut(s: &str) -> String {
    escape_controls(s, None)
}

fn escape_controls(s: &str, limit: Option<usize>) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if Some(i) == limit {
            out.push_str("...");
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The value in single quotes, made safe for a one-line message.
pub(crate) fn quote(s: &str) -> String {
    format!("'{}'", one_line(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn time_bare_numbers_use_default_unit() {
        assert_eq!(parse_time("100", TimeUnit::Milliseconds), Ok(ms(100)));
        assert_eq!(parse_time("100", TimeUnit::Seconds), Ok(Duration::from_secs(100)));
        assert_eq!(
            parse_time("7", TimeUnit::Microseconds),
            Ok(Duration::from_micros(7))
        );
        assert_eq!(parse_time("2", TimeUnit::Minutes), Ok(Duration::from_secs(120)));
        assert_eq!(parse_time("2", TimeUnit::Hours), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_time("2", TimeUnit::Days), Ok(Duration::from_secs(172_800)));
        assert_eq!(parse_time("0", TimeUnit::Seconds), Ok(Duration::ZERO));
    }

    #[test]
    fn time_every_suffix() {
        let u = TimeUnit::Seconds;
        assert_eq!(parse_time("250us", u), Ok(Duration::from_micros(250)));
        assert_eq!(parse_time("250ms", u), Ok(ms(250)));
        assert_eq!(parse_time("3s", u), Ok(Duration::from_secs(3)));
        assert_eq!(parse_time("2m", u), Ok(Duration::from_secs(120)));
        assert_eq!(parse_time("2min", u), Ok(Duration::from_secs(120)));
        assert_eq!(parse_time("1h", u), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_time("1d", u), Ok(Duration::from_secs(86_400)));
        // Precision is kept, unlike Spark's truncating unit conversion.
        assert_eq!(
            parse_time("1500us", TimeUnit::Milliseconds),
            Ok(Duration::from_micros(1500))
        );
    }

    #[test]
    fn time_case_and_whitespace() {
        let u = TimeUnit::Milliseconds;
        assert_eq!(parse_time("3S", u), Ok(Duration::from_secs(3)));
        assert_eq!(parse_time("100MS", u), Ok(ms(100)));
        assert_eq!(parse_time("2Min", u), Ok(Duration::from_secs(120)));
        assert_eq!(parse_time("  3s \t", u), Ok(Duration::from_secs(3)));
        assert_eq!(parse_time("\n42\r", u), Ok(ms(42)));
        // No space is allowed between number and unit, as in Spark.
        assert!(parse_time("3 s", u).is_err());
    }

    #[test]
    fn time_rejections() {
        let u = TimeUnit::Milliseconds;
        let e = parse_time("abc", u).unwrap_err();
        assert_eq!(
            e,
            "'abc' is not a time (expected a number with an optional unit us, ms, s, m/min, h, d, e.g. 100ms or 3s)"
        );
        assert!(parse_time("-5s", u)
            .unwrap_err()
            .contains("negative values are not allowed"));
        assert!(parse_time("-5", u).unwrap_err().contains("negative"));
        assert!(parse_time("1.5s", u)
            .unwrap_err()
            .contains("fractional values are not supported"));
        assert!(parse_time("0.5", u).unwrap_err().contains("fractional"));
        assert!(parse_time("", u).unwrap_err().contains("the value is empty"));
        assert!(parse_time("   ", u).unwrap_err().contains("empty"));
        assert!(parse_time("10x", u).is_err());
        assert!(parse_time("10sec", u).is_err());
        assert!(parse_time("s", u).is_err());
        assert!(parse_time("1s2", u).is_err());
        assert!(parse_time("1.s", u).is_err());
        assert!(parse_time("+5s", u).is_err());
        assert!(parse_time("1m 30s", u).is_err());
    }

    #[test]
    fn time_overflow_is_an_error() {
        let u = TimeUnit::Milliseconds;
        // Fits a Java long as milliseconds.
        assert_eq!(
            parse_time("9223372036854775807", u),
            Ok(ms(9_223_372_036_854_775_807))
        );
        assert!(parse_time("9223372036854775808", u)
            .unwrap_err()
            .contains("too large"));
        assert!(parse_time("99999999999999999999999999", u)
            .unwrap_err()
            .contains("too large"));
        assert!(parse_time("9223372036854775807d", u)
            .unwrap_err()
            .contains("too large"));
        assert!(parse_time("9223372036854775807h", u).is_err());
    }

    #[test]
    fn humane_time_accepts_compound_durations() {
        let u = TimeUnit::Milliseconds;
        assert_eq!(parse_humane_time("1m 30s", u), Ok(Duration::from_secs(90)));
        assert_eq!(parse_humane_time("250ms", u), Ok(ms(250)));
        assert_eq!(parse_humane_time("500", u), Ok(ms(500)));
        assert_eq!(parse_humane_time("2h 15min", u), Ok(Duration::from_secs(8100)));
        let e = parse_humane_time("soon", u).unwrap_err();
        assert!(e.starts_with("'soon' is not a time"), "{e}");
        assert!(e.contains("1m 30s"), "{e}");
        assert!(parse_humane_time("", u).is_err());
        assert!(parse_humane_time("-1s", u).is_err());
    }

    #[test]
    fn size_bare_numbers_use_default_unit() {
        assert_eq!(parse_size("512", SizeUnit::Byte), Ok(512));
        assert_eq!(parse_size("2", SizeUnit::KiB), Ok(2048));
        assert_eq!(parse_size("128", SizeUnit::MiB), Ok(128 << 20));
        assert_eq!(parse_size("1", SizeUnit::GiB), Ok(1 << 30));
        assert_eq!(parse_size("1", SizeUnit::TiB), Ok(1 << 40));
        assert_eq!(parse_size("1", SizeUnit::PiB), Ok(1 << 50));
        assert_eq!(parse_size("0", SizeUnit::MiB), Ok(0));
    }

    #[test]
    fn size_every_suffix() {
        let u = SizeUnit::MiB;
        assert_eq!(parse_size("10b", u), Ok(10));
        assert_eq!(parse_size("10k", u), Ok(10 << 10));
        assert_eq!(parse_size("10kb", u), Ok(10 << 10));
        assert_eq!(parse_size("10m", u), Ok(10 << 20));
        assert_eq!(parse_size("10mb", u), Ok(10 << 20));
        assert_eq!(parse_size("10g", u), Ok(10 << 30));
        assert_eq!(parse_size("10gb", u), Ok(10 << 30));
        assert_eq!(parse_size("10t", u), Ok(10 << 40));
        assert_eq!(parse_size("10tb", u), Ok(10 << 40));
        assert_eq!(parse_size("10p", u), Ok(10 << 50));
        assert_eq!(parse_size("10pb", u), Ok(10 << 50));
        assert_eq!(parse_size("4G", u), Ok(4 << 30));
        assert_eq!(parse_size("512MB", u), Ok(512 << 20));
        assert_eq!(parse_size("  1g  ", u), Ok(1 << 30));
    }

    #[test]
    fn size_rejections() {
        let u = SizeUnit::MiB;
        assert_eq!(
            parse_size("12x", u).unwrap_err(),
            "'12x' is not a size (expected a number with an optional unit b, k, m, g, t, p, e.g. 512m or 4g)"
        );
        assert!(parse_size("1.5g", u)
            .unwrap_err()
            .contains("fractional values are not supported"));
        assert!(parse_size("-1g", u).unwrap_err().contains("negative"));
        assert!(parse_size("", u).unwrap_err().contains("empty"));
        assert!(parse_size("g", u).is_err());
        assert!(parse_size("1 g", u).is_err());
        assert!(parse_size("1e3", u).is_err());
        assert!(parse_size("1kib", u).is_err());
    }

    #[test]
    fn size_overflow_is_an_error() {
        let u = SizeUnit::Byte;
        assert_eq!(
            parse_size("9223372036854775807", u),
            Ok(9_223_372_036_854_775_807)
        );
        assert!(parse_size("9223372036854775808", u)
            .unwrap_err()
            .contains("too large"));
        assert!(parse_size("8192p", u).unwrap_err().contains("too large"));
        assert!(parse_size("8191p", u).is_ok());
        assert!(parse_size("18446744073709551616", u).is_err());
        assert!(parse_size("9999999999999999999g", u).is_err());
    }

    #[test]
    fn booleans_and_lists() {
        assert_eq!(parse_bool("true"), Ok(true));
        assert_eq!(parse_bool(" FALSE "), Ok(false));
        assert_eq!(parse_bool("True"), Ok(true));
        assert_eq!(
            parse_bool("yes").unwrap_err(),
            "'yes' is not a boolean (expected true or false)"
        );
        assert!(parse_bool("").is_err());
        assert!(parse_bool("1").is_err());
        assert_eq!(parse_list(" a, b ,,c,"), vec!["a", "b", "c"]);
        assert!(parse_list("").is_empty());
        assert!(parse_list(" , ").is_empty());
    }

    #[test]
    fn formatting() {
        assert_eq!(format_duration(Duration::from_secs(90)), "1m 30s");
        assert_eq!(format_duration(ms(250)), "250ms");
        assert_eq!(format_duration(Duration::ZERO), "0s");
        assert_eq!(format_size(1 << 30), "1g");
        assert_eq!(format_size(384 << 20), "384m");
        assert_eq!(format_size(1536 << 10), "1536k");
        assert_eq!(format_size(10), "10b");
        assert_eq!(format_size(0), "0b");
        for n in [0u64, 1, 1023, 1 << 20, 3 << 40, 5 << 50] {
            assert_eq!(parse_size(&format_size(n), SizeUnit::Byte), Ok(n));
        }
    }

    #[test]
    fn quoting_keeps_messages_on_one_line() {
        assert_eq!(quote("a\nb\tc"), "'a\\nb\\tc'");
        assert_eq!(quote("\u{7}"), "'\\u{7}'");
        let long = "x".repeat(500);
        assert!(quote(&long).len() < 220);
        let e = parse_time("1\n2", TimeUnit::Seconds).unwrap_err();
        assert!(!e.contains('\n'));
    }
}
