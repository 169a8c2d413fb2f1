//! Per-session run-time parameters (SET / SHOW / RESET). A parameter is accepted only
//! when the gateway really behaves as it says; see docs/gateway.md for the table.

use pistou_sql::{SqlError, SqlState};
use std::collections::BTreeMap;

/// The version string of `SELECT version()` and `server_version`.
pub const SERVER_VERSION: &str = "16.0";
pub const VERSION_TEXT: &str =
    concat!("PostgreSQL 16.0 (Pistou gateway ", env!("CARGO_PKG_VERSION"), "; Pistou BFT database)");
/// Longest value a client may store in a parameter.
const MAX_VALUE_LEN: usize = 1024;
/// Most custom (`prefix.name`) parameters per session.
const MAX_CUSTOM: usize = 64;

/// What a SET of a known parameter accepts.
enum Rule {
    /// Any text (only remembered; nothing depends on it).
    Any,
    /// One of these values, compared case-insensitively after removing spaces.
    OneOf(&'static [&'static str]),
    /// An integer in this range.
    Int(i64, i64),
    /// Read-only: SET fails.
    ReadOnly,
}

/// (name, default, rule, description)
const KNOWN: &[(&str, &str, Rule, &str)] = &[
    ("application_name", "", Rule::Any, "Application name reported by the client"),
    ("client_encoding", "UTF8", Rule::OneOf(&["utf8", "utf-8", "unicode"]), "Client character set (UTF8 only)"),
    (
        "datestyle",
        "ISO, MDY",
        Rule::OneOf(&["iso", "iso,mdy", "iso,ymd", "iso,dmy", "mdy,iso", "ymd,iso", "dmy,iso"]),
        "Date output style (ISO only)",
    ),
    ("timezone", "UTC", Rule::Any, "Time zone (Pistou timestamps have no time zone)"),
    ("extra_float_digits", "1", Rule::Int(-15, 3), "Float output digits (shortest exact form is always used)"),
    ("search_path", "\"$user\", public", Rule::Any, "Schema search path (one schema: public)"),
    (
        "standard_conforming_strings",
        "on",
        Rule::OneOf(&["on", "true", "1"]),
        "Backslashes are literal in '...' strings",
    ),
    (
        "transaction_isolation",
        "serializable",
        Rule::OneOf(&["serializable", "repeatableread", "readcommitted", "readuncommitted"]),
        "Every Pistou transaction is serializable",
    ),
    (
        "default_transaction_isolation",
        "serializable",
        Rule::OneOf(&["serializable", "repeatableread", "readcommitted", "readuncommitted"]),
        "Every Pistou transaction is serializable",
    ),
    ("intervalstyle", "postgres", Rule::OneOf(&["postgres"]), "Interval output style"),
    ("bytea_output", "hex", Rule::OneOf(&["hex"]), "bytea output format (hex only)"),
    ("statement_timeout", "0", Rule::Int(0, 0), "Not enforced: only 0 is accepted"),
    ("lock_timeout", "0", Rule::Int(0, 0), "Not enforced: only 0 is accepted"),
    ("idle_in_transaction_session_timeout", "0", Rule::Int(0, 0), "Not enforced: only 0 is accepted"),
    (
        "default_transaction_read_only",
        "off",
        Rule::OneOf(&["off", "false", "0"]),
        "Read-only transactions are not enforced",
    ),
    (
        "client_min_messages",
        "notice",
        Rule::OneOf(&["debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error"]),
        "Least severe notice sent to the client",
    ),
    ("server_version", SERVER_VERSION, Rule::ReadOnly, "Server version"),
    ("server_version_num", "160000", Rule::ReadOnly, "Server version as a number"),
    ("server_encoding", "UTF8", Rule::ReadOnly, "Server character set"),
    ("integer_datetimes", "on", Rule::ReadOnly, "Datetimes are integer based"),
    ("is_superuser", "off", Rule::ReadOnly, "Current user is a superuser"),
    ("max_identifier_length", "63", Rule::ReadOnly, "Longest identifier"),
    ("lc_collate", "C", Rule::ReadOnly, "Collation (byte order)"),
    ("lc_ctype", "C", Rule::ReadOnly, "Character classification"),
];

fn find(name: &str) -> Option<&'static (&'static str, &'static str, Rule, &'static str)> {
    KNOWN.iter().find(|(n, ..)| *n == name)
}

fn squash(v: &str) -> String {
    v.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase()
}

fn error(state: SqlState, msg: String) -> SqlError {
    SqlError::new(state, msg)
}

#[derive(Clone, Debug, Default)]
pub struct Settings {
    values: BTreeMap<String, String>,
}

