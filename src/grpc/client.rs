//! client: reads a whole catalog from a registry server (`opm serve`, `kubectl-olm catalog serve`,
//! any `api.Registry`) into FBC blobs.
//!
//! The reading is what OLM's catalog-operator does: `ListPackages`, then `GetPackage` for each
//! (channels, heads, default channel, deprecations), then one `ListBundles` stream, then
//! `GetBundle` for each channel head the stream sent without its CSV (as upstream's
//! packageserver asks, for the PackageManifests' `currentCSVDesc`); the answers
//! become blobs through [`convert::catalog_from_messages`], so the caller builds the same
//! [`Model`](crate::catalog::Model) as from a directory.
//!
//! Every failure names the server and the call: an address that does not parse, a server that
//! cannot be reached or does not speak HTTP/2, a server without the registry API
//! (`UNIMPLEMENTED`), a stream cut off part way (with how many messages had arrived), a message
//! larger than [`ClientOptions::max_message_bytes`], and a server that stops answering for
//! [`ClientOptions::timeout`].

use std::{fmt, time::Duration};

use tonic::{
    Code, Status, Streaming,
    transport::{Channel, Endpoint},
};

use crate::grpc::{
    api::{self, registry_client::RegistryClient},
    convert::{self, Rebuilt},
};

/// How the client talks to the server.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Largest message accepted, in bytes. Bundles with inlined manifests can be large; upstream
    /// gRPC clients stop at 4 MiB by default.
    pub max_message_bytes: usize,
    /// Time allowed to connect, and for each answer or stream message to arrive.
    pub timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            max_message_bytes: 64 * 1024 * 1024,
            timeout: Duration::from_secs(30),
        }
    }
}

/// What went wrong reading from a server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The address is not `HOST:PORT` (optionally `grpc://HOST:PORT`).
    #[error("invalid registry address {address:?}: {reason}; write HOST:PORT or grpc://HOST:PORT")]
    InvalidAddress {
        /// The address given.
        address: String,
        /// What is wrong.
        reason: String,
    },
    /// No gRPC connection could be made.
    #[error(
        "cannot connect to the registry at {address}: is a gRPC server (opm serve, kubectl olm catalog serve) listening there?"
    )]
    Connect {
        /// The server.
        address: String,
        /// The transport error.
        #[source]
        source: tonic::transport::Error,
    },
    /// The server answered without the registry API.
    #[error(
        "{address} does not serve the registry API (api.Registry): {method} answered {code:?}: {message}"
    )]
    NotARegistry {
        /// The server.
        address: String,
        /// The call.
        method: &'static str,
        /// The status code.
        code: Code,
        /// The status message.
        message: String,
    },
    /// A message was larger than the client accepts.
    #[error(
        "{method} on {address}: a message is larger than the client's limit of {limit} bytes ({message}); \
         raise the limit or shrink the bundle's inlined manifests"
    )]
    TooLarge {
        /// The server.
        address: String,
        /// The call.
        method: &'static str,
        /// The limit.
        limit: usize,
        /// tonic's message.
        message: String,
    },
    /// A call failed or a stream broke off.
    #[error("{method} on {address} failed{}: {code:?}: {message}", received_text(*.received))]
    Call {
        /// The server.
        address: String,
        /// The call.
        method: &'static str,
        /// Messages received before the failure (streams).
        received: Option<usize>,
        /// The status code.
        code: Code,
        /// The status message.
        message: String,
    },
    /// The server stopped answering.
    #[error("{method} on {address}: no answer within {timeout:?}{}", received_text(*.received))]
    Timeout {
        /// The server.
        address: String,
        /// The call.
        method: &'static str,
        /// Messages received before the silence (streams).
        received: Option<usize>,
        /// The time waited.
        timeout: Duration,
    },
}

fn received_text(received: Option<usize>) -> String {
    match received {
        Some(n) => format!(" after {n} message{}", if n == 1 { "" } else { "s" }),
        None => String::new(),
    }
}

/// A catalog read from a server.
#[derive(Debug)]
pub struct Fetched {
    /// The server, as given.
    pub address: String,
    /// The blobs, for [`crate::catalog::Model::build`].
    pub config: crate::catalog::DeclarativeConfig,
    /// Answers that did not fit (each names the package and bundle).
    pub problems: Vec<String>,
    /// How many `ListBundles` messages were read.
    pub messages: usize,
}

