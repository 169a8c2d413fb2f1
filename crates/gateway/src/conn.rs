//! One client connection: pgwire's message codec behind a size cap, the startup
//! exchange, then the simple and extended query protocols over a [`Session`].

use crate::auth::Authenticator;
use crate::command::{classify, Command, CopyCommand, CopySource};
use crate::config::GatewayConfig;
use crate::copy::{format_record, CopyIn};
use crate::errors::{self, PgError};
use crate::frontend::{decode_frontend, Phase};
use crate::params::RawParams;
use crate::pgtypes::decode_param;
use crate::pgtypes::{encode_value, pg_type};
use crate::session::{CopyBatchJob, Description, Field, Reply, Session, Status};
use crate::settings::Settings;
use crate::split::split_statements;
use crate::temp::TempEffect;
use bytes::{BufMut, BytesMut};
use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::{
    ClientInfo, ClientPortalStore, DefaultClient, PgWireConnectionState, METADATA_DATABASE, METADATA_USER,
};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::copy::{CopyData, CopyDone, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::{DataRow, FieldDescription, NoData, ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete, PortalSuspended,
    TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, GssEncResponse, NoticeResponse, ReadyForQuery, SslResponse, TransactionStatus,
};
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage, ProtocolVersion, SslNegotiationMetaMessage};
use pgwire::tokio::tokio_rustls::rustls::pki_types::CertificateDer;
use pistou_sql::{SqlType, Value};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_util::codec::{Decoder, Encoder, Framed};

/// The frontend decoder ([`decode_frontend`]) under the connection's cap.
pub struct GatewayCodec {
    client: DefaultClient<()>,
    max_message: usize,
}

impl Decoder for GatewayCodec {
    type Item = PgWireFrontendMessage;
    type Error = PgWireError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        let phase = match self.client.state {
            PgWireConnectionState::AwaitingSslRequest => Phase::First,
            PgWireConnectionState::AwaitingStartup => Phase::Startup,
            _ => Phase::Typed,
        };
        decode_frontend(src, phase, self.client.protocol_version, self.max_message)
    }
}

impl Encoder<PgWireBackendMessage> for GatewayCodec {
    type Error = io::Error;

    fn encode(&mut self, item: PgWireBackendMessage, dst: &mut BytesMut) -> Result<(), io::Error> {
        item.encode(dst).map_err(Into::into)
    }
}

/// The socket as pgwire's startup handlers see it.
pub struct Conn {
    framed: Framed<TcpStream, GatewayCodec>,
}

impl Conn {
    pub fn new(stream: TcpStream, addr: SocketAddr, max_message: usize) -> Conn {
        Conn { framed: Framed::new(stream, GatewayCodec { client: DefaultClient::new(addr, false), max_message }) }
    }

    /// Sends a (FATAL) error and closes.
    pub async fn send_error(&mut self, info: ErrorInfo) {
        let _ = self.send(PgWireBackendMessage::ErrorResponse(info.into())).await;
        let _ = self.close().await;
    }

    /// Largest message accepted from now on (small until the client has authenticated).
    pub fn set_max_message(&mut self, bytes: usize) {
        self.framed.codec_mut().max_message = bytes;
    }

    fn client(&self) -> &DefaultClient<()> {
        &self.framed.codec().client
    }

    fn client_mut(&mut self) -> &mut DefaultClient<()> {
        &mut self.framed.codec_mut().client
    }

    pub async fn next(&mut self) -> Option<Result<PgWireFrontendMessage, PgWireError>> {
        self.framed.next().await
    }

    /// Sends a FATAL error and closes.
    pub async fn fatal(&mut self, code: &str, message: &str) {
        self.send_error(ErrorInfo::new("FATAL".into(), code.into(), message.into())).await;
    }
}

impl ClientInfo for Conn {
    fn socket_addr(&self) -> SocketAddr {
        self.client().socket_addr()
    }
    fn is_secure(&self) -> bool {
        false
    }
    fn protocol_version(&self) -> ProtocolVersion {
        self.client().protocol_version()
    }
    fn set_protocol_version(&mut self, version: ProtocolVersion) {
        self.client_mut().set_protocol_version(version)
    }
    fn pid_and_secret_key(&self) -> (i32, SecretKey) {
        self.client().pid_and_secret_key()
    }
    fn set_pid_and_secret_key(&mut self, pid: i32, secret_key: SecretKey) {
        self.client_mut().set_pid_and_secret_key(pid, secret_key)
    }
    fn state(&self) -> PgWireConnectionState {
        self.client().state()
    }
    fn set_state(&mut self, new_state: PgWireConnectionState) {
        self.client_mut().set_state(new_state)
    }
    fn transaction_status(&self) -> TransactionStatus {
        self.client().transaction_status()
    }
    fn set_transaction_status(&mut self, new_status: TransactionStatus) {
        self.client_mut().set_transaction_status(new_status)
    }
    fn metadata(&self) -> &HashMap<String, String> {
        self.client().metadata()
    }
    fn metadata_mut(&mut self) -> &mut HashMap<String, String> {
        self.client_mut().metadata_mut()
    }
    fn session_extensions(&self) -> &pgwire::api::SessionExtensions {
        self.client().session_extensions()
    }
    fn sni_server_name(&self) -> Option<&str> {
        None
    }
    fn client_certificates<'a>(&self) -> Option<&[CertificateDer<'a>]> {
        None
    }
}

impl ClientPortalStore for Conn {
    type PortalStore = <DefaultClient<()> as ClientPortalStore>::PortalStore;
    fn portal_store(&self) -> &Self::PortalStore {
        self.client().portal_store()
    }
}

