//! Every option of every verb is documented: the real binary's `--help`, walked verb by verb,
//! names no long option that `docs/operations.md` does not mention.

use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_jadpo"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap_or_else(|e| panic!("cannot run jadpo: {e}"));
    assert!(out.status.success(), "jadpo {args:?} --help failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The subcommands a `--help` lists.
fn commands(text: &str) -> Vec<String> {
    let Some((_, rest)) = text.split_once("Commands:") else { return Vec::new() };
    let listed = rest.split("Options:").next().unwrap_or_default();
    listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The long options a `--help` lists, but for `--help` and `--version`.
fn options(text: &str) -> Vec<String> {
    text.split_whitespace()
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()).to_owned())
        .filter(|o| o != "--help" && o != "--version")
        .collect()
}

#[test]
fn every_option_of_every_verb_is_documented() {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/operations.md"))
            .unwrap_or_else(|e| panic!("docs/operations.md: {e}"));
    let mut verbs: Vec<Vec<String>> = Vec::new();
    for verb in commands(&help(&[])) {
        let subs = commands(&help(&[&verb]));
        if subs.is_empty() {
            verbs.push(vec![verb]);
        } else {
            verbs.extend(subs.into_iter().map(|s| vec![verb.clone(), s]));
        }
    }
    assert!(verbs.len() >= 30, "the walk found {} verbs: {verbs:?}", verbs.len());
    let mut missing = Vec::new();
    for verb in &verbs {
        let args: Vec<&str> = verb.iter().map(String::as_str).collect();
        for option in options(&help(&args)) {
            if !docs.contains(&option) {
                missing.push(format!("jadpo {} {option}", verb.join(" ")));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "options docs/operations.md does not mention:\n{}",
        missing.join("\n")
    );
}

#[test]
fn options_and_commands_are_read_from_help() {
    let text = "Commands:\n  list  List\n  help  Help\n\nOptions:\n      --limit <N>  At most\n  -h, --help  Help\n";
    assert_eq!(commands(text), ["list"]);
    assert_eq!(options(text), ["--limit"]);
}

/// `runs list --status` names every status it accepts in its help.
#[test]
fn runs_list_names_every_status_it_accepts() {
    use jadpo_workflow::state::ExecutionStatus;
    let text = help(&["runs", "list"]);
    let missing: Vec<&str> =
        ExecutionStatus::ALL.iter().map(|s| s.as_str()).filter(|s| !text.contains(s)).collect();
    assert!(missing.is_empty(), "--help leaves out {missing:?}:\n{text}");
}
