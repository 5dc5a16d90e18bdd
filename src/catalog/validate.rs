//! validate: the rules `opm validate` applies to a file-based catalog, collected into one report.
//!
//! # Why collect
//!
//! operator-registry validates in two layers: `ConvertToModel` stops at the first referential error
//! (unknown package, duplicate bundle, entry without bundle), and `model.Validate` then collects
//! everything else into a tree (`invalid index` → `invalid package "x"` → `invalid channel "y"` →
//! the problem). Newer opm releases (`alpha/declcfg/validate.go`) collect everything. We do the
//! latter: every problem of the catalog is found in one run and reported together, each naming
//! the file (and document) it comes from and the package, channel and bundle it concerns, with a
//! hint on how to fix it.
//!
//! # The rules (reference §4.3, `opm validate`)
//!
//! Decoding ([`crate::catalog::declcfg`]): every document must be an object with a `schema`, and
//! known fields must have the right JSON type.
//!
//! Packages: a name that is a DNS-1123 label and unique; at least one channel; `defaultChannel`
//! set and naming an existing channel; bundle versions (version plus release) unique across the
//! whole package; an icon, if any, must be base64.
//!
//! Channels: `package` must name a known package; the name non-empty and unique in the package;
//! entry names unique; at least one entry; the replaces-chain rules of
//! [`crate::graph::ChannelGraph::problems`] (exactly one head, no cycle, no stranded entry; a
//! tail `replaces` may dangle, and a `skips` may name a bundle that does not exist — opm allows
//! both); every `skips` item non-empty; every `skipRange` a valid blang range.
//!
//! Bundles: `package` set and known; name set and unique in the package; properties of known types
//! parse ([`crate::catalog::property`]); exactly one `olm.package` property, whose `packageName`
//! equals the bundle's package and whose `version` is strict semver; a `release`, if any, at most
//! 20 characters of dot-separated prerelease identifiers, not combined with build metadata, and
//! the bundle then named `<package>-v<version>-<release>`; `image` and every related image a valid
//! image reference when set; an image or inlined objects; inlined objects valid base64; the bundle
//! in at least one channel, and every channel entry backed by a bundle.
//!
//! Deprecations: `package` set and known, at most one blob per package; every entry has a schema
//! (`olm.package` with no name, `olm.channel` or `olm.bundle` naming an existing one), a message,
//! and is not repeated.
//!
//! # The report
//!
//! [`ValidationReport`] is a flat list of [`Problem`]s, each with its location and a [`Violation`]
//! (one variant per broken rule). Its `Display` draws the tree `opm validate` draws (`├──`, `└──`),
//! grouping problems by package, then channel or bundle, every leaf ending with the file and
//! document. Its `Serialize` gives `{passed, errors: [{file, document, package, channel, bundle,
//! message}]}` for `-o json`/`-o yaml`. Ordering is deterministic: catalog-wide problems first,
//! then packages by name; within a package, package problems, channels by name, bundles by name.

use std::{collections::BTreeMap, fmt};

use serde::{Serialize, Serializer, ser::SerializeStruct};

pub use super::problem::{Problem, Violation};
use crate::{
    catalog::{
        declcfg::{DeclarativeConfig, DecodeError},
        model::{Bundle, Channel, Model, Package, ParsedProperties},
    },
    version_range::Range,
};

/// Every problem of a catalog. Empty means the catalog is valid.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValidationReport {
    problems: Vec<Problem>,
}

impl ValidationReport {
    /// A report of `problems`, put in report order.
    #[must_use]
    pub fn new(mut problems: Vec<Problem>) -> Self {
        problems.sort_by(|a, b| a.key().cmp(&b.key()));
        Self { problems }
    }

    /// True when no problem was found.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }

    /// The problems in report order.
    #[must_use]
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// Number of problems.
    #[must_use]
    pub fn len(&self) -> usize {
        self.problems.len()
    }

    /// True when there are no problems.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.problems.is_empty()
    }

    /// `Ok(())` when valid, the report otherwise.
    ///
    /// # Errors
    /// The report itself when it holds problems.
    pub fn into_result(self) -> Result<(), ValidationReport> {
        if self.passed() { Ok(()) } else { Err(self) }
    }
}

impl Serialize for ValidationReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("ValidationReport", 2)?;
        s.serialize_field("passed", &self.passed())?;
        s.serialize_field("errors", &self.problems)?;
        s.end()
    }
}

