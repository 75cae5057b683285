//! Stored files under crashes, on both adapters with the local directory: housekeeping crashes
//! before a batch, before or after its commit, and between deleting a file's bytes and making
//! its row a tombstone (alone and in random sets, at any of its first arrivals). Uploads crash
//! between the bytes and their row (an orphan; once through the upload use case's own crash
//! point) and between the row and a record holding it.
//! Once the crashed pass's lease has run out and the next pass has run: every held file still has
//! its bytes and is live, and every file no field held for the grace, and every orphan, is gone.
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use jadpo_core::model::file_field::FileState;
use jadpo_test_env::Kind;

use crate::files_app;
use files_app::{env, hold, hours, let_go, stands, upload};

const POINTS: &[&str] = &[
    "housekeeping.before_batch",
    "housekeeping.before_batch_commit",
    "housekeeping.after_batch_commit",
    "housekeeping.after_bytes_deleted",
];

/// Runs per adapter, after each point alone.
const RANDOM: usize = 40;

async fn one_run(kind: Kind, crash: &[(&'static str, String)]) -> Result<(), String> {
    let env = env(kind).await;
    let mut held = Vec::new();
    let mut unheld = Vec::new();
    for i in 0..3 {
        let id = upload(&env, true).await;
        hold(&env, &format!("held{i}"), &id).await?;
        held.push(id);
        let id = upload(&env, true).await;
        hold(&env, &format!("dropped{i}"), &id).await?;
        let_go(&env, &format!("dropped{i}")).await;
        unheld.push(id);
        unheld.push(upload(&env, true).await); // its record never committed
        unheld.push(upload(&env, false).await); // its row never committed
    }
    // The upload use case killed between storing the bytes and writing their row.
    fail::cfg("files.after_bytes_stored", "1*return").map_err(|e| e.to_string())?;
    let cut = jadpo_engine::files::upload(
        &env.engine,
        ("docs", "attachment"),
        ("a.txt", "text/plain"),
        b"cut",
        &jadpo_core::model::principal::Principal::Service("web".into()),
    )
    .await;
    fail::remove("files.after_bytes_stored");
    if cut.is_ok() {
        return Err("the upload's crash point was not reached".into());
    }
    let blobs = files_app::blobs(&env);
    let listed = blobs.list("", 1000).await.map_err(|e| e.to_string())?;
    let mut cut_ids = Vec::new();
    for b in listed {
        let known = env.store("main").file_get(&b.id).await.map_err(|e| e.to_string())?;
        if known.is_none() && !unheld.contains(&b.id) {
            cut_ids.push(b.id);
        }
    }
    if cut_ids.len() != 1 {
        return Err(format!("the cut upload left {} unnamed blobs, not 1", cut_ids.len()));
    }
    unheld.extend(cut_ids);
    // Seen unheld by a clean pass, then past every grace when the crashed pass runs.
    let (_, failures) = jadpo_engine::housekeeping::housekeep_all(&env.engine, "hk-0").await;
    if !failures.is_empty() {
        return Err(format!("the first pass failed: {failures:?}"));
    }
    env.clock.advance(hours(25));
    jadpo_test_env::housekeep_crashed_then_again(&env, crash).await?;
    for id in &held {
        let now = stands(&env, id).await;
        if now != (true, Some(FileState::Live)) {
            return Err(format!("held file {id} lost: (bytes, state) = {now:?}"));
        }
    }
    for id in &unheld {
        let now = stands(&env, id).await;
        if now != (false, Some(FileState::Deleted)) {
            return Err(format!("unheld file {id} left behind: (bytes, state) = {now:?}"));
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_held_file_loses_its_bytes_and_every_unheld_one_goes() {
    jadpo_test_env::crash_loop_on_both(POINTS, |kind, mut rng| async move {
        let run =
            |kind, crash: Vec<(&'static str, String)>| async move { one_run(kind, &crash).await };
        jadpo_test_env::crash_sets(kind, &mut rng, POINTS, RANDOM, "lost or left behind", run).await
    })
    .await;
}
