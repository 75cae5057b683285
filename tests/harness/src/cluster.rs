//! Finding a PostgreSQL server for the tests: `DATABASE_URL`, testcontainers, or a throwaway
//! cluster from the local binaries, in that order; found once per test process.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tokio::sync::OnceCell;

use crate::net::free_port;

/// A server the tests may create databases on.
pub(crate) struct Server {
    /// URL of a database to run `CREATE DATABASE` from.
    pub(crate) admin_url: String,
    /// `admin_url` with `{db}` in place of the database name.
    url_template: String,
    /// Where the server came from, for messages.
    pub(crate) describe: String,
}

impl Server {
    pub(crate) fn url_for(&self, database: &str) -> String {
        self.url_template.replace("{db}", database)
    }
}

static SERVER: OnceCell<Result<Server, String>> = OnceCell::const_new();

/// The server, found on first use; panics with a message naming the three ways when none is.
pub(crate) async fn server() -> &'static Server {
    match SERVER.get_or_init(find).await {
        Ok(server) => server,
        Err(why) => panic!("{why}"),
    }
}

async fn find() -> Result<Server, String> {
    if let Ok(url) = std::env::var("DATABASE_URL") {
        return from_url(&url, "DATABASE_URL".to_owned());
    }
    let mut tried = vec!["DATABASE_URL is not set".to_owned()];
    match docker::start().await {
        Ok(server) => return Ok(server),
        Err(why) => tried.push(format!("testcontainers: {why}")),
    }
    match local_cluster() {
        Ok(server) => return Ok(server),
        Err(why) => tried.push(format!("local cluster: {why}")),
    }
    Err(format!(
        "these tests need PostgreSQL and found none. Give one of:\n  \
         1. DATABASE_URL=postgres://user@host:port/db (a server the tests may create databases on);\n  \
         2. a Docker engine, for testcontainers;\n  \
         3. the PostgreSQL server binaries (initdb, pg_ctl; Debian: apt-get install postgresql).\n\
         What was tried:\n  - {}",
        tried.join("\n  - ")
    ))
}

fn from_url(url: &str, describe: String) -> Result<Server, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("{describe} is not a URL: {e}"))?;
    let mut template = parsed.clone();
    template.set_path("/DBNAME_PLACEHOLDER");
    Ok(Server {
        admin_url: url.to_owned(),
        url_template: template.to_string().replace("DBNAME_PLACEHOLDER", "{db}"),
        describe,
    })
}

mod docker {
    use testcontainers::runners::AsyncRunner;
    use testcontainers_modules::postgres::Postgres;

    use super::{Server, from_url};

    /// Starts a PostgreSQL container when a Docker engine answers.
    pub(super) async fn start() -> Result<Server, String> {
        let socket = std::path::Path::new("/var/run/docker.sock");
        if std::env::var_os("DOCKER_HOST").is_none() && !socket.exists() {
            return Err("no Docker engine (no DOCKER_HOST, no /var/run/docker.sock)".to_owned());
        }
        let container = Postgres::default().start().await.map_err(|e| e.to_string())?;
        let port = container.get_host_port_ipv4(5432).await.map_err(|e| e.to_string())?;
        let url = format!("postgres://postgres:postgres@127.0.0.1:{port}/postgres");
        // The container lives as long as the test process; testcontainers' reaper removes it.
        std::mem::forget(container);
        from_url(&url, format!("a testcontainers PostgreSQL on port {port}"))
    }
}

fn local_cluster() -> Result<Server, String> {
    let cluster = start_cluster(|_| Ok(String::new()))?;
    from_url(
        &format!("postgres://postgres@127.0.0.1:{}/postgres", cluster.port),
        format!("a throwaway cluster in {} on port {}", cluster.dir.display(), cluster.port),
    )
}

/// A throwaway cluster: its folder (deleted by the watchdog), port, and how to start it again.
pub(crate) struct Cluster {
    pub(crate) dir: PathBuf,
    pub(crate) port: u16,
    bin: PathBuf,
    as_root: bool,
    options: String,
}

impl Cluster {
    /// `pg_ctl` with `args`, as the server's user, on this cluster's data folder.
    fn pg_ctl(&self, args: &[&str], what: &str) -> Result<(), String> {
        let mut command = as_postgres(self.as_root, &self.bin.join("pg_ctl"));
        command.arg("-D").arg(self.dir.join("data")).args(args);
        run(&mut command, what)
    }

