//! Text files as Spark's `textFile` reads them: byte-range splits planned like Hadoop's
//! `FileInputFormat.getSplits` (the old `mapred` API, which `HadoopRDD` uses) and lines read
//! like Hadoop's `LineRecordReader`. Checked against Spark 4.3 / Hadoop 3.5 on the same files
//! (split plans, per-split line counts, the lines themselves).
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).
//!
//! Planning ([`hadoop_splits`]): `goalSize = totalSize / max(minPartitions, 1)`,
//! `splitSize = max(minSize = 1, min(goalSize, blockSize))`; while `remaining / splitSize >
//! 1.1` (SPLIT_SLOP) a split of `splitSize` bytes is cut, the rest (if any) is the last
//! split. The block size is what Hadoop's local file system reports, `fs.local.block.size`,
//! 32 MiB ([`LOCAL_BLOCK_SIZE`]; Spark 4.3 makes 4 partitions of a 100 MiB local file even
//! with `minPartitions` 1). An empty file gives Hadoop one empty split, and Spark
//! (`spark.hadoopRDD.ignoreEmptySplits`, true since 3.2) drops empty splits, so
//! [`text_file_splits`] of an empty file has no partitions (Spark 4.3: `nparts=0`).
//!
//! Reading one split (`[start, start + length)`, [`open_split`]): a split not starting at 0
//! first skips everything up to and including the first line terminator (that line belongs
//! to the previous split); then every line that starts at or before the split's end is read
//! in full, even past the end. Terminators are `\n`, `\r\n` and a lone `\r` (Hadoop's
//! `LineReader` default), none of them part of the line; a final line without terminator
//! is still a line; a UTF-8 byte order mark at offset 0 is dropped; bytes are decoded as
//! UTF-8 with replacement characters for invalid sequences (Hadoop's `Text.toString`).
//! The reader seeks to the split and reads only what it needs.
//!
//! Paths are local: `file:///a/b` and `file:/a/b` name `/a/b`, relative paths are resolved
//! against the working directory, other schemes are refused as Hadoop refuses a scheme
//! without a file system. A single file only (Hadoop would also accept a directory).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::path::PathBuf;

use super::lineage::FileSplit;
use super::task::TaskError;

/// Hadoop's `fs.local.block.size` default: the block size of a local file, the cap of a split.
pub const LOCAL_BLOCK_SIZE: u64 = 32 * 1024 * 1024;
/// Hadoop's SPLIT_SLOP: a last split may be up to 10% larger than the split size.
pub const SPLIT_SLOP: f64 = 1.1;
/// Refuse plans with more splits than this (a tiny split size on a big file).
pub const MAX_SPLITS: u64 = 1_000_000;

impl FileSplit {
    /// One past the last byte of the split.
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.length)
    }
}

/// The local file a `textFile` path names, made absolute (`file:///a/b` and `file:/a/b` are
/// `/a/b`). Another scheme is Hadoop's `No FileSystem for scheme "hdfs"`.
pub fn local_path(path: &str) -> Result<PathBuf, String> {
    let local = if let Some(rest) = path.strip_prefix("file://") {
        rest
    } else if let Some(rest) = path.strip_prefix("file:") {
        rest
    } else {
        match path.split_once("://") {
            Some((scheme, _)) if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric()) => {
                return Err(format!("No FileSystem for scheme \"{scheme}\""));
            }
            _ => path,
        }
    };
    if local.is_empty() {
        return Err("Can not create a Path from an empty string".to_string());
    }
    std::path::absolute(local).map_err(|e| format!("cannot resolve {path}: {e}"))
}

/// `file:<absolute path>`, as Hadoop qualifies a local path in its messages.
pub fn qualified(path: &std::path::Path) -> String {
    format!("file:{}", path.display())
}

/// The partitions of `textFile(path, minPartitions)`: Hadoop's splits of the file without
/// the empty ones. Errors are Spark's messages: `Input path does not exist: file:/abs/path`
/// (an `org.apache.hadoop.mapred.InvalidInputException` there), `Not a file: ...` for a
/// directory.
pub fn text_file_splits(path: &str, min_partitions: u32) -> Result<Vec<FileSplit>, String> {
    let local = local_path(path)?;
    let meta = match std::fs::metadata(&local) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!("Input path does not exist: {}", qualified(&local)));
        }
        Err(e) => return Err(format!("cannot read {}: {e}", qualified(&local))),
    };
    if meta.is_dir() {
        return Err(format!(
            "Not a file: {} (directories are not supported)",
            qualified(&local)
        ));
    }
    let mut splits = hadoop_splits(meta.len(), min_partitions, LOCAL_BLOCK_SIZE)?;
    splits.retain(|s| s.length > 0);
    Ok(splits)
}

