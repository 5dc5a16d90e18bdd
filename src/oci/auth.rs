//! Registry credentials from docker `config.json` files and `kubernetes.io/dockerconfigjson`
//! Secrets (the same JSON), chosen per registry host.
//!
//! The rules, as the container tools apply them:
//! - `auths` maps a registry to `auth` (base64 of `user:password`) or `username` + `password`,
//!   or a `registrytoken` (sent as a bearer token). The legacy `.dockercfg` shape, the same map
//!   without the `auths` wrapper, is read too.
//! - Keys may carry a scheme and a path (`https://index.docker.io/v1/`); only the host (with port)
//!   is compared, exactly. Docker Hub answers to `docker.io`, `index.docker.io` and
//!   `registry-1.docker.io` alike.
//! - Several configs (several pull Secrets) are searched in order; the first entry for the host
//!   wins. No entry means anonymous access; the bearer-token exchange a registry asks for is done
//!   by `oci-client` with these credentials.
//! - What we cannot use is an error naming the config and the host, never a silent fall-back to
//!   anonymous: an `identitytoken` (an OAuth refresh token), an `auth` that is not base64 of
//!   `user:password`. Credential helpers (`credHelpers`, `credsStore`) run programs, which a
//!   controller must not do; they are ignored and [`DockerConfig::helpers`] lets the caller say
//!   so.

use std::collections::BTreeMap;

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

/// A parsed docker config, named for messages (`~/.docker/config.json`, `secret ns/name`).
#[derive(Debug, Clone, Default)]
pub struct DockerConfig {
    /// Where it came from.
    pub name: String,
    entries: BTreeMap<String, RawEntry>,
    /// Hosts (or `*` for `credsStore`) that name a credential helper, which we do not run.
    pub helpers: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct RawEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RawConfig {
    #[serde(default)]
    auths: Option<BTreeMap<String, RawEntry>>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
}

/// Why credentials could not be read or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The config is not a docker config JSON document.
    #[error(
        "{name} is not a docker config.json: {message}; expected {{\"auths\": {{\"REGISTRY\": {{\"auth\": \
         \"base64(user:password)\"}}}}}}"
    )]
    Parse {
        /// The config's name.
        name: String,
        /// The JSON error.
        message: String,
    },
    /// The entry for the registry cannot be used.
    #[error("{name}: the credentials for registry {host} cannot be used: {message}")]
    Unusable {
        /// The config's name.
        name: String,
        /// The registry host.
        host: String,
        /// What is wrong, and the fix.
        message: String,
    },
}

impl DockerConfig {
    /// Parses a config.json (or `.dockerconfigjson` Secret value).
    ///
    /// # Errors
    /// [`AuthError::Parse`] naming the config.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<Self, AuthError> {
        let parse_err = |e: serde_json::Error| AuthError::Parse {
            name: name.to_owned(),
            message: e.to_string(),
        };
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(parse_err)?;
        let raw: RawConfig = serde_json::from_value(value.clone()).map_err(parse_err)?;
        let entries = match raw.auths {
            Some(auths) => auths,
            // The legacy `.dockercfg` shape: the map itself.
            None if value.get("credHelpers").is_none() && value.get("credsStore").is_none() => {
                serde_json::from_value(value).map_err(parse_err)?
            }
            None => BTreeMap::new(),
        };
        let mut helpers: Vec<String> = raw.cred_helpers.into_keys().collect();
        if raw.creds_store.is_some() {
            helpers.push("*".to_owned());
        }
        Ok(Self {
            name: name.to_owned(),
            entries: entries
                .into_iter()
                .map(|(k, v)| (normalize_host(&k), v))
                .collect(),
            helpers,
        })
    }

    fn lookup(&self, host: &str) -> Option<&RawEntry> {
        let wanted = normalize_host(host);
        self.entries.get(&wanted)
    }
}

/// The host part of a config key or registry: no scheme, no path; Docker Hub's names as one.
#[must_use]
pub fn normalize_host(key: &str) -> String {
    let no_scheme = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = no_scheme
        .split('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match host.as_str() {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" => "docker.io".to_owned(),
        _ => host,
    }
}

