//! File routes, each acting for the request's principal ([`Caller`]; a service key needs the
//! `files` scope):
//!
//! - `POST /files/{table}/{column}?name=…` takes an upload's bytes into a declared file field and
//!   answers the `File` a record then keeps — where the server keeps the bytes (locally);
//! - `POST /files/{table}/{column}/uploads` answers a new `File` and a presigned `PUT` for its
//!   bytes, and `POST /files/{table}/{column}/uploads/{id}` finishes that upload once the bytes
//!   are there — where the storage is S3 (deployed);
//! - `GET /files/{id}` serves a file's bytes to a principal who may read a record holding it, or
//!   redirects them (`303`) to a short-lived URL for them.
//!
//! Why two ways: deployed, a function's request and answer are capped at a few megabytes and
//! paid by the millisecond, so bytes go straight between the client and S3 and the function
//! only signs and checks; locally there is no S3 to hand a URL for. Each way refuses the other's
//! upload route with a `409` naming the right one. A direct upload is read only up to its
//! field's limit, so an oversized body is refused without being kept whole.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use jadpo_core::model::file::File;
use jadpo_core::model::file_field::FieldError;
use jadpo_core::model::service_key::Scope;
use jadpo_core::ports::BlobError;
use jadpo_engine::files::{
    Download, FilesError, download, finish_upload, hands_out_urls, upload, upload_url,
};
use serde::Deserialize;
use serde_json::json;

use super::{Caller, HttpState, Problem, store_problem};
use crate::sign_in::json_body;

/// The routes, to merge into the commit router.
pub(super) fn routes() -> Router<HttpState> {
    Router::new()
        .route(
            "/files/{table}/{column}",
            post(take_upload).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route("/files/{table}/{column}/uploads", post(sign_upload))
        .route("/files/{table}/{column}/uploads/{id}", post(finish))
        .route("/files/{id}", get(serve))
}

fn files_problem(e: &FilesError) -> Problem {
    let detail = e.to_string();
    match e {
        FilesError::UnknownField(_) => {
            Problem::new(StatusCode::NOT_FOUND, "No such file field", detail)
        }
        FilesError::NotFound(_) => Problem::new(StatusCode::NOT_FOUND, "File not found", detail),
        FilesError::Refused(FieldError::TooLarge { .. }) => {
            Problem::new(StatusCode::PAYLOAD_TOO_LARGE, "File too large", detail)
        }
        FilesError::Refused(FieldError::WrongType { .. }) => {
            Problem::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "File type not taken", detail)
        }
        FilesError::Refused(FieldError::File(_)) => {
            Problem::new(StatusCode::BAD_REQUEST, "Bad file", detail)
        }
        FilesError::NoUrls(_) => {
            Problem::new(StatusCode::CONFLICT, "Upload the bytes to this server", detail)
        }
        FilesError::UseUrls(_) => {
            Problem::new(StatusCode::CONFLICT, "Upload through an upload URL", detail)
        }
        FilesError::NotUploaded(_) => Problem::new(StatusCode::CONFLICT, "Not uploaded", detail),
        FilesError::Mismatch { .. } => {
            Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "Upload does not match", detail)
        }
        FilesError::TooLate(_) => Problem::new(StatusCode::GONE, "Upload expired", detail),
        FilesError::OverQuota { .. } => {
            Problem::new(StatusCode::FORBIDDEN, "Upload quota reached", detail)
        }
        FilesError::NoStorage | FilesError::Blob(BlobError::Unavailable(_)) => {
            Problem::new(StatusCode::SERVICE_UNAVAILABLE, "File storage unavailable", detail)
        }
        FilesError::Blob(_) => Problem::new(StatusCode::INTERNAL_SERVER_ERROR, "Storage", detail),
        FilesError::Store(s) => store_problem(s),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UploadQuery {
    name: String,
}

async fn take_upload(
    State(state): State<HttpState>,
    caller: Caller,
    Path((table, column)): Path<(String, String)>,
    query: Result<Query<UploadQuery>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        caller.may(&Scope::Files)?;
        let engine = &state.engine;
        if hands_out_urls(engine) {
            return Err(files_problem(&FilesError::UseUrls(format!("{table}/{column}"))));
        }
        let Query(UploadQuery { name }) = query.map_err(|e| {
            Problem::new(StatusCode::BAD_REQUEST, "Bad query", format!("{e}: give ?name=FILE_NAME"))
        })?;
        let field = engine
            .app
            .file_field(&table, &column)
            .ok_or_else(|| files_problem(&FilesError::UnknownField(format!("{table}.{column}"))))?;
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| {
                Problem::new(
                    StatusCode::BAD_REQUEST,
                    "No content type",
                    "send the file's Content-Type",
                )
            })?;
        // Read one byte past the limit at most: a longer body is refused without being kept.
        let limit = usize::try_from(field.max_size.saturating_add(1)).unwrap_or(usize::MAX);
        let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| {
            let size = field.max_size.saturating_add(1);
            files_problem(
                &FieldError::TooLarge { field: field.name(), max: field.max_size, size }.into(),
            )
        })?;
        let base = content_type.split(';').next().unwrap_or_default().trim();
        let file = upload(engine, (&table, &column), (&name, base), &bytes, &caller.principal)
            .await
            .map_err(|e| files_problem(&e))?;
        Ok::<_, Problem>(created(&file))
    };
    result.await.unwrap_or_else(IntoResponse::into_response)
}

