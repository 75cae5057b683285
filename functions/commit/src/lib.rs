//! The `commit` function's one piece beyond wiring: each request's invocation deadline and the
//! client's source address, taken from the Lambda context and request context that
//! `lambda_http` puts on the request, so that an action starts no call it could not finish
//! before the function is stopped, and sign-in counts mails and wrong codes per source. It lives here, not in
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
    if let Some(ip) = request.request_context_ref().and_then(source_ip) {
        request.extensions_mut().insert(jadpo_http::ClientAddr(ip));
    }
    request
}

/// The client's address as API Gateway saw it (its source IP: the TCP peer of the edge, not a
/// header the client may write).
fn source_ip(context: &lambda_http::request::RequestContext) -> Option<std::net::IpAddr> {
    use lambda_http::request::RequestContext;
    let text = match context {
        RequestContext::ApiGatewayV1(c) => c.identity.source_ip.as_deref(),
        RequestContext::ApiGatewayV2(c) => c.http.source_ip.as_deref(),
        // Other event sources the crate knows (none reach this function).
        _ => None,
    };
    text.and_then(|t| t.parse().ok())
}