impl Sink<PgWireBackendMessage> for Conn {
    type Error = io::Error;
    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        Pin::new(&mut self.framed).poll_ready(cx)
    }
    fn start_send(mut self: Pin<&mut Self>, item: PgWireBackendMessage) -> Result<(), io::Error> {
        Pin::new(&mut self.framed).start_send(item)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        Pin::new(&mut self.framed).poll_flush(cx)
    }
    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        Pin::new(&mut self.framed).poll_close(cx)
    }
}

/// Runs the startup exchange (SSL refused, then authentication). True when the client
/// is authenticated and ready for queries.
/// How a connection's startup ended.
pub enum Startup {
    /// Authenticated; ready for queries, in the connection slot it holds.
    Ready(tokio::sync::OwnedSemaphorePermit),
    /// Closed, cancelled or malformed (already answered).
    Closed,
    /// A wrong password: the error to send (the caller may wait first).
    AuthFailed(Box<ErrorInfo>),
}

/// The startup exchange. Its startup packet must find a free connection slot in `slots`
/// (else 53300, as PostgreSQL answers over max_connections); a socket that never sends one
/// takes none.
pub async fn startup(conn: &mut Conn, auth: &Authenticator, slots: &Arc<tokio::sync::Semaphore>) -> Startup {
    let mut slot = None;
    let mut passwords = 0;
    loop {
        let message = match conn.next().await {
            None => return Startup::Closed,
            Some(Err(e)) => {
                conn.fatal(errors::PROTOCOL_VIOLATION, &format!("invalid startup message: {e}")).await;
                return Startup::Closed;
            }
            Some(Ok(m)) => m,
        };
        let reply = match message {
            PgWireFrontendMessage::SslNegotiation(SslNegotiationMetaMessage::PostgresSsl(_)) => {
                PgWireBackendMessage::SslResponse(SslResponse::Refuse)
            }
            PgWireFrontendMessage::SslNegotiation(SslNegotiationMetaMessage::PostgresGss(_)) => {
                PgWireBackendMessage::GssEncResponse(GssEncResponse::Refuse)
            }
            PgWireFrontendMessage::SslNegotiation(SslNegotiationMetaMessage::None) => {
                conn.set_state(PgWireConnectionState::AwaitingStartup);
                continue;
            }
            // Query cancellation is not supported: the request is dropped, like an
            // unknown key would be.
            PgWireFrontendMessage::CancelRequest(_) => return Startup::Closed,
            other => {
                if slot.is_none() {
                    match slots.clone().try_acquire_owned() {
                        Ok(permit) => slot = Some(permit),
                        Err(_) => {
                            conn.fatal("53300", "sorry, too many clients already").await;
                            return Startup::Closed;
                        }
                    }
                }
                let other = match other {
                    PgWireFrontendMessage::PasswordMessageFamily(p) => {
                        passwords += 1;
                        match auth.check_password_message(p, passwords == 1) {
                            Ok(p) => PgWireFrontendMessage::PasswordMessageFamily(p),
                            Err(e) => {
                                conn.fatal(errors::PROTOCOL_VIOLATION, &format!("invalid password message: {e}")).await;
                                return Startup::Closed;
                            }
                        }
                    }
                    other => other,
                };
                if let Err(e) = auth.on_startup(conn, other).await {
                    let mut info = ErrorInfo::from(e);
                    info.severity = "FATAL".into();
                    if info.code == "28P01" {
                        let user = conn.metadata().get(METADATA_USER).cloned().unwrap_or_default();
                        info.message = format!("password authentication failed for user \"{user}\"");
                        return Startup::AuthFailed(Box::new(info));
                    }
                    conn.send_error(info).await;
                    return Startup::Closed;
                }
                if matches!(conn.state(), PgWireConnectionState::ReadyForQuery) {
                    return match slot.take() {
                        Some(permit) => Startup::Ready(permit),
                        None => Startup::Closed,
                    };
                }
                continue;
            }
        };
        if conn.send(reply).await.is_err() {
            return Startup::Closed;
        }
    }
}

/// A statement kept by Parse or PREPARE (one namespace, as in PostgreSQL).
/// How long a closing session may take to drop its temporary tables.
const SESSION_CLOSE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

struct Statement {
    /// The text as the session runs it (temporary tables resolved, `temp.rs`).
    sql: String,
    command: Command,
    /// What it does to the session's temporary tables, recorded when it succeeds.
    temp: TempEffect,
    declared: Vec<u32>,
    /// Its number of parameters, when PREPARE found it (EXECUTE checks its arguments).
    param_count: Option<usize>,
}

/// A statement bound to parameters by Bind.
struct Portal {
    statement: Arc<Statement>,
    params: RawParams,
    result_formats: Vec<i16>,
    /// Columns announced by Describe (rows must then be encoded as announced).
    announced: Option<Vec<Field>>,
    /// Rows left after an Execute with a row limit.
    pending: Option<Pending>,
}

struct Pending {
    fields: Vec<Field>,
    rows: std::collections::VecDeque<pistou_sql::Row>,
}

/// The protocol state of one authenticated connection.
pub struct Protocol {
    conn: Conn,
    session: Session,
    config: Arc<GatewayConfig>,
    statements: HashMap<String, Arc<Statement>>,
    portals: HashMap<String, Portal>,
    /// After an error in an extended-protocol message, everything until Sync is ignored.
    skip_until_sync: bool,
}

fn status_byte(status: Status) -> TransactionStatus {
    match status {
        Status::Idle => TransactionStatus::Idle,
        Status::InTransaction => TransactionStatus::Transaction,
        Status::Failed => TransactionStatus::Error,
    }
}

fn format_of(formats: &[i16], i: usize) -> i16 {
    match formats {
        [] => 0,
        [one] => *one,
        many => many.get(i).copied().unwrap_or(0),
    }
}