impl std::error::Error for ValidationReport {}

/// Writes `lines` as children of a tree node whose children are indented by `indent`.
fn write_children(f: &mut fmt::Formatter<'_>, indent: &str, children: &[Node]) -> fmt::Result {
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let (branch, next) = if last {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        match child {
            Node::Leaf(text) => writeln!(f, "{indent}{branch}{text}")?,
            Node::Group(title, grandchildren) => {
                writeln!(f, "{indent}{branch}{title}")?;
                write_children(f, &format!("{indent}{next}"), grandchildren)?;
            }
        }
    }
    Ok(())
}

enum Node {
    Leaf(String),
    Group(String, Vec<Node>),
}

impl fmt::Display for ValidationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.passed() {
            return writeln!(f, "catalog is valid");
        }
        let count = self.problems.len();
        writeln!(
            f,
            "invalid catalog: {count} problem{}",
            if count == 1 { "" } else { "s" }
        )?;
        // Problems are sorted, so groups are contiguous.
        let mut top: Vec<Node> = Vec::new();
        let mut packages: Vec<(String, Vec<Node>)> = Vec::new();
        for p in &self.problems {
            let Some(pkg) = &p.package else {
                top.push(Node::Leaf(p.leaf()));
                continue;
            };
            if packages.last().is_none_or(|(name, _)| name != pkg) {
                packages.push((pkg.clone(), Vec::new()));
            }
            let Some((_, children)) = packages.last_mut() else {
                continue;
            };
            let title = match (&p.bundle, &p.channel) {
                (Some(b), _) => Some(format!("bundle {b:?}")),
                (None, Some(c)) => Some(format!("channel {c:?}")),
                (None, None) => None,
            };
            match title {
                None => children.push(Node::Leaf(p.leaf())),
                Some(title) => match children.last_mut() {
                    Some(Node::Group(t, leaves)) if *t == title => leaves.push(Node::Leaf(p.leaf())),
                    _ => children.push(Node::Group(title, vec![Node::Leaf(p.leaf())])),
                },
            }
        }
        top.extend(
            packages
                .into_iter()
                .map(|(name, children)| Node::Group(format!("package {name:?}"), children)),
        );
        write_children(f, "", &top)
    }
}

/// Builds the model from `cfg` and checks every rule: the model (for browsing even a broken
/// catalog) and the report of every problem found.
#[must_use]
pub fn validate(cfg: DeclarativeConfig) -> (Model, ValidationReport) {
    validate_with(cfg, Vec::new())
}

/// Like [`validate`], adding the problems met while decoding the files (see
/// [`crate::source`]), so one report covers everything.
#[must_use]
pub fn validate_with(cfg: DeclarativeConfig, decode_problems: Vec<DecodeError>) -> (Model, ValidationReport) {
    validate_parsed(cfg, decode_problems, Vec::new())
}

/// Like [`validate_with`], with bundle properties already typed (see [`Model::build_parsed`]).
#[must_use]
pub fn validate_parsed(
    cfg: DeclarativeConfig,
    decode_problems: Vec<DecodeError>,
    parsed: Vec<ParsedProperties>,
) -> (Model, ValidationReport) {
    let mut problems: Vec<Problem> = decode_problems
        .into_iter()
        .map(|err| {
            let origin = err.origin().clone();
            Problem::root(Violation::Decode(err), Some(origin))
        })
        .collect();
    let (model, build_problems) = Model::build_parsed(cfg, parsed);
    problems.extend(build_problems);
    problems.extend(check(&model));
    (model, ValidationReport::new(problems))
}

/// The rules that need the linked model (see the module docs); referential problems are found by
/// [`Model::build`].
#[must_use]
pub fn check(model: &Model) -> Vec<Problem> {
    let mut out = Vec::new();
    for pkg in model.packages() {
        check_package(pkg, &mut out);
        for channel in pkg.channels() {
            check_channel(pkg, channel, &mut out);
        }
        for bundle in pkg.bundles() {
            check_bundle(pkg, bundle, &mut out);
        }
    }
    out
}

