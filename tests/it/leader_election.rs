//! Leader election on the local cluster (needs `tests/cluster/up`; skipped without it unless
//! `CI=true`): real `olm-controller` processes racing for one Lease in a namespace of their own.
//!
//! - a second replica started with the identity of the live leader refuses to start, naming the
//!   identity and the fix, instead of leading beside it;
//! - after the leader is SIGKILLed (no release), a standby takes the Lease once the term has
//!   passed on its own clock; the failover time is printed next to its target (measured, never
//!   asserted beyond a generous bound);
//! - a leader restarted under its own identity waits out its dead self's term, then leads.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::support::cluster::{TestCluster, wait_for};
use k8s_openapi::api::coordination::v1::Lease;

struct Replica {
    child: Child,
    log: PathBuf,
}

impl Replica {
    fn start(cluster: &TestCluster, lease_ns: &str, identity: &str, tag: &str) -> Self {
        let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("leader-{tag}.log"));
        let out = std::fs::File::create(&log).expect("the replica's log");
        let err = out.try_clone().expect("cloning the log handle");
        let metrics = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        let child = Command::new(env!("CARGO_BIN_EXE_olm-controller"))
            .args(["run", "--leader-elect", "--lease-namespace", lease_ns])
            .args(["--lease-duration", "6s", "--lease-retry-period", "1s"])
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path())
            .arg("--metrics-bind")
            .arg(metrics.to_string())
            .arg("--cache-dir")
            .arg(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("leader-cache-{tag}")))
            .env("POD_NAME", identity)
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("starting olm-controller");
        Self { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn leads(&self) -> bool {
        self.log().contains("acquired the leader lease")
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn holder(cluster: &TestCluster, ns: &str) -> Option<String> {
    let leases: kube::Api<Lease> = kube::Api::namespaced(cluster.client(), ns);
    leases
        .get_opt("olm-rs-controller")
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
}

#[tokio::test]
async fn a_twin_identity_is_refused_and_a_standby_takes_over_after_the_leader_dies() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let ns = cluster.namespace("leader").await;
    let lease_ns = ns.name().to_owned();

    let mut first = Replica::start(&cluster, &lease_ns, "olm-a", "a");
    wait_for("replica olm-a to lead", Duration::from_secs(60), || async {
        (first.leads() && holder(&cluster, &lease_ns).await.as_deref() == Some("olm-a")).then_some(())
    })
    .await;

    // Same identity while olm-a renews: refused, with the identity and the fix.
    let mut twin = Replica::start(&cluster, &lease_ns, "olm-a", "twin");
    let status = wait_for("the twin to exit", Duration::from_secs(60), || {
        let exited = twin.child.try_wait().expect("the twin's status");
        async move { exited }
    })
    .await;
    let log = twin.log();
    assert!(!status.success(), "the twin must fail: {log}");
    assert!(
        log.contains("another replica with identity \"olm-a\" holds the leader Lease")
            && log.contains("POD_NAME"),
        "{log}"
    );
    assert!(!twin.leads(), "{log}");
    assert_eq!(holder(&cluster, &lease_ns).await.as_deref(), Some("olm-a"));

    // A standby with its own identity waits; the leader dies without releasing the Lease.
    let mut standby = Replica::start(&cluster, &lease_ns, "olm-b", "b");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!standby.leads(), "{}", standby.log());
    first.kill();
    let killed = Instant::now();
    wait_for("replica olm-b to take over", Duration::from_secs(60), || async {
        (standby.leads() && holder(&cluster, &lease_ns).await.as_deref() == Some("olm-b")).then_some(())
    })
    .await;
    let failover = killed.elapsed();
    eprintln!(
        "failover after SIGKILL: {:.1} s (term 6 s + retry 1 s here; defaults 10 s + 2 s, target <= 15 s)",
        failover.as_secs_f64()
    );
    assert!(
        failover >= Duration::from_secs(4),
        "taken before the term ended: {failover:?}"
    );

    // The leader dies and comes back at once under its own identity: the Lease naming it is its
    // dead self's, waited out (not renewed on the spot), then taken.
    standby.kill();
    let killed = Instant::now();
    let restarted = Replica::start(&cluster, &lease_ns, "olm-b", "b-restarted");
    wait_for("the restarted olm-b to lead", Duration::from_secs(60), || async {
        (restarted.leads() && holder(&cluster, &lease_ns).await.as_deref() == Some("olm-b")).then_some(())
    })
    .await;
    let back = killed.elapsed();
    let log = restarted.log();
    assert!(
        log.contains("the leader lease names our own identity but this process never took it"),
        "{log}"
    );
    assert!(
        back >= Duration::from_secs(4),
        "the restarted replica renewed its dead self's Lease at once: {back:?}\n{log}"
    );
    ns.delete_and_wait().await;
}
