//! Who a request acts for. The HTTP edge resolves every request to exactly one [`Principal`] or
//! refuses it; everything it creates is recorded as owned by that principal
//! ([`Principal::owner`]), and everything it reads or changes must be owned by it.

use std::fmt;

/// The caller a request acts for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Principal {
    /// A service, authenticated by a service key: its name.
    Service(String),
    /// A person, authenticated by a browser session or an API token: the user's id.
    User(String),
}

impl Principal {
    /// `service` or `user`, for logs and problems (never the credential).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Service(_) => "service",
            Self::User(_) => "user",
        }
    }

    /// The owner written on what this principal creates: `service:<name>` or `user:<id>`. The
    /// kind is part of it, so a service and a user that share a name never share an object.
    pub fn owner(&self) -> String {
        match self {
            Self::Service(name) => format!("service:{name}"),
            Self::User(id) => format!("user:{id}"),
        }
    }

    /// The principal an owner string names (`service:<name>` or `user:<id>`, as
    /// [`Principal::owner`] writes it); `None` for any other text.
    pub fn from_owner(owner: &str) -> Option<Self> {
        let (kind, name) = owner.split_once(':')?;
        let plain = !name.is_empty()
            && name.len() <= 200
            && name.chars().all(|c| c.is_ascii_graphic() && c != ':');
        match kind {
            "service" if plain => Some(Self::Service(name.to_owned())),
            "user" if plain => Some(Self::User(name.to_owned())),
            _ => None,
        }
    }

    /// Whether an object recorded with `owner` is this principal's. An object with no owner (made
    /// before owners were recorded) is no principal's.
    pub fn owns(&self, owner: Option<&str>) -> bool {
        owner.is_some_and(|o| o == self.owner())
    }
}

/// Where the application keeps one kind of principal's records (its users, its services), so a
/// credential is read together with its principal's record in one statement: a credential whose
/// user or service is gone authenticates nobody. The identifiers are the declaration's, checked
/// to be plain SQL identifiers when the application is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntityRecord<'a> {
    pub table: &'a str,
    pub id_column: &'a str,
}

impl EntityRecord<'_> {
    /// `($1 id)` → a row if the record exists.
    pub fn find_by_id_sql(&self) -> String {
        format!("SELECT {} AS id FROM {} WHERE {} = $1", self.id_column, self.table, self.id_column)
    }

    /// `query` (a credential read) narrowed to rows whose `column` names an existing record:
    /// still one statement, with the same parameters.
    pub fn narrow(&self, query: &str, column: &str) -> String {
        format!(
            "SELECT c.* FROM ({query}) c WHERE EXISTS (SELECT 1 FROM {} r WHERE r.{} = c.{column})",
            self.table, self.id_column
        )
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.owner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_names_the_kind_so_a_service_and_a_user_never_share_objects() {
        let service = Principal::Service("shop".into());
        let user = Principal::User("shop".into());
        assert_eq!(service.owner(), "service:shop");
        assert_eq!(user.owner(), "user:shop");
        assert!(service.owns(Some("service:shop")));
        assert!(!user.owns(Some("service:shop")));
        assert!(!service.owns(Some("service:shop2")));
        assert!(!service.owns(None), "an object without an owner is nobody's");
    }
}
