//! Real PostgreSQL clients against the gateway: psql, Python psycopg 3, SQLAlchemy, Django,
//! node-postgres and Java pgjdbc. Missing client libraries are fetched into the target
//! directory (PyPI, npm, Maven Central) and cached there; a missing tool (psql, python3,
//! node, npm, java) fails the test.

mod support;

use pistou_gateway::GatewayConfig;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use support::{bounded, start};
use tokio::process::Command;

const PGJDBC_VERSION: &str = "42.7.4";

fn work_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gateway-clients").join(name);
    std::fs::create_dir_all(&dir).expect("create work dir");
    dir
}

/// Runs a command to completion (bounded); returns (success, stdout + stderr).
async fn run(cmd: &mut Command, secs: u64) -> (bool, String) {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e} (is the tool installed?)"));
    let out = tokio::time::timeout(Duration::from_secs(secs), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{cmd:?} did not finish in {secs} s"))
        .expect("wait for child");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

fn require_tool(name: &str) {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|p| p.join(name).is_file()))
        .unwrap_or(false);
    assert!(found, "the tool `{name}` is required by this test but is not installed (not found in PATH)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_runs_a_script() {
    require_tool("psql");
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let script = work_dir("psql").join("script.sql");
        std::fs::write(
            &script,
            "CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner TEXT NOT NULL, balance BIGINT);\n\
             CREATE TABLE cities (owner TEXT PRIMARY KEY, city TEXT);\n\
             INSERT INTO accounts VALUES (1, 'ann', 100), (2, 'bob', 50);\n\
             INSERT INTO cities VALUES ('ann', 'Lyon'), ('bob', 'Nice');\n\
             SELECT a.owner, c.city, a.balance FROM accounts a JOIN cities c ON c.owner = a.owner ORDER BY a.id;\n\
             BEGIN;\n\
             UPDATE accounts SET balance = balance - 10 WHERE id = 1;\n\
             UPDATE accounts SET balance = balance + 10 WHERE id = 2;\n\
             COMMIT;\n\
             SELECT id, balance FROM accounts ORDER BY id;\n\
             INSERT INTO accounts VALUES (1, 'dup', 0);\n\
             SHOW transaction_isolation;\n\
             \\dt\n\
             \\d accounts\n",
        )
        .expect("write script");
        let (ok, out) = run(
            Command::new("psql")
                .args(["-X", "-A", "-h", "127.0.0.1", "-p", &h.addr.port().to_string(), "-U", "tester", "-d", "pistou"])
                .args(["-v", "VERBOSITY=verbose", "-f"])
                .arg(&script)
                .env("PGCONNECT_TIMEOUT", "10"),
            60,
        )
        .await;
        assert!(ok, "psql failed:\n{out}");
        for expected in [
            "CREATE TABLE",
            "INSERT 0 2",
            "ann|Lyon|100",
            "bob|Nice|50",
            "BEGIN",
            "UPDATE 1",
            "COMMIT",
            "1|90",
            "2|60",
            "ERROR:  23505: duplicate key",
            "serializable",
            // Pistou's objects belong to role pistou (docs/sql.md, "System catalog").
            "public|accounts|table|pistou",
            "Table \"public.accounts\"",
            "id|bigint||not null|",
            "owner|text||not null|",
            "\"accounts_pkey\" PRIMARY KEY, btree (id)",
        ] {
            assert!(out.contains(expected), "psql output lacks {expected:?}:\n{out}");
        }
        h.stop().await;
    })
    .await;
}

const PSYCOPG_SCRIPT: &str = r#"
import datetime, sys
import psycopg
from psycopg import errors

conninfo = sys.argv[1]
with psycopg.connect(conninfo, autocommit=True) as c:
    c.execute("CREATE TABLE py (id BIGINT PRIMARY KEY, name TEXT, score DOUBLE PRECISION, born DATE)")
    c.execute("INSERT INTO py VALUES (%s, %s, %s, %s)", (1, "ann", 1.5, datetime.date(2000, 1, 2)))
    row = c.execute("SELECT id, name, score, born FROM py WHERE id = %s", (1,)).fetchone()
    assert row == (1, "ann", 1.5, datetime.date(2000, 1, 2)), row
    try:
        c.execute("INSERT INTO py VALUES (%s, %s, %s, %s)", (1, "dup", 0.0, None))
        raise SystemExit("duplicate accepted")
    except errors.UniqueViolation as e:
        assert e.sqlstate == "23505"

with psycopg.connect(conninfo) as c:
    c.execute("INSERT INTO py VALUES (%s, %s, %s, %s)", (2, "bob", 2.0, None))
    c.rollback()
    assert c.execute("SELECT count(*) FROM py").fetchone()[0] == 1
    c.execute("INSERT INTO py VALUES (%s, %s, %s, %s)", (3, "cy", None, None))
    c.commit()
    assert c.execute("SELECT name FROM py WHERE id = %s", (3,)).fetchone()[0] == "cy"
    c.commit()

with psycopg.connect(conninfo, autocommit=True) as c:
    c.execute("CREATE TABLE counter (id BIGINT PRIMARY KEY, n BIGINT)")
    c.execute("INSERT INTO counter VALUES (1, 0)")

