//! The registry gRPC API against the real peers, on loopback:
//!
//! - **our client reads `opm serve`**: on `catalog/`, on every valid fixture catalog and on the
//!   public community-operators catalog of the shared corpus (`v4.20`: 37 packages, 803 bundles),
//!   the packages, default channels, channels, heads, entries and bundles our client reads from
//!   `opm serve` are exactly those the directory loader reads from the same directory;
//! - **upstream's client reads our server**: `tests/peers/registry-client` (operator-registry's
//!   own Go client, `pkg/client`) asks `opm serve` and `kubectl-olm catalog serve` every question
//!   on the same directory; the answers must be the same, method by method;
//! - **bad inputs**: a server that is not a registry, one that breaks off mid-stream, one that
//!   never answers, a message larger than the client accepts: each is a clear error naming the
//!   server and the call, and nothing panics.
//!
//! The peers (`opm` at the version pinned in `tests/peers/go.mod`, and the Go client) are built
//! by `tests/peers/opm/build` (scripts/test runs it). Without them these tests are skipped,
//! except under CI=true, where they fail.
//!
//! Both servers load `catalog/` as shipped (its header comment opens the first document, which
//! opm reads; comment lines before a first `---` would be an empty document it refuses).

// Test helpers outside #[test] functions: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    collections::BTreeMap,
    fs,
    io::{BufRead, BufReader},
    net::{SocketAddr, TcpListener as StdListener},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use olm_rs::{
    catalog::Model,
    grpc::{ClientError, ClientOptions, Connection, Registry, ServeOptions, api, fetch_catalog, server},
    source,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `opm serve DIR` on a free port, once it answers `ListPackages`.
fn start_opm(opm: &Path, dir: &Path, scratch: &Path) -> (Running, String) {
    let port = free_port();
    let child = Command::new(opm)
        .arg("serve")
        .arg(dir)
        .args(["-p", &port.to_string(), "--pprof-addr", ""])
        .arg("-t")
        .arg(scratch.join("termination-log"))
        // opm builds its cache under $TMPDIR and leaves it there when killed (`--cache-dir`
        // would make it refuse to start on a missing cache: integrity is enforced with it).
        .env("TMPDIR", scratch)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = Running(child);
    let address = format!("127.0.0.1:{port}");
    let runtime = runtime();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let ready = runtime.block_on(async {
            let options = ClientOptions {
                timeout: Duration::from_secs(2),
                ..ClientOptions::default()
            };
            match Connection::connect(&address, &options).await {
                Ok(c) => c.list_packages().await.is_ok(),
                Err(_) => false,
            }
        });
        if ready {
            return (running, address);
        }
        assert!(
            Instant::now() < deadline,
            "opm serve {} did not start",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `kubectl-olm catalog serve DIR --grpc 127.0.0.1:0`, with the address it prints.
fn start_ours(dir: &Path) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["catalog", "serve"])
        .arg(dir)
        .args(["--grpc", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let running = Running(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let address = line
        .split(" on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    (running, address)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The catalogs both servers load: `catalog/` as shipped and every valid fixture catalog.
fn catalogs() -> Vec<(String, PathBuf)> {
    let mut out = vec![("catalog/".to_owned(), root().join("catalog"))];
    let fixtures = root().join("tests/fixtures/catalogs/valid");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&fixtures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = format!("fixture {}", dir.file_name().unwrap().to_string_lossy());
        out.push((name, dir));
    }
    out
}

/// What a browse verb sees of a catalog: packages, default channels, channels with heads and
/// entries (sorted: the API does not keep file order), bundles with versions, images, APIs and
/// channels.
fn summary(model: &Model) -> Vec<String> {
    let mut out = Vec::new();
    for p in model.packages() {
        out.push(format!("package {} default {:?}", p.name, p.default_channel));
        for c in p.channels() {
            let mut entries: Vec<String> = c
                .entries
                .iter()
                .map(|e| {
                    format!(
                        "{} replaces {:?} skips {:?} skipRange {:?}",
                        e.name, e.replaces, e.skips, e.skip_range
                    )
                })
                .collect();
            entries.sort();
            out.push(format!(
                "channel {}/{} head {:?}: {entries:?}",
                p.name,
                c.name,
                c.head()
            ));
        }
        for b in p.bundles() {
            out.push(format!(
                "bundle {} version {} image {:?} provides {:?} requires {:?} packages {:?} channels {:?}",
                b.name,
                b.version,
                b.image,
                b.provided_gvks(),
                b.required_gvks(),
                b.required_packages()
                    .iter()
                    .map(|r| format!("{} {}", r.package_name, r.version_range))
                    .collect::<Vec<_>>(),
                b.channels
            ));
        }
    }
    out
}

fn model_of_dir(dir: &Path) -> Model {
    let loaded = source::load_path(dir).unwrap();
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    Model::from_config(loaded.config)
}

#[test]
fn our_client_reads_from_opm_serve_the_catalog_the_directory_loader_reads() {
    let Some(opm) = olm_test_support::peer_bin("opm") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let runtime = runtime();
    let mut all = catalogs();
    if let Some(dir) = crate::corpus::corpus_dir_for_test("v4.20") {
        all.push(("corpus v4.20".to_owned(), dir));
    }
    for (name, dir) in all {
        let (_opm, address) = start_opm(&opm, &dir, scratch.path());
        let fetched = runtime
            .block_on(fetch_catalog(
                &format!("grpc://{address}"),
                &ClientOptions::default(),
            ))
            .unwrap_or_else(|e| panic!("{name}: {}", operator_runtime::error_chain(&e)));
        assert!(fetched.problems.is_empty(), "{name}: {:?}", fetched.problems);
        let (from_opm, problems) = Model::build(fetched.config);
        assert!(problems.is_empty(), "{name}: {problems:?}");
        let from_dir = model_of_dir(&dir);
        assert!(!from_dir.is_empty(), "{name}");
        assert_eq!(summary(&from_opm), summary(&from_dir), "{name}");
    }
}

/// Runs the Go client against `address` and parses its answers.
fn ask_with_go_client(client: &Path, address: &str) -> BTreeMap<String, Value> {
    let out = Command::new(client).arg(address).output().unwrap();
    assert!(
        out.status.success(),
        "registry-client {address} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The same answer, or the same error message where opm says `Unknown` and we say `NotFound`
/// (our deliberate difference, see `olm_rs::grpc::query`).
fn same_answer(opm: &Value, ours: &Value) -> bool {
    if opm == ours {
        return true;
    }
    opm.get("error") == Some(&json!("Unknown"))
        && ours.get("error") == Some(&json!("NotFound"))
        && opm.get("message") == ours.get("message")
}

#[test]
fn upstreams_go_client_gets_the_same_answers_from_our_server_as_from_opm_serve() {
    let (Some(opm), Some(client)) = (
        olm_test_support::peer_bin("opm"),
        olm_test_support::peer_bin("registry-client"),
    ) else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let mut differences = Vec::new();
    for (name, dir) in catalogs() {
        let (_opm, opm_address) = start_opm(&opm, &dir, scratch.path());
        let (_ours, our_address) = start_ours(&dir);
        let from_opm = ask_with_go_client(&client, &opm_address);
        let from_ours = ask_with_go_client(&client, &our_address);
        assert!(from_opm.len() > 10, "{name}: too few questions: {from_opm:?}");
        assert_eq!(
            from_opm.get("HealthCheck(Registry)"),
            Some(&json!(true)),
            "{name}"
        );
        let keys: std::collections::BTreeSet<&String> = from_opm.keys().chain(from_ours.keys()).collect();
        for key in keys {
            let (a, b) = (from_opm.get(key), from_ours.get(key));
            let same = match (a, b) {
                (Some(a), Some(b)) => same_answer(a, b),
                _ => false,
            };
            if !same {
                differences.push(format!(
                    "{name}: {key}:\n  opm serve: {}\n  ours:      {}",
                    a.map_or("(not asked)".into(), Value::to_string),
                    b.map_or("(not asked)".into(), Value::to_string)
                ));
            }
        }
    }
    assert!(
        differences.is_empty(),
        "{} difference(s):\n{}",
        differences.len(),
        differences.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Bad inputs
// ---------------------------------------------------------------------------------------------

/// A catalog of `count` bundles without image, each inlining a ConfigMap of about `size` bytes.
fn big_catalog(count: usize, size: usize) -> Arc<Registry> {
    let mut text = String::from(r#"{"schema":"olm.package","name":"big","defaultChannel":"s"}"#);
    let entries: Vec<String> = (0..count)
        .map(|i| match i {
            0 => r#"{"name":"big.v1.0.0"}"#.to_owned(),
            _ => format!(r#"{{"name":"big.v1.{i}.0","replaces":"big.v1.{}.0"}}"#, i - 1),
        })
        .collect();
    text.push_str(&format!(
        r#"{{"schema":"olm.channel","package":"big","name":"s","entries":[{}]}}"#,
        entries.join(",")
    ));
    let filler = "x".repeat(size);
    for i in 0..count {
        use base64::Engine as _;
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")},
            "data": {"filler": filler}});
        let data = base64::engine::general_purpose::STANDARD.encode(object.to_string());
        text.push_str(&format!(
            r#"{{"schema":"olm.bundle","package":"big","name":"big.v1.{i}.0","image":"","properties":[
            {{"type":"olm.package","value":{{"packageName":"big","version":"1.{i}.0"}}}},
            {{"type":"olm.bundle.object","value":{{"data":"{data}"}}}}]}}"#
        ));
    }
    let loaded = source::load_str("big.json", &text);
    let (model, report) = loaded.validate();
    assert!(report.passed(), "{report}");
    Arc::new(Registry::new(model).unwrap())
}

/// Serves `registry` in process on a free loopback port until the runtime ends.
async fn serve_in_process(registry: Arc<Registry>) -> SocketAddr {
    let listener = server::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(server::serve(
        registry,
        listener,
        ServeOptions::default(),
        std::future::pending(),
    ));
    address
}

fn options(timeout_secs: u64) -> ClientOptions {
    ClientOptions {
        timeout: Duration::from_secs(timeout_secs),
        ..ClientOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_speaks_http1_is_not_a_registry_and_the_error_says_so() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = socket.read(&mut buf).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    // The answer comes in milliseconds; the generous bound only keeps a loaded CI machine (a
    // clean-clone run once took more than 10 s here) from turning it into a Timeout.
    let err = fetch_catalog(&address.to_string(), &options(60))
        .await
        .unwrap_err();
    let text = operator_runtime::error_chain(&err);
    assert!(text.contains(&address.to_string()), "{text}");
    assert!(
        matches!(err, ClientError::Connect { .. } | ClientError::Call { .. }),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_server_without_the_registry_api_is_named_as_such() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (_reporter, health) = tonic_health::server::health_reporter();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(health)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let err = fetch_catalog(&format!("grpc://{address}"), &options(10))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::NotARegistry {
                method: "ListPackages",
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "{address} does not serve the registry API (api.Registry)"
        )),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_naming_the_server() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let err = fetch_catalog(&address.to_string(), &options(1))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err:?}");
    assert!(err.to_string().contains(&address.to_string()), "{err}");
}

/// A proxy to `upstream` that forwards the first `budget` bytes the server sends, then cuts
/// both connections: a server dying part way through a stream.
async fn cutting_proxy(upstream: SocketAddr, budget: usize) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let server = tokio::net::TcpStream::connect(upstream).await.unwrap();
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let up = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
                });
                let mut left = budget;
                let mut buf = vec![0u8; 16 * 1024];
                while left > 0 {
                    let n = match server_read.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n.min(left),
                    };
                    if client_write.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    left -= n;
                }
                up.abort();
                // Dropping both halves closes the connections.
            });
        }
    });
    address
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_dying_mid_stream_is_an_error_saying_how_far_the_stream_got() {
    let upstream = serve_in_process(big_catalog(200, 2_000)).await;
    let proxy = cutting_proxy(upstream, 100_000).await;
    let err = fetch_catalog(&proxy.to_string(), &options(10)).await.unwrap_err();
    let text = err.to_string();
    match &err {
        ClientError::Call {
            method: "ListBundles",
            received: Some(n),
            ..
        } => assert!(*n > 0 && *n < 200, "{text}"),
        other => panic!("expected a broken ListBundles stream, got {other:?}"),
    }
    assert!(
        text.starts_with(&format!("ListBundles on {proxy} failed after ")),
        "{text}"
    );
    // The same through the CLI: exit 1 with the message, no panic.
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["catalog", "packages", "--catalog", &format!("grpc://{proxy}")])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error: failed to load catalog grpc://{proxy}: ListBundles on {proxy} failed after "
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The server itself is unharmed.
    let fetched = fetch_catalog(&upstream.to_string(), &options(10)).await.unwrap();
    assert_eq!(fetched.messages, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_larger_than_the_client_accepts_names_the_limit() {
    let upstream = serve_in_process(big_catalog(2, 3 * 1024 * 1024)).await;
    let small = ClientOptions {
        max_message_bytes: 1024 * 1024,
        ..options(30)
    };
    let err = fetch_catalog(&upstream.to_string(), &small).await.unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::TooLarge {
                method: "ListBundles",
                limit: 1_048_576,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("larger than the client's limit of 1048576 bytes"),
        "{err}"
    );
    // The default limit reads it, and the 3 MiB manifest arrives whole.
    let fetched = fetch_catalog(&upstream.to_string(), &options(30)).await.unwrap();
    let (model, _) = Model::build(fetched.config);
    let bundle = model.package("big").unwrap().bundle("big.v1.1.0").unwrap();
    let object = bundle.objects().remove(0).unwrap();
    assert_eq!(
        object["data"]["filler"].as_str().map(str::len),
        Some(3 * 1024 * 1024)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_server_answers_the_health_service_for_the_names_clients_ask() {
    let address = serve_in_process(big_catalog(1, 10)).await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    for service in ["", "Registry", "api.Registry"] {
        let answer = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.to_owned(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            answer.status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32,
            "{service:?}"
        );
    }
    // And a request for an unknown package is NOT_FOUND with upstream's message.
    let mut registry = api::registry_client::RegistryClient::new(channel);
    let status = registry
        .get_package(api::GetPackageRequest { name: "nope".into() })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert_eq!(status.message(), r#"package "nope" not found"#);
}
