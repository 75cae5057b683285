//! The local sign-in page (`GET /`): sign in by a mailed link or code, place an order and follow
//! its checkout as yourself, through the same routes a program uses, the browser session's
//! cookie and CSRF token included.

use axum::Router;
use axum::response::Html;
use axum::routing::get;

const PAGE: &str = include_str!("../static/index.html");

/// The page's route, to merge into the local router.
pub fn router() -> Router {
    Router::new().route("/", get(|| async { Html(PAGE) }))
}
