//! Headless Chromium (Debian's `chromium`, installed by `.ci/run`) driven by chromedriver over
//! W3C WebDriver, for the hosted pages. Without Chromium, [`Browser::start`] prints a note and
//! returns `None` locally; under CI (`CI=true`) it fails, because a skipped browser proves
//! nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Whether this environment insists on the browser tests (as on PostgreSQL: CI).
fn browser_required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// One headless Chromium, started by its own chromedriver with a fresh profile.
#[derive(Debug)]
pub struct Browser {
    driver: Child,
    /// chromedriver's base URL.
    base: String,
    port: u16,
    session: String,
    client: reqwest::Client,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// A browser, or `None` (with a note) when Chromium is missing and not required.
    pub async fn start() -> Option<Self> {
        let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER]
            .into_iter()
            .filter(|binary| !Path::new(binary).exists())
            .collect();
        if !missing.is_empty() {
            assert!(
                !browser_required(),
                "headless Chromium is required here (CI=true) but {missing:?} is missing: \
                 apt-get install -y chromium chromium-driver"
            );
            // Straight to the process's stderr: the harness captures `eprintln!` of passing
            // tests, and this note must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "NOTE: browser test skipped: {missing:?} not installed \
                 (apt-get install -y chromium chromium-driver)"
            );
            return None;
        }

        // chromedriver picks a free port itself and says which on stdout.
        let mut driver = Command::new(CHROMEDRIVER)
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let stdout = driver.stdout.take().unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Keeps draining stdout so chromedriver never blocks on a full pipe.
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(port) = line
                    .split("started successfully on port ")
                    .nth(1)
                    .and_then(|rest| rest.trim_end_matches('.').trim().parse::<u16>().ok())
                {
                    let _ = sender.send(port);
                }
            }
        });
        let port =
            tokio::task::spawn_blocking(move || receiver.recv_timeout(Duration::from_secs(20)))
                .await
                .unwrap();
        let Ok(port) = port else {
            let _ = driver.kill();
            let _ = driver.wait();
            panic!("chromedriver did not report its port");
        };

        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--no-first-run".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
            "--remote-debugging-port=0".to_owned(),
        ];
        let mut browser = Self {
            driver,
            base: format!("http://127.0.0.1:{port}"),
            port,
            session: String::new(),
            client: reqwest::Client::new(),
            _profile: profile,
        };
        let created = browser
            .call(
                Method::POST,
                "/session",
                Some(json!({
                    "capabilities": {
                        "alwaysMatch": {
                            "browserName": "chrome",
                            "pageLoadStrategy": "normal",
                            "timeouts": {"pageLoad": 30_000, "script": 10_000},
                            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
                        }
                    }
                })),
            )
            .await;
        browser.session = created["sessionId"].as_str().unwrap().to_owned();
        Some(browser)
    }

    /// One WebDriver command; its `value`.
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self
            .client
            .request(method.clone(), format!("{}{path}", self.base))
            .timeout(Duration::from_secs(60));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert!(status.is_success(), "WebDriver {method} {path}: {body}");
        body["value"].clone()
    }

    fn session_path(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    /// Loads `url` and waits for the page (and its images) to load.
    pub async fn navigate(&self, url: &str) {
        self.call(
            Method::POST,
            &self.session_path("/url"),
            Some(json!({"url": url})),
        )
        .await;
    }

    pub async fn execute(&self, script: &str) -> Value {
        self.call(
            Method::POST,
            &self.session_path("/execute/sync"),
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    pub async fn current_url(&self) -> String {
        self.call(Method::GET, &self.session_path("/url"), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits (at most 20 s) until the browser is at `prefix…` with `marker` in the URL.
    pub async fn wait_for_url(&self, prefix: &str, marker: &str) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let url = self.current_url().await;
            if url.starts_with(prefix) && url.contains(marker) {
                return url;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the browser never reached {prefix}…{marker}…; it is at {url}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A platform authenticator with user verification (WebDriver's WebAuthn extension), as a
    /// phone's fingerprint reader would be: `create` and `get` succeed without a person.
    pub async fn add_virtual_authenticator(&self) -> String {
        self.call(
            Method::POST,
            &self.session_path("/webauthn/authenticator"),
            Some(json!({
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": true,
                "hasUserVerification": true,
                "isUserConsenting": true,
                "isUserVerified": true,
            })),
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    /// Clicks the element with `id` (by script: the page's own listeners run).
    pub async fn click(&self, id: &str) {
        let clicked = self
            .execute(&format!(
                "var e = document.getElementById({id:?}); if (!e) return false; e.click(); return true;"
            ))
            .await;
        assert_eq!(clicked, Value::Bool(true), "no element #{id}");
    }

    /// Types `text` into the input with `id`.
    pub async fn fill(&self, id: &str, text: &str) {
        self.execute(&format!(
            "document.getElementById({id:?}).value = {text:?}; return true;"
        ))
        .await;
    }

    /// The text of the element with `id` ("" when there is none).
    pub async fn text_of(&self, id: &str) -> String {
        self.execute(&format!(
            "var e = document.getElementById({id:?}); return e ? e.textContent : '';"
        ))
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    /// Waits (at most 20 s) until the element with `id` contains `needle`; returns its text.
    pub async fn wait_for_text(&self, id: &str, needle: &str) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let text = self.text_of(id).await;
            if text.contains(needle) {
                return text;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "#{id} never said {needle:?}; it says {text:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Browser {
    /// Closes the browser and its chromedriver, also when a test fails: `/shutdown` quits the
    /// sessions chromedriver started (closing Chromium), then chromedriver exits.
    fn drop(&mut self) {
        if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let _ = stream.write_all(
                b"GET /shutdown HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            );
            let _ = stream.read_to_end(&mut Vec::new());
        }
        for _ in 0..50 {
            if let Ok(Some(_)) = self.driver.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
