//! The floor of an idle follower in Rust on this machine: a process that receives UDP
//! datagrams and keeps a 100 ms deadline that every datagram moves (what a follower's
//! failure detector does), and nothing else. `docs/bench/idle/floors.sh` runs it beside
//! the C floor (`udpfloor.c`) to split an electd follower's CPU into what the machine,
//! the async runtime and electd itself cost.
//!
//! ```text
//! cargo run --release --example idle_floor -- ADDRESS:PORT tokio|thread
//! ```
//! `tokio`: a task on a two-worker tokio runtime (as `electd run`), the deadline a
//! `tokio::time::Sleep` renewed per datagram; `thread`: one OS thread, a blocking
//! `recv_from` whose read timeout is the deadline. Runs until killed.

use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_millis(100);

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(addr), Some(mode)) = (args.next(), args.next()) else {
        eprintln!("usage: idle_floor ADDRESS:PORT tokio|thread");
        std::process::exit(2);
    };
    let result = match mode.as_str() {
        "thread" => thread(&addr),
        "tokio" => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .and_then(|rt| {
                rt.block_on(async move {
                    match tokio::spawn(async move { task(&addr).await }).await {
                        Ok(r) => r,
                        Err(e) => Err(std::io::Error::other(e)),
                    }
                })
            }),
        other => {
            eprintln!("idle_floor: unknown mode {other:?} (tokio or thread)");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("idle_floor: {e}");
        std::process::exit(1);
    }
}

fn thread(addr: &str) -> std::io::Result<()> {
    let s = std::net::UdpSocket::bind(addr)?;
    let mut buf = vec![0u8; 2048];
    let mut deadline = Instant::now() + DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        // A datagram or the deadline: either way the next deadline is one period on.
        let _ = s.recv_from(&mut buf);
        deadline = Instant::now() + DEADLINE;
    }
}

async fn task(addr: &str) -> std::io::Result<()> {
    let s = tokio::net::UdpSocket::bind(addr).await?;
    let mut buf = vec![0u8; 2048];
    let mut sleep = Box::pin(tokio::time::sleep(DEADLINE));
    loop {
        tokio::select! {
            _ = &mut sleep => {}
            r = s.recv_from(&mut buf) => {
                r?;
                while s.try_recv_from(&mut buf).is_ok() {}
            }
        }
        // A new timer rather than `reset` (see the runtime: a lazily extended tokio
        // timer wakes the thread at its old deadline).
        sleep = Box::pin(tokio::time::sleep(DEADLINE));
    }
}