/// `201` with the file, at its download route.
fn created(file: &File) -> Response {
    let location = format!("/files/{}", file.id());
    (StatusCode::CREATED, [(header::LOCATION, location)], axum::Json(file_json(file)))
        .into_response()
}

/// What an uploader declares to get an upload URL.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UploadPlan {
    name: String,
    content_type: String,
    size: u64,
    sha256: String,
}

async fn sign_upload(
    State(state): State<HttpState>,
    caller: Caller,
    Path((table, column)): Path<(String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let result = async {
        caller.may(&Scope::Files)?;
        let plan: UploadPlan = json_body(&headers, &body)?;
        let (file, url) = upload_url(
            &state.engine,
            (&table, &column),
            (&plan.name, &plan.content_type),
            (plan.size, &plan.sha256),
            &caller.principal,
        )
        .await
        .map_err(|e| files_problem(&e))?;
        let headers: serde_json::Map<String, serde_json::Value> =
            url.headers.into_iter().map(|(n, v)| (n, v.into())).collect();
        let answer = json!({
            "file": file_json(&file),
            "upload": {
                "method": url.method,
                "url": url.url,
                "headers": headers,
                "expires_at": url.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            },
            "finish": format!("/files/{table}/{column}/uploads/{}", file.id()),
        });
        Ok::<_, Problem>((StatusCode::CREATED, axum::Json(answer)).into_response())
    };
    result.await.unwrap_or_else(IntoResponse::into_response)
}

async fn finish(
    State(state): State<HttpState>,
    caller: Caller,
    Path((table, column, id)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let result = async {
        caller.may(&Scope::Files)?;
        let declared: File = json_body(&headers, &body)?;
        if declared.id() != id {
            let detail = format!("the body is file {}, the path names {id}", declared.id());
            return Err(Problem::new(StatusCode::BAD_REQUEST, "Not this upload", detail));
        }
        let file = finish_upload(&state.engine, (&table, &column), &declared, &caller.principal)
            .await
            .map_err(|e| files_problem(&e))?;
        Ok::<_, Problem>(created(&file))
    };
    result.await.unwrap_or_else(IntoResponse::into_response)
}

fn file_json(file: &File) -> serde_json::Value {
    json!({
        "id": file.id(),
        "name": file.name(),
        "content_type": file.content_type(),
        "size": file.size(),
        "sha256": file.sha256(),
    })
}

async fn serve(State(state): State<HttpState>, caller: Caller, Path(id): Path<String>) -> Response {
    let result = async {
        caller.may(&Scope::Files)?;
        let found =
            download(&state.engine, &id, &caller.principal).await.map_err(|e| files_problem(&e))?;
        let (file, bytes) = match found {
            Download::Bytes(file, bytes) => (file, bytes),
            Download::Url(_, url) => {
                let headers =
                    [(header::LOCATION, url.url), (header::CACHE_CONTROL, "no-store".into())];
                return Ok((StatusCode::SEE_OTHER, headers).into_response());
            }
        };
        let disposition = jadpo_core::model::file::attachment(file.name());
        Ok::<_, Problem>(
            (
                [
                    (header::CONTENT_TYPE, file.content_type().to_owned()),
                    (header::CONTENT_DISPOSITION, disposition),
                    (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
                    (header::ETAG, format!("\"{}\"", file.sha256())),
                ],
                bytes,
            )
                .into_response(),
        )
    };
    result.await.unwrap_or_else(IntoResponse::into_response)
}