# Two connections increment the same row in interleaved transactions: conflicts raise
# SerializationFailure (40001) and the loop retries them.
c1, c2 = psycopg.connect(conninfo), psycopg.connect(conninfo)
failures = 0
pending = [c1, c2]
for attempt in range(50):
    if not pending:
        break
    reads = [(c, c.execute("SELECT n FROM counter WHERE id = 1").fetchone()[0]) for c in pending]
    done = []
    for c, n in reads:
        try:
            c.execute("UPDATE counter SET n = %s WHERE id = 1", (n + 1,))
            c.commit()
            done.append(c)
        except errors.SerializationFailure as e:
            assert e.sqlstate == "40001"
            failures += 1
            c.rollback()
    pending = [c for c in pending if c not in done]
assert not pending, "increments never committed"
final = c1.execute("SELECT n FROM counter WHERE id = 1").fetchone()[0]
assert final == 2, final
assert failures >= 1, "the interleaved transactions did not conflict"

# Client-side binding (ClientCursor, psycopg2's only mode): values are inlined in the
# statement text, so they must never decide how the gateway routes it (issue #33).
with psycopg.connect(conninfo, autocommit=True) as c:
    c.execute("CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT)")
    cur = psycopg.ClientCursor(c)
    cur.execute("INSERT INTO notes VALUES (%s, %s)", (1, "pg_type oid = 23"))
    assert cur.statusmessage == "INSERT 0 1", cur.statusmessage
    hostile = "x' FROM pg_catalog.pg_type WHERE oid = 23 --"
    cur.execute("UPDATE notes SET body = %s WHERE id = %s", (hostile, 1))
    assert cur.statusmessage == "UPDATE 1", cur.statusmessage
    assert cur.execute("SELECT body FROM notes WHERE id = %s", (1,)).fetchone()[0] == hostile
    assert cur.execute("SELECT %s", ("pg_type oid = 23",)).fetchone()[0] == "pg_type oid = 23"

# psycopg prepares a statement after 5 executions (prepare_threshold) and sends DEALLOCATE
# ALL on rollback (issue #26); it then prepares again under the same names.
with psycopg.connect(conninfo) as c:
    for _ in range(8):
        assert c.execute("SELECT name FROM py WHERE id = %s", (1,)).fetchone()[0] == "ann"
    c.rollback()
    for _ in range(8):
        assert c.execute("SELECT name FROM py WHERE id = %s", (1,)).fetchone()[0] == "ann"
    c.execute("INSERT INTO py VALUES (%s, %s, %s, %s)", (9, "dee", None, None))
    c.rollback()
    for i in range(10, 17):
        c.execute("INSERT INTO py VALUES (%s, %s, %s, %s)", (i, "eve", None, None))
    c.commit()
    assert c.execute("SELECT count(*) FROM py WHERE name = %s", ("eve",)).fetchone()[0] == 7
    # SQL-level prepared statements.
    c.execute("PREPARE byid (bigint) AS SELECT name FROM py WHERE id = $1")
    assert c.execute("EXECUTE byid(10)").fetchone()[0] == "eve"
    c.execute("DEALLOCATE byid")
    c.commit()
print(f"PSYCOPG OK failures={failures}")
"#;

/// A directory Python can import `module` from: `packages` are installed there with pip
/// when the import fails.
async fn python_site(dir: &Path, module_check: &str, packages: &[&str]) -> PathBuf {
    let deps = dir.join("site");
    let mut importable = Command::new("python3");
    importable.args(["-c", module_check]).env("PYTHONPATH", &deps);
    if !run(&mut importable, 30).await.0 {
        let (ok, out) = run(
            Command::new("python3")
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target"])
                .arg(&deps)
                .args(packages),
            300,
        )
        .await;
        assert!(ok, "cannot install {packages:?} with pip:\n{out}");
    }
    deps
}

/// The directory psycopg 3 is importable from.
async fn psycopg_site(dir: &Path) -> PathBuf {
    python_site(dir, "import psycopg; psycopg.pq.version()", &["psycopg[binary]"]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psycopg_parameters_transactions_and_retries() {
    require_tool("python3");
    bounded(240, async {
        let dir = work_dir("psycopg");
        let deps = psycopg_site(&dir).await;
        let h = start(GatewayConfig::default()).await;
        let script = dir.join("check.py");
        std::fs::write(&script, PSYCOPG_SCRIPT).expect("write script");
        let conninfo = format!("host=127.0.0.1 port={} user=tester dbname=pistou connect_timeout=10", h.addr.port());
        let (ok, out) = run(Command::new("python3").arg(&script).arg(&conninfo).env("PYTHONPATH", &deps), 90).await;
        assert!(ok && out.contains("PSYCOPG OK"), "psycopg check failed:\n{out}");
        h.stop().await;
    })
    .await;
}

/// The pgjdbc jar: cached from an earlier Maven download, else fetched with Maven
/// (Maven Central), else the system's package (Debian's libpostgresql-jdbc-java).
async fn pgjdbc_jar(dir: &Path) -> PathBuf {
    let cached = dir.join(format!("postgresql-{PGJDBC_VERSION}.jar"));
    if cached.is_file() {
        return cached;
    }
    let mut maven_output = String::from("mvn is not installed");
    if std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("mvn").is_file())) {
        let (ok, out) = run(
            Command::new("mvn")
                .args(["-q", "-B", "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy"])
                .arg(format!("-Dartifact=org.postgresql:postgresql:{PGJDBC_VERSION}"))
                .arg(format!("-DoutputDirectory={}", dir.display())),
            240,
        )
        .await;
        if ok && cached.is_file() {
            return cached;
        }
        maven_output = out;
    }
    let system = PathBuf::from("/usr/share/java/postgresql.jar");
    assert!(
        system.is_file(),
        "pgjdbc is needed: Maven could not fetch it and {} does not exist (install libpostgresql-jdbc-java or give Maven access to Maven Central):\n{maven_output}",
        system.display()
    );
    system
}

