//! What the verbs print on standard output, and a closed pipe.
//!
//! Why: `println!` panics when its reader has gone (`jadpo keys list | head -1`, exit 101 and a
//! panic message), where a Unix tool stops quietly. Every line goes through [`line`]: a reader
//! that closed the pipe ends the command at once with success, as `head` meant; any other write
//! failure is an error message and a failure exit. A verb that writes through its own writer
//! (`export`) returns the error, and `main` treats a broken pipe in it the same way
//! ([`closed_pipe`]).

use std::fmt;
use std::io::{self, Write};

/// Prints one line (the `say!` macro's body).
pub(crate) fn line(args: fmt::Arguments<'_>) {
    write(|out| writeln!(out, "{args}"));
}

/// Prints `text` as it is, with no line ending added.
pub(crate) fn text(text: &str) {
    write(|out| out.write_all(text.as_bytes()));
}

fn write(put: impl FnOnce(&mut io::StdoutLock<'static>) -> io::Result<()>) {
    let mut out = io::stdout().lock();
    if let Err(e) = put(&mut out).and_then(|()| out.flush()) {
        stop(&e);
    }
}

/// Ends the process: quietly with success when the reader closed the pipe, else with the error.
fn stop(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("error: cannot write to standard output: {e}");
    std::process::exit(1);
}

/// Whether `error` (or what caused it) is a write to a pipe whose reader has gone.
pub(crate) fn closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::closed_pipe;
    use std::io;

    #[test]
    fn a_broken_pipe_is_found_under_context() {
        let broken = anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(closed_pipe(&broken.context("writing the export")));
        let other = anyhow::Error::new(io::Error::from(io::ErrorKind::PermissionDenied));
        assert!(!closed_pipe(&other));
        assert!(!closed_pipe(&anyhow::anyhow!("broken pipe, in words only")));
    }
}
