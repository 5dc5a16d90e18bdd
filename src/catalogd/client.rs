//! client: reads a whole catalog from a catalogd HTTP API (`GET BASE/api/v1/all`) into the same
//! [`DeclarativeConfig`] the directory loader produces, with `reqwest`.
//!
//! - **URLs.** `BASE` is the catalog's base URL (a ClusterCatalog's `status.urls.base`, or
//!   `http://HOST:PORT` of `kubectl olm catalog serve --http`); a URL already ending in
//!   `/api/v1/all` is used as is. `https://` is verified against the system roots plus an
//!   optional CA bundle. Plain `http://` is refused ([`ClientError::PlainHttp`]) unless the host
//!   is loopback (`localhost`, `127.0.0.0/8`, `::1`) or `HOST:PORT` is listed as insecure (the
//!   `--insecure-registry` list the image pulls use), so a catalog never crosses a network in the
//!   clear by accident. Redirects are not followed (they would bypass that rule); one is an error
//!   naming the target.
//! - **Conditional GET.** With the `Last-Modified` of the catalog read before, the request says
//!   `If-Modified-Since` and a `304` is [`Fetched::NotModified`]: keep what you have.
//! - **gzip.** The request accepts gzip; a gzipped body is decoded here (flate2), capped like a
//!   plain one ([`ClientOptions::max_body`]).
//! - **Bad servers.** A status other than 200/304, a `Content-Type` that is not JSON lines (an
//!   HTML page), a body that breaks off (shorter than its `Content-Length`, a cut gzip stream, or
//!   a last line without its newline: catalogd ends every line with one) or that decodes to no
//!   blob at all is an error naming the URL and what was wrong.

use std::{io::Read as _, net::IpAddr, time::Duration};

use reqwest::{StatusCode, Url, header};

use crate::catalog::declcfg::{DeclarativeConfig, DecodeError};

/// The path of the whole catalog under a base URL.
pub const ALL_PATH: &str = "/api/v1/all";

/// How the client connects and what it accepts.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// PEM CA certificates trusted besides the system roots.
    pub ca_bundle: Option<Vec<u8>>,
    /// `HOST:PORT`s that may be spoken to over plain HTTP (besides loopback).
    pub insecure: Vec<String>,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// How long the server may stay silent while answering.
    pub read_timeout: Duration,
    /// Largest body accepted, after decompression.
    pub max_body: u64,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            ca_bundle: None,
            insecure: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(60),
            max_body: 2 << 30,
        }
    }
}

/// A catalog read.
#[derive(Debug)]
pub struct Catalog {
    /// The URL read (`.../api/v1/all`).
    pub url: String,
    /// The blobs.
    pub config: DeclarativeConfig,
    /// Lines that did not decode as blobs.
    pub problems: Vec<DecodeError>,
    /// The `Last-Modified` the server sent, for the next conditional GET.
    pub last_modified: Option<String>,
}

/// What a GET returned.
#[derive(Debug)]
pub enum Fetched {
    /// `304`: the catalog has not changed since the `If-Modified-Since` sent.
    NotModified,
    /// A catalog.
    Catalog(Catalog),
}

/// Why a catalog could not be read. Every variant names the URL.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Not a URL this client reads.
    #[error(
        "{url:?} is not a catalog URL: {reason}; give the catalog's base URL, e.g. https://catalogd-service.olmv1-system.svc/catalogs/NAME"
    )]
    InvalidUrl {
        /// The text given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Plain HTTP to a host that is neither loopback nor listed as insecure.
    #[error(
        "refusing plain HTTP to {host_port} ({url}): use https://, or allow it with --insecure-registry {host_port}"
    )]
    PlainHttp {
        /// The URL.
        url: String,
        /// `HOST:PORT`.
        host_port: String,
    },
    /// The HTTP client could not be built (a bad CA bundle).
    #[error("failed to set up the HTTP client: {message}; pass a PEM file of CA certificates")]
    Setup {
        /// What went wrong.
        message: String,
    },
    /// No answer in time.
    #[error("catalog server {url} did not answer in time")]
    Timeout {
        /// The URL.
        url: String,
        /// The client error.
        #[source]
        source: reqwest::Error,
    },
    /// The server could not be reached (or TLS failed).
    #[error(
        "cannot reach the catalog server at {url}: is catalogd (or `kubectl olm catalog serve --http`) listening there? \
         (a private CA needs --registry-ca FILE)"
    )]
    Connect {
        /// The URL.
        url: String,
        /// The client error.
        #[source]
        source: reqwest::Error,
    },
    /// A status other than 200 or 304.
    #[error("catalog server {url} answered {status}: {hint}")]
    Status {
        /// The URL.
        url: String,
        /// The status line.
        status: String,
        /// What it means.
        hint: String,
    },
    /// The answer is not JSON lines.
    #[error(
        "{url} is not a catalogd catalog API: it answered {what}, not application/jsonl lines of FBC blobs"
    )]
    NotCatalogd {
        /// The URL.
        url: String,
        /// What came instead.
        what: String,
    },
    /// The body broke off or could not be decoded.
    #[error("the catalog from {url} is incomplete: {what}")]
    Truncated {
        /// The URL.
        url: String,
        /// What happened.
        what: String,
    },
    /// The body is larger than allowed.
    #[error("the catalog from {url} is larger than {limit} bytes; refusing it")]
    TooLarge {
        /// The URL.
        url: String,
        /// The cap.
        limit: u64,
    },
}

