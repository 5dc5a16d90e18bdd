//! upstream: `cargo xtask accept-upstream`: upstream OLM v0 on the same acceptance bench (issue
//! 12). Installs every package of the catalog with upstream's own controllers, started from
//! binaries the user points to (`--bin-dir`: `olm`, `catalog`, `opm`, `registry-client`; upstream's
//! CRDs from `--olm-src`'s deploy/chart/crds), on the same local cluster and with the same catalog
//! as `cargo xtask accept`, so each package's outcome can be set beside olm-rs's. Nothing is built
//! here.
//!
//! How:
//!  1. The catalog is rendered with `opm render -o json`. Every bundle that inlines its manifests
//!     loses its `image` in a copy of the catalog, which `opm serve` serves on 127.0.0.1: opm's
//!     ListBundles sends a bundle's objects and csvJson only when its bundlePath is empty, and
//!     upstream's resolver then makes the InstallPlan's steps from them instead of a BundleLookup,
//!     whose unpack Job would never run here (kwok fakes pod status only). `registry-client`
//!     checks that premise before any install ([`check_listed`]).
//!  2. Upstream's CRDs are applied server-side (field manager olm-rs-accept-upstream,
//!     --force-conflicts), then `catalog` (placeholder pod images: a grpc CatalogSource with
//!     spec.address starts no pod) and `olm` run as local processes against the cluster's
//!     kubeconfig, logs in target/accept-upstream/. Neither runs while another OLM controller
//!     (olm-controller, olm, catalog) does.
//!  3. A CatalogSource `sourceType: grpc` at opm's address, awaited READY; then the installs, the
//!     classification, the report and (--walks) the walks exactly as `cargo xtask accept` does
//!     them.
//!  4. Clean-up (namespaces first, while upstream's controllers still run): accept's clean-up,
//!     then what upstream leaves outside the namespaces ([`Leftovers`]); the processes are
//!     stopped; olm-rs's CRDs are applied again as its cluster tests apply them (field manager
//!     olm-rs-e2e), then the fields only upstream's CRDs had are released, and the seven CRDs the
//!     tests wait for are awaited Established.
//!
//! `--check` (no cluster): renders the catalog with opm, strips the images, serves it with opm
//! and runs registry-client's check.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use super::{
    cleanup::cleanup,
    client::{Kube, SetupError, s},
    observe::Settled,
    plan,
    run::{report_installs, run_installs},
    setup::{ARCHIVE, SOURCE_NAME, create_catalog_source},
    walks::{PlanRecorder, check_and_report_walks, run_walks},
};
use crate::{
    args::UpstreamArgs,
    catalog::{self, Catalog},
    cluster::Cluster,
};

const FIELD_MANAGER: &str = "olm-rs-accept-upstream";
/// How olm-rs's cluster tests apply manifests/crds.
const OLMRS_FIELD_MANAGER: &str = "olm-rs-e2e";
const OLMRS_CRDS_WAITED: [&str; 7] = [
    "subscriptions",
    "installplans",
    "clusterserviceversions",
    "catalogsources",
    "operatorgroups",
    "operators",
    "operatorconditions",
];
/// Pod images upstream's catalog operator would use; no pod is started here.
pub const PLACEHOLDER_IMAGE: &str = "olm-rs.invalid/unused:0";
/// Processes that are an OLM controller: never two at once on the cluster.
const CONTROLLER_NAMES: [&str; 3] = ["olm-controller", "olm", "catalog"];
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";
const OPS: &str = "/apis/operators.coreos.com";

/// The values of a stream of JSON values (`opm render -o json` writes them one after another).
pub fn parse_json_stream(text: &str) -> Result<Vec<Value>, serde_json::Error> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect()
}

fn inlines_csv(bundle: &Value) -> bool {
    plan::bundle_objects(bundle)
        .0
        .iter()
        .any(|o| o["kind"] == "ClusterServiceVersion")
}

