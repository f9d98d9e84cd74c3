//! The client side of electd's own HTTP API, small and blocking: one request with
//! `Connection: close` ([`http_request`]), the server-sent events of `/watch`
//! ([`read_events`]) and a Prometheus text-format reader ([`metric_sum`]). `electd
//! status` and `electd watch`, `electd bench` and the process-level tests all use it;
//! the HTTP API's own tests use an independent client (hyper) on purpose, so that the
//! server is not only checked against this parser.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// One HTTP/1.1 request with `Connection: close`: (status code, de-chunked body).
pub fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> Option<(u16, String)> {
    http_request_within(
        addr,
        method,
        path,
        token,
        Duration::from_millis(500),
        Duration::from_secs(5),
    )
}

/// The largest answer read (a status, a drain's per-group table): more is an error,
/// not memory spent on whatever an endpoint sends.
const MAX_ANSWER: usize = 16 << 20;

/// Why a request got no answer ([`request`]).
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// Nothing listens there (connection refused or reset at once).
    #[error("connection refused by {0} (is electd running there?)")]
    Refused(SocketAddr),
    /// No connection, or no complete answer, within the time allowed (an endpoint that
    /// does not answer, or trickles its answer).
    #[error(
        "no complete answer within {within:?} from {addr} (the node is stopped, hung or cut off)"
    )]
    Timeout {
        /// Where.
        addr: SocketAddr,
        /// The limit that ran out.
        within: Duration,
    },
    /// What came back is not an HTTP answer.
    #[error("invalid reply from {addr}: {why}")]
    Invalid {
        /// Where.
        addr: SocketAddr,
        /// What is wrong with it.
        why: String,
    },
    /// Another network error.
    #[error("{addr}: {source}")]
    Io {
        /// Where.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
}

/// [`http_request`] with a connect timeout and a deadline for the whole request:
/// `total` bounds everything from the connect to the last byte of the answer, however
/// the answer arrives (a timeout per read would let an endpoint that sends one byte
/// at a time hold the caller forever). `None` when no complete answer arrived.
pub fn http_request_within(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    connect: Duration,
    total: Duration,
) -> Option<(u16, String)> {
    request(addr, method, path, token, connect, total).ok()
}

