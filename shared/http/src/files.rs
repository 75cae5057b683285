//! File routes: `POST /files/{table}/{column}?name=…` takes an upload's bytes into a declared file
//! field and answers the `File` a record then keeps; `GET /files/{id}` serves a file's bytes to
//! a principal who may read a record holding it. Each acts for the request's principal
//! ([`Caller`]); a service key needs the `files` scope.
//!
//! Why the server takes the bytes itself here: locally there is no S3 to hand a URL for; each
//! upload is read only up to its field's limit, so an oversized body is refused without being
//! kept whole.

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
use jadpo_engine::files::{FilesError, download, upload};
use serde::Deserialize;
use serde_json::json;

use super::{Caller, HttpState, Problem, store_problem};

/// The routes, to merge into the commit router.
pub(super) fn routes() -> Router<HttpState> {
    Router::new()
        .route("/files/{table}/{column}", post(take_upload))
        .route("/files/{id}", get(serve))
        .layer(axum::extract::DefaultBodyLimit::disable())
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
        let Query(UploadQuery { name }) = query.map_err(|e| {
            Problem::new(StatusCode::BAD_REQUEST, "Bad query", format!("{e}: give ?name=FILE_NAME"))
        })?;
        let engine = &state.engine;
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
        let file = upload(engine, (&table, &column), &name, base, &bytes)
            .await
            .map_err(|e| files_problem(&e))?;
        let location = format!("/files/{}", file.id());
        Ok::<_, Problem>(
            (StatusCode::CREATED, [(header::LOCATION, location)], axum::Json(file_json(&file)))
                .into_response(),
        )
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
        let (file, bytes) =
            download(&state.engine, &id, &caller.principal).await.map_err(|e| files_problem(&e))?;
        let disposition = format!("attachment; filename*=UTF-8''{}", encoded(file.name()));
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

/// `name` percent-encoded for `filename*` (RFC 8187): every byte but letters, digits and
/// `-._~`.
fn encoded(name: &str) -> String {
    name.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
