//! webhooks: the objects upstream OLM v0 writes for a Succeeded CSV's `spec.webhookdefinitions`
//! (install/webhook.go, certresources.go), checked on what the cluster holds. Pure: the shell
//! fetches the objects into [`Objects`].
//!
//! Per definition: the Service `<deploymentName>-service` (dots made dashes) with a port
//! `containerPort` (443), the Secret `<service>-cert` with `tls.crt` and `tls.key`; for
//! Validating/Mutating a configuration labelled olm.owner=<csv>, olm.owner.namespace,
//! olm.owner.kind=ClusterServiceVersion and olm.webhook-description-generate-name=<generateName>,
//! named `<generateName>-...`, holding one webhook named generateName whose clientConfig calls that
//! Service (namespace, port, `webhookPath` when given) with a non-empty caBundle, the Secret's CA
//! (`olmCAKey`) when it has one; for a ConversionWebhook each `conversionCRDs` CRD with
//! conversion strategy Webhook and such a client config (path `webhookPath`, default `/`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// The objects of one namespace the check reads.
#[derive(Clone, Debug, Default)]
pub struct Objects {
    pub validating: Vec<Value>,
    pub mutating: Vec<Value>,
    pub services: BTreeMap<String, Value>,
    pub secrets: BTreeMap<String, Value>,
    pub crds: BTreeMap<String, Value>,
}

/// The Service of a webhook's deployment, as upstream names it.
pub fn webhook_service(deployment: &str) -> String {
    format!("{}-service", deployment.replace('.', "-"))
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

struct Client<'a> {
    namespace: &'a str,
    service: &'a str,
    port: i64,
    path: Option<&'a str>,
    ca: Option<&'a str>,
    secret: &'a str,
}

impl Client<'_> {
    fn problem(&self, cc: &Value, place: &str) -> Option<String> {
        let service = cc.get("service").cloned().unwrap_or(Value::Null);
        let (name, namespace) = (s(&service, "/name"), s(&service, "/namespace"));
        if name != self.service || namespace != self.namespace {
            return Some(format!(
                "{place} calls Service {namespace}/{name}, not {}/{}",
                self.namespace, self.service
            ));
        }
        let port = service
            .get("port")
            .and_then(Value::as_i64)
            .filter(|p| *p != 0)
            .unwrap_or(443);
        if port != self.port {
            return Some(format!("{place} calls port {port}, not {}", self.port));
        }
        if let Some(path) = self.path {
            let got = service.get("path").and_then(Value::as_str);
            if got != Some(path) {
                return Some(format!(
                    "{place} calls path {}, not {path}",
                    got.unwrap_or("None")
                ));
            }
        }
        let bundle = s(cc, "/caBundle");
        if bundle.is_empty() {
            return Some(format!("{place} has no caBundle"));
        }
        if let Some(ca) = self.ca
            && bundle != ca
        {
            return Some(format!(
                "{place}: caBundle is not the CA of Secret {}/{} (olmCAKey)",
                self.namespace, self.secret
            ));
        }
        None
    }
}

