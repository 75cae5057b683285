use jadpo_application::Application;

use super::*;

fn app() -> Application {
    Application::builder("shop")
        .store("main")
        .store("warehouse")
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn vars(pairs: &[(&str, &str)]) -> Vars {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

#[test]
fn local_runs_default_every_store_to_a_file() {
    let c = Config::from_vars(&app(), &vars(&[]), Mode::Local(Path::new(".jadpo")));
    let c = c.unwrap_or_else(|e| panic!("{e}"));
    let urls: Vec<_> = c.stores.iter().map(|s| (s.name.as_str(), s.url.display())).collect();
    assert_eq!(
        urls,
        vec![
            ("main", "sqlite://.jadpo/main.db".to_owned()),
            ("warehouse", "sqlite://.jadpo/warehouse.db".to_owned())
        ]
    );
    assert_eq!(c.postgres.pool_size, 4);
    assert_eq!(c.delivery_linger, std::time::Duration::from_millis(2), "the linger's default");
    let never = vars(&[("JADPO_DELIVERY_LINGER_MS", "0")]);
    let c = Config::from_vars(&app(), &never, Mode::Local(Path::new(".jadpo")));
    let c = c.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.delivery_linger, std::time::Duration::ZERO, "0: workers never wait");
    let trusted = std::time::Duration::from_secs(1);
    assert_eq!(c.engine.breaker_trusted_for, trusted, "a closed breaker's trust, by default");
    let always_read = vars(&[("JADPO_BREAKER_TRUSTED_MS", "0")]);
    let c = Config::from_vars(&app(), &always_read, Mode::Local(Path::new(".jadpo")));
    let c = c.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.engine.breaker_trusted_for, std::time::Duration::ZERO, "0: read every time");
    let two = std::time::Duration::from_secs(2);
    assert_eq!(c.engine.relay_margin, two, "the relay's margin, by default");
    let wide = vars(&[("JADPO_RELAY_MARGIN_MS", "5000")]);
    let c = Config::from_vars(&app(), &wide, Mode::Local(Path::new(".jadpo")));
    let margin = c.map(|c| c.engine.relay_margin).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(margin, std::time::Duration::from_secs(5));
    let quota = vars(&[("JADPO_UPLOAD_QUOTA_FILES", "3"), ("JADPO_UPLOAD_QUOTA_BYTES", "4096")]);
    let c = Config::from_vars(&app(), &quota, Mode::Local(Path::new(".jadpo")));
    let quota = c.map(|c| c.engine.upload_quota).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((quota.files, quota.bytes), (3, 4096));
}

#[test]
fn urls_come_from_database_url_and_per_store_variables() {
    let c = Config::from_vars(
        &app(),
        &vars(&[
            ("DATABASE_URL", "postgres://u:secret@db/app?sslmode=verify-full"),
            ("DATABASE_URL_WAREHOUSE", "sqlite://:memory:"),
        ]),
        Mode::Operator,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.stores[0].url,
        DatabaseUrl::Postgres("postgres://u:secret@db/app?sslmode=verify-full".into())
    );
    assert_eq!(c.stores[0].url.display(), "postgres://u:***@db/app?sslmode=verify-full");
    assert_eq!(c.stores[1].url, DatabaseUrl::Sqlite(SqlitePath::Memory));
}

#[test]
fn without_local_defaults_only_the_given_stores_are_acted_on() {
    let c = Config::from_vars(&app(), &vars(&[("DATABASE_URL", "sqlite://x.db")]), Mode::Operator);
    assert_eq!(c.map(|c| c.stores.len()).ok(), Some(1));
    let err = Config::from_vars(&app(), &vars(&[]), Mode::Operator).err();
    assert_eq!(
        err.map(|e| e.to_string()),
        Some("store \"main\" has no database: set DATABASE_URL".into())
    );
}

