use super::*;

fn vars(pairs: &[(&str, &str)]) -> Vars {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf";

/// A Secrets Manager stand-in: the ARN's last segment names a canned text; "down" fails.
async fn canned(secret: String) -> Result<String, String> {
    match secret.rsplit(':').next().unwrap_or_default() {
        "db-AbCdEf" => {
            Ok(r#"{"url":"postgres://u:s3cret@db/app?sslmode=verify-full","n":1}"#.into())
        }
        "keys-XyZ" => Ok("k1:AAAA".into()),
        "empty" => Ok(" ".into()),
        _ => Err("ResourceNotFoundException: no such secret".into()),
    }
}

#[tokio::test]
async fn references_become_the_variables_they_stand_for() {
    let given = vars(&[
        ("JADPO_SECRET_DATABASE_URL", &format!("{ARN}#url")),
        ("JADPO_SECRET_JADPO_SEALING_KEYS", "arn:aws:secretsmanager:r:1:secret:keys-XyZ"),
        ("JADPO_QUEUE_URL", "https://sqs/q"),
    ]);
    let out = resolve_with(given, canned).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out["DATABASE_URL"], "postgres://u:s3cret@db/app?sslmode=verify-full");
    assert_eq!(out["JADPO_SEALING_KEYS"], "k1:AAAA");
    assert_eq!(out["JADPO_QUEUE_URL"], "https://sqs/q");
    assert!(!out.keys().any(|k| k.starts_with(PREFIX)), "{out:?}");
}

#[tokio::test]
async fn refusals_name_the_variable_and_never_the_value() {
    let refused = |pairs: &[(&str, &str)]| {
        let given = vars(pairs);
        async move { resolve_with(given, canned).await.err().map(|e| e.to_string()) }
    };
    let cases: Vec<(Vec<(&str, String)>, &str)> = vec![
        (vec![("JADPO_SECRET_JADPO_QUEUE_URL", ARN.into())], "holds no secret"),
        (vec![("JADPO_SECRET_DATABASE_URL_", ARN.into())], "holds no secret"),
        (vec![("JADPO_SECRET_JADPO_CONNECTION__HEADER", ARN.into())], "holds no secret"),
        (
            vec![
                ("JADPO_SECRET_DATABASE_URL", ARN.into()),
                ("DATABASE_URL", "postgres://x".into()),
            ],
            "both DATABASE_URL and JADPO_SECRET_DATABASE_URL are set",
        ),
        (vec![("JADPO_SECRET_DATABASE_URL", "".into())], "must be a Secrets Manager"),
        (vec![("JADPO_SECRET_DATABASE_URL", format!("{ARN}#"))], "must be a Secrets Manager"),
        (vec![("JADPO_SECRET_DATABASE_URL", "arn with space".into())], "must be a Secrets Manager"),
        (vec![("JADPO_SECRET_DATABASE_URL", format!("{ARN}#password"))], "has no key \"password\""),
        (vec![("JADPO_SECRET_DATABASE_URL", format!("{ARN}#n"))], "non-string value at \"n\""),
        (
            vec![(
                "JADPO_SECRET_DATABASE_URL",
                "arn:aws:secretsmanager:r:1:secret:keys-XyZ#url".into(),
            )],
            "is not a JSON object",
        ),
        (vec![("JADPO_SECRET_DATABASE_URL", "arn:x:secret:empty".into())], "holds an empty value"),
        (
            vec![("JADPO_SECRET_DATABASE_URL", "arn:x:secret:gone".into())],
            "cannot read secret arn:x:secret:gone: ResourceNotFoundException",
        ),
    ];
    for (pairs, expected) in cases {
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let err = refused(&pairs).await.unwrap_or_else(|| panic!("{pairs:?} was accepted"));
        assert!(err.contains(expected), "{pairs:?}: {err}");
        assert!(!err.contains("s3cret") && !err.contains("AAAA"), "a value shown: {err}");
    }
}

#[tokio::test]
async fn without_references_nothing_is_fetched() {
    let given = vars(&[("DATABASE_URL", "postgres://127.0.0.1/app")]);
    let out = resolve_with(given.clone(), |_| async { Err::<String, _>("fetched".to_owned()) });
    assert_eq!(out.await, Ok(given.clone()));
    assert_eq!(resolve(given.clone()).await, Ok(given));
}
