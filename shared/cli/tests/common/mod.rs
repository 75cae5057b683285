//! Running the real `jadpo` binary against a database, as an operator would.

#![allow(dead_code, reason = "each test binary uses part of this module")]

use std::process::{Command, Output};

/// Runs `jadpo args` with `DATABASE_URL` set to `url` (or unset) and no other store URLs.
pub fn jadpo_with(url: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jadpo"));
    cmd.args(args).env_remove("DATABASE_URL").env("RUST_LOG", "warn");
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("DATABASE_URL_")) {
        cmd.env_remove(key);
    }
    if let Some(url) = url {
        cmd.env("DATABASE_URL", url);
    }
    cmd.output().unwrap_or_else(|e| panic!("cannot run jadpo: {e}"))
}

/// Runs `jadpo args` against `url`.
pub fn jadpo(url: &str, args: &[&str]) -> Output {
    jadpo_with(Some(url), args)
}

/// Standard output and error together, for messages.
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}