/// `localhost`, `127.0.0.0/8` or `::1` (`host` as [`Url::host_str`] writes it).
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The `.../api/v1/all` URL of the catalog at `base`, once the scheme and plain-HTTP rules pass
/// (see the module docs).
///
/// # Errors
/// [`ClientError::InvalidUrl`], [`ClientError::PlainHttp`].
pub fn all_url(base: &str, insecure: &[String]) -> Result<Url, ClientError> {
    let invalid = |reason: &str| ClientError::InvalidUrl {
        url: base.to_owned(),
        reason: reason.to_owned(),
    };
    let mut url = Url::parse(base.trim()).map_err(|e| invalid(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("the scheme must be https:// (or http:// for loopback)"));
    }
    let Some(host) = url.host_str().map(str::to_owned) else {
        return Err(invalid("it names no host"));
    };
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid("a base URL has no query or fragment"));
    }
    if url.scheme() == "http" && !is_loopback(&host) {
        let host_port =
            format!("{}:{}", host, url.port_or_known_default().unwrap_or(80)).to_ascii_lowercase();
        let host_port = host_port.replace(['[', ']'], "");
        let listed = insecure
            .iter()
            .any(|i| i.replace(['[', ']'], "").eq_ignore_ascii_case(&host_port));
        if !listed {
            return Err(ClientError::PlainHttp {
                url: base.to_owned(),
                host_port,
            });
        }
    }
    if !url.path().ends_with(ALL_PATH) {
        let path = format!("{}{ALL_PATH}", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    Ok(url)
}

/// A client for `options` (no redirects; gzip decoded by us).
///
/// # Errors
/// [`ClientError::Setup`] when the CA bundle holds no certificate.
pub fn client(options: &ClientOptions) -> Result<reqwest::Client, ClientError> {
    // reqwest needs a process-wide rustls provider; ring is the one kube already uses. A second
    // install is refused by rustls and harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("olm-rs/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(options.connect_timeout)
        .read_timeout(options.read_timeout);
    if let Some(pem) = &options.ca_bundle {
        let setup = |message: String| ClientError::Setup { message };
        let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| setup(e.to_string()))?;
        if certs.is_empty() {
            return Err(setup("the CA bundle holds no PEM certificate".to_owned()));
        }
        builder = builder.tls_certs_merge(certs);
    }
    builder.build().map_err(|e| ClientError::Setup {
        message: operator_runtime::error_chain(&e),
    })
}

fn status_hint(status: StatusCode) -> String {
    match status.as_u16() {
        404 => "no catalog at this URL; give the catalog's base URL (a ClusterCatalog's status.urls.base, \
                or http://HOST:PORT of kubectl olm catalog serve --http)"
            .to_owned(),
        301 | 302 | 303 | 307 | 308 => "redirects are not followed; use the URL it points to".to_owned(),
        401 | 403 => "the server wants credentials, which this client does not send".to_owned(),
        503 => {
            "the server is not ready (catalogd serves a catalog once it is unpacked); try again".to_owned()
        }
        _ => "expected 200 with the catalog".to_owned(),
    }
}

