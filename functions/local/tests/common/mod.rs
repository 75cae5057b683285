//! What the tests of the `jadpo-local` binary share: a raw HTTP/1.1 exchange, the process
//! started on its defaults on a port it chooses (killed when dropped) and the service key it
//! prints; a free port for chromedriver.

#![allow(dead_code, reason = "each test binary uses its own part of these helpers")]

use std::io::{BufRead, BufReader, Lines, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

/// A port nothing listens on now, for a server that cannot be asked for port 0 (chromedriver).
/// Another process may take it before that server binds it; `jadpo-local` is started on port 0
/// instead and says which port it took.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

pub(crate) fn http(port: u16, request: &str) -> String {
    let mut stream =
        TcpStream::connect(("127.0.0.1", port)).unwrap_or_else(|e| panic!("connect: {e}"));
    stream.write_all(request.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// One exchange, or `None` when the process cannot be reached (down, restarting, crashed).
pub(crate) fn try_http(port: u16, request: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).ok()?;
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    (!response.is_empty()).then_some(response)
}

/// The raw request placing order `n` (customer `c{n}`, one item) under `Idempotency-Key:
/// order-{n}`, authorised by `key`.
pub(crate) fn order_request(key: &str, n: usize) -> String {
    let body = format!(r#"{{"customer": "c{n}", "items": [{{"sku": "A", "qty": 1}}]}}"#);
    format!(
        "POST /actions/place_order HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Idempotency-Key: order-{n}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The order id in an answer to an [`order_request`], if it has one.
pub(crate) fn order_id(answer: &str) -> Option<String> {
    let id = answer.split("\"order_id\":\"").nth(1).and_then(|s| s.split('"').next());
    id.map(str::to_owned)
}

pub(crate) struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
    }
}

/// A running `jadpo-local`, killed when dropped: its process, the port it took and the rest of
/// its standard output after the line saying so.
pub(crate) struct Local {
    pub child: Child,
    pub port: u16,
    stdout: Option<Lines<BufReader<ChildStdout>>>,
}

impl Drop for Local {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

impl Local {
    /// The rest of its standard output (once).
    pub(crate) fn stdout(&mut self) -> Lines<BufReader<ChildStdout>> {
        self.stdout.take().unwrap_or_else(|| panic!("standard output already taken"))
    }
}

/// The service key `jadpo-local` prints once; the rest of its output is drained meanwhile.
pub(crate) fn read_key(local: &mut Local) -> String {
    let mut lines = local.stdout();
    while let Some(Ok(line)) = lines.next() {
        if let Some((_, key)) = line.split_once("shown once): ") {
            let key = key.trim().to_owned();
            std::thread::spawn(move || for _ in lines {});
            return key;
        }
    }
    panic!("jadpo-local printed no service key");
}

/// Starts `jadpo-local` in `dir` on a port of its choosing, on its SQLite defaults (no database
/// URL, no public URL from the environment), its output piped for [`read_key`].
pub(crate) fn start_local(dir: &Path) -> Local {
    start_local_with(dir, &[])
}

/// [`start_local`] with more environment variables.
pub(crate) fn start_local_with(dir: &Path, vars: &[(&str, &str)]) -> Local {
    spawn(&mut local(dir, vars))
}

/// [`start_local`] with its log (standard error, warnings and up) piped for the test to read.
pub(crate) fn start_local_logged(dir: &Path) -> Local {
    spawn(local(dir, &[]).stderr(Stdio::piped()))
}

fn local(dir: &Path, vars: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_jadpo-local"));
    command
        .current_dir(dir)
        .env("JADPO_LISTEN", "127.0.0.1:0")
        .env_remove("JADPO_PUBLIC_URL")
        .env_remove("DATABASE_URL")
        .env_remove("DATABASE_URL_WAREHOUSE")
        .env("RUST_LOG", "warn")
        .envs(vars.iter().copied())
        .stdout(Stdio::piped());
    command
}

/// Spawns `command` and reads its first line, which names the port it listens on.
fn spawn(command: &mut Command) -> Local {
    let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start jadpo-local: {e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let port = first
        .strip_prefix("jadpo-local listening on http://127.0.0.1:")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("jadpo-local did not say where it listens: {first:?}"));
    Local { child, port, stdout: Some(lines) }
}
