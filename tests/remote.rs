//! An endpoint ref reaches an actor of another process by the same `tell` and `ask` as a
//! local one: two clusters (two runtimes, as two processes would have) joined by a route
//! over TCP. Only a protocol declared `remote` crosses; every failure on the way comes back
//! as one line naming the path, the protocol or the peer.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use serde::{Deserialize, Serialize};
use sparkyard::rpc::remote::{serve_actors, TcpLink};
use sparkyard::rpc::tcp::ServerLimits;
use sparkyard::rpc::AskError;
use sparkyard::runtime::registry::LookupError;
use sparkyard::runtime::{ChildSpec, Cluster, Me, Strategy, SupervisorSpec};
use sparkyard::{protocol, speaks};

use common::{eventually, path};

#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<u64, String>")]
struct Add(u64);

#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "()")]
struct Note(String);

#[derive(Clone, Debug, Message)]
#[rtype(result = "u64")]
struct Incarnation;

protocol! {
    /// What another process may ask the counter.
    remote CounterProtocol { Add, Note }
}

protocol! {
    /// What only its own process may ask (its messages are not serde).
    LocalCounterProtocol { Incarnation }
}

/// The counter's Add under another name: a protocol lists it by the alias, and the name
/// travels as the protocol lists it.
type Increment = Add;

protocol! {
    /// The same question under an alias.
    remote AliasProtocol { Increment }
}

protocol! {
    /// A remote protocol the counter does not speak.
    remote OtherProtocol { Note }
}

struct Counter {
    me: Me,
    notes: Arc<Mutex<Vec<String>>>,
}

impl Actor for Counter {
    type Context = Context<Self>;
}

speaks!(Counter: CounterProtocol, LocalCounterProtocol, AliasProtocol);

impl Handler<Add> for Counter {
    type Result = Result<u64, String>;
    fn handle(&mut self, msg: Add, _: &mut Context<Self>) -> Self::Result {
        match msg.0 {
            0 => Err("nothing to add".into()),
            n => Ok(n + 1),
        }
    }
}

impl Handler<Note> for Counter {
    type Result = ();
    fn handle(&mut self, msg: Note, _: &mut Context<Self>) {
        self.notes.lock().unwrap().push(msg.0);
    }
}

impl Handler<Incarnation> for Counter {
    type Result = u64;
    fn handle(&mut self, _: Incarnation, _: &mut Context<Self>) -> u64 {
        self.me.incarnation()
    }
}

fn runtime(id: &str) -> Cluster {
    sparkyard::logs::init_for_tests();
    Cluster::builder()
        .id(id)
        .capture_logs(true)
        .build()
        .expect("inside an actix system")
}

/// A "remote" runtime serving a counter at /far/counter, and a "local" one with a route to
/// it; answers the local runtime, the notes the counter took, and the stop of the server.
async fn two_runtimes() -> (Cluster, Arc<Mutex<Vec<String>>>, tokio::sync::watch::Sender<bool>) {
    let far = runtime("far");
    let notes = Arc::new(Mutex::new(Vec::new()));
    let kept = notes.clone();
    far.start_root(
        "far",
        SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::worker("counter", move |_, me| Counter {
            me,
            notes: kept.clone(),
        })),
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    actix::spawn(serve_actors(
        far.clone(),
        listener,
        stopped,
        ServerLimits::default(),
    ));
    let near = runtime("near");
    near.add_route(path("/far"), TcpLink::new(&addr));
    eventually("the counter started", || {
        far.registry().contains(&path("/far/counter"))
    })
    .await;
    (near, notes, stop)
}

#[actix_rt::test]
async fn a_ref_reaches_an_actor_of_another_runtime_by_the_same_tell_and_ask() {
    let (near, notes, _stop) = two_runtimes().await;
    let counter = near.endpoint::<CounterProtocol>(&path("/far/counter"));
    let limit = Duration::from_secs(10);
    assert_eq!(counter.ask(Add(41), limit).await, Ok(Ok(42)));
    // The actor's own refusal travels back as its answer, not as a transport error.
    assert_eq!(
        counter.ask(Add(0), limit).await,
        Ok(Err("nothing to add".to_string()))
    );
    let alias = near.endpoint::<AliasProtocol>(&path("/far/counter"));
    assert_eq!(alias.ask(Add(1), limit).await, Ok(Ok(2)));
    counter.tell(Note("first".into())).unwrap();
    counter.tell(Note("second".into())).unwrap();
    eventually("both notes arrived", || notes.lock().unwrap().len() == 2).await;
    let mut seen = notes.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen, ["first", "second"]);
}

