//! A small HTTPS server for tests that the API server calls: admission and conversion webhooks,
//! APIServices. It serves any listening socket (one made inside a pod network by
//! [`crate::pod_net::PodNetwork::bind_tcp`], or a loopback one) with a given certificate, and
//! answers every request with a handler the test supplies, so one server fits `/validate`,
//! `/mutate`, `/convert` or anything else.
//!
//! The rule it enforces: the server never outlives its test (dropping it stops it) and every
//! request it served is recorded, so a test can prove the API server really called it.
//!
//! HTTP/1.1 only (no ALPN, so Go's client speaks HTTP/1.1), keep-alive, bodies with
//! `Content-Length` (what Go's webhook client sends); a connection thread per client.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpsError {
    /// The certificate chain or key is not usable PEM.
    #[error("the serving {what} is not valid PEM: {detail}")]
    Pem {
        /// `certificate` or `key`.
        what: &'static str,
        /// The parser's error.
        detail: String,
    },
    /// rustls refused the certificate and key.
    #[error("the serving certificate and key do not make a TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// The listening socket could not be used.
    #[error("the listening socket: {0}")]
    Socket(#[from] std::io::Error),
}

/// One request the server answered.
#[derive(Debug, Clone)]
pub struct Request {
    /// `POST`, `GET`, ...
    pub method: String,
    /// The path with its query (`/validate?timeout=10s`).
    pub path: String,
    /// The body.
    pub body: Vec<u8>,
}

impl Request {
    /// The path without its query.
    pub fn path_only(&self) -> &str {
        self.path.split('?').next().unwrap_or_default()
    }

    /// The body as JSON (`Value::Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// The handler's answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    /// `200` with a JSON body.
    pub fn json(value: &Value) -> Self {
        Self {
            status: 200,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }

    /// A plain-text error.
    pub fn error(status: u16, message: &str) -> Self {
        Self {
            status,
            content_type: "text/plain",
            body: message.as_bytes().to_vec(),
        }
    }
}

/// What answers each request.
pub type Handler = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// The serving identity: a PEM certificate chain (leaf first) and its PEM private key.
#[derive(Debug, Clone)]
pub struct ServingCert {
    /// The leaf certificate (then any intermediates), PEM.
    pub cert_pem: String,
    /// The private key, PEM (PKCS#8, SEC1 or PKCS#1).
    pub key_pem: String,
    /// The CA that signed it, PEM: the `caBundle` for the API server.
    pub ca_pem: String,
}

/// A running server; dropping it stops accepting (open connections end when their client closes
/// them or after 30 s idle).
pub struct HttpsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    served: Arc<Mutex<Vec<Request>>>,
    accept: Option<JoinHandle<()>>,
}

