//! The statement contract: a [`Statement`] is one dialect's SQL text for a slot, typed by the
//! slot's parameter struct ([`Params`]). A role binds a slot with that struct, field by field,
//! so a value given to the wrong parameter is either a type error or written beside the wrong
//! name; an adapter writes its text with the same names (`$run_id`, not `$1`), and the
//! [`sql!`](crate::sql) macro turns them into the dialect's positional `$1` … `$N` while the
//! program compiles, refusing a name the slot does not declare, a declared one left unused and
//! a bare `$1`. Nothing is left to line up by position on either side.
//!
//! The [`statements!`](crate::statements) macro writes a role's table of slots from one
//! declaration per statement — its name, its parameter struct and the parameters' names and
//! types — and lists them ([`Slot`]) for the test that reads every adapter's text.

use std::marker::PhantomData;

use jadpo_core::{On, Row, SqlValue, StoreError, Transaction, TransactionalStore};

#[doc(hidden)]
pub use crate::named::{positional, positional_len};

/// A slot's parameters: a struct the [`statements!`](crate::statements) macro generates, its
/// fields named and typed once, bound in declaration order.
pub trait Params {
    /// The bound values, `[SqlValue; N]`.
    type Values: AsRef<[SqlValue]>;
    /// The parameters' names, in binding order: the text's `$name`s become `$1` … `$N` by them.
    const NAMES: &'static [&'static str];
    /// The values, in [`Params::NAMES`] order.
    fn bind(self) -> Self::Values;
}

/// One statement's text, taking the parameters `P`.
pub struct Statement<P> {
    text: &'static str,
    params: PhantomData<fn(P)>,
}

impl<P> Clone for Statement<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Statement<P> {}

impl<P> std::fmt::Debug for Statement<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Statement").field(&self.text).finish()
    }
}

impl<P> Statement<P> {
    /// The statement whose text is `bytes`, already positional: what [`sql!`](crate::sql)
    /// makes of a named text. Not UTF-8 fails the build.
    #[doc(hidden)]
    pub const fn from_positional(bytes: &'static [u8]) -> Self {
        match std::str::from_utf8(bytes) {
            Ok(text) => Self { text, params: PhantomData },
            Err(_) => panic!("a statement's text is not UTF-8"),
        }
    }

    /// The SQL text, with positional placeholders.
    pub const fn text(self) -> &'static str {
        self.text
    }
}

impl<P: Params> Statement<P> {
    /// Runs in `tx`; the number of rows changed.
    pub async fn execute(self, tx: &mut dyn Transaction, params: P) -> Result<u64, StoreError> {
        tx.execute(self.text, params.bind().as_ref()).await
    }

    /// Runs in `tx`; its rows.
    pub async fn query(self, tx: &mut dyn Transaction, params: P) -> Result<Vec<Row>, StoreError> {
        tx.query(self.text, params.bind().as_ref()).await
    }

    /// Runs in `tx`; at most one row.
    pub async fn query_opt(
        self,
        tx: &mut dyn Transaction,
        params: P,
    ) -> Result<Option<Row>, StoreError> {
        tx.query_opt(self.text, params.bind().as_ref()).await
    }

    /// Runs in `tx`; exactly one row.
    pub async fn query_one(self, tx: &mut dyn Transaction, params: P) -> Result<Row, StoreError> {
        tx.query_one(self.text, params.bind().as_ref()).await
    }

    /// Runs on its own (autocommit); the number of rows changed.
    pub async fn execute_once(
        self,
        store: &dyn TransactionalStore,
        params: P,
    ) -> Result<u64, StoreError> {
        store.execute_once(self.text, params.bind().as_ref()).await
    }

    /// Runs on its own on `store` as advice ([`TransactionalStore::execute_advisory`]).
    pub async fn execute_advisory(
        self,
        store: &dyn TransactionalStore,
        params: P,
    ) -> Result<u64, StoreError> {
        store.execute_advisory(self.text, params.bind().as_ref()).await
    }

    /// Runs where the caller chose: inside its transaction, or on its own on `store`.
    pub async fn query_on(
        self,
        on: On<'_>,
        store: &dyn TransactionalStore,
        params: P,
    ) -> Result<Vec<Row>, StoreError> {
        let values = params.bind();
        match on {
            On::Tx(tx) => tx.query(self.text, values.as_ref()).await,
            On::Own => store.query_once(self.text, values.as_ref()).await,
        }
    }

    /// Runs on its own (autocommit); its rows.
    pub async fn query_once(
        self,
        store: &dyn TransactionalStore,
        params: P,
    ) -> Result<Vec<Row>, StoreError> {
        store.query_once(self.text, params.bind().as_ref()).await
    }
}

/// One slot of a statement table as the contract test reads it.
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    /// `Table.slot`, for messages.
    pub name: &'static str,
    /// The declared parameters, in order.
    pub params: &'static [&'static str],
    /// The dialect's text; `None` where the dialect needs no statement.
    pub text: Option<&'static str>,
}

/// What a slot field holds: a statement, or an optional one.
pub trait SlotText {
    /// The text, if any.
    fn slot_text(&self) -> Option<&'static str>;
}

impl<P> SlotText for Statement<P> {
    fn slot_text(&self) -> Option<&'static str> {
        Some(self.text)
    }
}

impl<P> SlotText for Option<Statement<P>> {
    fn slot_text(&self) -> Option<&'static str> {
        self.map(Statement::text)
    }
}

