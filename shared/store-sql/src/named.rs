//! Named placeholders made positional while the program compiles.
//!
//! An adapter's statement names its parameters (`WHERE run_id = $run_id`), as the slot's
//! parameter struct does; both drivers take positional `$1` … `$N`. These `const fn`s do the
//! rewrite inside [`sql!`](crate::sql)'s constants, so a misspelt name, an unused parameter or a
//! stray `$1` is a compile error at the statement, not a wrong binding at run time. Quoted
//! strings and identifiers are copied untouched (`'$.id'` is a JSON path, not a parameter).

/// The length of `text` once its `$name`s are positional. Fails the build on a name not in
/// `names`, a name of `names` the text never uses, or a positional placeholder.
pub const fn positional_len(text: &str, names: &[&str]) -> usize {
    rewrite(text.as_bytes(), names, None)
}

/// `text` with each `$name` replaced by `$` and its 1-based position in `names`; `L` is
/// [`positional_len`]'s answer.
pub const fn positional<const L: usize>(text: &str, names: &[&str]) -> [u8; L] {
    let mut out = [0u8; L];
    if rewrite(text.as_bytes(), names, Some(&mut out)) != L {
        panic!("positional: L is not positional_len's answer");
    }
    out
}

/// One pass over `text`: the rewritten length, writing into `out` when given.
const fn rewrite(text: &[u8], names: &[&str], mut out: Option<&mut [u8]>) -> usize {
    if names.len() > 64 {
        panic!("a statement of more than 64 parameters");
    }
    let mut used = 0u64;
    let mut quote = 0u8;
    let (mut i, mut o) = (0, 0);
    while i < text.len() {
        let c = text[i];
        if quote != 0 || c != b'$' {
            if quote != 0 && c == quote {
                quote = 0;
            } else if quote == 0 && (c == b'\'' || c == b'"') {
                quote = c;
            }
            o = put(&mut out, o, c);
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut end = start;
        while end < text.len() && is_name_byte(text[end]) {
            end += 1;
        }
        if end == start {
            panic!("a `$` in a statement's text names no parameter");
        }
        if text[start].is_ascii_digit() {
            panic!("a statement's text uses a positional placeholder: name it after its parameter");
        }
        let at = position(text, start, end, names);
        used |= 1 << at;
        o = put(&mut out, o, b'$');
        o = put_number(&mut out, o, at + 1);
        i = end;
    }
    let all = if names.len() == 64 { u64::MAX } else { (1u64 << names.len()) - 1 };
    if used != all {
        panic!("a statement's text leaves a parameter its slot declares unused");
    }
    o
}

const fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The index in `names` of `text[start..end]`; fails the build when it is not there.
const fn position(text: &[u8], start: usize, end: usize, names: &[&str]) -> usize {
    let mut n = 0;
    while n < names.len() {
        let name = names[n].as_bytes();
        if name.len() == end - start {
            let mut k = 0;
            while k < name.len() && name[k] == text[start + k] {
                k += 1;
            }
            if k == name.len() {
                return n;
            }
        }
        n += 1;
    }
    panic!("a statement's text names a parameter its slot does not declare")
}

const fn put(out: &mut Option<&mut [u8]>, at: usize, byte: u8) -> usize {
    if let Some(buffer) = out {
        buffer[at] = byte;
    }
    at + 1
}

const fn put_number(out: &mut Option<&mut [u8]>, at: usize, n: usize) -> usize {
    if n >= 10 {
        let at = put(out, at, b'0' + (n / 10) as u8);
        put(out, at, b'0' + (n % 10) as u8)
    } else {
        put(out, at, b'0' + n as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(text: &str, names: &[&str]) -> String {
        let mut out = vec![0u8; positional_len(text, names)];
        rewrite(text.as_bytes(), names, Some(&mut out));
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn names_become_their_positions_and_quotes_are_kept() {
        let names = ["run_id", "now", "run"];
        assert_eq!(
            rewritten("SELECT '$now', \"$x\" WHERE r = $run AND id = $run_id AND t < $now", &names),
            "SELECT '$now', \"$x\" WHERE r = $3 AND id = $1 AND t < $2"
        );
        let many: Vec<String> = (0..12).map(|n| format!("p{n}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let text = many.iter().map(|n| format!("${n}")).collect::<Vec<_>>().join(",");
        assert!(rewritten(&text, &many).ends_with("$10,$11,$12"), "{}", rewritten(&text, &many));
        assert_eq!(rewritten("$a::jsonb", &["a"]), "$1::jsonb");
    }

    #[test]
    fn a_wrong_name_an_unused_parameter_and_a_positional_placeholder_are_refused() {
        let refused = |text: &'static str, names: &'static [&'static str]| {
            std::panic::catch_unwind(|| positional_len(text, names)).is_err()
        };
        assert!(refused("WHERE id = $idd", &["id"]));
        assert!(refused("WHERE id = $id", &["id", "now"]));
        assert!(refused("WHERE id = $1", &["id"]));
        assert!(refused("WHERE id = $ ", &[]));
        assert!(!refused("WHERE id = $id AND x = $id", &["id"]));
    }
}