/// [`http_request_within`], saying why there is no answer: refused, timed out, or an
/// invalid reply (`electd status`, `drain`, `undrain` and `transfer` tell them apart).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    connect: Duration,
    total: Duration,
) -> Result<(u16, String), RequestError> {
    use std::io::ErrorKind;
    // A bound too far to add to the clock (a caller's huge timeout) is no bound.
    let deadline = Instant::now()
        .checked_add(total)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600));
    let timeout = || RequestError::Timeout {
        addr,
        within: total,
    };
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(timeout)
    };
    let io = |e: std::io::Error| match e.kind() {
        ErrorKind::ConnectionRefused => RequestError::Refused(addr),
        ErrorKind::TimedOut | ErrorKind::WouldBlock => timeout(),
        _ => RequestError::Io { addr, source: e },
    };
    let mut s = TcpStream::connect_timeout(&addr, connect.min(left()?)).map_err(io)?;
    s.set_write_timeout(Some(left()?)).map_err(io)?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    // One write: the request arrives whole.
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    s.write_all(head.as_bytes()).map_err(io)?;
    let invalid = |why: String| RequestError::Invalid { addr, why };
    let mut raw = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        s.set_read_timeout(Some(left()?)).map_err(io)?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&chunk[..n]);
                if raw.len() > MAX_ANSWER {
                    return Err(invalid(format!("an answer above {MAX_ANSWER} bytes")));
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // A server that closes without reading all of the request resets the
            // connection; what it sent before is still its answer.
            Err(e) if e.kind() == ErrorKind::ConnectionReset && !raw.is_empty() => break,
            Err(e) => return Err(io(e)),
        }
    }
    let buf = String::from_utf8(raw).map_err(|_| invalid("not UTF-8".into()))?;
    let (head, body) = buf
        .split_once("\r\n\r\n")
        .ok_or_else(|| invalid("no end of the HTTP header".into()))?;
    let code: u16 = head
        .strip_prefix("HTTP/1.")
        .and_then(|h| h.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| {
            invalid(format!(
                "no HTTP status line: {:?}",
                head.lines().next().unwrap_or_default()
            ))
        })?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Ok((code, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Sum of a Prometheus series over the lines whose labels contain every `labels`
/// pair (text exposition format; series without labels match when `labels` is empty).
pub fn metric_sum(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| {
            l.starts_with(name) && matches!(l.as_bytes().get(name.len()), Some(b'{') | Some(b' '))
        })
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Read the server-sent events of `GET path` from `addr` until the stream ends or
/// `on_event` returns false; `on_event` gets each event's whole text (`event:` and
/// `data:` lines). Err if the stream could not be opened (connection refused, not 200)
/// or, with `idle`, when nothing (not even the server's keep-alive comment, every
/// [`crate::http::WATCH_KEEP_ALIVE`]) arrived for that long (an error of kind
/// `WouldBlock` or `TimedOut`). Used by `electd watch` and the bench's `/watch` readers.
pub fn read_events(
    addr: SocketAddr,
    path: &str,
    connect_timeout: Duration,
    idle: Option<Duration>,
    mut on_event: impl FnMut(&str) -> bool,
) -> std::io::Result<()> {
    let mut s = TcpStream::connect_timeout(&addr, connect_timeout)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(idle)?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line)?;
    if !line.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other(format!(
            "{path}: {}",
            line.trim_end()
        )));
    }
    let mut chunked = false;
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
        {
            chunked = true;
        }
    }
    let mut pending = String::new();
    loop {
        // One chunk (or whatever arrived, without chunked encoding).
        if chunked {
            line.clear();
            if r.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let Ok(n) = usize::from_str_radix(line.trim(), 16) else {
                return Ok(());
            };
            if n == 0 {
                return Ok(());
            }
            let mut buf = vec![0u8; n + 2];
            r.read_exact(&mut buf)?;
            pending.push_str(&String::from_utf8_lossy(&buf[..n]));
        } else {
            line.clear();
            if r.read_line(&mut line)? == 0 {
                return Ok(());
            }
            pending.push_str(&line);
        }
        while let Some(end) = pending.find("\n\n") {
            let event: String = pending.drain(..end + 2).collect();
            if !on_event(&event) {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_sum_matches_name_and_labels() {
        let text = "electd_bytes_sent_total{node=\"1\"} 120\n\
                    electd_bytes_sent_total_x{node=\"1\"} 5\n\
                    electd_messages_sent_total{algorithm=\"bully\",node=\"1\",type=\"ok\"} 3\n\
                    electd_messages_sent_total{algorithm=\"bully\",node=\"1\",type=\"election\"} 4\n";
        assert_eq!(metric_sum(text, "electd_bytes_sent_total", &[]), 120.0);
        assert_eq!(metric_sum(text, "electd_messages_sent_total", &[]), 7.0);
        assert_eq!(
            metric_sum(text, "electd_messages_sent_total", &[("type", "ok")]),
            3.0
        );
    }

    /// An endpoint that answers one byte at a time, each well within any read timeout:
    /// (its address, the thread, which stops once the client hangs up or after
    /// `max_bytes`).
    fn trickler(max_bytes: usize) -> (SocketAddr, std::thread::JoinHandle<usize>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let t = std::thread::spawn(move || {
            let Ok((mut c, _)) = l.accept() else { return 0 };
            let mut req = [0u8; 1024];
            let _ = c.read(&mut req);
            let answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n";
            let body = answer.iter().chain(std::iter::repeat(&b' '));
            let mut sent = 0;
            for b in body.take(max_bytes) {
                if c.write_all(&[*b]).is_err() {
                    break;
                }
                sent += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            sent
        });
        (addr, t)
    }

    /// Issue 28, item 4: the timeout bounds the whole request. Before, it bounded each
    /// read, and an endpoint trickling a byte every 10 ms held the caller until it
    /// stopped (here after 2,000 bytes: 20 s, or forever).
    #[test]
    fn a_trickling_endpoint_cannot_hold_a_request_past_its_deadline() {
        let total = Duration::from_millis(300);
        let (addr, server) = trickler(2_000);
        let (tx, rx) = std::sync::mpsc::channel();
        let start = Instant::now();
        std::thread::spawn(move || {
            let r = request(addr, "GET", "/status", None, total, total);
            let _ = tx.send(r.map(|_| ()).map_err(|e| e.to_string()));
        });
        // Generous for a loaded machine, far below the trickle's 20 s.
        let r = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("the request must end near its deadline, not when the endpoint stops");
        let took = start.elapsed();
        let e = r.expect_err("no complete answer arrived");
        assert!(e.contains("no complete answer within 300ms"), "{e}");
        assert!(took >= total, "{took:?}");
        let sent = server.join().expect("server");
        // The client hung up: the server saw far fewer than its 2,000 bytes.
        assert!(sent < 2_000, "{sent}");
    }

    #[test]
    fn refused_and_garbage_answers_are_told_apart() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        drop(l);
        let t = Duration::from_secs(2);
        assert!(matches!(
            request(addr, "GET", "/", None, t, t),
            Err(RequestError::Refused(_))
        ));
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let server = std::thread::spawn(move || {
            if let Ok((mut c, _)) = l.accept() {
                let mut req = [0u8; 1024];
                let _ = c.read(&mut req);
                let _ = c.write_all(b"SSH-2.0-OpenSSH\r\n\r\n");
            }
        });
        let r = request(addr, "GET", "/", None, t, t);
        assert!(matches!(r, Err(RequestError::Invalid { .. })), "{r:?}");
        server.join().expect("server");
    }

    #[test]
    fn dechunks() {
        assert_eq!(dechunk("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"), "abcde");
    }
}
