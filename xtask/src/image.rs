//! image: `cargo xtask bench-image`: a catalog image served by olm-controller itself (issue 11,
//! item 7).
//!
//! The catalog (`--catalog`, default `large-fbc` of the shared corpus, 782 packages) is pushed as
//! a catalog image to Debian's `docker-registry` on a loopback port (`kubectl-olm catalog push`),
//! or, given as an image reference, served as it is. An olm-controller with an empty
//! `--cache-dir` is started against the cluster, and the bench measures:
//!   (a) cold: CatalogSource created → `connectionState.lastObservedState: READY` (resolve the
//!       tag, pull and verify every blob, unpack the configs directory, load and validate);
//!   (b) warm restart: the controller stopped, the CatalogSource deleted, the controller started
//!       again on the same cache directory, the CatalogSource created again → READY (the tag is
//!       resolved again; the content comes from the cache by digest);
//!   (c) the controller's peak RSS (VmHWM) while serving it.
//! Targets: cold < 3 s, warm < 1 s, RSS < 150 MiB. Times are taken client-side, polling the
//! CatalogSource every 20 ms. Leaves nothing behind.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams},
};
use serde_json::{Value, json};

use crate::{
    args::{ImageArgs, default_binary},
    catalog::{self, Catalog},
    cluster::{self, Cluster, Controller},
    summary::{self, Figure, Op},
};

const NS: &str = "olm";
const NAME: &str = "bench-image";

/// The registry config `docker-registry serve` reads.
pub fn registry_config(storage: &Path, addr: &str) -> String {
    format!(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {addr}\n",
        storage.display()
    )
}

/// A loopback registry the bench started (stopped when dropped).
struct Registry(Child);

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sources(client: &kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        NS,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("operators.coreos.com", "v1alpha1", "CatalogSource"),
            "catalogsources",
        ),
    )
}

