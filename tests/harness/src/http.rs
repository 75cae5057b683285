//! A plain-HTTP/1.1 client for tests that follow a URL the system under test handed out (a
//! presigned S3 URL to moto, say): one request per connection, the answer read to its end.
//! Blocking, so call it from `spawn_blocking` inside async tests.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// An answer: its status, headers (names lower-cased) and body.
#[derive(Debug)]
pub struct HttpAnswer {
    /// The status code.
    pub status: u16,
    /// The headers, names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    /// The body (de-chunked).
    pub body: Vec<u8>,
}

impl HttpAnswer {
    /// Header `name`'s first value.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }
}

/// `method url` with `headers` and `body`; `url` must be `http://host:port/…`. Panics (a test
/// failure) with the reason when the request cannot be made or the answer read.
pub fn http_request(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> HttpAnswer {
    let rest = url.strip_prefix("http://").unwrap_or_else(|| panic!("not a plain http URL: {url}"));
    let (host, path) =
        rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = TcpStream::connect(host).unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        if !name.eq_ignore_ascii_case("content-length") && !name.eq_ignore_ascii_case("host") {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    stream.write_all(body).unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap_or_else(|e| panic!("{method} {url}: reading: {e}"));
    parse(&raw).unwrap_or_else(|| panic!("{method} {url}: not an HTTP answer: {raw:?}"))
}

fn parse(raw: &[u8]) -> Option<HttpAnswer> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(rest)? } else { rest.to_vec() };
    Some(HttpAnswer { status, headers, body })
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_plain_and_chunked() {
        let plain =
            parse(b"HTTP/1.1 200 OK\r\nContent-Type: a/b\r\n\r\nhello").unwrap_or_else(|| panic!());
        assert_eq!(
            (plain.status, plain.header("content-type"), &plain.body[..]),
            (200, Some("a/b"), &b"hello"[..])
        );
        let chunked = parse(b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
        assert_eq!(chunked.map(|a| a.body), Some(b"abcde".to_vec()));
        assert!(parse(b"garbage").is_none());
    }
}
