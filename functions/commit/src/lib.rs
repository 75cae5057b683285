//! The `commit` function's one piece beyond wiring: each request's invocation deadline, taken
//! from the Lambda context that `lambda_http` puts on the request, so that an action starts no
//! call it could not finish before the function is stopped. It lives here, not in
//! `jadpo-lambda`, so that no other function links an HTTP server, and so that the binary a
//! workspace build makes is the one that ships (no feature of a shared crate to unify).

use jadpo_lambda::invocation_deadline;

/// The HTTP routes with each request's invocation deadline taken from its Lambda context. A
/// request with no context (or an emulator's deadline of 0) runs as without one.
pub fn with_invocation_deadline(routes: axum::Router) -> axum::Router {
    routes.layer(axum::middleware::map_request(mark_deadline))
}

async fn mark_deadline<B>(mut request: axum::http::Request<B>) -> axum::http::Request<B> {
    use lambda_http::RequestExt;
    let deadline = request.lambda_context_ref().and_then(|c| invocation_deadline(c.deadline));
    if let Some(deadline) = deadline {
        request.extensions_mut().insert(jadpo_http::InvocationDeadline(deadline));
    }
    request
}
