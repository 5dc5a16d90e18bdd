//! config: a Subscription's `spec.config` merged into every Deployment of its CSV's install
//! strategy, by upstream's rules (`olm/overrides/inject`, applied by the Deployment initializer
//! before the spec hash is taken, so a config change is a spec change the CSV re-applies).
//!
//! The Subscription is the one in the CSV's namespace whose `status.installedCSV` names the
//! CSV (upstream `overrides/config.go:findOwner`); olm-rs also accepts `status.currentCSV`, so
//! a CSV being installed gets its config on the first apply instead of one rollout later.
//!
//! The rules, per Deployment (`containers` only, never `initContainers`, as upstream):
//! - `env`: a variable of the same name is replaced in place; new ones are appended in the
//!   Subscription's order (a name given twice: the last value wins).
//! - `envFrom`: appended unless an equal source is already there.
//! - `volumes`: a volume of the same name is replaced; new ones are appended.
//! - `volumeMounts`: a mount of the same volume name is replaced; new ones are appended.
//! - `tolerations`: appended unless an equal toleration is already there.
//! - `resources`: replaces every container's resources.
//! - `nodeSelector`: replaces the pods' node selector (`{}` clears it).
//! - `affinity`: `{}` removes the pods' affinity; otherwise each of `nodeAffinity`,
//!   `podAffinity`, `podAntiAffinity` that is set replaces the pods' (an empty one removes
//!   it); an affinity left empty is removed.
//! - `annotations`: added to the Deployment's and the pod template's annotations, never
//!   overwriting one already there.
//! - `selector`: declared by upstream's API but never applied there; not applied here either,
//!   but said: the Subscription gets `ConfigIgnored=True` and a Warning Event naming the field
//!   ([`crate::plan::subscription::unapplied_config_message`]).
//!
//! Where we differ: upstream does not check the result, so a mount naming a volume that
//! exists nowhere is refused by the API server on every retry, and an empty
//! `podAntiAffinity` removes the whole affinity (a slip: its doc says it empties that field).
//! Here a mount from the config whose volume is neither in `spec.config.volumes` nor in the
//! pod template is a [`ConfigError`] naming the Subscription, the field and the fix (the CSV
//! fails `InstallComponentFailed` with it, as upstream's failed install does), and an empty
//! `podAntiAffinity` removes only itself.

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{Affinity, Container, PodSpec},
};

use crate::api::v1alpha1::{Subscription, SubscriptionConfig};

/// The `spec.config` of the Subscription that owns a CSV, with the Subscription's name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubscriptionOverrides {
    /// `<namespace>/<name>` of the Subscription (for messages).
    pub subscription: String,
    /// Its `spec.config`.
    pub config: SubscriptionConfig,
}

impl SubscriptionOverrides {
    /// The overrides of `sub`, or `None` when it has no `spec.config`.
    pub fn of(sub: &Subscription) -> Option<Self> {
        use kube::ResourceExt;
        let config = sub.spec.config.clone()?;
        Some(Self {
            subscription: format!("{}/{}", sub.namespace().unwrap_or_default(), sub.name_any()),
            config,
        })
    }
}

/// A `spec.config` that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A volume mount names a volume that neither the config nor the pod template defines.
    #[error(
        "Subscription {subscription}: spec.config.volumeMounts[{index}] mounts volume {volume:?}, \
         which neither spec.config.volumes nor Deployment {deployment}'s pod template defines; \
         add a volume named {volume:?} to spec.config.volumes or remove the mount"
    )]
    MountWithoutVolume {
        /// `<namespace>/<name>` of the Subscription.
        subscription: String,
        /// Index of the mount in `spec.config.volumeMounts`.
        index: usize,
        /// The volume name it mounts.
        volume: String,
        /// The Deployment it was merged into.
        deployment: String,
    },
}

/// The Subscription in `subs` (already limited to the CSV's namespace) that owns the CSV
/// named `csv`: the one whose `status.installedCSV` names it, else one whose
/// `status.currentCSV` does.
pub fn owning_subscription<'a>(
    csv: &str,
    subs: impl IntoIterator<Item = &'a Subscription> + Clone,
) -> Option<&'a Subscription> {
    let names = |sub: &Subscription,
                 pick: fn(&crate::api::v1alpha1::SubscriptionStatus) -> Option<&String>| {
        sub.status.as_ref().and_then(pick).map(String::as_str) == Some(csv)
    };
    subs.clone()
        .into_iter()
        .find(|s| names(s, |st| st.installed_csv.as_ref()))
        .or_else(|| subs.into_iter().find(|s| names(s, |st| st.current_csv.as_ref())))
}

