//! Protocols: what an endpoint reference is typed by. Runtime layer.
//!
//! A protocol is one side of a conversation: the messages an endpoint accepts in it, named as
//! Spark and Hadoop name the conversation (ApplicationMasterProtocol, the cluster messages a
//! driver receives, ...). It is declared once, with its messages, by [`protocol!`](crate::protocol),
//! in the module of the layer that both sides of the conversation can see. An actor says
//! which protocols it speaks with [`speaks!`](crate::speaks) (the compiler checks it handles
//! every message of each), and a peer holds an
//! [`EndpointRef<P>`](super::endpoint::EndpointRef), typed by the protocol, never by the
//! actor: the sender imports the messages, not the receiver.
//!
//! The value of a protocol type is its *handle*: one actix `Recipient` per message, built
//! from the actor's address when an incarnation starts and kept in the registry beside it.
//! Sending `M` over `EndpointRef<P>` looks the path up, finds `P`'s handle and uses its
//! recipient for `M`; `P: Carries<M>` is what makes that a compile-time check.
//!
//! A protocol declared `remote` (`protocol! { remote pub P { ... } }`, every message and
//! reply deriving serde) also crosses processes: the same `tell`/`ask` encode the message
//! for a route's link, and the receiving process decodes it by name and delivers it through
//! the same handle ([`super::remote`]).

use std::any::Any;

use actix::{Actor, Addr, Context, Message, Recipient};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::remote::{RemoteMessage, ReplyFuture};

/// A protocol; see the module head. Implemented by [`protocol!`](crate::protocol).
pub trait Protocol: Send + Sync + Sized + 'static {
    /// The protocol's name in records and errors ("ApplicationMasterProtocol").
    const NAME: &'static str;

    /// Delivers a message received from another process through this handle; `None` for a
    /// protocol that is local only.
    fn dispatch(&self, _message: &RemoteMessage) -> Option<ReplyFuture> {
        None
    }
}

/// `Self` carries the message `M`.
pub trait Carries<M>: Protocol
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    /// The recipient of `M` in this protocol's handle.
    fn recipient(&self) -> &Recipient<M>;

    /// `M`'s name in this protocol, as it travels to another process (the name the
    /// protocol lists it by, so an alias names it as the receiver knows it).
    fn message_name() -> &'static str {
        super::path::short_type_name::<M>()
    }

    /// `M` encoded to cross a process; `None` when the protocol is local only.
    fn encode(_message: &M) -> Option<Result<Vec<u8>, String>> {
        None
    }

    /// The reply to `M`, decoded from another process's answer.
    fn decode_reply(_bytes: &[u8]) -> Result<M::Result, String> {
        Err(format!(
            "{} is local only: its messages cannot cross a process",
            Self::NAME
        ))
    }
}

/// `message` encoded for another process (rmp-serde).
pub fn encode_message<M: Serialize>(message: &M) -> Option<Result<Vec<u8>, String>> {
    Some(rmp_serde::to_vec(message).map_err(|e| format!("cannot encode the message: {e}")))
}

/// A reply decoded from another process's answer.
pub fn decode_reply<R: DeserializeOwned>(bytes: &[u8]) -> Result<R, String> {
    rmp_serde::from_slice(bytes).map_err(|e| format!("cannot decode the reply: {e}"))
}

/// Delivers one message received from another process through `recipient`: a tell is sent
/// and acknowledged at once (empty reply); an ask waits for the actor's answer, at most the
/// sender's time limit, and encodes it.
pub fn dispatch_one<M>(recipient: &Recipient<M>, message: &RemoteMessage) -> ReplyFuture
where
    M: Message + DeserializeOwned + Send + 'static,
    M::Result: Serialize + Send,
{
    let decoded: M = match rmp_serde::from_slice(&message.body) {
        Ok(m) => m,
        Err(e) => {
            let what = format!("cannot decode {}: {e}", message.message);
            return Box::pin(async move { Err(what) });
        }
    };
    match message.ask {
        None => {
            recipient.do_send(decoded);
            Box::pin(async { Ok(Vec::new()) })
        }
        Some(limit) => {
            let (request, name) = (recipient.send(decoded), message.message.clone());
            Box::pin(async move {
                match tokio::time::timeout(limit, request).await {
                    Ok(Ok(reply)) => rmp_serde::to_vec(&reply)
                        .map_err(|e| format!("cannot encode the reply to {name}: {e}")),
                    Ok(Err(_)) => Err(format!("the actor ended before it answered {name}")),
                    Err(_) => Err(format!(
                        "no answer to {name} within {}",
                        humantime::format_duration(limit)
                    )),
                }
            })
        }
    }
}

/// The actor `A` serves `Self`: it handles every message of the protocol.
pub trait ServedBy<A: Actor>: Protocol {
    /// The protocol's handle at `addr`.
    fn handle(addr: &Addr<A>) -> Self;
}

/// An actor that others address: the protocols it speaks. Every actor the runtime starts
/// implements it; one that no peer addresses speaks none (`speaks!(Probe);`).
pub trait Endpoint: Actor<Context = Context<Self>> {
    /// The handles of the protocols `Self` speaks at `addr`.
    fn protocols(addr: &Addr<Self>) -> Protocols;
}

/// The handles of the protocols one incarnation speaks, kept in the registry beside it; a
/// short list (one to four protocols), searched by type.
#[derive(Default)]
pub struct Protocols(Vec<Spoken>);