const JDBC_SOURCE: &str = r#"
import java.sql.*;

public class JdbcCheck {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(args[0], "tester", "")) {
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE j (id BIGINT PRIMARY KEY, name TEXT, w DOUBLE PRECISION)");
            }
            try (PreparedStatement p = c.prepareStatement("INSERT INTO j VALUES (?, ?, ?)")) {
                for (int i = 1; i <= 7; i++) {
                    p.setLong(1, i);
                    p.setString(2, "n" + i);
                    p.setDouble(3, i * 1.5);
                    check(p.executeUpdate() == 1, "insert count");
                }
            }
            try (PreparedStatement p = c.prepareStatement("SELECT id, name, w FROM j WHERE id >= ? ORDER BY id")) {
                for (int round = 0; round < 6; round++) {
                    p.setLong(1, 6);
                    try (ResultSet rs = p.executeQuery()) {
                        ResultSetMetaData md = rs.getMetaData();
                        check(md.getColumnCount() == 3, "column count");
                        check(md.getColumnName(2).equals("name"), "column name " + md.getColumnName(2));
                        check(md.getColumnTypeName(1).equals("int8"), "type " + md.getColumnTypeName(1));
                        check(md.getColumnType(3) == Types.DOUBLE, "sql type " + md.getColumnType(3));
                        check(rs.next() && rs.getLong(1) == 6 && rs.getString(2).equals("n6") && rs.getDouble(3) == 9.0, "row 6");
                        check(rs.next() && rs.getLong(1) == 7, "row 7");
                        check(!rs.next(), "two rows");
                    }
                }
            }
            try (ResultSet rs = c.getMetaData().getTables(null, "public", "j", new String[] {"TABLE"})) {
                check(rs.next() && rs.getString("TABLE_NAME").equals("j") && rs.getString("TABLE_TYPE").equals("TABLE"), "getTables");
                check(!rs.next(), "one table named j");
            }
            // getColumns numbers columns with row_number() OVER (PARTITION BY ... ORDER BY ...).
            try (ResultSet rs = c.getMetaData().getColumns(null, "public", "j", "%")) {
                String[] names = {"id", "name", "w"};
                int[] types = {Types.BIGINT, Types.VARCHAR, Types.DOUBLE};
                for (int i = 0; i < 3; i++) {
                    check(rs.next(), "column " + i);
                    check(rs.getString("COLUMN_NAME").equals(names[i]), "column name " + rs.getString("COLUMN_NAME"));
                    check(rs.getInt("DATA_TYPE") == types[i], "data type of " + names[i] + ": " + rs.getInt("DATA_TYPE"));
                    check(rs.getInt("ORDINAL_POSITION") == i + 1, "position");
                    check(rs.getString("IS_NULLABLE").equals(i == 0 ? "NO" : "YES"), "nullability of " + names[i]);
                }
                check(!rs.next(), "three columns");
                System.out.println("getColumns OK");
            }
            c.setAutoCommit(false);
            try (PreparedStatement p = c.prepareStatement("UPDATE j SET name = ? WHERE id = ?")) {
                p.setString(1, "rolled back");
                p.setLong(2, 1);
                check(p.executeUpdate() == 1, "update count");
                c.rollback();
                p.setString(1, "kept");
                p.setLong(2, 2);
                p.executeUpdate();
                c.commit();
            }
            c.setAutoCommit(true);
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT name FROM j WHERE id <= 2 ORDER BY id")) {
                check(rs.next() && rs.getString(1).equals("n1"), "rollback undid the update");
                check(rs.next() && rs.getString(1).equals("kept"), "commit kept the update");
            }
            try (Statement s = c.createStatement()) {
                s.execute("INSERT INTO j VALUES (1, 'dup', 0)");
                check(false, "duplicate accepted");
            } catch (SQLException e) {
                check("23505".equals(e.getSQLState()), "sqlstate " + e.getSQLState());
            }
            // A savepoint recovers the block from a failed statement (ROLLBACK TO SAVEPOINT).
            c.setAutoCommit(false);
            java.sql.Savepoint sp = c.setSavepoint("before_dup");
            try (Statement s = c.createStatement()) {
                s.execute("INSERT INTO j VALUES (1, 'dup', 0)");
                check(false, "duplicate accepted in the block");
            } catch (SQLException e) {
                check("23505".equals(e.getSQLState()), "sqlstate in the block " + e.getSQLState());
            }
            c.rollback(sp);
            java.sql.Savepoint unnamed = c.setSavepoint();
            c.releaseSavepoint(unnamed);
            try (PreparedStatement p = c.prepareStatement("UPDATE j SET name = ? WHERE id = ?")) {
                p.setString(1, "after savepoint");
                p.setLong(2, 2);
                check(p.executeUpdate() == 1, "update after the savepoint");
            }
            c.commit();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT name FROM j WHERE id = 2")) {
                check(rs.next() && rs.getString(1).equals("after savepoint"), "the block committed");
            }
            // setReadOnly: pgjdbc begins its blocks READ ONLY; a write is refused (25006).
            c.setReadOnly(true);
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                try (ResultSet rs = s.executeQuery("SELECT count(*) FROM j")) {
                    check(rs.next() && rs.getLong(1) == 7, "a read-only block reads");
                }
                s.execute("UPDATE j SET name = 'read only' WHERE id = 3");
                check(false, "a write in a read-only block was accepted");
            } catch (SQLException e) {
                check("25006".equals(e.getSQLState()), "read-only sqlstate " + e.getSQLState());
            }
            c.rollback();
            c.setAutoCommit(true);
            c.setReadOnly(false);
        }
        System.out.println("JDBC OK");
    }
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgjdbc_prepared_statements_metadata_and_transactions() {
    for tool in ["java", "javac"] {
        require_tool(tool);
    }
    bounded(300, async {
        let dir = work_dir("pgjdbc");
        let jar = pgjdbc_jar(&dir).await;
        std::fs::write(dir.join("JdbcCheck.java"), JDBC_SOURCE).expect("write source");
        let (ok, out) =
            run(Command::new("javac").arg("-cp").arg(&jar).arg("-d").arg(&dir).arg(dir.join("JdbcCheck.java")), 120)
                .await;
        assert!(ok, "javac failed:\n{out}");
        let h = start(GatewayConfig::default()).await;
        let url = format!("jdbc:postgresql://127.0.0.1:{}/pistou?sslmode=disable&connectTimeout=10", h.addr.port());
        let classpath = format!("{}:{}", jar.display(), dir.display());
        let (ok, out) = run(Command::new("java").arg("-cp").arg(classpath).arg("JdbcCheck").arg(url), 120).await;
        assert!(ok && out.contains("JDBC OK") && out.contains("getColumns OK"), "pgjdbc check failed:\n{out}");
        h.stop().await;
    })
    .await;
}

