//! Who may open a connection, and what the connection hides: the challenge–response every
//! sparkyard port runs right after its greeting, and the sealed record layer that carries the
//! connection afterwards when encryption is on. Rpc layer: both transports (the client port,
//! [`super::tcp`], and the actor endpoints, [`super::remote`]) call it; it knows no protocol
//! and no YARN.
//!
//! # Secrets
//!
//! A node has one shared secret (`spark.authenticate.secret` or the file
//! `spark.authenticate.secret.file`, Spark's keys). Each application has a secret of its own,
//! derived from the node's with HKDF-SHA256 and the application's id: the client computes it
//! at submit (it knows the node's secret, which it needs to talk to the node at all) and hands
//! it to the application's containers through their launch context, as YARN hands an
//! application its credentials. A node's daemons derive any application's secret on demand,
//! so a NodeManager in another process accepts an application's containers without being told
//! first (YARN's NodeManagers check NMTokens the same way, against a key from the RM). A
//! container holds only its application's secret, so it cannot prove to be the node or
//! another application.
//!
//! # The handshake
//!
//! After the greetings, every frame of it a length-prefixed rmp-serde [`Handshake`]:
//!
//! 1. The client sends `Hello`: whether it authenticates, the realm it speaks for (the node,
//!    or one application), a fresh 32-byte nonce, and whether it wants encryption.
//! 2. The server answers `Challenge` with its own nonce (and whether the connection is
//!    encrypted), `Open` when neither side authenticates, or `Refused` with the reason.
//! 3. The client sends `Proof`: HMAC-SHA256 under the realm's secret of a label, the realm and
//!    both nonces. The server checks it in constant time and answers with its own `Proof`
//!    (another label), so the client knows the server holds the secret too; or `Refused`.
//!
//! The secret never crosses the wire; a recorded handshake cannot be replayed (the other
//! side's nonce is new each time). A server that refuses says why to the client in one line and
//! closes the connection; its caller writes one WARN record naming the peer.
//!
//! # Encryption
//!
//! With `spark.network.crypto.enabled` on either side, both derive two keys from the secret and
//! both nonces (HKDF-SHA256, one key per direction) and everything after the handshake travels
//! in sealed records: a `u32` big-endian length, then ChaCha20-Poly1305 ciphertext with its
//! 16-byte tag, the nonce a per-direction record counter. A record holds at most
//! [`MAX_RECORD`] bytes of plaintext, so a reader never holds more than one record; an altered,
//! reordered, replayed or truncated record fails its tag and closes the connection.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{ready, Context, Poll};

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce as AeadNonce, Tag};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};

use super::tcp::{encode_frame, read_frame};

/// The largest handshake frame either side accepts (a realm name and two nonces fit many
/// times over).
pub const MAX_HANDSHAKE_FRAME: usize = 4096;

/// The nonce each side contributes, in bytes.
pub const NONCE_LEN: usize = 32;

/// The most plaintext one sealed record carries.
pub const MAX_RECORD: usize = 64 << 10;

/// The bytes of a record's authentication tag.
const TAG_LEN: usize = 16;

const CLIENT_PROOF: &[u8] = b"sparkyard client proof v1";
const SERVER_PROOF: &[u8] = b"sparkyard server proof v1";
const CLIENT_KEY: &[u8] = b"sparkyard client-to-server key v1";
const SERVER_KEY: &[u8] = b"sparkyard server-to-client key v1";
const APP_SECRET: &[u8] = b"sparkyard application secret v1";

type HmacSha256 = Hmac<Sha256>;

// ------------------------------------------------------------------ secrets

/// A shared secret. Never printed: its `Debug` and `Display` say only that it is one.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<[u8]>);

impl Secret {
    /// The secret `text` names (its bytes as given: Spark's secrets are strings). Empty is
    /// refused.
    pub fn from_text(text: &str) -> Result<Secret, String> {
        if text.is_empty() {
            return Err("the secret is empty".into());
        }
        Ok(Secret(Arc::from(text.as_bytes())))
    }

    /// A new random secret of 256 bits (Spark's `spark.authenticate.secretBitLength`),
    /// written as 64 hexadecimal digits.
    pub fn generate() -> Result<Secret, String> {
        let mut bytes = [0u8; 32];
        getrandom::getrandom(&mut bytes).map_err(|e| format!("cannot draw a random secret: {e}"))?;
        Secret::from_text(&hex(&bytes))
    }

    /// The secret of application `app` under this node secret.
    pub fn for_application(&self, app: &str) -> Secret {
        let kdf = Hkdf::<Sha256>::new(Some(APP_SECRET), &self.0);
        let mut okm = [0u8; 32];
        kdf.expand(app.as_bytes(), &mut okm)
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        Secret(Arc::from(hex(&okm).as_bytes()))
    }

    /// The secret as text, to hand to a container (its launch file, never a command line or a
    /// record).
    pub fn expose(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }

