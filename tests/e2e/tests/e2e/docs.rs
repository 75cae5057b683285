//! The documentation renders as written: in every Markdown table of the README and `docs/`, a
//! `|` inside a code span is escaped (`\|`), or the table splits the cell there and the command
//! it shows is cut in two.

use std::path::{Path, PathBuf};

fn markdown_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files =
        vec![root.join("README.md"), root.join("CHANGELOG.md"), root.join("infra/README.md")];
    let docs = std::fs::read_dir(root.join("docs")).unwrap_or_else(|e| panic!("docs/: {e}"));
    files.extend(
        docs.filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md")),
    );
    files
}

/// The code spans of a table row that hold an unescaped `|`.
fn split_code(row: &str) -> Vec<String> {
    row.split('`')
        .skip(1)
        .step_by(2)
        .filter(|code| code.replace("\\|", "").contains('|'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn no_table_cell_is_split_by_a_pipe_inside_code() {
    let mut split = Vec::new();
    for file in markdown_files() {
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (n, row) in text.lines().enumerate().filter(|(_, l)| l.starts_with('|')) {
            for code in split_code(row) {
                split.push(format!("{}:{}: `{code}`", file.display(), n + 1));
            }
        }
    }
    assert!(split.is_empty(), "escape these pipes as \\|:\n{}", split.join("\n"));
}

#[test]
fn the_check_finds_an_unescaped_pipe() {
    assert_eq!(split_code("| `a | b` | `c \\| d` |"), ["a | b"]);
}

/// The `JADPO_*` names in `text`, as written (`JADPO_CONNECTION_<NAME>_URL` kept whole).
fn setting_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for (i, _) in text.match_indices("JADPO_") {
        let name: String = text[i..]
            .chars()
            .take_while(|c| {
                c.is_ascii_uppercase() || c.is_ascii_digit() || matches!(c, '_' | '<' | '>')
            })
            .collect();
        names.insert(name);
    }
    names
}

/// Every setting the code reads is documented in `docs/configuration.md`, and every setting that
/// page documents is read somewhere.
#[test]
fn every_setting_is_documented_and_every_documented_setting_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut code = String::new();
    let mut dirs = vec![root.join("shared"), root.join("functions")];
    while let Some(dir) = dirs.pop() {
        for entry in
            std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten()
        {
            let path = entry.path();
            if path.is_dir() && !path.ends_with("tests") && !path.ends_with("benches") {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") && !path.ends_with("tests.rs") {
                code.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let docs = std::fs::read_to_string(root.join("docs/configuration.md")).unwrap_or_default();
    let (read, documented) = (setting_names(&code), setting_names(&docs));
    // The code builds `JADPO_CONNECTION_<NAME>_URL` from its prefix.
    // A documented pattern (`JADPO_CONNECTION_<NAME>_URL`) covers the prefix the code builds it
    // from and each connection's instance of it (`JADPO_CONNECTION_MAILER_URL`).
    // `JADPO_SECRET_<VARIABLE>` likewise covers its prefix and its instances.
    let patterns: Vec<(&str, &str)> = documented
        .iter()
        .filter_map(|d| d.split_once("<NAME>").or_else(|| d.split_once("<VARIABLE>")))
        .collect();
    let known = |name: &String| {
        documented.contains(name)
            || patterns.iter().any(|(head, tail)| {
                name == head
                    || (name.starts_with(head)
                        && name.ends_with(tail)
                        && name.len() > head.len() + tail.len())
            })
    };
    let undocumented: Vec<_> = read.iter().filter(|n| !known(n)).collect();
    // A documented example of a pattern (`JADPO_SECRET_DATABASE_URL`) is read through its prefix.
    let known_instance = |name: &String| {
        patterns.iter().any(|(head, tail)| {
            read.contains(*head) && name.starts_with(head) && name.ends_with(tail)
        })
    };
    assert!(undocumented.is_empty(), "read but not in docs/configuration.md: {undocumented:?}");
    let unread: Vec<_> = documented
        .iter()
        .filter(|n| !read.contains(*n) && !n.contains('<') && !known_instance(n))
        .collect();
    assert!(unread.is_empty(), "documented but read nowhere: {unread:?}");
}
