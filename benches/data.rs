//! Benchmarks of the data path (`cargo bench --bench data`), in process on the embedded
//! cluster (2 executors of 1 core: this is a 2-core machine):
//!
//! 1. Word count: JavaWordCount's job (`textFile`, `split(" ")`, `(word, 1)`,
//!    `reduceByKey(_ + _)`, `collect`) over a generated text file of 1,000 MB (10^9 bytes;
//!    `SPARKYARD_BENCH_WC_MB` for another size): job throughput in MB/s and the process's CPU
//!    time (user + sys) per byte. The file is written once, deterministically, to
//!    `$TMPDIR/sparkyard-bench-data` (`SPARKYARD_BENCH_DATA_DIR` for another directory) and
//!    kept for later runs: lines of about 80 characters of words drawn from a vocabulary of
//!    100,000 words with Zipf frequencies (exponent 1), one word in a hundred of the
//!    vocabulary with non-ASCII letters.
//! 2. SparkPi with 1000 slices (10^8 points): the job's seconds (`parallelize(1 until n,
//!    1000).map(sample).reduce(_ + _)`).
//!
//! `SPARKYARD_BENCH_GENERIC=1` also times word count kept off the fused path (an `identity`
//! map after the split), for the generic path's figure.
//!
//! Each figure is the median of `RUNS` jobs after a warm-up job, with min..max. With
//! `SPARKYARD_BENCH_SPARK=1` the same jobs run on Apache Spark 4.3 (`local[2]`, pyspark's
//! Spark on the machine's Java) from `scripts/peer/` in the same run, after
//! `scripts/peer/setup.sh` installed it into `target/bench-venv`, and each line shows both.
//! `cargo bench --bench data -- wordcount` or `-- pi` runs one part.

sparkyard::global_allocator!();

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use sparkyard::context::{AppEnv, AppError, SparkContext};
use sparkyard::rdd::Value;

const RUNS: usize = 5;
const VOCABULARY: usize = 100_000;
const PI_SLICES: i64 = 1000;

/// One timed job: wall seconds and the process's CPU seconds (user + sys) during it.
#[derive(Clone, Copy, Debug)]
struct Timing {
    wall: f64,
    cpu: f64,
}

static RESULTS: Mutex<Vec<Timing>> = Mutex::new(Vec::new());

/// The process's user + sys CPU time, from `/proc/self/stat` (clock ticks of 10 ms).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the command name (which is in parentheses): utime is the 12th, stime the 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn timed<T>(f: impl FnOnce() -> Result<T, AppError>) -> Result<(T, Timing), AppError> {
    let (t, c) = (Instant::now(), cpu_seconds());
    let out = f()?;
    let timing = Timing {
        wall: t.elapsed().as_secs_f64(),
        cpu: cpu_seconds() - c,
    };
    Ok((out, timing))
}

/// `bench.WordCount <file> <words> [generic]`: a warm-up job and `RUNS` timed jobs of
/// JavaWordCount's pipeline; checks that the counts add up to the file's number of words.
/// With `generic`, an `identity` map after the split keeps the job off the fused path.
fn word_count(env: &AppEnv) -> Result<(), AppError> {
    let file = env.args().first().cloned().unwrap_or_default();
    let words: i64 = env.args().get(1).and_then(|w| w.parse().ok()).unwrap_or(-1);
    let generic = env.args().get(2).is_some_and(|a| a == "generic");
    let sc = SparkContext::new(env)?;
    for run in 0..=RUNS {
        let (counts, timing) = timed(|| {
            let mut words = sc
                .text_file(&file, None)?
                .flat_map("split", vec![Value::Str(" ".into())]);
            if generic {
                words = words.map("identity", vec![]);
            }
            Ok(words
                .map("pair_with_one", vec![])
                .reduce_by_key("add", None)
                .collect()?)
        })?;
        let total: i64 = counts
            .iter()
            .filter_map(|r| r.as_pair().and_then(|(_, n)| n.as_i64()))
            .sum();
        assert_eq!(total, words, "the counts add up to the file's words");
        if run > 0 {
            RESULTS.lock().unwrap().push(timing);
        }
    }
    sc.stop();
    Ok(())
}

/// `bench.SparkPi`: a warm-up job and `RUNS` timed jobs of SparkPi's with 1000 slices.
fn spark_pi(env: &AppEnv) -> Result<(), AppError> {
    let sc = SparkContext::new(env)?;
    let n = (100_000 * PI_SLICES).min(i32::MAX as i64);
    for run in 0..=RUNS {
        let (count, timing) = timed(|| {
            Ok(sc
                .parallelize_range(1, n, 1, Some(PI_SLICES as u32))?
                .map(sparkyard::apps::spark_pi::SAMPLE_OP, vec![])
                .reduce("add")?)
        })?;
        let pi = 4.0 * count.as_i64().unwrap_or(0) as f64 / (n - 1) as f64;
        assert!((pi - std::f64::consts::PI).abs() < 0.001, "Pi is roughly {pi}");
        if run > 0 {
            RESULTS.lock().unwrap().push(timing);
        }
    }
    sc.stop();
    Ok(())
}

