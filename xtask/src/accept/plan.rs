//! plan: the pure decisions of the acceptance bench: which namespaces and OperatorGroup an install
//! or a walk gets, how an install is classified from what the cluster shows, when an outcome is
//! settled, what the catalog's packages are, and how outcomes compare with an expect file.
//! Nothing here does I/O.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use base64::Engine as _;
use serde_json::{Value, json};

/// Seconds a failure must stay the same before it counts as the outcome.
pub const SETTLE_SECONDS: f64 = 30.0;

/// Outcomes that are transient in a healthy install settle only after this long unchanged: a CSV
/// waits `RequirementsNotMet` while its CRDs are being established, which took 43 s in a run of
/// all 52 packages at once.
pub fn slow_settle(outcome: &str) -> f64 {
    if outcome == "RequirementsNotMet" {
        150.0
    } else {
        0.0
    }
}

/// The OperatorGroup tried first: OwnNamespace (the install namespace itself), then AllNamespaces
/// (no targets), then SingleNamespace / MultiNamespace, which upstream allows only for namespaces
/// other than the operator's own, so they target one / two extra namespaces `<ns>-t1`, `<ns>-t2`.
pub const OG_PREFERENCE: [&str; 4] = [
    "OwnNamespace",
    "AllNamespaces",
    "SingleNamespace",
    "MultiNamespace",
];

/// Subscription conditions that report a failure, with the outcome each gives.
const SUB_FAILURES: [&str; 4] = [
    "ResolutionFailed",
    "BundleUnpackFailed",
    "InstallPlanFailed",
    "CatalogSourcesUnhealthy",
];

/// `<prefix>-<package>` as a DNS-1123 label: lower case, [a-z0-9-], at most 63 characters,
/// starting and ending with an alphanumeric.
pub fn namespace_for(prefix: &str, package: &str) -> String {
    let mut name = String::new();
    for c in format!("{prefix}-{package}").to_lowercase().chars() {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        if !(c == '-' && name.ends_with('-')) {
            name.push(c);
        }
    }
    let name: String = name.trim_matches('-').chars().take(63).collect();
    let name = name.trim_end_matches('-').to_owned();
    if name.is_empty() { prefix.to_owned() } else { name }
}