impl HttpsServer {
    /// Serves `listener` with `cert`, answering with `handler`.
    pub fn start(listener: TcpListener, cert: &ServingCert, handler: Handler) -> Result<Self, HttpsError> {
        let chain = CertificateDer::pem_slice_iter(cert.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| HttpsError::Pem {
                what: "certificate",
                detail: e.to_string(),
            })?;
        let key = PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes()).map_err(|e| HttpsError::Pem {
            what: "key",
            detail: e.to_string(),
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()?
                .with_no_client_auth()
                .with_single_cert(chain, key)?,
        );
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(Mutex::new(Vec::new()));
        let accept = {
            let (stop, served) = (stop.clone(), served.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let (config, handler, served) = (config.clone(), handler.clone(), served.clone());
                            std::thread::spawn(move || {
                                if let Err(e) = serve(stream, config, &handler, &served) {
                                    eprintln!("https test server on {addr}: {e}");
                                }
                            });
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Err(e) => {
                            eprintln!("https test server on {addr}: accept: {e}");
                            std::thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            })
        };
        Ok(Self {
            addr,
            stop,
            served,
            accept: Some(accept),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request answered so far, oldest first.
    pub fn served(&self) -> Vec<Request> {
        self.served.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// Answers the requests of one connection until the client closes it.
fn serve(
    stream: TcpStream,
    config: Arc<rustls::ServerConfig>,
    handler: &Handler,
    served: &Mutex<Vec<Request>>,
) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let conn = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut tls = BufReader::new(rustls::StreamOwned::new(conn, stream));
    loop {
        let mut line = String::new();
        match tls.read_line(&mut line) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            // Idle keep-alive connections time out; a client that hangs up mid-way is not news.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::UnexpectedEof
                        | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or_default().to_owned(),
            parts.next().unwrap_or_default().to_owned(),
        );
        let mut length = 0usize;
        let mut chunked = false;
        loop {
            let mut header = String::new();
            if tls.read_line(&mut header)? == 0 {
                return Ok(());
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = value.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.parse().unwrap_or(0);
                } else if name.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = !value.eq_ignore_ascii_case("identity");
                }
            }
        }
        let reply = if chunked {
            Reply::error(411, "this test server needs a Content-Length")
        } else {
            let mut body = vec![0; length];
            tls.read_exact(&mut body)?;
            let request = Request { method, path, body };
            let reply = handler(&request);
            if let Ok(mut s) = served.lock() {
                s.push(request);
            }
            reply
        };
        let head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}\r\n",
            reply.status,
            if reply.status < 400 { "OK" } else { "Error" },
            reply.content_type,
            reply.body.len(),
            if chunked { "Connection: close\r\n" } else { "" },
        );
        let out = tls.get_mut();
        out.write_all(head.as_bytes())?;
        out.write_all(&reply.body)?;
        out.flush()?;
        if chunked {
            out.conn.send_close_notify();
            let _ = out.flush();
            return Ok(());
        }
    }
}

/// Sends one HTTPS request to `addr`, checking the server's certificate against `ca_pem` for
/// `server_name` (what the API server does for `<service>.<namespace>.svc`); returns the status
/// and the body. For tests that call a webhook or an operator endpoint directly.
pub fn request(
    addr: SocketAddr,
    server_name: &str,
    ca_pem: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> Result<(u16, Vec<u8>), HttpsError> {
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        let ca = ca.map_err(|e| HttpsError::Pem {
            what: "CA certificate",
            detail: e.to_string(),
        })?;
        roots.add(ca)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name =
        rustls::pki_types::ServerName::try_from(server_name.to_owned()).map_err(|e| HttpsError::Pem {
            what: "server name",
            detail: e.to_string(),
        })?;
    let conn = rustls::ClientConnection::new(Arc::new(config), name)?;
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut tls = rustls::StreamOwned::new(conn, stream);
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {server_name}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes())?;
    tls.write_all(body)?;
    tls.flush()?;
    let mut reader = BufReader::new(tls);
    let mut status_line = String::new();
    reader.read_line(&mut status_line)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP status line: {status_line:?}")))?;
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            break;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok((status, body))
}

/// The `AdmissionReview` answering `review` (an `admission.k8s.io/v1` request as the API server
/// sends it): allowed, or denied with `message` (the API server shows it to the client, prefixed
/// with the webhook's name) and HTTP-like `code` 403.
pub fn admission_review_reply(review: &Value, allowed: bool, message: &str) -> Value {
    let uid = review.pointer("/request/uid").cloned().unwrap_or(Value::Null);
    let mut response = json!({ "uid": uid, "allowed": allowed });
    if !allowed {
        response["status"] = json!({ "code": 403, "message": message });
    } else if !message.is_empty() {
        response["warnings"] = json!([message]);
    }
    json!({
        "apiVersion": review.get("apiVersion").cloned().unwrap_or_else(|| json!("admission.k8s.io/v1")),
        "kind": "AdmissionReview",
        "response": response,
    })
}

