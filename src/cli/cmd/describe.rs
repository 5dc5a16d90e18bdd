//! `kubectl-olm catalog describe PKG`: everything a user wants to know before installing a package,
//! as kubectl-describe-like text, or one structured object with `-o json|yaml`.
//!
//! Package-level facts come from the `olm.package` document and the channels; the CSV facts
//! (display name, install modes, owned CRDs, maintainers, links) come from the head of the default
//! channel, the bundle a new Subscription would install: its `olm.csv.metadata` property, or its
//! inlined CSV (`olm.bundle.object`). Image-only bundles carry neither, and those sections say
//! `<none>`.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::shared::{Catalog, csv_metadata, version_cell};
use crate::cli::{
    CliError, OutputFormat,
    output::{self, NONE, Streams},
};

/// A channel and its head.
#[derive(Debug, Serialize)]
pub struct ChannelSummary {
    /// Channel name.
    pub name: String,
    /// Head entry, when the channel has exactly one.
    pub head: Option<String>,
    /// Head version.
    pub version: Option<String>,
    /// Whether it is the default channel.
    pub default: bool,
}

/// One install mode of the CSV.
#[derive(Debug, Serialize)]
pub struct InstallMode {
    /// `OwnNamespace`, `SingleNamespace`, `MultiNamespace` or `AllNamespaces`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Whether the operator supports it.
    pub supported: bool,
}

/// One CRD the CSV owns.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnedCrd {
    /// `plural.group`.
    pub name: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Display name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// Description.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// A maintainer.
#[derive(Debug, Serialize)]
pub struct Maintainer {
    /// Name.
    pub name: String,
    /// Email address.
    pub email: String,
}

/// A link.
#[derive(Debug, Serialize)]
pub struct Link {
    /// Label.
    pub name: String,
    /// URL.
    pub url: String,
}

/// Everything `describe` shows.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageDescription {
    /// Package name.
    pub name: String,
    /// CSV display name.
    pub display_name: String,
    /// CSV provider name.
    pub provider: String,
    /// Default channel.
    pub default_channel: String,
    /// Newest bundle version.
    pub latest_version: String,
    /// The bundle the CSV facts come from (head of the default channel).
    pub metadata_from: Option<String>,
    /// CSV `minKubeVersion`.
    pub min_kube_version: String,
    /// CSV maturity.
    pub maturity: String,
    /// Package description (the CSV's when the package has none).
    pub description: String,
    /// Channels, sorted by name.
    pub channels: Vec<ChannelSummary>,
    /// Install modes of the CSV.
    pub install_modes: Vec<InstallMode>,
    /// CRDs the CSV owns.
    pub owned_crds: Vec<OwnedCrd>,
    /// Maintainers.
    pub maintainers: Vec<Maintainer>,
    /// Links.
    pub links: Vec<Link>,
}

fn text(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn list<'a>(v: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(pointer).and_then(Value::as_array).into_iter().flatten()
}

/// Gathers the description of `package`.
///
/// # Errors
/// [`CliError::PackageNotFound`].
pub fn describe(catalog: &Catalog, package: &str) -> Result<PackageDescription, CliError> {
    let pkg = catalog.package(package)?;
    let channels = catalog.channels(&pkg.name);
    let mut summaries = Vec::new();
    let mut default_head = None;
    for c in &channels {
        let graph = catalog.graph(c);
        let head = graph.head().ok();
        if c.name == pkg.default_channel {
            default_head = head.map(|h| h.name.clone());
        }
        summaries.push(ChannelSummary {
            name: c.name.clone(),
            head: head.map(|h| h.name.clone()),
            version: head
                .and_then(|h| h.version.as_ref())
                .map(|v| version_cell(Some(v))),
            default: c.name == pkg.default_channel,
        });
    }
    let csv = default_head
        .as_deref()
        .and_then(|h| catalog.bundle(&pkg.name, h))
        .and_then(csv_metadata);
    let csv = csv.unwrap_or(Value::Null);
    let description = if pkg.description.trim().is_empty() {
        text(&csv, "/description")
    } else {
        pkg.description.clone()
    };
    Ok(PackageDescription {
        name: pkg.name.clone(),
        display_name: text(&csv, "/displayName"),
        provider: text(&csv, "/provider/name"),
        default_channel: pkg.default_channel.clone(),
        latest_version: version_cell(catalog.latest_version(&pkg.name).as_ref()),
        metadata_from: default_head.filter(|_| !csv.is_null()),
        min_kube_version: text(&csv, "/minKubeVersion"),
        maturity: text(&csv, "/maturity"),
        description: description.trim().to_string(),
        channels: summaries,
        install_modes: list(&csv, "/installModes")
            .map(|m| InstallMode {
                type_: text(m, "/type"),
                supported: m.get("supported").and_then(Value::as_bool).unwrap_or(false),
            })
            .collect(),
        owned_crds: list(&csv, "/customresourcedefinitions/owned")
            .chain(list(&csv, "/crdDescriptions/owned"))
            .map(|c| OwnedCrd {
                name: text(c, "/name"),
                version: text(c, "/version"),
                kind: text(c, "/kind"),
                display_name: text(c, "/displayName"),
                description: text(c, "/description"),
            })
            .collect(),
        maintainers: list(&csv, "/maintainers")
            .map(|m| Maintainer {
                name: text(m, "/name"),
                email: text(m, "/email"),
            })
            .collect(),
        links: list(&csv, "/links")
            .map(|l| Link {
                name: text(l, "/name"),
                url: text(l, "/url"),
            })
            .collect(),
    })
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { NONE } else { s }
}

