//! `make lint`'s layering check (`scripts/check-layers.py`) passes on the tree as it is and fails,
//! naming the edge, when the model references the ports above it, a statement table reaches up
//! to the roles that run it, or two modules reference each other.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Copies the checked crates' sources under a new directory.
fn copy_of_the_crates() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for crate_src in ["shared/core/src", "shared/engine/src", "shared/store-sql/src"] {
        copy_dir(&repo().join(crate_src), &dir.path().join(crate_src));
    }
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.unwrap_or_else(|e| panic!("{e}"));
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

fn check(root: &Path) -> (bool, String) {
    let script = repo().join("scripts/check-layers.py");
    let out =
        Command::new("python3").arg(&script).arg(root).output().unwrap_or_else(|e| {
            panic!("python3 {}: {e} (the check needs Python 3)", script.display())
        });
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

fn append(root: &Path, file: &str, text: &str) {
    let path = root.join(file);
    let mut body = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    body.push_str(text);
    std::fs::write(&path, body).unwrap_or_else(|e| panic!("{file}: {e}"));
}

#[test]
fn the_tree_as_it_is_passes() {
    let (ok, out) = check(&repo());
    assert!(ok, "{out}");
    assert!(out.contains("layering: ok"), "{out}");
}

#[test]
fn the_model_reaching_up_to_the_ports_fails() {
    let copy = copy_of_the_crates();
    append(
        copy.path(),
        "shared/core/src/model/lease.rs",
        "\n#[allow(unused_imports)]\nuse crate::ports::LeaseStore;\n",
    );
    let (ok, out) = check(copy.path());
    assert!(!ok, "{out}");
    assert!(
        out.contains("model may not reference ports (shared/core/src/model/lease.rs:"),
        "{out}"
    );
}

#[test]
fn two_use_cases_importing_each_other_fail() {
    let copy = copy_of_the_crates();
    append(copy.path(), "shared/engine/src/context.rs", "\n// see crate::deliver\n");
    let (ok, out) = check(copy.path());
    assert!(!ok, "{out}");
    assert!(out.contains("reference each other in a circle"), "{out}");
    assert!(out.contains("context") && out.contains("deliver"), "{out}");
}

#[test]
fn a_statement_table_reaching_up_to_the_roles_fails() {
    let copy = copy_of_the_crates();
    append(copy.path(), "shared/store-sql/src/tables/breaker.rs", "\n// see crate::roles\n");
    let (ok, out) = check(copy.path());
    assert!(!ok, "{out}");
    assert!(
        out.contains("tables may not reference roles (shared/store-sql/src/tables/breaker.rs:"),
        "{out}"
    );
}
