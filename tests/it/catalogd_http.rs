//! The catalogd HTTP API of `kubectl-olm catalog serve --http`, checked with `curl` as the client
//! against what OLM v1's catalogd does (status codes, headers, gzip, `304` on
//! `If-Modified-Since`, `metas` filtering, `400` on an unknown parameter, `404`, `405`), and
//! `kubectl-olm --catalog http://...` reading it back: the same packages and bundles as from the
//! directory. Bad servers (not catalogd, a 404, a body cut short) give a clear error and exit 1.
//! No cluster needed.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpListener,
    path::Path,
    process::{Child, Command, Output, Stdio},
};

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

/// The address after ` on ` in one line `catalog serve` prints.
fn address_in(line: &str) -> String {
    line.split(" on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned()
}

/// `kubectl-olm catalog serve catalog/ --grpc 127.0.0.1:0 --http 127.0.0.1:0`: the process, the
/// gRPC address and the HTTP base URL it printed.
fn serve() -> (Running, String, String) {
    serve_dir(&root().join("catalog"), &[])
}

/// `kubectl-olm catalog serve DIR --grpc 127.0.0.1:0 --http 127.0.0.1:0 EXTRA...`.
fn serve_dir(dir: &Path, extra: &[&str]) -> (Running, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["catalog", "serve"])
        .arg(dir)
        .args(["--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl-olm starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let running = Running(child);
    let mut lines = BufReader::new(stdout).lines();
    let grpc = lines.next().expect("a gRPC line").expect("text");
    let http = lines.next().expect("an HTTP line").expect("text");
    assert!(grpc.contains("gRPC api.Registry"), "{grpc}");
    assert!(http.contains("catalogd HTTP API"), "{http}");
    (running, address_in(&grpc), address_in(&http))
}

fn curl(args: &[&str]) -> Output {
    let output = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "20"])
        .args(args)
        .output()
        .expect("curl is installed");
    assert!(
        output.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Status code, headers (lower-case names) and body of one request.
fn request(args: &[&str]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let headers_file = dir.path().join("headers");
    let body_file = dir.path().join("body");
    let mut all = vec![
        "--dump-header",
        headers_file.to_str().expect("utf-8"),
        "--output",
        body_file.to_str().expect("utf-8"),
    ];
    all.extend_from_slice(args);
    curl(&all);
    let head = std::fs::read_to_string(&headers_file).expect("headers written");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let body = std::fs::read(&body_file).unwrap_or_default();
    (status, headers, body)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

fn kubectl_olm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(args)
        .output()
        .expect("kubectl-olm runs")
}

#[test]
fn catalog_serve_http_answers_as_catalogd_does() {
    let (_server, _grpc, base) = serve();
    let all = format!("{base}/api/v1/all");

    // The whole catalog: JSON lines, Last-Modified, Vary, one blob per line.
    let (status, headers, body) = request(&[&all]);
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), Some("application/jsonl"));
    let last_modified = header(&headers, "last-modified")
        .expect("Last-Modified")
        .to_owned();
    assert!(last_modified.ends_with(" GMT"), "{last_modified}");
    assert_eq!(header(&headers, "content-encoding"), None);
    let text = String::from_utf8(body.clone()).expect("utf-8");
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        let blob: serde_json::Value = serde_json::from_str(line).expect("each line is one JSON object");
        assert!(blob["schema"].is_string(), "{line}");
    }
    let schemas: Vec<&str> = text
        .lines()
        .map(|l| {
            if l.contains(r#""schema":"olm.package""#) {
                "p"
            } else {
                "-"
            }
        })
        .collect();
    assert_eq!(
        schemas.first(),
        Some(&"p"),
        "the package blob comes first, as in the file"
    );

    // HEAD: the same headers, no body.
    let (status, head_headers, head_body) = request(&["--head", &all]);
    assert_eq!(status, 200);
    assert_eq!(header(&head_headers, "content-type"), Some("application/jsonl"));
    assert_eq!(
        header(&head_headers, "content-length"),
        Some(body.len().to_string().as_str())
    );
    // (curl writes the headers of a HEAD where the body would go.)
    let head_text = String::from_utf8_lossy(&head_body);
    assert!(!head_text.contains("schema"), "{head_text}");

    // gzip when asked for; curl --compressed decodes to the same bytes.
    let (_, gz_headers, gz_body) = request(&["--header", "Accept-Encoding: gzip", &all]);
    assert_eq!(header(&gz_headers, "content-encoding"), Some("gzip"));
    assert!(gz_body.len() < body.len() && gz_body.starts_with(&[0x1f, 0x8b]));
    let decoded = curl(&["--compressed", &all]).stdout;
    assert_eq!(decoded, body);

    // 304 on If-Modified-Since not older; 200 when older.
    let since = format!("If-Modified-Since: {last_modified}");
    let (status, not_modified, nothing) = request(&["--header", &since, &all]);
    assert_eq!(status, 304);
    assert!(nothing.is_empty() && header(&not_modified, "content-type").is_none());
    let (status, _, _) = request(&[
        "--header",
        "If-Modified-Since: Mon, 01 Jan 2001 00:00:00 GMT",
        &all,
    ]);
    assert_eq!(status, 200);
    let (status, _, _) = request(&[
        "--header",
        &since,
        &format!("{base}/api/v1/metas?schema=olm.package"),
    ]);
    assert_eq!(status, 304);

    // metas: filtered lines, in body order; no parameter is the whole catalog.
    let metas = |query: &str| {
        let (status, headers, body) = request(&[&format!("{base}/api/v1/metas?{query}")]);
        (status, headers, String::from_utf8(body).expect("utf-8"))
    };
    let (status, headers, packages) = metas("schema=olm.package");
    assert_eq!(
        (status, header(&headers, "content-type")),
        (200, Some("application/jsonl"))
    );
    assert_eq!(packages.lines().count(), 1, "{packages}");
    assert!(packages.contains(r#""name":"redis-operator""#), "{packages}");
    let (_, _, bundles) = metas("schema=olm.bundle&package=redis-operator");
    let bundle_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.ends_with(r#""schema":"olm.bundle"}"#))
        .collect();
    assert_eq!(bundles.lines().collect::<Vec<_>>(), bundle_lines);
    let (_, _, one) = metas("schema=olm.channel&name=stable");
    assert_eq!(one.lines().count(), 1, "{one}");
    assert_eq!(metas("").2, text);
    let (status, _, refused) = metas("schema=olm.bundle&version=1.0.0");
    assert_eq!((status, refused.as_str()), (400, "400 Bad Request\n"));

    // Elsewhere 404, other methods 405.
    for path in ["/", "/api/v1/all/", "/api/v2/all"] {
        assert_eq!(request(&[&format!("{base}{path}")]).0, 404, "{path}");
    }
    for method in ["POST", "PUT", "DELETE"] {
        assert_eq!(request(&["--request", method, &all]).0, 405, "{method}");
    }
}

#[test]
fn kubectl_olm_reads_the_http_catalog_as_it_reads_the_directory() {
    let (_server, grpc, base) = serve();
    let dir = root().join("catalog");
    let dir = dir.to_str().expect("utf-8");
    for verb in [
        vec!["catalog", "packages", "-o", "json"],
        vec!["catalog", "bundles", "redis-operator", "-o", "json"],
        vec!["catalog", "channels", "redis-operator"],
    ] {
        let from = |catalog: &str| {
            let mut args = verb.clone();
            args.extend(["--catalog", catalog]);
            let output = kubectl_olm(&args);
            assert!(
                output.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8(output.stdout).expect("utf-8")
        };
        let expected = from(dir);
        assert_eq!(from(&base), expected, "{verb:?} over HTTP");
        assert_eq!(
            from(&format!("{base}/api/v1/all")),
            expected,
            "{verb:?} with the full path"
        );
    }
    // The gRPC API is served by the same process at the same time.
    let names =
        |catalog: &str| kubectl_olm(&["catalog", "packages", "-o", "name", "--catalog", catalog]).stdout;
    assert_eq!(names(&format!("grpc://{grpc}")), names(dir));
    let validated = kubectl_olm(&["catalog", "validate", &base]);
    assert!(
        validated.status.success(),
        "{}",
        String::from_utf8_lossy(&validated.stdout)
    );
}

/// A catalog with a broken package (etcd: a channel with two heads) beside a good one (the
/// shipped catalog/): served without the broken part, with warnings naming it, unless --strict.
#[test]
fn a_catalog_with_problems_is_served_without_its_broken_parts_unless_strict() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let copy = |from: &Path, to: &str| {
        let target = dir.path().join(to);
        std::fs::create_dir_all(&target).expect("mkdir");
        for entry in std::fs::read_dir(from).expect("readable fixture") {
            let entry = entry.expect("an entry");
            if entry.file_type().expect("a type").is_file() {
                std::fs::copy(entry.path(), target.join(entry.file_name())).expect("copied");
            }
        }
    };
    copy(&root().join("catalog/redis-operator"), "redis-operator");
    copy(
        &root().join("tests/fixtures/catalogs/invalid/multiple-heads"),
        "etcd",
    );
    let (mut server, grpc, base) = serve_dir(dir.path(), &[]);
    // The gRPC API serves the good package only; HTTP serves the blobs as read.
    let names = |catalog: &str| {
        String::from_utf8(kubectl_olm(&["catalog", "packages", "-o", "name", "--catalog", catalog]).stdout)
            .expect("utf-8")
    };
    let over_grpc = names(&format!("grpc://{grpc}"));
    assert!(over_grpc.contains("redis-operator"), "{over_grpc}");
    assert!(!over_grpc.contains("etcd"), "{over_grpc}");
    let (status, _, body) = request(&[&format!("{base}/api/v1/metas?schema=olm.package")]);
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains(r#""name":"etcd""#));
    let _ = server.0.kill();
    let _ = server.0.wait();
    let mut stderr = String::new();
    if let Some(mut err) = server.0.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    assert!(stderr.contains("despite its"), "{stderr}");
    assert!(
        stderr
            .contains(r#"warning: not served over gRPC: channel left out: package "etcd" channel "stable""#),
        "{stderr}"
    );
    assert!(stderr.contains(r#"package "etcd" left out"#), "{stderr}");

    // --strict refuses it, as opm serve does.
    let strict = kubectl_olm(&[
        "catalog",
        "serve",
        dir.path().to_str().expect("utf-8"),
        "--grpc",
        "127.0.0.1:0",
        "--strict",
    ]);
    assert_eq!(strict.status.code(), Some(1));
    assert!(strict.stdout.is_empty());
}

/// Answers every connection with `response` and closes it; the base URL.
fn raw_server(response: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = listener.local_addr().expect("bound");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(response);
        }
    });
    format!("http://{addr}")
}

#[test]
fn a_server_that_is_not_catalogd_or_cuts_the_body_short_is_an_error_naming_it() {
    let cases: [(&[u8], &str); 4] = [
        (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 26\r\n\r\n<html>not a catalog</html>",
            "is not a catalogd catalog API: it answered Content-Type text/html",
        ),
        (
            b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 19\r\n\r\n404 page not found\n",
            "answered 404 Not Found: no catalog at this URL",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\nContent-Length: 900\r\n\r\n{\"schema\":\"olm.package\",\"name\":\"a\",\"defaultChannel\":\"s\"}\n",
            "is incomplete: the body broke off after",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\nConnection: close\r\n\r\n{\"schema\":\"olm.package\",\"name\":\"a\",\"defa",
            "is incomplete: the last line ends without a newline",
        ),
    ];
    for (response, expected) in cases {
        let base = raw_server(response);
        let output = kubectl_olm(&["catalog", "packages", "--catalog", &base]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{expected}: {stderr}");
        assert!(
            stderr.contains(&format!("failed to load catalog {base}")) && stderr.contains(expected),
            "{expected}: {stderr}"
        );
    }
    // Plain HTTP to a host that is not loopback is refused before any request.
    let output = kubectl_olm(&[
        "catalog",
        "packages",
        "--catalog",
        "http://catalogd.example:8080/catalogs/x",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("refusing plain HTTP to catalogd.example:8080")
            && stderr.contains("--insecure-registry catalogd.example:8080"),
        "{stderr}"
    );
}

#[test]
fn sigterm_stops_both_servers_gracefully() {
    let (mut server, _, base) = serve();
    let (status, _, _) = request(&[&format!("{base}/api/v1/all")]);
    assert_eq!(status, 200);
    let pid = server.0.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let exit = server.0.wait().expect("the server exits");
    assert!(exit.success(), "{exit:?}");
    let mut stderr = String::new();
    if let Some(mut err) = server.0.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    assert!(stderr.contains("stopped serving catalog"), "{stderr}");
}

/// A test CA (`name`.pem) and, signed by it, a certificate for 127.0.0.1 and localhost
/// (`name`-server.pem, `name`-server.key), in `dir`.
fn test_ca(dir: &Path, name: &str) {
    let cert = olm_test_support::https::openssl_serving_cert(&["127.0.0.1", "localhost"]);
    std::fs::write(dir.join(format!("{name}.pem")), cert.ca_pem).expect("written");
    std::fs::write(dir.join(format!("{name}-server.pem")), cert.cert_pem).expect("written");
    std::fs::write(dir.join(format!("{name}-server.key")), cert.key_pem).expect("written");
}

/// Python's `http.server` over TLS (`ssl`), serving the files of `root` as `application/jsonl`
/// on 127.0.0.1; the process and its port.
fn python_https(root: &Path, cert: &Path, key: &Path) -> (Running, u16) {
    const SCRIPT: &str = r#"
import http.server, os, ssl, sys
os.chdir(sys.argv[1])
class Handler(http.server.SimpleHTTPRequestHandler):
    def guess_type(self, path):
        return "application/jsonl"
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .arg(root)
        .arg(cert)
        .arg(key)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 is installed");
    let stdout = child.stdout.take().expect("piped stdout");
    let running = Running(child);
    let port = BufReader::new(stdout)
        .lines()
        .next()
        .expect("a port line")
        .expect("text")
        .trim()
        .parse()
        .expect("a port");
    (running, port)
}

/// `--catalog https://...` verifies the server with the system roots plus `--registry-ca`: read
/// from a real HTTPS server on loopback (Python's `http.server` with `ssl`, serving the body our
/// `catalog serve --http` answers) with a test CA, refused without the CA or with another one.
/// The controller's `sourceType: http` CatalogSources use the same client
/// (`catalogd::client::client`) with `olm-controller run --registry-ca`.
#[test]
fn https_catalogs_are_verified_with_the_registry_ca() {
    let dir = tempfile::tempdir().expect("a temp dir");
    test_ca(dir.path(), "ca");
    test_ca(dir.path(), "other");
    let webroot = dir.path().join("www");
    std::fs::create_dir_all(webroot.join("catalogs/olm/test/api/v1")).expect("mkdir");
    {
        let (_server, _grpc, base) = serve();
        let (status, _, body) = request(&[&format!("{base}/api/v1/all")]);
        assert_eq!(status, 200);
        std::fs::write(webroot.join("catalogs/olm/test/api/v1/all"), body).expect("written");
    }
    let (_https, port) = python_https(
        &webroot,
        &dir.path().join("ca-server.pem"),
        &dir.path().join("ca-server.key"),
    );
    let url = format!("https://127.0.0.1:{port}/catalogs/olm/test");
    let ca = dir.path().join("ca.pem");
    let other = dir.path().join("other.pem");
    let packages = |extra: &[&str]| {
        let mut args = vec!["catalog", "packages", "-o", "name", "--catalog", &url];
        args.extend_from_slice(extra);
        kubectl_olm(&args)
    };
    let trusted = packages(&["--registry-ca", ca.to_str().expect("utf-8")]);
    assert!(
        trusted.status.success(),
        "{}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    let expected = kubectl_olm(&[
        "catalog",
        "packages",
        "-o",
        "name",
        "--catalog",
        root().join("catalog").to_str().expect("utf-8"),
    ]);
    assert_eq!(trusted.stdout, expected.stdout);
    for (what, output) in [
        ("no CA", packages(&[])),
        (
            "another CA",
            packages(&["--registry-ca", other.to_str().expect("utf-8")]),
        ),
    ] {
        assert_eq!(output.status.code(), Some(1), "{what}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&url), "{what}: {stderr}");
        assert!(
            stderr.to_ascii_lowercase().contains("certificate"),
            "{what}: {stderr}"
        );
    }
}
