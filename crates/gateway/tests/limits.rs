//! Limits, authentication, ReadyForQuery states and hostile input, partly with raw
//! protocol bytes.

mod support;

use pistou_gateway::{Auth, GatewayConfig, PasswordMethod};
use std::time::Duration;
use support::{
    bounded, connect, connect_as, error_code, query, raw_session, sqlstate, start, startup, tag, until_ready,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Like `raw_session`, but waits (bounded) for a free connection slot.
async fn raw_session_when_free(addr: std::net::SocketAddr) -> TcpStream {
    for _ in 0..100 {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        s.write_all(&startup("raw")).await.expect("startup");
        // Over the cap the gateway answers 53300 and closes (or just closes): retry.
        let kind = s.read_u8().await.unwrap_or(b'E');
        if kind == b'R' {
            let len = s.read_i32().await.expect("length");
            let mut body = vec![0; (len - 4) as usize];
            s.read_exact(&mut body).await.expect("body");
            until_ready(&mut s).await;
            return s;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no connection slot became free");
}

/// True once the server has closed the connection (reads hit EOF or an error).
async fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_for_query_reports_idle_transaction_and_failed() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let mut s = raw_session(h.addr).await;
        s.write_all(&query("CREATE TABLE r (a BIGINT PRIMARY KEY)")).await.expect("send");
        let m = until_ready(&mut s).await;
        assert!(m.iter().any(|(k, b)| *k == b'C' && tag(b) == "CREATE TABLE"), "{m:?}");
        s.write_all(&query("INSERT INTO r VALUES (0)")).await.expect("send");
        let m = until_ready(&mut s).await;
        assert!(m.iter().any(|(k, b)| *k == b'C' && tag(b) == "INSERT 0 1"), "{m:?}");
        s.write_all(&query("BEGIN; INSERT INTO r VALUES (1), (2)")).await.expect("send");
        let m = until_ready(&mut s).await;
        let tags: Vec<String> = m.iter().filter(|(k, _)| *k == b'C').map(|(_, b)| tag(b)).collect();
        assert_eq!(tags, vec!["BEGIN", "INSERT 0 2"]);
        assert_eq!(m.last().map(|x| x.1.clone()), Some(b"T".to_vec()));
        s.write_all(&query("SELECT nope FROM r; SELECT 1")).await.expect("send");
        let m = until_ready(&mut s).await;
        let errors: Vec<String> = m.iter().filter(|(k, _)| *k == b'E').map(|(_, b)| error_code(b)).collect();
        assert_eq!(errors, vec!["42703"], "the statement after the error is not run");
        assert_eq!(m.last().map(|x| x.1.clone()), Some(b"E".to_vec()));
        s.write_all(&query("SELECT 1")).await.expect("send");
        let m = until_ready(&mut s).await;
        assert_eq!(m.iter().filter(|(k, _)| *k == b'E').map(|(_, b)| error_code(b)).collect::<Vec<_>>(), vec!["25P02"]);
        s.write_all(&query("COMMIT")).await.expect("send");
        let m = until_ready(&mut s).await;
        assert!(m.iter().any(|(k, b)| *k == b'C' && tag(b) == "ROLLBACK"), "{m:?}");
        assert_eq!(m.last().map(|x| x.1.clone()), Some(b"I".to_vec()));
        s.write_all(&query("SELECT count(*) FROM r")).await.expect("send");
        let m = until_ready(&mut s).await;
        let row = m.iter().find(|(k, _)| *k == b'D').unwrap_or_else(|| panic!("no row: {m:?}"));
        assert!(row.1.ends_with(b"1"), "only the committed row is left: {row:?}");
        // Empty query.
        s.write_all(&query(" ; ")).await.expect("send");
        let m = until_ready(&mut s).await;
        assert_eq!(m[0].0, b'I');
        h.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_close_or_refuse_only_the_offender() {
    bounded(120, async {
        let config = GatewayConfig {
            max_connections: 2,
            max_statement_bytes: 1000,
            max_message_bytes: 4096,
            idle_timeout: Duration::from_secs(2),
            ..GatewayConfig::default()
        };
        let h = start(config).await;
        let a = connect(h.addr).await;
        // Statement size cap: an error, the connection stays usable.
        let long = format!("SELECT '{}'", "x".repeat(2000));
        let e = a.simple_query(&long).await.expect_err("too long");
        assert_eq!(sqlstate(&e), "54000");
        assert_eq!(a.query_one("SELECT 2", &[]).await.expect("still usable").get::<_, i32>(0), 2);

        // Hostile bytes after startup close that connection only. (Each raw session waits
        // for a free slot: the gateway may not have released the previous one yet.)
        let mut raw = raw_session_when_free(h.addr).await;
        raw.write_all(&[b'?', 0, 0, 0, 8, 1, 2, 3, 4]).await.expect("garbage");
        assert!(closed(&mut raw).await, "garbage must close the connection");
        // A message longer than the cap is refused before it is buffered.
        let mut raw = raw_session_when_free(h.addr).await;
        raw.write_all(&[b'Q', 0x7f, 0xff, 0xff, 0xff]).await.expect("huge length");
        assert!(closed(&mut raw).await, "an oversized message must close the connection");
        // Garbage instead of a startup packet.
        let mut raw = TcpStream::connect(h.addr).await.expect("connect");
        raw.write_all(&[0, 0, 0, 9, 0xde, 0xad, 0xbe, 0xef, 0]).await.expect("bad startup");
        assert!(closed(&mut raw).await);
        assert_eq!(a.query_one("SELECT 3", &[]).await.expect("unaffected").get::<_, i32>(0), 3);

        // Connection cap: a is one; b is the second; the third is refused with 53300.
        let b = connect(h.addr).await;
        let e = connect_as(h.addr, "third", None).await.expect_err("over the cap");
        assert_eq!(sqlstate(&e), "53300");
        drop(b);

        // Idle timeout: a silent connection is closed by the gateway.
        let mut idle = raw_session_when_free(h.addr).await;
        assert!(closed(&mut idle).await, "an idle connection must be closed");
        h.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_authentication() {
    bounded(120, async {
        for method in [PasswordMethod::ScramSha256, PasswordMethod::Cleartext] {
            let auth = Auth::Password { user: "app".into(), password: "s3cret".into(), method };
            let h = start(GatewayConfig { auth, ..GatewayConfig::default() }).await;
            let db = connect_as(h.addr, "app", Some("s3cret")).await.expect("right password");
            assert_eq!(db.query_one("SELECT 1", &[]).await.expect("query").get::<_, i32>(0), 1);
            let e = connect_as(h.addr, "app", Some("wrong")).await.expect_err("wrong password");
            assert_eq!(sqlstate(&e), "28P01", "{method:?}");
            let e = connect_as(h.addr, "mallory", Some("s3cret")).await.expect_err("wrong user");
            assert_eq!(sqlstate(&e), "28P01", "{method:?}");
            h.stop().await;
        }
    })
    .await;
}

/// A tokio-postgres connection to the gateway from source address `source` (a loopback
/// address other than 127.0.0.1 stands for another machine).
async fn connect_from(
    source: std::net::IpAddr,
    addr: std::net::SocketAddr,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind(std::net::SocketAddr::new(source, 0)).expect("bind a loopback source address");
    let stream = socket.connect(addr).await.expect("connect");
    let mut config = tokio_postgres::Config::new();
    config.user("tester").dbname("pistou");
    let (client, connection) = config.connect_raw(stream, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

/// Sockets that connect and never send a startup packet take unauthenticated slots only,
/// and one source gets few of them: they neither use up the connection cap nor keep
/// another source out (before, 100 such sockets took every connection slot until the
/// startup timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_sockets_do_not_lock_clients_out() {
    bounded(60, async {
        let h = start(GatewayConfig::default()).await;
        // A startup packet announcing 1 MiB is refused before it is buffered.
        let mut big = TcpStream::connect(h.addr).await.expect("connect");
        big.write_all(&(1i32 << 20).to_be_bytes()).await.expect("length");
        big.write_all(&[0; 1024]).await.expect("some of it");
        assert!(closed(&mut big).await, "an oversized startup packet must close the connection");
        let mut silent = Vec::new();
        for _ in 0..150 {
            silent.push(TcpStream::connect(h.addr).await.expect("connect"));
        }
        let other_source = std::net::IpAddr::from([127, 0, 0, 2]);
        for i in 0..5 {
            let c = connect_from(other_source, h.addr).await.expect("a client from another source gets in");
            let n: i32 = c.query_one("SELECT $1::INT", &[&i]).await.expect("query").get(0);
            assert_eq!(n, i);
        }
        drop(silent);
        h.stop().await;
    })
    .await;
}

/// Silent sockets from more sources than the per-source limit covers fill every
/// unauthenticated slot; a new client still gets in, since its connection takes the oldest
/// silent one's slot (that socket is closed). Before, the gateway closed new connections
/// while the slots were full, and such a flood locked every new client out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_from_many_sources_does_not_lock_new_clients_out() {
    bounded(60, async {
        let config = GatewayConfig { max_handshakes: 8, max_handshakes_per_source: 4, ..GatewayConfig::default() };
        let h = start(config).await;
        let mut silent = Vec::new();
        for source in 3..=6u8 {
            for _ in 0..4 {
                let socket = tokio::net::TcpSocket::new_v4().expect("socket");
                socket.bind(std::net::SocketAddr::new([127, 0, 0, source].into(), 0)).expect("bind");
                silent.push(socket.connect(h.addr).await.expect("connect"));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        // 16 silent sockets for 8 slots: the first 8 lost theirs to the next 8.
        for s in silent.iter_mut().take(8) {
            assert!(closed(s).await, "an older silent socket keeps its slot");
        }
        for i in 0..3 {
            let c = connect_from([127, 0, 0, 2].into(), h.addr).await.expect("a new client gets in");
            let n: i32 = c.query_one("SELECT $1::INT", &[&i]).await.expect("query").get(0);
            assert_eq!(n, i);
        }
        drop(silent);
        h.stop().await;
    })
    .await;
}

/// Wrong passwords are answered ever more slowly (100 ms, then doubling per further
/// failure from the same source), so guessing is slow; the right password still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_passwords_are_answered_ever_more_slowly() {
    bounded(60, async {
        let auth =
            Auth::Password { user: "app".into(), password: "s3cret".into(), method: PasswordMethod::ScramSha256 };
        let h = start(GatewayConfig { auth, ..GatewayConfig::default() }).await;
        let started = std::time::Instant::now();
        for _ in 0..4 {
            let e = connect_as(h.addr, "app", Some("guess")).await.expect_err("wrong password");
            assert_eq!(sqlstate(&e), "28P01");
        }
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(1_500),
            "four failures took only {waited:?} (100+200+400+800 ms expected)"
        );
        let db = connect_as(h.addr, "app", Some("s3cret")).await.expect("right password");
        assert_eq!(db.query_one("SELECT 1", &[]).await.expect("query").get::<_, i32>(0), 1);
        h.stop().await;
    })
    .await;
}

/// The statement limits in the cluster configuration (`sql.statement_max_*`) are what the
/// replicas and the client apply: a cross join over the configured work fails with 54000
/// from the replicas' agreeing replies (not a timeout), one under it runs, and the session
/// goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_limits_come_from_the_cluster_configuration() {
    bounded(120, async {
        let sql = pistou_core::SqlConfig { statement_max_work: 20_000, ..Default::default() };
        let h = support::start_with_sql(GatewayConfig::default(), sql).await;
        let c = connect(h.addr).await;
        c.batch_execute("CREATE TABLE lim (id INT PRIMARY KEY)").await.expect("create");
        let values: Vec<String> = (0..200).map(|i| format!("({i})")).collect();
        c.batch_execute(&format!("INSERT INTO lim VALUES {}", values.join(","))).await.expect("insert");
        // 200 × 200 pairs: over 20,000 units.
        let e = c.query("SELECT count(*) FROM lim a, lim b WHERE a.id < b.id", &[]).await.expect_err("over the work");
        let db = e.as_db_error().expect("a server error");
        assert_eq!(db.code().code(), "54000", "{db:?}");
        assert!(db.message().contains("sql.statement_max_work"), "{}", db.message());
        // 100 × 100 pairs: under it.
        let n: i64 = c
            .query_one("SELECT count(*) FROM lim a, lim b WHERE a.id < b.id AND a.id < 100 AND b.id < 100", &[])
            .await
            .expect("under the work limit")
            .get(0);
        assert_eq!(n, 4950);
        h.stop().await;
    })
    .await;
}