/// Prints what pgjdbc's `DatabaseMetaData.getColumns` answers for a table of every column
/// type Pistou has, one line per column with every field of the result set.
const JDBC_COLUMNS_SOURCE: &str = r#"
import java.sql.*;

public class JdbcColumns {
    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(args[0], args[1], "")) {
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS win_jdbc_cols");
                s.execute("CREATE TABLE win_jdbc_cols (id BIGINT PRIMARY KEY, name TEXT NOT NULL, w DOUBLE PRECISION, "
                    + "n NUMERIC(10,2), v VARCHAR(20), ch CHAR(3), d DATE, ts TIMESTAMP, b BOOLEAN, si SMALLINT, "
                    + "i INTEGER DEFAULT 7, r REAL, by BYTEA)");
            }
            for (String pattern : new String[] {"%", "n%"}) {
                try (ResultSet rs = c.getMetaData().getColumns(null, "public", "win_jdbc_cols", pattern)) {
                    ResultSetMetaData md = rs.getMetaData();
                    while (rs.next()) {
                        StringBuilder line = new StringBuilder();
                        for (int i = 1; i <= md.getColumnCount(); i++) {
                            String label = md.getColumnLabel(i);
                            // The catalog is the database's name, which differs between the two servers.
                            String value = label.equals("TABLE_CAT") ? "(database)" : rs.getString(i);
                            line.append(label).append('=').append(value).append(' ');
                        }
                        System.out.println(line.toString().trim());
                    }
                }
            }
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE win_jdbc_cols");
            }
        }
        System.out.println("COLUMNS DONE");
    }
}
"#;

/// pgjdbc's getColumns (a query over pg_catalog numbering columns with `row_number() OVER
/// (PARTITION BY a.attrelid ORDER BY a.attnum)`) answers on Pistou exactly as on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgjdbc_get_columns_matches_postgres() {
    for tool in ["java", "javac"] {
        require_tool(tool);
    }
    bounded(300, async {
        let dir = work_dir("pgjdbc-columns");
        let jar = pgjdbc_jar(&dir).await;
        std::fs::write(dir.join("JdbcColumns.java"), JDBC_COLUMNS_SOURCE).expect("write source");
        let (ok, out) =
            run(Command::new("javac").arg("-cp").arg(&jar).arg("-d").arg(&dir).arg(dir.join("JdbcColumns.java")), 120)
                .await;
        assert!(ok, "javac failed:\n{out}");
        let classpath = format!("{}:{}", jar.display(), dir.display());
        let columns = |url: String, user: &'static str| {
            let classpath = classpath.clone();
            async move {
                let (ok, out) =
                    run(Command::new("java").arg("-cp").arg(classpath).arg("JdbcColumns").arg(url).arg(user), 120)
                        .await;
                assert!(ok && out.contains("COLUMNS DONE"), "getColumns failed:\n{out}");
                out
            }
        };
        let expected =
            columns("jdbc:postgresql://127.0.0.1:5432/test?sslmode=disable&connectTimeout=10".into(), "postgres").await;
        let h = start(GatewayConfig::default()).await;
        let url = format!("jdbc:postgresql://127.0.0.1:{}/pistou?sslmode=disable&connectTimeout=10", h.addr.port());
        let got = columns(url, "tester").await;
        h.stop().await;
        assert_eq!(expected.lines().count(), 13 + 2 + 1, "PostgreSQL's answer:\n{expected}");
        assert_eq!(got, expected, "getColumns on Pistou (left) differs from PostgreSQL (right)");
    })
    .await;
}