/// (blobs, stripped, kept): a copy of the catalog in which every olm.bundle that inlines its CSV
/// has no `image`, so opm's ListBundles sends its objects; `kept` names the bundles that keep
/// their image (upstream would have to unpack them).
pub fn strip_inlined_images(blobs: &[Value]) -> (Vec<Value>, Vec<String>, Vec<String>) {
    let (mut out, mut stripped, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    for blob in blobs {
        let mut blob = blob.clone();
        if blob["schema"] == "olm.bundle" && !s(&blob, "/image").is_empty() {
            if inlines_csv(&blob) {
                if let Some(map) = blob.as_object_mut() {
                    map.remove("image");
                }
                stripped.push(s(&blob, "/name").to_owned());
            } else {
                kept.push(s(&blob, "/name").to_owned());
            }
        }
        out.push(blob);
    }
    (out, stripped, kept)
}

/// Upstream's catalog operator's arguments (cmd/catalog/start.go flags).
pub fn catalog_args(kubeconfig: &str, namespace: &str) -> Vec<String> {
    [
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        namespace,
        "--configmapServerImage",
        PLACEHOLDER_IMAGE,
        "--opmImage",
        PLACEHOLDER_IMAGE,
        "--util-image",
        PLACEHOLDER_IMAGE,
        "--writeStatusName",
        "",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Upstream's olm operator's arguments (cmd/olm/main.go flags; its kubeconfig is $KUBECONFIG).
pub fn olm_args(namespace: &str) -> Vec<String> {
    [
        "--namespace",
        namespace,
        "--writeStatusName",
        "",
        "--writePackageServerStatusName",
        "",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// A CRD's name alone: applied as FIELD_MANAGER after olm-rs's CRDs, it gives up every field only
/// upstream's CRDs set.
pub fn release_doc(name: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name}})
}

/// Problems of opm's ListBundles answer: a bundle with a bundlePath, or without csvJson or a CSV
/// object, would need an unpack Job.
pub fn check_listed(listed: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    for b in listed {
        let name = format!("{}/{}", s(b, "/packageName"), s(b, "/csvName"));
        let objects: Vec<&Value> = b
            .get("object")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        let csv_json = b.get("csvJson").filter(|v| !v.is_null() && *v != "");
        if !s(b, "/bundlePath").is_empty() {
            problems.push(format!("{name}: bundlePath {}", s(b, "/bundlePath")));
        } else if csv_json.is_none() {
            problems.push(format!("{name}: no csvJson"));
        } else if !objects.iter().any(|o| o["kind"] == "ClusterServiceVersion") {
            problems.push(format!(
                "{name}: no ClusterServiceVersion among its {} object(s)",
                objects.len()
            ));
        }
    }
    problems
}

/// Every namespace a walk of `packages` may create: `accw-<package>` and its group's `-t1`,
/// `-t2`. The final clean-up deletes these even when the walk phase stopped half-way.
pub fn walk_namespaces(packages: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for p in packages {
        let ns = plan::namespace_for("accw", p);
        out.extend(plan::target_namespaces("MultiNamespace", &ns));
        out.insert(ns);
    }
    out
}

/// {(plural, name)} of the ClusterRoles and ClusterRoleBindings the packages' bundles ship as
/// plain manifests: upstream labels them olm.managed only, so accept's clean-up misses them.
pub fn shipped_cluster_objects(blobs: &[Value], packages: &[String]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for blob in blobs {
        if blob["schema"] != "olm.bundle" || !packages.iter().any(|p| p == s(blob, "/package")) {
            continue;
        }
        for obj in plan::bundle_objects(blob).0 {
            let plural = match obj["kind"].as_str() {
                Some("ClusterRole") => "clusterroles",
                Some("ClusterRoleBinding") => "clusterrolebindings",
                _ => continue,
            };
            let name = s(&obj, "/metadata/name");
            if !name.is_empty() {
                out.insert((plural.to_owned(), name.to_owned()));
            }
        }
    }
    out
}

/// (package, upstream outcome, upstream why, expected outcome, expected why) where they differ.
pub fn differences(
    results: &BTreeMap<String, Settled>,
    expected: &BTreeMap<String, (String, String)>,
) -> Vec<(String, String, String, String, String)> {
    let outcomes: BTreeMap<String, String> = results
        .iter()
        .map(|(p, (o, _, _))| (p.clone(), o.clone()))
        .collect();
    plan::compare(&outcomes, expected, &BTreeMap::new())
        .into_iter()
        .map(|(p, got, wanted)| {
            let why = results.get(&p).map(|r| r.1.clone()).unwrap_or_default();
            let wanted_why = expected.get(&p).map(|e| e.1.clone()).unwrap_or_default();
            (p, got, why, wanted, wanted_why)
        })
        .collect()
}

/// metadata.name of each CRD file of `folder` (the first `  name: ` line of each).
pub fn crd_names(folder: &Path) -> anyhow::Result<Vec<String>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(folder)
        .with_context(|| format!("failed to read {}", folder.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        })
        .collect();
    entries.sort();
    let mut names = Vec::new();
    for path in entries {
        let text = std::fs::read_to_string(&path)?;
        if let Some(name) = text.lines().find_map(|l| l.strip_prefix("  name: ")) {
            names.push(name.trim().to_owned());
        }
    }
    Ok(names)
}

/// (pid, name) of processes named like an OLM controller (read from /proc, nothing signalled).
fn running_controllers() -> Vec<(u32, String)> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter_map(|pid| {
            let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .ok()?
                .trim()
                .to_owned();
            CONTROLLER_NAMES.contains(&name.as_str()).then_some((pid, name))
        })
        .collect()
}

