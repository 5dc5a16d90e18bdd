//! The webhook server over real TLS on loopback: a CA and serving certificate made with the
//! `openssl` CLI (as OLM makes a CA and a serving certificate for a webhook deployment), the
//! operator's `/convert` and `/validate` served by `redis_operator::webhook::serve`, and real
//! ConversionReview / AdmissionReview JSON posted with reqwest trusting only that CA. Then the
//! certificate is rotated on disk and a client trusting only the new CA connects without a
//! restart. Needs no cluster.

use std::{path::Path, sync::Arc};

use operator_runtime::https::CertFiles;
use serde_json::{Value, json};

/// Writes `<name>-ca.crt`, `<name>.crt` (for 127.0.0.1 and localhost, signed by the CA) and
/// `<name>.key` into `dir`.
fn make_certificate(dir: &Path, name: &str) {
    let cert = olm_test_support::https::openssl_serving_cert(&["localhost", "127.0.0.1"]);
    std::fs::write(dir.join(format!("{name}-ca.crt")), cert.ca_pem).expect("ca");
    let (key, crt) = (format!("{name}.key.new"), format!("{name}.crt.new"));
    std::fs::write(dir.join(&key), cert.key_pem).expect("key");
    std::fs::write(dir.join(&crt), cert.cert_pem).expect("crt");
    // Renamed into place at the end, as the kubelet swaps a projected Secret's files.
    std::fs::rename(dir.join(&key), dir.join(format!("{name}.key"))).expect("key");
    std::fs::rename(dir.join(&crt), dir.join(format!("{name}.crt"))).expect("crt");
}

fn client(ca_pem: &[u8]) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(ca_pem).expect("ca")])
        .build()
        .expect("client")
}

async fn post(client: &reqwest::Client, url: String, body: &Value) -> (u16, String) {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.text().await.expect("body"))
}

#[tokio::test]
async fn conversion_and_admission_reviews_are_answered_over_tls_and_a_rotated_certificate_is_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    make_certificate(dir.path(), "tls");
    let certs =
        Arc::new(CertFiles::load(dir.path().join("tls.crt"), dir.path().join("tls.key")).expect("certs"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(redis_operator::webhook::serve(listener, certs));
    let ca = std::fs::read(dir.path().join("tls-ca.crt")).expect("ca");
    let https = client(&ca);

    // The API server stores v1 and a client reads v1alpha1.
    let conversion = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "desiredAPIVersion": "cache.example.com/v1alpha1",
            "objects": [{
                "apiVersion": "cache.example.com/v1",
                "kind": "RedisCluster",
                "metadata": {"name": "cache", "namespace": "shop", "uid": "0b1c", "resourceVersion": "12"},
                "spec": {"size": 3, "storage": {"size": "1Gi", "deleteClaimOnDelete": true}},
                "status": {"readyReplicas": 3}
            }]
        }
    });
    let (status, body) = post(&https, format!("https://{addr}/convert"), &conversion).await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(answer["kind"], "ConversionReview");
    assert_eq!(answer["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(answer["response"]["result"]["status"], "Success");
    let converted = &answer["response"]["convertedObjects"][0];
    assert_eq!(converted["apiVersion"], "cache.example.com/v1alpha1");
    assert_eq!(
        converted["spec"],
        json!({"replicas": 3, "storageSize": "1Gi", "deleteClaimOnDelete": true})
    );
    assert_eq!(converted["metadata"]["uid"], "0b1c");

    // A denied redis.conf directive is refused, naming the field and the line.
    let admission = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "a1", "operation": "CREATE",
            "kind": {"group": "cache.example.com", "version": "v1alpha1", "kind": "RedisCluster"},
            "resource": {"group": "cache.example.com", "version": "v1alpha1", "resource": "redisclusters"},
            "object": {"apiVersion": "cache.example.com/v1alpha1", "kind": "RedisCluster",
                       "metadata": {"name": "bad", "namespace": "shop"},
                       "spec": {"replicas": 1, "redisConfig": "requirepass hunter2"}}
        }
    });
    let (status, body) = post(
        &https,
        format!("https://localhost:{}/validate", addr.port()),
        &admission,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(answer["response"]["uid"], "a1");
    assert_eq!(answer["response"]["allowed"], false);
    let message = answer["response"]["status"]["message"].as_str().expect("message");
    assert!(
        message.starts_with("RedisCluster shop/bad: spec.redisConfig line 1 `requirepass hunter2`: directive `requirepass` is not allowed"),
        "{message}"
    );

    // OLM rotates the certificate: new CA, new serving pair, same files.
    make_certificate(dir.path(), "tls");
    let new_ca = std::fs::read(dir.path().join("tls-ca.crt")).expect("ca");
    assert_ne!(new_ca, ca);
    let rotated = client(&new_ca);
    let (status, body) = post(&rotated, format!("https://{addr}/convert"), &conversion).await;
    assert_eq!(status, 200, "after rotation: {body}");
    // A client that still trusts only the old CA is refused.
    let stale = client(&ca)
        .post(format!("https://{addr}/convert"))
        .body("{}")
        .send()
        .await;
    assert!(stale.is_err(), "the old certificate is still served");
    server.abort();
}
