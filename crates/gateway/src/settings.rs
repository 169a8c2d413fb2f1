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
    /// A duration in milliseconds (a number with an optional unit: `us`, `ms`, `s`, `min`,
    /// `h`, `d`), 0 to 2^31-1 ms, shown in the largest unit that divides it, as PostgreSQL.
    Millis,
    /// A boolean, shown as `on` / `off` whatever spelling SET used.
    Bool,
    /// Read-only: SET fails.
    ReadOnly,
}

/// PostgreSQL's planner method settings. Pistou's plans depend only on the statement and the
/// schema, the same at every replica (docs/sql.md, "Planning and determinism"), so these are
/// remembered and shown but change no plan; in PostgreSQL too they change no result.
const PLANNER: &str = "Planner method setting: remembered; Pistou's plans do not depend on it";

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
    (
        "timezone",
        "UTC",
        Rule::OneOf(&[
            "utc",
            "etc/utc",
            "gmt",
            "etc/gmt",
            "uct",
            "etc/uct",
            "universal",
            "etc/universal",
            "zulu",
            "etc/zulu",
            "z",
            "gmt0",
            "etc/gmt0",
            "greenwich",
            "etc/greenwich",
        ]),
        "Time zone: UTC only (timestamp with time zone values are shown in UTC)",
    ),
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
    ("statement_timeout", "0", Rule::Millis, "Longest a statement may run (0: no limit), enforced by the gateway"),
    ("lock_timeout", "0", Rule::Int(0, 0), "Not enforced: only 0 is accepted"),
    ("idle_in_transaction_session_timeout", "0", Rule::Int(0, 0), "Not enforced: only 0 is accepted"),
    ("default_transaction_read_only", "off", Rule::Bool, "Whether new transactions are read-only"),
    ("transaction_read_only", "off", Rule::Bool, "Whether the current transaction is read-only"),
    (
        "client_min_messages",
        "notice",
        Rule::OneOf(&["debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error"]),
        "Least severe notice sent to the client",
    ),
    ("enable_async_append", "on", Rule::Bool, PLANNER),
    ("enable_bitmapscan", "on", Rule::Bool, PLANNER),
    ("enable_gathermerge", "on", Rule::Bool, PLANNER),
    ("enable_hashagg", "on", Rule::Bool, PLANNER),
    ("enable_hashjoin", "on", Rule::Bool, PLANNER),
    ("enable_incremental_sort", "on", Rule::Bool, PLANNER),
    ("enable_indexonlyscan", "on", Rule::Bool, PLANNER),
    ("enable_indexscan", "on", Rule::Bool, PLANNER),
    ("enable_material", "on", Rule::Bool, PLANNER),
    ("enable_memoize", "on", Rule::Bool, PLANNER),
    ("enable_mergejoin", "on", Rule::Bool, PLANNER),
    ("enable_nestloop", "on", Rule::Bool, PLANNER),
    ("enable_parallel_append", "on", Rule::Bool, PLANNER),
    ("enable_parallel_hash", "on", Rule::Bool, PLANNER),
    ("enable_partition_pruning", "on", Rule::Bool, PLANNER),
    ("enable_partitionwise_aggregate", "off", Rule::Bool, PLANNER),
    ("enable_partitionwise_join", "off", Rule::Bool, PLANNER),
    ("enable_presorted_aggregate", "on", Rule::Bool, PLANNER),
    ("enable_seqscan", "on", Rule::Bool, PLANNER),
    ("enable_sort", "on", Rule::Bool, PLANNER),
    ("enable_tidscan", "on", Rule::Bool, PLANNER),
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
    /// `SET LOCAL` values of the open transaction block (None: the default), over `values`.
    local: BTreeMap<String, Option<String>>,
}