impl Protocol {
    pub fn new(
        conn: Conn,
        session_parts: (pistou_client::Client, Arc<pistou_sql::Engine>),
        config: Arc<GatewayConfig>,
    ) -> Protocol {
        let meta = conn.metadata();
        let user = meta.get(METADATA_USER).cloned().unwrap_or_else(|| "pistou".into());
        let database = meta.get(METADATA_DATABASE).cloned().unwrap_or_else(|| user.clone());
        let settings = Settings::from_startup(meta.iter());
        let pid = conn.pid_and_secret_key().0;
        let session = Session::new(session_parts.0, session_parts.1, config.clone(), settings, user, database, pid);
        Protocol { conn, session, config, statements: HashMap::new(), portals: HashMap::new(), skip_until_sync: false }
    }

    /// Serves messages until the client leaves, misbehaves, idles too long, or the
    /// gateway shuts down.
    pub async fn run(mut self, shutdown: watch::Receiver<bool>) {
        self.serve(shutdown).await;
        // The session's temporary tables go with it; bounded, as the cluster may be away.
        let _ = tokio::time::timeout(SESSION_CLOSE_LIMIT, self.session.close()).await;
    }

    async fn serve(&mut self, mut shutdown: watch::Receiver<bool>) {
        loop {
            let next = tokio::select! {
                _ = stop_requested(&mut shutdown) => {
                    self.conn.fatal("57P01", "terminating connection due to administrator command").await;
                    return;
                }
                next = tokio::time::timeout(self.config.idle_timeout, self.conn.next()) => next,
            };
            let message = match next {
                Err(_) => {
                    self.conn.fatal("57P05", "terminating connection due to idle-session timeout").await;
                    return;
                }
                Ok(None) => return,
                Ok(Some(Err(e))) => {
                    self.conn.fatal(errors::PROTOCOL_VIOLATION, &format!("invalid message: {e}")).await;
                    return;
                }
                Ok(Some(Ok(m))) => m,
            };
            match self.handle(message).await {
                Ok(true) => {}
                Ok(false) | Err(_) => return,
            }
        }
    }

    /// Handles one message; false when the connection must end.
    async fn handle(&mut self, message: PgWireFrontendMessage) -> io::Result<bool> {
        use PgWireFrontendMessage as M;
        if self.skip_until_sync && message.is_extended_query() && !matches!(message, M::Sync(_)) {
            return Ok(true);
        }
        let result = match message {
            M::Query(q) => {
                self.simple_query(&q.query).await?;
                return Ok(true);
            }
            M::Terminate(_) => return Ok(false),
            M::Sync(_) => {
                self.skip_until_sync = false;
                self.portals.remove("");
                self.ready().await?;
                return Ok(true);
            }
            M::Flush(_) => {
                self.conn.flush().await?;
                return Ok(true);
            }
            M::Parse(p) => self.parse(p).await,
            M::Bind(b) => self.bind(b).await,
            M::Describe(d) => self.describe(d).await,
            M::Execute(e) => self.execute(e).await,
            M::Close(c) => self.close(c).await,
            // Outside COPY FROM STDIN these are what is left of a COPY that failed: dropped,
            // as PostgreSQL does.
            M::CopyData(_) | M::CopyDone(_) | M::CopyFail(_) => return Ok(true),
            other => {
                let text = format!("unexpected message in this state: {other:?}");
                self.conn.fatal(errors::PROTOCOL_VIOLATION, &text.chars().take(200).collect::<String>()).await;
                return Ok(false);
            }
        };
        if let Err(e) = result {
            self.session.fail();
            self.error(&e).await?;
            self.skip_until_sync = true;
        }
        Ok(true)
    }