/// (ok, text) of the webhook objects of a Succeeded CSV: `webhooks: ok N objects`, or the first
/// object missing or wrong.
pub fn check_webhooks(csv: &Value, namespace: &str, objs: &Objects) -> (bool, String) {
    let name = s(csv, "/metadata/name");
    let mut checked: BTreeSet<(String, String)> = BTreeSet::new();
    let fail = |text: String| (false, format!("webhooks: {text}"));
    for d in csv
        .pointer("/spec/webhookdefinitions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let gen_name = s(d, "/generateName");
        let kind = s(d, "/type");
        let service_name = webhook_service(s(d, "/deploymentName"));
        let secret_name = format!("{service_name}-cert");
        let port = d
            .get("containerPort")
            .and_then(Value::as_i64)
            .filter(|p| *p > 0)
            .unwrap_or(443);
        let Some(svc) = objs.services.get(&service_name) else {
            return fail(format!(
                "Service {namespace}/{service_name} missing (webhook {gen_name})"
            ));
        };
        let ports: Vec<i64> = svc
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p["port"].as_i64())
            .collect();
        if !ports.contains(&port) {
            return fail(format!(
                "Service {namespace}/{service_name} has no port {port} (ports {ports:?}; webhook {gen_name})"
            ));
        }
        checked.insert(("Service".into(), service_name.clone()));
        let Some(secret) = objs.secrets.get(&secret_name) else {
            return fail(format!(
                "Secret {namespace}/{secret_name} missing (webhook {gen_name})"
            ));
        };
        for key in ["tls.crt", "tls.key"] {
            if secret
                .get("data")
                .and_then(|d| d.get(key))
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return fail(format!(
                    "Secret {namespace}/{secret_name} has no {key} (webhook {gen_name})"
                ));
            }
        }
        checked.insert(("Secret".into(), secret_name.clone()));
        let ca = secret
            .pointer("/data/olmCAKey")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty());
        let mut client = Client {
            namespace,
            service: &service_name,
            port,
            path: d.get("webhookPath").and_then(Value::as_str),
            ca,
            secret: &secret_name,
        };
        match kind {
            "ValidatingAdmissionWebhook" | "MutatingAdmissionWebhook" => {
                let (config_kind, configs) = if kind == "ValidatingAdmissionWebhook" {
                    ("ValidatingWebhookConfiguration", &objs.validating)
                } else {
                    ("MutatingWebhookConfiguration", &objs.mutating)
                };
                let label = |c: &Value, key: &str| {
                    c.pointer("/metadata/labels")
                        .and_then(|l| l.get(key))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let mine: Vec<&Value> = configs
                    .iter()
                    .filter(|c| {
                        label(c, "olm.webhook-description-generate-name") == gen_name
                            && label(c, "olm.owner") == name
                            && label(c, "olm.owner.namespace") == namespace
                    })
                    .collect();
                if mine.is_empty() {
                    return fail(format!(
                        "{config_kind} of webhook {gen_name} missing (none labelled olm.owner={name}, olm.owner.namespace={namespace}, olm.webhook-description-generate-name={gen_name})"
                    ));
                }
                for config in mine {
                    let cname = s(config, "/metadata/name");
                    let place = format!("{config_kind} {cname}");
                    if label(config, "olm.owner.kind") != "ClusterServiceVersion" {
                        return fail(format!(
                            "{place} lacks label olm.owner.kind=ClusterServiceVersion"
                        ));
                    }
                    if !cname.starts_with(&format!("{gen_name}-")) {
                        return fail(format!("{place} is not named {gen_name}-<suffix>"));
                    }
                    let hooks: Vec<&Value> = config
                        .get("webhooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .collect();
                    if hooks.len() != 1 || s(hooks[0], "/name") != gen_name {
                        let names: Vec<&str> = hooks.iter().map(|h| s(h, "/name")).collect();
                        return fail(format!("{place} holds {names:?}, not one webhook {gen_name}"));
                    }
                    let cc = hooks[0].get("clientConfig").cloned().unwrap_or(Value::Null);
                    if let Some(problem) = client.problem(&cc, &place) {
                        return fail(problem);
                    }
                    checked.insert((config_kind.into(), cname.to_owned()));
                }
            }
            "ConversionWebhook" => {
                client.path = Some(client.path.unwrap_or("/"));
                for crd_name in d
                    .get("conversionCRDs")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    let Some(crd) = objs.crds.get(crd_name) else {
                        return fail(format!("CRD {crd_name} missing (conversion webhook {gen_name})"));
                    };
                    let place = format!("CRD {crd_name}'s conversion");
                    let strategy = s(crd, "/spec/conversion/strategy");
                    if strategy != "Webhook" {
                        let strategy = if strategy.is_empty() { "None" } else { strategy };
                        return fail(format!("{place} strategy is {strategy}, not Webhook"));
                    }
                    let cc = crd
                        .pointer("/spec/conversion/webhook/clientConfig")
                        .cloned()
                        .unwrap_or(Value::Null);
                    if let Some(problem) = client.problem(&cc, &place) {
                        return fail(problem);
                    }
                    checked.insert(("CustomResourceDefinition".into(), crd_name.to_owned()));
                }
            }
            other => return fail(format!("webhook {gen_name} has type {other}, none of the three")),
        }
    }
    (true, format!("webhooks: ok {} objects", checked.len()))
}

/// The object count of an `ok N objects` text.
pub fn ok_count(text: &str) -> usize {
    text.split_whitespace()
        .skip_while(|w| *w != "ok")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
