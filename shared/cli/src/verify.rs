//! `jadpo verify`: the specification's eight operational checks on every store given a URL.

use clap::Args;
use jadpo_core::SystemClock;
use jadpo_engine::workflow::verify::verify;
use jadpo_runtime::catalog_for;
use serde_json::json;

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// Only this store.
    #[arg(long)]
    store: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(args: VerifyArgs) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    let wiring = crate::common::wiring(&app, args.store.as_deref()).await?;
    let (config, stores) = (&wiring.config, &wiring.stores);
    let mut failed = 0;
    let mut out = Vec::new();
    for store_config in
        config.stores.iter().filter(|s| args.store.as_deref().is_none_or(|o| o == s.name))
    {
        let Some(store) = stores.get(&store_config.name) else { continue };
        let catalog = catalog_for(&app, store.as_ref())?;
        let checks = verify(store.as_ref(), &catalog, &SystemClock).await?;
        failed += checks.iter().filter(|c| !c.passed).count();
        if !args.json {
            println!("store {} ({})", store_config.name, store_config.url.display());
            for c in &checks {
                println!(
                    "  {} {}. {}: {}",
                    if c.passed { "PASS" } else { "FAIL" },
                    c.number,
                    c.name,
                    c.details
                );
            }
        }
        out.push(json!({
            "store": store_config.name,
            "checks": checks.iter().map(|c| json!({"number": c.number, "name": c.name, "passed": c.passed, "details": c.details})).collect::<Vec<_>>(),
        }));
    }
    if args.json {
        println!("{}", json!({"stores": out, "failed": failed}));
    }
    if failed > 0 {
        anyhow::bail!("{failed} verification check(s) failed");
    }
    Ok(())
}
