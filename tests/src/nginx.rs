//! nginx from Debian as a round-robin load balancer in front of several server processes, as a
//! deployment would run them (issue 18). Started by the test, stopped when dropped.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const NGINX: &str = "/usr/sbin/nginx";

#[derive(Debug)]
pub struct Nginx {
    pub url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Nginx {
    /// Whether nginx is installed here (`.ci/run` installs it; CI requires it).
    pub fn available() -> bool {
        Path::new(NGINX).exists()
    }

    /// nginx on a free loopback port, passing requests round-robin to `upstreams`.
    pub async fn start(upstreams: &[SocketAddr]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let servers: String = upstreams
            .iter()
            .map(|addr| format!("    server {addr};\n"))
            .collect();
        let path = dir.path().display();
        let config = format!(
            "daemon off;\nworker_processes 1;\npid {path}/nginx.pid;\nerror_log {path}/error.log;\n\
             events {{ worker_connections 512; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {path}/body;\n  proxy_temp_path {path}/proxy;\n\
               fastcgi_temp_path {path}/fastcgi;\n  uwsgi_temp_path {path}/uwsgi;\n  scgi_temp_path {path}/scgi;\n\
               client_max_body_size 32m;\n\
               upstream idconsent {{\n{servers}  }}\n\
               server {{\n    listen 127.0.0.1:{port};\n    location / {{\n      proxy_pass http://idconsent;\n\
                     proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n\
                     proxy_set_header Host $http_host;\n    }}\n  }}\n}}\n"
        );
        let file = dir.path().join("nginx.conf");
        std::fs::write(&file, config).unwrap();
        let child = Command::new(NGINX)
            .arg("-c")
            .arg(&file)
            .arg("-p")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        // Owned at once, so the process is stopped on every path, a failed start included.
        let nginx = Self {
            url: format!("http://127.0.0.1:{port}"),
            child,
            _dir: dir,
        };
        // Ready when it accepts connections.
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return nginx;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let log = std::fs::read_to_string(nginx._dir.path().join("error.log")).unwrap_or_default();
        drop(nginx);
        panic!("nginx did not listen: {log}");
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
