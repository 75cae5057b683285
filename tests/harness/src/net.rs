//! Ports for the servers the tests start (moto, PostgreSQL clusters, `cargo lambda watch`): a
//! free one to hand a server, and waiting until the server listens on it.

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// A port on 127.0.0.1 that nothing listens on now.
pub fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| format!("no free port: {e}"))
}

/// Waits until something accepts connections on `port`, or panics naming `what`.
pub fn wait_for_port(port: u16, what: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not listen on port {port} within {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