/// One protocol an incarnation speaks: its handle, and how a message from another process
/// reaches it by the protocol's name.
struct Spoken {
    name: &'static str,
    handle: Box<dyn Any + Send + Sync>,
    dispatch: fn(&(dyn Any + Send + Sync), &RemoteMessage) -> Option<ReplyFuture>,
}

fn dispatch_erased<P: Protocol>(
    handle: &(dyn Any + Send + Sync),
    message: &RemoteMessage,
) -> Option<ReplyFuture> {
    handle.downcast_ref::<P>().and_then(|h| h.dispatch(message))
}

impl Protocols {
    /// Adds the handle of `P` at `addr`.
    pub fn with<P: ServedBy<A>, A: Actor>(mut self, addr: &Addr<A>) -> Self {
        self.0.push(Spoken {
            name: P::NAME,
            handle: Box::new(P::handle(addr)),
            dispatch: dispatch_erased::<P>,
        });
        self
    }

    /// The handle of `P`, if the incarnation speaks it.
    pub fn get<P: Protocol>(&self) -> Option<&P> {
        // One type comparison per protocol spoken (downcast_ref's own); most speak one.
        self.0.iter().find_map(|s| s.handle.downcast_ref::<P>())
    }

    /// Delivers a message from another process through the protocol it names: `None` when
    /// the incarnation does not speak it, `Some(None)` when it is local only.
    pub(crate) fn dispatch(&self, message: &RemoteMessage) -> Option<Option<ReplyFuture>> {
        self.0
            .iter()
            .find(|s| s.name == message.protocol)
            .map(|s| (s.dispatch)(s.handle.as_ref(), message))
    }
}

/// Declares a protocol: a struct named after it holding one recipient per message, and the
/// impls that let [`EndpointRef`](crate::runtime::endpoint::EndpointRef)s carry those
/// messages to any actor that handles them all. Messages are named by a bare identifier (the
/// message's type, in scope where the macro is used). With `remote` before the name, the
/// protocol also crosses processes (every message and reply must derive serde).
///
/// ```ignore
/// protocol! {
///     /// What a driver receives from its executors.
///     pub ClusterProtocol { RegisterExecutor, StatusUpdate }
/// }
/// ```
#[macro_export]
macro_rules! protocol {
    ($(#[$meta:meta])* remote $vis:vis $name:ident { $($msg:ident),+ $(,)? }) => {
        $crate::protocol!(@common $(#[$meta])* $vis $name { $($msg),+ });

        impl $crate::runtime::protocol::Protocol for $name {
            const NAME: &'static str = stringify!($name);

            fn dispatch(
                &self,
                message: &$crate::runtime::remote::RemoteMessage,
            ) -> Option<$crate::runtime::remote::ReplyFuture> {
                Some(match message.message.as_str() {
                    $(stringify!($msg) => $crate::runtime::protocol::dispatch_one(&self.$msg, message),)+
                    other => {
                        let what = format!("{} has no message {other}", stringify!($name));
                        Box::pin(async move { Err(what) })
                    }
                })
            }
        }

        $(
            impl $crate::runtime::protocol::Carries<$msg> for $name {
                fn recipient(&self) -> &::actix::Recipient<$msg> {
                    &self.$msg
                }
                fn message_name() -> &'static str {
                    stringify!($msg)
                }
                fn encode(message: &$msg) -> Option<Result<Vec<u8>, String>> {
                    $crate::runtime::protocol::encode_message(message)
                }
                fn decode_reply(bytes: &[u8]) -> Result<<$msg as ::actix::Message>::Result, String> {
                    $crate::runtime::protocol::decode_reply(bytes)
                }
            }
        )+
    };
    ($(#[$meta:meta])* $vis:vis $name:ident { $($msg:ident),+ $(,)? }) => {
        $crate::protocol!(@common $(#[$meta])* $vis $name { $($msg),+ });

        impl $crate::runtime::protocol::Protocol for $name {
            const NAME: &'static str = stringify!($name);
        }

        $(
            impl $crate::runtime::protocol::Carries<$msg> for $name {
                fn recipient(&self) -> &::actix::Recipient<$msg> {
                    &self.$msg
                }
            }
        )+
    };
    (@common $(#[$meta:meta])* $vis:vis $name:ident { $($msg:ident),+ }) => {
        $(#[$meta])*
        #[allow(non_snake_case)]
        $vis struct $name {
            $($msg: ::actix::Recipient<$msg>,)+
        }

        impl<A> $crate::runtime::protocol::ServedBy<A> for $name
        where
            A: ::actix::Actor<Context = ::actix::Context<A>> $(+ ::actix::Handler<$msg>)+,
        {
            fn handle(addr: &::actix::Addr<A>) -> Self {
                $name { $($msg: addr.clone().recipient(),)+ }
            }
        }
    };
}

/// Says which protocols an actor speaks (none, for an actor no peer addresses):
/// `speaks!(DriverEndpoint: ClusterProtocol, DriverAdminProtocol);`.
#[macro_export]
macro_rules! speaks {
    ($actor:ty) => {
        impl $crate::runtime::protocol::Endpoint for $actor {
            fn protocols(_: &::actix::Addr<Self>) -> $crate::runtime::protocol::Protocols {
                $crate::runtime::protocol::Protocols::default()
            }
        }
    };
    ($actor:ty : $($protocol:ty),+ $(,)?) => {
        impl $crate::runtime::protocol::Endpoint for $actor {
            fn protocols(addr: &::actix::Addr<Self>) -> $crate::runtime::protocol::Protocols {
                $crate::runtime::protocol::Protocols::default()
                    $(.with::<$protocol, Self>(addr))+
            }
        }
    };
}
