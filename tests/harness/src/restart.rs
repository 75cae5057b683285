//! A PostgreSQL server of a test's own, from the local binaries, that the test may crash and
//! start again: for fault suites that take the database away from a running process. Never the
//! shared server (`DATABASE_URL`): crashing that would fail every other test.

use crate::cluster::{Cluster, start_cluster};

/// A throwaway cluster the test owns; stopped and deleted when the test process exits.
pub struct PgCluster(Cluster);

impl PgCluster {
    /// Starts one; panics with a clear message when the PostgreSQL server binaries are missing.
    /// Unlike the shared test cluster, a commit here is durable against the server's crash
    /// (`synchronous_commit=on`: a commit returns once its WAL reached the operating system;
    /// `fsync` stays off, the machine itself does not crash), so what a crash loses is the
    /// runtime's doing, not the test bed's.
    pub fn start() -> Self {
        match start_cluster(|_| Ok("-c synchronous_commit=on".to_owned())) {
            Ok(cluster) => Self(cluster),
            Err(why) => panic!(
                "this test crashes and restarts a PostgreSQL server of its own, from the local \
                 server binaries (initdb, pg_ctl; `make prereqs` installs them): {why}"
            ),
        }
    }

    /// Creates database `name`; its URL.
    pub fn create_database(&self, name: &str) -> String {
        self.0.create_database(name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Stops the server at once, as a crash would.
    pub fn crash(&self) {
        self.0.crash().unwrap_or_else(|e| panic!("{e}"));
    }

    /// Starts it again on the same port (recovering from the crash).
    pub fn restart(&self) {
        self.0.restart().unwrap_or_else(|e| panic!("{e}"));
    }
}