impl Settings {
    /// Starting values from the startup packet; unknown or unacceptable ones are ignored
    /// (PostgreSQL would refuse the connection; drivers send harmless ones).
    pub fn from_startup<'a>(params: impl Iterator<Item = (&'a String, &'a String)>) -> Settings {
        let mut s = Settings::default();
        for (k, v) in params {
            let _ = s.set(&crate::command::canonical_name(k), Some(v));
        }
        s
    }

    /// SET name = value (None: back to the default).
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Result<(), SqlError> {
        if value.is_some_and(|v| v.len() > MAX_VALUE_LEN) {
            return Err(error(SqlState::InvalidParameterValue, format!("value for parameter \"{name}\" is too long")));
        }
        let Some((canonical, _, rule, _)) = find(name) else {
            // Custom placeholders (`myapp.setting`) are allowed, like in PostgreSQL.
            if name.contains('.') && !name.starts_with('.') {
                if !self.values.contains_key(name) && self.custom_count() >= MAX_CUSTOM {
                    return Err(error(SqlState::ProgramLimitExceeded, "too many custom parameters".into()));
                }
                match value {
                    Some(v) => self.values.insert(name.to_string(), v.to_string()),
                    None => self.values.remove(name),
                };
                return Ok(());
            }
            return Err(error(SqlState::UndefinedObject, format!("unrecognized configuration parameter \"{name}\"")));
        };
        let Some(value) = value else {
            self.values.remove(*canonical);
            return Ok(());
        };
        let ok = match rule {
            Rule::Any => true,
            Rule::OneOf(allowed) => allowed.contains(&squash(value).as_str()),
            Rule::Int(lo, hi) => value.trim().parse::<i64>().is_ok_and(|n| (*lo..=*hi).contains(&n)),
            Rule::ReadOnly => {
                return Err(error(SqlState::FeatureNotSupported, format!("parameter \"{name}\" cannot be changed")));
            }
        };
        if !ok {
            return Err(error(
                SqlState::InvalidParameterValue,
                format!("invalid value for parameter \"{name}\": \"{value}\" (the Pistou gateway does not support it)"),
            ));
        }
        self.values.insert(canonical.to_string(), value.to_string());
        Ok(())
    }

    fn custom_count(&self) -> usize {
        self.values.keys().filter(|k| find(k).is_none()).count()
    }

    pub fn reset_all(&mut self) {
        self.values.clear();
    }

    /// Current value of a parameter, as SHOW prints it.
    pub fn get(&self, name: &str) -> Result<String, SqlError> {
        if name == "transaction_isolation" || name == "default_transaction_isolation" {
            // Whatever was asked for, transactions are serializable.
            return Ok("serializable".into());
        }
        if let Some(v) = self.values.get(name) {
            return Ok(v.clone());
        }
        match find(name) {
            Some((_, default, ..)) => Ok(default.to_string()),
            None => Err(error(SqlState::UndefinedObject, format!("unrecognized configuration parameter \"{name}\""))),
        }
    }

    /// SHOW ALL: (name, setting, description) of every known parameter.
    pub fn all(&self) -> Vec<(String, String, String)> {
        KNOWN.iter().map(|(n, _, _, d)| (n.to_string(), self.get(n).unwrap_or_default(), d.to_string())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_parameters_are_checked() {
        let mut s = Settings::default();
        s.set("extra_float_digits", Some("3")).unwrap();
        assert_eq!(s.get("extra_float_digits").unwrap(), "3");
        assert!(s.set("extra_float_digits", Some("9")).is_err());
        assert!(s.set("client_encoding", Some("LATIN1")).is_err());
        s.set("client_encoding", Some("utf8")).unwrap();
        s.set("datestyle", Some("ISO, MDY")).unwrap();
        assert!(s.set("datestyle", Some("SQL, DMY")).is_err());
        s.set("transaction_isolation", Some("read committed")).unwrap();
        assert_eq!(s.get("transaction_isolation").unwrap(), "serializable");
        assert!(s.set("statement_timeout", Some("5000")).is_err());
        assert!(s.set("server_version", Some("1")).is_err());
        s.set("application_name", None).unwrap();
        assert_eq!(s.get("application_name").unwrap(), "");
    }

    #[test]
    fn unknown_parameters_are_refused_unless_custom() {
        let mut s = Settings::default();
        let e = s.set("work_mem", Some("4MB")).unwrap_err();
        assert_eq!(e.sqlstate(), "42704");
        s.set("myapp.user_id", Some("7")).unwrap();
        assert_eq!(s.get("myapp.user_id").unwrap(), "7");
        assert!(s.get("nope").is_err());
    }
}