impl Settings {
    /// Starting values from the startup packet; unknown or unacceptable ones are ignored
    /// (PostgreSQL would refuse the connection; drivers send harmless ones). Applied in the
    /// order of their names, whatever order `params` comes in: where two names mean one
    /// setting (`names` and `client_encoding`, or two spellings of one name), the same one
    /// wins every time.
    pub fn from_startup<'a>(params: impl Iterator<Item = (&'a String, &'a String)>) -> Settings {
        let mut s = Settings::default();
        let sorted: BTreeMap<&String, &String> = params.collect();
        for (k, v) in sorted {
            let _ = s.set(&crate::command::canonical_name(k), Some(v));
        }
        s
    }

    /// SET name = value (None: back to the default). It also replaces a SET LOCAL value.
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Result<(), SqlError> {
        let (name, value) = self.checked(name, value)?;
        self.local.remove(&name);
        match value {
            Some(v) => self.values.insert(name, v),
            None => self.values.remove(&name),
        };
        Ok(())
    }

    /// SET LOCAL name = value: until the end of the transaction block.
    pub fn set_local(&mut self, name: &str, value: Option<&str>) -> Result<(), SqlError> {
        let (name, value) = self.checked(name, value)?;
        if find(&name).is_none() {
            // A custom parameter stays defined (empty) after the block, as in PostgreSQL.
            self.values.entry(name.clone()).or_default();
        }
        self.local.insert(name, value);
        Ok(())
    }

    /// The end of a transaction block: SET LOCAL values go.
    pub fn end_transaction(&mut self) {
        self.local.clear();
    }

    /// The stored name and value of `SET name = value` (value None: the default), after
    /// checking that the gateway accepts it.
    fn checked(&self, name: &str, value: Option<&str>) -> Result<(String, Option<String>), SqlError> {
        if value.is_some_and(|v| v.len() > MAX_VALUE_LEN) {
            return Err(error(SqlState::InvalidParameterValue, format!("value for parameter \"{name}\" is too long")));
        }
        let Some((canonical, _, rule, _)) = find(name) else {
            // Custom placeholders (`myapp.setting`) are allowed, like in PostgreSQL.
            if name.contains('.') && !name.starts_with('.') {
                if !self.values.contains_key(name) && self.custom_count() >= MAX_CUSTOM {
                    return Err(error(SqlState::ProgramLimitExceeded, "too many custom parameters".into()));
                }
                return Ok((name.to_string(), value.map(str::to_string)));
            }
            return Err(error(SqlState::UndefinedObject, format!("unrecognized configuration parameter \"{name}\"")));
        };
        let Some(value) = value else { return Ok((canonical.to_string(), None)) };
        if let Rule::Millis = rule {
            return Ok((canonical.to_string(), Some(format_millis(parse_millis(name, value)?))));
        }
        if let Rule::Bool = rule {
            return Ok((canonical.to_string(), Some(parse_bool(name, value)?.to_string())));
        }
        let ok = match rule {
            Rule::Any | Rule::Millis | Rule::Bool => true,
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
        Ok((canonical.to_string(), Some(value.to_string())))
    }

    fn custom_count(&self) -> usize {
        self.values.keys().filter(|k| find(k).is_none()).count()
    }

    /// `statement_timeout`, None when 0 (no limit).
    pub fn statement_timeout(&self) -> Option<std::time::Duration> {
        let ms = self.get("statement_timeout").ok().and_then(|v| parse_millis("statement_timeout", &v).ok());
        ms.filter(|ms| *ms > 0).map(std::time::Duration::from_millis)
    }

    pub fn reset_all(&mut self) {
        self.values.clear();
        self.local.clear();
    }

    /// Current value of a parameter, as SHOW prints it.
    pub fn get(&self, name: &str) -> Result<String, SqlError> {
        if name == "transaction_isolation" || name == "default_transaction_isolation" {
            // Whatever was asked for, transactions are serializable.
            return Ok("serializable".into());
        }
        if name == "transaction_read_only" && !self.local.contains_key(name) {
            // Outside a block (or before its mode is set): the mode a transaction begins with.
            return self.get("default_transaction_read_only");
        }
        let value = match self.local.get(name) {
            Some(local) => local.as_ref(),
            None => self.values.get(name),
        };
        if let Some(v) = value {
            return Ok(v.clone());
        }
        if self.local.contains_key(name) && find(name).is_none() {
            return Ok(String::new()); // a custom parameter SET LOCAL to DEFAULT
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

/// The value of a boolean setting (`on`, `off`, `true`, …) as PostgreSQL reads it.
pub fn boolean(name: &str, value: &str) -> Result<bool, SqlError> {
    parse_bool(name, value).map(|v| v == "on")
}

/// A boolean setting as PostgreSQL reads it (`parse_bool`): on, off, true, false, yes, no,
/// 1, 0, or an unambiguous prefix of a word (`t`, `of`); shown as `on` or `off`.
fn parse_bool(name: &str, value: &str) -> Result<&'static str, SqlError> {
    let v = value.trim().to_ascii_lowercase();
    let is_prefix = |word: &str, min: usize| v.len() >= min && word.starts_with(v.as_str());
    if is_prefix("true", 1) || is_prefix("yes", 1) || is_prefix("on", 2) || v == "1" {
        Ok("on")
    } else if is_prefix("false", 1) || is_prefix("no", 1) || is_prefix("off", 2) || v == "0" {
        Ok("off")
    } else {
        Err(error(SqlState::InvalidParameterValue, format!("parameter \"{name}\" requires a Boolean value")))
    }
}

/// A duration setting in milliseconds, as PostgreSQL reads it: a number (fractions allowed)
/// and an optional unit, milliseconds by default; rounded to whole milliseconds.
fn parse_millis(name: &str, value: &str) -> Result<u64, SqlError> {
    // PostgreSQL's messages (its hint lists the units: "us", "ms", "s", "min", "h", "d").
    let invalid =
        || error(SqlState::InvalidParameterValue, format!("invalid value for parameter \"{name}\": \"{value}\""));
    let text = value.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+'))).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| invalid())?;
    let per_unit = match unit.trim_start() {
        "us" => 0.001,
        "" | "ms" => 1.0,
        "s" => 1_000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return Err(invalid()),
    };
    let ms = (number * per_unit).round();
    if unit.is_empty() && !(f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&ms) {
        return Err(invalid()); // not even an integer
    }
    if !(0.0..=f64::from(i32::MAX)).contains(&ms) {
        return Err(error(
            SqlState::InvalidParameterValue,
            format!("{ms} ms is outside the valid range for parameter \"{name}\" (0 .. {})", i32::MAX),
        ));
    }
    Ok(ms as u64)
}

fn format_millis(ms: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1_000, "s")];
    if ms == 0 {
        return "0".into();
    }
    match UNITS.iter().find(|(size, _)| ms.is_multiple_of(*size)) {
        Some((size, unit)) => format!("{}{unit}", ms / size),
        None => format!("{ms}ms"),
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
        assert!(s.set("timezone", Some("Europe/Paris")).is_err());
        s.set("timezone", Some("Etc/UTC")).unwrap();
        assert!(s.set("server_version", Some("1")).is_err());
        s.set("application_name", None).unwrap();
        assert_eq!(s.get("application_name").unwrap(), "");
    }

    #[test]
    fn planner_settings_are_booleans_shown_as_on_or_off() {
        let mut s = Settings::default();
        assert_eq!(s.get("enable_seqscan").unwrap(), "on");
        assert_eq!(s.get("enable_partitionwise_join").unwrap(), "off");
        for (given, shown) in [("false", "off"), ("YES", "on"), ("of", "off"), (" 1 ", "on"), ("n", "off"), ("t", "on")]
        {
            s.set("enable_seqscan", Some(given)).unwrap();
            assert_eq!(s.get("enable_seqscan").unwrap(), shown, "{given}");
        }
        for bad in ["o", "", "2", "offf", "maybe"] {
            let e = s.set("enable_hashjoin", Some(bad)).unwrap_err();
            assert_eq!(e.state, SqlState::InvalidParameterValue, "{bad}");
            assert_eq!(e.message, "parameter \"enable_hashjoin\" requires a Boolean value");
        }
        s.set("enable_seqscan", None).unwrap();
        assert_eq!(s.get("enable_seqscan").unwrap(), "on");
    }

    #[test]
    fn startup_values_win_by_name_order_whatever_the_packet_order() {
        let given = [("names", "UTF8"), ("application_name", "b"), ("Application_Name", "a"), ("client_encoding", "x")];
        let owned: Vec<(String, String)> = given.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let forward = Settings::from_startup(owned.iter().map(|(k, v)| (k, v)));
        let backward = Settings::from_startup(owned.iter().rev().map(|(k, v)| (k, v)));
        for s in [&forward, &backward] {
            // "application_name" sorts after "Application_Name", "names" after "client_encoding"
            // (whose value "x" is refused anyway).
            assert_eq!(s.get("application_name").expect("set"), "b");
            assert_eq!(s.get("client_encoding").expect("set"), "UTF8");
        }
    }

    #[test]
    fn durations_are_shown_as_postgres_shows_them() {
        let mut s = Settings::default();
        for (given, shown) in [
            ("5s", "5s"),
            ("5000", "5s"),
            ("90s", "90s"),
            ("60000ms", "1min"),
            ("1500ms", "1500ms"),
            ("1.5s", "1500ms"),
            ("1h", "1h"),
            ("2d", "2d"),
            ("5 s", "5s"),
            ("100us", "0"),
            ("0", "0"),
        ] {
            s.set("statement_timeout", Some(given)).unwrap();
            assert_eq!(s.get("statement_timeout").unwrap(), shown, "{given}");
        }
        s.set("statement_timeout", Some("2min")).unwrap();
        assert_eq!(s.statement_timeout(), Some(std::time::Duration::from_secs(120)));
        for bad in ["5S", "abc", "-1", "2147483648", "1e400", "5 parsecs", ""] {
            assert_eq!(s.set("statement_timeout", Some(bad)).unwrap_err().sqlstate(), "22023", "{bad}");
        }
        assert_eq!(s.get("statement_timeout").unwrap(), "2min");
        s.set("statement_timeout", None).unwrap();
        assert_eq!(s.statement_timeout(), None);
    }

    #[test]
    fn local_values_last_until_the_end_of_the_block() {
        let mut s = Settings::default();
        s.set("statement_timeout", Some("9s")).unwrap();
        s.set_local("statement_timeout", Some("10s")).unwrap();
        s.set_local("myapp.user", Some("7")).unwrap();
        assert_eq!(s.get("statement_timeout").unwrap(), "10s");
        assert_eq!(s.statement_timeout(), Some(std::time::Duration::from_secs(10)));
        assert_eq!(s.get("myapp.user").unwrap(), "7");
        assert!(s.set_local("statement_timeout", Some("soon")).is_err());
        s.end_transaction();
        assert_eq!(s.get("statement_timeout").unwrap(), "9s");
        assert_eq!(s.get("myapp.user").unwrap(), "");
        // A later SET replaces the SET LOCAL value and lasts.
        s.set_local("statement_timeout", Some("7s")).unwrap();
        s.set("statement_timeout", Some("8s")).unwrap();
        s.end_transaction();
        assert_eq!(s.get("statement_timeout").unwrap(), "8s");
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