/// `HOST:PORT` of an address given as `HOST:PORT` or `grpc://HOST:PORT`.
///
/// # Errors
/// [`ClientError::InvalidAddress`].
pub fn parse_address(address: &str) -> Result<String, ClientError> {
    let invalid = |reason: &str| ClientError::InvalidAddress {
        address: address.to_owned(),
        reason: reason.to_owned(),
    };
    let rest = address.strip_prefix("grpc://").unwrap_or(address);
    if rest.contains("://") {
        return Err(invalid("only grpc:// (plain text) is supported"));
    }
    let rest = rest.trim_end_matches('/');
    let (host, port) = rest.rsplit_once(':').ok_or_else(|| invalid("no port"))?;
    if host.is_empty() || host.contains('/') {
        return Err(invalid("no host"));
    }
    port.parse::<u16>()
        .map_err(|_| invalid(&format!("port {port:?} is not a number up to 65535")))?;
    Ok(rest.to_owned())
}

/// A connected registry client (reused by callers that ask more than once, e.g. health checks).
#[derive(Debug, Clone)]
pub struct Connection {
    address: String,
    client: RegistryClient<Channel>,
    channel: Channel,
    options: ClientOptions,
}

impl fmt::Display for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.address)
    }
}

impl Connection {
    /// Connects to `address` (`HOST:PORT` or `grpc://HOST:PORT`).
    ///
    /// # Errors
    /// [`ClientError::InvalidAddress`], [`ClientError::Connect`].
    pub async fn connect(address: &str, options: &ClientOptions) -> Result<Connection, ClientError> {
        let host_port = parse_address(address)?;
        let endpoint = Endpoint::from_shared(format!("http://{host_port}"))
            .map_err(|err| ClientError::InvalidAddress {
                address: address.to_owned(),
                reason: err.to_string(),
            })?
            .connect_timeout(options.timeout);
        // The TCP connect has its own timeout; this one also covers a server that accepts and
        // then never completes the HTTP/2 handshake.
        let channel = match tokio::time::timeout(options.timeout, endpoint.connect()).await {
            Ok(Ok(channel)) => channel,
            Ok(Err(source)) => {
                return Err(ClientError::Connect {
                    address: host_port,
                    source,
                });
            }
            Err(_) => {
                return Err(ClientError::Timeout {
                    address: host_port,
                    method: "connect",
                    received: None,
                    timeout: options.timeout,
                });
            }
        };
        let client =
            RegistryClient::new(channel.clone()).max_decoding_message_size(options.max_message_bytes);
        Ok(Connection {
            address: host_port,
            client,
            channel,
            options: options.clone(),
        })
    }

    /// The underlying channel (for the health service).
    #[must_use]
    pub fn channel(&self) -> Channel {
        self.channel.clone()
    }

    fn error(&self, method: &'static str, received: Option<usize>, status: &Status) -> ClientError {
        let address = self.address.clone();
        let message = status.message().to_owned();
        match status.code() {
            Code::Unimplemented => ClientError::NotARegistry {
                address,
                method,
                code: status.code(),
                message,
            },
            Code::OutOfRange if message.contains("too large") => ClientError::TooLarge {
                address,
                method,
                limit: self.options.max_message_bytes,
                message,
            },
            code => ClientError::Call {
                address,
                method,
                received,
                code,
                message,
            },
        }
    }