/// The install modes a CSV supports.
pub fn supported_modes(csv: Option<&Value>) -> BTreeSet<String> {
    csv.and_then(|c| c.pointer("/spec/installModes"))
        .and_then(Value::as_array)
        .map(|modes| {
            modes
                .iter()
                .filter(|m| m["supported"] == true)
                .filter_map(|m| m["type"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The targetNamespaces of an OperatorGroup in `namespace` for install `mode` (empty = all).
pub fn target_namespaces(mode: &str, namespace: &str) -> Vec<String> {
    match mode {
        "OwnNamespace" => vec![namespace.to_owned()],
        "AllNamespaces" => vec![],
        _ => {
            let base: String = namespace.chars().take(60).collect();
            let base = base.trim_end_matches('-');
            if mode == "SingleNamespace" {
                vec![format!("{base}-t1")]
            } else {
                vec![format!("{base}-t1"), format!("{base}-t2")]
            }
        }
    }
}

/// The OperatorGroup spec for `mode`.
pub fn og_spec(mode: &str, namespace: &str) -> Value {
    let targets = target_namespaces(mode, namespace);
    if targets.is_empty() {
        json!({})
    } else {
        json!({"targetNamespaces": targets})
    }
}

/// (install mode, OperatorGroup spec) for a CSV's installModes (OG_PREFERENCE order), or `None`
/// when the CSV supports none of the four.
pub fn choose_operator_group(csv: Option<&Value>, namespace: &str) -> Option<(String, Value)> {
    let modes = supported_modes(csv);
    OG_PREFERENCE
        .iter()
        .find(|m| modes.contains(**m))
        .map(|m| ((*m).to_owned(), og_spec(m, namespace)))
}

/// Where a walk is expected to stop: the first entry that does not support the group's mode, and
/// the modes it supports.
pub type Halt = (String, Vec<String>);

/// (mode, OperatorGroup spec, halt) for a walk along `path` (CSV names, the start first), `csvs`
/// the CSV of each entry. The group comes from the START's supported modes: the first (in
/// OG_PREFERENCE order) that every CSV of the path supports, no halt. When no mode is supported
/// by every CSV, the start's first mode, and a halt at the first entry that does not support it
/// (upstream refuses it: its CSV Failed UnsupportedOperatorGroup). `None` when the start
/// supports no mode.
pub fn choose_walk_group(
    path: &[String],
    csvs: &HashMap<String, Value>,
    namespace: &str,
) -> Option<(String, Value, Option<Halt>)> {
    let modes_of = |entry: &str| supported_modes(csvs.get(entry));
    let start_modes = modes_of(path.first()?);
    let start: Vec<&str> = OG_PREFERENCE
        .iter()
        .copied()
        .filter(|m| start_modes.contains(*m))
        .collect();
    let first = *start.first()?;
    for mode in &start {
        if path.iter().all(|e| modes_of(e).contains(*mode)) {
            return Some(((*mode).to_owned(), og_spec(mode, namespace), None));
        }
    }
    let halt = path.iter().find(|e| !modes_of(e).contains(first))?;
    let halt_modes = modes_of(halt);
    let supported = OG_PREFERENCE
        .iter()
        .filter(|m| halt_modes.contains(**m))
        .map(|m| (*m).to_owned())
        .collect();
    Some((
        first.to_owned(),
        og_spec(first, namespace),
        Some((halt.clone(), supported)),
    ))
}

/// A bad expect file.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ExpectError {
    #[error("{source_name}:{line}: expected `package<TAB>outcome<TAB>why`, got {text:?}")]
    Syntax {
        source_name: String,
        line: usize,
        text: String,
    },
    #[error("{source_name}:{line}: package {package} is listed twice")]
    Twice {
        source_name: String,
        line: usize,
        package: String,
    },
}

/// {package: (outcome, why)} from TSV lines `package<TAB>outcome<TAB>why`; `#` comments, blank
/// lines and a `package` header line are skipped. A malformed line is an error naming it.
pub fn parse_expected(
    text: &str,
    source_name: &str,
) -> Result<BTreeMap<String, (String, String)>, ExpectError> {
    let mut out = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.first() == Some(&"package") {
            continue;
        }
        let (Some(package), Some(outcome)) = (cols.first().map(|c| c.trim()), cols.get(1).map(|c| c.trim()))
        else {
            return Err(ExpectError::Syntax {
                source_name: source_name.to_owned(),
                line: index + 1,
                text: line.to_owned(),
            });
        };
        if package.is_empty() || outcome.is_empty() {
            return Err(ExpectError::Syntax {
                source_name: source_name.to_owned(),
                line: index + 1,
                text: line.to_owned(),
            });
        }
        if out.contains_key(package) {
            return Err(ExpectError::Twice {
                source_name: source_name.to_owned(),
                line: index + 1,
                package: package.to_owned(),
            });
        }
        let why = cols.get(2).map_or("", |c| c.trim());
        out.insert(package.to_owned(), (outcome.to_owned(), why.to_owned()));
    }
    Ok(out)
}

/// A webhook check of a package: (ok, text).
pub type WebhookCheck = (bool, String);

/// Mismatches as (package, got, wanted) for every package that ran; a package missing from the
/// expected file is a mismatch (wanted `<not listed>`), and so is one whose webhook objects are
/// missing or wrong.
pub fn compare(
    results: &BTreeMap<String, String>,
    expected: &BTreeMap<String, (String, String)>,
    webhooks: &BTreeMap<String, WebhookCheck>,
) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (package, outcome) in results {
        let wanted = expected.get(package).map_or("<not listed>", |(o, _)| o.as_str());
        if outcome != wanted {
            out.push((package.clone(), outcome.clone(), wanted.to_owned()));
        } else if let Some((false, text)) = webhooks.get(package) {
            out.push((
                package.clone(),
                format!("{outcome} but {text}"),
                wanted.to_owned(),
            ));
        }
    }
    out
}

/// `text` on one line, whitespace collapsed, cut to `limit` characters (with `...`).
pub fn clean(text: &str, limit: usize) -> String {
    let one = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= limit {
        one
    } else {
        let cut: String = one.chars().take(limit.saturating_sub(3)).collect();
        format!("{cut}...")
    }
}

/// The condition `kind` of an object's status.
pub fn condition<'a>(obj: Option<&'a Value>, kind: &str) -> Option<&'a Value> {
    obj?.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn cond_text(c: &Value) -> String {
    let parts: Vec<&str> = [s(c, "/reason"), s(c, "/message")]
        .into_iter()
        .filter(|x| !x.is_empty())
        .collect();
    clean(&parts.join(": "), 300)
}

/// The message of a Failed InstallPlan (its Installed condition, else status.message).
pub fn install_plan_failure(ip: &Value) -> String {
    let installed = condition(Some(ip), "Installed").cloned().unwrap_or(Value::Null);
    let text = [
        s(&installed, "/message"),
        s(ip, "/status/message"),
        s(&installed, "/reason"),
    ]
    .into_iter()
    .find(|t| !t.is_empty())
    .unwrap_or("phase Failed");
    clean(text, 300)
}

/// One classification: outcome, why, and whether it is final (Succeeded).
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    pub outcome: String,
    pub why: String,
    pub is_final: bool,
}

