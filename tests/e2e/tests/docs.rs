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