    fn mac(&self, label: &[u8], realm: &Realm, client: &[u8], server: &[u8]) -> HmacSha256 {
        let mut mac = <HmacSha256 as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(label);
        let realm = realm.to_string();
        mac.update(&(realm.len() as u32).to_be_bytes());
        mac.update(realm.as_bytes());
        mac.update(client);
        mac.update(server);
        mac
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(redacted)")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a connection speaks for: the node (its daemons, and the clients that hold the node's
/// secret), or one application (its containers).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Realm {
    Node,
    Application(String),
}

impl Realm {
    fn from_wire(app: Option<String>) -> Realm {
        match app {
            None => Realm::Node,
            Some(app) => Realm::Application(app),
        }
    }

    fn to_wire(&self) -> Option<String> {
        match self {
            Realm::Node => None,
            Realm::Application(app) => Some(app.clone()),
        }
    }
}

impl fmt::Display for Realm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Realm::Node => f.write_str("the node"),
            Realm::Application(app) => write!(f, "application {app}"),
        }
    }
}

/// Who is on the other end of an accepted connection.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Principal {
    /// Authentication is off here: anyone who reaches the port.
    Anyone,
    /// Proved the node's secret.
    Node,
    /// Proved application `0`'s secret: one of its containers.
    Application(String),
}

/// Which applications' secrets an endpoint accepts besides the node's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcceptApps {
    /// Any application's (a node's daemons: every container of the cluster talks to them).
    Any,
    /// Only the application this process belongs to (a container, a client-mode driver).
    Own,
    /// None (the client port: only holders of the node's secret).
    NoApps,
}

/// The secrets one process holds, and what it accepts and offers with them.
pub struct Keyring {
    /// The node's secret: daemons and clients of the node hold it, containers do not.
    node: Option<Secret>,
    /// The application this process belongs to, with its secret; set once (a client-mode
    /// driver learns its application's id after it started serving).
    own: OnceLock<(String, Secret)>,
    accept: AcceptApps,
    /// `spark.network.crypto.enabled`.
    encrypt: bool,
    /// The application whose containers serve the paths under a root, if any: a connection to
    /// a container speaks for that container's application.
    app_of_root: fn(&str) -> Option<String>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field("node", &self.node.is_some())
            .field("own", &self.own.get().map(|(app, _)| app))
            .field("accept", &self.accept)
            .field("encrypt", &self.encrypt)
            .finish()
    }
}

fn no_app(_: &str) -> Option<String> {
    None
}

impl Keyring {
    /// No authentication: connections neither prove nor ask anything (`spark.authenticate`
    /// false, the default).
    pub fn open() -> Arc<Keyring> {
        Arc::new(Keyring {
            node: None,
            own: OnceLock::new(),
            accept: AcceptApps::NoApps,
            encrypt: false,
            app_of_root: no_app,
        })
    }

    /// The keyring of a process that holds the node's `secret`, accepting `accept`'s
    /// applications; `app_of_root` names the application of a container root.
    pub fn node(
        secret: Secret,
        accept: AcceptApps,
        encrypt: bool,
        app_of_root: fn(&str) -> Option<String>,
    ) -> Arc<Keyring> {
        Arc::new(Keyring {
            node: Some(secret),
            own: OnceLock::new(),
            accept,
            encrypt,
            app_of_root,
        })
    }

    /// The keyring of a container of application `app`: its secret only.
    pub fn application(
        app: &str,
        secret: Secret,
        encrypt: bool,
        app_of_root: fn(&str) -> Option<String>,
    ) -> Arc<Keyring> {
        let own = OnceLock::new();
        let _ = own.set((app.to_string(), secret));
        Arc::new(Keyring {
            node: None,
            own,
            accept: AcceptApps::Own,
            encrypt,
            app_of_root,
        })
    }

    /// Whether the process serving `root` is one of application `app`'s containers.
    pub fn root_belongs(&self, app: &str, root: &str) -> bool {
        (self.app_of_root)(root).as_deref() == Some(app)
    }

    /// The same secrets, accepting `accept`'s applications (the client port of a node takes
    /// the node's secret only).
    pub fn accepting(&self, accept: AcceptApps) -> Arc<Keyring> {
        let own = OnceLock::new();
        if let Some(pair) = self.own.get() {
            let _ = own.set(pair.clone());
        }
        Arc::new(Keyring {
            node: self.node.clone(),
            own,
            accept,
            encrypt: self.encrypt,
            app_of_root: self.app_of_root,
        })
    }

    /// Whether connections authenticate at all.
    pub fn authenticates(&self) -> bool {
        self.node.is_some() || self.own.get().is_some()
    }

    /// Whether this side asks for encryption.
    pub fn encrypts(&self) -> bool {
        self.encrypt && self.authenticates()
    }

    /// Makes `app` this process's own application (a client-mode driver, once it has its id),
    /// with its secret derived from the node's. Nothing when there is no node secret or the
    /// process has one already.
    pub fn adopt(&self, app: &str) {
        if let Some(node) = &self.node {
            let _ = self.own.set((app.to_string(), node.for_application(app)));
        }
    }

