//! APIService orphans: the APIServices labelled with a CSV owner are watched (metadata only), and
//! one whose owner namespace or CSV is gone is deleted, as upstream's `syncAPIService` does. The
//! rule is [`crate::plan::api_service`]; this module observes (the watch and the CSV store; a
//! namespace and CSV read before any deletion, since the store may not have caught up) and
//! deletes.

use futures::{Stream, StreamExt};
use k8s_openapi::{api::core::v1::Namespace, kube_aggregator::pkg::apis::apiregistration::v1::APIService};
use kube::{Api, ResourceExt, core::PartialObjectMeta, runtime::watcher};

use super::Context;
use crate::{
    api::v1alpha1::ClusterServiceVersion,
    k8s::apply,
    plan::api_service::{Owner, csv_owner, orphan_reason},
};

/// The label selector of the watch: APIServices a CSV owns.
pub const SELECTOR: &str = "olm.owner.kind=ClusterServiceVersion";

/// Consumes the watch of CSV-owned APIServices until it ends, deleting orphans. A failure is
/// logged; the watch's next relist brings the APIService back.
pub async fn collect_orphans(
    ctx: std::sync::Arc<Context>,
    stream: impl Stream<Item = Result<PartialObjectMeta<APIService>, watcher::Error>>,
) {
    let mut stream = std::pin::pin!(stream);
    while let Some(item) = stream.next().await {
        let Ok(service) = item else { continue };
        if let Err(error) = check(&ctx, &service).await {
            tracing::warn!(apiservice = %service.name_any(), %error, "checking an APIService's owner failed");
        }
    }
}

async fn check(ctx: &Context, service: &PartialObjectMeta<APIService>) -> kube::Result<()> {
    let Some((csv, ns)) = csv_owner(service.labels()) else {
        return Ok(());
    };
    // The store answers for an owner that exists (every APIService of a live install, on every
    // relist) without a request; an owner it lacks is confirmed by reads before any deletion.
    let key = kube::runtime::reflector::ObjectRef::<ClusterServiceVersion>::new(csv).within(ns);
    if ctx.shared.stores.csvs.get(&key).is_some() {
        return Ok(());
    }
    let owner = if Api::<Namespace>::all(ctx.client()).get_opt(ns).await?.is_none() {
        Owner::NamespaceGone
    } else if Api::<ClusterServiceVersion>::namespaced(ctx.client(), ns)
        .get_metadata_opt(csv)
        .await?
        .is_none()
    {
        Owner::CsvGone
    } else {
        Owner::Present
    };
    if let Some(reason) = orphan_reason(owner) {
        let name = service.name_any();
        let api: Api<APIService> = Api::all(ctx.client());
        // Only the APIService this event is about: one re-created under the name since (with
        // other labels, or none) is judged on its own events.
        let Some(uid) = service.metadata.uid.as_deref() else {
            return Ok(());
        };
        if apply::delete_observed(&api, &name, uid).await? {
            tracing::info!(apiservice = %name, owner = %format!("{ns}/{csv}"), "deleted an APIService: {reason}");
        }
    }
    Ok(())
}
