//! Errors of the `kubectl-olm` command line, each with the exit code it maps to.
//!
//! Exit codes follow kubectl and clap: 0 success, 1 a failed check or lookup (unknown package, invalid
//! catalog, unreadable bundle), 2 bad usage (clap's own errors, and flag combinations clap cannot
//! check). Every message names what was wrong and how to fix it; the binary prints it as `error: ...`.

use std::{io, path::PathBuf};

/// Exit code for a failed check or lookup.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code for bad usage.
pub const EXIT_USAGE: u8 = 2;

/// Why a `kubectl-olm` command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The arguments are inconsistent in a way clap cannot check.
    #[error("{0}")]
    Usage(String),

    /// The `--catalog` directory does not exist.
    #[error(
        "catalog directory {dir} not found; pass --catalog DIR pointing at a file-based catalog \
         (or --catalog REGISTRY/REPO:TAG for a catalog image), or run from the repository root where \
         ./catalog lives"
    )]
    CatalogNotFound {
        /// The directory that was asked for.
        dir: PathBuf,
    },

    /// The catalog could not be read or decoded.
    #[error("failed to load catalog {dir}: {message}")]
    LoadCatalog {
        /// The catalog directory.
        dir: PathBuf,
        /// What went wrong, from the loader.
        message: String,
    },

    /// The package is not in the catalog.
    #[error("package {package:?} not found in catalog {catalog}; packages: {known}")]
    PackageNotFound {
        /// The package that was asked for.
        package: String,
        /// The catalog directory.
        catalog: String,
        /// The packages that exist, comma separated (or `none`).
        known: String,
    },

    /// The channel is not in the package.
    #[error("channel {channel:?} not found in package {package}; channels: {known}")]
    ChannelNotFound {
        /// The channel that was asked for.
        channel: String,
        /// The package.
        package: String,
        /// The channels that exist, the default one marked.
        known: String,
    },

    /// The package names no default channel and none was given.
    #[error("package {package} has no default channel; pass --channel, one of: {known}")]
    NoDefaultChannel {
        /// The package.
        package: String,
        /// The channels that exist.
        known: String,
    },

    /// The channel graph is broken in a way that stops the verb (no head, a cycle).
    #[error(
        "channel {channel} of package {package} has a broken upgrade graph: {message}; run `kubectl-olm catalog validate` for the full report"
    )]
    BrokenChannel {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The graph error.
        message: String,
    },

    /// No upgrade path exists from the given version.
    #[error("{0}")]
    NoUpgradePath(String),

    /// `validate` found problems; the report has already been printed.
    #[error("catalog {dir} is invalid: {count} problem(s) found")]
    InvalidCatalog {
        /// The catalog directory.
        dir: String,
        /// How many problems.
        count: usize,
    },

    /// A bundle directory could not be read.
    #[error(
        "failed to read bundle directory {dir}: {source}; pass a registry+v1 bundle directory holding manifests/ and metadata/"
    )]
    ReadBundle {
        /// The directory.
        dir: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },

    /// A bundle directory is not a valid registry+v1 bundle.
    #[error("failed to render bundle {dir}: {source}")]
    RenderBundle {
        /// The directory.
        dir: PathBuf,
        /// The bundle error.
        #[source]
        source: crate::bundle::BundleError,
    },

    /// The kubeconfig could not be read or holds no usable context.
    #[error("cannot load {config}: {message}")]
    Kubeconfig {
        /// Where the configuration came from (`kubeconfig /path`).
        config: String,
        /// What went wrong.
        message: String,
    },

    /// The apiserver could not be reached (connection refused, TLS, timeout).
    #[error(
        "cannot reach the cluster at {server} ({source_desc}) to {action}: {message}; check that the cluster is running and that --kubeconfig/--context point at it"
    )]
    Unreachable {
        /// What the command was doing.
        action: String,
        /// The apiserver URL.
        server: String,
        /// Where the configuration came from.
        source_desc: String,
        /// The transport error.
        message: String,
    },

    /// The apiserver refused a request.
    #[error("failed to {action}: {message} (HTTP {code}){hint}", hint = api_hint(*code))]
    Api {
        /// What the command was doing.
        action: String,
        /// The apiserver's message.
        message: String,
        /// The HTTP status code.
        code: u16,
    },

    /// The user may not do what the command needs (HTTP 403): what, and what to ask for.
    #[error("you may not {action}: ask for {ask}, or use --context with a user that has it")]
    Forbidden {
        /// What the command was doing (`get installplan x in namespace ns`).
        action: String,
        /// The permission to ask for, from the apiserver's refusal (`list on
        /// subscriptions.operators.coreos.com in namespace ns (user "alice")`).
        ask: String,
    },

    /// The OLM CRDs are not installed on the cluster.
    #[error(
        "the cluster has no {resource} API (operators.coreos.com); install OLM's CRDs first: kubectl apply --server-side -f manifests/crds/ (or the controller's manifests: kubectl apply -k manifests)"
    )]
    OlmNotInstalled {
        /// The resource that was missing (`subscriptions`).
        resource: String,
    },

    /// The namespace has no OperatorGroup and `--create-operator-group` was not given.
    #[error(
        "namespace {namespace} has no OperatorGroup; pass --create-operator-group or create one (kubectl apply -f operatorgroup.yaml with spec.targetNamespaces: [{namespace}])"
    )]
    NoOperatorGroup {
        /// The namespace.
        namespace: String,
    },

    /// The namespace has more than one OperatorGroup; OLM installs nothing there.
    #[error(
        "namespace {namespace} has {count} OperatorGroups ({names}); OLM needs exactly one per namespace: delete all but one (kubectl delete operatorgroup NAME -n {namespace})"
    )]
    TooManyOperatorGroups {
        /// The namespace.
        namespace: String,
        /// How many.
        count: usize,
        /// Their names.
        names: String,
    },

    /// A Subscription for the package already exists.
    #[error(
        "package {package} is already subscribed in namespace {namespace} by subscription {subscription}; see `kubectl olm list -n {namespace}`, or `kubectl olm uninstall {package} -n {namespace}` first"
    )]
    AlreadySubscribed {
        /// The package.
        package: String,
        /// The namespace.
        namespace: String,
        /// The existing Subscription.
        subscription: String,
    },

    /// The CatalogSource to install from does not exist.
    #[error(
        "catalog source {namespace}/{name} not found; catalog sources: {known}; pass --catalog-source NAME --catalog-source-namespace NS, or deploy the controller (kubectl apply -k manifests) which creates olm/olm-rs-catalog"
    )]
    CatalogSourceNotFound {
        /// The CatalogSource name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// The CatalogSources that exist, `namespace/name`.
        known: String,
    },

    /// A named object (Subscription, InstallPlan, package) was not found.
    #[error("{0}")]
    NotFound(String),

    /// The object is in a state the verb cannot act on (an InstallPlan already finished, a
    /// Subscription without an InstallPlan, custom resources left for `--delete-crds`).
    #[error("{0}")]
    Refused(String),

    /// Objects were still present when the wait ended.
    #[error("{0}")]
    WaitTimedOut(String),

    /// Pulling or pushing an image failed (the registry's or the unpacker's message, with its fix).
    #[error("{0}")]
    Registry(String),

    /// Writing the output failed.
    #[error("failed to write output: {0}")]
    Write(#[from] io::Error),
}

