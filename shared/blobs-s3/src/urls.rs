//! Presigned URLs: a client writes and reads a file's bytes in S3 itself, so a deployed
//! function never carries them (API Gateway and Lambda cap a request at a few megabytes).
//!
//! Why each signed header: `Content-Length` makes S3 refuse a body of another size, and
//! `x-amz-checksum-sha256` one with another digest (`BadDigest`); `Content-Type` is stored with
//! the object; `If-None-Match: *` refuses a second write under the id. Signed, none can be
//! dropped or changed without S3 refusing the signature. The server then reads the object's head
//! (its size, type and checksum as S3 recorded them) before any row may hold the file.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use aws_sdk_s3::presigning::{PresignedRequest, PresigningConfig};
use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode};
use chrono::{DateTime, Utc};
use data_encoding::{BASE64, HEXLOWER};
use jadpo_core::ports::{BlobError, BlobHead, Presigned, UploadTerms, Urls};

use super::{S3Blobs, checked, failed};

/// How long a presigned request is good for, from `at`.
fn config(at: DateTime<Utc>, ttl: Duration) -> Result<PresigningConfig, BlobError> {
    PresigningConfig::builder()
        .start_time(SystemTime::from(at))
        .expires_in(ttl)
        .build()
        .map_err(|e| BlobError::Unavailable(format!("presigning: {e}")))
}

fn presigned(request: &PresignedRequest, at: DateTime<Utc>, ttl: Duration) -> Presigned {
    Presigned {
        method: request.method().to_owned(),
        url: request.uri().to_owned(),
        headers: request.headers().map(|(n, v)| (n.to_owned(), v.to_owned())).collect(),
        expires_at: at + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::zero()),
    }
}

/// A hex SHA-256 as S3 writes it (base64 of the 32 bytes), and back.
fn base64_digest(hex: &str) -> Result<String, BlobError> {
    let bytes = HEXLOWER
        .decode(hex.as_bytes())
        .map_err(|_| BlobError::Unavailable(format!("{hex:?} is not a hex SHA-256")))?;
    Ok(BASE64.encode(&bytes))
}

fn hex_digest(base64: &str) -> Option<String> {
    BASE64.decode(base64.as_bytes()).ok().map(|b| HEXLOWER.encode(&b))
}

#[async_trait]
impl Urls for S3Blobs {
    async fn upload_url(
        &self,
        id: &str,
        terms: &UploadTerms,
        at: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Presigned, BlobError> {
        let id = checked(id)?;
        let size = i64::try_from(terms.size)
            .map_err(|_| BlobError::Unavailable(format!("{} bytes is too large", terms.size)))?;
        let request = self
            .client()
            .await
            .put_object()
            .bucket(&self.bucket)
            .key(id)
            .if_none_match("*")
            .content_length(size)
            .content_type(&terms.content_type)
            .checksum_algorithm(ChecksumAlgorithm::Sha256)
            .checksum_sha256(base64_digest(&terms.sha256)?)
            .presigned(config(at, ttl)?)
            .await
            .map_err(|e| failed("presigning an upload", e))?;
        Ok(presigned(&request, at, ttl))
    }

    async fn download_url(
        &self,
        id: &str,
        (name, content_type): (&str, &str),
        at: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Presigned, BlobError> {
        let id = checked(id)?;
        let request = self
            .client()
            .await
            .get_object()
            .bucket(&self.bucket)
            .key(id)
            .response_content_type(content_type)
            .response_content_disposition(jadpo_core::model::file::attachment(name))
            .response_cache_control("private, no-store")
            .presigned(config(at, ttl)?)
            .await
            .map_err(|e| failed("presigning a download", e))?;
        Ok(presigned(&request, at, ttl))
    }

    async fn head(&self, id: &str) -> Result<Option<BlobHead>, BlobError> {
        let id = checked(id)?;
        let head = self
            .client()
            .await
            .head_object()
            .bucket(&self.bucket)
            .key(id)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await;
        let head = match head {
            Ok(head) => head,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => return Ok(None),
            Err(e) => return Err(failed("reading a blob's head", e)),
        };
        Ok(Some(BlobHead {
            size: head.content_length().and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
            content_type: head.content_type().map(str::to_owned),
            sha256: head.checksum_sha256().and_then(hex_digest),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_convert_both_ways() {
        let hex = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let b64 = base64_digest(hex).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b64, "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=");
        assert_eq!(hex_digest(&b64).as_deref(), Some(hex));
        assert!(base64_digest("not hex").is_err());
        assert_eq!(hex_digest("!!"), None);
    }
}
