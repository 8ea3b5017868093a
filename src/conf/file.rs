//! Reading and writing Java properties files, the format of `spark-defaults.conf` and of
//! sparkyard's `yarn-site.conf`, with the rules of `java.util.Properties.load` as Spark uses
//! it (`Utils.getPropertiesFromFile`):
//!
//! Layer: conf (above the runtime).
//!
//! - lines end with `\n`, `\r` or `\r\n`; leading spaces, tabs and form feeds are ignored;
//! - blank lines and lines whose first non-blank character is `#` or `!` are skipped;
//! - a line ending in an odd number of backslashes continues on the next line (whose leading
//!   blanks are dropped);
//! - the key ends at the first unescaped `=`, `:` or blank; blanks and at most one `=` or `:`
//!   then separate it from the value;
//! - escapes `\t \n \r \f \\ \uXXXX` (and `\` before any other character, which stands for
//!   that character) apply to keys and values;
//! - values are then trimmed of leading and trailing characters up to U+0020 except CR and LF,
//!   as Spark's `trimExceptCRLF` does.
//!
//! Files are read as UTF-8 (as Spark reads them); a leading byte-order mark is ignored.
//! Differences from Java, which would silently accept them: invalid UTF-8, a malformed or
//! unpaired `\u` escape and a line with a value but no key are errors naming file and line.

use std::path::Path;

use super::ConfError;

/// Characters Java's properties reader treats as blanks.
fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\x0c'
}

/// The message of an I/O error without Rust's ` (os error N)` suffix.
pub(crate) fn io_message(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s,
    }
}

/// Reads a properties file into (key, value) pairs in file order (a key given twice appears
/// twice; setting the pairs in order makes the later one win, as in Java).
///
/// Errors: `cannot read properties file <path>: <reason>` when the file cannot be read, and
/// `<path>:<line>: <problem>` for malformed content.
pub fn load_properties_file(path: &Path) -> Result<Vec<(String, String)>, ConfError> {
    let bytes = std::fs::read(path).map_err(|e| ConfError::Read {
        path: path.to_path_buf(),
        message: io_message(&e),
    })?;
    parse_properties_bytes(&bytes, path)
}

/// Parses properties from bytes (UTF-8); `source` only names the origin in errors.
pub fn parse_properties_bytes(bytes: &[u8], source: &Path) -> Result<Vec<(String, String)>, ConfError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_properties(text, source),
        Err(e) => {
            let good = bytes.get(..e.valid_up_to()).unwrap_or(&[]);
            let line = 1 + good.iter().filter(|b| **b == b'\n').count();
            Err(ConfError::Syntax {
                path: source.to_path_buf(),
                line,
                message: "the file is not valid UTF-8".to_string(),
            })
        }
    }
}

/// Parses properties text; `source` only names the origin in errors.
pub fn parse_properties(text: &str, source: &Path) -> Result<Vec<(String, String)>, ConfError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    parse_lines(text).map_err(|(line, message)| ConfError::Syntax {
        path: source.to_path_buf(),
        line,
        message,
    })
}

/// Splits text into natural lines (terminated by `\n`, `\r` or `\r\n`), numbered from 1.
fn natural_lines(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut number = 1;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push((number, &text[start..i]));
                number += 1;
                i += 1;
                start = i;
            }
            b'\r' => {
                lines.push((number, &text[start..i]));
                number += 1;
                i += if bytes.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < text.len() {
        lines.push((number, &text[start..]));
    }
    lines
}

/// A logical line and, for error reporting, where each natural line's part starts in it.
struct Logical {
    text: String,
    /// (byte offset in `text`, line number), ascending by offset.
    starts: Vec<(usize, usize)>,
}

impl Logical {
    fn line_at(&self, offset: usize) -> usize {
        self.starts
            .iter()
            .take_while(|(start, _)| *start <= offset)
            .last()
            .map_or(1, |(_, line)| *line)
    }
}