impl CliError {
    /// A [`CliError::Registry`] carrying the whole cause chain of an image error.
    pub fn registry(err: &crate::oci::Error) -> Self {
        CliError::Registry(operator_runtime::error_chain(err))
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => EXIT_USAGE,
            _ => EXIT_FAILURE,
        }
    }

    /// Whether this error is a closed pipe on stdout (`kubectl-olm ... | head`), which should end the
    /// process quietly with success.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Write(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// The fix to suggest for an HTTP status from the apiserver.
fn api_hint(code: u16) -> &'static str {
    match code {
        401 => "; your credentials were rejected: refresh them in the kubeconfig",
        403 => "; ask your cluster admin for RBAC permission, or use --context with a user that has it",
        _ => "",
    }
}

/// The permission to ask for, read from the apiserver's 403 message (`User "alice" cannot list
/// resource "subscriptions" in API group "operators.coreos.com" in the namespace "ns"`):
/// `"list" on subscriptions.operators.coreos.com in namespace ns (for user "alice")`, or the
/// whole message when it does not read that way.
pub fn forbidden_ask(message: &str) -> String {
    let quoted = |after: &str| -> Option<String> {
        let start = message.find(after)? + after.len();
        let rest = message.get(start..)?.strip_prefix('"')?;
        Some(rest[..rest.find('"')?].to_owned())
    };
    let (Some(verb), Some(resource)) = (
        message
            .find(" cannot ")
            .and_then(|i| message.get(i + " cannot ".len()..))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_owned),
        quoted("resource "),
    ) else {
        return format!("the permission the cluster names ({message})");
    };
    let resource = match quoted("in API group ").filter(|g| !g.is_empty()) {
        Some(group) => format!("{resource}.{group}"),
        None => resource,
    };
    let scope = match quoted("in the namespace ") {
        Some(ns) => format!("in namespace {ns} (a Role and RoleBinding)"),
        None => "cluster-wide (a ClusterRole and ClusterRoleBinding)".to_owned(),
    };
    let user = quoted("User ")
        .map(|u| format!(" for user {u}"))
        .unwrap_or_default();
    format!("{verb:?} on {resource} {scope}{user}")
}

