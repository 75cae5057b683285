//! Secrets read at cold start, not carried in the function's configuration.
//!
//! A deployed function is given `JADPO_SECRET_<VARIABLE>=<secret ARN>[#<JSON key>]` instead of
//! `<VARIABLE>` itself: a database URL, the sealing keys or a connection's header then never sit
//! in the function's environment (which anyone allowed `lambda:GetFunctionConfiguration` reads)
//! nor in the stack's parameters. Each is read once per cold start with
//! `secretsmanager:GetSecretValue` (the template grants each function its own secrets only, all
//! fetched at once) and handed to the configuration as if it were the variable; the process
//! environment is not changed. Only variables that hold secrets may be given this way, and never
//! both ways at once. No error shows a secret's value.
//!
//! The SDK's types stay in this module: the rest of the edge sees [`Vars`] in and out.

use jadpo_runtime::config::Vars;

/// The prefix of a variable that names a secret instead of holding it.
pub const PREFIX: &str = "JADPO_SECRET_";

/// Why the secrets could not be read; the function does not start.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretError {
    /// The variable it stands for is not one that holds a secret.
    #[error(
        "{reference} stands for {target}, which holds no secret: only DATABASE_URL, \
         DATABASE_URL_<STORE>, JADPO_SEALING_KEYS and JADPO_CONNECTION_<NAME>_HEADER are read \
         from Secrets Manager"
    )]
    NotSecret {
        /// The `JADPO_SECRET_…` variable.
        reference: String,
        /// The variable it stands for.
        target: String,
    },
    /// The value is given both directly and as a secret.
    #[error("both {target} and {reference} are set: give {target} one way")]
    Both {
        /// The `JADPO_SECRET_…` variable.
        reference: String,
        /// The variable given directly too.
        target: String,
    },
    /// The reference is not `<ARN>[#<key>]`.
    #[error(
        "{reference} must be a Secrets Manager secret's ARN, optionally followed by #<JSON key>, \
         e.g. arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf#url"
    )]
    BadReference {
        /// The `JADPO_SECRET_…` variable.
        reference: String,
    },
    /// Secrets Manager did not answer with the secret.
    #[error("{reference}: cannot read secret {secret}: {reason}")]
    Fetch {
        /// The `JADPO_SECRET_…` variable.
        reference: String,
        /// The secret's ARN.
        secret: String,
        /// Why (the service's error, which never holds the value).
        reason: String,
    },
    /// The secret is not of the form the reference asks for.
    #[error("{reference}: secret {secret} {problem}")]
    Shape {
        /// The `JADPO_SECRET_…` variable.
        reference: String,
        /// The secret's ARN.
        secret: String,
        /// What is wrong with it (never its value).
        problem: String,
    },
}

/// One `JADPO_SECRET_<VARIABLE>` read from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The `JADPO_SECRET_…` variable.
    pub reference: String,
    /// The variable it stands for.
    pub target: String,
    /// The secret's ARN (or name).
    pub secret: String,
    /// The JSON key holding the value, when the secret is a JSON object.
    pub key: Option<String>,
}

/// Whether `variable` holds a secret the runtime reads.
fn holds_secret(variable: &str) -> bool {
    variable == "DATABASE_URL"
        || variable == "JADPO_SEALING_KEYS"
        || variable.strip_prefix("DATABASE_URL_").is_some_and(|s| !s.is_empty())
        || variable
            .strip_prefix("JADPO_CONNECTION_")
            .and_then(|s| s.strip_suffix("_HEADER"))
            .is_some_and(|s| !s.is_empty())
}