/// What psycopg 3 applications do (SQLAlchemy and Django on top of it): nested transactions
/// (savepoints), set_config, timestamptz values, arrays and json as psycopg loads them (text
/// and binary results), TRUNCATE and DROP TABLE of several tables.
/// The script prints what it saw; the output on Pistou must equal the output on PostgreSQL.
const PSYCOPG_APPS_SCRIPT: &str = r#"
import json, sys
import psycopg

conninfo = sys.argv[1]
trace = []
with psycopg.connect(conninfo, autocommit=True) as c:
    c.execute("DROP TABLE IF EXISTS py_sp, py_other, py_arr")
    c.execute("CREATE TABLE py_sp (id INT PRIMARY KEY, body TEXT)")
    c.execute("CREATE TABLE py_other (id INT PRIMARY KEY)")
    c.execute("CREATE TABLE py_arr (id INT PRIMARY KEY, name TEXT, ok BOOLEAN, r REAL)")
    c.execute("INSERT INTO py_arr VALUES (1, 'a', true, 1.5), (2, NULL, false, NULL), (3, 'b c', NULL, 0.25)")
    # Arrays and json come back as lists and dicts, in text and in binary format.
    for binary in (False, True):
        cur = c.cursor(binary=binary)
        cur.execute(
            "SELECT array_agg(id ORDER BY id), array_agg(name ORDER BY id), array_agg(ok ORDER BY id), "
            "array_agg(r ORDER BY id), json_build_object('n', count(*), 'ids', array_agg(id ORDER BY id)) "
            "FROM py_arr")
        trace.append(["arrays", binary, list(cur.fetchone())])
        cur.execute("SELECT unnest(a), generate_subscripts(a, 1) FROM (SELECT array_agg(name ORDER BY id DESC) AS a FROM py_arr) s")
        trace.append(["unnest", binary, cur.fetchall()])
        cur.execute("SELECT conkey FROM pg_constraint WHERE conname = 'py_arr_pkey'")
        trace.append(["conkey", binary, cur.fetchall()])
with psycopg.connect(conninfo) as c:
    c.execute("INSERT INTO py_sp VALUES (1, 'one')")
    # get_or_create: a nested transaction (SAVEPOINT "_pg3_1") around an INSERT that fails.
    try:
        with c.transaction():
            c.execute("INSERT INTO py_sp VALUES (1, 'dup')")
    except psycopg.errors.UniqueViolation as e:
        trace.append(["dup", e.sqlstate])
    trace.append(["after", c.execute("SELECT id, body FROM py_sp ORDER BY id").fetchall()])
    with c.transaction():
        c.execute("INSERT INTO py_sp VALUES (2, 'two')")
    with c.transaction():
        try:
            with c.transaction():
                c.execute("SELECT 1/0")
        except psycopg.errors.DivisionByZero as e:
            trace.append(["div", e.sqlstate])
        c.execute("INSERT INTO py_sp VALUES (3, 'three')")
    trace.append(["tz", c.execute("SELECT set_config('TimeZone', 'UTC', false)").fetchone()[0]])
    # Bound (server-side) parameters, as Django sends it.
    trace.append(["tz", c.execute("SELECT set_config('TimeZone', %s, false)", ("UTC",)).fetchone()[0]])
    trace.append(["x", c.execute("SELECT set_config('myapp.x', %s, %s)", ("v", False)).fetchone()[0]])
    first = c.execute("SELECT now()").fetchone()[0]
    again = c.execute("SELECT current_timestamp").fetchone()[0]
    trace.append(["now", first == again, first.utcoffset().total_seconds()])
with psycopg.connect(conninfo, autocommit=True) as c:
    trace.append(["final", c.execute("SELECT id, body FROM py_sp ORDER BY id").fetchall()])
    c.execute("TRUNCATE py_sp")
    trace.append(["truncated", c.execute("SELECT count(*) FROM py_sp").fetchone()[0]])
    c.execute("DROP TABLE IF EXISTS py_sp, py_nosuch, py_other, py_arr")
    try:
        c.execute("SELECT count(*) FROM py_other")
    except psycopg.errors.UndefinedTable as e:
        trace.append(["dropped", e.sqlstate])