#[actix_rt::test]
async fn what_cannot_cross_or_find_its_target_says_so_in_one_line() {
    let (near, _notes, _stop) = two_runtimes().await;
    let limit = Duration::from_secs(10);

    // A local-only protocol is refused at the call.
    let local = near.endpoint::<LocalCounterProtocol>(&path("/far/counter"));
    let err = local.tell(Incarnation).unwrap_err();
    assert!(matches!(err, LookupError::LocalOnly { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "/far/counter lives in another process and LocalCounterProtocol is local only: its messages cannot cross a process"
    );
    assert!(matches!(
        local.ask(Incarnation, limit).await,
        Err(AskError::Lookup(LookupError::LocalOnly { .. }))
    ));

    // No actor at the path in the other process.
    let nobody = near.endpoint::<CounterProtocol>(&path("/far/nobody"));
    let err = nobody.ask(Add(1), limit).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "/far/nobody (in another process) did not answer Add: no live actor at /far/nobody"
    );

    // An actor there that does not speak the protocol.
    let other = near.endpoint::<OtherProtocol>(&path("/far/counter"));
    let err = other.ask(Note("x".into()), limit).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "/far/counter (in another process) did not answer Note: the actor at /far/counter is a Counter, which does not speak OtherProtocol"
    );

    // A route to a process that is not there names the peer's address.
    near.add_route(path("/gone"), TcpLink::new("127.0.0.1:1"));
    let gone = near.endpoint::<CounterProtocol>(&path("/gone/counter"));
    let err = gone.ask(Add(1), limit).await.unwrap_err();
    assert!(
        matches!(&err, AskError::Remote { reason, .. } if reason.contains("127.0.0.1:1")),
        "{err}"
    );
}

#[actix_rt::test]
async fn a_local_actor_under_a_routed_prefix_is_reached_locally() {
    let (near, _notes, _stop) = two_runtimes().await;
    let notes = Arc::new(Mutex::new(Vec::new()));
    let kept = notes.clone();
    near.start_root(
        "far",
        SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::worker("counter", move |_, me| Counter {
            me,
            notes: kept.clone(),
        })),
    )
    .unwrap();
    eventually("the local counter started", || {
        near.registry().contains(&path("/far/counter"))
    })
    .await;
    let local = near.endpoint::<LocalCounterProtocol>(&path("/far/counter"));
    assert_eq!(local.ask(Incarnation, Duration::from_secs(10)).await, Ok(1));
    near.endpoint::<CounterProtocol>(&path("/far/counter"))
        .tell(Note("here".into()))
        .unwrap();
    eventually("the note arrived here", || notes.lock().unwrap().len() == 1).await;
}

/// A watcher: forwards the `Terminated` it receives.
struct Watcher {
    me: Me,
    target: sparkyard::runtime::ActorPath,
    ended: tokio::sync::mpsc::UnboundedSender<sparkyard::runtime::Terminated>,
}

impl Actor for Watcher {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        let me = self.me.clone();
        me.watch(ctx, &self.target);
    }
}

speaks!(Watcher);

impl Handler<sparkyard::runtime::Terminated> for Watcher {
    type Result = ();
    fn handle(&mut self, msg: sparkyard::runtime::Terminated, _: &mut Context<Self>) {
        let _ = self.ended.send(msg);
    }
}