impl Class {
    fn new(outcome: &str, why: String, is_final: bool) -> Self {
        Self {
            outcome: outcome.to_owned(),
            why,
            is_final,
        }
    }
}

/// The outcome of one install from what the cluster shows now. Final only for Succeeded;
/// failure outcomes count as settled once unchanged for SETTLE_SECONDS; anything else is still
/// in progress (`Timeout` if the deadline passes).
pub fn classify(
    sub: Option<&Value>,
    csv: Option<&Value>,
    ip: Option<&Value>,
    unschedulable: Option<&str>,
) -> Class {
    let null = Value::Null;
    let csv_v = csv.unwrap_or(&null);
    let phase = s(csv_v, "/status/phase");
    let ip_phase = ip.map_or("", |i| s(i, "/status/phase"));
    let csv_name = csv_v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let csv_text = clean(
        &format!(
            "CSV {csv_name} {phase} {}: {}",
            s(csv_v, "/status/reason"),
            s(csv_v, "/status/message")
        ),
        300,
    );
    if ip_phase == "Failed"
        && let Some(ip) = ip
    {
        let extra = if phase == "Succeeded" {
            " (the CSV says Succeeded)"
        } else {
            ""
        };
        let why = format!(
            "InstallPlan {}: {}{extra}",
            s(ip, "/metadata/name"),
            install_plan_failure(ip)
        );
        return Class::new("InstallPlanFailed", clean(&why, 300), false);
    }
    if phase == "Succeeded" {
        if ip.is_none() || ip_phase == "Complete" {
            return Class::new("Succeeded", csv_text, true);
        }
        let plan = if ip_phase.is_empty() {
            "without a phase"
        } else {
            ip_phase
        };
        return Class::new("InProgress", format!("{csv_text}; InstallPlan {plan}"), false);
    }
    for kind in SUB_FAILURES {
        if let Some(c) = condition(sub, kind)
            && c["status"] == "True"
        {
            return Class::new(kind, format!("Subscription {kind}: {}", cond_text(c)), false);
        }
    }
    if phase == "Failed" {
        return Class::new("CSVFailed", csv_text, false);
    }
    if phase == "Pending" && s(csv_v, "/status/reason") == "RequirementsNotMet" {
        let missing: Vec<String> = csv_v
            .pointer("/status/requirementStatus")
            .and_then(Value::as_array)
            .map(|reqs| {
                reqs.iter()
                    .filter(|r| !matches!(r.get("status").and_then(Value::as_str), Some("Present") | None))
                    .map(|r| format!("{} {} {}", s(r, "/kind"), s(r, "/name"), s(r, "/status")))
                    .collect()
            })
            .unwrap_or_default();
        return Class::new(
            "RequirementsNotMet",
            clean(&format!("{csv_text} [{}]", missing.join("; ")), 300),
            false,
        );
    }
    if let Some(pod) = unschedulable {
        return Class::new(
            "Unschedulable",
            clean(&format!("{csv_text}; pod {pod}"), 300),
            false,
        );
    }
    if csv.is_some() {
        return Class::new("InProgress", csv_text, false);
    }
    let sub_v = sub.unwrap_or(&null);
    let conds: Vec<String> = sub_v
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| format!("{}={} {}", s(c, "/type"), s(c, "/status"), cond_text(c)))
                .collect()
        })
        .unwrap_or_default();
    let state = match s(sub_v, "/status/state") {
        "" => "<none>",
        st => st,
    };
    Class::new(
        "InProgress",
        clean(
            &format!("no CSV yet; Subscription state {state} {}", conds.join("; ")),
            300,
        ),
        false,
    )
}

