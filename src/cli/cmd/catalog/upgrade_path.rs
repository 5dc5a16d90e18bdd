//! `kubectl-olm catalog upgrade-path PKG --from VERSION [--channel C]`: every hop OLM installs, one
//! InstallPlan each, from an installed version to the head of a channel (the default channel unless
//! `--channel`), with the edge that allows each hop. The hops are [`ChannelGraph::upgrade_path`]'s.
//!
//! `--from` takes a version (`0.1.0`) or a bundle name (`redis-operator.v0.1.0`). A version that
//! names no entry of the channel is still a valid start (a release removed from the catalog):
//! then only `skipRange` edges can match it, exactly as on a cluster.
//!
//! [`ChannelGraph::upgrade_path`]: crate::graph::ChannelGraph::upgrade_path

use serde::Serialize;

use super::shared::{Catalog, version_cell};
use crate::{
    cli::{
        CliError, OutputFormat,
        error::known_list,
        output::{self, Streams},
    },
    graph::{EdgeKind, GraphError, Installed},
    version_range,
};

/// A bundle on the path.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Bundle name; `None` for a version no entry of the channel has.
    pub name: Option<String>,
    /// Version.
    pub version: String,
}

/// One hop: one InstallPlan.
#[derive(Debug, Serialize)]
pub struct HopItem {
    /// The bundle installed by this hop.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The edge of `name` that allows replacing the previous bundle.
    pub edge: EdgeKind,
    /// The bundle (or version) it replaces.
    pub replaces: String,
}

/// The whole path.
#[derive(Debug, Serialize)]
pub struct UpgradePath {
    /// The package.
    pub package: String,
    /// The channel followed.
    pub channel: String,
    /// Where the path starts.
    pub from: Point,
    /// The head of the channel, where it ends.
    pub to: Point,
    /// The hops, in install order; empty when `from` is the head.
    pub hops: Vec<HopItem>,
}

/// Computes the path.
///
/// # Errors
/// Lookup errors, [`CliError::NoUpgradePath`] naming the stuck version and the fix,
/// [`CliError::BrokenChannel`] when the channel has no usable order.
pub fn compute(
    catalog: &Catalog,
    package: &str,
    from: &str,
    channel: Option<&str>,
) -> Result<UpgradePath, CliError> {
    let pkg = catalog.package(package)?;
    let ch = catalog.channel(pkg, channel)?;
    let g = ch.graph();
    let broken = |e: GraphError| CliError::BrokenChannel {
        package: pkg.name.clone(),
        channel: ch.name.clone(),
        message: e.to_string(),
    };
    let versions = || {
        known_list(g.entries().iter().map(|e| {
            e.version
                .as_ref()
                .map_or_else(|| e.name.clone(), ToString::to_string)
        }))
    };
    let installed = if let Some(e) = g.entry(from) {
        let version = e.version.clone().ok_or_else(|| {
            CliError::NoUpgradePath(format!(
                "bundle {from} has no valid version in package {}; fix its olm.package property",
                pkg.name
            ))
        })?;
        Installed {
            name: Some(e.name.clone()),
            version,
        }
    } else {
        let version = version_range::parse_version_tolerant(from.trim_start_matches('v')).map_err(|_| {
            CliError::NoUpgradePath(format!(
                "--from {from:?} is neither a version nor a bundle of channel {} of package {}; versions: {}",
                ch.name,
                pkg.name,
                versions()
            ))
        })?;
        let same = g.entries().iter().find(|e| e.version.as_ref() == Some(&version));
        Installed {
            name: same.map(|e| e.name.clone()),
            version,
        }
    };
    let head = g.head().map_err(broken)?;
    let hops = g.upgrade_path(&installed).map_err(|e| match e {
        GraphError::NoUpgradePath { .. } if installed.name.is_none() => CliError::NoUpgradePath(format!(
            "version {} is not in channel {} of package {} and no entry's skipRange contains it, so OLM \
             cannot upgrade it; versions in the channel: {}",
            installed.version,
            ch.name,
            pkg.name,
            versions()
        )),
        GraphError::NoUpgradePath { .. } => {
            CliError::NoUpgradePath(format!("{e}; channel {} of package {}", ch.name, pkg.name))
        }
        other => broken(other),
    })?;
    let mut previous = installed
        .name
        .clone()
        .unwrap_or_else(|| installed.version.to_string());
    let hops = hops
        .into_iter()
        .map(|h| HopItem {
            name: h.name.clone(),
            version: version_cell(h.version.as_ref()),
            edge: h.edge,
            replaces: std::mem::replace(&mut previous, h.name),
        })
        .collect();
    Ok(UpgradePath {
        package: pkg.name.clone(),
        channel: ch.name.clone(),
        from: Point {
            name: installed.name.clone(),
            version: installed.version.to_string(),
        },
        to: Point {
            name: Some(head.name.clone()),
            version: version_cell(head.version.as_ref()),
        },
        hops,
    })
}

/// Prints the upgrade path.
///
/// # Errors
/// See [`compute`]; [`CliError::Write`].
pub fn run(
    catalog: &Catalog,
    package: &str,
    from: &str,
    channel: Option<&str>,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let path = compute(catalog, package, from, channel)?;
    let from_label = path
        .from
        .name
        .clone()
        .unwrap_or_else(|| format!("version {}", path.from.version));
    match format {
        OutputFormat::Json | OutputFormat::Yaml => output::print_object(streams.out, format, &path)?,
        OutputFormat::Name => {
            for h in &path.hops {
                writeln!(streams.out, "bundle/{}", h.name)?;
            }
        }
        OutputFormat::Table | OutputFormat::Wide => {
            if path.hops.is_empty() {
                writeln!(
                    streams.out,
                    "{from_label} is the head of channel {} of package {}: already up to date",
                    path.channel, path.package
                )?;
                return Ok(());
            }
            let wide = format == OutputFormat::Wide;
            let mut headers = vec!["STEP", "FROM", "TO", "VERSION", "EDGE"];
            if wide {
                headers.push("CHANNEL");
            }
            let rows: Vec<Vec<String>> = path
                .hops
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let mut r = vec![
                        (i + 1).to_string(),
                        h.replaces.clone(),
                        h.name.clone(),
                        h.version.clone(),
                        h.edge.to_string(),
                    ];
                    if wide {
                        r.push(path.channel.clone());
                    }
                    r
                })
                .collect();
            streams.out.write_all(output::table(&headers, &rows).as_bytes())?;
        }
    }
    Ok(())
}
