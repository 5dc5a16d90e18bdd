//! view: what the pages show, as plain data. The data source fills these from wherever it reads
//! (the cluster through the user's kubeconfig, a catalog directory); the renderer ([`crate::html`])
//! only formats them. Nothing here knows about Kubernetes or catalog types, so the console crate
//! does not depend on olm-rs and olm-rs can depend on it.

use std::sync::Arc;

/// One catalog the console can browse.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatalogSummary {
    /// The key pages link with: `NAMESPACE/NAME` for a CatalogSource, the path for a directory.
    pub key: String,
    /// The name to show (`spec.displayName`, else the key).
    pub display_name: String,
    /// `spec.publisher`, when set.
    pub publisher: String,
    /// How many packages it holds (0 when it could not be read).
    pub packages: usize,
    /// Why it could not be read, or what it left out; `None` when it was read cleanly.
    pub problem: Option<String>,
}

/// One package in the list of the first page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackageSummary {
    /// The catalog's [`CatalogSummary::key`].
    pub catalog: String,
    /// The package name.
    pub name: String,
    /// The head bundle's display name (the package name when it has none).
    pub display_name: String,
    /// The first line of the description, shortened.
    pub summary: String,
    /// The provider of the head bundle.
    pub provider: String,
    /// The default channel.
    pub default_channel: String,
    /// The newest version in the package.
    pub latest: String,
    /// Whether the catalog carries an icon for it.
    pub has_icon: bool,
    /// Keywords of the head bundle (searched, not shown).
    pub keywords: Vec<String>,
}

/// The first page: every catalog and every package.
#[derive(Clone, Debug, Default)]
pub struct Overview {
    /// The catalogs, in the source's order.
    pub catalogs: Vec<CatalogSummary>,
    /// Every package of every catalog, sorted by catalog then name. Shared: a large catalog's
    /// list is built once and handed to each request.
    pub packages: Arc<[PackageSummary]>,
}

/// A package icon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Icon {
    /// `image/svg+xml`, `image/png`, ...
    pub media_type: String,
    /// The decoded image.
    pub data: Vec<u8>,
}

/// One package, on its own page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackageView {
    /// The catalog's key.
    pub catalog: String,
    /// The package name.
    pub name: String,
    /// The head bundle's display name.
    pub display_name: String,
    /// The full description (plain text; Markdown is shown as written).
    pub description: String,
    /// The provider.
    pub provider: String,
    /// The default channel.
    pub default_channel: String,
    /// Whether the catalog carries an icon.
    pub has_icon: bool,
    /// Why the package is deprecated, when it is.
    pub deprecation: Option<String>,
    /// Its channels, the default one first.
    pub channels: Vec<ChannelView>,
    /// Where it is installed on the cluster.
    pub installed: Vec<InstalledRef>,
    /// What could not be read for this page (the Subscriptions, ...), one sentence each.
    pub problems: Vec<String>,
}

/// Where a package is installed: what a package page marks in its graphs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstalledRef {
    /// The Subscription's namespace.
    pub namespace: String,
    /// The Subscription's name.
    pub subscription: String,
    /// The channel it follows.
    pub channel: String,
    /// The installed CSV, when one is.
    pub csv: Option<String>,
}

/// One channel of a package with its upgrade graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChannelView {
    /// The channel name.
    pub name: String,
    /// Its head entry, when the graph has exactly one.
    pub head: Option<String>,
    /// Why it is deprecated, when it is.
    pub deprecation: Option<String>,
    /// Why the path to the head could not be computed from the installed version, or the graph's
    /// problems (no head, several heads, a cycle).
    pub problem: Option<String>,
    /// The graph.
    pub graph: GraphView,
}

/// An upgrade graph: nodes in the channel's order (head first) and the edges between them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphView {
    /// The entries, head first; entries named by an edge but absent from the channel come last
    /// with [`Node::missing`] set.
    pub nodes: Vec<Node>,
    /// The edges.
    pub edges: Vec<GraphEdge>,
}

/// One entry of a channel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// The bundle (CSV) name.
    pub name: String,
    /// Its version, when known.
    pub version: String,
    /// The channel head.
    pub head: bool,
    /// Installed on the cluster (by a Subscription to this channel).
    pub installed: bool,
    /// On the path OLM would take from the installed entry to the head.
    pub on_path: bool,
    /// Named by an edge but not an entry of the channel.
    pub missing: bool,
    /// Why the bundle is deprecated, when it is.
    pub deprecated: bool,
}

/// What creates an upgrade edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// `replaces`.
    Replaces,
    /// `skips`.
    Skips,
    /// `skipRange`.
    SkipRange,
}

