//! What the tests of the `jadpo-local` binary share: a free port, a raw HTTP/1.1 exchange, the
//! process started on its defaults (killed when dropped) and the service key it prints.

#![allow(dead_code, reason = "each test binary uses its own part of these helpers")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(39_217)
}

pub fn http(port: u16, request: &str) -> String {
    let mut stream =
        TcpStream::connect(("127.0.0.1", port)).unwrap_or_else(|e| panic!("connect: {e}"));
    stream.write_all(request.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
    }
}

pub fn read_key(child: &mut Child) -> String {
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut lines = BufReader::new(stdout).lines();
    while let Some(Ok(line)) = lines.next() {
        if let Some((_, key)) = line.split_once("shown once): ") {
            let key = key.trim().to_owned();
            std::thread::spawn(move || for _ in lines {});
            return key;
        }
    }
    panic!("jadpo-local printed no service key");
}

/// Starts `jadpo-local` in `dir`, listening on `port`, on its SQLite defaults (no database URL,
/// no public URL from the environment), its output piped for [`read_key`].
pub fn start_local(dir: &Path, port: u16) -> Running {
    start_local_with(dir, port, &[])
}

/// [`start_local`] with more environment variables.
pub fn start_local_with(dir: &Path, port: u16, vars: &[(&str, &str)]) -> Running {
    spawn(&mut local(dir, port, vars))
}

/// [`start_local`] with its log (standard error, warnings and up) piped for the test to read.
pub fn start_local_logged(dir: &Path, port: u16) -> Running {
    spawn(local(dir, port, &[]).stderr(Stdio::piped()))
}

fn local(dir: &Path, port: u16, vars: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_jadpo-local"));
    command
        .current_dir(dir)
        .env("JADPO_LISTEN", format!("127.0.0.1:{port}"))
        .env_remove("JADPO_PUBLIC_URL")
        .env_remove("DATABASE_URL")
        .env_remove("DATABASE_URL_WAREHOUSE")
        .env("RUST_LOG", "warn")
        .envs(vars.iter().copied())
        .stdout(Stdio::piped());
    command
}

fn spawn(command: &mut Command) -> Running {
    Running(command.spawn().unwrap_or_else(|e| panic!("cannot start jadpo-local: {e}")))
}