async fn delete_source(api: &Api<DynamicObject>, timeout: Duration) -> anyhow::Result<()> {
    match api.delete(NAME, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => return Err(e).context("failed to delete the bench CatalogSource"),
    }
    let deadline = Instant::now() + timeout;
    while api.get_opt(NAME).await?.is_some() {
        if Instant::now() > deadline {
            bail!("the CatalogSource {NS}/{NAME} was never deleted");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Creates the CatalogSource and polls it every 20 ms until READY: the seconds it took and its
/// status.
async fn time_to_ready(
    api: &Api<DynamicObject>,
    image: &str,
    controller: &mut Controller,
    timeout: Duration,
) -> anyhow::Result<(f64, Value)> {
    let body: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {"sourceType": "grpc", "image": image, "updateStrategy": {"registryPoll": {"interval": "60m"}}},
    }))?;
    let t0 = Instant::now();
    api.create(&PostParams::default(), &body).await?;
    loop {
        let status = api
            .get(NAME)
            .await?
            .data
            .get("status")
            .cloned()
            .unwrap_or(Value::Null);
        if status.pointer("/connectionState/lastObservedState") == Some(&json!("READY")) {
            return Ok((t0.elapsed().as_secs_f64(), status));
        }
        if !controller.running() || t0.elapsed() > timeout {
            bail!(
                "the CatalogSource never became READY ({status}); see {}",
                controller.log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs the bench; whether every figure met its target.
pub async fn run(repo: &Path, args: ImageArgs) -> anyhow::Result<bool> {
    let controller_bin = args
        .controller
        .clone()
        .unwrap_or_else(|| default_binary(repo, "olm-controller"));
    let cli = args.cli.clone().unwrap_or_else(|| {
        controller_bin
            .parent()
            .map_or_else(|| default_binary(repo, "kubectl-olm"), |d| d.join("kubectl-olm"))
    });
    let catalog = match &args.catalog {
        Some(c) => c.clone(),
        None => Catalog::Archive(catalog::corpus_archive(repo, "large-fbc.tar.zst")?),
    };
    let cluster = Cluster::find(repo)?;
    let client = cluster.client().await?;
    cluster.install_crds(repo)?;
    let _ = cluster.kubectl().args(["create", "namespace", NS]).output();

    let work = repo.join("target/bench-image");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let result = measure(&args, &catalog, &controller_bin, &cli, &cluster, &client, &work).await;
    let _ = delete_source(&sources(&client), Duration::from_secs(30)).await;
    // Keep the figures and the controller's log; the registry storage, cache and unpacked
    // catalog go.
    for dir in ["storage", "cache", "catalog"] {
        let _ = std::fs::remove_dir_all(work.join(dir));
    }
    result
}

#[allow(clippy::too_many_arguments, reason = "one call, the bench's whole set-up")]
async fn measure(
    args: &ImageArgs,
    catalog: &Catalog,
    controller_bin: &Path,
    cli: &Path,
    cluster: &Cluster,
    client: &kube::Client,
    work: &Path,
) -> anyhow::Result<bool> {
    let timeout = Duration::from_secs_f64(args.timeout);
    let api = sources(client);
    let (image, insecure, _registry) = match catalog {
        Catalog::Image(image) => (image.clone(), args.insecure_registry.clone(), None),
        Catalog::Dir(_) | Catalog::Archive(_) => {
            if !cli.is_file() {
                bail!(
                    "{} is missing: cargo build --bin kubectl-olm (or pass --cli)",
                    cli.display()
                );
            }
            let registry_host = format!("127.0.0.1:{}", cluster::free_port()?);
            let config = work.join("registry.yml");
            std::fs::write(&config, registry_config(&work.join("storage"), &registry_host))?;
            let log = std::fs::File::create(work.join("registry.log"))?;
            let registry = Registry(
                Command::new("docker-registry")
                    .arg("serve")
                    .arg(&config)
                    .stdout(Stdio::null())
                    .stderr(log)
                    .spawn()
                    .context("docker-registry is missing: apt-get install docker-registry")?,
            );
            let v2 = registry_host.parse().context("the registry address")?;
            for _ in 0..100 {
                if cluster::http_get(v2, "/v2/").await.is_ok() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let dir = catalog::as_dir(catalog, &work.join("catalog"))?;
            let image = format!("{registry_host}/bench/{}:v1", catalog.label());
            let t0 = Instant::now();
            let out = Command::new(cli)
                .args(["catalog", "push"])
                .arg(&dir)
                .arg(&image)
                .args(["--insecure-registry", &registry_host])
                .output()
                .with_context(|| format!("failed to run {}", cli.display()))?;
            if !out.status.success() {
                bail!(
                    "kubectl-olm catalog push failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            println!(
                "pushed {} as {image} in {:.1} s",
                catalog.label(),
                t0.elapsed().as_secs_f64()
            );
            (image, Some(registry_host), Some(registry))
        }
    };
    delete_source(&api, timeout).await?;
    let cache = work.join("cache");
    let cache_arg = cache.to_string_lossy().into_owned();
    let mut extra = vec!["--cache-dir", cache_arg.as_str()];
    if let Some(host) = &insecure {
        extra.extend(["--insecure-registry", host.as_str()]);
    }
    let log = work.join("controller.log");
    let start = || Controller::start(controller_bin, cluster, &extra, &log, "info");

    let mut controller = start()?;
    tokio::time::sleep(Duration::from_secs(2)).await; // the controller's own start, not part of the pull
    let (cold, status) = time_to_ready(&api, &image, &mut controller, timeout).await?;
    println!(
        "(a) cold: READY after {cold:.2} s ({})",
        status.get("resolvedImage").and_then(Value::as_str).unwrap_or("-")
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let hwm_cold = controller.vm_hwm_kib();
    controller.stop(Duration::from_secs(30));
    drop(controller);

    delete_source(&api, timeout).await?;
    let mut controller = start()?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (warm, _) = time_to_ready(&api, &image, &mut controller, timeout).await?;
    println!("(b) warm restart: READY after {warm:.2} s");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let hwm_warm = controller.vm_hwm_kib();
    controller.stop(Duration::from_secs(30));

    let mut figures = vec![
        Figure::new("cold-ready", Some(cold), "s").target(Op::Below, 3.0),
        Figure::new("warm-ready", Some(warm), "s").target(Op::Below, 1.0),
        Figure::new("peak-rss-cold", Some(hwm_cold as f64 / 1024.0), "MiB"),
        Figure::new("peak-rss-warm", Some(hwm_warm as f64 / 1024.0), "MiB"),
        Figure::new("peak-rss", Some(hwm_cold.max(hwm_warm) as f64 / 1024.0), "MiB").target(Op::Below, 150.0),
    ];
    if let Some(path) = &args.expect {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("failed to read {}", path.display()))?;
        summary::apply_expect(&mut figures, &text, &path.display().to_string())?;
    }
    let mark = |name: &str| match figures.iter().find(|f| f.name == name).and_then(Figure::met) {
        Some(false) => "MISSED",
        _ => "ok",
    };
    let limit = |name: &str| {
        figures
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| f.target)
            .map_or_else(|| "-".to_owned(), |t| t.limit.to_string())
    };
    println!("\n=== catalog image benchmark ({}) ===", catalog.label());
    println!("controller {}; {}", controller_bin.display(), cluster::machine());
    println!(
        "(a) cold cache: pull + verify + unpack + load → READY  {cold:6.2} s   target < {} s: {}",
        limit("cold-ready"),
        mark("cold-ready")
    );
    println!(
        "(b) warm restart (cache by digest) → READY             {warm:6.2} s   target < {} s: {}",
        limit("warm-ready"),
        mark("warm-ready")
    );
    println!(
        "(c) controller peak RSS serving it: cold {:.1} MiB, after the warm restart {:.1} MiB   target < {} MiB: {}",
        hwm_cold as f64 / 1024.0,
        hwm_warm as f64 / 1024.0,
        limit("peak-rss"),
        mark("peak-rss")
    );
    summary::write(work, &figures)?;
    println!();
    print!(
        "{}",
        summary::table(
            "figures (also in target/bench-image/figures.tsv and .json)",
            &figures
        )
    );
    Ok(summary::verdict(&figures, args.expect.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_serves_from_its_storage_on_its_address() {
        assert_eq!(
            registry_config(Path::new("/w/storage"), "127.0.0.1:5000"),
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: /w/storage\nhttp:\n  addr: 127.0.0.1:5000\n"
        );
    }
}
