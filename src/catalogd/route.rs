//! route: one request in, one response out, as catalogd's storage handler answers (pure; the
//! server around it only moves bytes).
//!
//! What catalogd does, and so what we do:
//! - only `GET` and `HEAD`; any other method is `405 Method Not Allowed`, whatever the path;
//! - `/api/v1/all`: the whole catalog (`Content-Type: application/jsonl`, `Last-Modified`);
//! - `/api/v1/metas?schema=&package=&name=`: the blobs whose fields equal the ones given (an
//!   empty or absent one matches all; none at all means the whole catalog); any other query
//!   parameter is `400 Bad Request`;
//! - `If-Modified-Since` not older than the catalog is `304 Not Modified` (no body, no
//!   `Content-Type`), `If-Unmodified-Since` older than it is `412`, as Go's `http.ServeContent`
//!   decides (dates compared to the second; `If-Modified-Since` is ignored beside `If-None-Match`);
//! - `Accept-Encoding: gzip` gets a gzipped body (`Content-Encoding: gzip`) when the body is at
//!   least 1400 bytes (catalogd's `gzhttp` wrapper); responses that could be compressed say
//!   `Vary: Accept-Encoding`;
//! - every other path is `404 page not found` (Go's mux).
//!
//! Many catalogs on one port ([`Catalogs`], what `olm-controller run --serve-http` serves): as
//! catalogd serves every ClusterCatalog under `/catalogs/NAME/api/v1/...` (its `status.urls.base`
//! being `.../catalogs/NAME`), a CatalogSource is served under `/catalogs/NAMESPACE/NAME/api/v1/...`,
//! and one of the global catalog namespace (which, like a ClusterCatalog, serves every namespace)
//! also under catalogd's own `/catalogs/NAME/api/v1/...`. A client given the base URL
//! (`--catalog http://HOST:PORT/catalogs/NS/NAME`, a `sourceType: http` `spec.address`) appends
//! `/api/v1/all` as it does for catalogd. A catalog not loaded (unknown, or refused: its status says
//! why) is `404`.
//!
//! Not done: byte ranges (`Range`, which `http.ServeContent` honours on `/api/v1/all`); a range
//! request gets the whole body with `200`, which HTTP allows.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use super::content::{Content, GZIP_MIN_SIZE, gzip};

/// The catalogd content type.
pub const JSONL: &str = "application/jsonl";
const TEXT: &str = "text/plain; charset=utf-8";

/// The parts of a request routing looks at.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request<'a> {
    /// The method, as sent.
    pub method: &'a str,
    /// The path, without the query.
    pub path: &'a str,
    /// The raw query string (after `?`), if any.
    pub query: Option<&'a str>,
    /// `Accept-Encoding`.
    pub accept_encoding: Option<&'a str>,
    /// `If-Modified-Since`.
    pub if_modified_since: Option<&'a str>,
    /// `If-Unmodified-Since`.
    pub if_unmodified_since: Option<&'a str>,
    /// Whether `If-None-Match` was sent (it overrides `If-Modified-Since`).
    pub if_none_match: bool,
}

/// A routed response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Headers besides `Content-Length` (the server sets it from the body).
    pub headers: Vec<(&'static str, String)>,
    /// The body (the server sends none to `HEAD`).
    pub body: Bytes,
}

impl Response {
    /// The value of header `name` (lower case), if set.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn text(status: u16, body: &'static str) -> Response {
    Response {
        status,
        headers: vec![
            ("content-type", TEXT.to_owned()),
            ("x-content-type-options", "nosniff".to_owned()),
        ],
        body: Bytes::from_static(body.as_bytes()),
    }
}