    async fn ready(&mut self) -> io::Result<()> {
        let status = status_byte(self.session.status());
        self.conn.send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(status))).await
    }

    async fn error(&mut self, e: &PgError) -> io::Result<()> {
        if let Some(m) = &self.config.metrics {
            m.error(e.code);
        }
        let mut info = ErrorInfo::new("ERROR".into(), e.code.into(), self.session.temp.unqualify(&e.message));
        info.constraint = e.constraint().map(|c| self.session.temp.unqualify(&c));
        self.conn.feed(PgWireBackendMessage::ErrorResponse(info.into())).await
    }

    fn too_long(&self, sql: &str) -> Option<PgError> {
        (sql.len() > self.config.max_statement_bytes).then(|| {
            PgError::new(
                errors::PROGRAM_LIMIT,
                format!(
                    "statement is too long ({} bytes; the gateway accepts at most {})",
                    sql.len(),
                    self.config.max_statement_bytes
                ),
            )
        })
    }

    async fn simple_query(&mut self, text: &str) -> io::Result<()> {
        self.statements.remove("");
        self.portals.remove("");
        if let Some(e) = self.too_long(text) {
            self.session.fail();
            self.error(&e).await?;
            return self.ready().await;
        }
        let statements = split_statements(text);
        if statements.is_empty() {
            self.conn.feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())).await?;
        }
        for sql in statements {
            let result = match self.resolve(sql) {
                Ok((sql, command, temp)) => match self.run_statement(&sql, &command, &RawParams::default()).await {
                    Ok(reply) => match self.session.temp_applied(temp).await {
                        Ok(()) => self.write_reply(reply, None, &[], usize::MAX, true).await.map(|_| ()),
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                },
                Err(e) => {
                    self.session.fail();
                    Err(e)
                }
            };
            match result {
                Ok(()) => {}
                Err(e) => {
                    self.error(&e).await?;
                    break;
                }
            }
        }
        self.ready().await
    }

    async fn parse(&mut self, p: Parse) -> Result<(), PgError> {
        if let Some(e) = self.too_long(&p.query) {
            return Err(e);
        }
        let name = p.name.unwrap_or_default();
        self.check_new_statement(&name, p.query.len())?;
        let parts = split_statements(&p.query);
        if parts.len() > 1 {
            return Err(PgError::new("42601", "cannot insert multiple commands into a prepared statement"));
        }
        let (sql, command, temp) = self.resolve(parts.first().copied().unwrap_or_default())?;
        let statement = Statement { sql, command, temp, declared: p.type_oids, param_count: None };
        self.statements.insert(name, Arc::new(statement));
        self.conn.feed(PgWireBackendMessage::ParseComplete(ParseComplete::new())).await.map_err(io_error)
    }

    /// A statement's text as the session runs it, its command, and what it does to
    /// temporary tables (`temp.rs`; unchanged in a session that has none).
    fn resolve(&self, sql: &str) -> Result<(String, Command, TempEffect), PgError> {
        let (rewritten, temp) = self.session.temp.rewrite(sql)?;
        let sql = rewritten.unwrap_or_else(|| sql.to_string());
        let command = classify(&sql);
        Ok((sql, command, temp))
    }

    /// May a statement named `name` (`""`: the unnamed one, replaced) with `len` bytes of
    /// text be kept?
    fn check_new_statement(&self, name: &str, len: usize) -> Result<(), PgError> {
        if !name.is_empty() && self.statements.contains_key(name) {
            return Err(PgError::new(
                errors::DUPLICATE_STATEMENT,
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        if !self.statements.contains_key(name) && self.statements.len() >= self.config.max_prepared {
            return Err(PgError::new(
                errors::PROGRAM_LIMIT,
                format!("too many prepared statements (at most {})", self.config.max_prepared),
            ));
        }
        self.check_budget(len)
    }

    fn statement(&self, name: &str) -> Result<Arc<Statement>, PgError> {
        self.statements.get(name).cloned().ok_or_else(|| {
            PgError::new(errors::UNDEFINED_STATEMENT, format!("prepared statement \"{name}\" does not exist"))
        })
    }

    /// Runs one statement. SQL-level PREPARE / EXECUTE / DEALLOCATE use the connection's
    /// prepared statements, so they run here; the rest runs in the session.
    async fn run_statement(&mut self, sql: &str, command: &Command, params: &RawParams) -> Result<Reply, PgError> {
        let started = std::time::Instant::now();
        let result = self.run_statement_uncounted(sql, command, params).await;
        if let Some(m) = &self.config.metrics {
            m.statement(result.as_ref().map_or_else(|e| e.code, |_| "00000"), started.elapsed());
        }
        result
    }

    async fn run_statement_uncounted(
        &mut self,
        sql: &str,
        command: &Command,
        params: &RawParams,
    ) -> Result<Reply, PgError> {
        let result = match command {
            Command::Prepare { name, statement, declared } => self.prepare(name, statement, declared).await,
            Command::Execute { name, args } => self.execute_prepared(name, args).await,
            Command::Copy(copy) => match self.session.check_not_failed(command) {
                Ok(()) if copy.from && self.session.read_only() => Err(crate::read_only::refused("COPY FROM")),
                Ok(()) => {
                    self.session.forgo_replay();
                    self.copy(copy).await
                }
                Err(e) => Err(e),
            },
            Command::Deallocate(name) => {
                self.session.check_not_failed(command).and_then(|()| self.deallocate(name.as_deref()))
            }
            Command::Discard { all } => {
                let reply = self.session.run(sql, command, params).await?;
                // DISCARD ALL includes DEALLOCATE ALL.
                if *all {
                    self.statements.retain(|name, _| name.is_empty());
                }
                return Ok(reply);
            }
            _ => return self.session.run(sql, command, params).await,
        };
        if result.is_err() {
            self.session.fail();
        }
        result
    }

    async fn prepare(&mut self, name: &str, sql: &str, declared: &[u32]) -> Result<Reply, PgError> {
        let (sql, command, temp) = self.resolve(sql)?;
        let sql = sql.as_str();
        self.session.check_not_failed(&command)?;
        self.check_new_statement(name, sql.len())?;
        // Checked now against the schema, as PostgreSQL does (catalog queries are checked
        // when executed: their answer needs the parameters).
        let param_count = match command {
            Command::Sql => Some(self.session.describe(sql, &command, declared).await?.params.len()),
            _ => None,
        };
        let statement = Statement { sql: sql.to_string(), command, temp, declared: declared.to_vec(), param_count };
        self.statements.insert(name.to_string(), Arc::new(statement));
        Ok(Reply::Command { tag: "PREPARE".into(), notices: Vec::new() })
    }

    async fn execute_prepared(&mut self, name: &str, args: &[Option<String>]) -> Result<Reply, PgError> {
        self.session.check_not_failed(&Command::Sql)?;
        let statement = self.statement(name)?;
        if !matches!(statement.command, Command::Sql | Command::Intercepted) {
            return Err(PgError::new(
                errors::FEATURE_NOT_SUPPORTED,
                format!("prepared statement \"{name}\" cannot be run with EXECUTE"),
            ));
        }
        if let Some(expected) = statement.param_count.filter(|n| *n != args.len()) {
            return Err(PgError::new(
                "42601",
                format!("wrong number of parameters for prepared statement \"{name}\": expected {expected} parameters but got {}", args.len()),
            ));
        }
        let values = args.iter().map(|a| a.as_ref().map(|text| bytes::Bytes::from(text.clone()))).collect();
        let params = RawParams { values, formats: vec![], declared: statement.declared.clone() };
        let reply = self.session.run(&statement.sql, &statement.command, &params).await?;
        self.session.temp_applied(statement.temp.clone()).await?;
        Ok(reply)
    }

    /// DEALLOCATE drops named statements, whether PREPARE or Parse made them; the unnamed
    /// statement stays (as in PostgreSQL). Portals keep their own statement.
    fn deallocate(&mut self, name: Option<&str>) -> Result<Reply, PgError> {
        let tag = match name {
            None => {
                self.statements.retain(|name, _| name.is_empty());
                "DEALLOCATE ALL"
            }
            Some(name) => {
                if name.is_empty() || self.statements.remove(name).is_none() {
                    return Err(PgError::new(
                        errors::UNDEFINED_STATEMENT,
                        format!("prepared statement \"{name}\" does not exist"),
                    ));
                }
                "DEALLOCATE"
            }
        };
        Ok(Reply::Command { tag: tag.into(), notices: Vec::new() })
    }

    async fn bind(&mut self, b: Bind) -> Result<(), PgError> {
        let statement = self.statement(&b.statement_name.unwrap_or_default())?;
        let portal_name = b.portal_name.unwrap_or_default();
        if !portal_name.is_empty() && self.portals.contains_key(&portal_name) {
            return Err(PgError::new("42P03", format!("portal \"{portal_name}\" already exists")));
        }
        if !self.portals.contains_key(&portal_name) && self.portals.len() >= self.config.max_prepared {
            return Err(PgError::new(
                errors::PROGRAM_LIMIT,
                format!("too many portals (at most {})", self.config.max_prepared),
            ));
        }
        let param_bytes: usize = b.parameters.iter().map(|v| v.as_ref().map_or(0, |b| b.len())).sum();
        self.check_budget(param_bytes)?;
        let params =
            RawParams { values: b.parameters, formats: b.parameter_format_codes, declared: statement.declared.clone() };
        let portal =
            Portal { statement, params, result_formats: b.result_column_format_codes, announced: None, pending: None };
        self.portals.insert(portal_name, portal);
        self.conn.feed(PgWireBackendMessage::BindComplete(BindComplete::new())).await.map_err(io_error)
    }

    /// Refuses to keep `more` bytes if the connection's statements and portals would then
    /// hold more than `max_session_bytes`.
    fn check_budget(&self, more: usize) -> Result<(), PgError> {
        let statements: usize = self.statements.values().map(|s| s.sql.len()).sum();
        let portals: usize = self
            .portals
            .values()
            .map(|p| p.params.values.iter().map(|v| v.as_ref().map_or(0, |b| b.len())).sum::<usize>())
            .sum();
        if statements + portals + more > self.config.max_session_bytes {
            return Err(PgError::new(
                errors::PROGRAM_LIMIT,
                format!(
                    "this connection holds too much prepared data (limit {} bytes); close statements or portals",
                    self.config.max_session_bytes
                ),
            ));
        }
        Ok(())
    }

    async fn describe(&mut self, d: Describe) -> Result<(), PgError> {
        let name = d.name.unwrap_or_default();
        match d.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                let st = self.statement(&name)?;
                let description = self.describe_statement(&st).await?;
                let params = ParameterDescription::new(description.params);
                self.conn.feed(PgWireBackendMessage::ParameterDescription(params)).await.map_err(io_error)?;
                self.row_description(description.fields.as_deref(), &[]).await
            }
            TARGET_TYPE_BYTE_PORTAL => {
                let portal = self.portals.get(&name).ok_or_else(|| {
                    PgError::new(errors::UNDEFINED_CURSOR, format!("portal \"{name}\" does not exist"))
                })?;
                let (st, formats) = (portal.statement.clone(), portal.result_formats.clone());
                let fields = self.describe_statement(&st).await?.fields;
                if let Some(portal) = self.portals.get_mut(&name) {
                    portal.announced = fields.clone();
                }
                self.row_description(fields.as_deref(), &formats).await
            }
            other => Err(PgError::new(errors::PROTOCOL_VIOLATION, format!("invalid DESCRIBE message subtype {other}"))),
        }
    }

    async fn describe_statement(&mut self, st: &Statement) -> Result<Description, PgError> {
        if st.sql.is_empty() {
            return Ok(Description { params: vec![], fields: None });
        }
        if let Command::Execute { name, .. } = &st.command {
            // EXECUTE has no parameters of its own; its result is the named statement's
            // (an unknown name is EXECUTE's error to report).
            let fields = match self.statements.get(name).cloned() {
                Some(target) if matches!(target.command, Command::Sql | Command::Intercepted) => {
                    self.session.describe(&target.sql, &target.command, &target.declared).await?.fields
                }
                _ => None,
            };
            return Ok(Description { params: vec![], fields });
        }
        self.session.describe(&st.sql, &st.command, &st.declared).await
    }

    async fn row_description(&mut self, fields: Option<&[Field]>, formats: &[i16]) -> Result<(), PgError> {
        let message = match fields {
            None => PgWireBackendMessage::NoData(NoData::new()),
            Some(fields) => PgWireBackendMessage::RowDescription(row_description(fields, formats)),
        };
        self.conn.feed(message).await.map_err(io_error)
    }

    async fn execute(&mut self, e: Execute) -> Result<(), PgError> {
        let name = e.name.unwrap_or_default();
        let limit = if e.max_rows <= 0 { usize::MAX } else { e.max_rows as usize };
        let portal = self
            .portals
            .get_mut(&name)
            .ok_or_else(|| PgError::new(errors::UNDEFINED_CURSOR, format!("portal \"{name}\" does not exist")))?;
        let formats = portal.result_formats.clone();
        if let Some(pending) = portal.pending.take() {
            let reply = Reply::Rows { fields: pending.fields, rows: pending.rows.into(), tag: String::new() };
            return self.write_portal_reply(&name, reply, None, &formats, limit).await;
        }
        let (statement, params, announced) =
            (portal.statement.clone(), portal.params.clone(), portal.announced.clone());
        if statement.sql.is_empty() {
            return self
                .conn
                .feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
                .await
                .map_err(io_error);
        }
        let reply = self.run_statement(&statement.sql, &statement.command, &params).await?;
        self.session.temp_applied(statement.temp.clone()).await?;
        self.write_portal_reply(&name, reply, announced, &formats, limit).await
    }

    async fn write_portal_reply(
        &mut self,
        name: &str,
        reply: Reply,
        announced: Option<Vec<Field>>,
        formats: &[i16],
        limit: usize,
    ) -> Result<(), PgError> {
        let rest = self.write_reply(reply, announced, formats, limit, false).await?;
        if let (Some(pending), Some(portal)) = (rest, self.portals.get_mut(name)) {
            portal.pending = Some(pending);
        }
        Ok(())
    }

    /// Writes a reply: optional RowDescription, DataRows (at most `limit`; the rest is
    /// returned and PortalSuspended sent), CommandComplete.
    async fn write_reply(
        &mut self,
        reply: Reply,
        announced: Option<Vec<Field>>,
        formats: &[i16],
        limit: usize,
        describe: bool,
    ) -> Result<Option<Pending>, PgError> {
        match reply {
            Reply::Command { tag, notices } => {
                for notice in notices {
                    let fields = vec![
                        (b'S', notice.severity.to_string()),
                        (b'V', notice.severity.to_string()),
                        (b'C', notice.code.to_string()),
                        (b'M', self.session.temp.unqualify(&notice.message)),
                    ];
                    self.conn
                        .feed(PgWireBackendMessage::NoticeResponse(NoticeResponse::new(fields)))
                        .await
                        .map_err(io_error)?;
                }
                self.conn
                    .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(tag)))
                    .await
                    .map_err(io_error)?;
                Ok(None)
            }
            Reply::Rows { fields, rows, tag } => {
                let fields = match announced {
                    Some(a) if a.len() == fields.len() => a,
                    _ => fields,
                };
                let mut rows: std::collections::VecDeque<_> = rows.into();
                let count = rows.len().min(limit);
                // Encode before writing, so an encoding error leaves no partial result.
                let mut encoded = Vec::with_capacity(count);
                for row in rows.drain(..count) {
                    encoded.push(data_row(&row, &fields, formats)?);
                }
                if describe {
                    let description = row_description(&fields, formats);
                    self.conn.feed(PgWireBackendMessage::RowDescription(description)).await.map_err(io_error)?;
                }
                for row in encoded {
                    self.conn.feed(PgWireBackendMessage::DataRow(row)).await.map_err(io_error)?;
                }
                if !rows.is_empty() {
                    self.conn
                        .feed(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                        .await
                        .map_err(io_error)?;
                    return Ok(Some(Pending { fields, rows }));
                }
                let tag = if tag.is_empty() || tag.starts_with("SELECT") { format!("SELECT {count}") } else { tag };
                self.conn
                    .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(tag)))
                    .await
                    .map_err(io_error)?;
                Ok(None)
            }
        }
    }

    async fn close(&mut self, c: Close) -> Result<(), PgError> {
        let name = c.name.unwrap_or_default();
        match c.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                self.statements.remove(&name);
            }
            TARGET_TYPE_BYTE_PORTAL => {
                self.portals.remove(&name);
            }
            other => {
                return Err(PgError::new(errors::PROTOCOL_VIOLATION, format!("invalid CLOSE message subtype {other}")))
            }
        }
        self.conn.feed(PgWireBackendMessage::CloseComplete(CloseComplete::new())).await.map_err(io_error)
    }
}