    /// The secret of application `app`, for its containers' launch files: derived from the
    /// node's, or this process's own. `None` when authentication is off.
    pub fn application_secret(&self, app: &str) -> Option<Secret> {
        match (&self.node, self.own.get()) {
            (Some(node), _) => Some(node.for_application(app)),
            (None, Some((own, secret))) if own == app => Some(secret.clone()),
            _ => None,
        }
    }

    /// The secret a client of `realm` must prove here, if this side accepts that realm.
    fn accepted(&self, realm: &Realm) -> Option<Secret> {
        match realm {
            Realm::Node => self.node.clone(),
            Realm::Application(app) => {
                if let Some((own, secret)) = self.own.get() {
                    if own == app && self.accept != AcceptApps::NoApps {
                        return Some(secret.clone());
                    }
                }
                match (self.accept, &self.node) {
                    (AcceptApps::Any, Some(node)) => Some(node.for_application(app)),
                    _ => None,
                }
            }
        }
    }

    /// The realm and secret this side offers to the process serving `root`: a container of an
    /// application is offered that application's secret (derived when this side holds the
    /// node's), anything else the node's; a container offers its own application's.
    pub fn offer(&self, root: Option<&str>) -> Option<(Realm, Secret)> {
        if let Some(node) = &self.node {
            return match root.and_then(self.app_of_root) {
                Some(app) => Some((Realm::Application(app.clone()), node.for_application(&app))),
                None => Some((Realm::Node, node.clone())),
            };
        }
        self.own
            .get()
            .map(|(app, secret)| (Realm::Application(app.clone()), secret.clone()))
    }
}

// ------------------------------------------------------------------ the handshake

/// One frame of the handshake.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Handshake {
    /// The client's opening: whether it authenticates, the application it speaks for (`None`:
    /// the node), its nonce, and whether it asks for encryption.
    Hello {
        authenticate: bool,
        app: Option<String>,
        #[serde(with = "serde_bytes")]
        nonce: Vec<u8>,
        encrypt: bool,
    },
    /// The server's nonce, and whether what follows is sealed.
    Challenge {
        #[serde(with = "serde_bytes")]
        nonce: Vec<u8>,
        encrypt: bool,
    },
    /// Neither side authenticates: frames follow in the clear.
    Open,
    /// An HMAC proving the secret.
    Proof {
        #[serde(with = "serde_bytes")]
        mac: Vec<u8>,
    },
    /// The server will not go on, and why; it closes the connection.
    Refused { reason: String },
}

/// The frame a client that does not authenticate sends after its greeting, for tools and
/// tests that speak the wire by hand.
pub fn plain_hello() -> Vec<u8> {
    encode_frame(&Handshake::Hello {
        authenticate: false,
        app: None,
        nonce: Vec::new(),
        encrypt: false,
    })
    .expect("a hello encodes")
}

/// The server's answer to [`plain_hello`] when it does not authenticate either.
pub fn plain_answer() -> Vec<u8> {
    encode_frame(&Handshake::Open).expect("an answer encodes")
}

/// Decodes one handshake frame's body (what a fuzzing test feeds untrusted bytes).
pub fn decode_handshake(body: &[u8]) -> Result<Handshake, String> {
    rmp_serde::from_slice(body).map_err(|e| e.to_string())
}

/// The outcome of a handshake: who the other side is and the ciphers of the connection.
pub struct Session {
    pub principal: Principal,
    /// Set when the connection is encrypted from here on.
    pub ciphers: Option<Ciphers>,
}

/// The two directions' ciphers of an encrypted connection.
pub struct Ciphers {
    pub seal: Sealer,
    pub open: Opener,
}

