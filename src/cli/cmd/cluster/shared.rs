//! What the cluster verbs share: the field manager they write as, listing with a clear error when
//! OLM's CRDs are missing, and `kind.group/name` spellings for output.

use kube::{Api, Resource};
use serde::de::DeserializeOwned;

use crate::cli::{CliError, cluster::Cluster};

/// The field manager of every write `kubectl-olm` makes.
pub const FIELD_MANAGER: &str = "kubectl-olm";

/// `resource.group/name`, as `kubectl ... -o name` prints it (`subscription.operators.coreos.com/x`).
pub fn qualified<K: Resource<DynamicType = ()>>(name: &str) -> String {
    let kind = K::kind(&()).to_lowercase();
    let group = K::group(&());
    if group.is_empty() {
        format!("{kind}/{name}")
    } else {
        format!("{kind}.{group}/{name}")
    }
}

/// Lists `api`; a 404 on the list itself means the CRD is not installed, reported as
/// [`CliError::OlmNotInstalled`] naming `resource`.
///
/// # Errors
/// [`CliError::OlmNotInstalled`], or the API error of the list.
pub async fn list_or_olm_missing<K>(
    cluster: &Cluster,
    api: &Api<K>,
    resource: &str,
    namespace: &str,
) -> Result<Vec<K>, CliError>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.list(&kube::api::ListParams::default()).await {
        Ok(list) => Ok(list.items),
        Err(kube::Error::Api(s)) if s.code == 404 => Err(CliError::OlmNotInstalled {
            resource: resource.to_string(),
        }),
        Err(e) => {
            let scope = if namespace.is_empty() {
                "all namespaces".to_string()
            } else {
                format!("namespace {namespace}")
            };
            Err(cluster.api_error(&format!("list {resource} in {scope}"), e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{v1::OperatorGroup, v1alpha1::InstallPlan};

    #[test]
    fn qualified_names_read_like_kubectl_get_o_name() {
        assert_eq!(
            qualified::<InstallPlan>("ip-1"),
            "installplan.operators.coreos.com/ip-1"
        );
        assert_eq!(
            qualified::<OperatorGroup>("og"),
            "operatorgroup.operators.coreos.com/og"
        );
    }
}