/// The secret references among `vars`, checked; nothing is fetched.
pub fn references(vars: &Vars) -> Result<Vec<Reference>, SecretError> {
    let mut out = Vec::new();
    for (reference, value) in vars.iter().filter(|(k, _)| k.starts_with(PREFIX)) {
        let target = reference[PREFIX.len()..].to_owned();
        if !holds_secret(&target) {
            return Err(SecretError::NotSecret { reference: reference.clone(), target });
        }
        if vars.get(&target).is_some_and(|v| !v.is_empty()) {
            return Err(SecretError::Both { reference: reference.clone(), target });
        }
        let (secret, key) = match value.trim().split_once('#') {
            Some((secret, key)) => (secret, Some(key.to_owned())),
            None => (value.trim(), None),
        };
        let malformed = secret.is_empty()
            || secret.chars().any(char::is_whitespace)
            || key.as_deref().is_some_and(str::is_empty);
        if malformed {
            return Err(SecretError::BadReference { reference: reference.clone() });
        }
        out.push(Reference {
            reference: reference.clone(),
            target,
            secret: secret.to_owned(),
            key,
        });
    }
    Ok(out)
}

/// The value `reference` asks for out of the secret's text: the whole text, or the string at
/// its JSON key.
pub fn extract(reference: &Reference, text: &str) -> Result<String, SecretError> {
    let shape = |problem: String| SecretError::Shape {
        reference: reference.reference.clone(),
        secret: reference.secret.clone(),
        problem,
    };
    let value = match &reference.key {
        None => text.to_owned(),
        Some(key) => {
            let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text)
                .map_err(|_| {
                    shape(format!("is not a JSON object (a key, {key:?}, was asked for)"))
                })?;
            match object.get(key) {
                Some(serde_json::Value::String(value)) => value.clone(),
                Some(_) => return Err(shape(format!("holds a non-string value at {key:?}"))),
                None => return Err(shape(format!("has no key {key:?}"))),
            }
        }
    };
    if value.trim().is_empty() {
        return Err(shape("holds an empty value".to_owned()));
    }
    Ok(value)
}

/// `vars` with every `JADPO_SECRET_<VARIABLE>` replaced by `<VARIABLE>` holding the secret's
/// value, read by `fetch` (the secret's ARN → its text, or why not).
pub async fn resolve_with<F, Fut>(mut vars: Vars, fetch: F) -> Result<Vars, SecretError>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<String, String>> + Send + 'static,
{
    let wanted = references(&vars)?;
    // All at once: each is a round trip of the cold start.
    let pending: Vec<_> = wanted.iter().map(|r| tokio::spawn(fetch(r.secret.clone()))).collect();
    for (reference, task) in wanted.iter().zip(pending) {
        let fetch_error = |reason: String| SecretError::Fetch {
            reference: reference.reference.clone(),
            secret: reference.secret.clone(),
            reason,
        };
        let text = task.await.map_err(|e| fetch_error(e.to_string()))?.map_err(fetch_error)?;
        vars.remove(&reference.reference);
        vars.insert(reference.target.clone(), extract(reference, &text)?);
    }
    Ok(vars)
}

/// [`resolve_with`] Secrets Manager, configured the standard way (region, credentials,
/// `AWS_ENDPOINT_URL_SECRETS_MANAGER`) over the one TLS stack. With no reference among `vars`,
/// no client is made.
pub async fn resolve(vars: Vars) -> Result<Vars, SecretError> {
    if !vars.keys().any(|k| k.starts_with(PREFIX)) {
        return Ok(vars);
    }
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(jadpo_queue_sqs::https_client())
        .load()
        .await;
    let client = aws_sdk_secretsmanager::Client::new(&config);
    resolve_with(vars, move |secret| {
        let client = client.clone();
        async move {
            let answer = client.get_secret_value().secret_id(secret).send().await;
            let answer = answer.map_err(|e| {
                let e = aws_sdk_secretsmanager::error::DisplayErrorContext(e);
                e.to_string()
            })?;
            answer
                .secret_string()
                .map(str::to_owned)
                .ok_or_else(|| "it holds binary data, not text".to_owned())
        }
    })
    .await
}

#[cfg(test)]
mod tests;