/// Per package: since when its current (outcome, why) has been seen; a failure is settled once
/// unchanged for the settle time, Succeeded at once.
pub struct Settler {
    settle: f64,
    since: HashMap<String, ((String, String), f64)>,
}

impl Settler {
    pub fn new(settle: f64) -> Self {
        Self {
            settle,
            since: HashMap::new(),
        }
    }

    /// Records what `package` shows at `now` (seconds); whether it is settled.
    pub fn observe(&mut self, package: &str, class: &Class, now: f64) -> bool {
        let key = (class.outcome.clone(), class.why.clone());
        let entry = self.since.entry(package.to_owned()).or_insert((key.clone(), now));
        if entry.0 != key {
            *entry = (key, now);
        }
        if class.is_final {
            return true;
        }
        let wait = if self.settle > 0.0 {
            self.settle.max(slow_settle(&class.outcome))
        } else {
            0.0
        };
        !matches!(class.outcome.as_str(), "InProgress" | "Timeout") && now - entry.1 >= wait
    }
}

/// The entry no other entry replaces or skips (`None` unless exactly one).
pub fn channel_head(entries: &[Value]) -> Option<String> {
    let mut replaced = BTreeSet::new();
    for e in entries {
        if let Some(r) = e.get("replaces").and_then(Value::as_str)
            && !r.is_empty()
        {
            replaced.insert(r.to_owned());
        }
        for skip in e.get("skips").and_then(Value::as_array).into_iter().flatten() {
            if let Some(skip) = skip.as_str() {
                replaced.insert(skip.to_owned());
            }
        }
    }
    let heads: Vec<&str> = entries
        .iter()
        .filter_map(|e| e["name"].as_str())
        .filter(|n| !replaced.contains(*n))
        .collect();
    match heads.as_slice() {
        [one] => Some((*one).to_owned()),
        _ => None,
    }
}

/// The objects a bundle inlines (`olm.bundle.object`, base64 JSON); an undecodable one is
/// skipped and named in the second list.
pub fn bundle_objects(bundle: &Value) -> (Vec<Value>, Vec<String>) {
    let mut objects = Vec::new();
    let mut bad = Vec::new();
    for prop in bundle
        .get("properties")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if prop["type"] != "olm.bundle.object" {
            continue;
        }
        let Some(data) = prop.pointer("/value/data").and_then(Value::as_str) else {
            continue;
        };
        match base64::engine::general_purpose::STANDARD
            .decode(data)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
        {
            Some(obj) => objects.push(obj),
            None => bad.push(format!(
                "bundle {}: an olm.bundle.object is not base64 JSON",
                s(bundle, "/name")
            )),
        }
    }
    (objects, bad)
}

/// What the bench needs of one package.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub channel: String,
    pub entries: Vec<String>,
    pub head: Option<String>,
    /// The head bundle's CSV.
    pub csv: Option<Value>,
    /// Every entry's CSV (for the walks).
    pub csvs: HashMap<String, Value>,
    /// Every CRD the channel's bundles own (for the clean-up).
    pub crds: Vec<String>,
}

