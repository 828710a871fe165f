//! A stand-in for the results server's upload route (`POST /api/runs`, the serve slice's
//! contract), for the faults the real server does not make on demand: answering 503 for a
//! while, or storing a run and then dropping the connection before its answer (so the
//! client's retry meets a run that is already there). It keeps runs by id, as the real
//! one: the same id and fingerprint again is "already present", another fingerprint 409.
//! One request per connection (`Connection: close`); a thread per stub, stopped on drop.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What the stub does with the first requests.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// This many requests are answered 503 (nothing stored).
    pub unavailable_first: usize,
    /// This many requests store the run, then close without answering.
    pub drop_answer_first: usize,
    /// The bearer token the stub requires (401 without it).
    pub token: Option<String>,
}

#[derive(Default)]
struct State {
    requests: usize,
    /// run id → (fingerprint, label), in arrival order of first storing.
    runs: BTreeMap<String, (Option<String>, Option<String>)>,
    order: Vec<String>,
}

pub struct Stub {
    pub url: String,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    port: u16,
}

impl Stub {
    pub fn start(faults: Faults) -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a localhost port");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (thread_state, thread_stop) = (state.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if thread_stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    serve_one(stream, &thread_state, &faults);
                }
            }
        });
        Stub {
            url: format!("http://127.0.0.1:{port}"),
            state,
            stop,
            port,
        }
    }

    /// POSTs received, answered or not.
    pub fn requests(&self) -> usize {
        self.state.lock().unwrap().requests
    }

    /// Run ids stored, in the order they were first stored.
    pub fn stored(&self) -> Vec<String> {
        self.state.lock().unwrap().order.clone()
    }

    pub fn label_of(&self, run_id: &str) -> Option<String> {
        self.state.lock().unwrap().runs.get(run_id)?.1.clone()
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A localhost port nothing listens on (bound, then released).
pub fn closed_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

fn serve_one(stream: TcpStream, state: &Mutex<State>, faults: &Faults) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return; // the wake-up connection, or a client that gave up
    }
    let mut length = 0usize;
    let mut authorization = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((&line, ""));
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap_or(0),
            "authorization" => authorization = Some(value.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let mut out = stream;
    let mut state = state.lock().unwrap();
    state.requests += 1;
    let n = state.requests;
    if !request_line.starts_with("POST /api/runs ") {
        return answer(&mut out, 404, r#"{"error":"not found"}"#);
    }
    if let Some(token) = &faults.token
        && authorization.as_deref() != Some(&format!("Bearer {token}"))
    {
        return answer(&mut out, 401, r#"{"error":"no or wrong token"}"#);
    }
    if n <= faults.unavailable_first {
        return answer(&mut out, 503, r#"{"error":"store unavailable"}"#);
    }
    let doc: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(doc) => doc,
        Err(e) => return answer(&mut out, 400, &format!(r#"{{"error":"malformed: {e}"}}"#)),
    };
    let text = |k: &str| doc.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let Some(run_id) = text("run_id") else {
        return answer(&mut out, 400, r#"{"error":"no run_id"}"#);
    };
    let fingerprint = text("fingerprint");
    let status = match state.runs.get(&run_id) {
        Some((stored, _)) if *stored != fingerprint => {
            return answer(
                &mut out,
                409,
                r#"{"error":"same id, different fingerprint"}"#,
            );
        }
        Some(_) => 200,
        None => {
            state
                .runs
                .insert(run_id.clone(), (fingerprint, text("label")));
            state.order.push(run_id.clone());
            201
        }
    };
    if n <= faults.unavailable_first + faults.drop_answer_first {
        return; // stored, but the answer is lost with the connection
    }
    let stored = if status == 201 {
        "new"
    } else {
        "already present"
    };
    answer(
        &mut out,
        status,
        &format!(r#"{{"run_id":"{run_id}","stored":"{stored}","url":"/runs/{run_id}"}}"#),
    );
}

fn answer(out: &mut TcpStream, status: u16, body: &str) {
    let _ = write!(
        out,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = out.flush();
}
