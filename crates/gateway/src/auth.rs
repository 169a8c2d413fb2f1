//! Startup and authentication, on pgwire's handlers: trust, cleartext password or
//! SCRAM-SHA-256, then the parameter statuses drivers expect.

use crate::config::{Auth, PasswordMethod};
use crate::frontend::sasl_initial_response;
use crate::settings::SERVER_VERSION;
use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::cleartext::CleartextPasswordAuthStartupHandler;
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata, AuthSource, LoginInfo, Password,
    ServerParameterProvider, StartupHandler,
};
use pgwire::api::{ClientInfo, METADATA_APPLICATION_NAME, METADATA_USER};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::startup::{PasswordMessageFamily, SecretKey};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

const SCRAM_ITERATIONS: usize = 4096;

/// The parameter statuses sent after authentication.
#[derive(Debug, Default)]
pub struct GatewayParameters;

impl ServerParameterProvider for GatewayParameters {
    fn server_parameters<C: ClientInfo>(&self, client: &C) -> Option<HashMap<String, String>> {
        let mut p = HashMap::new();
        for (k, v) in [
            ("server_version", SERVER_VERSION),
            ("server_encoding", "UTF8"),
            ("client_encoding", "UTF8"),
            ("DateStyle", "ISO, MDY"),
            ("TimeZone", "UTC"),
            ("IntervalStyle", "postgres"),
            ("integer_datetimes", "on"),
            ("standard_conforming_strings", "on"),
            ("is_superuser", "off"),
            ("default_transaction_read_only", "off"),
            ("in_hot_standby", "off"),
        ] {
            p.insert(k.to_string(), v.to_string());
        }
        let meta = client.metadata();
        p.insert("application_name".into(), meta.get(METADATA_APPLICATION_NAME).cloned().unwrap_or_default());
        p.insert("session_authorization".into(), meta.get(METADATA_USER).cloned().unwrap_or_default());
        Some(p)
    }
}

/// Process ids for BackendKeyData (cancel requests are not supported, so the secret only
/// has to be present).
static NEXT_PID: AtomicI32 = AtomicI32::new(1000);

/// Accepts everyone.
pub(crate) struct TrustStartup;

#[async_trait]
impl StartupHandler for TrustStartup {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            protocol_negotiation(client, startup).await?;
            save_startup_parameters_to_metadata(client, startup);
            client.set_pid_and_secret_key(NEXT_PID.fetch_add(1, Ordering::Relaxed), SecretKey::I32(rand::random()));
            finish_authentication(client, &GatewayParameters).await?;
        }
        Ok(())
    }
}

/// The configured user's password (salted once for SCRAM).
#[derive(Debug)]
pub(crate) struct OneUser {
    user: String,
    password: Vec<u8>,
    salt: Option<Vec<u8>>,
}

#[async_trait]
impl AuthSource for OneUser {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        if login.user() != Some(self.user.as_str()) {
            return Err(PgWireError::InvalidPassword(login.user().unwrap_or_default().to_string()));
        }
        Ok(Password::new(self.salt.clone(), self.password.clone()))
    }
}

/// The startup handler chosen by the configuration.
pub(crate) enum Authenticator {
    Trust(TrustStartup),
    Cleartext(CleartextPasswordAuthStartupHandler<OneUser, GatewayParameters>),
    Scram(SASLAuthStartupHandler<GatewayParameters>),
}

impl Authenticator {
    pub fn new(auth: &Auth) -> Authenticator {
        match auth {
            Auth::Trust => Authenticator::Trust(TrustStartup),
            Auth::Password { user, password, method: PasswordMethod::Cleartext } => {
                let source = OneUser { user: user.clone(), password: password.as_bytes().to_vec(), salt: None };
                Authenticator::Cleartext(CleartextPasswordAuthStartupHandler::new(source, GatewayParameters))
            }
            Auth::Password { user, password, method: PasswordMethod::ScramSha256 } => {
                let salt: [u8; 16] = rand::random();
                let salted = gen_salted_password(password, &salt, SCRAM_ITERATIONS);
                let source = OneUser { user: user.clone(), password: salted, salt: Some(salt.to_vec()) };
                let mut scram = ScramAuth::new(Arc::new(source));
                scram.set_iterations(SCRAM_ITERATIONS);
                Authenticator::Scram(SASLAuthStartupHandler::new(Arc::new(GatewayParameters)).with_scram(scram))
            }
        }
    }

    /// Checks a password message's layout where pgwire's handler does not: the first one of
    /// a SCRAM exchange (its SASLInitialResponse).
    pub fn check_password_message(
        &self,
        message: PasswordMessageFamily,
        first: bool,
    ) -> PgWireResult<PasswordMessageFamily> {
        match self {
            Authenticator::Scram(_) if first => sasl_initial_response(message),
            _ => Ok(message),
        }
    }

    pub async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match self {
            Authenticator::Trust(h) => h.on_startup(client, message).await,
            Authenticator::Cleartext(h) => h.on_startup(client, message).await,
            Authenticator::Scram(h) => h.on_startup(client, message).await,
        }
    }
}