/// Reads the body, at most `limit` bytes.
async fn read_body(url: &str, response: &mut reqwest::Response, limit: u64) -> Result<Vec<u8>, ClientError> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                body.extend_from_slice(&chunk);
                if body.len() as u64 > limit {
                    return Err(ClientError::TooLarge {
                        url: url.to_owned(),
                        limit,
                    });
                }
            }
            Ok(None) => return Ok(body),
            Err(err) if err.is_timeout() => {
                return Err(ClientError::Timeout {
                    url: url.to_owned(),
                    source: err,
                });
            }
            Err(err) => {
                return Err(ClientError::Truncated {
                    url: url.to_owned(),
                    what: format!(
                        "the body broke off after {} bytes ({})",
                        body.len(),
                        operator_runtime::error_chain(&err)
                    ),
                });
            }
        }
    }
}

/// Decodes a body: gunzips it when it says so, checks the lines are whole, and reads the blobs.
///
/// # Errors
/// [`ClientError::Truncated`], [`ClientError::TooLarge`], [`ClientError::NotCatalogd`].
pub fn decode_body(
    url: &str,
    body: Vec<u8>,
    gzipped: bool,
    limit: u64,
) -> Result<(DeclarativeConfig, Vec<DecodeError>), ClientError> {
    let truncated = |what: String| ClientError::Truncated {
        url: url.to_owned(),
        what,
    };
    let body = if gzipped {
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&body[..])
            .take(limit.saturating_add(1))
            .read_to_end(&mut plain)
            .map_err(|e| truncated(format!("the gzip stream cannot be decoded ({e})")))?;
        if plain.len() as u64 > limit {
            return Err(ClientError::TooLarge {
                url: url.to_owned(),
                limit,
            });
        }
        plain
    } else {
        body
    };
    if body.is_empty() {
        return Ok((DeclarativeConfig::default(), Vec::new()));
    }
    let text = String::from_utf8(body).map_err(|e| ClientError::NotCatalogd {
        url: url.to_owned(),
        what: format!(
            "bytes that are not UTF-8 text (at offset {})",
            e.utf8_error().valid_up_to()
        ),
    })?;
    if !text.ends_with('\n') {
        let last = text.rsplit('\n').next().unwrap_or_default();
        return Err(truncated(format!(
            "the last line ends without a newline after {} characters (catalogd ends every line with one)",
            last.chars().count()
        )));
    }
    let (config, problems) = DeclarativeConfig::from_str_with_problems(url, &text);
    if config.is_empty() {
        let start: String = text.trim_start().chars().take(40).collect();
        return Err(ClientError::NotCatalogd {
            url: url.to_owned(),
            what: format!("a body without any FBC blob (it starts with {start:?})"),
        });
    }
    Ok((config, problems))
}

fn content_type_ok(content_type: Option<&str>) -> bool {
    let Some(ct) = content_type else { return true };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    matches!(
        essence.as_str(),
        "application/jsonl" | "application/x-ndjson" | "application/json" | "application/x-jsonlines"
    ) || essence.is_empty()
}

