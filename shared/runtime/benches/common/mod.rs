//! What the benchmarks share: the pgbench ceiling, the process's CPU time, fresh statistics.

#![allow(dead_code, reason = "each benchmark uses part of this module")]

use std::process::Command;

use jadpo_engine::Engine;

/// A PostgreSQL client program from `pg_config --bindir`, else from `PATH`.
fn pg_bin(name: &str) -> String {
    let bindir = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    bindir.map(|d| format!("{d}/{name}")).unwrap_or_else(|| name.to_owned())
}

/// Runs one SQL statement with `psql` outside any transaction (`VACUUM` cannot run inside one).
pub fn psql(url: &str, sql: &str) {
    let out = Command::new(pg_bin("psql"))
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql, url])
        .output()
        .unwrap_or_else(|e| panic!("cannot run psql: {e}"));
    assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Transactions/s of `script` under pgbench (`-M prepared`) with `clients` for `seconds`.
pub fn pgbench_tps(url: &str, script_text: &str, clients: usize, seconds: u64) -> f64 {
    let pgbench = pg_bin("pgbench");
    let script =
        std::env::temp_dir().join(format!("jadpo-bench-{}-{clients}.sql", std::process::id()));
    std::fs::write(&script, script_text).unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(pgbench)
        .args([
            "-n",
            "-M",
            "prepared",
            "-c",
            &clients.to_string(),
            "-j",
            &clients.min(2).to_string(),
            "-T",
            &seconds.to_string(),
            "-f",
        ])
        .arg(&script)
        .arg(url)
        .output()
        .unwrap_or_else(|e| panic!("cannot run pgbench: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    let tps = text
        .lines()
        .find(|l| l.starts_with("tps = "))
        .and_then(|l| l[6..].split_whitespace().next())
        .and_then(|v| v.parse().ok());
    tps.unwrap_or_else(|| panic!("pgbench failed: {text}{}", String::from_utf8_lossy(&out.stderr)))
}

/// This process's CPU time so far (user + system), from `/proc/self/stat`, in seconds.
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are the 14th and 15th fields; 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// Refreshes planner statistics between phases. Each phase adds tens of thousands of rows to a
/// brand-new database faster than autovacuum's one-minute nap; without fresh statistics, plans
/// cached while the tables were tiny (sequential scans) would be measured instead of the code.
pub async fn analyze(p: &Engine) {
    for store in p.stores.values() {
        let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
        tx.batch("ANALYZE").await.unwrap_or_else(|e| panic!("{e}"));
        tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    }
}