/// A hub serving /hub, a process behind it serving /hub/far (it connects to the hub, which
/// learns it from its hello) with a counter, and a client that knows only the hub.
async fn hub_and_far() -> (
    Cluster,
    Cluster,
    Arc<Mutex<Vec<String>>>,
    tokio::sync::watch::Sender<bool>,
) {
    use sparkyard::rpc::remote::serve_cluster;
    let hub = runtime("hub");
    hub.start_root("hub", SupervisorSpec::new(Strategy::OneForOne))
        .unwrap();
    let (hub_addr, hub_stop) = serve_cluster(&hub, path("/hub"), "127.0.0.1:0", ServerLimits::default())
        .await
        .unwrap();
    std::mem::forget(hub_stop);
    let far = runtime("far-behind");
    let notes = Arc::new(Mutex::new(Vec::new()));
    let kept = notes.clone();
    let (_far_addr, far_stop) = serve_cluster(&far, path("/hub/far"), "127.0.0.1:0", ServerLimits::default())
        .await
        .unwrap();
    far.start_root_at(
        &path("/hub/far"),
        Default::default(),
        SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::worker("counter", move |_, me| Counter {
            me,
            notes: kept.clone(),
        })),
    );
    // Its configured route to the hub connects at once: the hub learns it.
    far.route_to(path("/hub"), &hub_addr).unwrap();
    let client = runtime("client");
    let (_client_addr, client_stop) =
        serve_cluster(&client, path("/client"), "127.0.0.1:0", ServerLimits::default())
            .await
            .unwrap();
    std::mem::forget(client_stop);
    client.route_to(path("/hub"), &hub_addr).unwrap();
    eventually("the counter started", || {
        far.registry().contains(&path("/hub/far/counter"))
    })
    .await;
    (client, far, notes, far_stop)
}

#[actix_rt::test]
async fn a_hub_forwards_to_the_process_behind_it_in_order_and_the_sender_then_learns_it() {
    let (client, _far, notes, _stop) = hub_and_far().await;
    let counter = client.endpoint::<CounterProtocol>(&path("/hub/far/counter"));
    let limit = Duration::from_secs(10);
    // Through the hub (the client knows no route to /hub/far yet).
    let deadline = tokio::time::Instant::now() + limit;
    while counter.ask(Add(1), limit).await != Ok(Ok(2)) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the hub never forwarded the ask"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for i in 0..500 {
        counter.tell(Note(format!("{i}"))).unwrap();
    }
    eventually("every note arrived", || notes.lock().unwrap().len() == 500).await;
    let seen = notes.lock().unwrap().clone();
    let want: Vec<String> = (0..500).map(|i| i.to_string()).collect();
    assert_eq!(seen, want, "one sender's tells arrive in the order sent");
    // The URL the client gives others for the counter names the process it routes it to.
    assert!(client
        .url_of(&path("/hub/far/counter"))
        .starts_with("sparkyard://127.0.0.1:"));
}

#[actix_rt::test]
async fn a_remote_watch_ends_when_the_watched_process_is_gone() {
    let (client, far, _notes, far_stop) = hub_and_far().await;
    let counter = client.endpoint::<CounterProtocol>(&path("/hub/far/counter"));
    let limit = Duration::from_secs(10);
    // A direct route to the counter's process, by URL (as an executor reaches its driver).
    let url = far.url_of(&path("/hub/far/counter"));
    assert_eq!(client.resolve_url(&url), Ok(path("/hub/far/counter")));
    assert_eq!(counter.ask(Add(2), limit).await, Ok(Ok(3)));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    client
        .start_root_worker("watcher", move |_, me| Watcher {
            me,
            target: path("/hub/far/counter"),
            ended: tx.clone(),
        })
        .unwrap();
    // The counter's process goes away: its endpoint stops and its actors end.
    far_stop.send(true).unwrap();
    far.shutdown(Duration::from_secs(5)).await;
    let ended = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("Terminated within 10 s")
        .expect("a Terminated");
    assert_eq!(ended.path, path("/hub/far/counter"));
    // Either the actor's end reached the watcher, or the connection's loss did.
    let why = ended.reason.to_string();
    assert!(
        matches!(ended.reason, sparkyard::runtime::ExitReason::Shutdown) || why.contains("is gone"),
        "{why}"
    );
}

// ------------------------------------------------------------------ authenticated

/// A process of its own serving `root` under `security`, with a counter at `root/counter`;
/// its route to the node hub at `hub`, when given.
async fn secured(
    id: &str,
    root: &str,
    security: sparkyard::rpc::remote::Security,
    hub: Option<&str>,
) -> (Cluster, String) {
    let cluster = runtime(id);
    let (addr, stop) = sparkyard::rpc::remote::serve_cluster_secured(
        &cluster,
        path(root),
        "127.0.0.1:0",
        ServerLimits::default(),
        security,
    )
    .await
    .unwrap();
    std::mem::forget(stop);
    let notes = Arc::new(Mutex::new(Vec::new()));
    cluster.start_root_at(
        &path(root),
        Default::default(),
        SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::worker("counter", move |_, me| Counter {
            me,
            notes: notes.clone(),
        })),
    );
    if let Some(hub) = hub {
        cluster.route_to(path("/node"), hub).unwrap();
    }
    let counter = path(&format!("{root}/counter"));
    eventually("the counter started", || cluster.registry().contains(&counter)).await;
    (cluster, addr)
}

