//! The statement contract: a [`Statement`] is one dialect's SQL text for a slot whose parameters
//! the slot declares, and the number of them is part of its type, so a binding with one value
//! too many or too few does not compile. The [`statements!`](crate::statements) macro writes a
//! role's table of slots from one declaration per statement — its name and its parameters, in
//! order — and lists them ([`Slot`]) for the test that reads every adapter's text and checks
//! that it uses exactly `$1` … `$N`.

use jadpo_core::{On, Row, SqlValue, StoreError, Transaction, TransactionalStore};

/// One statement's text, taking `N` parameters `$1` … `$N`.
#[derive(Debug, Clone, Copy)]
pub struct Statement<const N: usize> {
    text: &'static str,
}

impl<const N: usize> Statement<N> {
    /// The statement `text`, which must use exactly `$1` … `$N` (checked by each adapter's tests
    /// through [`crate::SqlDialect::slots`]).
    pub const fn new(text: &'static str) -> Self {
        Self { text }
    }

    /// The SQL text.
    pub const fn text(self) -> &'static str {
        self.text
    }

    /// Runs in `tx`; the number of rows changed.
    pub async fn execute(
        self,
        tx: &mut dyn Transaction,
        params: [SqlValue; N],
    ) -> Result<u64, StoreError> {
        tx.execute(self.text, &params).await
    }

    /// Runs in `tx`; its rows.
    pub async fn query(
        self,
        tx: &mut dyn Transaction,
        params: [SqlValue; N],
    ) -> Result<Vec<Row>, StoreError> {
        tx.query(self.text, &params).await
    }

    /// Runs in `tx`; at most one row.
    pub async fn query_opt(
        self,
        tx: &mut dyn Transaction,
        params: [SqlValue; N],
    ) -> Result<Option<Row>, StoreError> {
        tx.query_opt(self.text, &params).await
    }

    /// Runs in `tx`; exactly one row.
    pub async fn query_one(
        self,
        tx: &mut dyn Transaction,
        params: [SqlValue; N],
    ) -> Result<Row, StoreError> {
        tx.query_one(self.text, &params).await
    }

    /// Runs on its own (autocommit); the number of rows changed.
    pub async fn execute_once(
        self,
        store: &dyn TransactionalStore,
        params: [SqlValue; N],
    ) -> Result<u64, StoreError> {
        store.execute_once(self.text, &params).await
    }

    /// Runs on its own on `store` as advice ([`TransactionalStore::execute_advisory`]).
    pub async fn execute_advisory(
        self,
        store: &dyn TransactionalStore,
        params: [SqlValue; N],
    ) -> Result<u64, StoreError> {
        store.execute_advisory(self.text, &params).await
    }

    /// Runs where the caller chose: inside its transaction, or on its own on `store`.
    pub async fn query_on(
        self,
        on: On<'_>,
        store: &dyn TransactionalStore,
        params: [SqlValue; N],
    ) -> Result<Vec<Row>, StoreError> {
        match on {
            On::Tx(tx) => tx.query(self.text, &params).await,
            On::Own => store.query_once(self.text, &params).await,
        }
    }

    /// Runs on its own (autocommit); its rows.
    pub async fn query_once(
        self,
        store: &dyn TransactionalStore,
        params: [SqlValue; N],
    ) -> Result<Vec<Row>, StoreError> {
        store.query_once(self.text, &params).await
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

impl<const N: usize> SlotText for Statement<N> {
    fn slot_text(&self) -> Option<&'static str> {
        Some(self.text)
    }
}

impl<const N: usize> SlotText for Option<Statement<N>> {
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

/// The type of a slot: `Statement<N>`, or `Option<Statement<N>>` for an `optional` one.
#[doc(hidden)]
#[macro_export]
macro_rules! slot_type {
    (; $($p:ident)*) => { $crate::Statement<{ $crate::count_params!($($p)*) }> };
    (optional; $($p:ident)*) => { Option<$crate::Statement<{ $crate::count_params!($($p)*) }>> };
}

/// Declares a role's statement table: one line per slot, `name(param, ...)`, or
/// `name(param, ...): optional` where a dialect may need no statement. Each adapter fills the
/// table with its own text; the role's implementation binds each slot with an array the
/// compiler checks against the declared count.
#[macro_export]
macro_rules! statements {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident ( $($param:ident),* $(,)? ) $(: $kind:ident)?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                pub $field: $crate::slot_type!($($kind)?; $($param)*),
            )*
        }

        impl $name {
            /// Every slot: its name, its declared parameters and this dialect's text.
            pub fn slots(&self) -> Vec<$crate::Slot> {
                vec![$(
                    $crate::Slot {
                        name: concat!(stringify!($name), ".", stringify!($field)),
                        params: &[$(stringify!($param)),*],
                        text: $crate::SlotText::slot_text(&self.$field),
                    },
                )*]
            }
        }
    };
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