#[test]
fn bad_settings_are_refused_with_the_variable_named() {
    let msg = |pairs: &[(&str, &str)]| {
        Config::from_vars(&app(), &vars(pairs), Mode::Local(Path::new(".")))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(
        msg(&[("DATABASE_URL", "mysql://u:pw@h/db")])
            .contains("DATABASE_URL must start with postgres://")
    );
    assert!(!msg(&[("DATABASE_URL", "mysql://u:pw@h/db")]).contains("pw@"), "password leaked");
    let refused = msg(&[("DATABASE_URL", "mysql://u@h/db?sslmode=require&password=hunter2")]);
    assert!(!refused.contains("hunter2"), "a password in the query leaked: {refused}");
    assert!(refused.contains("sslmode=require&password=***"), "{refused}");
    let shown = crate::config::redact("postgres://u:pw@h/db?SSLPassword=k3y&apiToken=t0k&a=b");
    assert_eq!(shown, "postgres://u:***@h/db?SSLPassword=***&apiToken=***&a=b");
    assert!(
        msg(&[("JADPO_PG_POOL_SIZE", "0")]).contains("JADPO_PG_POOL_SIZE must be a whole number")
    );
    assert!(
        msg(&[("JADPO_PG_CONNECT_TIMEOUT_MS", "soon")]).contains("positive number of milliseconds")
    );
    for (variable, huge) in [
        ("JADPO_RETAIN_HANDLED_SECS", "99999999999999"),
        ("JADPO_IDEMPOTENCY_RETENTION_SECS", "3155760001"),
        ("JADPO_PG_ACQUIRE_TIMEOUT_MS", "18446744073709551615"),
    ] {
        let refused = msg(&[(variable, huge)]);
        assert!(refused.contains(&format!("{variable} must be a positive number")), "{refused}");
        assert!(refused.contains("at most 100 years"), "{refused}");
    }
    assert!(msg(&[("JADPO_RETAIN_HANDLED_SECS", "3155760000")]).is_empty(), "100 years is allowed");
    for public in ["0.0.0.0:3000", "192.168.1.20:3000", "[::]:3000"] {
        let refused = msg(&[("JADPO_LISTEN", public)]);
        assert!(refused.contains("is not a loopback address"), "{public}: {refused}");
        assert!(refused.contains("JADPO_LISTEN_PUBLIC=1"), "{refused}");
        let allowed = msg(&[("JADPO_LISTEN", public), ("JADPO_LISTEN_PUBLIC", "1")]);
        assert!(allowed.is_empty(), "{public} with the flag: {allowed}");
    }
    for loopback in ["127.0.0.1:3000", "[::1]:3000"] {
        assert!(msg(&[("JADPO_LISTEN", loopback)]).is_empty(), "{loopback}");
    }
    for workers in ["0", "65", "many"] {
        let refused = msg(&[("JADPO_DELIVERY_WORKERS", workers)]);
        assert!(refused.contains("JADPO_DELIVERY_WORKERS must be a whole number"), "{refused}");
    }
    let refused = msg(&[("JADPO_MAX_BACKLOG", "-1")]);
    assert!(refused.contains("JADPO_MAX_BACKLOG must be a whole number"), "{refused}");
    for batch in ["0", "101", "lots"] {
        let refused = msg(&[("JADPO_DELIVERY_BATCH", batch)]);
        assert!(refused.contains("JADPO_DELIVERY_BATCH must be a whole number"), "{refused}");
    }
    for trusted in ["-1", "60001", "1s"] {
        let refused = msg(&[("JADPO_BREAKER_TRUSTED_MS", trusted)]);
        assert!(refused.contains("JADPO_BREAKER_TRUSTED_MS must be a whole number"), "{refused}");
    }
    for margin in ["-1", "60001", "2s"] {
        let refused = msg(&[("JADPO_RELAY_MARGIN_MS", margin)]);
        assert!(refused.contains("JADPO_RELAY_MARGIN_MS must be a whole number"), "{refused}");
    }
    for (variable, bad) in [("JADPO_UPLOAD_QUOTA_FILES", "0"), ("JADPO_UPLOAD_QUOTA_BYTES", "-5")] {
        let refused = msg(&[(variable, bad)]);
        assert!(refused.contains(&format!("{variable} must be a whole number")), "{refused}");
    }
    for linger in ["-1", "101", "2ms"] {
        let refused = msg(&[("JADPO_DELIVERY_LINGER_MS", linger)]);
        assert!(refused.contains("JADPO_DELIVERY_LINGER_MS must be a whole number"), "{refused}");
    }
    assert!(
        msg(&[("DATABASE_URL_WAREHOSE", "sqlite://w.db")])
            .contains("declares no store \"warehose\"")
    );
    assert!(
        msg(&[("DATABASE_URL_MAIN", "sqlite://w.db")]).contains("takes its URL from DATABASE_URL")
    );
    assert!(msg(&[("DATABASE_URL", "sqlite://")]).contains("must start with"));
}

#[test]
fn connections_default_to_the_local_sink_and_are_required_elsewhere() {
    let app = Application::builder("shop")
        .store("main")
        .connection("mailer")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let local = Config::from_vars(
        &app,
        &vars(&[("JADPO_LISTEN", "127.0.0.1:4000")]),
        Mode::Local(Path::new(".")),
    );
    let local = local.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(local.connections["mailer"].as_str(), "http://127.0.0.1:4000/sink/mailer");
    let deployed =
        Config::from_vars(&app, &vars(&[("DATABASE_URL", "sqlite://x.db")]), Mode::Deployed).err();
    assert_eq!(
        deployed.map(|e| e.to_string()),
        Some("connection \"mailer\" has no URL: set JADPO_CONNECTION_MAILER_URL".to_owned())
    );
    let unsealed = vars(&[
        ("DATABASE_URL", "sqlite://x.db"),
        ("JADPO_CONNECTION_MAILER_URL", "https://mail.example/v1"),
        ("JADPO_QUEUE_URL", "http://127.0.0.1:1/q"),
    ]);
    let refused = Config::from_vars(&app, &unsealed, Mode::Deployed).err().map(|e| e.to_string());
    assert!(refused.is_some_and(|e| e.contains("JADPO_SEALING_KEYS")), "keys are required");
    let key = jadpo_engine::sealing::SealingKeys::generate("k1").unwrap_or_else(|e| panic!("{e}"));
    let given = vars(&[
        ("DATABASE_URL", "sqlite://x.db"),
        ("JADPO_CONNECTION_MAILER_URL", "https://mail.example/v1"),
        ("JADPO_QUEUE_URL", "http://127.0.0.1:1/q"),
        ("JADPO_SEALING_KEYS", &key),
    ]);
    let c = Config::from_vars(&app, &given, Mode::Deployed).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.connections["mailer"].as_str(), "https://mail.example/v1");
    let plain = vars(&[
        ("DATABASE_URL", "sqlite://x.db"),
        ("JADPO_CONNECTION_MAILER_URL", "http://mail.example/v1"),
        ("JADPO_QUEUE_URL", "http://127.0.0.1:1/q"),
        ("JADPO_SEALING_KEYS", &key),
    ]);
    let refused = Config::from_vars(&app, &plain, Mode::Deployed).err().map(|e| e.to_string());
    let refused = refused.unwrap_or_default();
    assert!(refused.contains("must be an https:// URL when deployed"), "{refused}");
    let mut test_bed = plain.clone();
    test_bed.insert("JADPO_INSECURE_HTTP_CONNECTIONS".to_owned(), "1".to_owned());
    assert!(Config::from_vars(&app, &test_bed, Mode::Deployed).is_ok(), "the override was ignored");
    let bad =
        vars(&[("DATABASE_URL", "sqlite://x.db"), ("JADPO_CONNECTION_MAILER_URL", "ftp://x")]);
    let err = Config::from_vars(&app, &bad, Mode::Deployed)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("JADPO_CONNECTION_MAILER_URL must be an http:// or https:// URL"),
        "{err}"
    );
    let port = vars(&[("JADPO_LISTEN", "localhost")]);
    assert!(Config::from_vars(&app, &port, Mode::Local(Path::new("."))).is_err());
}

