//! Answers to the session functions the gateway answers itself (`SELECT version()`,
//! `current_schema()`, `set_config(…)`, …): they need the session's state, which the SQL
//! engine does not have. `route.rs` decides from the parse tree which statements come here;
//! catalog queries (`pg_catalog`, `information_schema`) are answered by the SQL engine.

use crate::route::{Route, SessionFunction, SessionItem};
use crate::settings::{Settings, VERSION_TEXT};
use pistou_sql::{Row, SqlError, SqlState, SqlType, Value};

/// A result computed by the gateway.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalRows {
    pub columns: Vec<(String, Option<SqlType>)>,
    pub rows: Vec<Row>,
}

/// Who is asking (for current_user, current_database, pg_backend_pid).
pub struct SessionInfo<'a> {
    pub user: &'a str,
    pub database: &'a str,
    pub pid: i32,
    pub settings: &'a Settings,
}

/// Answers a statement `route` sent to the gateway (parameters already substituted).
pub fn answer(route: &Route, info: &SessionInfo) -> Result<LocalRows, SqlError> {
    match route {
        Route::Session(items) => session_functions(items, info),
        Route::Engine => Err(SqlError::new(SqlState::InternalError, "statement is not for the gateway")),
    }
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

/// The result columns of session functions (known without their arguments' values).
pub fn session_columns(items: &[SessionItem]) -> Vec<(String, Option<SqlType>)> {
    let ty = |f: &SessionFunction| if *f == SessionFunction::BackendPid { SqlType::Int } else { SqlType::Text };
    items.iter().map(|item| (item.name.clone(), Some(ty(&item.function)))).collect()
}

/// Answers session functions. `set_config` answers the setting's value in `info`: the
/// session has applied the change there.
fn session_functions(items: &[SessionItem], info: &SessionInfo) -> Result<LocalRows, SqlError> {
    let mut row = Vec::new();
    for item in items {
        let setting = |name: &str| info.settings.get(&crate::command::canonical_name(name)).map(text);
        let value = match &item.function {
            SessionFunction::Version => text(VERSION_TEXT),
            SessionFunction::CurrentSchema => text("public"),
            SessionFunction::CurrentDatabase => text(info.database),
            SessionFunction::CurrentUser => text(info.user),
            SessionFunction::BackendPid => Value::Int(info.pid.into()),
            SessionFunction::CurrentSchemas(true) => text("{pg_catalog,public}"),
            SessionFunction::CurrentSchemas(false) => text("{public}"),
            SessionFunction::CurrentSetting(Some(name)) => setting(name)?,
            SessionFunction::SetConfig(Some(change)) => setting(&change.name)?,
            SessionFunction::CurrentSetting(None) | SessionFunction::SetConfig(None) => {
                return Err(SqlError::new(
                    SqlState::FeatureNotSupported,
                    "current_setting() and set_config() need constant arguments here",
                ))
            }
        };
        row.push(value);
    }
    Ok(LocalRows { columns: session_columns(items), rows: vec![row] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::route;

    fn info(settings: &Settings) -> SessionInfo<'_> {
        SessionInfo { user: "alice", database: "pistou", pid: 7, settings }
    }

    fn ask(sql: &str, settings: &Settings) -> Result<LocalRows, SqlError> {
        answer(&route(sql), &info(settings))
    }

    #[test]
    fn session_functions_are_answered() {
        let s = Settings::default();
        let r = ask("SELECT version(), current_schema() AS s, current_database();", &s).expect("answer");
        assert_eq!(r.columns[1].0, "s");
        assert_eq!(r.columns[2].0, "current_database");
        assert_eq!(r.rows[0][1], Value::Text("public".into()));
        assert_eq!(r.rows[0][2], Value::Text("pistou".into()));
        assert!(matches!(&r.rows[0][0], Value::Text(v) if v.starts_with("PostgreSQL 16.0")));
        let r = ask("SELECT current_user, pg_backend_pid(), current_setting('TimeZone') AS tz", &s).expect("answer");
        assert_eq!(
            r.columns.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
            ["current_user", "pg_backend_pid", "tz"]
        );
        assert_eq!(r.rows[0], vec![text("alice"), Value::Int(7), text("UTC")]);
    }
}