/// COPY's bounds: the longest input record, and per batch (one INSERT statement, one
/// transaction) the rows, the bytes of their values and the statement's text.
const COPY_MAX_RECORD: usize = 1 << 20;
const COPY_BATCH_ROWS: usize = 2_000;
const COPY_BATCH_BYTES: usize = 1 << 20;
const COPY_BATCH_SQL: usize = 48 * 1024;
/// COPY FROM batches committing at once: while one waits for its commit's round trips and
/// the replicas' fsyncs, the next is executed (docs/benchmarks.md, "Bulk loading").
const COPY_IN_FLIGHT: usize = 3;

/// The COPY sub-protocol (docs/gateway.md, "COPY"), for the simple and extended query
/// protocols alike: the reply is COPY's CommandComplete.
impl Protocol {
    async fn copy(&mut self, copy: &CopyCommand) -> Result<Reply, PgError> {
        let select = match &copy.source {
            CopySource::Table { name, columns } if columns.is_empty() => format!("SELECT * FROM {name}"),
            CopySource::Table { name, columns } => format!("SELECT {} FROM {name}", columns.join(", ")),
            CopySource::Query(query) => query.clone(),
        };
        match (&copy.source, copy.from) {
            (CopySource::Table { name, .. }, true) => self.copy_in(copy, name, &select).await,
            _ => self.copy_out(copy, &select).await,
        }
    }