/// GETs the whole catalog at `base` (see the module docs), conditionally when
/// `if_modified_since` is given.
///
/// # Errors
/// Every [`ClientError`].
pub async fn fetch(
    client: &reqwest::Client,
    base: &str,
    options: &ClientOptions,
    if_modified_since: Option<&str>,
) -> Result<Fetched, ClientError> {
    let url = all_url(base, &options.insecure)?;
    let shown = url.to_string();
    let mut request = client.get(url).header(header::ACCEPT_ENCODING, "gzip");
    if let Some(since) = if_modified_since {
        request = request.header(header::IF_MODIFIED_SINCE, since);
    }
    let mut response = request.send().await.map_err(|source| {
        if source.is_timeout() {
            ClientError::Timeout {
                url: shown.clone(),
                source,
            }
        } else {
            ClientError::Connect {
                url: shown.clone(),
                source,
            }
        }
    })?;
    let status = response.status();
    if status == StatusCode::NOT_MODIFIED && if_modified_since.is_some() {
        return Ok(Fetched::NotModified);
    }
    if status != StatusCode::OK {
        let mut hint = status_hint(status);
        if let Some(to) = response
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
        {
            hint = format!("redirected to {to}; {hint}");
        }
        return Err(ClientError::Status {
            url: shown,
            status: status.to_string(),
            hint,
        });
    }
    let header_text = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v: &header::HeaderValue| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = header_text(header::CONTENT_TYPE);
    if !content_type_ok(content_type.as_deref()) {
        return Err(ClientError::NotCatalogd {
            url: shown,
            what: format!("Content-Type {}", content_type.unwrap_or_default()),
        });
    }
    let last_modified = header_text(header::LAST_MODIFIED);
    let gzipped = header_text(header::CONTENT_ENCODING).is_some_and(|e| e.eq_ignore_ascii_case("gzip"));
    let body = read_body(&shown, &mut response, options.max_body).await?;
    let (config, problems) = decode_body(&shown, body, gzipped, options.max_body)?;
    Ok(Fetched::Catalog(Catalog {
        url: shown,
        config,
        problems,
        last_modified,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_get_the_all_path_and_plain_http_is_only_for_loopback_or_listed_hosts() {
        let url = |text: &str| all_url(text, &["catalogs.local:8080".to_owned()]).map(|u| u.to_string());
        assert_eq!(
            url("https://catalogd-service.olmv1-system.svc/catalogs/operatorhubio").unwrap(),
            "https://catalogd-service.olmv1-system.svc/catalogs/operatorhubio/api/v1/all"
        );
        assert_eq!(
            url("https://c.example/catalogs/x/").unwrap(),
            "https://c.example/catalogs/x/api/v1/all"
        );
        assert_eq!(
            url("https://c.example/catalogs/x/api/v1/all").unwrap(),
            "https://c.example/catalogs/x/api/v1/all"
        );
        assert_eq!(
            url("http://127.0.0.1:8080").unwrap(),
            "http://127.0.0.1:8080/api/v1/all"
        );
        assert_eq!(
            url("http://localhost:1/c").unwrap(),
            "http://localhost:1/c/api/v1/all"
        );
        assert_eq!(url("http://[::1]:9").unwrap(), "http://[::1]:9/api/v1/all");
        assert_eq!(
            url("http://catalogs.local:8080").unwrap(),
            "http://catalogs.local:8080/api/v1/all"
        );
        let err = url("http://catalogs.example/c").unwrap_err().to_string();
        assert!(
            err.contains("refusing plain HTTP to catalogs.example:80") && err.contains("--insecure-registry"),
            "{err}"
        );
        for bad in ["ftp://x/y", "catalog", "https://x/c?schema=a", "https://x/c#f"] {
            let err = url(bad).unwrap_err().to_string();
            assert!(err.contains("is not a catalog URL"), "{bad}: {err}");
        }
    }

    #[test]
    fn bodies_are_checked_for_whole_lines_gzip_and_blobs() {
        let line = "{\"schema\":\"olm.package\",\"name\":\"p\",\"defaultChannel\":\"s\"}\n";
        let (config, problems) = decode_body("u", line.as_bytes().to_vec(), false, 1 << 20).unwrap();
        assert_eq!(config.packages.len(), 1);
        assert!(problems.is_empty());
        let gz = super::super::content::gzip(line.as_bytes()).unwrap();
        let (config, _) = decode_body("u", gz.clone(), true, 1 << 20).unwrap();
        assert_eq!(config.packages.len(), 1);

        let cut = decode_body("u", line.as_bytes()[..20].to_vec(), false, 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            cut.contains("incomplete") && cut.contains("without a newline"),
            "{cut}"
        );
        let cut_gz = decode_body("u", gz[..gz.len() / 2].to_vec(), true, 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(cut_gz.contains("gzip stream cannot be decoded"), "{cut_gz}");
        let html = decode_body("u", b"<html><body>hello</body></html>\n".to_vec(), false, 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            html.contains("not a catalogd catalog API") && html.contains("<html>"),
            "{html}"
        );
        let big = decode_body("u", gz, true, 10).unwrap_err().to_string();
        assert!(big.contains("larger than 10 bytes"), "{big}");
    }

    #[test]
    fn only_json_content_types_are_read() {
        assert!(content_type_ok(Some("application/jsonl")));
        assert!(content_type_ok(Some("application/x-ndjson; charset=utf-8")));
        assert!(content_type_ok(None));
        assert!(!content_type_ok(Some("text/html; charset=utf-8")));
        assert!(!content_type_ok(Some("text/plain")));
    }
}