print(json.dumps(trace))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psycopg_applications_see_what_postgres_gives_them() {
    require_tool("python3");
    bounded(240, async {
        let dir = work_dir("psycopg-apps");
        let deps = psycopg_site(&dir).await;
        let script = dir.join("apps.py");
        std::fs::write(&script, PSYCOPG_APPS_SCRIPT).expect("write script");
        let h = start(GatewayConfig::default()).await;
        let mut outputs = Vec::new();
        for conninfo in [
            format!("host=127.0.0.1 port={} user=tester dbname=pistou connect_timeout=10", h.addr.port()),
            "host=127.0.0.1 port=5432 user=postgres dbname=test connect_timeout=10".to_string(),
        ] {
            let (ok, out) = run(Command::new("python3").arg(&script).arg(&conninfo).env("PYTHONPATH", &deps), 90).await;
            assert!(ok, "the script failed with {conninfo}:\n{out}");
            outputs.push(out);
        }
        assert_eq!(outputs[0], outputs[1], "Pistou (left) and PostgreSQL (right)");
        assert!(
            outputs[0].contains(r#"["dup", "23505"]"#) && outputs[0].contains(r#"["now", true, 0.0]"#),
            "{}",
            outputs[0]
        );
        h.stop().await;
    })
    .await;
}

/// jsonb as psycopg 3 applications use it (Django's JSONField and SQLAlchemy's JSONB sit on
/// the same adapters): a jsonb column, `Jsonb` parameters (OID 3802, text and binary),
/// documents loaded as dicts in text and binary results, `->`, `->>`, `@>`, `?`, `||`,
/// `jsonb_set`, an UPDATE, the catalog's type name, and bad input. The output on Pistou must
/// equal the output on PostgreSQL.
const PSYCOPG_JSONB_SCRIPT: &str = r#"
import json, sys
import psycopg
from psycopg.types.json import Jsonb

conninfo = sys.argv[1]
trace = []
with psycopg.connect(conninfo, autocommit=True) as c:
    c.execute("DROP TABLE IF EXISTS py_jb")
    c.execute("CREATE TABLE py_jb (id INT PRIMARY KEY, d JSONB)")
    docs = [{"b": 1, "a": [1, 2.50, None]}, {"k": "x", "n": {"deep": True}}, [1, "two"], "s", None]
    for binary in (False, True):
        cur = c.cursor(binary=binary)
        for i, doc in enumerate(docs):
            cur.execute("INSERT INTO py_jb VALUES (%s, %s)", (i + 10 * binary, Jsonb(doc)))
        cur.execute("SELECT id, d, d -> 'a', d ->> 'k', d ? 'k' FROM py_jb WHERE id >= %s ORDER BY id", (10 * binary,))
        trace.append(["rows", binary, [repr(r) for r in cur.fetchall()]])
        trace.append(["type", binary, cur.description[1].type_code])
        cur.execute("SELECT id FROM py_jb WHERE d @> %s ORDER BY id", (Jsonb({"n": {"deep": True}}),))
        trace.append(["contains", binary, cur.fetchall()])
        cur.execute("SELECT id FROM py_jb WHERE d ->> %s = %s ORDER BY id", ("k", "x"))
        trace.append(["get", binary, cur.fetchall()])
        cur.execute("SELECT id FROM py_jb WHERE d = %s ORDER BY id", (Jsonb({"a": [1, 2.50, None], "b": 1}),))
        trace.append(["eq", binary, cur.fetchall()])
    c.execute("UPDATE py_jb SET d = jsonb_set(d, '{n,deep}', %s) || %s WHERE id = 1", (Jsonb(False), Jsonb({"z": 0})))
    trace.append(["updated", repr(c.execute("SELECT d FROM py_jb WHERE id = 1").fetchone())])
    trace.append(["catalog", c.execute(
        "SELECT data_type FROM information_schema.columns WHERE table_name = 'py_jb' AND column_name = 'd'").fetchall()])
    try:
        c.execute("INSERT INTO py_jb VALUES (99, %s)", ("{bad",))
    except psycopg.errors.InvalidTextRepresentation as e:
        trace.append(["bad", e.sqlstate])
    c.execute("DROP TABLE py_jb")
print(json.dumps(trace))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psycopg_jsonb_matches_postgres() {
    require_tool("python3");
    bounded(240, async {
        let dir = work_dir("psycopg-jsonb");
        let deps = psycopg_site(&dir).await;
        let script = dir.join("jsonb.py");
        std::fs::write(&script, PSYCOPG_JSONB_SCRIPT).expect("write script");
        let h = start(GatewayConfig::default()).await;
        let mut outputs = Vec::new();
        for conninfo in [
            format!("host=127.0.0.1 port={} user=tester dbname=pistou connect_timeout=10", h.addr.port()),
            "host=127.0.0.1 port=5432 user=postgres dbname=test connect_timeout=10".to_string(),
        ] {
            let (ok, out) = run(Command::new("python3").arg(&script).arg(&conninfo).env("PYTHONPATH", &deps), 90).await;
            assert!(ok, "the script failed with {conninfo}:\n{out}");
            outputs.push(out);
        }
        assert_eq!(outputs[0], outputs[1], "Pistou (left) and PostgreSQL (right)");
        assert!(outputs[0].contains(r#"["bad", "22P02"]"#) && outputs[0].contains("3802"), "{}", outputs[0]);
        h.stop().await;
    })
    .await;
}

/// The program a SQLAlchemy 2 user writes first, with `create_engine` defaults (psycopg 3):
/// declarative models with SERIAL and IDENTITY keys, indexes, UNIQUE and CHECK constraints
/// and a foreign key, `create_all` (several schema changes in one transaction), ORM inserts
/// that read the generated keys back with RETURNING, queries, an update, a delete; a
/// relationship (parents with children, loaded lazily, with `selectinload` and with
/// `joinedload`, delete-orphan); two serializable connections that write the same row, one
/// of which gets a serialization failure (40001) and retries; and the inspector's view of
/// every table (`get_columns`, `get_pk_constraint`, `get_foreign_keys`, `get_indexes`,
/// `get_unique_constraints`, `get_check_constraints`, `has_table`, `get_sequence_names`),
/// whose catalog queries use unnest, generate_subscripts, array_agg, json_build_object and
/// pg_opclass. It prints what it saw; the output must be the same as on PostgreSQL.
const SQLALCHEMY_SCRIPT: &str = r#"
import sys
from sqlalchemy import (create_engine, String, BigInteger, Identity, select, update, inspect, func, ForeignKey,
                        UniqueConstraint, CheckConstraint)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, Session, relationship, selectinload, joinedload

class Base(DeclarativeBase):
    pass

class User(Base):
    __tablename__ = "sa_users"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50), index=True)
    karma: Mapped[int] = mapped_column(default=0)
    __table_args__ = (CheckConstraint("karma >= 0", name="sa_users_karma_check"),)

class Tag(Base):
    __tablename__ = "sa_tags"
    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    label: Mapped[str] = mapped_column(String(20), unique=True)

class Parent(Base):
    __tablename__ = "sa_parents"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50))
    children: Mapped[list["Child"]] = relationship(
        back_populates="parent", order_by="Child.pos", cascade="all, delete-orphan")