/// Why a handshake failed: the line for the record (naming the peer is the caller's part),
/// and whether it was an authentication failure (as opposed to a broken stream).
#[derive(Debug)]
pub struct Refusal(pub String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn nonce() -> Result<Vec<u8>, String> {
    let mut bytes = vec![0u8; NONCE_LEN];
    getrandom::getrandom(&mut bytes).map_err(|e| format!("cannot draw a random nonce: {e}"))?;
    Ok(bytes)
}

async fn send<W: AsyncWrite + Unpin>(write: &mut W, message: &Handshake) -> Result<(), String> {
    let frame = encode_frame(message).map_err(|e| e.to_string())?;
    write
        .write_all(&frame)
        .await
        .map_err(|e| format!("cannot write the handshake: {e}"))?;
    write
        .flush()
        .await
        .map_err(|e| format!("cannot write the handshake: {e}"))
}

async fn receive<R: AsyncRead + Unpin>(read: &mut R) -> Result<Handshake, String> {
    match read_frame::<_, Handshake>(read, MAX_HANDSHAKE_FRAME).await {
        Ok(Some(message)) => Ok(message),
        Ok(None) => Err("the connection closed during the handshake".into()),
        Err(e) => Err(format!("a bad handshake frame: {e}")),
    }
}

/// Tells the client why, then fails.
async fn refuse<W: AsyncWrite + Unpin>(write: &mut W, reason: String) -> Result<Session, Refusal> {
    let _ = send(
        write,
        &Handshake::Refused {
            reason: reason.clone(),
        },
    )
    .await;
    Err(Refusal(reason))
}

/// The server's side, after the greetings: answers the client's hello as `keyring` says. A
/// refusal is sent to the client (so it can say why) before the error returns.
pub async fn accept<R, W>(read: &mut R, write: &mut W, keyring: &Keyring) -> Result<Session, Refusal>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (authenticate, app, client_nonce, client_encrypt) = match receive(read).await.map_err(Refusal)? {
        Handshake::Hello {
            authenticate,
            app,
            nonce,
            encrypt,
        } => (authenticate, app, nonce, encrypt),
        other => {
            return Err(Refusal(format!(
                "the first handshake frame was {other:?}, not a hello"
            )))
        }
    };
    if !keyring.authenticates() {
        if authenticate {
            return refuse(
                write,
                "this endpoint does not authenticate (spark.authenticate is false here) but the client does"
                    .into(),
            )
            .await;
        }
        send(write, &Handshake::Open).await.map_err(Refusal)?;
        return Ok(Session {
            principal: Principal::Anyone,
            ciphers: None,
        });
    }
    if !authenticate {
        return refuse(
            write,
            "authentication is required (spark.authenticate) and the client offered no secret".into(),
        )
        .await;
    }
    if client_nonce.len() != NONCE_LEN {
        return refuse(
            write,
            format!("a nonce of {} bytes (expected {NONCE_LEN})", client_nonce.len()),
        )
        .await;
    }
    let realm = Realm::from_wire(app);
    let Some(secret) = keyring.accepted(&realm) else {
        return refuse(
            write,
            format!("authentication failed: this endpoint does not accept {realm}"),
        )
        .await;
    };
    let server_nonce = nonce().map_err(Refusal)?;
    let encrypt = client_encrypt || keyring.encrypts();
    send(
        write,
        &Handshake::Challenge {
            nonce: server_nonce.clone(),
            encrypt,
        },
    )
    .await
    .map_err(Refusal)?;
    let mac = match receive(read).await.map_err(Refusal)? {
        Handshake::Proof { mac } => mac,
        other => return Err(Refusal(format!("expected a proof, got {other:?}"))),
    };
    if secret
        .mac(CLIENT_PROOF, &realm, &client_nonce, &server_nonce)
        .verify_slice(&mac)
        .is_err()
    {
        return refuse(
            write,
            format!("authentication failed: the proof for {realm} does not match this endpoint's secret"),
        )
        .await;
    }
    let proof = secret
        .mac(SERVER_PROOF, &realm, &client_nonce, &server_nonce)
        .finalize()
        .into_bytes()
        .to_vec();
    send(write, &Handshake::Proof { mac: proof })
        .await
        .map_err(Refusal)?;
    let principal = match realm {
        Realm::Node => Principal::Node,
        Realm::Application(app) => Principal::Application(app),
    };
    Ok(Session {
        principal,
        ciphers: encrypt.then(|| ciphers(&secret, &client_nonce, &server_nonce, Side::Server)),
    })
}

/// The client's side, after the greetings: proves `keyring`'s secret for the process serving
/// `root` (or says it has none) and checks the server's proof. The error is one line.
pub async fn offer<R, W>(
    read: &mut R,
    write: &mut W,
    keyring: &Keyring,
    root: Option<&str>,
) -> Result<Session, String>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let offered = keyring.offer(root);
    let client_nonce = nonce()?;
    send(
        write,
        &Handshake::Hello {
            authenticate: offered.is_some(),
            app: offered.as_ref().and_then(|(realm, _)| realm.to_wire()),
            nonce: client_nonce.clone(),
            encrypt: keyring.encrypts(),
        },
    )
    .await?;
    let (server_nonce, encrypt) = match receive(read).await? {
        Handshake::Open => {
            return Ok(Session {
                principal: Principal::Anyone,
                ciphers: None,
            })
        }
        Handshake::Refused { reason } => return Err(format!("it refused the connection: {reason}")),
        Handshake::Challenge { nonce, encrypt } => (nonce, encrypt),
        other => return Err(format!("an unexpected handshake answer {other:?}")),
    };
    let Some((realm, secret)) = offered else {
        return Err("it asked for a proof although this side offered none".into());
    };
    if server_nonce.len() != NONCE_LEN {
        return Err(format!(
            "a nonce of {} bytes (expected {NONCE_LEN})",
            server_nonce.len()
        ));
    }
    let proof = secret
        .mac(CLIENT_PROOF, &realm, &client_nonce, &server_nonce)
        .finalize()
        .into_bytes()
        .to_vec();
    send(write, &Handshake::Proof { mac: proof }).await?;
    match receive(read).await? {
        Handshake::Proof { mac } => {
            if secret
                .mac(SERVER_PROOF, &realm, &client_nonce, &server_nonce)
                .verify_slice(&mac)
                .is_err()
            {
                return Err("it could not prove that it holds the secret (a different node?)".into());
            }
        }
        Handshake::Refused { reason } => return Err(format!("it refused the connection: {reason}")),
        other => return Err(format!("an unexpected handshake answer {other:?}")),
    }
    let principal = match realm {
        Realm::Node => Principal::Node,
        Realm::Application(app) => Principal::Application(app),
    };
    Ok(Session {
        principal,
        ciphers: encrypt.then(|| ciphers(&secret, &client_nonce, &server_nonce, Side::Client)),
    })
}