    /// Stops the server at once, as a crash would (no checkpoint; recovery at the next start).
    pub(crate) fn crash(&self) -> Result<(), String> {
        self.pg_ctl(&["-m", "immediate", "stop"], "pg_ctl stop -m immediate")
    }

    /// Starts the stopped server again on its port.
    pub(crate) fn restart(&self) -> Result<(), String> {
        let log = self.dir.join("server.log");
        let log = log.to_string_lossy();
        self.pg_ctl(&["-o", &self.options, "-w", "-l", &log, "start"], "pg_ctl start")
    }

    /// Creates database `name` on the server; its URL.
    pub(crate) fn create_database(&self, name: &str) -> Result<String, String> {
        let port = self.port.to_string();
        let mut createdb = Command::new(self.bin.join("createdb"));
        createdb.args(["-h", "127.0.0.1", "-p", &port, "-U", "postgres", name]);
        run(&mut createdb, "createdb")?;
        Ok(format!("postgres://postgres@127.0.0.1:{port}/{name}"))
    }
}

/// Starts a throwaway cluster from the local binaries. `configure` gets the cluster's folder
/// (owned by the server's user) after `initdb` and returns extra `postgres` options.
pub(crate) fn start_cluster(
    configure: impl FnOnce(&Path) -> Result<String, String>,
) -> Result<Cluster, String> {
    let bin = find_bindir()
        .ok_or("no initdb/pg_ctl found (pg_config --bindir, /usr/lib/postgresql/*/bin, PATH)")?;
    let dir = std::env::temp_dir().join(format!(
        "jadpo-pg-{}-{}",
        std::process::id(),
        uuid::Uuid::now_v7().simple()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let as_root = is_root();
    if as_root {
        run(Command::new("chown").args(["-R", "postgres:postgres"]).arg(&dir), "chown")?;
    }
    // From here on, whatever happens, the watchdog removes the folder when we exit.
    spawn_watchdog(as_root, &bin, &dir)?;
    let data = dir.join("data");
    let mut initdb = as_postgres(as_root, &bin.join("initdb"));
    initdb.arg("-D").arg(&data).args([
        "-U",
        "postgres",
        "-A",
        "trust",
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync",
    ]);
    run(&mut initdb, "initdb")?;
    let extra = configure(&dir)?;
    if as_root {
        run(Command::new("chown").args(["-R", "postgres:postgres"]).arg(&dir), "chown")?;
    }
    // The port is free when chosen, but another process may bind it before the server does:
    // then the start fails, and a new port is tried.
    let mut failures = Vec::new();
    for _ in 0..3 {
        let port = free_port()?;
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=300 {extra}",
            dir.display()
        );
        let mut start = as_postgres(as_root, &bin.join("pg_ctl"));
        start
            .arg("-D")
            .arg(&data)
            .args(["-o", &options, "-w", "-l"])
            .arg(dir.join("server.log"))
            .arg("start");
        match run(&mut start, "pg_ctl start") {
            Ok(()) => return Ok(Cluster { dir, port, bin, as_root, options }),
            Err(e) => failures.push(format!("port {port}: {e}")),
        }
    }
    Err(failures.join("; "))
}

fn find_bindir() -> Option<PathBuf> {
    let has = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    let from_pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let mut candidates: Vec<PathBuf> = from_pg_config.into_iter().collect();
    if let Ok(entries) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<PathBuf> = entries.flatten().map(|e| e.path().join("bin")).collect();
        versions.sort();
        candidates.extend(versions.into_iter().rev());
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path));
    }
    candidates.into_iter().find(|d| has(d))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// `program`, run as the `postgres` user when we are root (`initdb` refuses root).
fn as_postgres(as_root: bool, program: &Path) -> Command {
    if as_root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what} could not start: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// A detached shell that waits for this process to exit, then stops the cluster and deletes it,
/// whether the tests ended normally, panicked or were killed. Its output goes nowhere, so the
/// test runner does not wait on it.
fn spawn_watchdog(as_root: bool, bin: &Path, dir: &Path) -> Result<(), String> {
    let pg_ctl = bin.join("pg_ctl");
    let stop = if as_root {
        format!(
            "runuser -u postgres -- {} -D {}/data -m immediate stop",
            pg_ctl.display(),
            dir.display()
        )
    } else {
        format!("{} -D {}/data -m immediate stop", pg_ctl.display(), dir.display())
    };
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {stop}; rm -rf {dir}",
        pid = std::process::id(),
        dir = dir.display()
    );
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(|_| ())
        .map_err(|e| format!("cannot start the cluster's watchdog: {e}"))
}