/// Hadoop's split plan of one file of `length` bytes (the arithmetic of `getSplits`; an
/// empty file gives one empty split).
pub fn hadoop_splits(length: u64, num_splits: u32, block_size: u64) -> Result<Vec<FileSplit>, String> {
    if length == 0 {
        return Ok(vec![FileSplit { start: 0, length: 0 }]);
    }
    let goal = length / u64::from(num_splits.max(1));
    let split_size = goal.min(block_size).max(1);
    if length / split_size > MAX_SPLITS {
        return Err(format!(
            "{length} bytes in splits of {split_size} would make more than {MAX_SPLITS} splits"
        ));
    }
    let mut splits = Vec::new();
    let mut remaining = length;
    while (remaining as f64) / (split_size as f64) > SPLIT_SLOP {
        splits.push(FileSplit {
            start: length - remaining,
            length: split_size,
        });
        remaining -= split_size;
    }
    if remaining != 0 {
        splits.push(FileSplit {
            start: length - remaining,
            length: remaining,
        });
    }
    Ok(splits)
}

/// Reads one line's bytes (without its terminator) into `out`; returns the bytes consumed
/// including the terminator, 0 at end of input.
fn read_line<R: BufRead>(r: &mut R, out: &mut Vec<u8>) -> io::Result<u64> {
    out.clear();
    let mut consumed: u64 = 0;
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(consumed);
        }
        match buf.iter().position(|&b| b == b'\n' || b == b'\r') {
            Some(i) => {
                let was_cr = buf.get(i) == Some(&b'\r');
                out.extend_from_slice(buf.get(..i).unwrap_or(&[]));
                r.consume(i + 1);
                consumed += i as u64 + 1;
                if was_cr {
                    loop {
                        match r.fill_buf() {
                            Ok(next) => {
                                if next.first() == Some(&b'\n') {
                                    r.consume(1);
                                    consumed += 1;
                                }
                                break;
                            }
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(e) => return Err(e),
                        }
                    }
                }
                return Ok(consumed);
            }
            None => {
                let n = buf.len();
                out.extend_from_slice(buf);
                r.consume(n);
                consumed += n as u64;
            }
        }
    }
}

/// The lines of one split, read lazily; I/O errors are `java.io.IOException`s naming the file.
pub struct LineReader {
    reader: BufReader<File>,
    path: String,
    /// Offset of the next unread byte.
    pos: u64,
    end: u64,
    done: bool,
    buf: Vec<u8>,
}

impl std::fmt::Debug for LineReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineReader")
            .field("path", &self.path)
            .field("pos", &self.pos)
            .field("end", &self.end)
            .finish()
    }
}

pub(crate) fn io_error(path: &str, e: &io::Error) -> TaskError {
    if e.kind() == io::ErrorKind::NotFound {
        TaskError::exception(
            "java.io.FileNotFoundException",
            format!("File {path} does not exist"),
        )
    } else {
        TaskError::exception("java.io.IOException", format!("{path}: {e}"))
    }
}

/// Opens `split` of `path` for reading (seeks to it and skips the partial first line). A
/// missing file is a `java.io.FileNotFoundException` naming `file:<path>`.
pub fn open_split(path: &str, split: &FileSplit) -> Result<LineReader, TaskError> {
    let local = local_path(path).map_err(|m| TaskError::exception("java.io.IOException", m))?;
    let path = qualified(&local);
    let path = path.as_str();
    let file = File::open(&local).map_err(|e| io_error(path, &e))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    reader
        .seek(SeekFrom::Start(split.start))
        .map_err(|e| io_error(path, &e))?;
    let mut out = LineReader {
        reader,
        path: path.to_string(),
        pos: split.start,
        end: split.end(),
        done: false,
        buf: Vec::new(),
    };
    if split.start != 0 {
        let skipped = read_line(&mut out.reader, &mut out.buf).map_err(|e| io_error(path, &e))?;
        out.pos = out.pos.saturating_add(skipped);
    }
    Ok(out)
}

impl Iterator for LineReader {
    type Item = Result<String, TaskError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos > self.end {
            return None;
        }
        let line_start = self.pos;
        match read_line(&mut self.reader, &mut self.buf) {
            Ok(0) => {
                self.done = true;
                None
            }
            Ok(n) => {
                self.pos = self.pos.saturating_add(n);
                let bytes = if line_start == 0 {
                    self.buf
                        .strip_prefix(&[0xEF, 0xBB, 0xBF][..])
                        .unwrap_or(&self.buf)
                } else {
                    &self.buf[..]
                };
                Some(Ok(String::from_utf8_lossy(bytes).into_owned()))
            }
            Err(e) => {
                self.done = true;
                Some(Err(io_error(&self.path, &e)))
            }
        }
    }
}

