//! A real `stackbench serve` process on a free localhost port, and a plain HTTP/1.1 client
//! over `TcpStream`: requests go out byte for byte as written (hostile paths are not
//! normalised, bodies may lie about their length), so the tests see what a browser or a
//! runner would.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub const STACKBENCH: &str = env!("CARGO_BIN_EXE_stackbench");
pub const ANALYZE: &str = env!("CARGO_BIN_EXE_analyze-trends");
pub const TOKEN: &str = "test-token-0123456789";

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A running server; killed (by its own handle) when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
    pub results: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// `stackbench serve --results DIR --bind 127.0.0.1:0 EXTRA...`, once it prints its URL.
    pub fn start(results: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(STACKBENCH)
            .args(["serve", "--bind", "127.0.0.1:0", "--results"])
            .arg(results)
            .args(extra)
            .env_remove("STACKBENCH_SERVE_TOKEN")
            .env_remove("STACKBENCH_STORE")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("stackbench serve starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the server prints its URL");
        let port = line
            .split("http://127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        Server {
            child,
            port,
            results: results.to_path_buf(),
        }
    }

    /// A writable server: the token in a file.
    pub fn writable(results: &Path) -> Server {
        let token_file = results.with_extension("token");
        std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
        Server::start(
            results,
            &["--write-token-file", token_file.to_str().unwrap()],
        )
    }

    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, &[], b"")
    }

    pub fn post_json(&self, path: &str, body: &[u8]) -> Response {
        let auth = format!("Bearer {TOKEN}");
        self.request(
            "POST",
            path,
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            body,
        )
    }

    /// One request on a fresh connection; `Content-Length` is added unless given.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        let mut head =
            format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        let framed = headers.iter().any(|(n, _)| {
            n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding")
        });
        if !framed {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream.write_all(head.as_bytes()).expect("send head");
        // A server that refuses early may close before the body is sent: not an error here.
        let _ = stream.write_all(body);
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        Response::parse(&raw)
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    fn parse(raw: &[u8]) -> Response {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(raw)));
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let mut body = raw[split + 4..].to_vec();
        if headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"))
        {
            body = dechunk(&body);
        }
        Response {
            status,
            headers,
            body,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&body[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = end + 2;
        out.extend_from_slice(&body[start..start + size]);
        body = &body[start + size + 2..];
    }
}

pub fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(root())
        .env_remove("STACKBENCH_STORE")
        .output()
        .expect("the binary runs")
}

/// A run file as `analyze-trends record` writes it (of the Criterion 0.8 fixture), read
/// back as JSON so a test can make variants of it.
pub fn recorded_run(scratch: &Path) -> serde_json::Value {
    let results = scratch.join("recorder");
    let fixture = root().join("tests/fixtures/criterion-0.8");
    let out = run(
        ANALYZE,
        &[
            "record",
            "--criterion-dir",
            fixture.to_str().unwrap(),
            "--results",
            results.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "record: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = std::fs::read_dir(results.join("runs"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a run file");
    serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap()
}

/// `run` under another id (and, when given, other hardware).
pub fn variant(run: &serde_json::Value, id: &str, fingerprint: Option<&str>) -> serde_json::Value {
    let mut run = run.clone();
    run["run_id"] = id.into();
    if let Some(f) = fingerprint {
        run["fingerprint"] = f.into();
    }
    run
}

pub fn bytes(value: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}