/// The premise every bench run on a catalog checks first: each package's default channel has one
/// head with an inlined CSV. `(held, what)`.
pub fn heads_premise(facts: &BTreeMap<String, Facts>) -> (bool, String) {
    let no_head: Vec<&String> = facts
        .iter()
        .filter(|(_, f)| f.head.is_none() || f.csv.is_none())
        .map(|(p, _)| p)
        .collect();
    let which = if no_head.is_empty() {
        "all".to_owned()
    } else {
        format!("not: {no_head:?}")
    };
    (
        no_head.is_empty(),
        format!("every default channel has one head with an inlined CSV ({which})"),
    )
}

/// The expect file lists exactly the catalog's packages. `(held, what)`.
pub fn expect_premise(
    expected: &BTreeMap<String, (String, String)>,
    facts: &BTreeMap<String, Facts>,
) -> (bool, String) {
    (
        expected.keys().eq(facts.keys()),
        "the expect file lists exactly the catalog's packages".to_owned(),
    )
}

/// The packages a run installs: `--package` (each must be in the catalog; sorted, once each),
/// else every package of the catalog, cut to `--limit`. `Err` names the unknown ones and what the
/// catalog has.
pub fn selected_packages(
    facts: &BTreeMap<String, Facts>,
    asked: &[String],
    limit: Option<u32>,
) -> Result<Vec<String>, String> {
    let unknown: Vec<&str> = asked
        .iter()
        .filter(|p| !facts.contains_key(*p))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "unknown package(s) {}; the catalog has: {}",
            unknown.join(", "),
            facts.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut packages: Vec<String> = if asked.is_empty() {
        facts.keys().cloned().collect()
    } else {
        let mut p = asked.to_vec();
        p.sort();
        p.dedup();
        p
    };
    if let Some(limit) = limit {
        packages.truncate(limit as usize);
    }
    Ok(packages)
}

