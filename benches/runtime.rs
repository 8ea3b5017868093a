//! Micro-benchmarks of the supervision runtime: a message round trip through an endpoint
//! ref (against raw actix for scale), one-way tell throughput, and a supervised restart
//! (kill → the new incarnation answers). Run with `cargo bench --bench runtime`; every
//! figure is the median of several runs, with the spread shown.
//!
//! Logging is installed at INFO (supervision events are INFO records, so their formatting
//! is part of a restart's cost) with no console and no files.

sparkyard::global_allocator!();

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use sparkyard::logs::{Console, LogInit};
use sparkyard::rpc::remote::{serve_actors, TcpLink};
use sparkyard::rpc::tcp::ServerLimits;
use sparkyard::runtime::{ActorPath, ChildSpec, Cluster, KillMode, Me, Strategy, SupervisorSpec};

struct Echo {
    me: Me,
    seen: Arc<AtomicU64>,
}

impl Actor for Echo {
    type Context = Context<Self>;
}

#[derive(Message, serde::Serialize, serde::Deserialize)]
#[rtype(result = "u64")]
struct Ping(u64);

impl Handler<Ping> for Echo {
    type Result = MessageResult<Ping>;
    fn handle(&mut self, msg: Ping, _: &mut Context<Self>) -> MessageResult<Ping> {
        MessageResult(msg.0 + self.me.incarnation())
    }
}

#[derive(Message, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
struct Count;

impl Handler<Count> for Echo {
    type Result = ();
    fn handle(&mut self, _: Count, _: &mut Context<Self>) {
        self.seen.fetch_add(1, Ordering::Relaxed);
    }
}

sparkyard::protocol! {
    remote EchoProtocol { Ping, Count }
}

sparkyard::speaks!(Echo: EchoProtocol);

/// A plain actix actor, for the raw-actix baseline.
struct Raw;
impl Actor for Raw {
    type Context = Context<Self>;
}
impl Handler<Ping> for Raw {
    type Result = MessageResult<Ping>;
    fn handle(&mut self, msg: Ping, _: &mut Context<Self>) -> MessageResult<Ping> {
        MessageResult(msg.0 + 1)
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (percentile(&v, 0.5), v[0], v[v.len() - 1])
}

const RUNS: usize = 5;

fn main() {
    sparkyard::logs::init(&LogInit {
        level: Some("info".into()),
        console: Console::Off,
        console_quiet_except: None,
    })
    .expect("subscriber");
    let sys = actix::System::new();
    sys.block_on(async {
        let cluster = Cluster::builder().build().expect("cluster");
        let seen = Arc::new(AtomicU64::new(0));
        let s = seen.clone();
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .intensity(u32::MAX, Duration::from_secs(1))
            .child(ChildSpec::worker("echo", move |_, me| Echo { me, seen: s.clone() }));
        cluster.start_root("bench", spec).expect("root");
        let echo_path = ActorPath::parse("/bench/echo").expect("path");
        let ep = cluster.endpoint::<EchoProtocol>(&echo_path);
        while !ep.is_alive() {
            tokio::task::yield_now().await;
        }
        let raw = Raw.start();
        let limit = Duration::from_secs(5);

        println!("sparkyard runtime benchmarks (median of {RUNS} runs; min..max in brackets)\n");

        // 1. Round trips.
        const N: u64 = 100_000;
        let mut ours = Vec::new();
        let mut baseline = Vec::new();
        let mut lat = Vec::new();
        for _ in 0..RUNS {
            let t = Instant::now();
            for i in 0..N {
                let _ = raw.send(Ping(i)).await;
            }
            baseline.push(t.elapsed().as_nanos() as f64 / N as f64);
            let t = Instant::now();
            for i in 0..N {
                let _ = ep.ask(Ping(i), limit).await;
            }
            ours.push(t.elapsed().as_nanos() as f64 / N as f64);
        }
        for i in 0..N {
            let t = Instant::now();
            let _ = ep.ask(Ping(i), limit).await;
            lat.push(t.elapsed().as_nanos() as f64);
        }
        lat.sort_by(|a, b| a.total_cmp(b));
        let (m, lo, hi) = median(baseline);
        println!("round trip, raw actix send().await, same arbiter:   {m:>7.0} ns  [{lo:.0}..{hi:.0}]");
        let (m, lo, hi) = median(ours);
        println!("round trip, EndpointRef::ask by path, same arbiter: {m:>7.0} ns  [{lo:.0}..{hi:.0}]");
        println!(
            "  ask latency: p50 {:.0} ns, p99 {:.0} ns, p99.9 {:.0} ns",
            percentile(&lat, 0.5),
            percentile(&lat, 0.99),
            percentile(&lat, 0.999)
        );

        // 2. One-way tells.
        const M: u64 = 1_000_000;
        let mut rates = Vec::new();
        for _ in 0..RUNS {
            let start = seen.load(Ordering::Relaxed);
            let t = Instant::now();
            for _ in 0..M {
                let _ = ep.tell(Count);
            }
            while seen.load(Ordering::Relaxed) < start + M {
                tokio::task::yield_now().await;
            }
            rates.push(M as f64 / t.elapsed().as_secs_f64() / 1e6);
        }
        let (m, lo, hi) = median(rates);
        println!("tell by path, sent and handled, same arbiter:       {m:>7.2} M msg/s  [{lo:.2}..{hi:.2}]");

        // 3. Supervised restarts.
        const R: usize = 2_000;
        for (mode, name) in [(KillMode::Panic, "panic"), (KillMode::Stop, "stop")] {
            let mut times = Vec::with_capacity(R);
            for _ in 0..R {
                let before = ep.incarnation().unwrap_or(0);
                let t = Instant::now();
                cluster.kill("/bench/echo", mode, "bench").expect("kill");
                loop {
                    if ep.incarnation().is_some_and(|i| i > before) && ep.ask(Ping(0), limit).await.is_ok() {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
                times.push(t.elapsed().as_nanos() as f64 / 1000.0);
            }
            times.sort_by(|a, b| a.total_cmp(b));
            println!(
                "supervised restart ({name:>5}): kill -> new incarnation answers: p50 {:.1} us, p99 {:.1} us ({R} restarts)",
                percentile(&times, 0.5),
                percentile(&times, 0.99)
            );
        }
        // 4. The same ask from another runtime, over a TCP route on loopback (encode, frame,
        // deliver, answer, decode; both ends on this thread).
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        actix::spawn(serve_actors(cluster.clone(), listener, stopped, ServerLimits::default()));
        let near = Cluster::builder().build().expect("second cluster");
        near.add_route(ActorPath::parse("/bench").expect("path"), TcpLink::new(&addr));
        let far = near.endpoint::<EchoProtocol>(&echo_path);
        const T: u64 = 10_000;
        let mut remote = Vec::new();
        for _ in 0..RUNS {
            let t = Instant::now();
            for i in 0..T {
                far.ask(Ping(i), limit).await.expect("remote ask");
            }
            remote.push(t.elapsed().as_nanos() as f64 / T as f64 / 1000.0);
        }
        let (m, lo, hi) = median(remote);
        println!("round trip, EndpointRef::ask over a TCP route (loopback): {m:>6.1} us  [{lo:.1}..{hi:.1}]");
        let _ = stop.send(true);
        near.shutdown(Duration::from_secs(5)).await;
        cluster.shutdown(Duration::from_secs(5)).await;
    });
}