fn check_package(pkg: &Package, out: &mut Vec<Problem>) {
    let at = |v: Violation| Problem::package(&pkg.name, v, pkg.origin.clone());
    if let Err(reason) = check_dns1123_label(&pkg.name) {
        out.push(at(Violation::InvalidPackageName {
            name: pkg.name.clone(),
            reason,
        }));
    }
    // Canonical base64 was checked when the icon was packed.
    if let Some(icon) = &pkg.icon
        && !icon.base64data.is_base64()
        && let Err(reason) = check_base64(&icon.base64data.text())
    {
        out.push(at(Violation::InvalidIcon { reason }));
    }
    let channels: Vec<String> = pkg.channels().iter().map(|c| c.name.clone()).collect();
    if channels.is_empty() {
        out.push(at(Violation::NoChannels));
    } else if pkg.default_channel.is_empty() {
        out.push(at(Violation::DefaultChannelNotSet { channels }));
    }
    // Version uniqueness across the package (version string including build metadata, plus release).
    let mut by_version: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for b in pkg.bundles() {
        let key = if b.release.is_empty() {
            b.version.to_string()
        } else {
            format!("{}-{}", b.version, b.release)
        };
        by_version.entry(key).or_default().push(b.name.clone());
    }
    let dupes: Vec<(String, Vec<String>)> = by_version
        .into_iter()
        .filter(|(_, names)| names.len() > 1)
        .map(|(v, mut names)| {
            names.sort();
            (v, names)
        })
        .collect();
    if !dupes.is_empty() {
        out.push(at(Violation::DuplicateVersions { dupes }));
    }
}

fn check_channel(pkg: &Package, channel: &Channel, out: &mut Vec<Problem>) {
    let at = |v: Violation| Problem::channel(&pkg.name, &channel.name, v, channel.origin.clone());
    if channel.entries.is_empty() {
        out.push(at(Violation::EmptyChannel));
        return;
    }
    for problem in channel.graph().problems() {
        out.push(at(Violation::Graph(problem)));
    }
    for entry in &channel.entries {
        let on_entry = |v: Violation| {
            let mut p = Problem::bundle(&pkg.name, &entry.name, v, channel.origin.clone());
            p.channel = Some(channel.name.clone());
            p
        };
        for (index, skip) in entry.skips.iter().enumerate() {
            if skip.is_empty() {
                out.push(on_entry(Violation::EmptySkip {
                    index,
                    channel: channel.name.clone(),
                }));
            }
        }
        if !entry.skip_range.is_empty()
            && let Err(err) = Range::parse(&entry.skip_range)
        {
            out.push(on_entry(Violation::InvalidSkipRange {
                range: entry.skip_range.clone(),
                channel: channel.name.clone(),
                reason: err.to_string(),
            }));
        }
    }
}

fn check_bundle(pkg: &Package, bundle: &Bundle, out: &mut Vec<Problem>) {
    let at = |v: Violation| Problem::bundle(&pkg.name, &bundle.name, v, bundle.origin.clone());
    if bundle.channels.is_empty() {
        out.push(at(Violation::NotInAnyChannel));
    }
    if !bundle.image.is_empty()
        && let Err(reason) = check_pull_spec(&bundle.image)
    {
        out.push(at(Violation::InvalidImage {
            field: "image".to_owned(),
            image: bundle.image.clone(),
            reason,
        }));
    }
    for (i, related) in bundle.related_images.iter().enumerate() {
        if related.image.is_empty() {
            continue;
        }
        if let Err(reason) = check_pull_spec(&related.image) {
            out.push(at(Violation::InvalidImage {
                field: format!("relatedImages[{i}].image"),
                image: related.image.clone(),
                reason,
            }));
        }
    }
    if bundle.image.is_empty() && bundle.properties.bundle_objects.is_empty() {
        out.push(at(Violation::NoImageOrObjects));
    }
    for (index, object) in bundle.properties.bundle_objects.iter().enumerate() {
        if let Err(err) = object.check() {
            out.push(at(Violation::InvalidBundleObject {
                index,
                reason: err.to_string(),
            }));
        }
    }
    if !bundle.release.is_empty() {
        match check_release(&bundle.release) {
            Err(reason) => {
                out.push(at(Violation::InvalidRelease {
                    release: bundle.release.clone(),
                    reason,
                }));
            }
            Ok(()) => {
                if !bundle.version.build.is_empty() {
                    out.push(at(Violation::BuildMetadataWithRelease));
                }
                let expected = format!("{}-v{}-{}", pkg.name, bundle.version, bundle.release);
                if bundle.name != expected {
                    out.push(at(Violation::NameNotNormalized {
                        name: bundle.name.clone(),
                        expected,
                    }));
                }
            }
        }
    }
}

