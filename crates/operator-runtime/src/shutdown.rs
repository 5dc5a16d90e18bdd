//! shutdown: the future that completes when the process is asked to stop (SIGTERM from the
//! kubelet, or SIGINT from a terminal), so every binary drains the same way.

/// Completes on SIGTERM or SIGINT (only SIGINT where there are no Unix signals).
pub async fn signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
            let _ = ctrl_c.await;
            return;
        };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
