//! The system catalog against the machine's PostgreSQL (127.0.0.1:5432, database `test`,
//! user `postgres`, trust auth): the same tables and indexes on both, then psql's `\d`
//! family and information_schema / pg_catalog queries, compared output by output. Names
//! carry a per-run prefix (other tests share database `test`) and are dropped after.
//! Owner names (`pistou` / `postgres`), database names and OIDs are normalized.
//! An unreachable PostgreSQL or a missing psql fails the test.

mod support;

use pistou_gateway::GatewayConfig;
use std::process::Stdio;
use std::time::Duration;
use support::{bounded, connect, start};

/// Output of psql (stdout and stderr, unaligned with `|`, no headers' padding), running
/// `script`.
async fn psql(port: &str, db: &str, user: &str, script: &str) -> String {
    let args = ["-X", "-A", "-q", "-h", "127.0.0.1", "-p", port, "-U", user, "-d", db, "-v", "VERBOSITY=terse"];
    let mut child = tokio::process::Command::new("psql")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("psql is required by this test");
    let mut stdin = child.stdin.take().expect("psql stdin");
    tokio::io::AsyncWriteExt::write_all(&mut stdin, script.as_bytes()).await.expect("write the script");
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(40), child.wait_with_output())
        .await
        .expect("psql did not finish")
        .expect("psql");
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Replaces owner and database names and numbers that look like user OIDs.
fn normalize(out: &str, owner: &str, database: &str) -> String {
    let mut s = out.replace(owner, "OWNER");
    s = s.replace(&format!("|{database}|"), "|DB|");
    let mut result = String::with_capacity(s.len());
    for line in s.lines() {
        let fields: Vec<String> = line
            .split('|')
            .map(|f| match f.parse::<u64>() {
                Ok(n) if n >= 16_384 => "OID".to_string(),
                _ => f.to_string(),
            })
            .collect();
        result.push_str(&fields.join("|"));
        result.push('\n');
    }
    result
}