impl EdgeKind {
    /// The FBC field name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Replaces => "replaces",
            Self::Skips => "skips",
            Self::SkipRange => "skipRange",
        }
    }
}

/// An upgrade edge: `from` (newer) may be installed over `to` (older).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphEdge {
    /// The newer entry.
    pub from: String,
    /// The older entry.
    pub to: String,
    /// Which field creates it.
    pub kind: EdgeKind,
    /// One hop of the path from the installed entry to the head.
    pub on_path: bool,
}

/// The installed-operators page.
#[derive(Clone, Debug, Default)]
pub struct InstalledPage {
    /// Every Subscription the user may read, by namespace then name.
    pub operators: Vec<InstalledView>,
    /// What could not be read (Events the user may not list, ...), one sentence each.
    pub problems: Vec<String>,
}

/// One Subscription and what it installed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstalledView {
    /// The namespace.
    pub namespace: String,
    /// The Subscription's name.
    pub subscription: String,
    /// The package.
    pub package: String,
    /// The channel (empty: the default channel).
    pub channel: String,
    /// The CatalogSource key (`NAMESPACE/NAME`).
    pub catalog: String,
    /// `status.state` (`AtLatestKnown`, `UpgradePending`, ...).
    pub state: String,
    /// `status.installedCSV`.
    pub installed_csv: String,
    /// `status.currentCSV`.
    pub current_csv: String,
    /// The installed CSV's phase.
    pub csv_phase: String,
    /// `Manual` or `Automatic`.
    pub approval: String,
    /// An InstallPlan waiting for approval, with the CSV it installs.
    pub pending_plan: Option<PendingPlan>,
    /// The Subscription's and the CSV's conditions.
    pub conditions: Vec<ConditionView>,
    /// Recent Events of the Subscription, its InstallPlans and its CSV, newest first.
    pub events: Vec<EventView>,
}

/// An InstallPlan that waits for approval.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PendingPlan {
    /// The InstallPlan's name.
    pub name: String,
    /// The CSVs it installs.
    pub csvs: Vec<String>,
}

/// A condition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConditionView {
    /// Whose condition (`Subscription`, `ClusterServiceVersion`).
    pub owner: String,
    /// The type.
    pub type_: String,
    /// `True`, `False`, `Unknown`.
    pub status: String,
    /// The reason.
    pub reason: String,
    /// The message.
    pub message: String,
}

/// An Event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventView {
    /// `Normal` or `Warning`.
    pub type_: String,
    /// The reason.
    pub reason: String,
    /// `Kind/name` of the object.
    pub object: String,
    /// The message.
    pub message: String,
    /// When it was last seen (RFC 3339), empty when unknown.
    pub last_seen: String,
}

/// An InstallPlan and what approving it will change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanView {
    /// The namespace.
    pub namespace: String,
    /// The InstallPlan's name.
    pub name: String,
    /// Its phase.
    pub phase: String,
    /// `Manual` or `Automatic`.
    pub approval: String,
    /// `spec.approved`.
    pub approved: bool,
    /// The CSVs it installs.
    pub csvs: Vec<String>,
    /// Each step and its change.
    pub steps: Vec<StepView>,
    /// The RBAC it grants.
    pub grants: Vec<GrantView>,
    /// The images that will run.
    pub images: Vec<String>,
    /// Why it cannot be approved (already approved, finished); `None` when it can.
    pub not_approvable: Option<String>,
}

/// One step of a plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepView {
    /// The object's kind.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// The step's status.
    pub status: String,
    /// `new`, `changed`, `unchanged`, or `unknown` when it could not be compared.
    pub change: String,
    /// The fields a `changed` step changes.
    pub fields: Vec<FieldView>,
    /// Why it could not be compared.
    pub note: Option<String>,
    /// The CRD safety verdict for a CRD step.
    pub crd_verdict: Option<String>,
}

/// One changed field.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldView {
    /// The JSON path.
    pub path: String,
    /// The live value (JSON), empty when absent.
    pub before: String,
    /// The value after the apply (JSON), empty when removed.
    pub after: String,
}

/// One RBAC rule the plan grants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrantView {
    /// The Role or ClusterRole.
    pub role: String,
    /// `cluster-wide` or `namespace NS`.
    pub scope: String,
    /// API groups.
    pub api_groups: Vec<String>,
    /// Resources.
    pub resources: Vec<String>,
    /// Verbs.
    pub verbs: Vec<String>,
    /// The powers flagged (`wildcard verbs`, `secrets`, ...).
    pub flags: Vec<String>,
}
