//! blobs: a [`Model`] back to FBC blobs, and a model trimmed of channels it cannot serve (pure).
//!
//! The rule: whoever serves a catalog already loaded (the controller's cache, which keeps only the
//! model) writes it back from the model, so the blobs say what resolution sees. What does not
//! survive the trip, by design of the model: blobs of schemas the model does not hold (they were
//! never kept), fields those schemas do not define, and the file order of a bundle's properties
//! (they come back grouped by type, as [`Properties::to_list`] gives them). The origin of every
//! blob is kept, so a writer sorting by origin keeps the walk order of the files.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Channel, Model, Package};
use crate::catalog::{
    declcfg::{self, DeclarativeConfig, PackageScopedReference},
    property::{self, Properties},
};

/// A bundle's properties as raw FBC properties ({type, value}), grouped by type.
fn raw_properties(properties: &Properties) -> Vec<declcfg::Property> {
    properties
        .to_list()
        .iter()
        .filter_map(|p| match p {
            property::Property::Other(raw) => Some(raw.clone()),
            typed => {
                let value = serde_json::to_value(typed).ok()?;
                let type_ = value.get("type")?.as_str()?.to_owned();
                Some(declcfg::Property::new(
                    &type_,
                    value.get("value").unwrap_or(&Value::Null),
                ))
            }
        })
        .collect()
}

fn channel_blob(channel: &Channel) -> declcfg::Channel {
    declcfg::Channel {
        schema: declcfg::SCHEMA_CHANNEL.to_owned(),
        name: channel.name.clone(),
        package: channel.package.clone(),
        entries: channel
            .entries
            .iter()
            .map(|e| declcfg::ChannelEntry {
                name: e.name.clone(),
                replaces: e.replaces.clone(),
                skips: e.skips.clone(),
                skip_range: e.skip_range.clone(),
            })
            .collect(),
        properties: channel.properties.clone(),
        origin: channel.origin.clone(),
    }
}

fn deprecation_blob(package: &Package) -> Option<declcfg::Deprecation> {
    let dep = package.deprecations.as_ref()?;
    let entry = |schema: &str, name: &str, message: &str| declcfg::DeprecationEntry {
        reference: PackageScopedReference {
            schema: schema.to_owned(),
            name: name.to_owned(),
        },
        message: message.to_owned(),
    };
    let mut entries = Vec::new();
    if let Some(message) = &dep.package {
        entries.push(entry(declcfg::SCHEMA_PACKAGE, "", message));
    }
    for (name, message) in &dep.channels {
        entries.push(entry(declcfg::SCHEMA_CHANNEL, name, message));
    }
    for (name, message) in &dep.bundles {
        entries.push(entry(declcfg::SCHEMA_BUNDLE, name, message));
    }
    Some(declcfg::Deprecation {
        schema: declcfg::SCHEMA_DEPRECATIONS.to_owned(),
        package: package.name.clone(),
        entries,
        origin: dep.origin.clone(),
    })
}

impl Model {
    /// The model as FBC blobs (see the module doc for what does not survive).
    #[must_use]
    pub fn to_config(&self) -> DeclarativeConfig {
        let mut cfg = DeclarativeConfig::default();
        for package in self.packages() {
            cfg.packages.push(declcfg::Package {
                schema: declcfg::SCHEMA_PACKAGE.to_owned(),
                name: package.name.clone(),
                default_channel: package.default_channel.clone(),
                icon: package.icon.clone(),
                description: package.description.clone(),
                properties: package.properties.clone(),
                origin: package.origin.clone(),
            });
            cfg.channels.extend(package.channels().iter().map(channel_blob));
            cfg.bundles
                .extend(package.bundles().iter().map(|b| declcfg::Bundle {
                    schema: declcfg::SCHEMA_BUNDLE.to_owned(),
                    name: b.name.clone(),
                    package: b.package.clone(),
                    image: b.image.clone(),
                    properties: raw_properties(&b.properties),
                    related_images: b.related_images.clone(),
                    origin: b.origin.clone(),
                }));
            cfg.deprecations.extend(deprecation_blob(package));
        }
        cfg
    }

