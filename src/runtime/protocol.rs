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

use std::any::{Any, TypeId};

use actix::{Actor, Addr, Context, Message, Recipient};

/// A protocol; see the module head. Implemented by [`protocol!`](crate::protocol).
pub trait Protocol: Send + Sync + Sized + 'static {
    /// The protocol's name in records and errors ("ApplicationMasterProtocol").
    const NAME: &'static str;
}

/// `Self` carries the message `M`.
pub trait Carries<M>: Protocol
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    /// The recipient of `M` in this protocol's handle.
    fn recipient(&self) -> &Recipient<M>;
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
pub struct Protocols(Vec<(TypeId, Box<dyn Any + Send + Sync>)>);

impl Protocols {
    /// Adds the handle of `P` at `addr`.
    pub fn with<P: ServedBy<A>, A: Actor>(mut self, addr: &Addr<A>) -> Self {
        self.0.push((TypeId::of::<P>(), Box::new(P::handle(addr))));
        self
    }

    /// The handle of `P`, if the incarnation speaks it.
    pub fn get<P: Protocol>(&self) -> Option<&P> {
        let id = TypeId::of::<P>();
        self.0
            .iter()
            .find(|(t, _)| *t == id)
            .and_then(|(_, h)| h.downcast_ref::<P>())
    }
}

/// Declares a protocol: a struct named after it holding one recipient per message, and the
/// impls that let [`EndpointRef`](crate::runtime::endpoint::EndpointRef)s carry those
/// messages to any actor that handles them all. Messages are named by a bare identifier (the
/// message's type, in scope where the macro is used).
///
/// ```ignore
/// protocol! {
///     /// What a driver receives from its executors.
///     pub ClusterProtocol { RegisterExecutor, StatusUpdate }
/// }
/// ```
#[macro_export]
macro_rules! protocol {
    ($(#[$meta:meta])* $vis:vis $name:ident { $($msg:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[allow(non_snake_case)]
        $vis struct $name {
            $($msg: ::actix::Recipient<$msg>,)+
        }

        impl $crate::runtime::protocol::Protocol for $name {
            const NAME: &'static str = stringify!($name);
        }

        impl<A> $crate::runtime::protocol::ServedBy<A> for $name
        where
            A: ::actix::Actor<Context = ::actix::Context<A>> $(+ ::actix::Handler<$msg>)+,
        {
            fn handle(addr: &::actix::Addr<A>) -> Self {
                $name { $($msg: addr.clone().recipient(),)+ }
            }
        }

        $(
            impl $crate::runtime::protocol::Carries<$msg> for $name {
                fn recipient(&self) -> &::actix::Recipient<$msg> {
                    &self.$msg
                }
            }
        )+
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