/// The credentials to use for `host`: the first config with an entry for it, else anonymous.
///
/// # Errors
/// [`AuthError::Unusable`] when the entry found cannot be used.
pub fn select(configs: &[DockerConfig], host: &str) -> Result<RegistryAuth, AuthError> {
    let Some((config, entry)) = configs.iter().find_map(|c| c.lookup(host).map(|e| (c, e))) else {
        return Ok(RegistryAuth::Anonymous);
    };
    let unusable = |message: &str| AuthError::Unusable {
        name: config.name.clone(),
        host: host.to_owned(),
        message: message.to_owned(),
    };
    if let (Some(user), Some(password)) = (&entry.username, &entry.password)
        && !user.is_empty()
    {
        return Ok(RegistryAuth::Basic(user.clone(), password.clone()));
    }
    if let Some(auth) = entry.auth.as_deref().filter(|a| !a.is_empty()) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .map_err(|_| unusable("`auth` is not base64; set it to base64 of user:password"))?;
        let text = String::from_utf8(decoded)
            .map_err(|_| unusable("`auth` does not decode to text; set it to base64 of user:password"))?;
        let (user, password) = text.split_once(':').ok_or_else(|| {
            unusable("`auth` does not decode to user:password; set it to base64 of user:password")
        })?;
        return Ok(RegistryAuth::Basic(user.to_owned(), password.to_owned()));
    }
    if let Some(token) = entry.registrytoken.as_deref().filter(|t| !t.is_empty()) {
        return Ok(RegistryAuth::Bearer(token.to_owned()));
    }
    if entry.identitytoken.is_some() {
        return Err(unusable(
            "an `identitytoken` (OAuth refresh token) is not supported; log in with a user and password or \
             a registry token instead",
        ));
    }
    Err(unusable(
        "the entry has no `auth`, `username`/`password` or `registrytoken`",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn auth_and_username_password_entries_become_basic_credentials_for_their_host_only() {
        let json = format!(
            r#"{{"auths":{{"127.0.0.1:5000":{{"auth":"{}"}},"https://quay.io/v1/":{{"username":"u","password":"p"}}}}}}"#,
            b64("alice:s3cr:et")
        );
        let cfg = DockerConfig::parse("config.json", json.as_bytes()).unwrap();
        assert_eq!(
            select(std::slice::from_ref(&cfg), "127.0.0.1:5000").unwrap(),
            RegistryAuth::Basic("alice".into(), "s3cr:et".into())
        );
        assert_eq!(
            select(std::slice::from_ref(&cfg), "quay.io").unwrap(),
            RegistryAuth::Basic("u".into(), "p".into())
        );
        assert_eq!(
            select(std::slice::from_ref(&cfg), "127.0.0.1:5001").unwrap(),
            RegistryAuth::Anonymous
        );
    }

    #[test]
    fn docker_hub_keys_match_every_docker_hub_host_and_the_legacy_shape_is_read() {
        let json = format!(r#"{{"https://index.docker.io/v1/":{{"auth":"{}"}}}}"#, b64("a:b"));
        let cfg = DockerConfig::parse(".dockercfg", json.as_bytes()).unwrap();
        assert_eq!(
            select(&[cfg], "index.docker.io").unwrap(),
            RegistryAuth::Basic("a".into(), "b".into())
        );
    }

    #[test]
    fn the_first_config_with_an_entry_wins_and_tokens_are_bearer() {
        let first =
            DockerConfig::parse("secret a", br#"{"auths":{"r.io":{"registrytoken":"tok"}}}"#).unwrap();
        let second = DockerConfig::parse(
            "secret b",
            br#"{"auths":{"r.io":{"username":"x","password":"y"}}}"#,
        )
        .unwrap();
        assert_eq!(
            select(&[first, second], "r.io").unwrap(),
            RegistryAuth::Bearer("tok".into())
        );
    }

    #[test]
    fn unusable_entries_are_errors_naming_the_config_and_host() {
        let cfg = DockerConfig::parse(
            "secret ns/pull",
            br#"{"auths":{"r.io":{"auth":"not base64!"},"s.io":{"identitytoken":"x"},"t.io":{}}}"#,
        )
        .unwrap();
        for (host, needle) in [
            ("r.io", "not base64"),
            ("s.io", "identitytoken"),
            ("t.io", "has no `auth`"),
        ] {
            let err = select(std::slice::from_ref(&cfg), host).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("secret ns/pull: the credentials for registry {host}")),
                "{err}"
            );
            assert!(err.contains(needle), "{err}");
        }
    }

    #[test]
    fn helpers_are_reported_and_bad_json_is_a_parse_error() {
        let cfg = DockerConfig::parse(
            "c",
            br#"{"credsStore":"desktop","credHelpers":{"gcr.io":"gcloud"}}"#,
        )
        .unwrap();
        assert_eq!(cfg.helpers, vec!["gcr.io".to_owned(), "*".to_owned()]);
        assert_eq!(select(&[cfg], "gcr.io").unwrap(), RegistryAuth::Anonymous);
        let err = DockerConfig::parse("c", b"[1]").unwrap_err().to_string();
        assert!(err.starts_with("c is not a docker config.json"), "{err}");
    }
}
