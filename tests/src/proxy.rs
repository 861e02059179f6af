//! A TCP proxy the test controls, between the service and its PostgreSQL server: `cut` drops
//! every connection and refuses new ones (as a crashed or unreachable server would), `restore`
//! lets them through again.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

#[derive(Debug, Default)]
struct State {
    cut: AtomicBool,
    connections: Mutex<Vec<AbortHandle>>,
}

/// A running proxy on 127.0.0.1.
#[derive(Debug)]
pub struct TcpProxy {
    pub addr: SocketAddr,
    state: Arc<State>,
    accept: AbortHandle,
}

impl TcpProxy {
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let shared = state.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if shared.cut.load(Ordering::SeqCst) {
                    // Accepted and closed at once: the client sees the server go away.
                    drop(client);
                    continue;
                }
                let relay = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                shared
                    .connections
                    .lock()
                    .unwrap()
                    .push(relay.abort_handle());
            }
        })
        .abort_handle();
        Self {
            addr,
            state,
            accept,
        }
    }

    /// Drops every open connection and refuses new ones.
    pub fn cut(&self) {
        self.state.cut.store(true, Ordering::SeqCst);
        for connection in self.state.connections.lock().unwrap().drain(..) {
            connection.abort();
        }
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.state.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}