    /// COPY FROM STDIN: CopyInResponse, then CopyData until CopyDone (or CopyFail), rows
    /// inserted in batches of their own transactions as they come.
    async fn copy_in(&mut self, copy: &CopyCommand, table: &str, select: &str) -> Result<Reply, PgError> {
        let catalog = self.session.catalog().await?;
        let prepared = self.session.prepare(&catalog, select)?;
        let (Some(names), Some(types)) = (prepared.columns(), prepared.column_types()) else {
            return Err(PgError::new(errors::INTERNAL, "COPY target has no columns"));
        };
        let (names, types) = (names.to_vec(), types.to_vec());
        let quoted: Vec<String> = names.iter().map(|n| format!("\"{}\"", n.replace('"', "\"\""))).collect();
        let insert_head = format!("INSERT INTO {table} ({}) VALUES ", quoted.join(", "));
        let per_row = names.len() * 8 + 4;
        let batch_rows = (COPY_BATCH_SQL.saturating_sub(insert_head.len()) / per_row).clamp(1, COPY_BATCH_ROWS);
        let count = i16::try_from(names.len()).map_err(|_| PgError::new(errors::PROGRAM_LIMIT, "too many columns"))?;
        let response = CopyInResponse::new(0, count, vec![0; names.len()]);
        self.conn.send(PgWireBackendMessage::CopyInResponse(response)).await.map_err(io_error)?;
        let mut parser = CopyIn::new(copy.options.clone(), names.clone(), COPY_MAX_RECORD);
        let mut batch = CopyBatch { values: Vec::new(), rows: 0, bytes: 0, committed: 0, in_flight: VecDeque::new() };
        let rows = CopyRows { head: &insert_head, names: &names, types: &types, batch_rows };
        match self.copy_in_records(&mut parser, &mut batch, rows).await {
            Ok(()) => Ok(Reply::Command { tag: format!("COPY {}", batch.committed), notices: Vec::new() }),
            Err(failure) => {
                // Batches still in flight may yet commit: wait for them, so that the count
                // in the message is exact. The first failure is the one reported.
                let _ = self.copy_wait(&mut batch, 0).await;
                Err(failure.into_error(table, batch.committed))
            }
        }
    }