/// Each job's figures, in run order: `what` of its timing, its CPU and the cores it kept
/// busy (CPU over wall: both cores busy through the job is 2.0).
fn per_job(timings: &[Timing], what: impl Fn(&Timing) -> String) -> String {
    timings
        .iter()
        .map(|t| format!("{} (CPU {:.2} s, {:.2} cores)", what(t), t.cpu, t.cpu / t.wall))
        .collect::<Vec<_>>()
        .join(", ")
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// Runs `main_class` with `app_args` on 2 executors of 1 core; answers its timings.
fn run_app(main_class: &str, app_args: Vec<String>) -> Vec<Timing> {
    RESULTS.lock().unwrap().clear();
    let setup = common::Setup {
        nodes: 2,
        node_memory_mb: 64_000,
        node_vcores: 64,
        executors: 2,
        cores: 1,
        executor_memory: "2g",
        log_files: true,
    };
    common::run_app(&setup, main_class, app_args);
    RESULTS.lock().unwrap().clone()
}

/// SplitMix64: the generator's random numbers.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The bench's text file of `bytes` bytes and its number of words, written once (the
/// `.words` file beside it holds the count and marks it complete).
fn text_file(bytes: u64) -> (PathBuf, i64) {
    let dir = std::env::var_os("SPARKYARD_BENCH_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("sparkyard-bench-data"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("words-{bytes}.txt"));
    let meta = dir.join(format!("words-{bytes}.words"));
    if let Some(words) = std::fs::read_to_string(&meta)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|_| std::fs::metadata(&path).is_ok_and(|m| m.len() == bytes))
    {
        return (path, words);
    }
    let t = Instant::now();
    let words = write_text(&path, bytes);
    std::fs::write(&meta, words.to_string()).unwrap();
    println!(
        "(wrote {} MB of text, {words} words, to {} in {:.1} s)",
        bytes / 1_000_000,
        path.display(),
        t.elapsed().as_secs_f64()
    );
    (path, words)
}

fn write_text(path: &Path, bytes: u64) -> i64 {
    use std::io::Write;
    let mut rng = Rng(17);
    const LETTERS: &[u8] = b"etaoinshrdlcumwfgypbvkjxqz";
    const ACCENTED: [&str; 6] = ["é", "ü", "ñ", "ø", "ß", "→"];
    let vocabulary: Vec<String> = (0..VOCABULARY)
        .map(|i| {
            let len = 1 + rng.below(4) + rng.below(5) + usize::from(i > 1000) as u64 * rng.below(4);
            let mut w: String = (0..len)
                .map(|_| char::from(LETTERS[rng.below(6) as usize + rng.below(21) as usize]))
                .collect();
            if i % 100 == 99 {
                w.push_str(ACCENTED[rng.below(ACCENTED.len() as u64) as usize]);
            }
            w
        })
        .collect();
    // Zipf: P(rank r) proportional to 1 / (r + 1).
    let mut cumulative = Vec::with_capacity(VOCABULARY);
    let mut sum = 0.0;
    for r in 0..VOCABULARY {
        sum += 1.0 / (r + 1) as f64;
        cumulative.push(sum);
    }
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut written: u64 = 0;
    let mut words: i64 = 0;
    let mut line = String::with_capacity(128);
    loop {
        line.clear();
        let mut in_line = 0;
        loop {
            let u = rng.unit() * sum;
            let r = cumulative.partition_point(|&c| c < u).min(VOCABULARY - 1);
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&vocabulary[r]);
            in_line += 1;
            if line.len() >= 76 {
                break;
            }
        }
        line.push('\n');
        if written + line.len() as u64 + 2 > bytes {
            break;
        }
        out.write_all(line.as_bytes()).unwrap();
        written += line.len() as u64;
        words += in_line;
    }
    // The rest of the budget is one last line of one word of filler letters.
    let left = (bytes - written) as usize;
    if left > 0 {
        let mut last = "x".repeat(left.max(2) - 1);
        if left > 1 {
            last.push('\n');
        }
        out.write_all(last.as_bytes()).unwrap();
        words += 1;
    }
    out.flush().unwrap();
    words
}

