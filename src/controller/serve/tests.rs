use std::{path::Path, time::Duration};

use super::*;
use crate::catalog::Model;

/// Package → (default channel, channel → (head, entries)), and the bundle names: what a client
/// of either API sees of a catalog.
type Seen = Vec<(
    String,
    String,
    Vec<(String, Option<String>, Vec<String>)>,
    Vec<String>,
)>;

fn seen(model: &Model) -> Seen {
    model
        .packages()
        .map(|p| {
            let channels = p
                .channels()
                .iter()
                .map(|c| {
                    // The registry API has no entry order (ListBundles streams them as it likes).
                    let mut entries: Vec<String> = c.entries.iter().map(|e| e.name.clone()).collect();
                    entries.sort();
                    (c.name.clone(), c.head().map(str::to_owned), entries)
                })
                .collect();
            let bundles = p.bundles().iter().map(|b| b.name.clone()).collect();
            (p.name.clone(), p.default_channel.clone(), channels, bundles)
        })
        .collect()
}

fn fixture(name: &str) -> Arc<LoadedCatalog> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catalogs/valid")
        .join(name);
    Arc::new(super::super::cache::builtin_from_dir(&dir).unwrap().unwrap())
}

async fn over_grpc(addr: SocketAddr) -> Result<Model, grpc::ClientError> {
    let options = grpc::ClientOptions {
        timeout: Duration::from_secs(10),
        ..grpc::ClientOptions::default()
    };
    let fetched = grpc::fetch_catalog(&addr.to_string(), &options).await?;
    assert!(fetched.problems.is_empty(), "{:?}", fetched.problems);
    Ok(Model::build(fetched.config).0)
}

async fn over_http(base: &str) -> Result<Model, catalogd::ClientError> {
    let options = catalogd::ClientOptions::default();
    let client = catalogd::client::client(&options)?;
    match catalogd::fetch(&client, base, &options, None).await? {
        catalogd::Fetched::Catalog(catalog) => {
            assert!(catalog.problems.is_empty(), "{:?}", catalog.problems);
            Ok(Model::build(catalog.config).0)
        }
        catalogd::Fetched::NotModified => panic!("{base}: 304 to a plain GET"),
    }
}

#[tokio::test]
async fn the_cached_catalogs_are_served_over_grpc_and_http_and_follow_reloads_until_stopped() {
    let cache = Arc::new(CatalogCache::new(None).unwrap());
    let builtin = cache.builtin().unwrap();
    cache.insert("olm", "builtin", Arc::clone(&builtin));
    let mine = fixture("multi-package");
    cache.insert("team", "mine", Arc::clone(&mine));
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let targets: Vec<GrpcTarget> = [
        "olm/builtin=127.0.0.1:0",
        "team/mine=127.0.0.1:0",
        "team/absent=127.0.0.1:0",
    ]
    .iter()
    .map(|t| t.parse().unwrap())
    .collect();
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let servers = start(&cache, "olm", &targets, Some(any), &stopping)
        .await
        .unwrap();
    let [builtin_addr, mine_addr, absent_addr, http_addr] = servers.addrs[..] else {
        panic!("{:?}", servers.addrs)
    };

    // gRPC, one CatalogSource per port: what the cache holds, as our client reads it.
    assert_eq!(
        seen(&over_grpc(builtin_addr).await.unwrap()),
        seen(&builtin.model)
    );
    assert_eq!(seen(&over_grpc(mine_addr).await.unwrap()), seen(&mine.model));
    let err = over_grpc(absent_addr).await.unwrap_err();
    let text = operator_runtime::error_chain(&err);
    assert!(
        text.contains("CatalogSource team/absent has no catalog loaded"),
        "{text}"
    );

    // HTTP, every CatalogSource on one port, the global namespace's also at catalogd's path.
    let base = format!("http://{http_addr}/catalogs");
    assert_eq!(
        seen(&over_http(&format!("{base}/team/mine")).await.unwrap()),
        seen(&mine.model)
    );
    assert_eq!(
        seen(&over_http(&format!("{base}/olm/builtin")).await.unwrap()),
        seen(&builtin.model)
    );
    assert_eq!(
        seen(&over_http(&format!("{base}/builtin")).await.unwrap()),
        seen(&builtin.model)
    );
    let err = over_http(&format!("{base}/team/absent")).await.unwrap_err();
    assert!(err.to_string().contains("404"), "{err}");

    // A reloaded catalog is served from the next request on; a removed one no longer.
    let other = fixture("skips-and-skiprange");
    cache.insert("team", "mine", Arc::clone(&other));
    assert_ne!(seen(&other.model), seen(&mine.model));
    assert_eq!(seen(&over_grpc(mine_addr).await.unwrap()), seen(&other.model));
    assert_eq!(
        seen(&over_http(&format!("{base}/team/mine")).await.unwrap()),
        seen(&other.model)
    );
    cache.remove("team", "mine");
    assert!(over_grpc(mine_addr).await.is_err());
    assert!(over_http(&format!("{base}/team/mine")).await.is_err());

    // Stopping ends every server, and the ports are free again.
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(30), servers.drained())
        .await
        .expect("the servers drain");
    tokio::net::TcpListener::bind(http_addr).await.unwrap();
}

#[tokio::test]
async fn a_busy_port_fails_the_start_naming_the_flag() {
    let cache = Arc::new(CatalogCache::new(None).unwrap());
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = taken.local_addr().unwrap();
    let (_stop, stopping) = tokio::sync::watch::channel(false);
    let target: GrpcTarget = format!("olm/x={addr}").parse().unwrap();
    let err = start(&cache, "olm", &[target], None, &stopping)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("--serve-grpc olm/x={addr}: cannot listen")),
        "{err}"
    );
    let err = start(&cache, "olm", &[], Some(addr), &stopping)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("--serve-http {addr}: cannot listen")),
        "{err}"
    );
}

#[test]
fn grpc_targets_name_a_catalog_source_and_an_address() {
    let t: GrpcTarget = "olm/operatorhub=0.0.0.0:50051".parse().unwrap();
    assert_eq!((t.namespace.as_str(), t.name.as_str()), ("olm", "operatorhub"));
    assert_eq!(t.addr.port(), 50051);
    for bad in [
        "olm/x",
        "x=0.0.0.0:1",
        "/x=0.0.0.0:1",
        "a/b/c=0.0.0.0:1",
        "a/b=localhost",
    ] {
        let err = bad.parse::<GrpcTarget>().unwrap_err();
        assert!(
            err.contains("NAMESPACE/NAME=ADDR") || err.contains("IP:PORT"),
            "{bad}: {err}"
        );
    }
}