/// The `$n` placeholders `text` uses, in ascending order without repeats. Quoted strings and
/// identifiers are skipped.
pub fn placeholders(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut quote = None;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if c == b'$' => {
                let digits = bytes[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
                if let Ok(n) = text[i + 1..i + 1 + digits].parse::<usize>() {
                    found.push(n);
                }
                i += digits;
            }
            None => {}
        }
        i += 1;
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// Checks that `slot`'s text uses exactly `$1` … `$N` for its `N` declared parameters: the
/// mismatch, said in words, or `None`.
pub fn check(slot: &Slot) -> Option<String> {
    let text = slot.text?;
    let used = placeholders(text);
    let want: Vec<usize> = (1..=slot.params.len()).collect();
    (used != want).then(|| {
        format!(
            "{} declares {} parameter(s) ({}) but its text uses {:?}: {text}",
            slot.name,
            slot.params.len(),
            slot.params.join(", "),
            used.iter().map(|n| format!("${n}")).collect::<Vec<_>>()
        )
    })
}

/// Counts identifiers, for a statement's arity.
#[doc(hidden)]
#[macro_export]
macro_rules! count_params {
    () => { 0usize };
    ($head:ident $($tail:ident)*) => { 1usize + $crate::count_params!($($tail)*) };
}

/// The type of a slot: `Statement<P>`, or `Option<Statement<P>>` for an `optional` one.
#[doc(hidden)]
#[macro_export]
macro_rules! slot_type {
    (; $p:ident) => { $crate::Statement<$p> };
    (optional; $p:ident) => { Option<$crate::Statement<$p>> };
}

/// A slot's parameter struct: `Params(name: Type, ...)` declares it, `Params(..)` reuses one
/// declared by an earlier slot.
#[doc(hidden)]
#[macro_export]
macro_rules! slot_params {
    ($table:ident $field:ident $params:ident (..)) => {};
    ($table:ident $field:ident $params:ident ( $($param:ident : $ty:ty),* $(,)? )) => {
        #[doc = concat!("The parameters of [`", stringify!($table), "::", stringify!($field), "`].")]
        #[derive(Debug)]
        pub struct $params {
            $(
                #[allow(missing_docs)]
                pub $param: $ty,
            )*
        }

        impl $crate::Params for $params {
            type Values = [jadpo_core::SqlValue; $crate::count_params!($($param)*)];
            const NAMES: &'static [&'static str] = &[$(stringify!($param)),*];
            fn bind(self) -> Self::Values {
                [$(jadpo_core::SqlValue::from(self.$param)),*]
            }
        }
    };
}

/// Declares a role's statement table: one line per slot, `name: Params(param: Type, ...)`, or
/// `name: Params(...): optional` where a dialect may need no statement; `name: Params(..)`
/// takes the parameters of an earlier slot's struct. Each slot gets its
/// parameter struct `Params`, whose fields are the parameters; each adapter fills the table
/// with its own text through [`sql!`](crate::sql), naming the same parameters.
#[macro_export]
macro_rules! statements {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $params:ident $args:tt $(: $kind:ident)?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                pub $field: $crate::slot_type!($($kind)?; $params),
            )*
        }

        $(
            $crate::slot_params!($name $field $params $args);
        )*

        impl $name {
            /// Every slot: its name, its declared parameters and this dialect's text.
            pub fn slots(&self) -> Vec<$crate::Slot> {
                vec![$(
                    $crate::Slot {
                        name: concat!(stringify!($name), ".", stringify!($field)),
                        params: <$params as $crate::Params>::NAMES,
                        text: $crate::SlotText::slot_text(&self.$field),
                    },
                )*]
            }
        }
    };
}

/// One statement of a dialect: `sql!(Params, "… $name …")`, its text naming the parameters of
/// the slot's struct `Params`. The names become `$1` … `$N` in `Params`' order while the
/// program compiles; a name the struct does not declare, a declared one left unused, or a
/// positional `$1` fails the build.
#[macro_export]
macro_rules! sql {
    ($params:ty, $text:expr $(,)?) => {{
        const TEXT: &str = $text;
        const NAMES: &[&str] = <$params as $crate::Params>::NAMES;
        const LEN: usize = $crate::positional_len(TEXT, NAMES);
        const BYTES: [u8; LEN] = $crate::positional::<LEN>(TEXT, NAMES);
        $crate::Statement::<$params>::from_positional(&BYTES)
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_read_outside_quotes_once_each() {
        assert_eq!(placeholders("SELECT $1, $2, $1 WHERE x = '$3' AND \"$4\" = $10"), [1, 2, 10]);
        assert_eq!(placeholders("SELECT 1"), Vec::<usize>::new());
    }

    #[test]
    fn a_slot_whose_text_misses_or_adds_a_parameter_is_named() {
        let ok = Slot { name: "T.ok", params: &["a", "b"], text: Some("SELECT $1, $2") };
        assert_eq!(check(&ok), None);
        let short = Slot { name: "T.short", params: &["a", "b"], text: Some("SELECT $1") };
        assert!(check(&short).is_some_and(|m| m.contains("T.short declares 2")), "{short:?}");
        let long = Slot { name: "T.long", params: &["a"], text: Some("SELECT $1, $2") };
        assert!(check(&long).is_some_and(|m| m.contains("[\"$1\", \"$2\"]")));
        let gap = Slot { name: "T.gap", params: &["a", "b"], text: Some("SELECT $1, $3") };
        assert!(check(&gap).is_some());
        let none = Slot { name: "T.none", params: &["a"], text: None };
        assert_eq!(check(&none), None);
    }
}
