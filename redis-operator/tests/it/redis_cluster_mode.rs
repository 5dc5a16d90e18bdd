//! Cluster mode against real `redis-server` processes on loopback ports (Debian's `redis-server`).
//!
//! Forms 3 primaries + 3 replicas from 6 processes, checks every slot is covered and the cluster is
//! ok, writes keys, then adds 2 processes and checks a fourth primary takes a quarter of the slots
//! with their keys, then shrinks back to 3 primaries and checks the fourth primary's slots and keys
//! moved to the three that stay and the removed nodes are forgotten. Without `redis-server` the test
//! is skipped, unless `CI=true`, where it fails.

use olm_test_support as support;

use std::{
    net::TcpListener,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use redis_operator::cluster_mode::{
    ClusterError, Node, Options, converge,
    plan::{info_field, parse_cluster_nodes},
    resp::{Connection, Reply},
    shrink,
};

/// Kills every started server when dropped, so a failing assertion leaves no processes behind.
struct Servers {
    children: Vec<Child>,
    nodes: Vec<Node>,
}

impl Drop for Servers {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        // The cluster bus listens on port + 10000, which must be free too.
        if port < 55000 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
}

impl Servers {
    fn start(&mut self, dir: &Path, count: usize) {
        for _ in 0..count {
            let port = free_port();
            let child = Command::new("redis-server")
                .args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--cluster-enabled",
                    "yes",
                ])
                .arg("--cluster-config-file")
                .arg(dir.join(format!("nodes-{port}.conf")))
                .arg("--dir")
                .arg(dir)
                .args([
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--daemonize",
                    "no",
                    // Generous: on a loaded 2-core CI machine a 5 s timeout can mark a starved
                    // node failed and trigger a failover this test does not ask for.
                    "--cluster-node-timeout",
                    "15000",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            self.children.push(child);
            self.nodes.push(Node {
                name: format!("redis-{}", self.nodes.len()),
                addr: format!("127.0.0.1:{port}"),
            });
        }
    }
}

async fn connect_when_up(addr: &str) -> Connection {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(mut c) = Connection::connect(addr, Duration::from_secs(2)).await
            && c.text(&["PING"]).await.is_ok()
        {
            return c;
        }
        assert!(Instant::now() < deadline, "redis-server at {addr} did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn text(addr: &str, args: &[&str]) -> String {
    connect_when_up(addr).await.text(args).await.expect("command")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_servers_form_three_primaries_a_fourth_primary_takes_slots_and_keys_and_shrinking_gives_them_back()
 {
    if !support::tool_available("redis-server", "redis-server") {
        return;
    }
    // Known flake, not yet understood (docs/redis-operator.md, "Known gaps"): in about one run in eight the
    // scale-up's converge ended with 3 primaries instead of 4 (now a `TooFewPrimaries` error). A
    // failed attempt prints every node's CLUSTER NODES view, and the whole scenario runs once more
    // on fresh servers; a deterministic failure still fails the test.
    let Err(first) = tokio::spawn(scenario()).await else {
        return;
    };
    let first = panic_message(first);
    eprintln!("the cluster-mode scenario failed once ({first}); running it again on fresh servers");
    if let Err(second) = tokio::spawn(scenario()).await {
        // Both messages in the one panic a CI summary shows.
        panic!(
            "the cluster-mode scenario failed twice: first: {first}; then: {}",
            panic_message(second)
        );
    }
}

/// The message a scenario panicked with.
fn panic_message(error: tokio::task::JoinError) -> String {
    match error.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a panic without a message".to_owned()),
        Err(error) => error.to_string(),
    }
}

/// Six `redis-server`s in cluster mode in a fresh directory, each answering, and the converge
/// options both tests use.
async fn six_servers_up() -> (tempfile::TempDir, Servers, Options) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut servers = Servers {
        children: Vec::new(),
        nodes: Vec::new(),
    };
    servers.start(dir.path(), 6);
    for n in &servers.nodes {
        connect_when_up(&n.addr).await;
    }
    let opts = Options {
        command_timeout: Duration::from_secs(5),
        settle_timeout: Duration::from_secs(60),
    };
    (dir, servers, opts)
}

/// Formation, a no-op converge, keys, scaling to four primaries and back, on real servers.
async fn scenario() {
    let (dir, mut servers, opts) = six_servers_up().await;

    let formed = converge(servers.nodes.as_slice(), 1, opts)
        .await
        .expect("form cluster");
    assert_eq!(formed.primaries, 3);
    assert_eq!(formed.slots_added, 16384);
    assert_eq!(formed.replicas_attached, 3);
    for n in &servers.nodes {
        let info = text(&n.addr, &["CLUSTER", "INFO"]).await;
        assert_eq!(
            info_field(&info, "cluster_state"),
            Some("ok"),
            "{}: {info}",
            n.name
        );
        assert_eq!(info_field(&info, "cluster_slots_assigned"), Some("16384"));
        assert_eq!(info_field(&info, "cluster_known_nodes"), Some("6"));
    }
    let view = parse_cluster_nodes(&text(&servers.nodes[0].addr, &["CLUSTER", "NODES"]).await);
    let mut covered = vec![0u8; 16384];
    for n in view.iter().filter(|n| n.primary) {
        for s in &n.slots {
            covered[usize::from(*s)] += 1;
        }
    }
    assert!(
        covered.iter().all(|c| *c == 1),
        "every slot owned by exactly one primary"
    );
    assert_eq!(view.iter().filter(|n| n.replica_of.is_some()).count(), 3);

    // Converging a healthy cluster again changes nothing.
    let again = converge(servers.nodes.as_slice(), 1, opts)
        .await
        .expect("converge again");
    assert!(!again.changed(), "{again:?}");

    // Keys written now must follow their slots to the new primary.
    let mut keys = Vec::new();
    for i in 0..300 {
        let key = format!("key:{i}");
        let slot = match connect_when_up(&servers.nodes[0].addr)
            .await
            .cmd(&["CLUSTER", "KEYSLOT", &key])
            .await
        {
            Ok(Reply::Integer(s)) => u16::try_from(s).expect("slot"),
            other => panic!("KEYSLOT: {other:?}"),
        };
        let owner = view
            .iter()
            .find(|n| n.primary && n.slots.contains(&slot))
            .expect("owner");
        text(&owner.addr, &["SET", &key, &format!("value-{i}")]).await;
        keys.push((key, slot));
    }

    servers.start(dir.path(), 2);
    for n in &servers.nodes[6..] {
        connect_when_up(&n.addr).await;
    }
    let (scaled, first_try) = match converge(servers.nodes.as_slice(), 1, opts).await {
        Ok(outcome) => (outcome, true),
        Err(err) => {
            for n in &servers.nodes {
                let view = text(&n.addr, &["CLUSTER", "NODES"]).await;
                eprintln!("=== view of {}:\n{view}", n.addr);
            }
            // The known flake (docs/redis-operator.md): a converge that placed too few
            // primaries says so (or was cut short by a node answering late), and the operator's
            // next reconcile converges again; the test does the same, once. That converge must
            // finish the job, resetting a planned primary left a replica without slots if need
            // be; a second failure fails the test.
            eprintln!("scale to 4 primaries: {err}; converging again, as the operator's next reconcile does");
            let again = converge(servers.nodes.as_slice(), 1, opts)
                .await
                .unwrap_or_else(|e| panic!("scale to 4 primaries, second converge: {e}"));
            (again, false)
        }
    };
    assert_eq!(scaled.primaries, 4, "{scaled:?}");
    assert_eq!(scaled.slots_moved, 4096, "{scaled:?}");
    if first_try {
        assert_eq!(scaled.met, 2, "{scaled:?}");
        assert_eq!(scaled.replicas_attached, 1, "{scaled:?}");
    }

    let view = parse_cluster_nodes(&text(&servers.nodes[0].addr, &["CLUSTER", "NODES"]).await);
    let new_primary_id = text(&servers.nodes[6].addr, &["CLUSTER", "MYID"]).await;
    let new_primary = view
        .iter()
        .find(|n| n.id == new_primary_id)
        .expect("new primary in view");
    assert!(new_primary.primary);
    assert_eq!(new_primary.slots.len(), 4096);
    let new_replica_id = text(&servers.nodes[7].addr, &["CLUSTER", "MYID"]).await;
    let new_replica = view
        .iter()
        .find(|n| n.id == new_replica_id)
        .expect("new replica in view");
    assert_eq!(new_replica.replica_of.as_deref(), Some(new_primary_id.as_str()));
    let mut slot_counts: Vec<usize> = view.iter().filter(|n| n.primary).map(|n| n.slots.len()).collect();
    slot_counts.sort_unstable();
    assert_eq!(slot_counts, [4096, 4096, 4096, 4096]);
    for n in &servers.nodes {
        let info = text(&n.addr, &["CLUSTER", "INFO"]).await;
        assert_eq!(
            info_field(&info, "cluster_state"),
            Some("ok"),
            "{}: {info}",
            n.name
        );
    }
    let mut moved_keys = 0;
    for (i, (key, slot)) in keys.iter().enumerate() {
        let owner = view
            .iter()
            .find(|n| n.primary && n.slots.contains(slot))
            .expect("owner");
        moved_keys += usize::from(owner.id == new_primary_id);
        let got = connect_when_up(&owner.addr)
            .await
            .cmd(&["GET", key])
            .await
            .expect("GET");
        assert_eq!(
            got,
            Reply::Bulk(Some(format!("value-{i}").into_bytes())),
            "{key} on its owner"
        );
    }
    assert!(moved_keys > 0, "some keys live in the moved slots");

    // Shrinking below three primaries is refused before anything is sent.
    let refused = shrink(servers.nodes.as_slice(), 4, 1, opts)
        .await
        .expect_err("two primaries are too few");
    assert!(
        matches!(refused, ClusterError::BadTopology { nodes: 4, .. }),
        "{refused}"
    );

    // Shrink back to 3 primaries: the fourth group (the highest ordinals) leaves.
    let removed_ids = [new_primary_id.clone(), new_replica_id.clone()];
    let shrunk = shrink(servers.nodes.as_slice(), 6, 1, opts)
        .await
        .expect("shrink to 3 primaries");
    // Printed for `--nocapture` (docs/redis-operator.md shows this output).
    eprintln!("{shrunk:?}");
    assert_eq!(shrunk.removed, ["redis-6", "redis-7"]);
    assert_eq!(shrunk.slots_moved, 4096, "{shrunk:?}");
    assert!(shrunk.forgets >= 12, "each of 6 nodes forgets 2: {shrunk:?}");
    let kept = &servers.nodes[..6];
    for n in kept {
        let info = text(&n.addr, &["CLUSTER", "INFO"]).await;
        assert_eq!(
            info_field(&info, "cluster_state"),
            Some("ok"),
            "{}: {info}",
            n.name
        );
        assert_eq!(
            info_field(&info, "cluster_slots_assigned"),
            Some("16384"),
            "{}",
            n.name
        );
        assert_eq!(
            info_field(&info, "cluster_known_nodes"),
            Some("6"),
            "{}: {info}",
            n.name
        );
        let view = parse_cluster_nodes(&text(&n.addr, &["CLUSTER", "NODES"]).await);
        assert!(
            view.iter().all(|v| !removed_ids.contains(&v.id)),
            "{} has forgotten the removed nodes: {view:?}",
            n.name
        );
    }
    let nodes_text = text(&servers.nodes[0].addr, &["CLUSTER", "NODES"]).await;
    eprintln!("CLUSTER NODES after the shrink:\n{nodes_text}");
    let view = parse_cluster_nodes(&nodes_text);
    let mut covered = vec![0u8; 16384];
    for n in view.iter().filter(|n| n.primary) {
        for s in &n.slots {
            covered[usize::from(*s)] += 1;
        }
    }
    assert!(
        covered.iter().all(|c| *c == 1),
        "every slot owned by exactly one primary"
    );
    let mut slot_counts: Vec<usize> = view.iter().filter(|n| n.primary).map(|n| n.slots.len()).collect();
    slot_counts.sort_unstable();
    assert_eq!(slot_counts, [5461, 5461, 5462]);
    assert_eq!(view.iter().filter(|n| n.replica_of.is_some()).count(), 3);
    for n in &servers.nodes[6..] {
        let info = text(&n.addr, &["CLUSTER", "INFO"]).await;
        assert_eq!(
            info_field(&info, "cluster_known_nodes"),
            Some("1"),
            "{} left the cluster: {info}",
            n.name
        );
    }
    for (i, (key, slot)) in keys.iter().enumerate() {
        let owner = view
            .iter()
            .find(|n| n.primary && n.slots.contains(slot))
            .expect("owner");
        assert!(!removed_ids.contains(&owner.id));
        let got = connect_when_up(&owner.addr)
            .await
            .cmd(&["GET", key])
            .await
            .expect("GET");
        assert_eq!(
            got,
            Reply::Bulk(Some(format!("value-{i}").into_bytes())),
            "{key} survived the shrink"
        );
    }

    // Both steps are idempotent: nothing left to do on the shrunk cluster.
    let again = shrink(servers.nodes.as_slice(), 6, 1, opts)
        .await
        .expect("shrink again");
    assert!(!again.changed(), "{again:?}");
    let again = converge(kept, 1, opts).await.expect("converge the kept nodes");
    assert!(!again.changed(), "{again:?}");
    assert_eq!(again.primaries, 3);
}

/// The state the scale-up flake left (docs/redis-operator.md): the node planned as the fourth
/// primary joined as a replica of the first primary. A converge resets it to an empty master and
/// gives it its quarter of the slots, instead of stopping at three primaries for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_primary_left_a_replica_is_reset_and_takes_its_slots() {
    if !support::tool_available("redis-server", "redis-server") {
        return;
    }
    let (dir, mut servers, opts) = six_servers_up().await;
    converge(servers.nodes.as_slice(), 1, opts)
        .await
        .expect("form cluster");
    servers.start(dir.path(), 2);
    for n in &servers.nodes[6..] {
        connect_when_up(&n.addr).await;
    }

    // redis-6 (planned primary of the fourth group) becomes a replica of redis-0.
    let first_id = text(&servers.nodes[0].addr, &["CLUSTER", "MYID"]).await;
    let (ip, port) = servers.nodes[6].addr.rsplit_once(':').expect("ip:port");
    text(&servers.nodes[0].addr, &["CLUSTER", "MEET", ip, port]).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let replicated = connect_when_up(&servers.nodes[6].addr)
            .await
            .cmd(&["CLUSTER", "REPLICATE", &first_id])
            .await;
        if replicated.is_ok() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "redis-6 never accepted CLUSTER REPLICATE: {replicated:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stranded_id = text(&servers.nodes[6].addr, &["CLUSTER", "MYID"]).await;
    let view = parse_cluster_nodes(&text(&servers.nodes[6].addr, &["CLUSTER", "NODES"]).await);
    assert!(
        view.iter()
            .any(|n| n.id == stranded_id && n.replica_of.as_deref() == Some(first_id.as_str())),
        "redis-6 is a replica of redis-0 before the converge"
    );

    let scaled = converge(servers.nodes.as_slice(), 1, opts)
        .await
        .expect("converge with a stranded planned primary");
    assert_eq!(scaled.primaries, 4, "{scaled:?}");
    assert_eq!(scaled.slots_moved, 4096, "{scaled:?}");
    let view = parse_cluster_nodes(&text(&servers.nodes[0].addr, &["CLUSTER", "NODES"]).await);
    let reset = view
        .iter()
        .find(|n| n.id == stranded_id)
        .expect("redis-6 in the view");
    assert!(reset.primary, "redis-6 is a primary again: {reset:?}");
    assert_eq!(reset.slots.len(), 4096);
    let replica_id = text(&servers.nodes[7].addr, &["CLUSTER", "MYID"]).await;
    assert!(
        view.iter()
            .any(|n| n.id == replica_id && n.replica_of.as_deref() == Some(stranded_id.as_str())),
        "redis-7 replicates the new primary"
    );
}
