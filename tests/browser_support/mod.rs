//! A headless Chromium the tests drive over the DevTools protocol (CDP), so a page is checked
//! as a user meets it: its scripts run, its charts are laid out, the mouse hovers a point.
//! `--dump-dom` could only read the DOM once after load; this talks to a live page.
//!
//! Chromium starts with `--remote-debugging-port=0` (it picks a free port and writes it to
//! `DevToolsActivePort` in its profile directory), one websocket to the browser target, and
//! one page attached in flat mode: every command carries the page's `sessionId`.
//! Without Chromium, [`Browser::start`] returns `None` after printing why, unless
//! `STACKBENCH_REQUIRE_TOOLS=1`, where it fails the test instead.
//!
//! Usage: `let Some(mut b) = Browser::start() else { return };`, then `b.navigate(url)`,
//! `b.eval(js)`, `b.wait_for(js)`, `b.hover(x, y)`, `b.screenshot(path)`.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tungstenite::{Message, WebSocket};

/// How long one protocol answer (and a page load) may take: generous, since other test
/// binaries compile and run beside this one; nothing asserts on time.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(180);
/// How long one read of the socket blocks before the deadline is checked again.
const READ_POLL: Duration = Duration::from_secs(5);

/// The viewport every page is laid out in (screenshots use it too).
pub const VIEWPORT: (u32, u32) = (1280, 900);

pub struct Browser {
    child: Child,
    socket: WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    /// Events received while waiting for answers (method, params), oldest first.
    events: Vec<(String, Value)>,
    _profile: tempfile::TempDir,
}

/// The chromium binary: `STACKBENCH_CHROMIUM` when set, else `chromium` on the PATH.
fn chromium_binary() -> String {
    std::env::var("STACKBENCH_CHROMIUM").unwrap_or_else(|_| "chromium".into())
}

fn required() -> bool {
    std::env::var("STACKBENCH_REQUIRE_TOOLS").is_ok_and(|v| v == "1")
}

fn skip(why: &str) -> Option<Browser> {
    assert!(
        !required(),
        "chromium is required (STACKBENCH_REQUIRE_TOOLS=1): {why}"
    );
    eprintln!("SKIPPED: {why} (ci/test.sh installs chromium)");
    None
}

impl Browser {
    /// A fresh headless Chromium with one blank page, or `None` (with a message) when
    /// Chromium is not installed.
    pub fn start() -> Option<Browser> {
        let binary = chromium_binary();
        let present = Command::new(&binary)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !present {
            return skip(&format!("{binary} is not installed"));
        }
        let profile = tempfile::tempdir().expect("a temporary profile directory");
        let child = Command::new(&binary)
            .args(stackbench::report::pdf::HEADLESS_FLAGS)
            .args(["--remote-debugging-port=0", "--remote-allow-origins=*"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!("--window-size={},{}", VIEWPORT.0, VIEWPORT.1))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {binary}: {e}"));
        Some(Browser::connect(child, profile))
    }

    fn connect(mut child: Child, profile: tempfile::TempDir) -> Browser {
        let url = devtools_url(&mut child, profile.path());
        let rest = url
            .strip_prefix("ws://")
            .unwrap_or_else(|| panic!("unexpected DevTools URL {url}"));
        let host = rest.split('/').next().unwrap_or_default();
        let stream = TcpStream::connect(host).unwrap_or_else(|e| panic!("connect {host}: {e}"));
        stream
            .set_read_timeout(Some(READ_POLL))
            .expect("socket timeout");
        let (socket, _) = tungstenite::client::client(url.as_str(), stream)
            .unwrap_or_else(|e| panic!("websocket handshake with {url}: {e}"));
        let mut browser = Browser {
            child,
            socket,
            session: String::new(),
            next_id: 0,
            events: Vec::new(),
            _profile: profile,
        };
        let target = browser.browser_call("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"]
            .as_str()
            .expect("a target id")
            .to_string();
        let attached = browser.browser_call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        browser.call("Page.enable", json!({}));
        browser.call("Runtime.enable", json!({}));
        // Browser-side errors (a CSP violation, a failed load) arrive as log entries.
        browser.call("Log.enable", json!({}));
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": VIEWPORT.0, "height": VIEWPORT.1, "deviceScaleFactor": 1, "mobile": false}),
        );
        browser
    }

