//! Benchmark: each function binary's cold start and footprint, against a minimal
//! `lambda_runtime` hello-world built the same way (release profile: size-optimised, LTO,
//! stripped) in the same run.
//!
//! Each run starts the binary as Lambda does — a fresh process with the Lambda variables, polling
//! a Runtime API ([`RuntimeApi`], which timestamps requests) — and measures:
//! - init: from spawning the process to its first `GET …/invocation/next` (the moment Lambda
//!   ends the init phase);
//! - resident memory (`VmRSS`) right after its first invocation was answered, and the peak
//!   (`VmHWM`).
//!
//! Every function does real work in its invocation, against PostgreSQL and moto: `commit` places
//! an order, `outbox-relay` runs a pass, `delivery` handles the messages that order put on the
//! queue, `schedule-tick` and `housekeeping` run a pass. Each is started as deployed: it reads its
//! secrets (database URLs, sealing keys) from Secrets Manager (moto's) during init. So a second
//! reference, `hello-secrets`, reads the same secrets the same way and does nothing else: the
//! difference between it and the hello-world is the round trip to the secrets; the difference
//! between a function and it is what Jadpo adds. Rounds interleave the binaries so that machine
//! noise hits them alike; the ratios are of medians. Targets: init within 1.5× of
//! `hello-secrets`'s, under 30 MB resident. `make bench` runs it and adds the section to
//! BENCHMARKS.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jadpo_e2e::{
    Backing, FUNCTIONS, Function, HELLO_SECRETS, HELLO_WORLD, Invocation, RuntimeApi, json_fixture,
    place_order, release,
};
use serde_json::{Value, json};

const ROUNDS: usize = 31;
const INIT_RATIO_TARGET: f64 = 1.5;
const RSS_TARGET_MB: f64 = 30.0;

/// One cold start.
struct Sample {
    init: Duration,
    first_invocation: Duration,
    rss_kib: u64,
    peak_kib: u64,
}

/// The event for `name`'s one invocation in `round`, and a check of its answer.
async fn event_for(name: &str, round: usize, backing: &Backing, key: &str) -> Value {
    match name {
        "commit" => place_order(key, &format!("bench-{round}")),
        "delivery" => json!({"Records": backing.receive_all().await}),
        _ => json_fixture("eventbridge_scheduled.json"),
    }
}

fn check(name: &str, event: &Value, answer: &Invocation) {
    let Invocation::Response(answer) = answer else {
        panic!("{name} failed its invocation: {answer:?}");
    };
    match name {
        "commit" => assert_eq!(answer["statusCode"], 201, "{answer}"),
        "delivery" => {
            assert_eq!(answer["batchItemFailures"], json!([]), "{answer}");
            let records = event["Records"].as_array().map_or(0, Vec::len);
            assert!(records > 0, "the order put no message on the queue");
        }
        _ => {}
    }
}

async fn run_once(name: &str, binary: &Path, env: &[(String, String)], event: Value) -> Sample {
    let mut api = RuntimeApi::start().await;
    let mut function = Function::start(name, binary, &api.address(), env);
    let first = api.first_request(Duration::from_secs(30)).await;
    let init = first.duration_since(function.started());
    let handed = std::time::Instant::now();
    let answer = api.invoke(event.clone(), Duration::from_secs(60)).await;
    let first_invocation = handed.elapsed();
    let (rss_kib, peak_kib) = function.memory_kib();
    function.stop();
    check(name, &event, &answer);
    Sample { init, first_invocation, rss_kib, peak_kib }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or_default()
}

fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let rank = ((values.len() as f64 - 1.0) * p).round() as usize;
    values.get(rank).copied().unwrap_or_default()
}

fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn report(samples: &BTreeMap<&str, Vec<Sample>>, bins: &BTreeMap<String, PathBuf>) -> String {
    let init_ms = |name: &str| -> Vec<f64> {
        samples[name].iter().map(|s| s.init.as_secs_f64() * 1000.0).collect()
    };
    let hello = median(init_ms(HELLO_WORLD));
    let reference = median(init_ms(HELLO_SECRETS));
    let mut out = format!(
        "## Cold start and footprint\n\n\
         Command: `cargo bench -p jadpo-e2e --bench cold_start` (part of `make bench`). Each binary \
         built with the release profile (as `make build` does), started {ROUNDS} times as a fresh \
         process against a Runtime API, rounds interleaved; one real invocation each (PostgreSQL, \
         moto), each reading its secrets from moto's Secrets Manager in its init as deployed. \
         Init: spawn → first request for work. RSS: `VmRSS` after the first invocation; peak: \
         largest `VmHWM`. `hello-secrets` reads the commit function's three secrets the same way \
         and does nothing else. Targets: init ≤ {INIT_RATIO_TARGET}× `hello-secrets`'s median \
         (what Jadpo adds, apart from the round trip to the secrets, which moto answers more \
         slowly than Secrets Manager does in-region), RSS < {RSS_TARGET_MB} MB. First \
         invocation: the event handed over → the answer (real work, and whatever a function sets \
         up at its first use), for context.\n\n\
         | binary | size | init p50 | init p90 | vs hello-world | vs hello-secrets | 1st invocation p50 | RSS p50 | peak | targets |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
    );
    let mut names = vec![HELLO_WORLD, HELLO_SECRETS];
    names.extend(FUNCTIONS);
    for name in names {
        let size = std::fs::metadata(&bins[name]).map(|m| m.len()).unwrap_or_default();
        let p50 = median(init_ms(name));
        let p90 = percentile(init_ms(name), 0.9);
        let (ratio, over_secrets) = (p50 / hello, p50 / reference);
        let first = median(
            samples[name].iter().map(|s| s.first_invocation.as_secs_f64() * 1000.0).collect(),
        );
        let rss = median(samples[name].iter().map(|s| mb(s.rss_kib)).collect());
        let peak = samples[name].iter().map(|s| mb(s.peak_kib)).fold(0.0, f64::max);
        let verdict = if name == HELLO_WORLD || name == HELLO_SECRETS {
            "reference".to_owned()
        } else if over_secrets <= INIT_RATIO_TARGET && rss < RSS_TARGET_MB {
            "met".to_owned()
        } else {
            format!("MISSED ({})", if over_secrets > INIT_RATIO_TARGET { "init" } else { "RSS" })
        };
        out.push_str(&format!(
            "| {name} | {:.1} MB | {p50:.2} ms | {p90:.2} ms | {ratio:.2}× | {over_secrets:.2}× | {first:.1} ms | {rss:.1} MB | {peak:.1} MB | {verdict} |\n",
            size as f64 / 1_048_576.0
        ));
    }
    out
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut names = vec![HELLO_WORLD, HELLO_SECRETS];
    names.extend(FUNCTIONS);
    let to_build = names.clone();
    let bins = tokio::task::spawn_blocking(move || release(&to_build))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let backing = Backing::start().await;
    let key = backing.service_key().await;
    let mut samples: BTreeMap<&str, Vec<Sample>> = BTreeMap::new();
    for round in 0..ROUNDS {
        for name in &names {
            let event = event_for(name, round, &backing, &key).await;
            // hello-secrets reads what commit reads, the most any function does.
            let env = backing.env_for(if *name == HELLO_SECRETS { "commit" } else { name });
            let sample = run_once(name, &bins[*name], &env, event).await;
            samples.entry(name).or_default().push(sample);
        }
        eprintln!("cold start: round {}/{ROUNDS} done", round + 1);
    }
    let text = report(&samples, &bins);
    println!("{text}");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/bench");
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{dir}: {e}"));
    std::fs::write(format!("{dir}/coldstart.md"), text).unwrap_or_else(|e| panic!("{e}"));
}