#[test]
fn deployed_functions_need_every_store_and_operators_only_the_default() {
    let only_main = vars(&[("DATABASE_URL", "postgres://db/app?sslmode=verify-full")]);
    let err = Config::from_vars(&app(), &only_main, Mode::Deployed).err().map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("store \"warehouse\" has no database: set DATABASE_URL_WAREHOUSE")
    );
    let operator =
        Config::from_vars(&app(), &only_main, Mode::Operator).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(operator.stores.len(), 1);
    assert!(operator.connections.is_empty());
}

#[test]
fn deployed_functions_need_a_queue() {
    let app = Application::builder("shop").store("main").build().unwrap_or_else(|e| panic!("{e}"));
    let no_queue = vars(&[("DATABASE_URL", "postgres://db/app?sslmode=verify-full")]);
    let err = Config::from_vars(&app, &no_queue, Mode::Deployed).err().map(|e| e.to_string());
    assert_eq!(err.as_deref(), Some("set JADPO_QUEUE_URL to the delivery queue's URL"));
    let with = vars(&[
        ("DATABASE_URL", "postgres://db/app?sslmode=verify-full"),
        ("JADPO_QUEUE_URL", "https://sqs.eu-west-1.amazonaws.com/1/q"),
    ]);
    let c = Config::from_vars(&app, &with, Mode::Deployed).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.queue_url.as_deref(), Some("https://sqs.eu-west-1.amazonaws.com/1/q"));
}