/// Decodes one `application/x-www-form-urlencoded` component (`+` is a space, `%XX` a byte);
/// `None` for a malformed escape, as Go's `url.ParseQuery` drops such a pair.
fn unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The query's pairs, as Go's `url.ParseQuery` reads them (empty segments and malformed pairs
/// dropped).
fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|segment| !segment.is_empty() && !segment.contains(';'))
        .filter_map(|segment| {
            let (key, value) = segment.split_once('=').unwrap_or((segment, ""));
            Some((unescape(key)?, unescape(value)?))
        })
        .filter(|(key, _)| !key.is_empty())
        .collect()
}

/// Whether `Accept-Encoding` accepts gzip (`gzip` or `*`, with a non-zero quality).
fn accepts_gzip(header: Option<&str>) -> bool {
    let Some(header) = header else { return false };
    let mut gzip = None;
    let mut any = None;
    for item in header.split(',') {
        let mut parts = item.split(';').map(str::trim);
        let coding = parts.next().unwrap_or_default().to_ascii_lowercase();
        let quality = parts
            .find_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
            .and_then(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        match coding.as_str() {
            "gzip" | "x-gzip" => gzip = Some(quality > 0.0),
            "*" => any = Some(quality > 0.0),
            _ => {}
        }
    }
    gzip.or(any).unwrap_or(false)
}

/// `modified`, to the second (what `Last-Modified` can say).
fn to_second(modified: SystemTime) -> SystemTime {
    let secs = modified.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// The `Last-Modified` value of `modified`.
#[must_use]
pub fn http_date(modified: SystemTime) -> String {
    httpdate::fmt_http_date(modified)
}

/// Whether the conditional headers end the request: `Some(304 or 412)`, as Go decides.
fn precondition(req: &Request<'_>, modified: SystemTime) -> Option<u16> {
    if modified <= UNIX_EPOCH {
        return None;
    }
    let modified = to_second(modified);
    if let Some(since) = req
        .if_unmodified_since
        .and_then(|t| httpdate::parse_http_date(t).ok())
        && modified > since
    {
        return Some(412);
    }
    if !req.if_none_match
        && let Some(since) = req
            .if_modified_since
            .and_then(|t| httpdate::parse_http_date(t).ok())
        && modified <= since
    {
        return Some(304);
    }
    None
}

/// A `200` with `body`, gzipped when asked for and large enough (`precompressed` is the gzip of
/// `body` when the caller has one).
fn jsonl(req: &Request<'_>, modified: SystemTime, body: Bytes, precompressed: Option<&Bytes>) -> Response {
    let mut headers = vec![
        ("content-type", JSONL.to_owned()),
        ("last-modified", http_date(modified)),
        ("vary", "Accept-Encoding".to_owned()),
    ];
    let body = if body.len() >= GZIP_MIN_SIZE && accepts_gzip(req.accept_encoding) {
        let compressed = match precompressed {
            Some(gz) => Some(gz.clone()),
            None => gzip(&body).ok().map(Bytes::from),
        };
        match compressed {
            Some(gz) => {
                headers.push(("content-encoding", "gzip".to_owned()));
                gz
            }
            None => body,
        }
    } else {
        body
    };
    Response {
        status: 200,
        headers,
        body,
    }
}

fn not_modified(status: u16, modified: SystemTime) -> Response {
    Response {
        status,
        headers: vec![("last-modified", http_date(modified))],
        body: Bytes::new(),
    }
}

/// Answers one request from `content`.
#[must_use]
pub fn route(content: &Content, req: &Request<'_>) -> Response {
    if req.method != "GET" && req.method != "HEAD" {
        return text(405, "Method Not Allowed\n");
    }
    let modified = content.modified();
    match req.path {
        "/api/v1/all" => match precondition(req, modified) {
            Some(status) => not_modified(status, modified),
            None => jsonl(req, modified, content.all().clone(), content.all_gzipped()),
        },
        "/api/v1/metas" => {
            let pairs = query_pairs(req.query.unwrap_or_default());
            if pairs
                .iter()
                .any(|(key, _)| !matches!(key.as_str(), "schema" | "package" | "name"))
            {
                return text(400, "400 Bad Request\n");
            }
            if let Some(status) = precondition(req, modified) {
                return not_modified(status, modified);
            }
            // The first value of each parameter counts, as `url.Values.Get` reads it.
            let first = |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| key == name)
                    .map_or("", |(_, value)| value.as_str())
            };
            let (schema, package, name) = (first("schema"), first("package"), first("name"));
            let whole = schema.is_empty() && package.is_empty() && name.is_empty();
            let body = content.metas(schema, package, name);
            jsonl(
                req,
                modified,
                body,
                if whole { content.all_gzipped() } else { None },
            )
        }
        _ => text(404, "404 page not found\n"),
    }
}

