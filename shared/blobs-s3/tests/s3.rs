//! The S3 blob adapter against moto's S3 API: written once (a second write under the id refused,
//! the first bytes kept), read back, deleted once, listed in id order by pages from a start
//! key; bad ids refused before any request; an unreachable endpoint is `Unavailable`.

use jadpo_blobs_s3::{S3Blobs, client_for_endpoint};
use jadpo_core::ports::{BlobError, Blobs};
use jadpo_test_harness::MotoServer;

async fn bucket(moto: &MotoServer) -> S3Blobs {
    let client = client_for_endpoint(&moto.endpoint(), "us-east-1", "testing", "testing");
    client.create_bucket().bucket("files").send().await.unwrap_or_else(|e| panic!("{e:?}"));
    S3Blobs::new(client, "files")
}

fn ok<T>(r: Result<T, BlobError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn a_blob_is_written_once_read_deleted_and_listed() {
    let moto = MotoServer::start();
    let blobs = bucket(&moto).await;
    ok(blobs.put("f_a", b"first").await);
    let again = blobs.put("f_a", b"second").await;
    assert!(matches!(again, Err(BlobError::Exists(ref id)) if id == "f_a"), "{again:?}");
    assert_eq!(ok(blobs.get("f_a").await).as_deref(), Some(&b"first"[..]), "the first bytes kept");
    assert_eq!(ok(blobs.get("f_missing").await), None);
    for id in ["f_b", "f_c", "f_d"] {
        ok(blobs.put(id, id.as_bytes()).await);
    }
    let page = ok(blobs.list("", 2).await);
    let ids: Vec<&str> = page.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, ["f_a", "f_b"]);
    assert_eq!(page[0].size, 5);
    let age = chrono::Utc::now() - page[0].written_at;
    assert!(age < chrono::Duration::minutes(5) && age > -chrono::Duration::minutes(5), "{age}");
    let rest: Vec<String> = ok(blobs.list("f_b", 10).await).into_iter().map(|b| b.id).collect();
    assert_eq!(rest, ["f_c", "f_d"]);
    assert!(ok(blobs.delete("f_b").await));
    assert!(!ok(blobs.delete("f_b").await), "deleted once");
    assert_eq!(ok(blobs.get("f_b").await), None);
    assert_eq!(ok(blobs.list("", 10).await).len(), 3);
}

#[tokio::test]
async fn bad_ids_and_unreachable_storage_are_clear_errors() {
    let moto = MotoServer::start();
    let blobs = bucket(&moto).await;
    for bad in ["", "../etc/passwd", "a/b", "x y", &"f".repeat(65)] {
        assert!(matches!(blobs.put(bad, b"x").await, Err(BlobError::BadId(_))), "{bad:?}");
        assert!(matches!(blobs.get(bad).await, Err(BlobError::BadId(_))), "{bad:?}");
        assert!(matches!(blobs.delete(bad).await, Err(BlobError::BadId(_))), "{bad:?}");
    }
    assert!(ok(blobs.list("", 10).await).is_empty(), "nothing was written");
    let nowhere =
        S3Blobs::new(client_for_endpoint("http://127.0.0.1:1", "us-east-1", "a", "b"), "files");
    let err = nowhere.put("f_a", b"x").await;
    assert!(matches!(err, Err(BlobError::Unavailable(_))), "{err:?}");
    let missing = S3Blobs::new(
        client_for_endpoint(&moto.endpoint(), "us-east-1", "testing", "testing"),
        "no-such-bucket",
    );
    assert!(matches!(missing.put("f_a", b"x").await, Err(BlobError::Unavailable(_))));
}
