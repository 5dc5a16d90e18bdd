//! validate: the `admission.k8s.io/v1` AdmissionReview the API server sends to `POST /validate`
//! when a RedisCluster is created or updated.
//!
//! The rule it enforces: the API server refuses what the operator would refuse, so a bad spec is
//! an error at `kubectl apply` time instead of a `Degraded` condition later. It applies exactly
//! the operator's own checks ([`crate::desired::check_spec`]: `size` in range, cluster mode with
//! at least three whole primary groups, no denied or malformed `redisConfig` line), and the
//! message names the RedisCluster and the field. A `v1alpha1` object is converted to `v1` first
//! ([`crate::convert`]) and the message names the `v1alpha1` field (`spec.replicas`, not
//! `spec.size`). Deletes, and updates that leave the spec unchanged (a finalizer removed from an
//! object admitted before the webhook existed), are always allowed. Pure: no I/O.

use serde_json::{Value, json};

use crate::{
    convert::{self, V1, V1ALPHA1, object_name},
    crd::RedisCluster,
    desired::check_spec,
};

/// The HTTP-style code of a denial (what controller-runtime's `Denied` answers).
pub const DENIED_CODE: u16 = 403;

/// Why a RedisCluster is refused: `Ok(())` when it is allowed.
///
/// # Errors
/// The message for the denial, naming the object and the field.
pub fn check(object: &Value) -> Result<(), String> {
    let name = object_name(object);
    let version = object["apiVersion"].as_str().unwrap_or_default();
    let v1 = if version == V1ALPHA1 {
        convert::convert(object, V1).map_err(|e| e.to_string())?
    } else if version == V1 {
        object.clone()
    } else {
        return Err(format!(
            "RedisCluster {name}: apiVersion {version:?} is not served; use {V1}"
        ));
    };
    let rc: RedisCluster = serde_json::from_value(v1)
        .map_err(|e| format!("RedisCluster {name}: the object is not a valid {version} RedisCluster: {e}"))?;
    check_spec(&rc.spec).map_err(|e| {
        let message = e.to_string();
        // The operator's messages name v1 fields; say them as the client wrote them.
        let message = if version == V1ALPHA1 {
            message.replace("spec.size", "spec.replicas")
        } else {
            message
        };
        format!("RedisCluster {name}: {message}")
    })
}

/// Answers an AdmissionReview: allowed, or denied with the reason in `status.message`.
///
/// # Errors
/// The body is not an AdmissionReview with a `request` (answered with HTTP 400).
pub fn review(body: &Value) -> Result<Value, String> {
    let request = body
        .get("request")
        .filter(|r| r.is_object())
        .ok_or("the body is not an AdmissionReview: it has no request")?;
    let uid = request["uid"].clone();
    let operation = request["operation"].as_str().unwrap_or_default();
    let object = &request["object"];
    let verdict = match operation {
        "CREATE" => check(object),
        // An update that leaves the spec alone (finalizers, labels, a delete in progress) is not
        // judged again: an object admitted before this webhook existed must stay manageable.
        "UPDATE" if object["spec"] == request["oldObject"]["spec"] => Ok(()),
        "UPDATE" => check(object),
        _ => Ok(()),
    };
    let response = match verdict {
        Ok(()) => json!({"uid": uid, "allowed": true}),
        Err(message) => json!({
            "uid": uid,
            "allowed": false,
            "status": {"code": DENIED_CODE, "reason": "Forbidden", "message": message}
        }),
    };
    Ok(json!({
        "apiVersion": body["apiVersion"].as_str().unwrap_or("admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": response
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rc(version: &str, spec: Value) -> Value {
        json!({"apiVersion": version, "kind": "RedisCluster",
               "metadata": {"name": "cache", "namespace": "shop"}, "spec": spec})
    }

    fn admission(operation: &str, object: Value) -> Value {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
               "request": {"uid": "a-1", "operation": operation, "object": object}})
    }

    #[test]
    fn a_good_spec_is_allowed_in_either_version() {
        assert_eq!(
            check(&rc(V1, json!({"size": 3, "redisConfig": "maxmemory 10mb"}))),
            Ok(())
        );
        assert_eq!(
            check(&rc(V1ALPHA1, json!({"replicas": 3, "storageSize": "1Gi"}))),
            Ok(())
        );
        assert_eq!(check(&rc(V1, json!({"size": 6, "mode": "cluster"}))), Ok(()));
    }

    #[test]
    fn a_bad_size_is_denied_naming_the_field_of_the_version_used() {
        assert_eq!(
            check(&rc(V1, json!({"size": 0}))),
            Err("RedisCluster shop/cache: spec.size 0 is out of range; set it between 1 and 100".into())
        );
        assert_eq!(
            check(&rc(V1ALPHA1, json!({"replicas": 101}))),
            Err(
                "RedisCluster shop/cache: spec.replicas 101 is out of range; set it between 1 and 100".into()
            )
        );
        let cluster = check(&rc(
            V1,
            json!({"size": 4, "mode": "cluster", "replicasPerPrimary": 1}),
        ))
        .expect_err("too few primaries");
        assert!(
            cluster.contains("spec.size 4 does not fit cluster mode"),
            "{cluster}"
        );
    }

    #[test]
    fn a_denied_redis_conf_directive_is_denied_naming_the_line() {
        let err = check(&rc(
            V1,
            json!({"size": 1, "redisConfig": "maxmemory 1mb\nport 7000"}),
        ))
        .expect_err("denied");
        assert_eq!(
            err,
            "RedisCluster shop/cache: spec.redisConfig line 2 `port 7000`: directive `port` is not allowed \
             (the Services and probes use port 6379); remove the line"
        );
        let err = check(&rc(
            V1ALPHA1,
            json!({"replicas": 1, "redisConfig": "loadmodule /x.so"}),
        ))
        .expect_err("denied");
        assert!(err.contains("directive `loadmodule` is not allowed"), "{err}");
        let err = check(&rc(V1, json!({"size": "three"}))).expect_err("bad type");
        assert!(
            err.starts_with("RedisCluster shop/cache: the object is not a valid"),
            "{err}"
        );
    }

    #[test]
    fn the_review_answers_allowed_or_denied_with_a_403_and_echoes_the_uid() {
        let ok = review(&admission("CREATE", rc(V1, json!({"size": 3})))).expect("review");
        assert_eq!(ok["kind"], "AdmissionReview");
        assert_eq!(ok["response"], json!({"uid": "a-1", "allowed": true}));
        let denied = review(&admission("UPDATE", rc(V1, json!({"size": 500})))).expect("review");
        assert_eq!(denied["response"]["allowed"], false);
        assert_eq!(denied["response"]["status"]["code"], 403);
        assert!(
            denied["response"]["status"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("spec.size 500"))
        );
        // An update that keeps an (old, invalid) spec is allowed: the finalizer can still go.
        let mut keep = admission("UPDATE", rc(V1, json!({"size": 500})));
        keep["request"]["oldObject"] = rc(V1, json!({"size": 500}));
        assert_eq!(review(&keep).expect("review")["response"]["allowed"], true);
        // Deletes carry no object worth judging.
        let delete = review(&admission("DELETE", Value::Null)).expect("review");
        assert_eq!(delete["response"]["allowed"], true);
        assert!(review(&json!({})).is_err());
    }
}