/// The ciphers both ends of a connection derive from `secret` and the two nonces: the
/// client's, then the server's (for tools and tests that speak the record layer by hand).
pub fn session_ciphers(secret: &Secret, client: &[u8], server: &[u8]) -> (Ciphers, Ciphers) {
    (
        ciphers(secret, client, server, Side::Client),
        ciphers(secret, client, server, Side::Server),
    )
}

#[derive(Clone, Copy)]
enum Side {
    Client,
    Server,
}

fn ciphers(secret: &Secret, client: &[u8], server: &[u8], side: Side) -> Ciphers {
    let mut salt = Vec::with_capacity(client.len() + server.len());
    salt.extend_from_slice(client);
    salt.extend_from_slice(server);
    let kdf = Hkdf::<Sha256>::new(Some(&salt), &secret.0);
    let key = |info: &[u8]| {
        let mut okm = [0u8; 32];
        kdf.expand(info, &mut okm)
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        ChaCha20Poly1305::new(Key::from_slice(&okm))
    };
    let (mine, theirs) = match side {
        Side::Client => (CLIENT_KEY, SERVER_KEY),
        Side::Server => (SERVER_KEY, CLIENT_KEY),
    };
    Ciphers {
        seal: Sealer {
            cipher: key(mine),
            counter: 0,
        },
        open: Opener {
            cipher: key(theirs),
            counter: 0,
        },
    }
}

fn record_nonce(counter: u64) -> AeadNonce {
    let mut nonce = [0u8; 12];
    nonce[4..].copy_from_slice(&counter.to_be_bytes());
    *AeadNonce::from_slice(&nonce)
}

/// Seals this side's records.
pub struct Sealer {
    cipher: ChaCha20Poly1305,
    counter: u64,
}

impl Sealer {
    /// Appends `plain` to `out` as one sealed record.
    fn seal_into(&mut self, plain: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(plain);
        self.seal_record(out, start);
    }

    /// Seals the record whose 4-byte head is reserved at `buf[start..]` and whose plaintext
    /// (at most [`MAX_RECORD`] bytes) follows it to the end of `buf`, where it lies: the head
    /// gets the record's length and the tag is appended. No byte is copied.
    fn seal_record(&mut self, buf: &mut Vec<u8>, start: usize) {
        let plain = buf.len() - start - 4;
        debug_assert!(plain <= MAX_RECORD, "a record of {plain} bytes");
        buf[start..start + 4].copy_from_slice(&((plain + TAG_LEN) as u32).to_be_bytes());
        let tag = self
            .cipher
            .encrypt_in_place_detached(&record_nonce(self.counter), &[], &mut buf[start + 4..])
            .expect("a record within MAX_RECORD encrypts");
        self.counter += 1;
        buf.extend_from_slice(&tag);
    }

    /// Seals the plaintext after the 4 bytes reserved at `buf[start..]`, to the end of `buf`,
    /// as records of at most [`MAX_RECORD`] bytes: in place when it fits one record (the
    /// usual case: many small frames gathered in one record); a longer one is split, which
    /// copies it once. Nothing at all (an empty plaintext) leaves no record.
    pub fn seal_tail(&mut self, buf: &mut Vec<u8>, start: usize) {
        let plain = buf.len() - start - 4;
        if plain == 0 {
            buf.truncate(start);
        } else if plain <= MAX_RECORD {
            self.seal_record(buf, start);
        } else {
            let tail = buf.split_off(start + 4);
            buf.truncate(start);
            buf.reserve(tail.len() + tail.len().div_ceil(MAX_RECORD) * (4 + TAG_LEN));
            for chunk in tail.chunks(MAX_RECORD) {
                self.seal_into(chunk, buf);
            }
        }
    }
}

/// Opens the other side's records.
pub struct Opener {
    cipher: ChaCha20Poly1305,
    counter: u64,
}

impl Opener {
    fn open_in_place(&mut self, record: &mut Vec<u8>) -> io::Result<()> {
        let at = record.len() - TAG_LEN;
        let tag = *Tag::from_slice(&record[at..]);
        record.truncate(at);
        self.cipher
            .decrypt_in_place_detached(&record_nonce(self.counter), &[], record, &tag)
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a sealed record failed its check (altered, reordered or under another key)",
                )
            })?;
        self.counter += 1;
        Ok(())
    }
}

