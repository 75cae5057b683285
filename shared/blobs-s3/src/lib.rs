//! `jadpo-blobs-s3`: the blob port on Amazon S3, where a deployed application's files' bytes
//! live (a private bucket, one object per file, its key the file id).
//!
//! Why these calls: a blob is written once, whole or not at all. `PutObject` stores an object
//! whole or not at all, and `If-None-Match: *` makes S3 refuse it (`412`) when the key exists,
//! so a file's bytes are never replaced, even by two racing writers. Listing is
//! `ListObjectsV2` from a start key: file ids are time-ordered, so housekeeping's orphan sweep
//! asks only for the window it needs.
//!
//! The client is configured the standard way (region, credentials, and `AWS_ENDPOINT_URL_S3` or
//! `AWS_ENDPOINT_URL` to point it at another endpoint, such as moto's in tests), over the same
//! rustls HTTPS client as SQS: the one TLS stack. With an endpoint given, buckets are addressed
//! by path (`http://host/bucket/key`), which S3-compatible servers expect. S3's own types never
//! leave this crate.

use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::error::DisplayErrorContext;
use aws_sdk_s3::primitives::ByteStream;
use chrono::{DateTime, Utc};
use jadpo_core::model::file::id_ok as blob_id_ok;
use jadpo_core::ports::{BlobError, BlobInfo, Blobs};
use tokio::sync::OnceCell;

mod urls;

/// Files' bytes in an S3 bucket.
#[derive(Debug, Clone)]
pub struct S3Blobs {
    /// Made at the first call when the bucket comes from the environment: a function that
    /// touches no file never pays for the SDK's set-up.
    client: Arc<OnceCell<Client>>,
    bucket: String,
}

/// Whether the environment points S3 at another endpoint (then buckets go in the path).
fn endpoint_given() -> bool {
    ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|u| !u.is_empty()))
}

/// An S3 client configured from the environment, over rustls with ring.
pub async fn client_from_env() -> Client {
    let shared = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(jadpo_queue_sqs::https_client())
        .load()
        .await;
    let config =
        aws_sdk_s3::config::Builder::from(&shared).force_path_style(endpoint_given()).build();
    Client::from_conf(config)
}

/// A client for an S3-compatible endpoint with static credentials (moto in tests).
pub fn client_for_endpoint(
    endpoint: &str,
    region: &str,
    access_key: &str,
    secret_key: &str,
) -> Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new(region.to_owned()))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            access_key, secret_key, None, None, "static",
        ))
        .http_client(jadpo_queue_sqs::https_client())
        .build();
    Client::from_conf(config)
}

fn failed<E: std::error::Error + 'static>(what: &str, e: E) -> BlobError {
    BlobError::Unavailable(format!("{what}: {}", DisplayErrorContext(e)))
}

fn checked(id: &str) -> Result<&str, BlobError> {
    if blob_id_ok(id) { Ok(id) } else { Err(BlobError::BadId(id.to_owned())) }
}

fn time(t: &aws_sdk_s3::primitives::DateTime) -> DateTime<Utc> {
    DateTime::from_timestamp(t.secs(), t.subsec_nanos()).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

impl S3Blobs {
    /// The bucket `bucket`, through `client`.
    pub fn new(client: Client, bucket: &str) -> Self {
        Self { client: Arc::new(OnceCell::new_with(Some(client))), bucket: bucket.to_owned() }
    }

    /// The bucket `bucket` with a client configured from the environment at the first call.
    pub fn from_env(bucket: &str) -> Self {
        Self { client: Arc::new(OnceCell::new()), bucket: bucket.to_owned() }
    }

    async fn client(&self) -> &Client {
        self.client.get_or_init(client_from_env).await
    }

    /// Whether object `id` exists.
    async fn exists(&self, id: &str) -> Result<bool, BlobError> {
        let head = self.client().await.head_object().bucket(&self.bucket).key(id).send().await;
        match head {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Ok(false),
            Err(e) => Err(failed("reading a blob's head", e)),
        }
    }
}

#[async_trait]
impl Blobs for S3Blobs {
    async fn put(&self, id: &str, bytes: &[u8]) -> Result<(), BlobError> {
        let id = checked(id)?;
        let put = self
            .client()
            .await
            .put_object()
            .bucket(&self.bucket)
            .key(id)
            .if_none_match("*")
            .body(ByteStream::from(bytes.to_vec()))
            .send()
            .await;
        match put {
            Ok(_) => Ok(()),
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 412) => {
                Err(BlobError::Exists(id.to_owned()))
            }
            Err(e) => Err(failed("writing a blob", e)),
        }
    }

    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, BlobError> {
        let id = checked(id)?;
        let got = self.client().await.get_object().bucket(&self.bucket).key(id).send().await;
        let output = match got {
            Ok(output) => output,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(None),
            Err(e) => return Err(failed("reading a blob", e)),
        };
        let body = output.body.collect().await.map_err(|e| failed("reading a blob's bytes", e))?;
        Ok(Some(body.into_bytes().to_vec()))
    }

    async fn delete(&self, id: &str) -> Result<bool, BlobError> {
        let id = checked(id)?;
        // S3 answers a delete the same whether the object was there: ask first.
        if !self.exists(id).await? {
            return Ok(false);
        }
        let client = self.client().await;
        let deleted = client.delete_object().bucket(&self.bucket).key(id).send().await;
        deleted.map(|_| true).map_err(|e| failed("deleting a blob", e))
    }

    async fn list(&self, after: &str, limit: u32) -> Result<Vec<BlobInfo>, BlobError> {
        let max = i32::try_from(limit.clamp(1, 1000)).unwrap_or(1000);
        let listed = self
            .client()
            .await
            .list_objects_v2()
            .bucket(&self.bucket)
            .start_after(after)
            .max_keys(max)
            .send()
            .await
            .map_err(|e| failed("listing blobs", e))?;
        Ok(listed
            .contents()
            .iter()
            .filter_map(|o| {
                let id = o.key().filter(|k| blob_id_ok(k))?;
                Some(BlobInfo {
                    id: id.to_owned(),
                    size: o.size().and_then(|s| u64::try_from(s).ok()).unwrap_or(0),
                    // No date reads as new: nothing is taken for an old orphan by default.
                    written_at: o.last_modified().map_or(DateTime::<Utc>::MAX_UTC, time),
                })
            })
            .collect())
    }

    fn urls(&self) -> Option<&dyn jadpo_core::ports::Urls> {
        Some(self)
    }
}
