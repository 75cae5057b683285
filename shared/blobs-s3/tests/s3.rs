//! The S3 blob adapter against moto's S3 API: written once (a second write under the id refused,
//! the first bytes kept), read back, deleted once, listed in id order by pages from a start
//! key; bad ids refused before any request; an unreachable endpoint is `Unavailable`. Presigned
//! URLs followed by a plain HTTP client: a `PUT` writes once with the signed type and checksum,
//! which the head then reports; a `GET` answers the bytes as the named attachment.

use jadpo_blobs_s3::{S3Blobs, client_for_endpoint};
use jadpo_core::ports::{BlobError, Blobs, Presigned, UploadTerms};
use jadpo_test_harness::{HttpAnswer, MotoServer, http_request};
use sha2::{Digest, Sha256};

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

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

async fn follow(url: &Presigned, body: &[u8]) -> HttpAnswer {
    let (method, link, headers, body) =
        (url.method.clone(), url.url.clone(), url.headers.clone(), body.to_vec());
    tokio::task::spawn_blocking(move || http_request(&method, &link, &headers, &body))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn presigned_urls_write_once_and_read_as_an_attachment() {
    let moto = MotoServer::start();
    let blobs = bucket(&moto).await;
    let urls = blobs.urls().unwrap_or_else(|| panic!("S3 hands out URLs"));
    let bytes = b"%PDF-1.7 an invoice";
    let terms =
        UploadTerms { size: 19, content_type: "application/pdf".into(), sha256: hex_sha256(bytes) };
    let now = chrono::Utc::now();
    let ttl = std::time::Duration::from_secs(600);
    let put = ok(urls.upload_url("f_up", &terms, now, ttl).await);
    assert_eq!(put.method, "PUT");
    assert_eq!(put.expires_at, now + chrono::Duration::seconds(600));
    let signed: Vec<String> = put.headers.iter().map(|(n, _)| n.to_ascii_lowercase()).collect();
    for needed in ["content-type", "if-none-match", "x-amz-checksum-sha256"] {
        assert!(signed.iter().any(|n| n == needed), "{needed} missing from {signed:?}");
    }
    assert_eq!(ok(urls.head("f_up").await), None, "nothing is stored before the PUT");
    let written = follow(&put, bytes).await;
    assert_eq!(written.status, 200, "{:?}", String::from_utf8_lossy(&written.body));
    let head = ok(urls.head("f_up").await).unwrap_or_else(|| panic!("the PUT stored the bytes"));
    assert_eq!(head.size, 19);
    assert_eq!(head.content_type.as_deref(), Some("application/pdf"));
    assert_eq!(head.sha256, Some(terms.sha256.clone()), "the checksum, back in hex");
    let again = follow(&put, b"%PDF-1.7 replaced!!").await;
    assert_eq!(again.status, 412, "a second PUT through the URL is refused");
    assert_eq!(ok(blobs.get("f_up").await).as_deref(), Some(&bytes[..]), "the first bytes kept");

    let get = ok(urls.download_url("f_up", ("invoice 7.pdf", "application/pdf"), now, ttl).await);
    assert_eq!(get.method, "GET");
    let read = follow(&get, b"").await;
    assert_eq!(read.status, 200);
    assert_eq!(read.body, bytes);
    assert_eq!(
        read.header("content-disposition"),
        Some("attachment; filename*=UTF-8''invoice%207.pdf")
    );
    assert_eq!(read.header("content-type"), Some("application/pdf"));
    let bad = urls.upload_url("../x", &terms, now, ttl).await;
    assert!(matches!(bad, Err(BlobError::BadId(_))), "{bad:?}");
    let bad_digest = UploadTerms { sha256: "zz".into(), ..terms };
    assert!(urls.upload_url("f_b", &bad_digest, now, ttl).await.is_err());
}