/// DNS-1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
fn check_dns1123_label(name: &str) -> Result<(), String> {
    if name.len() > 63 {
        return Err(format!("it is {} characters long", name.len()));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!("it contains {c:?}"));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("it starts or ends with '-'".to_owned());
    }
    Ok(())
}

fn check_base64(data: &str) -> Result<(), String> {
    crate::catalog::property::BundleObject::Data(data.into())
        .check()
        .map_err(|e| e.to_string())
}

/// A release: at most 20 characters of dot-separated semver prerelease identifiers.
fn check_release(release: &str) -> Result<(), String> {
    if release.len() > 20 {
        return Err(format!(
            "it exceeds the maximum length of 20 characters ({})",
            release.len()
        ));
    }
    semver::Prerelease::new(release)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Checks an image reference with the grammar of `github.com/distribution/reference`
/// (`ParseNormalizedNamed`): `[domain[:port]/]path[:tag][@algorithm:hex]`.
pub(crate) fn check_pull_spec(spec: &str) -> Result<(), String> {
    if spec.len() == 64 && spec.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err("cannot specify 64-byte hexadecimal strings as a repository name".to_owned());
    }
    let (rest, digest) = match spec.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (spec, None),
    };
    if let Some(digest) = digest {
        check_digest(digest)?;
    }
    // A tag follows the last ':' when no '/' comes after it (a ':' before a '/' is a port).
    let (name, tag) = match rest.rfind(':') {
        Some(i) if !rest[i..].contains('/') => (&rest[..i], Some(&rest[i + 1..])),
        _ => (rest, None),
    };
    if let Some(tag) = tag {
        let ok = !tag.is_empty()
            && tag.len() <= 128
            && tag
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            && tag
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !ok {
            return Err(format!(
                "invalid tag {tag:?}: a tag is up to 128 letters, digits, '_', '.' and '-'"
            ));
        }
    }
    if name.is_empty() {
        return Err("the repository name is empty".to_owned());
    }
    if name.len() > 255 {
        return Err("repository name must not be more than 255 characters".to_owned());
    }
    let (domain, path) = match name.split_once('/') {
        Some((first, path))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.chars().any(|c| c.is_ascii_uppercase()) =>
        {
            (Some(first), path)
        }
        _ => (None, name),
    };
    if let Some(domain) = domain {
        check_domain(domain)?;
    }
    if path.chars().any(|c| c.is_ascii_uppercase()) {
        return Err("repository name must be lowercase".to_owned());
    }
    for component in path.split('/') {
        if !is_path_component(component) {
            return Err(format!(
                "invalid reference format: path component {component:?} must be lowercase letters and digits \
                 separated by '.', '_', '__' or dashes"
            ));
        }
    }
    Ok(())
}

fn is_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !b.first().copied().is_some_and(alnum) || !b.last().copied().is_some_and(alnum) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        // A separator: '.', '_', '__', or one or more '-'.
        let start = i;
        match b[i] {
            b'.' => i += 1,
            b'_' => {
                i += 1;
                if b.get(i) == Some(&b'_') {
                    i += 1;
                }
            }
            b'-' => {
                while b.get(i) == Some(&b'-') {
                    i += 1;
                }
            }
            _ => return false,
        }
        if i == start || !b.get(i).copied().is_some_and(alnum) {
            return false;
        }
    }
    true
}

fn check_domain(domain: &str) -> Result<(), String> {
    let (host, port) = if let Some(rest) = domain.strip_prefix('[') {
        // IPv6 literal.
        let Some((addr, after)) = rest.split_once(']') else {
            return Err(format!("invalid domain {domain:?}"));
        };
        if addr.is_empty()
            || !addr
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        {
            return Err(format!("invalid domain {domain:?}"));
        }
        (
            None,
            after
                .strip_prefix(':')
                .map(Some)
                .unwrap_or(if after.is_empty() { None } else { Some("") }),
        )
    } else {
        match domain.split_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(domain), None),
        }
    };
    if let Some(host) = host {
        let ok = host.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.first().is_some_and(u8::is_ascii_alphanumeric)
                && b.last().is_some_and(u8::is_ascii_alphanumeric)
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        });
        if !ok {
            return Err(format!("invalid domain {domain:?}"));
        }
    }
    if let Some(port) = port
        && (port.is_empty() || !port.bytes().all(|c| c.is_ascii_digit()))
    {
        return Err(format!("invalid port in domain {domain:?}"));
    }
    Ok(())
}

