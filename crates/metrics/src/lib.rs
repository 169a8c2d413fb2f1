//! Prometheus metrics over HTTP, shared by the replica runtime and the gateway.
//!
//! Each process owns a [`prometheus_client::registry::Registry`] (no global registry: tests
//! run many replicas in one process) and serves its text exposition (OpenMetrics) on
//! `GET /metrics` with [`serve`]. The listener is a deliberately small HTTP/1 server for one
//! purpose: whoever can reach the port may connect, so it reads at most
//! [`MAX_REQUEST_BYTES`] of one request, gives each connection [`CONNECTION_TIMEOUT`],
//! serves at most [`MAX_CONNECTIONS`] at once (more are closed at accept), answers one
//! request per connection and never echoes what it received.

pub use prometheus_client;

use prometheus_client::registry::Registry;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// Longest request head read (request line and headers).
pub const MAX_REQUEST_BYTES: usize = 8 * 1024;
/// Time one connection may take from accept to the end of the answer.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 16;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What a scrape runs before encoding: a process whose figures are kept elsewhere copies
/// them into the registry's metrics here.
pub type BeforeScrape = Arc<dyn Fn() + Send + Sync>;

/// The registry's text exposition.
pub fn render(registry: &Registry) -> String {
    let mut text = String::new();
    // Encoding into a String fails only if a metric's own encoder fails; ours do not.
    if let Err(e) = prometheus_client::encoding::text::encode(&mut text, registry) {
        tracing::error!("cannot encode metrics: {e}");
        text.clear();
    }
    text
}

/// Serves `registry` on `GET /metrics` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    registry: Arc<Registry>,
    before_scrape: Option<BeforeScrape>,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Typically EMFILE: back off instead of spinning on the error.
                    tracing::warn!("metrics: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            drop(stream); // at the cap: close at once
            continue;
        };
        let (registry, before_scrape) = (registry.clone(), before_scrape.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, answer(stream, &registry, before_scrape.as_ref())).await;
        });
    }
}

/// Binds `addr` and serves on it in a task of its own until `shutdown` completes; returns
/// the bound address (`addr` may have port 0).
pub async fn spawn(
    addr: std::net::SocketAddr,
    registry: Arc<Registry>,
    before_scrape: Option<BeforeScrape>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tokio::spawn(serve(listener, registry, before_scrape, shutdown));
    Ok(local)
}

/// Reads one request head and answers it.
async fn answer(mut stream: TcpStream, registry: &Registry, before_scrape: Option<&BeforeScrape>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(k) => head.extend_from_slice(&buf[..k]),
        }
        if head.len() > MAX_REQUEST_BYTES {
            let _ =
                respond(&mut stream, "431 Request Header Fields Too Large", "text/plain", "request too large\n").await;
            return;
        }
    }
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let mut words = line.split(|b| *b == b' ');
    let (method, target) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    let path = target.split(|b| *b == b'?').next().unwrap_or_default();
    match (method, path) {
        (b"GET", b"/metrics") => {
            if let Some(f) = before_scrape {
                f();
            }
            let _ = respond(&mut stream, "200 OK", CONTENT_TYPE, &render(registry)).await;
        }
        (b"GET", _) => {
            let _ = respond(&mut stream, "404 Not Found", "text/plain", "metrics are at /metrics\n").await;
        }
        _ => {
            let _ = respond(&mut stream, "405 Method Not Allowed", "text/plain", "only GET /metrics\n").await;
        }
    }
}