// ------------------------------------------------------------------ the record layer

/// The reading half of a connection: passes bytes through, or opens sealed records.
pub struct SecureRead<R> {
    inner: R,
    open: Option<Opener>,
    head: [u8; 4],
    head_len: usize,
    /// The record being read (then its plaintext).
    record: Vec<u8>,
    record_len: usize,
    /// Where the next byte of the opened plaintext is.
    served: usize,
    opened: bool,
}

impl<R> SecureRead<R> {
    pub fn new(inner: R, open: Option<Opener>) -> SecureRead<R> {
        SecureRead {
            inner,
            open,
            head: [0; 4],
            head_len: 0,
            record: Vec::new(),
            record_len: 0,
            served: 0,
            opened: false,
        }
    }
}

impl<R> SecureRead<R> {
    /// Opens records from here on (a connection that passed its handshake in the clear).
    pub fn start(&mut self, open: Opener) {
        self.open = Some(open);
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for SecureRead<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let Some(open) = this.open.as_mut() else {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        };
        loop {
            if this.opened {
                let left = &this.record[this.served..];
                if !left.is_empty() {
                    let n = left.len().min(buf.remaining());
                    buf.put_slice(&left[..n]);
                    this.served += n;
                    return Poll::Ready(Ok(()));
                }
                this.opened = false;
                this.head_len = 0;
                this.record.clear();
                this.served = 0;
            }
            while this.head_len < 4 {
                let mut head = ReadBuf::new(&mut this.head[this.head_len..]);
                ready!(Pin::new(&mut this.inner).poll_read(cx, &mut head))?;
                let n = head.filled().len();
                if n == 0 {
                    if this.head_len == 0 {
                        return Poll::Ready(Ok(()));
                    }
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the stream ended inside a sealed record's length",
                    )));
                }
                this.head_len += n;
                if this.head_len == 4 {
                    let len = u32::from_be_bytes(this.head) as usize;
                    if !(TAG_LEN..=MAX_RECORD + TAG_LEN).contains(&len) {
                        return Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "a sealed record of {len} bytes (between {TAG_LEN} and {} expected)",
                                MAX_RECORD + TAG_LEN
                            ),
                        )));
                    }
                    this.record_len = len;
                    this.record.clear();
                }
            }
            while this.record.len() < this.record_len {
                let have = this.record.len();
                this.record.resize(this.record_len, 0);
                let mut body = ReadBuf::new(&mut this.record[have..]);
                let polled = Pin::new(&mut this.inner).poll_read(cx, &mut body);
                let n = body.filled().len();
                this.record.truncate(have + n);
                ready!(polled)?;
                if n == 0 {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the stream ended inside a sealed record",
                    )));
                }
            }
            open.open_in_place(&mut this.record)?;
            this.opened = true;
            this.served = 0;
        }
    }
}

/// The writing half of a connection: passes bytes through, or seals them into records (a
/// flush seals what is buffered). The bytes written go straight into the record being
/// filled, after its reserved head, and are sealed where they lie: one copy (from the
/// caller's buffer), none for sealing.
pub struct SecureWrite<W> {
    inner: W,
    seal: Option<Sealer>,
    /// Sealed records going out (from `written` on), then the record being filled.
    out: Vec<u8>,
    /// Where the record being filled starts (its 4-byte head), if one is.
    open: Option<usize>,
    written: usize,
}

impl<W> SecureWrite<W> {
    pub fn new(inner: W, seal: Option<Sealer>) -> SecureWrite<W> {
        SecureWrite {
            inner,
            seal,
            out: Vec::new(),
            open: None,
            written: 0,
        }
    }
}

impl<W> SecureWrite<W> {
    /// The stream it writes to.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Seals records from here on (a connection that passed its handshake in the clear).
    pub fn start(&mut self, seal: Sealer) {
        self.seal = Some(seal);
    }

    /// The stream and the sealer (which goes on counting its records), once everything
    /// written has been flushed; `None` while bytes are still buffered.
    pub fn into_parts(self) -> Result<(W, Option<Sealer>), SecureWrite<W>> {
        if self.open.is_some() || self.written < self.out.len() {
            return Err(self);
        }
        Ok((self.inner, self.seal))
    }

    /// Seals the record being filled, if any.
    fn close_record(&mut self) {
        if let (Some(start), Some(seal)) = (self.open.take(), self.seal.as_mut()) {
            seal.seal_tail(&mut self.out, start);
        }
    }
}