/// Merges `overrides` into `deployment` by the rules of the module doc.
///
/// # Errors
/// [`ConfigError::MountWithoutVolume`] when a mount of the config names no volume.
pub fn apply_overrides(
    deployment: &mut Deployment,
    overrides: &SubscriptionOverrides,
) -> Result<(), ConfigError> {
    let config = &overrides.config;
    let name = deployment.metadata.name.clone().unwrap_or_default();
    if let Some(new) = &config.annotations {
        let mut merged = new.clone();
        merged.extend(deployment.metadata.annotations.take().unwrap_or_default());
        deployment.metadata.annotations = Some(merged);
        let template = deployment
            .spec
            .template
            .metadata
            .get_or_insert_with(Default::default);
        let mut merged = new.clone();
        merged.extend(template.annotations.take().unwrap_or_default());
        template.annotations = Some(merged);
    }
    let pod = deployment.spec.template.spec.get_or_insert_with(PodSpec::default);
    for container in &mut pod.containers {
        merge_container(container, config);
    }
    if let Some(volumes) = &config.volumes {
        replace_by_name(pod.volumes.get_or_insert_with(Vec::new), volumes, |v| &v.name);
    }
    if let Some(tolerations) = &config.tolerations {
        append_absent(pod.tolerations.get_or_insert_with(Vec::new), tolerations);
    }
    if let Some(selector) = &config.node_selector {
        pod.node_selector = (!selector.is_empty()).then(|| selector.clone());
    }
    if let Some(affinity) = &config.affinity {
        pod.affinity = override_affinity(pod.affinity.take(), affinity);
    }
    for (index, mount) in config.volume_mounts.iter().flatten().enumerate() {
        let defined = pod.volumes.iter().flatten().any(|v| v.name == mount.name);
        if !defined {
            return Err(ConfigError::MountWithoutVolume {
                subscription: overrides.subscription.clone(),
                index,
                volume: mount.name.clone(),
                deployment: name,
            });
        }
    }
    Ok(())
}

fn merge_container(container: &mut Container, config: &SubscriptionConfig) {
    if let Some(env) = &config.env {
        let existing = container.env.get_or_insert_with(Vec::new);
        for var in existing.iter_mut() {
            if let Some(new) = env.iter().rev().find(|e| e.name == var.name) {
                *var = new.clone();
            }
        }
        for (i, var) in env.iter().enumerate() {
            let last_of_name = !env[i + 1..].iter().any(|e| e.name == var.name);
            if last_of_name && !existing.iter().any(|e| e.name == var.name) {
                existing.push(var.clone());
            }
        }
    }
    if let Some(env_from) = &config.env_from {
        append_absent(container.env_from.get_or_insert_with(Vec::new), env_from);
    }
    if let Some(mounts) = &config.volume_mounts {
        replace_by_name(
            container.volume_mounts.get_or_insert_with(Vec::new),
            mounts,
            |m| &m.name,
        );
    }
    if let Some(resources) = &config.resources {
        container.resources = Some(resources.clone());
    }
}

/// Appends each of `new` that no item `existing` had before equals (upstream compares with the
/// original list only, so an item the config gives twice is appended twice).
fn append_absent<T: PartialEq + Clone>(existing: &mut Vec<T>, new: &[T]) {
    let before = existing.len();
    for item in new {
        if !existing[..before].contains(item) {
            existing.push(item.clone());
        }
    }
}

/// Replaces the item of `existing` with the name of each of `new` (by `name`), or appends it.
fn replace_by_name<T: Clone>(existing: &mut Vec<T>, new: &[T], name: fn(&T) -> &str) {
    for item in new {
        match existing.iter_mut().find(|e| name(e) == name(item)) {
            Some(slot) => *slot = item.clone(),
            None => existing.push(item.clone()),
        }
    }
}

/// Upstream's `OverrideDeploymentAffinity` (see the module doc for the one difference).
fn override_affinity(current: Option<Affinity>, new: &Affinity) -> Option<Affinity> {
    let empty = Affinity::default();
    if *new == empty {
        return None;
    }
    let mut merged = current.unwrap_or_default();
    if let Some(node) = &new.node_affinity {
        merged.node_affinity = (*node != Default::default()).then(|| node.clone());
    }
    if let Some(pod) = &new.pod_affinity {
        merged.pod_affinity = (*pod != Default::default()).then(|| pod.clone());
    }
    if let Some(anti) = &new.pod_anti_affinity {
        merged.pod_anti_affinity = (*anti != Default::default()).then(|| anti.clone());
    }
    (merged != empty).then_some(merged)
}

#[cfg(test)]
mod tests;