async fn respond(stream: &mut TcpStream, status: &str, content_type: &str, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

/// Parses a text exposition into `(series, value)` pairs, a series being the name with its
/// labels as written (`name{a="b"}`). For tests and tools; comments are skipped.
pub fn parse(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// Largest answer [`scrape`] reads.
pub const MAX_SCRAPE_BYTES: usize = 64 << 20;

/// One HTTP GET of `http://addr/metrics`, for tests and tools: the body, if the answer was
/// 200. Bounded by [`CONNECTION_TIMEOUT`] and [`MAX_SCRAPE_BYTES`].
pub async fn scrape(addr: std::net::SocketAddr) -> std::io::Result<String> {
    scrape_bounded(addr, CONNECTION_TIMEOUT, MAX_SCRAPE_BYTES).await
}

/// [`scrape`] with its own bounds: the whole exchange takes at most `timeout`, and an answer
/// longer than `max_bytes` (head included) is an error rather than cut short.
pub async fn scrape_bounded(
    addr: std::net::SocketAddr,
    timeout: Duration,
    max_bytes: usize,
) -> std::io::Result<String> {
    let fetch = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").await?;
        let mut answer = Vec::new();
        let limit = u64::try_from(max_bytes).unwrap_or(u64::MAX).saturating_add(1);
        stream.take(limit).read_to_end(&mut answer).await?;
        if answer.len() > max_bytes {
            return Err(std::io::Error::other(format!("answer longer than {max_bytes} bytes")));
        }
        let text = String::from_utf8_lossy(&answer).into_owned();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            return Err(std::io::Error::other("no HTTP head in the answer"));
        };
        if !head.starts_with("HTTP/1.1 200 ") {
            return Err(std::io::Error::other(format!("answer: {}", head.lines().next().unwrap_or_default())));
        }
        Ok(body.to_string())
    };
    tokio::time::timeout(timeout, fetch).await.map_err(|_| std::io::Error::other("scrape timed out"))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;

    async fn raw(addr: std::net::SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        let _ = s.write_all(request).await;
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    #[tokio::test]
    async fn serves_the_registry_and_refuses_everything_else() {
        let mut registry = Registry::default();
        let c: Counter = Counter::default();
        registry.register("pistou_test_things", "Things", c.clone());
        c.inc_by(3);
        let scrapes = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let seen = scrapes.clone();
        let before: BeforeScrape = Arc::new(move || {
            seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let addr = spawn("127.0.0.1:0".parse().expect("addr"), Arc::new(registry), Some(before), async {
            let _ = stopped.await;
        })
        .await
        .expect("bind");
        let body = scrape(addr).await.expect("scrape");
        assert!(body.contains("# TYPE pistou_test_things counter"), "{body}");
        assert_eq!(parse(&body), vec![("pistou_test_things_total".to_string(), 3.0)]);
        assert_eq!(scrapes.load(std::sync::atomic::Ordering::Relaxed), 1);
        let other = raw(addr, b"GET /secret HTTP/1.1\r\n\r\n").await;
        assert!(other.starts_with("HTTP/1.1 404 "), "{other}");
        assert!(!other.contains("secret"), "the request is never echoed: {other}");
        let post = raw(addr, b"POST /metrics HTTP/1.1\r\n\r\n").await;
        assert!(post.starts_with("HTTP/1.1 405 "), "{post}");
        let huge = vec![b'A'; 3 * MAX_REQUEST_BYTES];
        let big = raw(addr, &huge).await;
        assert!(big.is_empty() || big.starts_with("HTTP/1.1 431 "), "{big}");
        let garbage = raw(addr, b"\xff\xfe\r\n\r\n").await;
        assert!(garbage.starts_with("HTTP/1.1 405 "), "{garbage}");
        // Still serving after all that; only the scrapes ran the hook.
        assert!(scrape(addr).await.is_ok());
        assert_eq!(scrapes.load(std::sync::atomic::Ordering::Relaxed), 2);
        let _ = stop.send(());
    }

    #[tokio::test]
    async fn silent_connections_take_no_more_than_the_cap() {
        let registry = Arc::new(Registry::default());
        let addr =
            spawn("127.0.0.1:0".parse().expect("addr"), registry, None, std::future::pending()).await.expect("bind");
        // More silent connections than slots: the extra ones are closed at once, and a
        // scrape succeeds once the silent ones time out.
        let mut silent = Vec::new();
        for _ in 0..MAX_CONNECTIONS + 4 {
            silent.push(TcpStream::connect(addr).await.expect("connect"));
        }
        let started = std::time::Instant::now();
        let mut last = Err(std::io::Error::other("never tried"));
        while started.elapsed() < CONNECTION_TIMEOUT * 3 {
            last = scrape(addr).await;
            if last.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(last.is_ok(), "{last:?}");
        assert!(started.elapsed() >= Duration::from_secs(1), "the silent connections held the slots for a while");
    }

    #[tokio::test]
    async fn a_bounded_scrape_refuses_long_answers_and_gives_up_on_silent_ones() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            // First connection: a 200 with a long body; second: never answers.
            let (mut s, _) = listener.accept().await.expect("accept");
            let mut answer = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
            answer.extend_from_slice(&[b'x'; 64 * 1024]);
            let _ = s.write_all(&answer).await;
            drop(s);
            let (_silent, _) = listener.accept().await.expect("accept");
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        let long = scrape_bounded(addr, Duration::from_secs(5), 1024).await.expect_err("too long");
        assert!(long.to_string().contains("longer than 1024 bytes"), "{long}");
        let started = std::time::Instant::now();
        let silent = scrape_bounded(addr, Duration::from_millis(300), 1024).await.expect_err("silent");
        assert!(silent.to_string().contains("timed out"), "{silent}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
