//! A migration's statements and the feature each belongs to, so that a store runs only the
//! statements of the features its declaration places there.
//!
//! The splitter knows what a migration may hold: `--` and `/* */` comments, quoted strings and
//! names, PostgreSQL's dollar-quoted bodies (`$body$ … $body$`) and SQLite's trigger bodies
//! (`CREATE TRIGGER … BEGIN …; END`). A statement's feature comes from the object it makes or
//! changes: a `jadpo_` table, or an index, function or trigger named after one
//! ([`Feature::of_object`]); any other object (the workflow store's tables) belongs to no
//! feature and runs in every store, as do a `SELECT`, which changes nothing, and a `PRAGMA`. A statement of another kind, or a `jadpo_` object no feature
//! places, is refused: a migration must say, by what it touches, where it belongs.

use crate::placement::Feature;

/// One statement of a migration: its text (comments before it included, no final `;`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement<'a> {
    pub sql: &'a str,
    /// The feature it belongs to, `None` for the workflow store's objects.
    pub feature: Option<Feature>,
}

/// Splits `sql` into its statements and gives each its feature.
pub fn attribute(sql: &str) -> Result<Vec<Statement<'_>>, String> {
    split(sql).into_iter().map(|s| Ok(Statement { sql: s, feature: feature_of(s)? })).collect()
}

/// The statements of `sql`, each without its final `;` (and so ending where a `;` may follow,
/// never inside a comment); empty ones (only comments) left out.
pub fn split(sql: &str) -> Vec<&str> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = find_from(sql, i, "\n").unwrap_or(bytes.len())
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = find_from(sql, i + 2, "*/").map_or(bytes.len(), |e| e + 2);
            }
            b'\'' | b'"' => i = end_of_quoted(bytes, i),
            b'$' => i = end_of_dollar_quoted(sql, i),
            b';' if !inside_trigger_body(&sql[start..i]) => {
                if !words(&sql[start..i]).is_empty() {
                    out.push(sql[start..i].trim_start());
                }
                start = i + 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    if !words(&sql[start..]).is_empty() {
        out.push(sql[start..].trim_start());
    }
    out
}

fn find_from(sql: &str, from: usize, needle: &str) -> Option<usize> {
    sql.get(from..)?.find(needle).map(|p| p + from)
}

