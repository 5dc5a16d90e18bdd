//! A headless Chromium driven over the DevTools protocol, for the web console's browser tests.
//!
//! The rule: a browser test runs in a real browser (Debian's `chromium`, installed by `.ci/run`)
//! or, outside CI, skips with the package to install; under `CI=true` a missing browser fails
//! the test ([`crate::tool_available`]). Each [`Browser`] is its own process with a fresh
//! profile directory, started with every background network feature off (the test machines'
//! network is closed), and killed when dropped.
//!
//! The client is the few DevTools commands the tests need (navigate, evaluate, click and type
//! as a user would, screenshot), sent over the page's flattened session on one WebSocket. Not
//! `chromiumoxide` or `headless_chrome`: both compile bindings of the whole protocol (hundreds of
//! thousands of generated lines, minutes of build on two cores) for these eight commands.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, tungstenite::Message};

/// How long one DevTools command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// A running headless Chromium with one page open.
pub struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
}

impl Browser {
    /// Starts `chromium` (headless, 1280×900) with a blank page; `None` (after saying why) when
    /// it is not installed and the run is not CI.
    ///
    /// # Panics
    /// When Chromium is installed but does not start or answer.
    pub async fn launch() -> Option<Browser> {
        if !crate::tool_available("chromium", "chromium") {
            return None;
        }
        let profile = tempfile::tempdir().expect("a profile directory for chromium");
        let mut child = Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--window-size=1280,900",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting chromium");
        let stderr = child.stderr.take().expect("chromium's stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent && let Some(url) = line.strip_prefix("DevTools listening on ") {
                    let _ = tx.send(url.trim().to_string());
                    sent = true;
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("chromium printed no DevTools address within 30 s");
        let (socket, _) = tokio_tungstenite::connect_async(url.as_str())
            .await
            .expect("connecting to chromium's DevTools socket");
        let mut browser = Browser {
            child,
            _profile: profile,
            socket,
            session: String::new(),
            next_id: 0,
        };
        let target = browser
            .call("Target.createTarget", json!({"url": "about:blank"}))
            .await;
        let target_id = target["targetId"].as_str().expect("a target id").to_string();
        let attached = browser
            .call(
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
            )
            .await;
        browser.session = attached["sessionId"].as_str().expect("a session id").to_string();
        browser
            .call(
                "Emulation.setDeviceMetricsOverride",
                json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
            )
            .await;
        Some(browser)
    }

    /// Sends one command (to the page's session once attached) and returns its result.
    ///
    /// # Panics
    /// When Chromium answers with an error or not within 30 s.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let answer = self.answer(method, params).await;
        assert!(answer.get("error").is_none(), "{method}: {}", answer["error"]);
        answer["result"].clone()
    }

    /// Sends one DevTools command and returns chromium's whole answer (`result` or `error`).
    async fn answer(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .await
            .expect("sending a DevTools command");
        tokio::time::timeout(COMMAND_TIMEOUT, async {
            while let Some(frame) = self.socket.next().await {
                let frame = frame.expect("reading the DevTools socket");
                let Message::Text(text) = frame else { continue };
                let value: Value = serde_json::from_str(text.as_str()).expect("DevTools JSON");
                if value["id"].as_u64() == Some(id) {
                    return value;
                }
            }
            panic!("chromium closed the DevTools socket");
        })
        .await
        .unwrap_or_else(|_| panic!("{method}: no answer from chromium within 30 s"))
    }

    /// Evaluates `expression` in the page (promises awaited) and returns its value.
    ///
    /// # Panics
    /// When the expression throws.
    pub async fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {}",
            result["exceptionDetails"]
        );
        result["result"]["value"].clone()
    }

    /// Waits until `condition` (a JavaScript expression) is true, up to `timeout`.
    ///
    /// # Panics
    /// When it is still false after `timeout`, naming `what`.
    pub async fn wait_until(&mut self, what: &str, condition: &str, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.eval(&format!("!!({condition})")).await == json!(true) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out after {timeout:?} waiting for {what} ({condition})"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Opens `url` and waits for the page to finish loading.
    pub async fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url})).await;
        self.wait_for_load(url).await;
    }

    /// Waits for a page at `url` to have loaded (after a navigation or a form submission).
    pub async fn wait_for_load(&mut self, what: &str) {
        self.wait_until(
            &format!("{what} to load"),
            "document.readyState === 'complete' && location.href !== 'about:blank'",
            Duration::from_secs(30),
        )
        .await;
    }

    /// Clicks the centre of the first element matching `selector` with the mouse, as a user
    /// does (the element is scrolled into view first; a link wrapped over lines is clicked on its
    /// first line).
    ///
    /// # Panics
    /// When nothing matches.
    pub async fn click(&mut self, selector: &str) {
        let quoted = serde_json::to_string(selector).expect("a JSON string");
        let rect = self
            .eval(&format!(
                "(() => {{ const e = document.querySelector({quoted}); if (!e) return null; e.scrollIntoView({{block: 'center'}}); const r = e.getClientRects()[0] || e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
            ))
            .await;
        let (Some(x), Some(y)) = (rect[0].as_f64(), rect[1].as_f64()) else {
            panic!("nothing on the page matches {selector}");
        };
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            )
            .await;
        }
    }

    /// Presses a key (`Tab`, `Enter`) as a keyboard does.
    pub async fn press(&mut self, key: &str) {
        let code = match key {
            "Tab" => 9,
            "Enter" => 13,
            _ => 0,
        };
        for kind in ["rawKeyDown", "keyUp"] {
            let mut event = json!({"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code});
            if key == "Enter" && kind == "rawKeyDown" {
                event["text"] = json!("\r");
                event["type"] = json!("keyDown");
            }
            self.call("Input.dispatchKeyEvent", event).await;
        }
    }

    /// Types `text` into the focused element.
    pub async fn type_text(&mut self, text: &str) {
        self.call("Input.insertText", json!({"text": text})).await;
    }

    /// Writes a PNG of the whole page to `path` (its directory is created). A page being
    /// replaced (a live update renders the page again) has no layout for a moment, which chromium
    /// refuses to capture ("0 width"): asked again for up to 5 s.
    pub async fn screenshot(&mut self, path: &Path) {
        let params = json!({"format": "png", "captureBeyondViewport": true});
        let mut answer = self.answer("Page.captureScreenshot", params.clone()).await;
        for _ in 0..20 {
            let no_layout = answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("0 width") || m.contains("0 height"));
            if !no_layout {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            answer = self.answer("Page.captureScreenshot", params.clone()).await;
        }
        assert!(
            answer.get("error").is_none(),
            "Page.captureScreenshot: {}",
            answer["error"]
        );
        let shot = &answer["result"];
        let data = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            shot["data"].as_str().expect("screenshot data"),
        )
        .expect("base64 screenshot");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("creating the screenshot directory");
        }
        std::fs::write(path, data).expect("writing the screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
