//! api_service: when an APIService that OLM labelled as a CSV's is an orphan (upstream's
//! `syncAPIService`): its `olm.owner.kind` is `ClusterServiceVersion` and the namespace named by
//! `olm.owner.namespace`, or the CSV named by `olm.owner` in it, no longer exists. An orphan is
//! deleted: nothing else would ever remove it, and an APIService whose backend is gone makes
//! API discovery of its group fail cluster-wide.

use std::collections::BTreeMap;

use crate::api::labels::{OWNER, OWNER_KIND, OWNER_NAMESPACE};

/// The CSV an object's `olm.owner*` labels name: `(name, namespace)`, or `None` when the labels
/// do not name a CSV.
pub fn csv_owner(labels: &BTreeMap<String, String>) -> Option<(&str, &str)> {
    if labels.get(OWNER_KIND).map(String::as_str) != Some(crate::plan::steps::CSV_KIND) {
        return None;
    }
    let name = labels.get(OWNER).filter(|n| !n.is_empty())?;
    let namespace = labels.get(OWNER_NAMESPACE).filter(|n| !n.is_empty())?;
    Some((name, namespace))
}

/// What became of an APIService's owner, as observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The owner's namespace does not exist.
    NamespaceGone,
    /// The namespace exists but holds no CSV of the owner's name.
    CsvGone,
    /// The owner CSV exists.
    Present,
}

/// Whether an APIService with this owner is deleted, and why (the reason is logged).
pub fn orphan_reason(owner: Owner) -> Option<&'static str> {
    match owner {
        Owner::NamespaceGone => Some("its owner's namespace is not found"),
        Owner::CsvGone => Some("its owning CSV is not found"),
        Owner::Present => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn only_a_csvs_labels_name_an_owner() {
        let csv = labels(&[
            ("olm.owner", "hat-server"),
            ("olm.owner.kind", "ClusterServiceVersion"),
            ("olm.owner.namespace", "ns"),
        ]);
        assert_eq!(csv_owner(&csv), Some(("hat-server", "ns")));
        let group = labels(&[
            ("olm.owner", "og"),
            ("olm.owner.kind", "OperatorGroup"),
            ("olm.owner.namespace", "ns"),
        ]);
        assert_eq!(csv_owner(&group), None);
        assert_eq!(
            csv_owner(&labels(&[("olm.owner.kind", "ClusterServiceVersion")])),
            None
        );
    }

    #[test]
    fn an_apiservice_goes_with_its_namespace_or_its_csv() {
        assert!(orphan_reason(Owner::NamespaceGone).is_some());
        assert!(orphan_reason(Owner::CsvGone).is_some());
        assert_eq!(orphan_reason(Owner::Present), None);
    }
}
