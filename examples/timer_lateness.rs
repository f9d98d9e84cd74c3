//! How late a deadline fires on this machine: tokio's `sleep_until` (millisecond ticks)
//! beside the runtime's [`electd::daemon::timer::Deadline`] (a timerfd on Linux).
//!
//! ```text
//! cargo run --release --example timer_lateness [SAMPLES]
//! ```
//! Each sample waits for a deadline 5..15 ms ahead (a random sub-millisecond phase,
//! as a failure detector's deadline has) on a two-worker tokio runtime, as in
//! `electd run`, and records how long after the deadline the task ran again.

use electd::daemon::timer::Deadline;
use std::time::Duration;
use tokio::time::Instant;

fn main() {
    let samples: usize = match std::env::args().nth(1).map(|s| s.parse()) {
        None => 500,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: timer_lateness [SAMPLES]   (a positive count)");
            std::process::exit(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("timer_lateness: cannot start a tokio runtime: {e}");
            std::process::exit(1);
        }
    };
    rt.block_on(async {
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut ahead = move || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            Duration::from_micros(5_000 + (seed >> 33) % 10_000)
        };
        let mut tokio_late = Vec::with_capacity(samples);
        for _ in 0..samples {
            let at = Instant::now() + ahead();
            tokio::time::sleep_until(at).await;
            tokio_late.push(Instant::now() - at);
        }
        let mut timer = Deadline::new(Instant::now() + Duration::from_secs(3600), true);
        let kind = if timer.is_precise() {
            "Deadline (timerfd)"
        } else {
            "Deadline (no timerfd: tokio)"
        };
        let mut deadline_late = Vec::with_capacity(samples);
        for _ in 0..samples {
            let at = Instant::now() + ahead();
            timer.set(at);
            timer.wait().await;
            deadline_late.push(Instant::now() - at);
        }
        println!("lateness over {samples} deadlines, ms: mean, median, p90, p99, max");
        report("tokio sleep_until", tokio_late);
        report(kind, deadline_late);
    });
}

fn report(what: &str, mut late: Vec<Duration>) {
    late.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let q = |p: f64| ms(late[((late.len() - 1) as f64 * p).round() as usize]);
    let mean = late.iter().map(|&d| ms(d)).sum::<f64>() / late.len() as f64;
    println!(
        "{what:<28} {mean:.3} {:.3} {:.3} {:.3} {:.3}",
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0)
    );
}