/// The `ConversionReview` answering `review` (an `apiextensions.k8s.io/v1` request as the API
/// server sends it for a CRD's conversion webhook): every object passed through `convert(object,
/// desiredAPIVersion)`, which must return it in the desired version (its `apiVersion` is set
/// here; `metadata` must stay as it was). The first error fails the whole review with its message.
pub fn conversion_review_reply(
    review: &Value,
    convert: impl Fn(&Value, &str) -> Result<Value, String>,
) -> Value {
    let request = review.get("request").cloned().unwrap_or(Value::Null);
    let desired = request
        .get("desiredAPIVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let objects = request
        .get("objects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let converted: Result<Vec<Value>, String> = objects
        .iter()
        .map(|o| {
            let mut out = convert(o, desired)?;
            out["apiVersion"] = json!(desired);
            Ok(out)
        })
        .collect();
    let uid = request.get("uid").cloned().unwrap_or(Value::Null);
    let response = match converted {
        Ok(objects) => json!({"uid": uid, "convertedObjects": objects, "result": {"status": "Success"}}),
        Err(message) => json!({"uid": uid, "result": {"status": "Failure", "message": message}}),
    };
    json!({
        "apiVersion": review.get("apiVersion").cloned().unwrap_or_else(|| json!("apiextensions.k8s.io/v1")),
        "kind": "ConversionReview",
        "response": response,
    })
}

/// A CA and a serving certificate for `dns_names` (the first is the subject's CN; a name that
/// parses as an IP address is an IP subject alternative name), made with the `openssl` CLI:
/// ECDSA P-256, valid one day, `serverAuth`. For a webhook behind a Service the name the API
/// server checks is `<service>.<namespace>.svc`.
///
/// # Panics
/// When `openssl` fails (the message names the step and its stderr).
pub fn openssl_serving_cert(dns_names: &[&str]) -> ServingCert {
    let dir = tempfile::tempdir().expect("a temporary directory for the certificates");
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("running openssl (apt-get install -y openssl): {e}"));
        assert!(
            out.status.success(),
            "openssl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let cn = dns_names.first().copied().unwrap_or("localhost");
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
    let (ca_key, ca_crt) = (path("ca.key"), path("ca.crt"));
    let mut args = vec!["req", "-x509", "-nodes", "-days", "1"];
    args.extend(ec);
    args.extend([
        "-keyout",
        &ca_key,
        "-out",
        &ca_crt,
        "-subj",
        "/CN=olm-rs test webhook CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    openssl(&args);
    let (key, csr, crt, ext) = (path("tls.key"), path("tls.csr"), path("tls.crt"), path("ext.cnf"));
    let subj = format!("/CN={cn}");
    let mut args = vec!["req", "-new", "-nodes"];
    args.extend(ec);
    args.extend(["-keyout", &key, "-out", &csr, "-subj", &subj]);
    openssl(&args);
    let san = dns_names
        .iter()
        .map(|n| {
            if n.parse::<std::net::IpAddr>().is_ok() {
                format!("IP:{n}")
            } else {
                format!("DNS:{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    std::fs::write(
        &ext,
        format!(
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
             extendedKeyUsage=serverAuth\nsubjectAltName={san}\n"
        ),
    )
    .expect("writing the extension file");
    openssl(&[
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        &ca_crt,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        &ext,
        "-out",
        &crt,
    ]);
    let read = |p: &str| std::fs::read_to_string(p).expect("reading what openssl wrote");
    ServingCert {
        cert_pem: read(&crt),
        key_pem: read(&key),
        ca_pem: read(&ca_crt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_sets_the_desired_version_or_fails_whole() {
        let review = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "u1", "desiredAPIVersion": "g/v1",
                "objects": [{"apiVersion": "g/v1alpha1", "spec": {"size": 1}}]}});
        let ok = conversion_review_reply(&review, |o, _| Ok(o.clone()));
        assert_eq!(ok["response"]["uid"], "u1");
        assert_eq!(ok["response"]["result"]["status"], "Success");
        assert_eq!(ok["response"]["convertedObjects"][0]["apiVersion"], "g/v1");
        let failed = conversion_review_reply(&review, |_, _| Err("no".to_owned()));
        assert_eq!(
            failed["response"]["result"],
            json!({"status": "Failure", "message": "no"})
        );
    }

    #[test]
    fn a_denial_carries_the_uid_and_the_message() {
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "abc"}});
        let reply = admission_review_reply(&review, false, "no");
        assert_eq!(reply["response"]["uid"], "abc");
        assert_eq!(reply["response"]["allowed"], false);
        assert_eq!(reply["response"]["status"]["message"], "no");
        assert_eq!(
            admission_review_reply(&review, true, "")["response"],
            json!({"uid": "abc", "allowed": true})
        );
    }
}