/// The catalogs a many-catalog server answers for.
pub trait Catalogs {
    /// The global catalog namespace (its catalogs are also served at `/catalogs/NAME`).
    fn global_namespace(&self) -> &str;
    /// The content of CatalogSource `namespace/name`, when it is loaded.
    fn content(&self, namespace: &str, name: &str) -> Option<std::sync::Arc<Content>>;
}

/// Splits `/catalogs/[NAMESPACE/]NAME/api/...` into (namespace, name, `/api/...`); `None` for any
/// other path. `NAME/api/v1/...` is the global form, so a namespace named like a catalog followed
/// by `api` stays unambiguous.
#[must_use]
pub fn catalog_path(path: &str) -> Option<(Option<&str>, &str, &str)> {
    let rest = path.strip_prefix("/catalogs/")?;
    let (first, after) = rest.split_once('/')?;
    if first.is_empty() {
        return None;
    }
    if after.starts_with("api/v1/") {
        return Some((None, first, &rest[first.len()..]));
    }
    let (second, tail) = after.split_once('/')?;
    if second.is_empty() || !tail.starts_with("api/") {
        return None;
    }
    Some((Some(first), second, &after[second.len()..]))
}

/// Answers one request for one of `catalogs` (see the module doc for the paths).
#[must_use]
pub fn route_catalogs(catalogs: &dyn Catalogs, req: &Request<'_>) -> Response {
    if req.method != "GET" && req.method != "HEAD" {
        return text(405, "Method Not Allowed\n");
    }
    let Some((namespace, name, rest)) = catalog_path(req.path) else {
        return text(404, "404 page not found\n");
    };
    let namespace = namespace.unwrap_or_else(|| catalogs.global_namespace());
    match catalogs.content(namespace, name) {
        Some(content) => route(&content, &Request { path: rest, ..*req }),
        None => text(404, "404 page not found\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_paths_name_a_namespaced_or_a_global_catalog() {
        assert_eq!(
            catalog_path("/catalogs/ns/cat/api/v1/all"),
            Some((Some("ns"), "cat", "/api/v1/all"))
        );
        assert_eq!(
            catalog_path("/catalogs/cat/api/v1/metas"),
            Some((None, "cat", "/api/v1/metas"))
        );
        // A CatalogSource named `api` in namespace `x`, and one named `api` in the global one.
        assert_eq!(
            catalog_path("/catalogs/x/api/api/v1/all"),
            Some((Some("x"), "api", "/api/v1/all"))
        );
        assert_eq!(
            catalog_path("/catalogs/api/api/v1/all"),
            Some((None, "api", "/api/v1/all"))
        );
        for path in [
            "/api/v1/all",
            "/catalogs/",
            "/catalogs/ns",
            "/catalogs//x/api/v1/all",
            "/catalogs/ns/cat/x",
        ] {
            assert_eq!(catalog_path(path), None, "{path}");
        }
    }

    struct Two(std::sync::Arc<Content>);

    impl Catalogs for Two {
        fn global_namespace(&self) -> &str {
            "olm"
        }
        fn content(&self, namespace: &str, name: &str) -> Option<std::sync::Arc<Content>> {
            ((namespace, name) == ("olm", "global") || (namespace, name) == ("team", "mine"))
                .then(|| std::sync::Arc::clone(&self.0))
        }
    }

    #[test]
    fn many_catalogs_are_routed_by_namespace_and_name_and_unknown_ones_are_404() {
        let (cfg, _) = crate::catalog::DeclarativeConfig::from_str_with_problems(
            "c.json",
            r#"{"schema":"olm.package","name":"a","defaultChannel":"s"}"#,
        );
        let two = Two(std::sync::Arc::new(
            Content::from_config(&cfg, UNIX_EPOCH + Duration::from_secs(9)).unwrap(),
        ));
        let get = |path| {
            route_catalogs(
                &two,
                &Request {
                    method: "GET",
                    path,
                    ..Request::default()
                },
            )
        };
        for path in [
            "/catalogs/team/mine/api/v1/all",
            "/catalogs/olm/global/api/v1/all",
            "/catalogs/global/api/v1/all",
        ] {
            let r = get(path);
            assert_eq!(r.status, 200, "{path}");
            assert!(r.body.starts_with(b"{\"defaultChannel\""), "{path}");
        }
        assert_eq!(get("/catalogs/mine/api/v1/all").status, 404);
        assert_eq!(get("/catalogs/team/other/api/v1/all").status, 404);
        assert_eq!(get("/api/v1/all").status, 404);
        assert_eq!(get("/catalogs/team/mine/api/v1/nothing").status, 404);
        let post = route_catalogs(
            &two,
            &Request {
                method: "POST",
                path: "/catalogs/team/mine/api/v1/all",
                ..Request::default()
            },
        );
        assert_eq!(post.status, 405);
    }
    use crate::catalog::DeclarativeConfig;

    fn content(bundles: usize) -> Content {
        let mut text = String::from(r#"{"schema":"olm.package","name":"p","defaultChannel":"s"}"#);
        for i in 0..bundles {
            text.push_str(&format!(
                r#"{{"schema":"olm.bundle","package":"p","name":"p.v{i}","image":"r/p:{i}","properties":[]}}"#
            ));
        }
        let (cfg, problems) = DeclarativeConfig::from_str_with_problems("c.json", &text);
        assert!(problems.is_empty(), "{problems:?}");
        let loaded = UNIX_EPOCH + Duration::from_secs(1_700_000_000) + Duration::from_millis(300);
        Content::from_config(&cfg, loaded).unwrap()
    }

    fn get<'a>(path: &'a str, query: Option<&'a str>) -> Request<'a> {
        Request {
            method: "GET",
            path,
            query,
            ..Request::default()
        }
    }

    #[test]
    fn all_serves_json_lines_with_last_modified_and_head_the_same_headers() {
        let content = content(2);
        let response = route(&content, &get("/api/v1/all", None));
        assert_eq!(response.status, 200);
        assert_eq!(response.header("content-type"), Some("application/jsonl"));
        assert_eq!(
            response.header("last-modified"),
            Some("Tue, 14 Nov 2023 22:13:20 GMT")
        );
        assert_eq!(response.header("content-encoding"), None);
        assert_eq!(&response.body, content.all());
        let head = route(
            &content,
            &Request {
                method: "HEAD",
                ..get("/api/v1/all", None)
            },
        );
        assert_eq!(head.headers, response.headers);
    }

    #[test]
    fn if_modified_since_not_older_is_304_and_older_is_200() {
        let content = content(1);
        let at = |since: &'static str| {
            route(
                &content,
                &Request {
                    if_modified_since: Some(since),
                    ..get("/api/v1/all", None)
                },
            )
        };
        // The same second (Last-Modified drops the milliseconds) and later: not modified.
        let same = at("Tue, 14 Nov 2023 22:13:20 GMT");
        assert_eq!(same.status, 304);
        assert!(same.body.is_empty() && same.header("content-type").is_none());
        assert_eq!(at("Wed, 15 Nov 2023 00:00:00 GMT").status, 304);
        assert_eq!(at("Tue, 14 Nov 2023 22:13:19 GMT").status, 200);
        assert_eq!(at("not a date").status, 200);
        let with_etag = route(
            &content,
            &Request {
                if_modified_since: Some("Wed, 15 Nov 2023 00:00:00 GMT"),
                if_none_match: true,
                ..get("/api/v1/all", None)
            },
        );
        assert_eq!(with_etag.status, 200);
        let unmodified = route(
            &content,
            &Request {
                if_unmodified_since: Some("Mon, 13 Nov 2023 00:00:00 GMT"),
                ..get("/api/v1/metas", None)
            },
        );
        assert_eq!(unmodified.status, 412);
    }

    #[test]
    fn gzip_is_used_when_accepted_and_the_body_is_large_enough() {
        let big = content(40);
        let small = content(1);
        let asked = |c: &Content, encoding: &'static str| {
            route(
                c,
                &Request {
                    accept_encoding: Some(encoding),
                    ..get("/api/v1/all", None)
                },
            )
        };
        let gz = asked(&big, "deflate, gzip;q=0.8");
        assert_eq!(gz.header("content-encoding"), Some("gzip"));
        assert_eq!(gz.header("vary"), Some("Accept-Encoding"));
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz.body[..]), &mut plain).unwrap();
        assert_eq!(plain, big.all().to_vec());
        assert_eq!(asked(&big, "gzip;q=0").header("content-encoding"), None);
        assert_eq!(asked(&big, "br").header("content-encoding"), None);
        assert_eq!(asked(&big, "*").header("content-encoding"), Some("gzip"));
        assert_eq!(asked(&small, "gzip").header("content-encoding"), None);
        // A filtered answer is compressed on the fly.
        let metas = route(
            &big,
            &Request {
                accept_encoding: Some("gzip"),
                ..get("/api/v1/metas", Some("schema=olm.bundle"))
            },
        );
        assert_eq!(metas.header("content-encoding"), Some("gzip"));
    }

    #[test]
    fn metas_filters_and_refuses_unknown_parameters_with_400() {
        let content = content(3);
        let body = |query: &'static str| {
            let r = route(&content, &get("/api/v1/metas", Some(query)));
            (r.status, String::from_utf8(r.body.to_vec()).unwrap())
        };
        let (status, text) = body("schema=olm.bundle&name=p.v1");
        assert_eq!(status, 200);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains(r#""name":"p.v1""#), "{text}");
        // Percent-escapes are decoded; the first value of a repeated parameter counts.
        let (_, text) = body("schema=olm%2Epackage&schema=olm.bundle");
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("olm.package"), "{text}");
        assert_eq!(body("").1.as_bytes(), &content.all()[..]);
        assert_eq!(body("schema=&package=").1.as_bytes(), &content.all()[..]);
        let (status, text) = body("version=1.0.0");
        assert_eq!((status, text.as_str()), (400, "400 Bad Request\n"));
        assert_eq!(body("schema=olm.bundle&Package=p").0, 400);
    }

    #[test]
    fn other_paths_are_404_and_other_methods_405() {
        let content = content(1);
        for path in [
            "/",
            "/api/v1/all/",
            "/api/v1",
            "/api/v2/all",
            "/catalogs/x/api/v1/all",
        ] {
            let r = route(&content, &get(path, None));
            assert_eq!(r.status, 404, "{path}");
            assert_eq!(&r.body[..], b"404 page not found\n");
        }
        for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
            for path in ["/api/v1/all", "/nowhere"] {
                let r = route(
                    &content,
                    &Request {
                        method,
                        ..get(path, None)
                    },
                );
                assert_eq!(r.status, 405, "{method} {path}");
            }
        }
    }

    #[test]
    fn accept_encoding_is_parsed_with_qualities() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("GZIP ; q=0.5")));
        assert!(!accepts_gzip(Some("gzip;q=0, *")));
        assert!(accepts_gzip(Some("br, *;q=0.1")));
        assert!(!accepts_gzip(Some("identity")));
        assert!(!accepts_gzip(None));
    }
}