#[test]
fn a_connections_header_is_name_and_value_and_a_bad_one_is_refused_unshown() {
    let app = Application::builder("shop")
        .store("main")
        .connection("payments")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let local = Mode::Local(Path::new("."));
    let set = |value: &str| vars(&[("JADPO_CONNECTION_PAYMENTS_HEADER", value)]);
    let c = Config::from_vars(&app, &set("X-Api-Key:  s3cret-1 "), local)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.connection_headers["payments"], ("X-Api-Key".to_owned(), "s3cret-1".to_owned()));
    let none = Config::from_vars(&app, &vars(&[]), local).unwrap_or_else(|e| panic!("{e}"));
    assert!(none.connection_headers.is_empty());
    for bad in ["no-colon-s3cret", "Bad Name: s3cret", "X-Api-Key: s3c\u{7}ret", ": s3cret"] {
        let err = Config::from_vars(&app, &set(bad), local).err().map(|e| e.to_string());
        let err = err.unwrap_or_else(|| panic!("{bad:?} was accepted"));
        assert!(
            err.contains("JADPO_CONNECTION_PAYMENTS_HEADER") && !err.contains("s3cret"),
            "{err}"
        );
    }
}

#[test]
fn another_machines_database_is_reached_only_over_verified_tls() {
    let app = Application::builder("shop").store("main").build().unwrap_or_else(|e| panic!("{e}"));
    let with = |url: &str, extra: &[(&str, &str)]| {
        let mut given = vars(&[("DATABASE_URL", url), ("JADPO_QUEUE_URL", "https://sqs/1/q")]);
        given.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        given
    };
    for mode in [Mode::Deployed, Mode::Operator] {
        for (url, how) in [
            ("postgres://u:pw@db.example.com/app", "without TLS"),
            ("postgres://u:pw@10.1.2.3/app?sslmode=prefer", "without TLS"),
            ("postgres://u:pw@db.example.com/app?sslmode=require", "without verifying the server"),
            ("postgres://u:pw@localhost/app?hostaddr=10.1.2.3", "without TLS"),
        ] {
            let err = Config::from_vars(&app, &with(url, &[]), mode).err().map(|e| e.to_string());
            let err = err.unwrap_or_else(|| panic!("{url} was accepted in {mode:?}"));
            assert!(err.starts_with("DATABASE_URL reaches "), "{err}");
            assert!(err.contains(how) && err.contains("sslmode=verify-full"), "{err}");
            assert!(!err.contains("pw"), "the password is shown: {err}");
            let overridden = with(url, &[("JADPO_INSECURE_DATABASE_TLS", "1")]);
            assert!(Config::from_vars(&app, &overridden, mode).is_ok(), "override ignored: {url}");
        }
        for url in [
            "postgres://u@db.example.com/app?sslmode=verify-full",
            "postgres://u@db.example.com/app?sslmode=verify-ca&sslrootcert=/etc/rds.pem",
            "postgres://u@127.0.0.1:5432/app",
            "postgres://u@localhost/app",
            "postgres://u@[::1]/app?sslmode=disable",
            "postgres://u@%2Fvar%2Frun%2Fpostgresql/app",
        ] {
            let c = Config::from_vars(&app, &with(url, &[]), mode);
            assert!(c.is_ok(), "{url} in {mode:?}: {:?}", c.err());
        }
        let bad = Config::from_vars(&app, &with("postgres://h/app?sslmode=maybe", &[]), mode);
        let bad = bad.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(bad.starts_with("DATABASE_URL: sslmode=maybe is not one of"), "{bad}");
    }
    let local = Config::from_vars(
        &app,
        &vars(&[("DATABASE_URL", "postgres://u@db.example.com/app")]),
        Mode::Local(Path::new(".")),
    );
    assert!(local.is_ok(), "a laptop's own choice: {:?}", local.err());
}