/// Joins names for an error message, `none` when there are none.
pub fn known_list<I, S>(names: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let joined = names
        .into_iter()
        .map(|s| s.as_ref().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if joined.is_empty() {
        "none".to_string()
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_package_names_the_catalog_and_the_packages_that_exist() {
        let e = CliError::PackageNotFound {
            package: "redis".into(),
            catalog: "./catalog".into(),
            known: known_list(["redis-operator"]),
        };
        assert_eq!(
            e.to_string(),
            r#"package "redis" not found in catalog ./catalog; packages: redis-operator"#
        );
        assert_eq!(e.exit_code(), 1);
    }

    #[test]
    fn usage_errors_exit_with_two() {
        assert_eq!(CliError::Usage("bad".into()).exit_code(), 2);
    }

    #[test]
    fn a_closed_pipe_is_recognised() {
        let e = CliError::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(e.is_broken_pipe());
        assert!(!CliError::Usage("x".into()).is_broken_pipe());
    }

    #[test]
    fn a_403_names_what_may_not_be_read_and_what_to_ask_for() {
        let e = CliError::Forbidden {
            action: "list subscriptions in namespace shop".into(),
            ask: forbidden_ask(
                "subscriptions.operators.coreos.com is forbidden: User \"alice\" cannot list resource \
                 \"subscriptions\" in API group \"operators.coreos.com\" in the namespace \"shop\"",
            ),
        };
        assert_eq!(
            e.to_string(),
            "you may not list subscriptions in namespace shop: ask for \"list\" on \
             subscriptions.operators.coreos.com in namespace shop (a Role and RoleBinding) for user \
             alice, or use --context with a user that has it"
        );
        assert_eq!(
            forbidden_ask(
                "customresourcedefinitions.apiextensions.k8s.io \"x\" is forbidden: User \"bob\" cannot \
                 get resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the \
                 cluster scope"
            ),
            "\"get\" on customresourcedefinitions.apiextensions.k8s.io cluster-wide (a ClusterRole and \
             ClusterRoleBinding) for user bob"
        );
        assert_eq!(
            forbidden_ask(
                "configmaps \"c\" is forbidden: User \"u\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"olm\""
            ),
            "\"get\" on configmaps in namespace olm (a Role and RoleBinding) for user u"
        );
    }

    #[test]
    fn an_empty_known_list_says_none() {
        assert_eq!(known_list(Vec::<String>::new()), "none");
    }
}