    /// The model without the channels `drop` names (package, channel), and without the packages
    /// left with no channel or without their default channel; returns the names of the packages
    /// dropped that way.
    #[must_use]
    pub fn without_channels(&self, drop: &BTreeSet<(String, String)>) -> (Model, Vec<String>) {
        let mut model = self.clone();
        let mut dropped = Vec::new();
        model.packages.retain(|name, package| {
            package
                .channels
                .retain(|c| !drop.contains(&(name.clone(), c.name.clone())));
            let keep = !package.channels.is_empty() && package.default_channel().is_some();
            if !keep {
                dropped.push(name.clone());
            }
            keep
        });
        (model, dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::DeclarativeConfig;

    const CATALOG: &str = r#"
{"schema":"olm.package","name":"a","defaultChannel":"stable","description":"d","icon":{"base64data":"PHN2Zy8+","mediatype":"image/svg+xml"}}
{"schema":"olm.channel","package":"a","name":"stable","entries":[{"name":"a.v1"},{"name":"a.v2","replaces":"a.v1","skips":["a.v0"],"skipRange":"<2.0.0"}]}
{"schema":"olm.channel","package":"a","name":"loop","entries":[{"name":"a.v1","replaces":"a.v2"},{"name":"a.v2","replaces":"a.v1"}]}
{"schema":"olm.bundle","package":"a","name":"a.v1","image":"r/a:1","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}},{"type":"example.other","value":{"x":[1]}}]}
{"schema":"olm.bundle","package":"a","name":"a.v2","image":"r/a:2","properties":[{"type":"olm.gvk","value":{"group":"g","kind":"K","version":"v1"}},{"type":"olm.package","value":{"packageName":"a","version":"2.0.0"}}],"relatedImages":[{"name":"x","image":"r/x:1"}]}
{"schema":"olm.deprecations","package":"a","entries":[{"reference":{"schema":"olm.bundle","name":"a.v1"},"message":"old"}]}
{"schema":"olm.package","name":"b","defaultChannel":"loop"}
{"schema":"olm.channel","package":"b","name":"loop","entries":[{"name":"b.v1"}]}
{"schema":"olm.bundle","package":"b","name":"b.v1","image":"r/b:1","properties":[{"type":"olm.package","value":{"packageName":"b","version":"1.0.0"}}]}
"#;

    fn model() -> Model {
        let (cfg, problems) = DeclarativeConfig::from_str_with_problems("c.json", CATALOG);
        assert!(problems.is_empty(), "{problems:?}");
        let (model, problems) = Model::build(cfg);
        assert!(problems.is_empty(), "{problems:?}");
        model
    }

    #[test]
    fn a_model_written_back_as_blobs_builds_the_same_model() {
        let model = model();
        let cfg = model.to_config();
        assert_eq!(cfg.packages.len(), 2);
        assert_eq!(cfg.channels.len(), 3);
        assert_eq!(cfg.bundles.len(), 3);
        assert_eq!(cfg.deprecations.len(), 1);
        let a2 = cfg.bundles.iter().find(|b| b.name == "a.v2").unwrap();
        let types: Vec<&str> = a2.properties.iter().map(|p| p.type_.as_str()).collect();
        assert_eq!(types, ["olm.package", "olm.gvk"], "grouped by type");
        let a1 = cfg.bundles.iter().find(|b| b.name == "a.v1").unwrap();
        assert!(a1.properties.iter().any(|p| p.type_ == "example.other"));
        let (again, problems) = Model::build(cfg);
        assert!(problems.is_empty(), "{problems:?}");
        let a = again.package("a").unwrap();
        assert_eq!(a.icon, model.package("a").unwrap().icon);
        assert_eq!(a.bundle_deprecation("a.v1"), Some("old"));
        let stable = a.channel("stable").unwrap();
        assert_eq!(
            stable.entries,
            model.package("a").unwrap().channel("stable").unwrap().entries
        );
        assert_eq!(a.bundle("a.v2").unwrap().provided_gvks().len(), 1);
        assert_eq!(a.bundle("a.v2").unwrap().related_images.len(), 1);
    }

    #[test]
    fn dropping_channels_drops_the_packages_left_without_their_default_channel() {
        let drop: BTreeSet<_> = [
            ("a".to_owned(), "loop".to_owned()),
            ("b".to_owned(), "loop".to_owned()),
        ]
        .into_iter()
        .collect();
        let (trimmed, dropped) = model().without_channels(&drop);
        assert_eq!(dropped, ["b"]);
        let a = trimmed.package("a").unwrap();
        let names: Vec<&str> = a.channels().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["stable"]);
        assert!(trimmed.package("b").is_none());
    }
}
