//! Who may call an action or start a workflow: signed-in users, services (any, or only those
//! named), or anyone. The HTTP edge decides with [`Callers::admits`] before any handler runs; a
//! service key's scopes still apply on top.

use jadpo_core::model::principal::Principal;

/// Which services may call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Services {
    None,
    Any,
    Named(Vec<String>),
}

/// Which services may call (as [`Callers::services_may`] tells it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceCallers<'a> {
    /// None.
    None,
    /// Any service with a key.
    Any,
    /// Only these, by name.
    Named(&'a [String]),
}

/// Who may call an action or start a workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callers {
    users: bool,
    services: Services,
    anyone: bool,
}

impl Callers {
    /// Any service whose key's scopes allow it (an action's default).
    pub fn services() -> Self {
        Self { users: false, services: Services::Any, anyone: false }
    }

    /// Only the services named.
    pub fn named_services(names: &[&str]) -> Self {
        let named = names.iter().map(|n| (*n).to_owned()).collect();
        Self { users: false, services: Services::Named(named), anyone: false }
    }

    /// Signed-in users only.
    pub fn users() -> Self {
        Self { users: true, services: Services::None, anyone: false }
    }

    /// Signed-in users and any service (a workflow's default).
    pub fn users_and_services() -> Self {
        Self { users: true, services: Services::Any, anyone: false }
    }

    /// Anyone, signed in or not.
    pub fn anyone() -> Self {
        Self { users: true, services: Services::Any, anyone: true }
    }

    /// These callers and signed-in users.
    #[must_use]
    pub fn and_users(mut self) -> Self {
        self.users = true;
        self
    }

    /// Whether `principal` (`None`: no credential at all) may call.
    pub fn admits(&self, principal: Option<&Principal>) -> bool {
        match principal {
            None => self.anyone,
            Some(Principal::User(_)) => self.users,
            Some(Principal::Service(name)) => match &self.services {
                Services::None => false,
                Services::Any => true,
                Services::Named(names) => names.iter().any(|n| n == name),
            },
        }
    }

    /// Whether signed-in users may call.
    pub fn users_may(&self) -> bool {
        self.users
    }

    /// Which services may call.
    pub fn services_may(&self) -> ServiceCallers<'_> {
        match &self.services {
            Services::None => ServiceCallers::None,
            Services::Any => ServiceCallers::Any,
            Services::Named(names) => ServiceCallers::Named(names),
        }
    }

    /// Whether a request without a credential may call.
    pub fn open_to_anyone(&self) -> bool {
        self.anyone
    }

    /// Who may call, for a refusal's detail.
    pub fn describe(&self) -> String {
        if self.anyone {
            return "anyone".to_owned();
        }
        let services = match &self.services {
            Services::None => None,
            Services::Any => Some("services".to_owned()),
            Services::Named(names) => Some(format!("the services {}", names.join(", "))),
        };
        let users = self.users.then(|| "signed-in users".to_owned());
        let parts: Vec<String> = users.into_iter().chain(services).collect();
        if parts.is_empty() { "no one".to_owned() } else { parts.join(" and ") }
    }
}

impl Default for Callers {
    fn default() -> Self {
        Self::services()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_caller_is_admitted_only_where_declared() {
        let alice = Principal::User("alice".into());
        let billing = Principal::Service("billing".into());
        let ops = Principal::Service("ops".into());
        let services = Callers::services();
        assert!(services.admits(Some(&billing)) && !services.admits(Some(&alice)));
        assert!(!services.admits(None));
        let users = Callers::users();
        assert!(users.admits(Some(&alice)) && !users.admits(Some(&billing)));
        let named = Callers::named_services(&["ops"]).and_users();
        assert!(named.admits(Some(&ops)) && !named.admits(Some(&billing)));
        assert!(named.admits(Some(&alice)) && !named.admits(None));
        assert!(Callers::anyone().admits(None) && Callers::anyone().open_to_anyone());
        assert_eq!(named.describe(), "signed-in users and the services ops");
        assert_eq!(Callers::users_and_services().describe(), "signed-in users and services");
    }
}