    /// COPY FROM's loop: CopyData until CopyDone, each record decoded into the batch, each
    /// full batch started, and at the end every batch committed.
    async fn copy_in_records(
        &mut self,
        parser: &mut CopyIn,
        batch: &mut CopyBatch,
        rows: CopyRows<'_>,
    ) -> Result<(), CopyFailure> {
        loop {
            let next = tokio::time::timeout(self.config.idle_timeout, self.conn.next()).await;
            let at_end = match next {
                Ok(Some(Ok(PgWireFrontendMessage::CopyData(data)))) => {
                    parser.push(&data.data);
                    false
                }
                Ok(Some(Ok(PgWireFrontendMessage::CopyDone(_)))) => true,
                Ok(Some(Ok(PgWireFrontendMessage::CopyFail(fail)))) => {
                    let error =
                        PgError::new(errors::QUERY_CANCELED, format!("COPY from stdin failed: {}", fail.message));
                    return Err(CopyFailure::at(error, parser.line()));
                }
                // Ignored during COPY IN, as in PostgreSQL (tokio-postgres sends its Sync
                // before the data).
                Ok(Some(Ok(PgWireFrontendMessage::Flush(_) | PgWireFrontendMessage::Sync(_)))) => continue,
                Ok(Some(Ok(other))) => {
                    let text = format!("unexpected message during COPY from stdin: {other:?}");
                    let error = PgError::new(errors::PROTOCOL_VIOLATION, text.chars().take(200).collect::<String>());
                    return Err(CopyFailure::bare(error));
                }
                Ok(Some(Err(e))) => {
                    let error = PgError::new(errors::PROTOCOL_VIOLATION, format!("invalid message during COPY: {e}"));
                    return Err(CopyFailure::bare(error));
                }
                Ok(None) => {
                    return Err(CopyFailure::bare(PgError::new(
                        "08006",
                        "the client closed the connection during COPY",
                    )))
                }
                Err(_) => return Err(CopyFailure::bare(PgError::new("57P05", "no COPY data within the idle timeout"))),
            };
            loop {
                let line = parser.line();
                let record = match parser.next_record(at_end) {
                    Ok(Some(record)) => record,
                    Ok(None) => break,
                    Err(e) => return Err(CopyFailure::at(PgError::new(e.code, e.message), line)),
                };
                for ((field, ty), name) in record.iter().zip(rows.types).zip(rows.names) {
                    let value = match field {
                        None => Value::Null,
                        Some(text) => copy_value(text, *ty).map_err(|e| {
                            let shown: String = text.chars().take(64).collect();
                            CopyFailure {
                                error: PgError::from(e),
                                line: Some(line),
                                detail: format!(" column {name}: \"{shown}\""),
                            }
                        })?,
                    };
                    batch.bytes += field.as_ref().map_or(1, String::len);
                    batch.values.push(value);
                }
                batch.rows += 1;
                if batch.rows >= rows.batch_rows || batch.bytes >= COPY_BATCH_BYTES {
                    self.copy_flush(rows.head, rows.names.len(), batch).await.map_err(|e| CopyFailure::at(e, line))?;
                }
            }
            if at_end {
                let line = parser.line();
                self.copy_flush(rows.head, rows.names.len(), batch).await.map_err(|e| CopyFailure::at(e, line))?;
                return self.copy_wait(batch, 0).await.map_err(|e| CopyFailure::at(e, line));
            }
        }
    }

    /// Starts the batch's INSERT, after waiting for the oldest batch in flight if
    /// `COPY_IN_FLIGHT` are. Batches are awaited in the order they started; after an error
    /// the ones in flight are awaited too, so that the count of committed rows is exact.
    async fn copy_flush(&mut self, head: &str, columns: usize, batch: &mut CopyBatch) -> Result<(), PgError> {
        if batch.rows == 0 {
            return Ok(());
        }
        if batch.in_flight.len() >= COPY_IN_FLIGHT {
            self.copy_wait(batch, COPY_IN_FLIGHT - 1).await?;
        }
        let mut sql = String::with_capacity(head.len() + batch.rows * (columns * 8 + 4));
        sql.push_str(head);
        let mut n = 0usize;
        for row in 0..batch.rows {
            sql.push_str(if row == 0 { "(" } else { ", (" });
            for column in 0..columns {
                n += 1;
                let _ = write!(sql, "{}${n}", if column == 0 { "" } else { ", " });
            }
            sql.push(')');
        }
        let values = std::mem::take(&mut batch.values);
        batch.in_flight.push_back(self.session.copy_batch(sql, values));
        batch.rows = 0;
        batch.bytes = 0;
        Ok(())
    }