class Child(Base):
    __tablename__ = "sa_children"
    id: Mapped[int] = mapped_column(primary_key=True)
    parent_id: Mapped[int] = mapped_column(ForeignKey("sa_parents.id"), index=True)
    pos: Mapped[int]
    label: Mapped[str] = mapped_column(String(20))
    parent: Mapped[Parent] = relationship(back_populates="children")
    __table_args__ = (UniqueConstraint("parent_id", "pos", name="sa_children_slot"),)

class Counter(Base):
    __tablename__ = "sa_counter"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    n: Mapped[int]

engine = create_engine(sys.argv[1])
Base.metadata.drop_all(engine)
Base.metadata.create_all(engine)
with Session(engine) as s:
    s.add_all([User(name="ann"), User(name="bob"), User(name="cy"), Tag(label="x"), Tag(label="y")])
    s.commit()
    print("users", [(u.id, u.name, u.karma) for u in s.scalars(select(User).order_by(User.id))])
    print("tags", [(t.id, t.label) for t in s.scalars(select(Tag).order_by(Tag.id))])
    bob = s.scalars(select(User).where(User.name == "bob")).one()
    bob.karma = 5
    s.delete(s.get(User, 3))
    s.commit()
    print("after", [(u.id, u.name, u.karma) for u in s.scalars(select(User).order_by(User.id))])
    s.add(User(name="dee"))
    s.commit()
    print("next id", s.scalars(select(func.max(User.id))).one())
try:
    with Session(engine) as s:
        s.add(Tag(label="x"))
        s.commit()
except Exception as e:
    print("duplicate", type(e.orig).__name__)

# An ORM relationship: parents with their children, loaded lazily, with selectinload
# and with joinedload; removing a child from the collection deletes it (delete-orphan).
with Session(engine) as s:
    s.add_all([
        Parent(name="p1", children=[Child(pos=2, label="b"), Child(pos=1, label="a")]),
        Parent(name="p2", children=[Child(pos=1, label="c")]),
        Parent(name="p3"),
    ])
    s.commit()
with Session(engine) as s:
    p1 = s.scalars(select(Parent).where(Parent.name == "p1")).one()
    print("lazy", p1.name, [(c.pos, c.label) for c in p1.children])
    first = p1.children[0]
    p1.children.remove(first)
    p1.children.append(Child(pos=3, label="d"))
    s.commit()
with Session(engine) as s:
    parents = s.scalars(select(Parent).options(selectinload(Parent.children)).order_by(Parent.id)).all()
    print("selectin", [(p.name, [(c.pos, c.label) for c in p.children]) for p in parents])
    children = s.scalars(select(Child).options(joinedload(Child.parent)).order_by(Child.parent_id, Child.pos)).all()
    print("joined", [(c.label, c.parent.name) for c in children])
    print("join filter", s.scalars(
        select(Parent.name).join(Parent.children).where(Child.label == "c")).all())

# A serialization failure (40001) and its retry: two connections read the same row in
# serializable transactions and both write it; one of them must fail, roll back and retry.
with Session(engine) as s:
    s.add(Counter(id=1, n=0))
    s.commit()
serializable = engine.execution_options(isolation_level="SERIALIZABLE")
c1, c2 = serializable.connect(), serializable.connect()
conflicts = 0
pending = [c1, c2]
for attempt in range(20):
    if not pending:
        break
    reads = [(c, c.execute(select(Counter.n).where(Counter.id == 1)).scalar_one()) for c in pending]
    done = []
    for c, n in reads:
        try:
            c.execute(update(Counter).where(Counter.id == 1).values(n=n + 1))
            c.commit()
            done.append(c)
        except DBAPIError as e:
            assert e.orig.sqlstate == "40001", e
            conflicts += 1
            c.rollback()
    pending = [c for c in pending if c not in done]
c1.close()
c2.close()
assert not pending, "the increments never committed"
with Session(engine) as s:
    print("counter", s.get(Counter, 1).n, "conflicted", conflicts >= 1)

insp = inspect(engine)
tables = sorted(t for t in insp.get_table_names() if t.startswith("sa_"))
print("tables", tables)
print("has_table", insp.has_table("sa_users"), insp.has_table("sa_nothing"))
print("sequences", sorted(q for q in insp.get_sequence_names() if q.startswith("sa_")))
for t in tables:
    print(t, "columns", insp.get_columns(t))
    print(t, "pk", insp.get_pk_constraint(t))
    print(t, "fks", insp.get_foreign_keys(t))
    print(t, "indexes", insp.get_indexes(t))
    print(t, "uniques", insp.get_unique_constraints(t))
    print(t, "checks", insp.get_check_constraints(t))