/// {package: facts} from the catalog's FBC blobs.
pub fn catalog_packages(blobs: &[Value]) -> BTreeMap<String, Facts> {
    let mut packages = BTreeMap::new();
    let mut channels = HashMap::new();
    let mut bundles = HashMap::new();
    for blob in blobs {
        match blob["schema"].as_str() {
            Some("olm.package") => {
                packages.insert(s(blob, "/name").to_owned(), blob);
            }
            Some("olm.channel") => {
                channels.insert(
                    (s(blob, "/package").to_owned(), s(blob, "/name").to_owned()),
                    blob,
                );
            }
            Some("olm.bundle") => {
                bundles.insert(s(blob, "/name").to_owned(), blob);
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for (name, pkg) in packages {
        let channel = s(pkg, "/defaultChannel").to_owned();
        let entries: Vec<Value> = channels
            .get(&(name.clone(), channel.clone()))
            .and_then(|c| c.get("entries"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let head = channel_head(&entries);
        let mut csvs = HashMap::new();
        let mut crds = BTreeSet::new();
        for entry in &entries {
            let entry_name = s(entry, "/name");
            let Some(bundle) = bundles.get(entry_name) else {
                continue;
            };
            for obj in bundle_objects(bundle).0 {
                if obj["kind"] == "CustomResourceDefinition" {
                    crds.insert(s(&obj, "/metadata/name").to_owned());
                }
                if obj["kind"] == "ClusterServiceVersion" {
                    for owned in obj
                        .pointer("/spec/customresourcedefinitions/owned")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(n) = owned["name"].as_str().filter(|n| !n.is_empty()) {
                            crds.insert(n.to_owned());
                        }
                    }
                    csvs.insert(entry_name.to_owned(), obj);
                }
            }
        }
        let csv = head.as_ref().and_then(|h| csvs.get(h).cloned());
        out.insert(
            name,
            Facts {
                channel,
                entries: entries.iter().map(|e| s(e, "/name").to_owned()).collect(),
                head,
                csv,
                csvs,
                crds: crds.into_iter().collect(),
            },
        );
    }
    out
}

/// [start, hop1, hop2, ...] from `kubectl-olm catalog upgrade-path -o json`.
pub fn expected_walk(start: &str, upgrade_path: &Value) -> Vec<String> {
    std::iter::once(start.to_owned())
        .chain(
            upgrade_path
                .get("hops")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|h| h["name"].as_str().map(str::to_owned)),
        )
        .collect()
}

/// The CSVs a namespace went through: its InstallPlans' spec.clusterServiceVersionNames in
/// creation order (spec.generation, then creationTimestamp, then name), a repeat of the previous
/// CSV dropped (a plan made again for the same CSV is not a hop).
pub fn observed_walk(install_plans: &[Value]) -> Vec<String> {
    let mut plans: Vec<&Value> = install_plans.iter().collect();
    plans.sort_by_key(|ip| {
        (
            ip.pointer("/spec/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            s(ip, "/metadata/creationTimestamp").to_owned(),
            s(ip, "/metadata/name").to_owned(),
        )
    });
    let mut path: Vec<String> = Vec::new();
    for ip in plans {
        for name in ip
            .pointer("/spec/clusterServiceVersionNames")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if path.last().map(String::as_str) != Some(name) {
                path.push(name.to_owned());
            }
        }
    }
    path
}

/// What observed_walk reads of an InstallPlan (its uid keys the record).
pub fn slim_plan(ip: &Value) -> Value {
    json!({
        "metadata": {
            "name": ip.pointer("/metadata/name"),
            "namespace": ip.pointer("/metadata/namespace"),
            "uid": ip.pointer("/metadata/uid"),
            "creationTimestamp": ip.pointer("/metadata/creationTimestamp"),
        },
        "spec": {
            "generation": ip.pointer("/spec/generation"),
            "clusterServiceVersionNames": ip.pointer("/spec/clusterServiceVersionNames").cloned().unwrap_or(json!([])),
        },
    })
}

/// The InstallPlans of one namespace seen during the walk phase (`recorded`) and those there now
/// (`current`), once each by uid: upstream's catalog operator, and olm-rs as it, keeps at most
/// five InstallPlans per namespace, so a walk of more than five entries has lost its first plans
/// by its end.
pub fn merge_plans(recorded: &[Value], current: &[Value]) -> Vec<Value> {
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    for (i, ip) in recorded.iter().chain(current).enumerate() {
        let key = ip
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .map_or_else(|| format!("#{i}"), str::to_owned);
        out.insert(key, ip.clone());
    }
    out.into_values().collect()
}

/// The Operator objects of the installs (prefix `acc`) and of the walks (`accw`):
/// `<package>.<namespace>`, cut to 63 characters (the component label's limit).
pub fn operator_names(packages: &[String], prefixes: &[&str]) -> BTreeSet<String> {
    prefixes
        .iter()
        .flat_map(|prefix| {
            packages.iter().map(move |p| {
                format!("{p}.{}", namespace_for(prefix, p))
                    .chars()
                    .take(63)
                    .collect()
            })
        })
        .collect()
}

/// `<out>-walks.tsv` beside `<out>.tsv`.
pub fn out_path_for_walks(out: &std::path::Path) -> std::path::PathBuf {
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = out
        .extension()
        .map_or_else(|| "tsv".to_owned(), |e| e.to_string_lossy().into_owned());
    out.with_file_name(format!("{stem}-walks.{ext}"))
}

/// Whether the CSV is a copied CSV (label olm.copiedFrom): another namespace's install shown
/// here, never an install of this namespace's Subscription.
pub fn is_copy(csv: Option<&Value>) -> bool {
    csv.and_then(|c| c.pointer("/metadata/labels/olm.copiedFrom"))
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty())
}

/// The CRD names a RequirementsNotMet `why` finds not Present (`CustomResourceDefinition
/// <name> <status>` anywhere in it; at most three, in order, each once).
pub fn missing_crds(why: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (at, _) in why.match_indices("CustomResourceDefinition ") {
        let rest = why
            .get(at + "CustomResourceDefinition ".len()..)
            .unwrap_or_default();
        let mut words = rest.split_whitespace();
        let (Some(name), Some(status)) = (words.next(), words.next()) else {
            continue;
        };
        let status: String = status
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !status.is_empty() && status != "Present" && !out.iter().any(|c| c == name) {
            out.push(name.to_owned());
        }
    }
    out.truncate(3);
    out
}
