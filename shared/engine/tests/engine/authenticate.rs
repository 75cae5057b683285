//! `authenticate`, the one use case every edge resolves a credential through, on both adapters:
//! a service key and an API token stand for their principals while they live and their
//! principals' records exist; anything else authenticates nobody, worded by its kind.

use chrono::Duration;
use jadpo_core::model::principal::Principal;
use jadpo_core::model::service_key::Scopes;
use jadpo_engine::authenticate::{AuthError, Credential, CredentialKind, authenticate};
use jadpo_engine::operate::Operator;
use jadpo_engine::operate::keys::KeyOps;
use jadpo_engine::operate::tokens::TokenOps;
use jadpo_test_env::{Env, Kind};

fn operator() -> Operator {
    Operator::new("ann").unwrap_or_else(|e| panic!("{e}"))
}

fn refused_as(result: Result<impl std::fmt::Debug, AuthError>) -> Option<CredentialKind> {
    match result {
        Err(AuthError::Unknown(kind)) => Some(kind),
        other => panic!("expected an unknown credential, got {other:?}"),
    }
}

async fn a_service_key_stands_for_its_service_until_revoked(kind: Kind) {
    let env = Env::shop(kind).await;
    let add = "INSERT INTO shop_services (id) VALUES ('batch')";
    env.store("main").execute_once(add, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    let keys = KeyOps::new(&env.engine);
    let scopes = Scopes::parse(&["runs".to_owned()]).unwrap_or_else(|e| panic!("{e}"));
    let key = keys.issue("batch", None, &scopes, &operator()).await;
    let key = key.unwrap_or_else(|e| panic!("{e}"));
    let who = authenticate(&env.engine, Credential::Bearer(&key.secret)).await;
    let who = who.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    assert_eq!(who.principal, Principal::Service("batch".to_owned()), "{kind:?}");
    assert_eq!((who.scopes, who.session), (Some(scopes), None), "{kind:?}");

    keys.revoke(&key.id, &operator()).await.unwrap_or_else(|e| panic!("{e}"));
    let revoked = authenticate(&env.engine, Credential::Bearer(&key.secret)).await;
    assert_eq!(refused_as(revoked), Some(CredentialKind::ServiceKey), "{kind:?}");
    let made_up = authenticate(&env.engine, Credential::Bearer("jadpo_sk_made_up")).await;
    assert_eq!(refused_as(made_up), Some(CredentialKind::ServiceKey), "{kind:?}");
}

async fn an_api_token_stands_for_its_user_while_the_user_exists(kind: Kind) {
    let env = Env::shop(kind).await;
    let add = "INSERT INTO shop_customers (id, email) VALUES ('pat', 'pat@example.com')";
    env.store("main").execute_once(add, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    let until = env.engine.clock.now() + Duration::days(1);
    let token = TokenOps::new(&env.engine).issue("pat", until, &operator()).await;
    let token = token.unwrap_or_else(|e| panic!("{e}"));
    let who = authenticate(&env.engine, Credential::Bearer(&token.secret)).await;
    let who = who.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    assert_eq!(who.principal, Principal::User("pat".to_owned()), "{kind:?}");
    assert_eq!(who.session.map(|(id, _)| id), Some(token.id.clone()), "{kind:?}");

    // An API token is not a browser session, though both are users' sessions.
    let browser = Credential::Browser { token: &token.secret, write: false, csrf: None };
    let as_browser = authenticate(&env.engine, browser).await;
    assert_eq!(refused_as(as_browser), Some(CredentialKind::BrowserSession), "{kind:?}");

    let gone = "DELETE FROM shop_customers WHERE id = 'pat'";
    env.store("main").execute_once(gone, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    let deleted = authenticate(&env.engine, Credential::Bearer(&token.secret)).await;
    assert_eq!(refused_as(deleted), Some(CredentialKind::ApiToken), "{kind:?}: user deleted");
}

async fn an_application_without_users_refuses_users_credentials(kind: Kind) {
    let app = jadpo_application::Application::builder("t")
        .store("main")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let env = Env::new(kind, app, jadpo_engine::EngineSettings::default()).await;
    let token = format!("{}{}", jadpo_core::model::user_session::TOKEN_PREFIX, "0".repeat(64));
    let browser = Credential::Browser { token: &token, write: true, csrf: None };
    for credential in [Credential::Bearer(&token), browser] {
        match authenticate(&env.engine, credential).await {
            Err(AuthError::NoUsers(_)) => {}
            other => panic!("{kind:?}: {credential:?} gave {other:?}"),
        }
    }
}

jadpo_test_env::both!(
    a_service_key_stands_for_its_service_until_revoked,
    an_api_token_stands_for_its_user_while_the_user_exists,
    an_application_without_users_refuses_users_credentials,
);
