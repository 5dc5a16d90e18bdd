//! message: a kube error as a sentence for people, for status messages, conditions and Events.
//!
//! kube's own `Display` of an API error is a debug dump (`ApiError: 404 page not found: Failed to
//! parse error data (Status { status: Some(Failure), code: 404, ... })`). What reaches an object's
//! status must read like upstream's messages: the API server's own sentence when it sent a
//! `Status` (`Deployment.apps "op" is invalid: spec.strategy.rollingUpdate: Forbidden: ...`), and
//! otherwise what the answer means (a bare `404 page not found` is the API server saying it does
//! not serve that resource at all, usually a missing CRD).

/// The reason kube gives an error response whose body was not a Kubernetes `Status`.
const UNPARSED_BODY: &str = "Failed to parse error data";

/// `error` as one readable sentence (no debug output), naming the HTTP code when there is one;
/// an error that is not an answer of the API server keeps its causes
/// ([`operator_runtime::error_chain`]: hyper's `client error (Connect)` alone says nothing).
pub fn describe(error: &kube::Error) -> String {
    use operator_runtime::error_chain;
    match error {
        kube::Error::Api(status) => describe_status(status),
        kube::Error::HyperError(e) => format!("could not reach the API server: {}", error_chain(e)),
        kube::Error::Service(e) => format!("could not reach the API server: {}", error_chain(e.as_ref())),
        kube::Error::SerdeError(e) => format!("could not read the API server's answer: {e}"),
        other => error_chain(other),
    }
}

fn describe_status(status: &kube::core::Status) -> String {
    let message = status.message.trim();
    if status.reason == UNPARSED_BODY {
        return match status.code {
            404 => format!(
                "the API server does not serve this resource (HTTP 404: {}); is its API (CRD) installed?",
                if message.is_empty() { "not found" } else { message }
            ),
            code => format!("the API server answered HTTP {code}: {message}"),
        };
    }
    let mut out = if message.is_empty() {
        "the API server refused the request".to_owned()
    } else {
        message.to_owned()
    };
    match (status.code, status.reason.as_str()) {
        (0, "") => {}
        (0, reason) => out.push_str(&format!(" ({reason})")),
        (code, "") => out.push_str(&format!(" (HTTP {code})")),
        (code, reason) => out.push_str(&format!(" (HTTP {code} {reason})")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, message: &str, reason: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            message: message.to_owned(),
            reason: reason.to_owned(),
            ..Default::default()
        }))
    }

    #[test]
    fn a_bare_404_says_the_resource_is_not_served() {
        let text = describe(&api(404, "404 page not found", UNPARSED_BODY));
        assert_eq!(
            text,
            "the API server does not serve this resource (HTTP 404: 404 page not found); \
             is its API (CRD) installed?"
        );
        assert!(!text.contains("Status {"));
    }

    #[test]
    fn a_transport_failure_keeps_its_cause() {
        #[derive(Debug, thiserror::Error)]
        #[error("client error (Connect)")]
        struct Connect(#[source] std::io::Error);
        let error = kube::Error::Service(Box::new(Connect(std::io::Error::other("connection refused"))));
        assert_eq!(
            describe(&error),
            "could not reach the API server: client error (Connect): connection refused"
        );
    }

    #[test]
    fn other_unparsed_answers_keep_their_body_and_code() {
        assert_eq!(
            describe(&api(502, "<html>bad gateway</html>", UNPARSED_BODY)),
            "the API server answered HTTP 502: <html>bad gateway</html>"
        );
    }

    #[test]
    fn a_status_reads_as_the_servers_sentence_with_its_code() {
        let text = describe(&api(
            422,
            "Deployment.apps \"op\" is invalid: spec.strategy.rollingUpdate: Forbidden",
            "Invalid",
        ));
        assert_eq!(
            text,
            "Deployment.apps \"op\" is invalid: spec.strategy.rollingUpdate: Forbidden (HTTP 422 Invalid)"
        );
        assert_eq!(describe(&api(0, "", "")), "the API server refused the request");
    }
}
