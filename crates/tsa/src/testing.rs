//! A real RFC 3161 authority for tests: OpenSSL's `ts -reply` (the `openssl` command) behind a
//! small HTTP/1.1 listener on loopback, with its own root and TSA certificate made at start.
//! It can be taken down and brought back, to test what waits for trusted time.
//! Test support: a failure to set it up panics with what failed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The policy OpenSSL stamps under.
pub const TEST_POLICY: &str = "1.3.6.1.4.1.55555.1.1";

#[derive(Debug)]
pub struct OpensslTsa {
    dir: tempfile::TempDir,
    url: String,
    down: Arc<AtomicBool>,
    answered: Arc<AtomicUsize>,
    replay: Arc<Replay>,
}

/// A replaying authority answers every request with the last genuine reply.
#[derive(Debug, Default)]
struct Replay {
    on: AtomicBool,
    last: Mutex<Option<Vec<u8>>>,
}

impl OpensslTsa {
    /// Makes the certificates and listens on an ephemeral loopback port.
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        make_certificates(dir.path());
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/tsa", listener.local_addr().expect("addr"));
        let down = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicUsize::new(0));
        let replay = Arc::new(Replay::default());
        let state = State {
            config: dir.path().join("tsa.cnf"),
            down: down.clone(),
            answered: answered.clone(),
            replay: replay.clone(),
        };
        std::thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(stream) = stream else { continue };
                let _ = serve(stream, &state, n);
            }
        });
        Self {
            dir,
            url,
            down,
            answered,
            replay,
        }
    }

    /// While on, every request gets the last genuine reply again (a replayed answer).
    pub fn set_replaying(&self, on: bool) {
        self.replay.on.store(on, Ordering::SeqCst);
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The PEM of the root that issued the TSA's certificate (what the operator trusts).
    pub fn root_pem_path(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    pub fn root_pem(&self) -> Vec<u8> {
        std::fs::read(self.root_pem_path()).expect("root pem")
    }

    /// While down, every request gets HTTP 503.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Tokens issued so far.
    pub fn answered(&self) -> usize {
        self.answered.load(Ordering::SeqCst)
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command (Debian package openssl)");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn make_certificates(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut root = vec!["req", "-x509"];
    root.extend(ec);
    root.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "3650",
        "-subj",
        "/CN=idconsent test TSA root",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    openssl(dir, &root);
    let mut request = vec!["req", "-new"];
    request.extend(ec);
    request.extend([
        "-keyout",
        "tsa.key",
        "-out",
        "tsa.csr",
        "-subj",
        "/CN=idconsent test TSA",
    ]);
    openssl(dir, &request);
    std::fs::write(
        dir.join("tsa.ext"),
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n\
         extendedKeyUsage=critical,timeStamping\n",
    )
    .expect("ext");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "tsa.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-set_serial",
            "2",
            "-days",
            "3650",
            "-extfile",
            "tsa.ext",
            "-out",
            "tsa.pem",
        ],
    );
    std::fs::write(dir.join("serial"), "01\n").expect("serial");
    let d = dir.display();
    std::fs::write(
        dir.join("tsa.cnf"),
        format!(
            "[ tsa ]\ndefault_tsa = tsa_config\n[ tsa_config ]\nserial = {d}/serial\n\
             crypto_device = builtin\nsigner_cert = {d}/tsa.pem\ncerts = {d}/ca.pem\n\
             signer_key = {d}/tsa.key\nsigner_digest = sha256\ndefault_policy = {TEST_POLICY}\n\
             digests = sha256, sha384, sha512\naccuracy = secs:1\nordering = no\n\
             tsa_name = no\ness_cert_id_chain = no\ness_cert_id_alg = sha256\n"
        ),
    )
    .expect("config");
}

struct State {
    config: PathBuf,
    down: Arc<AtomicBool>,
    answered: Arc<AtomicUsize>,
    replay: Arc<Replay>,
}

fn serve(mut stream: TcpStream, state: &State, n: usize) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut query = vec![0; length.min(64 * 1024)];
    reader.read_exact(&mut query)?;
    if state.down.load(Ordering::SeqCst) {
        return stream.write_all(
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        );
    }
    let replayed = state
        .replay
        .on
        .load(Ordering::SeqCst)
        .then(|| state.replay.last.lock().expect("lock").clone())
        .flatten();
    if let Some(reply) = replayed {
        return answer(&mut stream, &reply);
    }
    let config = &state.config;
    let dir = config.parent().expect("dir");
    let (query_path, reply_path) = (dir.join(format!("q{n}.tsq")), dir.join(format!("r{n}.tsr")));
    std::fs::write(&query_path, &query)?;
    let status = Command::new("openssl")
        .args(["ts", "-reply", "-config"])
        .arg(config)
        .arg("-queryfile")
        .arg(&query_path)
        .arg("-out")
        .arg(&reply_path)
        .output()?;
    let reply = if status.status.success() {
        std::fs::read(&reply_path)?
    } else {
        return stream.write_all(
            b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        );
    };
    state.answered.fetch_add(1, Ordering::SeqCst);
    *state.replay.last.lock().expect("lock") = Some(reply.clone());
    answer(&mut stream, &reply)
}

fn answer(stream: &mut TcpStream, reply: &[u8]) -> std::io::Result<()> {
    stream.write_all(
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/timestamp-reply\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n",
            reply.len()
        )
        .as_bytes(),
    )?;
    stream.write_all(reply)
}