#[test]
fn scheduled_functions_need_stores_and_the_queue_but_no_connection_or_key() {
    let app = Application::builder("shop")
        .store("main")
        .store("warehouse")
        .connection("mailer")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let given = vars(&[
        ("DATABASE_URL", "postgres://127.0.0.1/app"),
        ("DATABASE_URL_WAREHOUSE", "postgres://127.0.0.1/wh"),
        ("JADPO_QUEUE_URL", "https://sqs/1/q"),
    ]);
    let c = Config::from_vars(&app, &given, Mode::DeployedScheduled);
    let c = c.unwrap_or_else(|e| panic!("{e}"));
    assert!(c.connections.is_empty() && matches!(c.sealing, SealingSource::Absent));
    assert_eq!(c.stores.len(), 2);
    let refused = Config::from_vars(&app, &given, Mode::Deployed).err().map(|e| e.to_string());
    assert!(refused.is_some_and(|e| e.contains("JADPO_CONNECTION_MAILER_URL")));
    let mut one_store = given.clone();
    one_store.remove("DATABASE_URL_WAREHOUSE");
    let err = Config::from_vars(&app, &one_store, Mode::DeployedScheduled).err();
    assert!(err.is_some_and(|e| e.to_string().contains("DATABASE_URL_WAREHOUSE")));
    let mut no_queue = given;
    no_queue.remove("JADPO_QUEUE_URL");
    let err = Config::from_vars(&app, &no_queue, Mode::DeployedScheduled).err();
    assert_eq!(err, Some(ConfigError::MissingQueue));
}

#[test]
fn file_fields_need_a_home_for_their_bytes() {
    use jadpo_core::model::file_field::FileField;
    let app = Application::builder("t")
        .store("main")
        .file_field(FileField::new("main", "docs", "attachment"))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let deployed = vars(&[
        ("DATABASE_URL", "postgres://127.0.0.1/app"),
        ("JADPO_QUEUE_URL", "https://sqs/1/q"),
    ]);
    let err = Config::from_vars(&app, &deployed, Mode::DeployedScheduled).err();
    assert_eq!(err, Some(ConfigError::MissingFilesBucket));
    assert!(ConfigError::MissingFilesBucket.to_string().contains("JADPO_FILES_BUCKET"));
    let mut bucket = deployed.clone();
    bucket.insert("JADPO_FILES_BUCKET".into(), "shop-files".into());
    let c = Config::from_vars(&app, &bucket, Mode::DeployedScheduled);
    let c = c.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((c.files_bucket.as_deref(), c.files_dir), (Some("shop-files"), None));
    // Without file fields nothing is asked; locally the directory is under ./.jadpo.
    let plain = Application::builder("t").store("main").build();
    let plain = plain.unwrap_or_else(|e| panic!("{e}"));
    assert!(Config::from_vars(&plain, &deployed, Mode::DeployedScheduled).is_ok());
    let local = Config::from_vars(&app, &vars(&[]), Mode::Local(Path::new(".jadpo")));
    let local = local.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(local.files_dir, Some(std::path::PathBuf::from(".jadpo/files")));
    assert_eq!(local.files_bucket, None);
}

