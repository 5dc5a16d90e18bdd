//! certs: issues the CA and serving certificate of a webhook (or APIService) Deployment, as
//! upstream OLM's `pkg/controller/certs` does: a fresh self-signed CA and a serving
//! certificate it signs for the Service's host names, both valid [`VALID_FOR`] from `now`
//! (730 days), ECDSA P-256 keys.
//!
//! The rule this module enforces: key material comes from here and nowhere else, and it is
//! the only randomness of the CSV pipeline. Whether a certificate is due for rotation, and
//! what is built from it, is decided purely in `plan::csv::webhooks`.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// How long a generated certificate is valid (upstream `DefaultCertValidFor`: two years).
pub const VALID_FOR: Duration = Duration::from_secs(730 * 24 * 3600);
/// The organization named in generated certificates.
pub const ORGANIZATION: &str = "olm-rs";

/// Why certificates could not be issued.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// The validity window cannot be represented as an X.509 time.
    #[error("certificate validity starting at {0} is out of range")]
    Time(Timestamp),
    /// rcgen refused the parameters or the key generation failed.
    #[error("could not generate a certificate for {hosts:?}: {source}")]
    Generate {
        /// The host names asked for.
        hosts: Vec<String>,
        /// The cause.
        #[source]
        source: rcgen::Error,
    },
}

/// A CA and the serving certificate it signed, PEM-encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingCerts {
    /// The CA certificate (the webhooks' `caBundle`).
    pub ca_pem: String,
    /// The serving certificate (`tls.crt`).
    pub cert_pem: String,
    /// The serving certificate's private key (`tls.key`).
    pub key_pem: String,
    /// When both expire.
    pub not_after: Timestamp,
}

fn offset(t: Timestamp) -> Result<time::OffsetDateTime, CertError> {
    time::OffsetDateTime::from_unix_timestamp(t.as_second()).map_err(|_| CertError::Time(t))
}

/// Issues a new CA and a serving certificate for `hosts`, valid from `now` (less a minute of
/// clock skew) for [`VALID_FOR`].
///
/// # Errors
/// [`CertError`] when rcgen cannot build or sign the certificates.
pub fn issue(hosts: &[String], now: Timestamp) -> Result<ServingCerts, CertError> {
    let generate = |source| CertError::Generate {
        hosts: hosts.to_vec(),
        source,
    };
    let not_after = now.checked_add(VALID_FOR).map_err(|_| CertError::Time(now))?;
    let not_before = now
        .checked_sub(Duration::from_secs(60))
        .map_err(|_| CertError::Time(now))?;

    let mut ca = CertificateParams::default();
    ca.distinguished_name = rcgen::DistinguishedName::new();
    ca.distinguished_name.push(DnType::OrganizationName, ORGANIZATION);
    ca.distinguished_name
        .push(DnType::CommonName, format!("olm-selfsigned-{}", now.as_second()));
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::CrlSign,
    ];
    ca.not_before = offset(not_before)?;
    ca.not_after = offset(not_after)?;
    let ca_key = KeyPair::generate().map_err(generate)?;
    let ca_cert = ca.self_signed(&ca_key).map_err(generate)?;

    let mut serving = CertificateParams::new(hosts.to_vec()).map_err(generate)?;
    serving.distinguished_name = rcgen::DistinguishedName::new();
    serving
        .distinguished_name
        .push(DnType::OrganizationName, ORGANIZATION);
    if let Some(first) = hosts.first() {
        serving.distinguished_name.push(DnType::CommonName, first.clone());
    }
    serving.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    serving.not_before = offset(not_before)?;
    serving.not_after = offset(not_after)?;
    let key = KeyPair::generate().map_err(generate)?;
    let issuer = Issuer::from_params(&ca, &ca_key);
    let cert = serving.signed_by(&key, &issuer).map_err(generate)?;

    Ok(ServingCerts {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        not_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_certificates_are_pem_and_expire_after_two_years() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let certs = issue(&["svc.ns".to_owned(), "svc.ns.svc".to_owned()], now).unwrap();
        assert!(certs.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(certs.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(certs.key_pem.contains("PRIVATE KEY"));
        assert_eq!(certs.not_after.as_second() - now.as_second(), 730 * 24 * 3600);
        let again = issue(&["svc.ns".to_owned()], now).unwrap();
        assert_ne!(again.ca_pem, certs.ca_pem, "every issue makes a new CA");
    }
}