/// Renders the description as kubectl-describe-like text.
#[must_use]
pub fn to_text(d: &PackageDescription) -> String {
    let mut s = String::new();
    let field = |s: &mut String, label: &str, value: &str| {
        let _ = writeln!(s, "{:<18}{}", format!("{label}:"), or_none(value));
    };
    field(&mut s, "Name", &d.name);
    field(&mut s, "Display Name", &d.display_name);
    field(&mut s, "Provider", &d.provider);
    field(&mut s, "Default Channel", &d.default_channel);
    field(&mut s, "Latest Version", &d.latest_version);
    field(
        &mut s,
        "Metadata From",
        d.metadata_from.as_deref().unwrap_or_default(),
    );
    field(&mut s, "Min Kube Version", &d.min_kube_version);
    field(&mut s, "Maturity", &d.maturity);
    let indent = |s: &mut String, block: &str| {
        for line in block.lines() {
            let _ = writeln!(s, "  {line}");
        }
    };
    s.push_str("Description:\n");
    indent(
        &mut s,
        if d.description.is_empty() {
            NONE
        } else {
            &d.description
        },
    );

    s.push_str("Channels:\n");
    let rows: Vec<Vec<String>> = d
        .channels
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                c.head.clone().unwrap_or_default(),
                c.version.clone().unwrap_or_default(),
                if c.default { "true".into() } else { "false".into() },
            ]
        })
        .collect();
    if rows.is_empty() {
        indent(&mut s, NONE);
    } else {
        indent(
            &mut s,
            &output::table(&["NAME", "HEAD", "VERSION", "DEFAULT"], &rows),
        );
    }

    s.push_str("Install Modes:\n");
    if d.install_modes.is_empty() {
        indent(&mut s, NONE);
    } else {
        let rows: Vec<Vec<String>> = d
            .install_modes
            .iter()
            .map(|m| {
                vec![
                    m.type_.clone(),
                    if m.supported { "supported" } else { "not supported" }.into(),
                ]
            })
            .collect();
        indent(&mut s, &output::table(&["TYPE", "SUPPORT"], &rows));
    }

    s.push_str("Owned CRDs:\n");
    if d.owned_crds.is_empty() {
        indent(&mut s, NONE);
    } else {
        let rows: Vec<Vec<String>> = d
            .owned_crds
            .iter()
            .map(|c| {
                vec![
                    c.kind.clone(),
                    c.name.clone(),
                    c.version.clone(),
                    output::truncate(&c.description, 60),
                ]
            })
            .collect();
        indent(
            &mut s,
            &output::table(&["KIND", "NAME", "VERSION", "DESCRIPTION"], &rows),
        );
    }

    s.push_str("Maintainers:\n");
    if d.maintainers.is_empty() {
        indent(&mut s, NONE);
    }
    for m in &d.maintainers {
        let line = if m.email.is_empty() {
            m.name.clone()
        } else {
            format!("{} <{}>", m.name, m.email)
        };
        indent(&mut s, &line);
    }
    s.push_str("Links:\n");
    if d.links.is_empty() {
        indent(&mut s, NONE);
    }
    for l in &d.links {
        indent(&mut s, &format!("{}: {}", l.name, l.url));
    }
    s
}

/// Prints the description of `package`.
///
/// # Errors
/// [`CliError::PackageNotFound`], [`CliError::Write`].
pub fn run(
    catalog: &Catalog,
    package: &str,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let d = describe(catalog, package)?;
    match format {
        OutputFormat::Json | OutputFormat::Yaml => output::print_object(streams.out, format, &d)?,
        OutputFormat::Name => writeln!(streams.out, "package/{}", d.name)?,
        OutputFormat::Table | OutputFormat::Wide => streams.out.write_all(to_text(&d).as_bytes())?,
    }
    Ok(())
}
