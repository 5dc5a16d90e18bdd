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

use super::shared::{Catalog, version_cell};
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

/// Gathers the description of `package`.
///
/// # Errors
/// [`CliError::PackageNotFound`].
pub fn describe(catalog: &Catalog, package: &str) -> Result<PackageDescription, CliError> {
    let pkg = catalog.package(package)?;
    let channels = pkg
        .channels()
        .iter()
        .map(|c| {
            let head = c.graph().head().ok();
            ChannelSummary {
                name: c.name.clone(),
                head: head.map(|h| h.name.clone()),
                version: head
                    .and_then(|h| h.version.as_ref())
                    .map(|v| version_cell(Some(v))),
                default: c.name == pkg.default_channel,
            }
        })
        .collect();
    let head = pkg
        .default_channel()
        .and_then(|c| c.head())
        .and_then(|h| pkg.bundle(h));
    let csv = head.and_then(|b| b.csv_metadata());
    let csv = csv.as_deref();
    let description = if pkg.description.trim().is_empty() {
        csv.map(|m| m.description.clone()).unwrap_or_default()
    } else {
        pkg.description.clone()
    };
    Ok(PackageDescription {
        name: pkg.name.clone(),
        display_name: csv.map(|m| m.display_name.clone()).unwrap_or_default(),
        provider: csv
            .and_then(|m| m.provider.as_ref())
            .map(|p| p.name.clone())
            .unwrap_or_default(),
        default_channel: pkg.default_channel.clone(),
        latest_version: version_cell(pkg.latest_version()),
        metadata_from: csv.and(head).map(|b| b.name.clone()),
        min_kube_version: csv.map(|m| m.min_kube_version.clone()).unwrap_or_default(),
        maturity: csv.map(|m| m.maturity.clone()).unwrap_or_default(),
        description: description.trim().to_string(),
        channels,
        install_modes: csv
            .map(|m| {
                m.install_modes
                    .iter()
                    .map(|i| InstallMode {
                        type_: i.type_.clone(),
                        supported: i.supported,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        owned_crds: csv
            .map(|m| {
                m.crd_descriptions
                    .owned
                    .iter()
                    .map(|c| OwnedCrd {
                        name: c.name.clone(),
                        version: c.version.clone(),
                        kind: c.kind.clone(),
                        display_name: c.display_name.clone(),
                        description: c.description.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        maintainers: csv
            .map(|m| {
                m.maintainers
                    .iter()
                    .map(|x| Maintainer {
                        name: x.name.clone(),
                        email: x.email.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        links: csv
            .map(|m| {
                m.links
                    .iter()
                    .map(|l| Link {
                        name: l.name.clone(),
                        url: l.url.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
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
