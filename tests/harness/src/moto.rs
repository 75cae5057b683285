//! The SQS and Secrets Manager APIs for tests: moto's server (`moto_server`), one per test, on a free port.
//!
//! It is found at `$JADPO_MOTO_SERVER`, else in the project's `.venv` (which `make test`
//! creates), else on `PATH`; a test that needs it fails with a message saying how to get it.
//! moto speaks the JSON protocol `aws-sdk-sqs` uses; it needs dummy credentials and a region,
//! which [`MotoServer::env`] lists for child processes. It is for correctness, never load.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::net::{free_port, wait_for_port};

/// How many servers [`MotoServer::start`] tries before it gives up.
const STARTS: usize = 3;

/// A running moto server, stopped when dropped.
pub struct MotoServer {
    child: Child,
    port: u16,
}

fn find() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("JADPO_MOTO_SERVER") {
        return Some(PathBuf::from(path));
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = workspace.join(".venv/bin/moto_server");
    if venv.is_file() {
        return Some(venv);
    }
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p).map(|d| d.join("moto_server")).find(|c| c.is_file())
    })
}

impl MotoServer {
    /// Starts a server; panics with a clear message when moto is missing or does not answer.
    pub fn start() -> Self {
        let Some(program) = find() else {
            panic!(
                "these tests need the SQS API from moto: run `make prereqs` (it installs moto[server] \
                 into .venv), or set JADPO_MOTO_SERVER to a moto_server binary"
            );
        };
        let mut failures = Vec::new();
        for _ in 0..STARTS {
            let port = free_port().unwrap_or_else(|e| panic!("moto: {e}"));
            let child = Command::new(&program)
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
            let mut server = Self { child, port };
            wait_for_port(port, "moto_server", Duration::from_secs(30));
            match server.warm_up() {
                Ok(()) => return server,
                Err(why) => failures.push(why),
            }
        }
        panic!("moto_server did not start: {}", failures.join("; "))
    }

    /// Moto loads a service's backend on its first request, which takes seconds on a busy
    /// machine; one throwaway SQS call here keeps that out of the tests' own requests (and their
    /// SDK timeouts). A server still coming up may reset the connection: asked again for up to
    /// 30 s. A server that exited (its port taken by another test's in the meantime) is an
    /// error, and [`MotoServer::start`] starts another on a new port.
    fn warm_up(&mut self) -> Result<(), String> {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("moto_server on port {} exited ({status})", self.port));
            }
            match self.ask() {
                // The answer must be moto's: with its port taken by another test's server before
                // moto bound it, that server may answer while moto has exited.
                Ok(()) if matches!(self.child.try_wait(), Ok(None)) => return Ok(()),
                Ok(()) => continue,
                Err(why) if std::time::Instant::now() >= deadline => return Err(why),
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// One ListQueues call.
    fn ask(&self) -> Result<(), String> {
        use std::io::{Read, Write};
        let request = format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/x-amz-json-1.0\r\n\
             X-Amz-Target: AmazonSQS.ListQueues\r\nAuthorization: AWS4-HMAC-SHA256 \
             Credential=testing/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, \
             Signature=0\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}",
            self.port
        );
        let answered = TcpStream::connect(("127.0.0.1", self.port)).and_then(|mut stream| {
            stream.set_read_timeout(Some(Duration::from_secs(60)))?;
            stream.write_all(request.as_bytes())?;
            let mut answer = Vec::new();
            stream.read_to_end(&mut answer)?;
            Ok(answer)
        });
        match answered {
            // ListQueues answered by SQS's JSON protocol: 200 and a JSON body.
            Ok(answer) if answer.starts_with(b"HTTP/1.1 200") && answer.ends_with(b"}") => Ok(()),
            Ok(answer) => Err(format!(
                "moto_server on port {} answered a warm-up request with {:?}",
                self.port,
                String::from_utf8_lossy(&answer)
            )),
            Err(e) => Err(format!(
                "moto_server on port {} did not answer a warm-up request: {e}",
                self.port
            )),
        }
    }

    /// The endpoint URL (`AWS_ENDPOINT_URL_SQS`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The environment a child process needs to reach this server: endpoint, region and dummy
    /// credentials.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL_SQS", self.endpoint()),
            ("AWS_ENDPOINT_URL_SECRETS_MANAGER", self.endpoint()),
            ("AWS_ENDPOINT_URL_S3", self.endpoint()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ACCESS_KEY_ID", "testing".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "testing".to_owned()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        ]
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