fn check_digest(digest: &str) -> Result<(), String> {
    let Some((algorithm, encoded)) = digest.split_once(':') else {
        return Err(format!(
            "invalid digest {digest:?}: write algorithm:hex, e.g. sha256:<64 hex digits>"
        ));
    };
    let expected = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return Err(format!("unsupported digest algorithm {algorithm:?}")),
    };
    if encoded.len() != expected {
        return Err(format!(
            "invalid checksum digest length: {algorithm} needs {expected} hex digits"
        ));
    }
    if !encoded.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return Err("invalid checksum digest format: use lowercase hex digits".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::declcfg::Origin;

    #[test]
    fn pull_specs_follow_the_distribution_reference_grammar() {
        for ok in [
            "quay.io/org/op:v1.0.0",
            "registry.redhat.io/ns/img@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "localhost:5000/a/b:latest",
            "busybox",
            "docker.io/library/busybox:1.36",
            "derived.invalid/some-op/bundle:v0.1.0",
            "a__b/c-----d/e.f",
            "[::1]:5000/x",
        ] {
            assert_eq!(check_pull_spec(ok), Ok(()), "{ok}");
        }
        for bad in [
            "quay.io/Org/op:v1",
            "quay.io/org/op:",
            "quay.io/org/op@sha256:abc",
            "quay.io/org/op@md5:0123",
            "quay.io//op",
            "quay.io/org/-op",
            "has space/x",
            "quay.io/org/op:bad tag",
        ] {
            assert!(check_pull_spec(bad).is_err(), "{bad} should be invalid");
        }
    }

    #[test]
    fn dns1123_labels_are_lowercase_alphanumerics_and_inner_dashes() {
        assert!(check_dns1123_label("redis-operator").is_ok());
        assert!(check_dns1123_label("Redis").is_err());
        assert!(check_dns1123_label("-x").is_err());
        assert!(check_dns1123_label("a.b").is_err());
        assert!(check_dns1123_label(&"a".repeat(64)).is_err());
    }

    #[test]
    fn releases_are_short_dot_separated_identifiers() {
        assert!(check_release("1.el9").is_ok());
        assert!(check_release("01").is_err());
        assert!(check_release("a..b").is_err());
        assert!(check_release(&"a".repeat(21)).is_err());
    }

    #[test]
    fn the_report_tree_groups_by_package_then_channel_and_bundle_in_a_stable_order() {
        let o = Origin::new("c.yaml", 1);
        let report = ValidationReport::new(vec![
            Problem::bundle("b", "b.v1", Violation::NotInAnyChannel, o.clone()),
            Problem::channel("b", "stable", Violation::EmptyChannel, o.clone()),
            Problem::package("a", Violation::NoChannels, o.clone()),
            Problem::root(Violation::PackageWithoutName, Some(o.clone())),
            Problem::bundle("b", "b.v1", Violation::NoImageOrObjects, o),
        ]);
        let text = report.to_string();
        let expected = "\
invalid catalog: 5 problems
├── config contains package with no name; set `name` on the olm.package blob [c.yaml (document 1)]
├── package \"a\"
│   └── package must contain at least one channel; add an olm.channel blob whose `package` is this package [c.yaml (document 1)]
└── package \"b\"
    ├── channel \"stable\"
    │   └── channel must contain at least one bundle; add entries or remove the channel [c.yaml (document 1)]
    └── bundle \"b.v1\"
        ├── not found in any channel entries; add it to the entries of a channel or remove the bundle [c.yaml (document 1)]
        └── bundle image must be set (or the bundle's manifests inlined as olm.bundle.object properties) [c.yaml (document 1)]
";
        assert_eq!(text, expected);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["passed"], false);
        assert_eq!(json["errors"][1]["package"], "a");
        assert_eq!(json["errors"][1]["file"], "c.yaml");
    }

    #[test]
    fn an_empty_report_passes_and_says_so() {
        let report = ValidationReport::default();
        assert!(report.passed());
        assert_eq!(report.to_string(), "catalog is valid\n");
        assert_eq!(
            serde_json::to_value(&report).unwrap(),
            serde_json::json!({"passed": true, "errors": []})
        );
    }
}