    /// Waits until at most `keep` batches are in flight (all of them after an error).
    async fn copy_wait(&mut self, batch: &mut CopyBatch, keep: usize) -> Result<(), PgError> {
        let mut first_error = None;
        while batch.in_flight.len() > keep || (first_error.is_some() && !batch.in_flight.is_empty()) {
            let Some(job) = batch.in_flight.pop_front() else { break };
            match self.session.copy_batch_done(job).await {
                Ok(inserted) => batch.committed += inserted,
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// COPY TO STDOUT: the rows of a query (bounded like any query), as CopyData.
    async fn copy_out(&mut self, copy: &CopyCommand, select: &str) -> Result<Reply, PgError> {
        let (fields, rows) = match self.session.run(select, &Command::Sql, &RawParams::default()).await? {
            Reply::Rows { fields, rows, .. } => (fields, rows),
            Reply::Command { .. } => {
                return Err(PgError::new(errors::FEATURE_NOT_SUPPORTED, "COPY TO of a statement without result rows"))
            }
        };
        let mut lines = Vec::with_capacity(rows.len() + 1);
        if copy.options.header {
            let mut out = Vec::new();
            format_record(&copy.options, fields.iter().map(|f| Some(f.name.as_str())), &mut out);
            lines.push(out);
        }
        for row in &rows {
            let mut texts = Vec::with_capacity(row.len());
            for (i, value) in row.iter().enumerate() {
                let ty = fields.get(i).and_then(|f| f.ty);
                let bytes = encode_value(value, ty, false)?;
                texts.push(bytes.map(|b| String::from_utf8_lossy(&b).into_owned()));
            }
            let mut out = Vec::new();
            format_record(&copy.options, texts.iter().map(|t| t.as_deref()), &mut out);
            lines.push(out);
        }
        let count = i16::try_from(fields.len()).map_err(|_| PgError::new(errors::PROGRAM_LIMIT, "too many columns"))?;
        let response = CopyOutResponse::new(0, count, vec![0; fields.len()]);
        self.conn.feed(PgWireBackendMessage::CopyOutResponse(response)).await.map_err(io_error)?;
        for line in lines {
            self.conn.feed(PgWireBackendMessage::CopyData(CopyData::new(line.into()))).await.map_err(io_error)?;
        }
        self.conn.feed(PgWireBackendMessage::CopyDone(CopyDone::new())).await.map_err(io_error)?;
        Ok(Reply::Command { tag: format!("COPY {}", rows.len()), notices: Vec::new() })
    }
}

/// A COPY FROM field as a value of its column's type: as Bind reads a text parameter,
/// except that timestamps are read as the SQL engine reads a timestamp literal (PostgreSQL's
/// input function: 22007 / 22008 for a malformed or out-of-range one).
fn copy_value(text: &str, ty: Option<pistou_sql::SqlType>) -> Result<Value, pistou_sql::SqlError> {
    match ty {
        Some(pistou_sql::SqlType::Timestamp) => {
            pistou_sql::types::cast(&Value::Text(text.to_string()), pistou_sql::SqlType::Timestamp)
        }
        _ => decode_param(text.as_bytes(), 0, ty, false),
    }
}

/// COPY FROM rows not yet inserted, and the count of those that were.
/// What COPY FROM turns records into: the INSERT's head, the columns, rows per batch.
#[derive(Clone, Copy)]
struct CopyRows<'a> {
    head: &'a str,
    names: &'a [String],
    types: &'a [Option<SqlType>],
    batch_rows: usize,
}

/// A COPY FROM error, told with its position once every batch in flight has finished.
struct CopyFailure {
    error: PgError,
    /// The input line, for errors about the data.
    line: Option<u64>,
    /// Appended after the position (the column and value at fault).
    detail: String,
}

impl CopyFailure {
    fn bare(error: PgError) -> Self {
        CopyFailure { error, line: None, detail: String::new() }
    }

    fn at(error: PgError, line: u64) -> Self {
        CopyFailure { error, line: Some(line), detail: String::new() }
    }

    fn into_error(self, table: &str, committed: u64) -> PgError {
        let Some(line) = self.line else { return self.error };
        let done = if committed > 0 { format!("; {committed} rows were already committed") } else { String::new() };
        let message = format!("{} (COPY {table}, line {line}{done}){}", self.error.message, self.detail);
        PgError::new(self.error.code, message)
    }
}

struct CopyBatch {
    values: Vec<Value>,
    rows: usize,
    bytes: usize,
    /// Rows of the batches that committed.
    committed: u64,
    /// Started batches, oldest first.
    in_flight: VecDeque<CopyBatchJob>,
}

/// Completes when the gateway stops (or its stop signal is gone).
async fn stop_requested(rx: &mut watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            return;
        }
    }
}

fn io_error(e: io::Error) -> PgError {
    PgError::new("08006", format!("connection failure: {e}"))
}

fn row_description(fields: &[Field], formats: &[i16]) -> RowDescription {
    let fields = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let t = pg_type(f.ty);
            FieldDescription::new(f.name.clone(), 0, 0, t.oid, t.size, -1, format_of(formats, i))
        })
        .collect();
    RowDescription::new(fields)
}

fn data_row(row: &pistou_sql::Row, fields: &[Field], formats: &[i16]) -> Result<DataRow, PgError> {
    let mut data = BytesMut::new();
    for (i, value) in row.iter().enumerate() {
        let ty = fields.get(i).and_then(|f| f.ty);
        match encode_value(value, ty, format_of(formats, i) == 1)? {
            None => data.put_i32(-1),
            Some(bytes) => {
                let len = i32::try_from(bytes.len())
                    .map_err(|_| PgError::new(errors::PROGRAM_LIMIT, "value too large to send"))?;
                data.put_i32(len);
                data.put_slice(&bytes);
            }
        }
    }
    let count = i16::try_from(row.len()).map_err(|_| PgError::new(errors::PROGRAM_LIMIT, "too many columns"))?;
    Ok(DataRow::new(data, count))
}