#[actix_rt::test]
async fn an_application_reaches_its_own_containers_and_no_other_applications() {
    use sparkyard::rpc::auth::{AcceptApps, Secret};
    use sparkyard::yarn::security::{container_keyring, daemon_security, node_keyring};
    let secret = "the node's secret";
    let mut conf = sparkyard::conf::SparkConf::new();
    conf.set("spark.authenticate", "true");
    conf.set("spark.authenticate.secret", secret);
    let node = node_keyring(&conf, AcceptApps::Any, false).unwrap();
    let app_secret = |app: &str| Secret::from_text(secret).unwrap().for_application(app).expose();
    let app = |app: &str| sparkyard::rpc::remote::Security {
        keyring: container_keyring(app, Some(&app_secret(app)), false).unwrap(),
        gate: None,
    };
    let (a, b) = ("application_17_0001", "application_17_0002");
    let (_hub, hub_addr) = secured("hub", "/node", daemon_security(node, false), None).await;
    let (b_driver, _) = secured(
        "b-driver",
        "/node/nm-h/container_17_0002_01_000001",
        app(b),
        Some(&hub_addr),
    )
    .await;
    let (_a_driver, _) = secured(
        "a-driver",
        "/node/nm-h/container_17_0001_01_000001",
        app(a),
        Some(&hub_addr),
    )
    .await;
    let (a_executor, _) = secured(
        "a-executor",
        "/node/nm-h/container_17_0001_01_000002",
        app(a),
        Some(&hub_addr),
    )
    .await;
    let limit = Duration::from_secs(10);

    // Its own application's driver, through the node: answered.
    let own = a_executor.endpoint::<CounterProtocol>(&path("/node/nm-h/container_17_0001_01_000001/counter"));
    let deadline = tokio::time::Instant::now() + limit;
    while own.ask(Add(1), limit).await != Ok(Ok(2)) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "A executor never reached A driver: {:?}",
            own.ask(Add(1), limit).await
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Another application's driver through the node: the node's gate refuses it.
    let other =
        a_executor.endpoint::<CounterProtocol>(&path("/node/nm-h/container_17_0002_01_000001/counter"));
    let refused = format!("{:?}", other.ask(Add(1), limit).await);
    assert!(
        refused.contains("belongs to application application_17_0002"),
        "{refused}"
    );
    // ... and directly at its address: B's process does not accept A's secret.
    let url = b_driver.url_of(&path("/node/nm-h/container_17_0002_01_000001/counter"));
    let direct = runtime("a-executor-direct");
    let (_addr, stop) = sparkyard::rpc::remote::serve_cluster_secured(
        &direct,
        path("/node/nm-h/container_17_0001_01_000003"),
        "127.0.0.1:0",
        ServerLimits::default(),
        app(a),
    )
    .await
    .unwrap();
    std::mem::forget(stop);
    let target = direct.resolve_url(&url).unwrap();
    let refused = format!(
        "{:?}",
        direct
            .endpoint::<CounterProtocol>(&target)
            .ask(Add(1), limit)
            .await
    );
    assert!(
        refused.contains("does not accept application application_17_0001"),
        "{refused}"
    );

    // A process without the secret reaches nothing.
    let stranger = runtime("stranger");
    let (_addr, stop) = sparkyard::rpc::remote::serve_cluster(
        &stranger,
        path("/stranger"),
        "127.0.0.1:0",
        ServerLimits::default(),
    )
    .await
    .unwrap();
    std::mem::forget(stop);
    stranger.route_to(path("/node"), &hub_addr).unwrap();
    let refused = format!(
        "{:?}",
        stranger
            .endpoint::<CounterProtocol>(&path("/node/nm-h/container_17_0001_01_000001/counter"))
            .ask(Add(1), limit)
            .await
    );
    assert!(refused.contains("authentication is required"), "{refused}");
}