#[test]
fn a_configuration_logged_whole_shows_no_secret() {
    let app = Application::builder("shop")
        .store("main")
        .store("warehouse")
        .connection("payments")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let given = vars(&[
        ("DATABASE_URL", "postgres://app:pg-s3cret@localhost/shop?sslpassword=tls-s3cret"),
        ("DATABASE_URL_WAREHOUSE", "postgres://app:wh-s3cret@localhost/wh"),
        (
            "JADPO_CONNECTION_PAYMENTS_URL",
            "https://user:url-s3cret@pay.example.com/v1?token=q-s3cret",
        ),
        ("JADPO_CONNECTION_PAYMENTS_HEADER", "X-Api-Key: header-s3cret"),
    ]);
    let c = Config::from_vars(&app, &given, Mode::Local(Path::new(".")));
    let c = c.unwrap_or_else(|e| panic!("{e}"));
    let shown = format!("{c:?} {:?} {:#?}", c.stores, c);
    assert!(!shown.contains("s3cret"), "a secret in the configuration's Debug: {shown}");
    for kept in ["localhost/shop", "pay.example.com/v1", "X-Api-Key: ***", "warehouse"] {
        assert!(shown.contains(kept), "{kept:?} missing from {shown}");
    }
    assert_eq!(c.connection_headers["payments"].1, "header-s3cret", "the value itself is kept");
}

#[test]
fn each_webhook_source_needs_readable_secrets() {
    use jadpo_application::{WebhookScheme, WebhookSource};
    struct Noop;
    #[async_trait::async_trait]
    impl jadpo_application::Action for Noop {
        async fn run(
            &self,
            _: &mut jadpo_application::HandlerContext<'_>,
            _: serde_json::Value,
        ) -> Result<jadpo_application::ActionOutput, jadpo_application::HandlerError> {
            Ok(jadpo_application::ActionOutput::ok(serde_json::json!({})))
        }
    }
    let app = Application::builder("hooks")
        .store("main")
        .action("paid", "main", Noop)
        .webhook(WebhookSource::new("stripe", WebhookScheme::Stripe, "paid"))
        .webhook(WebhookSource::new("svix", WebhookScheme::Svix, "paid").secrets_from("SVIX_KEY"))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let missing =
        webhook_secrets(&app, &vars(&[("SVIX_KEY", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")]));
    let missing = missing.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(missing.contains("JADPO_WEBHOOK_STRIPE_SECRETS"), "{missing}");
    let secret = "whsec_do_not_print_me";
    let bad = [("JADPO_WEBHOOK_STRIPE_SECRETS", secret), ("SVIX_KEY", secret)];
    let bad = webhook_secrets(&app, &vars(&bad)).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(bad.contains("SVIX_KEY") && !bad.contains(secret), "{bad}");
    let rotation = "whsec_old until 2027-01-31T00:00:00Z, whsec_new";
    let good = [
        ("JADPO_WEBHOOK_STRIPE_SECRETS", rotation),
        ("SVIX_KEY", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    ];
    let read = webhook_secrets(&app, &vars(&good)).unwrap_or_else(|e| panic!("{e}"));
    let expiries: Vec<_> = read["stripe"].iter().map(|s| s.expires_at.is_some()).collect();
    assert_eq!(expiries, [true, false], "the old secret until its time, the new one after");
    let unreadable = [
        ("JADPO_WEBHOOK_STRIPE_SECRETS", "whsec_old until soon"),
        ("SVIX_KEY", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    ];
    let unreadable = webhook_secrets(&app, &vars(&unreadable)).err().map(|e| e.to_string());
    assert!(unreadable.is_some_and(|e| e.contains("RFC 3339")));
}