    /// A command to the browser target itself (no session).
    fn browser_call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None)
    }

    /// A command to the page; panics with the protocol's error when it fails.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(method, params, Some(&session))
    }

    fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .unwrap_or_else(|e| panic!("sending {method}: {e}"));
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            assert!(Instant::now() < deadline, "no answer to {method}");
            let text = match self.socket.read() {
                Ok(Message::Text(t)) => t.to_string(),
                Ok(_) => continue,
                // The socket's read timeout: a busy page (or a loaded machine) is slow,
                // not gone; the deadline above decides. A read a signal interrupted (a
                // child process of the test ending) is tried again the same way.
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    continue;
                }
                Err(e) => panic!("reading the answer to {method}: {e}"),
            };
            let Ok(value) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            if value["id"].as_u64() == Some(id) {
                if let Some(error) = value.get("error") {
                    panic!("{method} failed: {error}");
                }
                return value["result"].clone();
            }
            if let Some(event) = value["method"].as_str() {
                self.events
                    .push((event.to_string(), value["params"].clone()));
            }
        }
    }

    /// Script run in every document before its own scripts (a trap for `alert`, say).
    pub fn add_init_script(&mut self, source: &str) {
        self.call(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": source}),
        );
    }

    /// Loads `url` and waits until the document and its scripts have loaded.
    pub fn navigate(&mut self, url: &str) {
        self.events.clear();
        let answer = self.call("Page.navigate", json!({"url": url}));
        if let Some(error) = answer.get("errorText") {
            panic!("navigating to {url}: {error}");
        }
        self.wait_for("document.readyState === 'complete'");
    }

    /// The value of `expression` (awaited when it is a promise), as JSON; panics with the
    /// page's exception when it throws.
    pub fn eval(&mut self, expression: &str) -> Value {
        let answer = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(exception) = answer.get("exceptionDetails") {
            panic!("`{expression}` threw: {exception}");
        }
        answer["result"]["value"].clone()
    }

    /// Polls `expression` until it is truthy (panics after [`ANSWER_TIMEOUT`]).
    pub fn wait_for(&mut self, expression: &str) {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            let value = self.eval(&format!("!!({expression})"));
            if value == json!(true) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "`{expression}` never became true; page errors: {:?}",
                self.page_errors()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Moves the mouse to (x, y) in CSS pixels of the viewport.
    pub fn hover(&mut self, x: f64, y: f64) {
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": x, "y": y}),
        );
    }

    /// Clicks at (x, y).
    pub fn click(&mut self, x: f64, y: f64) {
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// A PNG of the whole page (beyond the viewport) written to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        use base64::Engine;
        let answer = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let data = answer["data"].as_str().expect("screenshot data");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("screenshot base64");
        std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }

    /// Uncaught exceptions, console errors and browser errors (CSP violations, failed
    /// loads) the page has reported since the last navigation.
    pub fn page_errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|(method, params)| match method.as_str() {
                "Runtime.exceptionThrown" => Some(params["exceptionDetails"].to_string()),
                "Runtime.consoleAPICalled" if params["type"] == "error" => {
                    Some(params["args"].to_string())
                }
                "Log.entryAdded" if params["entry"]["level"] == "error" => Some(format!(
                    "{} ({})",
                    params["entry"]["text"], params["entry"]["url"]
                )),
                _ => None,
            })
            .collect()
    }

    /// Whether the page opened a dialog (`alert`, `confirm`, `prompt`).
    pub fn dialog_opened(&self) -> bool {
        self.events
            .iter()
            .any(|(method, _)| method == "Page.javascriptDialogOpening")
    }
}

/// The browser's websocket URL, from `DevToolsActivePort` (port, then path) in its profile,
/// or from the "DevTools listening on" line on its stderr, whichever comes first.
fn devtools_url(child: &mut Child, profile: &Path) -> String {
    let stderr = child.stderr.take().expect("chromium's stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.split("DevTools listening on ").nth(1) {
                let _ = tx.send(url.trim().to_string());
            }
            // Keep draining so Chromium never blocks on a full pipe.
        }
    });
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    loop {
        if let Ok(url) = rx.try_recv() {
            return url;
        }
        if let Ok(text) = std::fs::read_to_string(profile.join("DevToolsActivePort"))
            && let [port, path, ..] = text.lines().collect::<Vec<_>>()[..]
        {
            return format!("ws://127.0.0.1:{port}{path}");
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("chromium exited before listening: {status}");
        }
        assert!(Instant::now() < deadline, "chromium never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.socket.close(None);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The page model inside a page written by `render_page` (`report.html`, a served page):
/// the JSON of `<script type="application/json" id="page-data">`, for tests that check
/// what a page shows without a browser.
pub fn page_data(html: &str) -> Value {
    const OPEN: &str = "<script type=\"application/json\" id=\"page-data\">";
    let start = html.find(OPEN).expect("the page has its page data") + OPEN.len();
    let end = start + html[start..].find("</script>").expect("the page data ends");
    serde_json::from_str(&html[start..end]).expect("the page data is JSON")
}