fn parse_lines(text: &str) -> Result<Vec<(String, String)>, (usize, String)> {
    let lines = natural_lines(text);
    let mut pairs = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (number, raw) = lines[i];
        i += 1;
        let content = raw.trim_start_matches(is_blank);
        if content.is_empty() || content.starts_with('#') || content.starts_with('!') {
            continue;
        }
        let mut logical = Logical {
            text: String::new(),
            starts: Vec::new(),
        };
        let mut part = content;
        let mut part_line = number;
        loop {
            logical.starts.push((logical.text.len(), part_line));
            let backslashes = part.chars().rev().take_while(|c| *c == '\\').count();
            if backslashes % 2 == 0 {
                logical.text.push_str(part);
                break;
            }
            logical.text.push_str(&part[..part.len() - 1]);
            match lines.get(i) {
                Some((next_number, next_raw)) => {
                    i += 1;
                    part = next_raw.trim_start_matches(is_blank);
                    part_line = *next_number;
                }
                None => break,
            }
        }
        if logical.text.is_empty() {
            continue;
        }
        pairs.push(split_key_value(&logical)?);
    }
    Ok(pairs)
}

/// Splits a logical line into its unescaped key and trimmed, unescaped value.
fn split_key_value(logical: &Logical) -> Result<(String, String), (usize, String)> {
    let chars: Vec<(usize, char)> = logical.text.char_indices().collect();
    let n = chars.len();
    let mut key_end = n;
    let mut value_start = n;
    let mut has_separator = false;
    let mut escaped = false;
    for (idx, &(_, c)) in chars.iter().enumerate() {
        if !escaped && (c == '=' || c == ':') {
            key_end = idx;
            value_start = idx + 1;
            has_separator = true;
            break;
        }
        if !escaped && is_blank(c) {
            key_end = idx;
            value_start = idx + 1;
            break;
        }
        escaped = c == '\\' && !escaped;
    }
    while let Some(&(_, c)) = chars.get(value_start) {
        if is_blank(c) {
            value_start += 1;
        } else if !has_separator && (c == '=' || c == ':') {
            has_separator = true;
            value_start += 1;
        } else {
            break;
        }
    }
    let key = unescape(chars.get(..key_end).unwrap_or(&[]), logical)?;
    let value = unescape(chars.get(value_start..).unwrap_or(&[]), logical)?;
    if key.is_empty() {
        let line = logical.line_at(0);
        return Err((line, "a line with a value but no key".to_string()));
    }
    Ok((key, trim_except_crlf(&value).to_string()))
}

/// Reads the 4 hex digits of a `\u` escape starting at `chars[at]`.
fn hex4(chars: &[(usize, char)], at: usize) -> Option<u32> {
    let digits = chars.get(at..at + 4)?;
    digits
        .iter()
        .try_fold(0u32, |acc, (_, c)| Some(acc * 16 + c.to_digit(16)?))
}