fn schema(p: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE {p}acct (id BIGINT PRIMARY KEY, name VARCHAR(20) NOT NULL, balance NUMERIC(12,2), \
             note TEXT DEFAULT 'none', code TEXT UNIQUE, opened DATE, n INT DEFAULT 7)"
        ),
        format!("CREATE INDEX {p}acct_name ON {p}acct (name)"),
        format!("ALTER TABLE {p}acct ALTER COLUMN opened SET NOT NULL, ALTER COLUMN name DROP NOT NULL"),
        format!(
            "CREATE TABLE {p}line (acct BIGINT, n INT, qty SMALLINT NOT NULL, price DOUBLE PRECISION, \
             at TIMESTAMP, flag BOOLEAN DEFAULT true, tag CHAR(3), PRIMARY KEY (acct, n))"
        ),
        format!("CREATE UNIQUE INDEX {p}line_at ON {p}line (at, n)"),
        format!(
            "CREATE TABLE {p}ref (id INT PRIMARY KEY, acct BIGINT REFERENCES {p}acct (id), qty INT CHECK (qty > 0))"
        ),
        // DISTINCT makes it a view PostgreSQL cannot update either (Pistou's views are read-only).
        format!("CREATE VIEW {p}rich (id, label) AS SELECT DISTINCT id, name, balance * 2 AS twice FROM {p}acct WHERE balance > 0"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_describe_and_information_schema_match_postgres() {
    bounded(120, async {
        let p = format!("zc{}_", std::process::id());
        let h = start(GatewayConfig::default()).await;
        let gw = connect(h.addr).await;
        for ddl in schema(&p) {
            gw.batch_execute(&ddl).await.unwrap_or_else(|e| panic!("Pistou {ddl}: {e}"));
        }
        let setup: String = schema(&p).iter().map(|s| format!("{s};\n")).collect();
        let drop = format!("DROP VIEW IF EXISTS {p}rich;\nDROP TABLE IF EXISTS {p}ref, {p}acct, {p}line;\n");
        let created = psql("5432", "test", "postgres", &format!("{drop}{setup}")).await;
        assert!(!created.contains("ERROR"), "PostgreSQL setup: {created}");
        let commands = [
            format!("\\dt {p}*"),
            format!("\\d {p}*"),
            format!("\\di {p}*"),
            format!("\\dv {p}*"),
            format!("\\d {p}acct"),
            format!("\\d {p}line"),
            format!("\\d {p}ref"),
            format!("\\d {p}rich"),
            format!("\\d+ {p}acct"),
            format!("\\d+ {p}line"),
            format!("\\d {p}acct_name"),
            format!("\\d {p}nosuch"),
            "\\dn".to_string(),
            "\\df".to_string(),
            format!(
                "SELECT table_schema, table_name, table_type FROM information_schema.tables \
                 WHERE table_name LIKE '{p}%' ORDER BY table_name"
            ),
            format!(
                "SELECT table_name, column_name, ordinal_position, column_default, is_nullable, data_type, \
                 character_maximum_length, character_octet_length, numeric_precision, numeric_precision_radix, \
                 numeric_scale, datetime_precision, udt_schema, udt_name, is_identity, is_generated, is_updatable \
                 FROM information_schema.columns WHERE table_name LIKE '{p}%' ORDER BY table_name, ordinal_position"
            ),
            format!(
                "SELECT tc.table_name, tc.constraint_name, tc.constraint_type, tc.is_deferrable, kcu.column_name, \
                 kcu.ordinal_position FROM information_schema.table_constraints tc \
                 JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name \
                 WHERE tc.table_name LIKE '{p}%' ORDER BY 1, 2, 6"
            ),
            "SELECT schema_name FROM information_schema.schemata WHERE schema_name IN ('public', 'pg_catalog', 'information_schema') ORDER BY 1".to_string(),
            format!(
                "SELECT c.relname, c.relkind, c.relnatts, c.relhasindex, c.relpersistence, n.nspname \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname LIKE '{p}%' ORDER BY 1"
            ),
            format!(
                "SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef, \
                 t.typname, t.typlen FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid \
                 JOIN pg_type t ON t.oid = a.atttypid \
                 WHERE c.relname LIKE '{p}%' AND a.attnum > 0 ORDER BY 1, 2"
            ),
            format!(
                "SELECT ic.relname, tc.relname, i.indnatts, i.indisunique, i.indisprimary, i.indkey, \
                 pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid \
                 JOIN pg_class tc ON tc.oid = i.indrelid WHERE tc.relname LIKE '{p}%' ORDER BY 1"
            ),
            format!(
                "SELECT conname, contype, conkey, pg_get_constraintdef(oid), conrelid = '{p}acct'::regclass \
                 FROM pg_constraint WHERE conrelid IN ('{p}acct'::regclass, '{p}line'::regclass) ORDER BY 1"
            ),
            format!("SELECT schemaname, tablename, indexname, indexdef FROM pg_indexes WHERE tablename LIKE '{p}%' ORDER BY 3"),
            format!("SELECT schemaname, tablename, hasindexes FROM pg_tables WHERE tablename LIKE '{p}%' ORDER BY 2"),
            "SELECT oid, typname, typlen, typtype, typcategory, typelem, typarray FROM pg_type \
             WHERE oid IN (16, 20, 21, 23, 25, 1043, 1700, 1007) ORDER BY oid"
                .to_string(),
            "SELECT nspname FROM pg_namespace WHERE nspname !~ '^pg_' ORDER BY 1".to_string(),
            format!(
                "SELECT c.relname, 23::regtype AS t, c.oid = '{p}acct'::regclass AS same, \
                 '{p}acct'::regclass::oid >= 16384 AS user_oid FROM pg_class c WHERE c.oid = 'public.{p}acct'::regclass"
            ),
        ];
        let port = h.addr.port().to_string();
        let mut mismatches = Vec::new();
        for command in &commands {
            let script = format!("{command}\n");
            let pistou = normalize(&psql(&port, "pistou", "tester", &script).await, "pistou", "pistou");
            let postgres = normalize(&psql("5432", "test", "postgres", &script).await, "postgres", "test");
            if pistou != postgres {
                mismatches.push(format!("{command}\n--- Pistou\n{pistou}--- PostgreSQL\n{postgres}"));
            }
        }
        // Objects that differ by nature (databases, roles) answer without errors.
        for command in ["\\l", "\\du"] {
            let out = psql(&port, "pistou", "tester", &format!("{command}\n")).await;
            assert!(!out.contains("ERROR") && out.contains("pistou"), "{command}: {out}");
        }
        psql("5432", "test", "postgres", &drop).await;
        h.stop().await;
        assert!(mismatches.is_empty(), "{} outputs differ:\n{}", mismatches.len(), mismatches.join("\n"));
    })
    .await;
}