Base.metadata.drop_all(engine)
print("SQLALCHEMY DONE")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlalchemy_orm_program_behaves_as_on_postgres() {
    require_tool("python3");
    bounded(420, async {
        let dir = work_dir("sqlalchemy");
        let deps = python_site(
            &dir,
            "import sqlalchemy, psycopg; psycopg.pq.version()",
            &["sqlalchemy>=2", "psycopg[binary]"],
        )
        .await;
        let script = dir.join("program.py");
        std::fs::write(&script, SQLALCHEMY_SCRIPT).expect("write script");
        let program = |url: String| {
            let (script, deps) = (script.clone(), deps.clone());
            async move { run(Command::new("python3").arg(&script).arg(url).env("PYTHONPATH", &deps), 120).await }
        };
        let (ok, expected) = program("postgresql+psycopg://postgres@127.0.0.1:5432/test".into()).await;
        assert!(ok && expected.contains("SQLALCHEMY DONE"), "the program fails on PostgreSQL:\n{expected}");
        let h = start(GatewayConfig::default()).await;
        let (ok, got) = program(format!("postgresql+psycopg://tester@127.0.0.1:{}/pistou", h.addr.port())).await;
        assert!(ok, "the program fails on Pistou:\n{got}");
        assert_eq!(got, expected, "SQLAlchemy program: Pistou (left) vs PostgreSQL (right)");
        h.stop().await;
    })
    .await;
}

/// A node-postgres program (`clients/node_program.js`): a schema with SERIAL, a foreign key,
/// CHECK, uuid and timestamptz columns, parameterized and named prepared statements, a
/// transaction with a savepoint, UPDATE ... FROM, errors with their SQLSTATEs and
/// constraint names, and the information_schema / pg_catalog queries tools run. Its output,
/// result column type OIDs included, equals the same program's on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_postgres_program_behaves_as_on_postgres() {
    require_tool("node");
    require_tool("npm");
    bounded(300, async {
        let dir = work_dir("node");
        if !dir.join("node_modules").join("pg").join("package.json").is_file() {
            let (ok, out) = run(
                Command::new("npm")
                    .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
                    .arg(&dir)
                    .arg("pg@8"),
                240,
            )
            .await;
            assert!(ok, "cannot install node-postgres with npm:\n{out}");
        }
        let script = dir.join("program.js");
        std::fs::write(&script, include_str!("clients/node_program.js")).expect("write script");
        let program = |url: String| {
            let script = script.clone();
            let modules = dir.join("node_modules");
            async move { run(Command::new("node").arg(&script).arg(url).env("NODE_PATH", modules), 120).await }
        };
        let (ok, expected) = program("postgresql://postgres@127.0.0.1:5432/test".into()).await;
        assert!(ok && expected.contains("NODE DONE"), "the program fails on PostgreSQL:\n{expected}");
        let h = start(GatewayConfig::default()).await;
        let (ok, got) = program(format!("postgresql://tester@127.0.0.1:{}/pistou", h.addr.port())).await;
        assert!(ok, "the program fails on Pistou:\n{got}");
        for (line, (g, e)) in got.lines().zip(expected.lines()).enumerate() {
            assert_eq!(g, e, "node-postgres program, line {}: Pistou (left) vs PostgreSQL (right)", line + 1);
        }
        assert_eq!(got.lines().count(), expected.lines().count(), "node-postgres program output:\n{got}");
        h.stop().await;
    })
    .await;
}

/// A Django 5 project, as a user first writes one: `migrate` of contenttypes, auth and an
/// app with two related models, then ORM queries; the output equals PostgreSQL's (on a
/// database of its own there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn django_migrate_and_orm_behave_as_on_postgres() {
    require_tool("python3");
    bounded(600, async {
        let dir = work_dir("django");
        let deps =
            python_site(&dir, "import django, psycopg; psycopg.pq.version()", &["django>=5,<6", "psycopg[binary]"])
                .await;
        let script = dir.join("program.py");
        std::fs::write(&script, include_str!("clients/django_program.py")).expect("write script");
        let program = |target: String, project: &str| {
            let (script, deps, project) = (script.clone(), deps.clone(), dir.join(project));
            async move {
                let _ = std::fs::remove_dir_all(&project);
                std::fs::create_dir_all(&project).expect("project dir");
                run(Command::new("python3").arg(&script).arg(target).arg(&project).env("PYTHONPATH", &deps), 300).await
            }
        };
        let database = format!("pistou_django_{}", std::process::id());
        let pg = support::postgres().await;
        let reset = format!("DROP DATABASE IF EXISTS {database}");
        pg.batch_execute(&reset).await.expect("drop the Django database");
        pg.batch_execute(&format!("CREATE DATABASE {database}")).await.expect("create the Django database");
        let (ok, expected) = program(format!("127.0.0.1:5432/{database}/postgres"), "on-postgres").await;
        pg.batch_execute(&reset).await.expect("drop the Django database");
        assert!(ok && expected.contains("DJANGO DONE"), "the program fails on PostgreSQL:\n{expected}");
        let h = start(GatewayConfig::default()).await;
        let (ok, got) = program(format!("127.0.0.1:{}/pistou/tester", h.addr.port()), "on-pistou").await;
        assert!(ok, "the program fails on Pistou:\n{got}");
        assert_eq!(got, expected, "Django program: Pistou (left) vs PostgreSQL (right)");
        h.stop().await;
    })
    .await;
}
