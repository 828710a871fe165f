//! Times one running `stackbench serve` for BENCHMARKS.md (`scripts/serve/scale.sh`): the
//! JSON history of one benchmark (`GET /api/history/ID`, a plain HTTP/1.1 request per
//! repeat, wall time from connect to the last byte) and its page in headless Chromium
//! (navigation start to the page built and to its first painted frame, as the page
//! script records them in `window.stackbench.readyMs` / `paintedMs`).
//!
//! Usage: cargo run --release --example serve_scale -- http://127.0.0.1:PORT BENCH_ID [REPEATS]
//! Prints one line per measure: min, median and max over the repeats, and the size.

#[path = "../tests/browser_support/mod.rs"]
mod browser_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

/// `GET path` on `host:port`, answering (status line, body length, seconds).
fn get(host: &str, path: &str) -> Result<(String, usize, f64), String> {
    let start = Instant::now();
    let mut stream = TcpStream::connect(host).map_err(|e| format!("connect {host}: {e}"))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nAccept: application/json\r\n\r\n"
    )
    .map_err(|e| format!("send: {e}"))?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .map_err(|e| format!("read: {e}"))?;
    let seconds = start.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&answer);
    let status = text.lines().next().unwrap_or("").to_string();
    let body = text.split_once("\r\n\r\n").map_or(0, |(_, b)| b.len());
    Ok((status, body, seconds))
}

/// min / median / max of `values`, in milliseconds.
fn summary(values: &mut [f64]) -> String {
    values.sort_by(f64::total_cmp);
    let median = values[values.len() / 2];
    format!(
        "min {:.1} ms, median {:.1} ms, max {:.1} ms over {}",
        values[0],
        median,
        values[values.len() - 1],
        values.len()
    )
}

/// Percent-encodes a benchmark id for a path (it holds `/` and maybe spaces).
fn encode(id: &str) -> String {
    id.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: serve_scale http://127.0.0.1:PORT BENCH_ID [REPEATS]".into());
    }
    let base = args[1].trim_end_matches('/');
    let host = base
        .strip_prefix("http://")
        .ok_or_else(|| format!("{base}: only http:// is measured"))?;
    let id = encode(&args[2]);
    let repeats: usize = match args.get(3) {
        Some(n) => n.parse().map_err(|e| format!("REPEATS {n}: {e}"))?,
        None => 20,
    };

    let api_path = format!("/api/history/{id}");
    // One warm-up request: the first one opens the store and maps its pages.
    let (status, bytes, _) = get(host, &api_path)?;
    if !status.contains(" 200 ") {
        return Err(format!("GET {api_path}: {status}"));
    }
    let mut api = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        api.push(get(host, &api_path)?.2 * 1e3);
    }
    println!("api {api_path}: {} ({bytes} bytes)", summary(&mut api));

    let Some(mut browser) = browser_support::Browser::start() else {
        return Err("chromium is not installed".into());
    };
    let page = format!("{base}/history/{id}");
    let (mut built, mut painted) = (Vec::new(), Vec::new());
    for _ in 0..repeats.min(10) {
        browser.navigate(&page);
        browser.wait_for("window.stackbench && window.stackbench.paintedMs");
        let times = browser.eval(
            "JSON.stringify({built: window.stackbench.readyMs, painted: window.stackbench.paintedMs, error: window.stackbench.error || null, points: Object.keys(window.stackbench.charts).length})",
        );
        let times: serde_json::Value =
            serde_json::from_str(times.as_str().unwrap_or("{}")).map_err(|e| e.to_string())?;
        if !times["error"].is_null() {
            return Err(format!("{page}: {}", times["error"]));
        }
        built.push(times["built"].as_f64().unwrap_or(f64::NAN));
        painted.push(times["painted"].as_f64().unwrap_or(f64::NAN));
    }
    println!("page {page} built: {}", summary(&mut built));
    println!("page {page} painted: {}", summary(&mut painted));
    Ok(())
}
