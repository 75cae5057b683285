//! A child process whose output goes to a log file: printed when a test fails while the process
//! is alive, and the process killed when dropped. It is our own child, so no process group is
//! signalled.

use std::process::{Child, Command, Stdio};

/// A running child process and its log.
pub(crate) struct Logged {
    what: String,
    child: Child,
    log: tempfile::NamedTempFile,
}

impl Logged {
    /// Spawns `command` (`what` names it in messages), its stdout and stderr into one log file.
    pub(crate) fn spawn(what: String, command: &mut Command) -> Self {
        let log = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("log file: {e}"));
        let out = log.reopen().unwrap_or_else(|e| panic!("log file: {e}"));
        let err = out.try_clone().unwrap_or_else(|e| panic!("log file: {e}"));
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        Self { what, child, log }
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has exited.
    pub(crate) fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Everything the process has written so far.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Stops the process.
    pub(crate) fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!("---- log of {} ----\n{}", self.what, self.log());
        }
    }
}
