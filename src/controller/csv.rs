//! csv controller (being written).

use std::sync::Arc;

use kube::runtime::controller::Action;

use super::{Context, Result};

/// Reconciles one object.
pub async fn reconcile<K>(_obj: Arc<K>, _ctx: Arc<Context>) -> Result<Action> {
    Ok(Action::await_change())
}
