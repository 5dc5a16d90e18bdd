//! scoped: API clients that act as a ServiceAccount, for scoped installs (OLM's "operator
//! scoping with OperatorGroups": a group's `spec.serviceAccountName`).
//!
//! Upstream reads the account's token from a Secret and sends it as a bearer token; olm-rs
//! impersonates the account instead (`Impersonate-User: system:serviceaccount:NS:NAME`, the
//! groups the API server adds for a ServiceAccount on its own): the API server then checks every
//! request against that account's RBAC exactly as it would for the token, nothing needs a token
//! Secret, and the controller needs only the `impersonate` verb on `serviceaccounts`
//! (manifests/rbac.yaml). The clients are built once per account from the connection the
//! controller's own client came from and shared (their connection pools are reused).
//!
//! Written here rather than found in a crate: kube's `Config` carries the impersonation headers;
//! what is ours is the cache and the ServiceAccount user name.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use thiserror::Error;

/// Why no client acting as a ServiceAccount could be had.
#[derive(Debug, Error)]
pub enum ScopedError {
    /// The controller was started without the connection settings its client came from
    /// (tests with a mock client).
    #[error(
        "cannot act as ServiceAccount {namespace}/{name}: the controller has no connection settings to impersonate with"
    )]
    NoConnection {
        /// The account's namespace.
        namespace: String,
        /// The account's name.
        name: String,
    },
    /// kube could not build the client.
    #[error("cannot build a client acting as ServiceAccount {namespace}/{name}: {source}")]
    Build {
        /// The account's namespace.
        namespace: String,
        /// The account's name.
        name: String,
        /// kube's error.
        #[source]
        source: kube::Error,
    },
}

/// The user name the API server gives ServiceAccount `name` in `namespace`.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// Clients acting as ServiceAccounts, built on first use from one connection's settings.
#[derive(Default)]
pub struct ScopedClients {
    connection: Option<kube::Config>,
    clients: Mutex<HashMap<(String, String), kube::Client>>,
}

impl std::fmt::Debug for ScopedClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopedClients")
            .field(
                "connection",
                &self.connection.as_ref().map(|c| c.cluster_url.to_string()),
            )
            .finish_non_exhaustive()
    }
}

impl ScopedClients {
    /// Clients built from `connection` (`None`: every request for one fails with
    /// [`ScopedError::NoConnection`]).
    pub fn new(connection: Option<kube::Config>) -> Arc<Self> {
        Arc::new(Self {
            connection,
            clients: Mutex::default(),
        })
    }

    /// A client whose every request is made as ServiceAccount `name` in `namespace`.
    ///
    /// # Errors
    /// No connection settings, or kube could not build the client.
    pub fn as_service_account(&self, namespace: &str, name: &str) -> Result<kube::Client, ScopedError> {
        let key = (namespace.to_owned(), name.to_owned());
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let Some(connection) = &self.connection else {
            return Err(ScopedError::NoConnection {
                namespace: key.0,
                name: key.1,
            });
        };
        let mut config = connection.clone();
        config.auth_info.impersonate = Some(service_account_user(namespace, name));
        config.auth_info.impersonate_groups = None;
        let client = kube::Client::try_from(config).map_err(|source| ScopedError::Build {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        })?;
        clients.insert(key, client.clone());
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_account_user_is_the_api_servers_name_for_it() {
        assert_eq!(
            service_account_user("team-a", "installer"),
            "system:serviceaccount:team-a:installer"
        );
    }

    #[test]
    fn without_connection_settings_no_client_is_made() {
        let clients = ScopedClients::new(None);
        let Err(err) = clients.as_service_account("team-a", "installer") else {
            panic!("a client without connection settings");
        };
        assert!(err.to_string().contains("team-a/installer"), "{err}");
    }

    #[tokio::test]
    async fn clients_are_built_once_per_account() {
        let config = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
        let clients = ScopedClients::new(Some(config));
        clients.as_service_account("a", "sa").unwrap();
        clients.as_service_account("a", "sa").unwrap();
        clients.as_service_account("b", "sa").unwrap();
        assert_eq!(clients.clients.lock().unwrap().len(), 2);
    }
}