fn render_catalog(opm: &Path, catalog: &str) -> anyhow::Result<Vec<Value>> {
    let out = Command::new(opm)
        .args(["render", catalog, "-o", "json"])
        .output()
        .with_context(|| format!("failed to run {}", opm.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: String = err
            .trim()
            .chars()
            .rev()
            .take(500)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        bail!(SetupError(format!("opm render {catalog} failed: {tail}")));
    }
    Ok(parse_json_stream(&String::from_utf8_lossy(&out.stdout))?)
}

fn write_catalog(blobs: &[Value], folder: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(folder)?;
    let text: String = blobs.iter().map(|b| format!("{b}\n")).collect();
    std::fs::write(folder.join("catalog.json"), text)?;
    Ok(())
}

/// A process the bench started (terminated when dropped).
struct Process {
    child: Child,
    name: String,
    log: PathBuf,
}

impl Process {
    fn spawn(name: &str, mut cmd: Command, log: &Path) -> anyhow::Result<Self> {
        let file = std::fs::File::create(log)?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .spawn()
            .with_context(|| format!("failed to start {name}"))?;
        Ok(Self {
            child,
            name: name.to_owned(),
            log: log.to_owned(),
        })
    }

    fn alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!(
                "{} exited ({status}); see {}",
                self.name,
                self.log.display()
            )),
            Err(e) => Err(format!("{}: {e}", self.name)),
        }
    }

    fn stop(&mut self) {
        if self.alive().is_err() {
            return;
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && self.alive().is_ok() {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `opm serve` on a free port, once it accepts connections (after loading the catalog).
async fn start_opm(opm: &Path, folder: &Path, log: &Path) -> anyhow::Result<(Process, String)> {
    let port = crate::cluster::free_port()?;
    let mut cmd = Command::new(opm);
    cmd.arg("serve")
        .arg(folder)
        .args(["-p", &port.to_string(), "--pprof-addr", "", "-t", "/dev/null"]);
    let mut proc = Process::spawn("opm serve", cmd, log)?;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Ok((proc, format!("127.0.0.1:{port}")));
        }
        if let Err(dead) = proc.alive() {
            bail!(SetupError(dead));
        }
        if Instant::now() > deadline {
            bail!(SetupError(format!(
                "opm serve did not listen on {port} within 180 s; see {}",
                log.display()
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// registry-client against opm: every bundle carries its manifests; the entries listed.
fn verify_listing(client: &Path, addr: &str, bundles: usize) -> anyhow::Result<usize> {
    let out = Command::new(client)
        .arg(addr)
        .output()
        .with_context(|| format!("failed to run {}", client.display()))?;
    if !out.status.success() {
        bail!(SetupError(format!(
            "registry-client {addr} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let answers: Value =
        serde_json::from_slice(&out.stdout).context("registry-client's answer is not JSON")?;
    let listed: Vec<Value> = answers
        .get("ListBundles")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let problems = check_listed(&listed);
    if !problems.is_empty() {
        bail!(SetupError(format!(
            "opm's ListBundles would make upstream unpack {} bundle(s): {}",
            problems.len(),
            problems.iter().take(5).cloned().collect::<Vec<_>>().join("; ")
        )));
    }
    if listed.len() < bundles {
        bail!(SetupError(format!(
            "opm's ListBundles sent {} entries for {bundles} bundles",
            listed.len()
        )));
    }
    Ok(listed.len())
}

fn kubectl_apply(cluster: &Cluster, manager: &str, path: &Path) -> anyhow::Result<()> {
    cluster.kubectl_ok(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        &format!("--field-manager={manager}"),
        "-f",
        &path.to_string_lossy(),
    ])?;
    Ok(())
}

async fn wait_established(kube: &Kube, names: &[String]) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    for name in names {
        loop {
            let crd = kube
                .get(&format!(
                    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
                ))
                .await?;
            if plan::condition(crd.as_ref(), "Established").is_some_and(|c| c["status"] == "True") {
                break;
            }
            if Instant::now() > deadline {
                bail!("CRD {name} is not Established after 60 s");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

/// olm-rs's CRDs applied again as its cluster tests apply them, upstream's own fields released.
async fn restore_olmrs_crds(
    cluster: &Cluster,
    repo: &Path,
    kube: &Kube,
    upstream_crds: &Path,
) -> anyhow::Result<()> {
    kubectl_apply(cluster, OLMRS_FIELD_MANAGER, &repo.join("manifests/crds"))?;
    for name in crd_names(upstream_crds)? {
        kube.apply(
            &format!(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}?fieldManager={FIELD_MANAGER}"
            ),
            &release_doc(&name),
        )
        .await?;
    }
    let names: Vec<String> = OLMRS_CRDS_WAITED
        .iter()
        .map(|c| format!("{c}.operators.coreos.com"))
        .collect();
    wait_established(kube, &names).await
}

/// What upstream leaves behind outside the namespaces, and what was there before the run.
struct Leftovers {
    olmconfig_before: bool,
    shipped: BTreeSet<(String, String)>,
    rbac_before: BTreeSet<(String, String)>,
}

impl Leftovers {
    async fn rbac(kube: &Kube) -> anyhow::Result<BTreeSet<(String, String)>> {
        let mut out = BTreeSet::new();
        for plural in ["clusterroles", "clusterrolebindings"] {
            for item in kube.list(&format!("{RBAC}/{plural}")).await? {
                out.insert((plural.to_owned(), s(&item, "/metadata/name").to_owned()));
            }
        }
        Ok(out)
    }

    /// Copied CSVs of `namespaces`, Operator objects of `packages` (`prefixes`' namespaces), the
    /// cluster RBAC the bundles ship that was not there before, an OLMConfig (unless `keep_olmconfig`
    /// or one was there before).
    async fn delete(
        &self,
        kube: &Kube,
        namespaces: &BTreeSet<String>,
        packages: &[String],
        prefixes: &[&str],
        keep_olmconfig: bool,
    ) -> anyhow::Result<()> {
        for csv in kube
            .list(&format!(
                "{OPS}/v1alpha1/clusterserviceversions?labelSelector=olm.copiedFrom"
            ))
            .await?
        {
            if namespaces.contains(s(&csv, "/metadata/labels/olm.copiedFrom")) {
                kube.delete(&format!(
                    "{OPS}/v1alpha1/namespaces/{}/clusterserviceversions/{}",
                    s(&csv, "/metadata/namespace"),
                    s(&csv, "/metadata/name")
                ))
                .await?;
            }
        }
        for name in plan::operator_names(packages, prefixes) {
            kube.delete(&format!("{OPS}/v1/operators/{name}")).await?;
        }
        for (plural, name) in self.shipped.difference(&self.rbac_before) {
            kube.delete(&format!("{RBAC}/{plural}/{name}")).await?;
        }
        if !keep_olmconfig && !self.olmconfig_before {
            kube.delete(&format!("{OPS}/v1/olmconfigs/cluster")).await?;
        }
        Ok(())
    }
}

fn report_differences(results: &BTreeMap<String, Settled>, expected: &BTreeMap<String, (String, String)>) {
    let rows = differences(results, expected);
    if !rows.is_empty() {
        println!("\nupstream vs --expect:");
        for (package, got, why, wanted, wanted_why) in rows {
            println!("  {package}: upstream {got} ({why}); expected {wanted} ({wanted_why})");
        }
    }
}

/// `kubectl-olm` for the walks: the release build if there is one, else the debug build.
pub fn default_cli(repo: &Path) -> Option<PathBuf> {
    ["release", "debug"]
        .iter()
        .map(|p| repo.join("target").join(p).join("kubectl-olm"))
        .find(|p| p.is_file())
}

/// Runs the bench: Ok(true) every outcome as expected, Ok(false) not, Err a set-up failure.
pub async fn run(repo: &Path, args: UpstreamArgs) -> anyhow::Result<bool> {
    let bin_dir = args
        .bin_dir
        .clone()
        .unwrap_or_else(|| repo.join("target/peers/bin"));
    let olm_src = args
        .olm_src
        .clone()
        .unwrap_or_else(|| repo.join("target/peers/olm-src"));
    let upstream_crds = olm_src.join("deploy/chart/crds");
    let needed: &[&str] = if args.check {
        &["opm", "registry-client"]
    } else {
        &["opm", "registry-client", "olm", "catalog"]
    };
    for name in needed {
        if !bin_dir.join(name).is_file() {
            bail!(SetupError(format!(
                "{} is missing: point --bin-dir at upstream's olm and catalog, opm and registry-client (this bench builds nothing)",
                bin_dir.join(name).display()
            )));
        }
    }
    if !args.check && !upstream_crds.is_dir() {
        bail!(SetupError(format!(
            "{} is missing: point --olm-src at upstream's source tree (its deploy/chart/crds are applied)",
            upstream_crds.display()
        )));
    }
    let cli = if args.walks && !args.check {
        let cli = args.cli.clone().or_else(|| default_cli(repo));
        match cli {
            Some(c) if c.is_file() => Some(c),
            other => bail!(SetupError(format!(
                "--walks needs kubectl-olm (catalog graph, catalog upgrade-path): {}; cargo build --bin kubectl-olm, or pass --cli PATH",
                other.map_or_else(
                    || "neither target/release/kubectl-olm nor target/debug/kubectl-olm exists".to_owned(),
                    |c| format!("{} is missing", c.display())
                )
            ))),
        }
    } else {
        None
    };
    let log_dir = repo.join("target/accept-upstream");
    std::fs::create_dir_all(&log_dir)?;
    let work = log_dir.join(format!("work-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let outcome = run_in(
        repo,
        &args,
        &bin_dir,
        &upstream_crds,
        cli.as_deref(),
        &log_dir,
        &work,
    )
    .await;
    let _ = std::fs::remove_dir_all(&work);
    outcome
}

#[allow(
    clippy::too_many_lines,
    reason = "the phases in the script's order, one place to read them"
)]
async fn run_in(
    repo: &Path,
    args: &UpstreamArgs,
    bin_dir: &Path,
    upstream_crds: &Path,
    cli: Option<&Path>,
    log_dir: &Path,
    work: &Path,
) -> anyhow::Result<bool> {
    let default_expect = repo.join("tests/fixtures/accept-catalog/certified-v4.16.tsv");
    let (expected, compare) = match (&args.expect, &args.catalog) {
        (None, Some(_)) => (BTreeMap::new(), false),
        (path, _) => {
            let path = path.clone().unwrap_or(default_expect);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| SetupError(format!("failed to read {}: {e}", path.display())))?;
            (
                plan::parse_expected(&text, &path.display().to_string())
                    .map_err(|e| SetupError(e.to_string()))?,
                true,
            )
        }
    };
    let (spec, label) = match &args.catalog {
        None => (
            Catalog::Archive(catalog::corpus_archive(repo, ARCHIVE)?),
            ARCHIVE.to_owned(),
        ),
        Some(c) => (c.clone(), c.label()),
    };
    let catalog_loc = match &spec {
        Catalog::Image(image) => image.clone(),
        other => catalog::as_dir(other, &work.join("catalog"))?
            .to_string_lossy()
            .into_owned(),
    };
    let opm = bin_dir.join("opm");
    let blobs = render_catalog(&opm, &catalog_loc)?;
    let facts = plan::catalog_packages(&blobs);
    let (served, stripped, kept) = strip_inlined_images(&blobs);
    write_catalog(&served, &work.join("served"))?;
    let serve_log = log_dir.join("opm-serve.log");
    let bundles = blobs.iter().filter(|b| b["schema"] == "olm.bundle").count();
    if args.check {
        let mut ok = true;
        let mut check = |held: bool, what: String| {
            println!("  {}  {what}", if held { "ok" } else { "NO" });
            ok &= held;
        };
        println!("catalog {label}: {} packages rendered by opm", facts.len());
        let (held, what) = plan::heads_premise(&facts);
        check(held, what);
        // A bundle without an image is served with its objects already; one that keeps an image
        // would need an unpack Job upstream cannot run here.
        check(
            kept.is_empty(),
            format!(
                "every bundle with an image inlines its CSV and loses the image ({bundles} bundles: {} stripped, {} had none, {} keep one)",
                stripped.len(),
                bundles - stripped.len() - kept.len(),
                kept.len()
            ),
        );
        if compare {
            let (held, what) = plan::expect_premise(&expected, &facts);
            check(held, what);
        }
        let (serve, addr) = start_opm(&opm, &work.join("served"), &serve_log).await?;
        let listed = verify_listing(&bin_dir.join("registry-client"), &addr, bundles);
        drop(serve);
        match listed {
            Ok(n) => check(
                n >= bundles,
                format!("opm serve's ListBundles sends every one of the {n} entries with its objects"),
            ),
            Err(e) => check(false, format!("{e:#}")),
        }
        if upstream_crds.is_dir() {
            let names = crd_names(upstream_crds)?;
            let olmrs: BTreeSet<String> = crd_names(&repo.join("manifests/crds"))?.into_iter().collect();
            check(
                olmrs == names.iter().cloned().collect(),
                format!(
                    "olm-rs's manifests/crds have the same {} names as upstream's",
                    names.len()
                ),
            );
        }
        println!("{}", if ok { "check passed" } else { "check FAILED" });
        return Ok(ok);
    }

    let cluster = Cluster::find(repo).map_err(|e| SetupError(format!("{e:#}")))?;
    let others = running_controllers();
    if !others.is_empty() {
        bail!(SetupError(format!(
            "another OLM controller runs: {}; two must not share the cluster",
            others
                .iter()
                .map(|(p, n)| format!("{n} (pid {p})"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let packages = plan::selected_packages(&facts, &args.package, args.limit).map_err(SetupError)?;
    let crds: Vec<String> = packages
        .iter()
        .flat_map(|p| facts[p].crds.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let shipped = shipped_cluster_objects(&blobs, &packages);
    let (mut serve, addr) = start_opm(&opm, &work.join("served"), &serve_log).await?;
    let listed = verify_listing(
        &bin_dir.join("registry-client"),
        &addr,
        stripped.len() + kept.len(),
    )?;
    println!(
        "catalog {label}: {} packages, {} bundles without their image ({} kept one), opm serve on {addr}: {listed} listed with their objects; running {}",
        facts.len(),
        stripped.len(),
        kept.len(),
        packages.len()
    );
    let kube = Kube(cluster.client().await?);
    let olmconfig_crd = kube
        .get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/olmconfigs.operators.coreos.com")
        .await?;
    let leftovers = Leftovers {
        olmconfig_before: olmconfig_crd.is_some()
            && kube.get(&format!("{OPS}/v1/olmconfigs/cluster")).await?.is_some(),
        shipped,
        rbac_before: Leftovers::rbac(&kube).await?,
    };
    let kubeconfig = cluster.kubeconfig.to_string_lossy().into_owned();
    let mut used_ns: Vec<String> = Vec::new();
    let mut install_ns: Vec<String> = Vec::new();
    let mut walkers: Vec<String> = Vec::new();
    let mut walked = false;
    let mut procs: Vec<Process> = Vec::new();
    let phases = async {
        kubectl_apply(&cluster, FIELD_MANAGER, upstream_crds)
            .and(crd_names(upstream_crds))
            .map_err(|e| SetupError(format!("applying upstream's CRDs failed: {e:#}")))?;
        wait_established(&kube, &crd_names(upstream_crds)?)
            .await
            .map_err(|e| SetupError(format!("applying upstream's CRDs failed: {e:#}")))?;
        kube.create(
            "/api/v1/namespaces",
            json!({"metadata": {"name": args.namespace}}),
        )
        .await?;
        for (name, argv) in [
            ("catalog", catalog_args(&kubeconfig, &args.namespace)),
            ("olm", olm_args(&args.namespace)),
        ] {
            let mut cmd = Command::new(bin_dir.join(name));
            cmd.args(&argv).env("KUBECONFIG", &kubeconfig);
            let log = log_dir.join(format!("{name}.log"));
            let p = Process::spawn(name, cmd, &log)?;
            println!("upstream {name} pid {}, log {}", p.child.id(), log.display());
            procs.push(p);
        }
        let catalog_log = log_dir.join("catalog.log");
        {
            let mut alive = || procs.iter_mut().try_for_each(Process::alive);
            create_catalog_source(
                &kube,
                &args.namespace,
                ("grpc", addr.clone()),
                &mut alive,
                Duration::from_secs(120),
                &catalog_log,
            )
            .await?;
        }
        let timeout = Duration::from_secs_f64(args.timeout);
        let (results, used) = run_installs(&kube, &facts, &packages, &args.namespace, timeout).await?;
        used_ns.clone_from(&used);
        install_ns = used;
        procs
            .iter_mut()
            .try_for_each(Process::alive)
            .map_err(SetupError)?;
        let mut ok = report_installs(&results, &expected, &args.out, &BTreeMap::new(), compare)?;
        if compare {
            report_differences(&results, &expected);
        }
        if let Some(cli) = cli {
            println!("\nclean-up before the walks ...");
            let leftover = cleanup(&kube, &used_ns, &crds, &BTreeSet::new()).await?;
            let ns: BTreeSet<String> = used_ns.iter().cloned().collect();
            leftovers.delete(&kube, &ns, &packages, &["acc"], true).await?;
            walkers = packages
                .iter()
                .filter(|p| results[*p].0 == "Succeeded")
                .cloned()
                .collect();
            let skipped: Vec<&String> = packages.iter().filter(|p| !walkers.contains(p)).collect();
            if !skipped.is_empty() {
                println!(
                    "walks skipped (no Succeeded install): {}",
                    skipped.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                );
            }
            println!(
                "walking {} default channels from their oldest entry",
                walkers.len()
            );
            procs
                .iter_mut()
                .try_for_each(Process::alive)
                .map_err(SetupError)?;
            let recorder = PlanRecorder::start(kube.0.clone(), "accw-");
            let (walks, used) = run_walks(
                &kube,
                cli,
                &catalog_loc,
                &facts,
                &walkers,
                &args.namespace,
                Duration::from_secs_f64(args.walk_timeout),
                &leftover,
                &recorder,
            )
            .await?;
            drop(recorder);
            used_ns = used;
            walked = true;
            procs
                .iter_mut()
                .try_for_each(Process::alive)
                .map_err(SetupError)?;
            ok = check_and_report_walks(&kube, &walks, &walkers, &args.out).await? && ok;
        }
        anyhow::Ok(ok)
    }
    .await;
    if args.keep {
        println!(
            "\nkept: namespaces {} and CatalogSource {}/{}",
            used_ns.join(", "),
            args.namespace,
            SOURCE_NAME
        );
    } else {
        println!("\ncleaning up ...");
        let cleaned = async {
            kube.delete(&format!(
                "{OPS}/v1alpha1/namespaces/{}/catalogsources/{}",
                args.namespace, SOURCE_NAME
            ))
            .await?;
            // A walk phase that stopped half-way returned no namespaces: then every one it may have made.
            let mut last: BTreeSet<String> = used_ns.iter().cloned().collect();
            if !walked {
                last.extend(walk_namespaces(&walkers));
            }
            let last: Vec<String> = last.into_iter().collect();
            cleanup(&kube, &last, &crds, &BTreeSet::new()).await?;
            let all: BTreeSet<String> = install_ns.iter().chain(&last).cloned().collect();
            let prefixes: &[&str] = if walkers.is_empty() {
                &["acc"]
            } else {
                &["acc", "accw"]
            };
            let which: &[String] = if used_ns.is_empty() && walkers.is_empty() {
                &[]
            } else {
                &packages
            };
            leftovers.delete(&kube, &all, which, prefixes, false).await
        }
        .await;
        if let Err(e) = cleaned {
            eprintln!("warning: clean-up incomplete: {e:#}");
        }
    }
    for p in &mut procs {
        p.stop();
    }
    serve.stop();
    match restore_olmrs_crds(&cluster, repo, &kube, upstream_crds).await {
        Ok(()) => println!("olm-rs's CRDs restored"),
        Err(e) => eprintln!("warning: olm-rs's CRDs not restored: {e:#}; apply manifests/crds again"),
    }
    println!(
        "logs kept: {}",
        ["catalog.log", "olm.log", "opm-serve.log"]
            .map(|l| log_dir.join(l).display().to_string())
            .join(", ")
    );
    phases
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;

    fn enc(v: &Value) -> String {
        base64::engine::general_purpose::STANDARD.encode(v.to_string())
    }

    #[test]
    fn a_json_stream_is_parsed() {
        assert_eq!(
            parse_json_stream("{\"a\": 1}\n{\n  \"b\": [2]\n}\n ").expect("valid"),
            vec![json!({"a": 1}), json!({"b": [2]})]
        );
        assert_eq!(parse_json_stream("  \n").expect("valid"), Vec::<Value>::new());
        assert!(parse_json_stream("{\"a\": ").is_err());
    }

    #[test]
    fn inlined_bundles_lose_their_image() {
        let csv = json!({"kind": "ClusterServiceVersion", "metadata": {"name": "op.v1"}});
        let inlined = json!({"schema": "olm.bundle", "name": "op.v1", "image": "quay.io/x/op:1",
                             "properties": [{"type": "olm.bundle.object", "value": {"data": enc(&csv)}}]});
        let bare =
            json!({"schema": "olm.bundle", "name": "op.v0", "image": "quay.io/x/op:0", "properties": []});
        let pkg = json!({"schema": "olm.package", "name": "op"});
        let input = vec![pkg.clone(), inlined.clone(), bare];
        let (blobs, stripped, kept) = strip_inlined_images(&input);
        assert!(blobs[1].get("image").is_none() && blobs[1]["properties"] == inlined["properties"]);
        assert_eq!(input[1]["image"], "quay.io/x/op:1", "the input is not changed");
        assert_eq!(blobs[2]["image"], "quay.io/x/op:0");
        assert_eq!(
            (stripped, kept),
            (vec!["op.v1".to_owned()], vec!["op.v0".to_owned()])
        );
        assert_eq!(blobs[0], pkg);
    }

    #[test]
    fn upstreams_processes_get_their_flags() {
        let args = catalog_args("/k", "olm");
        let after = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
                .cloned()
        };
        assert_eq!(after("--namespace").as_deref(), Some("olm"));
        assert_eq!(after("--writeStatusName").as_deref(), Some(""));
        assert_eq!(after("--opmImage").as_deref(), Some(PLACEHOLDER_IMAGE));
        assert_eq!(
            olm_args("olm")[0..2],
            ["--namespace".to_owned(), "olm".to_owned()]
        );
        let doc = release_doc("a.x");
        assert_eq!(doc["metadata"], json!({"name": "a.x"}));
        assert_eq!(doc.as_object().map(|o| o.len()), Some(3), "names alone");
    }

    #[test]
    fn opms_listing_must_carry_every_bundles_objects() {
        let good = json!({"packageName": "p", "csvName": "c", "bundlePath": "", "csvJson": {"kind": "ClusterServiceVersion"},
                          "object": [{"kind": "ClusterServiceVersion"}, {"kind": "Service"}]});
        assert!(check_listed(std::slice::from_ref(&good)).is_empty());
        let mut with_path = good.clone();
        with_path["bundlePath"] = json!("quay.io/x:1");
        let mut no_csv_json = good.clone();
        no_csv_json["csvJson"] = Value::Null;
        let mut no_csv = good;
        no_csv["object"] = json!([{"kind": "Service"}]);
        assert_eq!(check_listed(&[with_path, no_csv_json, no_csv]).len(), 3);
    }

    #[test]
    fn a_long_walk_is_observed_from_the_recorded_plans() {
        let plans: Vec<Value> = (0..7)
            .map(|i| {
                json!({"metadata": {"name": format!("install-{i}"), "namespace": "accw-op", "uid": format!("u{i}"),
                                    "creationTimestamp": format!("2026-01-01T00:0{i}:00Z")},
                       "spec": {"generation": i + 1, "clusterServiceVersionNames": [format!("op.v{i}")]},
                       "status": {"plan": ["big"]}})
            })
            .collect();
        let recorded: Vec<Value> = plans[..4].iter().map(plan::slim_plan).collect();
        let merged = plan::merge_plans(&recorded, &plans[2..]);
        let all: Vec<String> = (0..7).map(|i| format!("op.v{i}")).collect();
        assert_eq!(merged.len(), 7);
        assert_eq!(plan::observed_walk(&merged), all);
        assert!(plan::slim_plan(&plans[0]).get("status").is_none());
        assert_eq!(
            plan::observed_walk(&plan::merge_plans(&[], &plans[2..])),
            all[2..].to_vec()
        );
    }

    #[test]
    fn the_clean_up_knows_every_walk_namespace_and_shipped_rbac() {
        let ns: Vec<String> = walk_namespaces(&["op".to_owned()]).into_iter().collect();
        assert_eq!(ns, vec!["accw-op", "accw-op-t1", "accw-op-t2"]);
        let long = "alloydb-omni-operator-certified".to_owned();
        let all = walk_namespaces(std::slice::from_ref(&long));
        for mode in plan::OG_PREFERENCE {
            for t in plan::target_namespaces(mode, &plan::namespace_for("accw", &long)) {
                assert!(all.contains(&t), "{t}");
            }
        }
        let role = json!({"kind": "ClusterRole", "metadata": {"name": "op-role"}});
        let blob = json!({"schema": "olm.bundle", "name": "op.v1", "package": "op",
                          "properties": [{"type": "olm.bundle.object", "value": {"data": enc(&role)}}]});
        let want: BTreeSet<(String, String)> = [("clusterroles".to_owned(), "op-role".to_owned())].into();
        assert_eq!(
            shipped_cluster_objects(std::slice::from_ref(&blob), &["op".to_owned()]),
            want
        );
        assert!(shipped_cluster_objects(&[blob], &["other".to_owned()]).is_empty());
    }

    #[test]
    fn differences_name_both_reasons() {
        let results: BTreeMap<String, Settled> = [
            ("a".to_owned(), ("Succeeded".to_owned(), "ok".to_owned(), 1.0)),
            ("b".to_owned(), ("CSVFailed".to_owned(), "boom".to_owned(), 2.0)),
        ]
        .into();
        let expected: BTreeMap<String, (String, String)> = [
            ("a".to_owned(), ("Succeeded".to_owned(), String::new())),
            ("b".to_owned(), ("Succeeded".to_owned(), "fine".to_owned())),
        ]
        .into();
        assert_eq!(
            differences(&results, &expected),
            vec![(
                "b".to_owned(),
                "CSVFailed".to_owned(),
                "boom".to_owned(),
                "Succeeded".to_owned(),
                "fine".to_owned()
            )]
        );
    }

    #[test]
    fn crd_names_are_read_from_each_file() {
        let dir = std::env::temp_dir().join(format!("xtask-crds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(
            dir.join("b.yaml"),
            "kind: CustomResourceDefinition\nmetadata:\n  name: bs.x\n",
        )
        .expect("write");
        std::fs::write(dir.join("a.yaml"), "metadata:\n  name: as.x\n  labels: {}\n").expect("write");
        std::fs::write(dir.join("notes.txt"), "  name: no\n").expect("write");
        assert_eq!(
            crd_names(&dir).expect("readable"),
            vec!["as.x".to_owned(), "bs.x".to_owned()]
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn the_cli_default_is_release_then_debug() {
        let dir = std::env::temp_dir().join(format!("xtask-cli-{}", std::process::id()));
        assert_eq!(default_cli(&dir), None);
        for profile in ["debug", "release"] {
            let p = dir.join("target").join(profile);
            std::fs::create_dir_all(&p).expect("dir");
            std::fs::write(p.join("kubectl-olm"), "#!/bin/sh\n").expect("write");
            assert_eq!(default_cli(&dir), Some(p.join("kubectl-olm")));
        }
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