impl<W: AsyncWrite + Unpin> SecureWrite<W> {
    /// Writes every sealed byte out (none is being filled).
    fn poll_write_out(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        debug_assert!(self.open.is_none());
        while self.written < self.out.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.out[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.out.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }

    /// Seals what is buffered and writes every sealed byte out.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.close_record();
        self.poll_write_out(cx)
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for SecureWrite<W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.seal.is_none() {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        }
        let start = loop {
            match this.open {
                // A full record is sealed and sent before more is taken.
                Some(start) if this.out.len() - start - 4 >= MAX_RECORD => this.close_record(),
                Some(start) => break start,
                None if this.written < this.out.len() => ready!(this.poll_write_out(cx))?,
                None => {
                    let start = this.out.len();
                    this.out.extend_from_slice(&[0; 4]);
                    this.open = Some(start);
                    break start;
                }
            }
        };
        let n = buf.len().min(MAX_RECORD - (this.out.len() - start - 4));
        this.out.extend_from_slice(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn app_of(root: &str) -> Option<String> {
        root.strip_prefix("/apps/")
            .map(|rest| rest.split('/').next().unwrap_or(rest).to_string())
    }

    fn node(secret: &str, accept: AcceptApps) -> Arc<Keyring> {
        Keyring::node(Secret::from_text(secret).unwrap(), accept, false, app_of)
    }

    async fn run(
        server: &Keyring,
        client: &Keyring,
        root: Option<&str>,
    ) -> (Result<Session, Refusal>, Result<Session, String>) {
        let (a, b) = tokio::io::duplex(1 << 16);
        let (mut ar, mut aw) = tokio::io::split(a);
        let (mut br, mut bw) = tokio::io::split(b);
        tokio::join!(
            accept(&mut ar, &mut aw, server),
            offer(&mut br, &mut bw, client, root)
        )
    }

    #[tokio::test]
    async fn the_same_secret_authenticates_both_ways() {
        let (s, c) = run(
            &node("s3cret", AcceptApps::Any),
            &node("s3cret", AcceptApps::NoApps),
            None,
        )
        .await;
        assert_eq!(s.unwrap().principal, Principal::Node);
        assert_eq!(c.unwrap().principal, Principal::Node);
    }

    #[tokio::test]
    async fn a_wrong_or_missing_secret_is_refused_with_the_reason() {
        let (s, c) = run(
            &node("s3cret", AcceptApps::Any),
            &node("other", AcceptApps::NoApps),
            None,
        )
        .await;
        assert!(s.err().unwrap().0.contains("does not match"));
        assert!(c.err().unwrap().contains("authentication failed"));
        let (s, c) = run(&node("s3cret", AcceptApps::Any), &Keyring::open(), None).await;
        assert!(s.err().unwrap().0.contains("offered no secret"));
        assert!(c.err().unwrap().contains("authentication is required"));
        let (s, c) = run(&Keyring::open(), &node("s3cret", AcceptApps::Any), None).await;
        assert!(s.is_err());
        assert!(c.err().unwrap().contains("does not authenticate"));
        let (s, c) = run(&Keyring::open(), &Keyring::open(), None).await;
        assert_eq!(s.unwrap().principal, Principal::Anyone);
        assert_eq!(c.unwrap().principal, Principal::Anyone);
    }

    #[tokio::test]
    async fn an_application_secret_reaches_its_own_containers_and_the_node_only() {
        let node_secret = Secret::from_text("s3cret").unwrap();
        let a = Keyring::application("app-a", node_secret.for_application("app-a"), false, app_of);
        let b = Keyring::application("app-b", node_secret.for_application("app-b"), false, app_of);
        // A container of A is accepted by the node's daemons as A.
        let (s, c) = run(&node("s3cret", AcceptApps::Any), &a, Some("/node")).await;
        assert_eq!(s.unwrap().principal, Principal::Application("app-a".into()));
        c.unwrap();
        // ... not by the client port.
        let (s, _) = run(&node("s3cret", AcceptApps::NoApps), &a, Some("/node")).await;
        assert!(s.is_err());
        // ... and not by B's container.
        let (s, c) = run(&b, &a, None).await;
        assert!(s.err().unwrap().0.contains("does not accept application app-a"));
        assert!(c.is_err());
        // The node reaches A's container with A's secret.
        let (s, c) = run(&a, &node("s3cret", AcceptApps::Any), Some("/apps/app-a/c1")).await;
        assert_eq!(s.unwrap().principal, Principal::Application("app-a".into()));
        c.unwrap();
        // A client-mode driver accepts its own application and the node, no other.
        let driver = node("s3cret", AcceptApps::Own);
        driver.adopt("app-a");
        run(&driver, &a, None).await.0.unwrap();
        assert!(run(&driver, &b, None).await.0.is_err());
    }

    #[tokio::test]
    async fn sealed_records_carry_bytes_and_refuse_altered_ones() {
        let secret = Secret::from_text("s3cret").unwrap();
        let (n1, n2) = (nonce().unwrap(), nonce().unwrap());
        let client = ciphers(&secret, &n1, &n2, Side::Client);
        let server = ciphers(&secret, &n1, &n2, Side::Server);
        let (a, b) = tokio::io::duplex(1 << 10);
        let mut w = SecureWrite::new(a, Some(client.seal));
        let mut r = SecureRead::new(b, Some(server.open));
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let sent = data.clone();
        let writer = tokio::spawn(async move {
            w.write_all(&sent).await.unwrap();
            w.flush().await.unwrap();
            w.shutdown().await.unwrap();
        });
        let mut got = Vec::new();
        r.read_to_end(&mut got).await.unwrap();
        writer.await.unwrap();
        assert_eq!(got, data);

        // One flipped bit fails the record.
        let mut sealer = ciphers(&secret, &n1, &n2, Side::Client).seal;
        let mut wire = Vec::new();
        sealer.seal_into(b"hello", &mut wire);
        wire[6] ^= 1;
        let mut r = SecureRead::new(&wire[..], Some(ciphers(&secret, &n1, &n2, Side::Server).open));
        let err = r.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        // A length beyond a record is refused before any allocation.
        let huge = [0xffu8, 0xff, 0xff, 0xff];
        let mut r = SecureRead::new(&huge[..], Some(ciphers(&secret, &n1, &n2, Side::Server).open));
        assert!(r.read_to_end(&mut Vec::new()).await.is_err());
    }

    #[tokio::test]
    async fn writes_are_sealed_where_they_lie_one_record_per_flush() {
        let secret = Secret::from_text("s3cret").unwrap();
        let (n1, n2) = (nonce().unwrap(), nonce().unwrap());
        let mut w = SecureWrite::new(Vec::new(), Some(ciphers(&secret, &n1, &n2, Side::Client).seal));
        let mut plain = Vec::new();
        for i in 0..100u8 {
            w.write_all(&[i; 10]).await.unwrap();
            plain.extend_from_slice(&[i; 10]);
        }
        assert!(w.get_ref().is_empty(), "nothing goes out before a flush");
        w.flush().await.unwrap();
        // One record: the head, the 1,000 bytes sealed, the tag; what seal_into gives.
        let mut expected = Vec::new();
        ciphers(&secret, &n1, &n2, Side::Client)
            .seal
            .seal_into(&plain, &mut expected);
        assert_eq!(w.get_ref().len(), 4 + 1000 + TAG_LEN);
        assert_eq!(*w.get_ref(), expected);
        // A flush with nothing written adds nothing.
        w.flush().await.unwrap();
        assert_eq!(w.get_ref().len(), 4 + 1000 + TAG_LEN);
        // More than a record's worth: full records, then the rest.
        let big: Vec<u8> = (0..2 * MAX_RECORD + 3).map(|i| (i % 253) as u8).collect();
        w.write_all(&big).await.unwrap();
        w.flush().await.unwrap();
        let (wire, _) = match w.into_parts() {
            Ok(parts) => parts,
            Err(_) => panic!("everything was flushed"),
        };
        let mut at = 4 + 1000 + TAG_LEN;
        let mut lens = Vec::new();
        while at < wire.len() {
            let len = u32::from_be_bytes(*wire[at..].first_chunk::<4>().unwrap()) as usize;
            lens.push(len - TAG_LEN);
            at += 4 + len;
        }
        assert_eq!(lens, vec![MAX_RECORD, MAX_RECORD, 3]);
        let mut r = SecureRead::new(&wire[..], Some(ciphers(&secret, &n1, &n2, Side::Server).open));
        let mut got = Vec::new();
        r.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, [plain, big].concat());
    }

    #[test]
    fn sealing_a_tail_in_place_gives_the_records_sealing_a_copy_gives() {
        let secret = Secret::from_text("s3cret").unwrap();
        let (n1, n2) = (nonce().unwrap(), nonce().unwrap());
        for len in [0, 1, 100, MAX_RECORD, MAX_RECORD + 1, 3 * MAX_RECORD + 5] {
            let plain: Vec<u8> = (0..len).map(|i| (i % 241) as u8).collect();
            let mut in_place = b"before".to_vec();
            let start = in_place.len();
            in_place.extend_from_slice(&[0; 4]);
            in_place.extend_from_slice(&plain);
            ciphers(&secret, &n1, &n2, Side::Client)
                .seal
                .seal_tail(&mut in_place, start);
            let mut copied = b"before".to_vec();
            let mut sealer = ciphers(&secret, &n1, &n2, Side::Client).seal;
            for chunk in plain.chunks(MAX_RECORD) {
                sealer.seal_into(chunk, &mut copied);
            }
            assert_eq!(in_place, copied, "{len} bytes");
        }
    }

    #[test]
    fn secrets_never_print() {
        let secret = Secret::from_text("s3cret").unwrap();
        assert_eq!(format!("{secret:?}"), "Secret(redacted)");
        assert!(!format!("{:?}", node("s3cret", AcceptApps::Any)).contains("s3cret"));
        assert_ne!(secret.for_application("a"), secret.for_application("b"));
        assert_eq!(Secret::generate().unwrap().expose().len(), 64);
    }
}