    async fn timed<T>(
        &self,
        method: &'static str,
        received: Option<usize>,
        call: impl Future<Output = Result<T, Status>>,
    ) -> Result<T, ClientError> {
        match tokio::time::timeout(self.options.timeout, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(status)) => Err(self.error(method, received, &status)),
            Err(_) => Err(ClientError::Timeout {
                address: self.address.clone(),
                method,
                received,
                timeout: self.options.timeout,
            }),
        }
    }

    async fn drain<T>(&self, method: &'static str, mut stream: Streaming<T>) -> Result<Vec<T>, ClientError> {
        let mut out = Vec::new();
        loop {
            let received = Some(out.len());
            match self.timed(method, received, stream.message()).await? {
                Some(item) => out.push(item),
                None => return Ok(out),
            }
        }
    }

    /// `ListPackages`.
    ///
    /// # Errors
    /// A [`ClientError`] naming the call.
    pub async fn list_packages(&self) -> Result<Vec<String>, ClientError> {
        let mut client = self.client.clone();
        let stream = self
            .timed(
                "ListPackages",
                None,
                client.list_packages(api::ListPackageRequest {}),
            )
            .await?
            .into_inner();
        let names = self.drain("ListPackages", stream).await?;
        Ok(names.into_iter().map(|p| p.name).collect())
    }

    /// `GetPackage`.
    ///
    /// # Errors
    /// A [`ClientError`] naming the call.
    pub async fn get_package(&self, name: &str) -> Result<api::Package, ClientError> {
        let mut client = self.client.clone();
        let request = api::GetPackageRequest {
            name: name.to_owned(),
        };
        Ok(self
            .timed("GetPackage", None, client.get_package(request))
            .await?
            .into_inner())
    }

    /// `ListBundles`, read to the end.
    ///
    /// # Errors
    /// A [`ClientError`] naming the call and how many messages arrived before it failed.
    pub async fn list_bundles(&self) -> Result<Vec<api::Bundle>, ClientError> {
        let mut client = self.client.clone();
        let stream = self
            .timed(
                "ListBundles",
                None,
                client.list_bundles(api::ListBundlesRequest {}),
            )
            .await?
            .into_inner();
        self.drain("ListBundles", stream).await
    }

    /// `GetBundle`: one bundle of a channel, with its CSV and objects.
    ///
    /// # Errors
    /// A [`ClientError`] naming the call.
    pub async fn get_bundle(
        &self,
        package: &str,
        channel: &str,
        csv_name: &str,
    ) -> Result<api::Bundle, ClientError> {
        let mut client = self.client.clone();
        let request = api::GetBundleRequest {
            pkg_name: package.to_owned(),
            channel_name: channel.to_owned(),
            csv_name: csv_name.to_owned(),
        };
        Ok(self
            .timed("GetBundle", None, client.get_bundle(request))
            .await?
            .into_inner())
    }

    /// The CSV of every channel head `ListBundles` sent without one (a bundle served with an
    /// image: `opm serve` streams neither its CSV nor its objects), asked with `GetBundle`, as
    /// upstream's packageserver asks for each channel's `currentCSVDesc` (with the deprecated
    /// `GetBundleForChannel`). One call per such channel.
    async fn fill_head_csvs(
        &self,
        packages: &[api::Package],
        bundles: &mut [api::Bundle],
    ) -> Result<(), ClientError> {
        let bare = |b: &api::Bundle| b.csv_json.is_empty() && b.object.is_empty();
        let without_csv: std::collections::HashSet<(&str, &str)> = bundles
            .iter()
            .filter(|b| bare(b))
            .map(|b| (b.package_name.as_str(), b.csv_name.as_str()))
            .collect();
        // One call per head bundle (a head of several channels is asked once).
        let mut heads: std::collections::BTreeMap<(String, String), String> = Default::default();
        for package in packages {
            for channel in &package.channels {
                if without_csv.contains(&(package.name.as_str(), channel.csv_name.as_str())) {
                    heads
                        .entry((package.name.clone(), channel.csv_name.clone()))
                        .or_insert_with(|| channel.name.clone());
                }
            }
        }
        let mut csvs = std::collections::HashMap::new();
        for ((package, csv_name), channel) in &heads {
            let head = self.get_bundle(package, channel, csv_name).await?;
            if !head.csv_json.is_empty() && head.csv_name == *csv_name {
                csvs.insert((package.as_str(), csv_name.as_str()), head.csv_json);
            }
        }
        for b in bundles.iter_mut().filter(|b| bare(b)) {
            if let Some(csv) = csvs.get(&(b.package_name.as_str(), b.csv_name.as_str())) {
                b.csv_json.clone_from(csv);
            }
        }
        Ok(())
    }

    /// Reads the whole catalog (see the module docs).
    ///
    /// # Errors
    /// The first [`ClientError`].
    pub async fn fetch(&self) -> Result<Fetched, ClientError> {
        let names = self.list_packages().await?;
        let mut packages = Vec::with_capacity(names.len());
        for name in &names {
            packages.push(self.get_package(name).await?);
        }
        let mut bundles = self.list_bundles().await?;
        self.fill_head_csvs(&packages, &mut bundles).await?;
        let source = format!("grpc://{}", self.address);
        let Rebuilt { config, problems } = convert::catalog_from_messages(&source, &packages, &bundles);
        Ok(Fetched {
            address: self.address.clone(),
            config,
            problems,
            messages: bundles.len(),
        })
    }
}

/// Connects to `address` and reads the whole catalog.
///
/// # Errors
/// The first [`ClientError`].
pub async fn fetch_catalog(address: &str, options: &ClientOptions) -> Result<Fetched, ClientError> {
    Connection::connect(address, options).await?.fetch().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_host_and_port_with_an_optional_grpc_scheme() {
        assert_eq!(parse_address("127.0.0.1:50051").unwrap(), "127.0.0.1:50051");
        assert_eq!(
            parse_address("grpc://registry.svc:50051/").unwrap(),
            "registry.svc:50051"
        );
        for bad in ["registry.svc", "https://x:1", ":50051", "x:port", "x:70000"] {
            let err = parse_address(bad).unwrap_err().to_string();
            assert!(err.contains(bad) && err.contains("HOST:PORT"), "{err}");
        }
    }
}