/// The index after a quoted string or name starting at `i` (a doubled quote stays inside).
fn end_of_quoted(bytes: &[u8], i: usize) -> usize {
    let quote = bytes[i];
    let mut j = i + 1;
    while j < bytes.len() {
        if bytes[j] == quote {
            if bytes.get(j + 1) == Some(&quote) {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j += 1;
    }
    bytes.len()
}

/// The index after a dollar-quoted body starting at `i`, or `i + 1` when `$` starts none
/// (a parameter such as `$1`).
fn end_of_dollar_quoted(sql: &str, i: usize) -> usize {
    let rest = &sql[i + 1..];
    let tag_len =
        rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
    let tag = &rest[..tag_len];
    let opens = rest[tag_len..].starts_with('$') && !tag.starts_with(|c: char| c.is_ascii_digit());
    if !opens {
        return i + 1;
    }
    let delimiter = format!("${tag}$");
    let body = i + delimiter.len();
    find_from(sql, body, &delimiter).map_or(sql.len(), |e| e + delimiter.len())
}

/// Whether `text`, a statement so far, is a trigger whose body has not reached its `END` yet.
fn inside_trigger_body(text: &str) -> bool {
    let w = words(text);
    let is_trigger =
        w.first().is_some_and(|c| c == "CREATE") && w.iter().take(4).any(|x| x == "TRIGGER");
    is_trigger && w.iter().any(|x| x == "BEGIN") && w.last().is_none_or(|x| x != "END")
}

/// The statement's words outside comments, strings and bodies, upper-cased, quotes kept off
/// names.
fn words(text: &str) -> Vec<String> {
    let spaced: String = plain(text)
        .chars()
        .map(|c| if matches!(c, '(' | ')' | ',' | ';') { ' ' } else { c })
        .collect();
    spaced.split_whitespace().map(|w| w.trim_matches('"').to_ascii_uppercase()).collect()
}

/// The feature of one statement, from the object it makes or changes.
fn feature_of(statement: &str) -> Result<Option<Feature>, String> {
    let w = words(statement);
    // A `SELECT` changes nothing (a version kept only to match the other dialect's); a `PRAGMA`
    // sets the migration's connection, wherever its neighbours run.
    if w.first().is_some_and(|x| x == "SELECT" || x == "PRAGMA") {
        return Ok(None);
    }
    let object = target(&w).ok_or_else(|| {
        let head: String = w.iter().take(6).cloned().collect::<Vec<_>>().join(" ");
        format!("a migration statement of a kind not attributed to a feature: {head} …")
    })?;
    let name = object.rsplit('.').next().unwrap_or(&object).to_ascii_lowercase();
    if !name.starts_with("jadpo_") {
        return Ok(None);
    }
    Feature::of_object(&name)
        .map(Some)
        .ok_or_else(|| format!("{name} belongs to no feature: add it to a feature's tables"))
}

/// The name of the object a statement makes or changes (a trigger's or index's table).
fn target(w: &[String]) -> Option<String> {
    let is = |i: usize, word: &str| w.get(i).is_some_and(|x| x == word);
    let name_after = |mut i: usize, noise: &[&str]| {
        while w.get(i).is_some_and(|x| noise.contains(&x.as_str())) {
            i += 1;
        }
        w.get(i).cloned()
    };
    let table_after_on = |from: usize| {
        let on = w.iter().skip(from).position(|x| x == "ON")? + from;
        name_after(on + 1, &["ONLY"])
    };
    match w.first()?.as_str() {
        "CREATE" => {
            let mut i = 1;
            while w.get(i).is_some_and(|x| {
                ["OR", "REPLACE", "UNIQUE", "TEMP", "TEMPORARY"].contains(&x.as_str())
            }) {
                i += 1;
            }
            match w.get(i)?.as_str() {
                "TABLE" => name_after(i + 1, &["IF", "NOT", "EXISTS"]),
                "FUNCTION" => name_after(i + 1, &[]),
                "INDEX" | "TRIGGER" => table_after_on(i + 1),
                _ => None,
            }
        }
        "ALTER" if is(1, "TABLE") => name_after(2, &["IF", "EXISTS", "ONLY"]),
        "ALTER" if is(1, "FUNCTION") => name_after(2, &[]),
        "DROP" if ["TABLE", "INDEX", "FUNCTION", "TRIGGER"].iter().any(|k| is(1, k)) => {
            name_after(2, &["IF", "EXISTS"])
        }
        "INSERT" if is(1, "INTO") => name_after(2, &[]),
        "DELETE" if is(1, "FROM") => name_after(2, &[]),
        "UPDATE" => name_after(1, &["ONLY"]),
        _ => None,
    }
}

/// The function a `CREATE [OR REPLACE] FUNCTION` statement makes.
pub fn created_function(statement: &str) -> Option<String> {
    let w = words(statement);
    let is_function = w.first().is_some_and(|x| x == "CREATE")
        && w.iter()
            .skip(1)
            .find(|x| !["OR", "REPLACE"].contains(&x.as_str()))
            .is_some_and(|x| x == "FUNCTION");
    is_function.then(|| target(&w)).flatten().map(|n| n.to_ascii_lowercase())
}

/// What a statement makes, keyed as schema drift names missing things: a table (`t`), each
/// column it is made with or given (`t.c`), an index (`t:i`). Other statements make nothing
/// that is named here.
pub fn items(statement: &str) -> Vec<String> {
    let text = plain(statement);
    let w = words(statement);
    let lower = |s: &str| s.trim_matches('"').to_ascii_lowercase();
    let Some(object) = target(&w).map(|t| lower(&t)) else { return Vec::new() };
    let head: Vec<&str> = w.iter().take(3).map(String::as_str).collect();
    match head.as_slice() {
        ["CREATE", "TABLE", ..] => {
            let columns = table_body(&text).map(|body| column_names(&body)).unwrap_or_default();
            std::iter::once(object.clone())
                .chain(columns.into_iter().map(|c| format!("{object}.{c}")))
                .collect()
        }
        ["ALTER", "TABLE", ..] => {
            added_columns(&w).into_iter().map(|c| format!("{object}.{c}")).collect()
        }
        ["CREATE", "INDEX" | "UNIQUE", ..] => {
            let at = w.iter().position(|x| x == "INDEX").map_or(0, |i| i + 1);
            let index = w
                .iter()
                .skip(at)
                .find(|x| !["IF", "NOT", "EXISTS", "CONCURRENTLY"].contains(&x.as_str()));
            index.map(|i| vec![format!("{object}:{}", lower(i))]).unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// `statement` without comments, its string literals emptied (`''`) and its dollar-quoted bodies
/// too (`$$`), case kept.
fn plain(statement: &str) -> String {
    let bytes = statement.as_bytes();
    let mut out = String::with_capacity(statement.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = find_from(statement, i, "\n").unwrap_or(bytes.len());
                out.push(' ');
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = find_from(statement, i + 2, "*/").map_or(bytes.len(), |e| e + 2);
                out.push(' ');
            }
            b'\'' => {
                i = end_of_quoted(bytes, i);
                out.push_str("''");
            }
            b'$' => {
                let end = end_of_dollar_quoted(statement, i);
                out.push_str(if end > i + 1 { " $$ " } else { "$" });
                i = end;
            }
            _ => {
                let c = statement[i..].chars().next().unwrap_or(' ');
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// The text between a `CREATE TABLE`'s outer parentheses.
fn table_body(text: &str) -> Option<String> {
    let open = text.find('(')?;
    let mut depth = 0_usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(text[open + 1..open + i].to_owned());
                }
            }
            _ => {}
        }
    }
    None
}

/// The column names of a table body: the first word of each top-level part that is not a
/// table constraint.
fn column_names(body: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut depth = 0_usize;
    for c in body.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = parts.last_mut() {
            last.push(c);
        }
    }
    const CONSTRAINTS: [&str; 6] =
        ["PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "CONSTRAINT", "EXCLUDE"];
    parts
        .iter()
        .filter_map(|p| p.split_whitespace().next())
        .filter(|first| !CONSTRAINTS.contains(&first.to_ascii_uppercase().as_str()))
        .map(|first| first.trim_matches('"').to_ascii_lowercase())
        .collect()
}

/// The columns an `ALTER TABLE` adds (`ADD [COLUMN] [IF NOT EXISTS] name`, each clause).
fn added_columns(w: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, word) in w.iter().enumerate() {
        if word != "ADD" {
            continue;
        }
        let rest = w
            .iter()
            .skip(i + 1)
            .filter(|x| !["COLUMN", "IF", "NOT", "EXISTS"].contains(&x.as_str()));
        if let Some(name) = rest.clone().next().filter(|n| {
            !["CONSTRAINT", "PRIMARY", "UNIQUE", "FOREIGN", "CHECK"].contains(&n.as_str())
        }) {
            out.push(name.to_ascii_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_at_semicolons_outside_comments_quotes_and_bodies() {
        let sql = "-- a; comment\nCREATE TABLE a (x TEXT DEFAULT ';');\n/* b; */\n\
                   CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$;\n\
                   CREATE TRIGGER t AFTER INSERT ON a BEGIN INSERT INTO b VALUES (1); END;\n\
                   UPDATE a SET x = $1;\n-- trailing comment only\n";
        let parts = split(sql);
        assert_eq!(parts.len(), 4, "{parts:#?}");
        assert!(parts[0].ends_with("DEFAULT ';')"), "{}", parts[0]);
        assert!(parts[1].ends_with("$body$"), "{}", parts[1]);
        assert!(parts[2].ends_with("END"), "{}", parts[2]);
        assert_eq!(parts[3], "UPDATE a SET x = $1");
        assert_eq!(split("SELECT 1 -- why\n;"), ["SELECT 1 -- why\n"], "a `;` may follow");
    }

    #[test]
    fn each_statement_belongs_to_the_feature_of_what_it_touches() {
        let sql = "CREATE TABLE IF NOT EXISTS jadpo_outbox (id TEXT);\n\
                   CREATE UNIQUE INDEX jadpo_flags_name ON jadpo_flags (name);\n\
                   ALTER TABLE jadpo_service_keys ADD COLUMN scopes TEXT;\n\
                   ALTER TABLE workflow_events ADD COLUMN IF NOT EXISTS actor VARCHAR(255);\n\
                   CREATE OR REPLACE FUNCTION jadpo_audit_row() RETURNS trigger AS $b$ BEGIN END $b$;\n\
                   CREATE FUNCTION jadpo_audit_trusted() RETURNS boolean AS $f$ SELECT true $f$;\n\
                   ALTER FUNCTION jadpo_audit_expire(text, timestamptz, bigint) SET search_path FROM CURRENT;\n\
                   CREATE TRIGGER jadpo_x AFTER INSERT ON jadpo_steps BEGIN SELECT 1; END;\n\
                   UPDATE jadpo_deliveries SET attempts = 0;\n\
                   DROP INDEX IF EXISTS jadpo_sessions_user";
        let got: Vec<Option<Feature>> = attribute(sql)
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .map(|s| s.feature)
            .collect();
        assert_eq!(
            got,
            [
                Some(Feature::Pipeline),
                Some(Feature::Flags),
                Some(Feature::ServiceKeys),
                None,
                Some(Feature::Audit),
                Some(Feature::Audit),
                Some(Feature::Audit),
                Some(Feature::StepRecords),
                Some(Feature::Pipeline),
                Some(Feature::SignIn),
            ]
        );
    }

    #[test]
    fn a_statement_names_the_tables_columns_and_indexes_it_makes() {
        let create = "-- why\nCREATE TABLE jadpo_outbox (\n    id TEXT PRIMARY KEY NOT NULL,\n    \
                      kind TEXT NOT NULL DEFAULT ',' CHECK (kind IN ('a', 'b')),\n    \
                      \"at\" INTEGER,\n    PRIMARY KEY (id),\n    UNIQUE (kind, at)\n)";
        assert_eq!(
            items(create),
            ["jadpo_outbox", "jadpo_outbox.id", "jadpo_outbox.kind", "jadpo_outbox.at"]
        );
        assert_eq!(
            items("ALTER TABLE jadpo_outbox ADD COLUMN IF NOT EXISTS encoding SMALLINT"),
            ["jadpo_outbox.encoding"]
        );
        assert_eq!(
            items("CREATE UNIQUE INDEX IF NOT EXISTS jadpo_x_idx ON jadpo_outbox (kind)"),
            ["jadpo_outbox:jadpo_x_idx"]
        );
        assert!(items("UPDATE jadpo_outbox SET kind = 'a'").is_empty());
        let function = "CREATE OR REPLACE FUNCTION jadpo_audit_row() RETURNS trigger AS $b$ $b$";
        assert_eq!(created_function(function).as_deref(), Some("jadpo_audit_row"));
        assert_eq!(created_function("CREATE TABLE jadpo_audit (x TEXT)"), None);
    }

    #[test]
    fn an_unplaced_jadpo_object_or_an_unknown_statement_is_refused() {
        let err = attribute("CREATE TABLE jadpo_mystery (x TEXT)").err().unwrap_or_default();
        assert!(err.contains("jadpo_mystery belongs to no feature"), "{err}");
        let err = attribute("GRANT SELECT ON jadpo_outbox TO someone").err().unwrap_or_default();
        assert!(err.contains("not attributed to a feature: GRANT SELECT ON"), "{err}");
    }
}
