//! Ports for the servers the tests start (moto, PostgreSQL clusters, `cargo lambda watch`): a
//! free one to hand a server, and waiting until the server listens on it.

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// A port on 127.0.0.1 that nothing listens on now, and that this process has not handed out
/// before: the port is released before the server it is meant for binds it, so two servers
/// started at once by one test process must not be told the same one. (Another process may still
/// take it first: moto and the throwaway PostgreSQL cluster retry on a new port when they do not
/// come up.)
pub fn free_port() -> Result<u16, String> {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    for _ in 0..100 {
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
        let port =
            listener.local_addr().map(|a| a.port()).map_err(|e| format!("no free port: {e}"))?;
        let mut given = GIVEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if given.insert(port) {
            return Ok(port);
        }
    }
    Err("no free port: 100 tries gave ports already handed out".to_owned())
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