/// Runs a peer script under `target/bench-venv`; answers the seconds of its timed jobs (its
/// lines `job_seconds=<s>`).
fn peer(script: &str, args: &[String]) -> Option<Vec<f64>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("target/bench-venv/bin/python");
    if !python.exists() {
        println!("(no {}: run scripts/peer/setup.sh first)", python.display());
        return None;
    }
    let out = std::process::Command::new(python)
        .arg(root.join("scripts/peer").join(script))
        .args(args)
        .arg(RUNS.to_string())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let times: Vec<f64> = text
        .lines()
        .filter_map(|l| {
            l.split_once("job_seconds=")
                .and_then(|(_, s)| s.trim().parse().ok())
        })
        .collect();
    if times.is_empty() {
        println!(
            "(the peer {script} printed no timing; its stderr ends: {})",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .join(" | ")
        );
        return None;
    }
    Some(times)
}

fn main() {
    let level = common::log_level();
    common::init_logs(&level);
    sparkyard::apps::register_operations();
    sparkyard::apps::register_application("bench.WordCount", word_count);
    sparkyard::apps::register_application("bench.SparkPi", spark_pi);
    let filter = std::env::args()
        .nth(1)
        .filter(|a| !a.starts_with('-'))
        .unwrap_or_default();
    let with_spark = std::env::var("SPARKYARD_BENCH_SPARK").is_ok_and(|v| v == "1");
    println!(
        "sparkyard data benchmarks (2 executors x 1 core, logs at {level} to files; median of {RUNS} jobs after a \
         warm-up, min..max in brackets; load average {})\n",
        load_average()
    );
    if filter.is_empty() || filter == "wordcount" {
        let mb: u64 = std::env::var("SPARKYARD_BENCH_WC_MB")
            .ok()
            .and_then(|m| m.parse().ok())
            .unwrap_or(1000);
        let bytes = mb * 1_000_000;
        let (path, words) = text_file(bytes);
        let path_s = path.to_string_lossy().into_owned();
        let mbs = |s: f64| bytes as f64 / 1e6 / s;
        let mut variants = vec![("", false)];
        if std::env::var("SPARKYARD_BENCH_GENERIC").is_ok_and(|v| v == "1") {
            variants.push((" (generic path: an identity map after split)", true));
        }
        let mut fused_median = f64::NAN;
        for (label, generic) in variants {
            let mut args = vec![path_s.clone(), words.to_string()];
            if generic {
                args.push("generic".into());
            }
            let timings = run_app("bench.WordCount", args);
            let (m, lo, hi) = median(timings.iter().map(|t| t.wall).collect());
            let (cpu, _, _) = median(timings.iter().map(|t| t.cpu).collect());
            if !generic {
                fused_median = m;
            }
            println!(
                "word count, {mb} MB text{label}: sparkyard {:.1} MB/s, job {m:.2} s [{lo:.2}..{hi:.2}], CPU {:.1} \
                 ns/byte (user+sys {cpu:.2} s); load {}",
                mbs(m),
                cpu * 1e9 / bytes as f64,
                load_average()
            );
            println!(
                "  each job: {}",
                per_job(&timings, |t| format!("{:.1} MB/s", mbs(t.wall)))
            );
        }
        let m = fused_median;
        if with_spark {
            if let Some(times) = peer("wordcount.py", &[path_s]) {
                let (pm, plo, phi) = median(times);
                println!(
                    "word count, {mb} MB text: Spark 4.3 {:.1} MB/s, job {pm:.2} s [{plo:.2}..{phi:.2}]; sparkyard \
                     {:.1}x Spark; load {}",
                    mbs(pm),
                    pm / m,
                    load_average()
                );
            }
        }
    }
    if filter.is_empty() || filter == "pi" {
        let timings = run_app("bench.SparkPi", vec![]);
        let (m, lo, hi) = median(timings.iter().map(|t| t.wall).collect());
        let (cpu, _, _) = median(timings.iter().map(|t| t.cpu).collect());
        println!(
            "SparkPi, {PI_SLICES} slices (10^8 points): sparkyard job {m:.3} s [{lo:.3}..{hi:.3}], CPU {cpu:.2} s; \
             load {}",
            load_average()
        );
        println!(
            "  each job: {}",
            per_job(&timings, |t| format!("{:.3} s", t.wall))
        );
        if with_spark {
            if let Some(times) = peer("spark_pi.py", &[PI_SLICES.to_string()]) {
                let (pm, plo, phi) = median(times);
                println!(
                    "SparkPi, {PI_SLICES} slices (10^8 points): Spark 4.3 job {pm:.3} s [{plo:.3}..{phi:.3}]; \
                     sparkyard {:.1}x Spark; load {}",
                    pm / m,
                    load_average()
                );
            }
        }
    }
}