fn unescape(chars: &[(usize, char)], logical: &Logical) -> Result<String, (usize, String)> {
    let mut out = String::with_capacity(chars.len());
    let mut i = 0;
    while let Some(&(pos, c)) = chars.get(i) {
        i += 1;
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(&(_, e)) = chars.get(i) else {
            break;
        };
        i += 1;
        match e {
            't' => out.push('\t'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            'f' => out.push('\x0c'),
            'u' => {
                let bad = |msg: String| (logical.line_at(pos), msg);
                let shown: String = chars
                    .get(i..(i + 4).min(chars.len()))
                    .unwrap_or(&[])
                    .iter()
                    .map(|(_, c)| *c)
                    .collect();
                let unit = hex4(chars, i).ok_or_else(|| {
                    bad(format!(
                        "malformed \\uXXXX escape '\\u{}' (expected 4 hexadecimal digits)",
                        super::parse::one_line(&shown)
                    ))
                })?;
                i += 4;
                let code = if (0xD800..0xDC00).contains(&unit) {
                    // A high surrogate must be followed by an escaped low surrogate.
                    let low = match (chars.get(i), chars.get(i + 1)) {
                        (Some((_, '\\')), Some((_, 'u'))) => hex4(chars, i + 2),
                        _ => None,
                    };
                    match low {
                        Some(low) if (0xDC00..0xE000).contains(&low) => {
                            i += 6;
                            0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                        }
                        _ => {
                            return Err(bad(format!(
                                "escape '\\u{shown}' is an unpaired UTF-16 surrogate"
                            )))
                        }
                    }
                } else {
                    unit
                };
                let ch = char::from_u32(code)
                    .ok_or_else(|| bad(format!("escape '\\u{shown}' is an unpaired UTF-16 surrogate")))?;
                out.push(ch);
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Spark's `trimExceptCRLF`: drops leading and trailing characters up to U+0020, except CR
/// and LF (which can only be there because the user escaped them).
fn trim_except_crlf(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ' && c != '\r' && c != '\n')
}

/// Escapes a key or value for a properties file (see [`to_properties_text`]).
fn escape(s: &str, is_key: bool, out: &mut String) {
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x0c' => out.push_str("\\f"),
            '=' | ':' | '#' | '!' if is_key => {
                out.push('\\');
                out.push(c);
            }
            ' ' if is_key || i == 0 => out.push_str("\\ "),
            c if c.is_control() => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
            c => out.push(c),
        }
    }
}

/// Writes pairs as properties text, one `key=value` line each, escaped so that
/// [`parse_properties`] reads the same pairs back (values lose leading and trailing blanks,
/// which Spark trims on reading anyway).
pub fn to_properties_text<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = String::new();
    for (key, value) in pairs {
        escape(key, true, &mut out);
        out.push('=');
        escape(value, false, &mut out);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn parse(text: &str) -> Vec<(String, String)> {
        parse_properties(text, Path::new("test.conf")).unwrap_or_else(|e| panic!("{e}"))
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn separators() {
        assert_eq!(
            parse("a=1\nb:2\nc 3\nd\t4\ne = 5\nf : 6\ng   7\nh=\ni\nj==x\nk :=y\nl= =z\n"),
            pairs(&[
                ("a", "1"),
                ("b", "2"),
                ("c", "3"),
                ("d", "4"),
                ("e", "5"),
                ("f", "6"),
                ("g", "7"),
                ("h", ""),
                ("i", ""),
                ("j", "=x"),
                ("k", "=y"),
                ("l", "=z"),
            ])
        );
        assert_eq!(
            parse("spark.master   yarn\nspark.executor.memory=4g\n"),
            pairs(&[("spark.master", "yarn"), ("spark.executor.memory", "4g")])
        );
    }

    #[test]
    fn comments_blank_lines_and_line_endings() {
        let text = "# comment\n! also a comment\n   # indented comment\n\n  \t \na=1\r\nb=2\rc=3";
        assert_eq!(parse(text), pairs(&[("a", "1"), ("b", "2"), ("c", "3")]));
        // A '#' after the key is part of the value.
        assert_eq!(parse("a=x # not a comment"), pairs(&[("a", "x # not a comment")]));
        // A comment line ending in a backslash does not continue.
        assert_eq!(parse("# note \\\na=1"), pairs(&[("a", "1")]));
        assert!(parse("").is_empty());
        assert_eq!(parse("\u{feff}a=1"), pairs(&[("a", "1")]));
    }

    #[test]
    fn continuation_lines() {
        assert_eq!(
            parse("list=a,\\\n      b,\\\n  c\nnext=1"),
            pairs(&[("list", "a,b,c"), ("next", "1")])
        );
        // An even number of backslashes is an escaped backslash, not a continuation.
        assert_eq!(
            parse("path=c:\\\\\nnext=1"),
            pairs(&[("path", "c:\\"), ("next", "1")])
        );
        // Three backslashes: one escaped backslash plus a continuation.
        assert_eq!(parse("p=a\\\\\\\n b"), pairs(&[("p", "a\\b")]));
        // A continued line may start with '#': it is not a comment.
        assert_eq!(parse("a=1\\\n#2"), pairs(&[("a", "1#2")]));
        // Continuation at end of file drops the backslash.
        assert_eq!(parse("a=1\\"), pairs(&[("a", "1")]));
        // A blank continuation line ends the logical line.
        assert_eq!(parse("a=1\\\n\nb=2"), pairs(&[("a", "1"), ("b", "2")]));
        // The key itself can continue.
        assert_eq!(
            parse("spark.\\\n  master=yarn"),
            pairs(&[("spark.master", "yarn")])
        );
    }

    #[test]
    fn escapes() {
        assert_eq!(
            parse("a=x\\ty\\nz\\r\\f\\\\\\q"),
            pairs(&[("a", "x\ty\nz\r\x0c\\q")])
        );
        assert_eq!(parse("k\\=ey\\:x\\ y=v"), pairs(&[("k=ey:x y", "v")]));
        assert_eq!(parse("a=\\u0041\\u00e9\\u20AC"), pairs(&[("a", "Aé€")]));
        assert_eq!(parse("a=\\uD83D\\uDE00"), pairs(&[("a", "😀")]));
        assert_eq!(parse("a=héllo wörld"), pairs(&[("a", "héllo wörld")]));
        // Escaped leading blank: the value is still trimmed, as Spark does.
        assert_eq!(parse("a=\\ x"), pairs(&[("a", "x")]));
        // Escaped CR/LF at the ends survive the trim.
        assert_eq!(parse("a=x\\n"), pairs(&[("a", "x\n")]));
        assert_eq!(parse("a=  spaced out \t "), pairs(&[("a", "spaced out")]));
    }

    #[test]
    fn duplicates_keep_file_order() {
        assert_eq!(parse("a=1\na=2"), pairs(&[("a", "1"), ("a", "2")]));
    }

    #[test]
    fn malformed_content_names_file_and_line() {
        let src = Path::new("config/spark-defaults.conf");
        let e = parse_properties("a=1\n\nb=\\u12G4\n", src).unwrap_err();
        assert_eq!(
            e.to_string(),
            "config/spark-defaults.conf:3: malformed \\uXXXX escape '\\u12G4' (expected 4 hexadecimal digits)"
        );
        let e = parse_properties("a=\\u12", src).unwrap_err();
        assert_eq!(
            e.to_string(),
            "config/spark-defaults.conf:1: malformed \\uXXXX escape '\\u12' (expected 4 hexadecimal digits)"
        );
        // The line of the escape is reported, also on a continuation line.
        let e = parse_properties("a=x,\\\n  y,\\\n  \\uZZZZ", src).unwrap_err();
        assert!(e.to_string().starts_with("config/spark-defaults.conf:3: "), "{e}");
        let e = parse_properties("a=\\uD83D", src).unwrap_err();
        assert!(e.to_string().contains("unpaired UTF-16 surrogate"), "{e}");
        let e = parse_properties("a=\\uDE00x", src).unwrap_err();
        assert!(e.to_string().contains("unpaired"), "{e}");
        let e = parse_properties("ok=1\n=value", src).unwrap_err();
        assert_eq!(
            e.to_string(),
            "config/spark-defaults.conf:2: a line with a value but no key"
        );
        let e = parse_properties_bytes(b"a=1\nb=\xff\xfe\n", src).unwrap_err();
        assert_eq!(
            e.to_string(),
            "config/spark-defaults.conf:2: the file is not valid UTF-8"
        );
    }

    #[test]
    fn unreadable_files_name_the_path() {
        let e = load_properties_file(Path::new("config/does-not-exist.conf")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot read properties file config/does-not-exist.conf: No such file or directory"
        );
        let dir = tempfile::tempdir().unwrap();
        let e = load_properties_file(dir.path()).unwrap_err().to_string();
        assert!(e.starts_with(&format!("cannot read properties file {}: ", dir.path().display())));
        assert!(!e.contains('\n'));
    }

    #[test]
    fn loads_a_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let path: PathBuf = dir.path().join("spark-defaults.conf");
        std::fs::write(
            &path,
            "# defaults\nspark.master yarn\nspark.executor.memory  2g\n",
        )
        .unwrap();
        assert_eq!(
            load_properties_file(&path).unwrap(),
            pairs(&[("spark.master", "yarn"), ("spark.executor.memory", "2g")])
        );
    }

    #[test]
    fn writing_round_trips() {
        let original = pairs(&[
            ("plain", "value"),
            ("spaced key", "a = b : c"),
            ("k=:#!", "#!not a comment"),
            ("tabs", "x\ty"),
            ("lines", "one\ntwo\r\n"),
            ("back\\slash", "c:\\dir\\"),
            ("unicode", "é€😀"),
            ("bell", "a\u{7}b"),
            ("empty", ""),
        ]);
        let text = to_properties_text(original.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        assert_eq!(parse(&text), original);
        assert_eq!(text.lines().count(), original.len());
    }

    #[test]
    fn io_messages_drop_the_os_error_suffix() {
        let e = std::io::Error::from_raw_os_error(2);
        assert_eq!(io_message(&e), "No such file or directory");
        let custom = std::io::Error::other("boom");
        assert_eq!(io_message(&custom), "boom");
    }
}
