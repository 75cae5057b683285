//! The docs' curl examples, run literally against the local process: every `curl` command in the
//! shell blocks of `README.md` and `docs/http.md` is read from the Markdown (so the docs cannot
//! drift from the code), run in order with `$KEY` set to the key `jadpo-local` printed, and must
//! answer the status its comment documents (`# 201 …`), or a success when none is given.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{read_key, start_local};

/// One documented example: where, the command, and the status it documents.
struct Example {
    place: String,
    command: String,
    status: Option<u16>,
}

/// The first number of a comment: the documented status (`# 201 {"order_id": …}`).
fn documented_status(comment: &str) -> Option<u16> {
    let first = comment.trim_start_matches('#').split_whitespace().next()?;
    first.parse().ok().filter(|s| (100..600).contains(s))
}

/// The `curl` commands of the repository's `file`.
fn examples(file: &str) -> Vec<Example> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    examples_in(file, &text)
}

/// The `curl` commands of `text`'s shell blocks, continuation lines joined, comments split off.
fn examples_in(file: &str, text: &str) -> Vec<Example> {
    let mut found: Vec<Example> = Vec::new();
    let (mut in_shell, mut pending) = (false, String::new());
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            in_shell = line == "```sh";
            continue;
        }
        if !in_shell {
            continue;
        }
        let (code, comment) = line.split_once(" #").map_or((line, ""), |(c, k)| (c, k));
        if line.trim_start().starts_with('#') {
            // A comment line after a command documents its answer.
            if let (Some(last), Some(status)) = (found.last_mut(), documented_status(line.trim())) {
                last.status = last.status.or(Some(status));
            }
            continue;
        }
        pending.push_str(code.trim_end().trim_end_matches('\\'));
        pending.push(' ');
        if code.trim_end().ends_with('\\') {
            continue;
        }
        let command = std::mem::take(&mut pending).trim().to_owned();
        if command.starts_with("curl ") {
            let place = format!("{file}:{}", n + 1);
            found.push(Example { place, command, status: documented_status(comment) });
        }
    }
    found
}

/// Runs `example` against the local process on `port`; the status it answered.
fn run(example: &Example, port: u16, key: &str) -> u16 {
    let command =
        example.command.replace("http://127.0.0.1:3000", &format!("http://127.0.0.1:{port}"));
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("{command} -o /dev/null -w '%{{http_code}}'"))
        .env("KEY", key)
        .output()
        .unwrap_or_else(|e| panic!("cannot run bash and curl (install curl): {e}"));
    let said = String::from_utf8_lossy(&out.stdout);
    said.trim().parse().unwrap_or_else(|_| panic!("{}: curl said {said:?}", example.place))
}

#[test]
fn the_readme_and_http_docs_curl_examples_answer_as_documented() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut local = start_local(dir.path());
    let port = local.port;
    let key = read_key(&mut local);
    let all: Vec<Example> = ["README.md", "docs/http.md"].into_iter().flat_map(examples).collect();
    assert!(all.len() >= 6, "the docs' curl examples were not found: {}", all.len());
    let mut wrong = Vec::new();
    for example in &all {
        let status = run(example, port, &key);
        let as_documented = example.status.map_or((200..300).contains(&status), |s| s == status);
        if !as_documented {
            wrong.push(format!(
                "{}: answered {status}, documented {:?}: {}",
                example.place, example.status, example.command
            ));
        }
    }
    assert!(wrong.is_empty(), "examples that do not do what the docs say:\n{}", wrong.join("\n"));
}

#[test]
fn examples_are_read_with_their_documented_status() {
    let doc = "```sh\ncurl -s http://x/a \\\n  -d '{}'   # 201 made\ncurl -s http://x/b\n\
               # 404 {\"status\": 404}\nmake run  # 200 not curl\n```\n```json\ncurl -s http://x/c\n```\n";
    let read = examples_in("doc.md", doc);
    let got: Vec<_> = read.iter().map(|e| (e.command.as_str(), e.status)).collect();
    assert_eq!(
        got,
        [("curl -s http://x/a    -d '{}'", Some(201)), ("curl -s http://x/b", Some(404))]
    );
    assert_eq!(read[1].place, "doc.md:4");
}
