//! What a queue message carries: a pointer to a row, a delivery or a workflow command, never its
//! payload. The database row is the truth; the message only says "look at this row now", so a
//! duplicate or a late copy is harmless. The body is JSON, written and read only here.

use serde::{Deserialize, Serialize};

/// The row a queue message points at. The two shapes are told apart by their id field
/// (`delivery_id` or `command_id`), the form every release has written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Pointer {
    /// A delivery of an event to a subscriber.
    Delivery {
        /// The store holding the delivery row (the event's store).
        store: String,
        delivery_id: String,
    },
    /// A workflow command to run.
    Command {
        /// The store holding the command and its run.
        store: String,
        command_id: String,
    },
}

impl Pointer {
    /// Reads a message body; the error says why and shows the body's start.
    pub fn parse(body: &str) -> Result<Self, String> {
        serde_json::from_str(body).map_err(|e| {
            let start: String = body.chars().take(80).collect();
            let cut = if start.len() < body.len() { "…" } else { "" };
            format!("not a delivery or command pointer ({e}): {start}{cut}")
        })
    }

    /// The message body.
    pub fn to_body(&self) -> String {
        // A struct of strings always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The store the row is in.
    pub fn store(&self) -> &str {
        match self {
            Self::Delivery { store, .. } | Self::Command { store, .. } => store,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_round_trip_and_keep_their_wire_form() {
        let d = Pointer::Delivery { store: "main".into(), delivery_id: "d1".into() };
        assert_eq!(d.to_body(), r#"{"store":"main","delivery_id":"d1"}"#);
        let c = Pointer::Command { store: "main".into(), command_id: "c1".into() };
        assert_eq!(c.to_body(), r#"{"store":"main","command_id":"c1"}"#);
        assert_eq!(Pointer::parse(&d.to_body()), Ok(d));
        assert_eq!(Pointer::parse(&c.to_body()), Ok(c));
    }

    #[test]
    fn anything_else_is_refused_with_its_start() {
        for body in ["", "{}", r#"{"store":"main"}"#, r#"{"delivery_id":"x"}"#, "not json"] {
            let err = Pointer::parse(body).err().unwrap_or_default();
            assert!(err.starts_with("not a delivery or command pointer"), "{body}: {err}");
            assert!(err.ends_with(body), "{body}: {err}");
        }
    }
}
