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