/// Every line of one split (see [`open_split`]).
pub fn read_split_lines(path: &str, split: &FileSplit) -> Result<Vec<String>, TaskError> {
    open_split(path, split)?.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn temp_file(content: &[u8]) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input.txt");
        let mut f = File::create(&path).unwrap();
        f.write_all(content).unwrap();
        (dir, path.to_string_lossy().into_owned())
    }

    fn lines_per_split(path: &str, splits: &[FileSplit]) -> Vec<Vec<String>> {
        splits
            .iter()
            .map(|s| read_split_lines(path, s).unwrap())
            .collect()
    }

    const CRLF: &[u8] = b"alpha beta\r\ngamma\n\ndelta epsilon zeta\nlast line no newline";

    fn big_text() -> String {
        let mut s = String::new();
        for i in 0..200 {
            s.push_str(&format!("line {i} {}\n", "x".repeat(i % 17)));
        }
        s
    }

    fn show(splits: &[FileSplit]) -> String {
        splits
            .iter()
            .map(|s| format!("{}+{}", s.start, s.length))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn splits_and_line_counts_match_hadoop() {
        // Split plans and per-split line counts from Hadoop 3.5's TextInputFormat and
        // Spark 4.3's textFile on the same bytes.
        let (_d, path) = temp_file(CRLF);
        let cases = [
            (1, "0+58", vec![5]),
            (2, "0+29 29+29", vec![4, 1]),
            (3, "0+19 19+19 38+20", vec![4, 1, 0]),
            (5, "0+11 11+11 22+11 33+11 44+11 55+3", vec![1, 3, 0, 1, 0, 0]),
            (
                7,
                "0+8 8+8 16+8 24+8 32+8 40+8 48+8 56+2",
                vec![1, 1, 2, 0, 1, 0, 0, 0],
            ),
        ];
        for (mp, plan, counts) in cases {
            let splits = text_file_splits(&path, mp).unwrap();
            assert_eq!(show(&splits), plan, "minPartitions {mp}");
            let got: Vec<usize> = lines_per_split(&path, &splits).iter().map(|l| l.len()).collect();
            assert_eq!(got, counts, "minPartitions {mp}");
        }
        let all: Vec<String> = lines_per_split(&path, &text_file_splits(&path, 3).unwrap()).concat();
        assert_eq!(
            all,
            vec![
                "alpha beta",
                "gamma",
                "",
                "delta epsilon zeta",
                "last line no newline"
            ]
        );

        let text = big_text();
        assert_eq!(text.len(), 3464);
        let (_d2, big) = temp_file(text.as_bytes());
        let cases = [
            (2, "0+1732 1732+1732", vec![103, 97]),
            (3, "0+1154 1154+1154 2308+1156", vec![69, 66, 65]),
            (
                5,
                "0+692 692+692 1384+692 2076+692 2768+696",
                vec![44, 39, 40, 39, 38],
            ),
            (
                7,
                "0+494 494+494 988+494 1482+494 1976+494 2470+494 2964+500",
                vec![31, 30, 29, 27, 29, 26, 28],
            ),
        ];
        for (mp, plan, counts) in cases {
            let splits = text_file_splits(&big, mp).unwrap();
            assert_eq!(show(&splits), plan, "minPartitions {mp}");
            let got: Vec<usize> = lines_per_split(&big, &splits).iter().map(|l| l.len()).collect();
            assert_eq!(got, counts, "minPartitions {mp}");
        }
    }

    #[test]
    fn every_line_read_exactly_once_for_every_split_size() {
        let contents: Vec<Vec<u8>> = vec![
            CRLF.to_vec(),
            big_text().into_bytes(),
            b"a\r\nbb\r\n\r\nccc\r\n".to_vec(),
            b"\n\n\nx\n\n".to_vec(),
            b"cr\ronly\rlines\r".to_vec(),
            b"no newline at all".to_vec(),
            "\u{feff}bom first\nsecond\n".as_bytes().to_vec(),
        ];
        for content in contents {
            let (_d, path) = temp_file(&content);
            let whole = read_split_lines(
                &path,
                &FileSplit {
                    start: 0,
                    length: content.len() as u64,
                },
            )
            .unwrap();
            for size in 1..=content.len() as u64 + 1 {
                let mut splits = Vec::new();
                let mut start = 0;
                while start < content.len() as u64 {
                    let length = size.min(content.len() as u64 - start);
                    splits.push(FileSplit { start, length });
                    start += length;
                }
                let got: Vec<String> = lines_per_split(&path, &splits).concat();
                assert_eq!(
                    got,
                    whole,
                    "split size {size} of {:?}",
                    String::from_utf8_lossy(&content)
                );
            }
        }
    }

    #[test]
    fn terminators_bom_and_trailing_line() {
        let (_d, path) = temp_file(b"a\r\nbb\rccc\n\nlast");
        let lines = read_split_lines(&path, &FileSplit { start: 0, length: 16 }).unwrap();
        assert_eq!(lines, vec!["a", "bb", "ccc", "", "last"]);
        let (_d, path) = temp_file("\u{feff}hello\nworld\n".as_bytes());
        let lines = read_split_lines(&path, &FileSplit { start: 0, length: 3 }).unwrap();
        assert_eq!(lines, vec!["hello"]);
        let (_d, path) = temp_file(b"ok\n\xff\xfebad\n");
        let lines = read_split_lines(&path, &FileSplit { start: 0, length: 9 }).unwrap();
        assert_eq!(lines, vec!["ok".to_string(), "\u{fffd}\u{fffd}bad".to_string()]);
    }

    #[test]
    fn empty_and_missing_files() {
        let (_d, path) = temp_file(b"");
        // Hadoop plans one empty split; Spark 4.3 drops it: no partitions.
        assert_eq!(
            hadoop_splits(0, 4, LOCAL_BLOCK_SIZE).unwrap(),
            vec![FileSplit { start: 0, length: 0 }]
        );
        assert_eq!(text_file_splits(&path, 4).unwrap(), vec![]);
        let lines = read_split_lines(&path, &FileSplit { start: 0, length: 0 }).unwrap();
        assert_eq!(lines, Vec::<String>::new());
        let missing = format!("{path}.nope");
        let e = text_file_splits(&missing, 2).unwrap_err();
        assert_eq!(e, format!("Input path does not exist: file:{missing}"));
        match read_split_lines(&missing, &FileSplit { start: 0, length: 1 }).unwrap_err() {
            TaskError::Exception { class_name, message } => {
                assert_eq!(class_name, "java.io.FileNotFoundException");
                assert_eq!(message, format!("File file:{missing} does not exist"));
            }
            other => panic!("{other:?}"),
        }
        let e = text_file_splits(_d.path().to_str().unwrap(), 2).unwrap_err();
        assert!(e.starts_with("Not a file: file:/"), "{e}");
        assert_eq!(
            text_file_splits("hdfs://nn:8020/x", 2).unwrap_err(),
            "No FileSystem for scheme \"hdfs\""
        );
        assert_eq!(text_file_splits(&format!("file://{path}"), 1).unwrap(), vec![]);
        assert_eq!(text_file_splits(&format!("file:{path}"), 1).unwrap(), vec![]);
        // A relative path is resolved against the working directory.
        let e = text_file_splits("no/such/relative.txt", 1).unwrap_err();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            e,
            format!(
                "Input path does not exist: file:{}/no/such/relative.txt",
                cwd.display()
            )
        );
    }

    #[test]
    fn split_arithmetic() {
        // Slop: 11 bytes in splits of 10 stay one split; 12 make two.
        assert_eq!(
            hadoop_splits(11, 1, 10).unwrap(),
            vec![FileSplit { start: 0, length: 11 }]
        );
        assert_eq!(
            hadoop_splits(12, 1, 10).unwrap(),
            vec![
                FileSplit { start: 0, length: 10 },
                FileSplit { start: 10, length: 2 }
            ]
        );
        // Block size caps the split size: Spark 4.3 gives a 100 MiB local file 4 partitions
        // with minPartitions 1 or 2 (32 + 32 + 32 + 4 MiB).
        for mp in [1, 2] {
            let s = hadoop_splits(100 * 1024 * 1024, mp, LOCAL_BLOCK_SIZE).unwrap();
            let sizes: Vec<u64> = s.iter().map(|x| x.length >> 20).collect();
            assert_eq!(sizes, vec![32, 32, 32, 4]);
        }
        // minPartitions 0 behaves as 1; more partitions than bytes gives 1-byte splits.
        assert_eq!(hadoop_splits(5, 0, 100).unwrap().len(), 1);
        assert_eq!(hadoop_splits(3, 10, 100).unwrap().len(), 3);
        assert!(hadoop_splits(u64::MAX, u32::MAX, LOCAL_BLOCK_SIZE)
            .unwrap_err()
            .contains("splits"));
    }
}
