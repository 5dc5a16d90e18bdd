//! metrics_text: the controller's `/metrics` (Prometheus text format) read back as samples, and
//! the API request counter (`olmrs_api_requests_total`) tallied from two readings.

use std::collections::BTreeMap;

/// One sample line: metric name, labels, value.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A line of the text format that is not a comment and cannot be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParseError {
    #[error("metrics line {line}: {text:?} is not `name{{labels}} value`")]
    Line { line: usize, text: String },
}

/// Every sample of `text` (comments and blank lines skipped).
pub fn parse(text: &str) -> Result<Vec<Sample>, ParseError> {
    let mut samples = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || ParseError::Line {
            line: index + 1,
            text: raw.to_owned(),
        };
        let (name, labels, rest) = match line.find('{') {
            Some(open) => {
                let close = line.rfind('}').ok_or_else(bad)?;
                let labels = parse_labels(line.get(open + 1..close).ok_or_else(bad)?).ok_or_else(bad)?;
                (
                    line.get(..open).ok_or_else(bad)?,
                    labels,
                    line.get(close + 1..).ok_or_else(bad)?,
                )
            }
            None => {
                let (name, rest) = line.split_once(' ').ok_or_else(bad)?;
                (name, BTreeMap::new(), rest)
            }
        };
        // A value, then an optional timestamp.
        let value = rest.split_whitespace().next().ok_or_else(bad)?;
        let value = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().map_err(|_| bad())?,
        };
        samples.push(Sample {
            name: name.to_owned(),
            labels,
            value,
        });
    }
    Ok(samples)
}

fn parse_labels(text: &str) -> Option<BTreeMap<String, String>> {
    let mut labels = BTreeMap::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let after = after.strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break i,
                c => value.push(c),
            }
        };
        labels.insert(key.trim().to_owned(), value);
        rest = after.get(end + 1..)?.trim_start_matches(',').trim();
    }
    Some(labels)
}

/// The API requests of one reading, per (method, resource, scope).
pub type Requests = BTreeMap<(String, String, String), f64>;

/// The name under which the controller exports its API request counter.
pub const API_REQUESTS: &str = "olmrs_api_requests_total";

/// The API request counter of one reading.
pub fn api_requests(samples: &[Sample]) -> Requests {
    let mut out = Requests::new();
    for s in samples.iter().filter(|s| s.name == API_REQUESTS) {
        let get = |k: &str| s.labels.get(k).cloned().unwrap_or_default();
        *out.entry((get("method"), get("resource"), get("scope")))
            .or_default() += s.value;
    }
    out
}

/// The requests sent between two readings (`after - before`, series that did not move left out).
pub fn delta(before: &Requests, after: &Requests) -> Requests {
    after
        .iter()
        .filter_map(|(k, v)| {
            let d = v - before.get(k).copied().unwrap_or(0.0);
            (d > 0.0).then(|| (k.clone(), d))
        })
        .collect()
}

/// The sum of the requests `keep` accepts (method, resource, scope).
pub fn total(requests: &Requests, keep: impl Fn(&str, &str, &str) -> bool) -> f64 {
    requests
        .iter()
        .filter(|((m, r, s), _)| keep(m, r, s))
        .map(|(_, v)| v)
        .sum()
}

/// Requests per `METHOD resource` (scopes added up), most first, then by name.
pub fn by_kind(requests: &Requests) -> Vec<(String, f64)> {
    let mut kinds: BTreeMap<String, f64> = BTreeMap::new();
    for ((method, resource, _), v) in requests {
        *kinds.entry(format!("{method} {resource}")).or_default() += v;
    }
    let mut out: Vec<(String, f64)> = kinds.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP olmrs_api_requests API requests sent.
# TYPE olmrs_api_requests counter
olmrs_api_requests_total{method="GET",resource="deployments",scope="namespace"} 3
olmrs_api_requests_total{method="PATCH",resource="subscriptions/status",scope="namespace"} 2
olmrs_api_requests_total{method="GET",resource="catalogsources",scope="global"} 1
install_plan_count 4
catalogsource_ready{namespace="olm",name="a \"b\""} 1
olmrs_reconcile_duration_seconds_bucket{controller="csv",result="ok",le="+Inf"} 5
# EOF
"#;

    #[test]
    fn samples_are_read_with_labels_and_escapes() {
        let samples = parse(TEXT).expect("valid text");
        assert_eq!(samples.len(), 6);
        assert_eq!(samples[3].name, "install_plan_count");
        assert_eq!(samples[3].value, 4.0);
        assert_eq!(samples[4].labels.get("name").map(String::as_str), Some("a \"b\""));
        assert_eq!(samples[5].labels.get("le").map(String::as_str), Some("+Inf"));
    }

    #[test]
    fn a_broken_line_is_an_error_naming_it() {
        assert_eq!(
            parse("ok 1\nbroken{a=\"x\" 1\n"),
            Err(ParseError::Line {
                line: 2,
                text: "broken{a=\"x\" 1".into()
            })
        );
        assert!(parse("name notanumber").is_err());
    }

    #[test]
    fn requests_are_tallied_between_two_readings() {
        let before = api_requests(&parse(TEXT).expect("valid"));
        let later = TEXT.replace("scope=\"namespace\"} 3", "scope=\"namespace\"} 10");
        let after = api_requests(&parse(&later).expect("valid"));
        let d = delta(&before, &after);
        assert_eq!(d.len(), 1);
        assert_eq!(total(&d, |_, _, _| true), 7.0);
        assert_eq!(
            total(&after, |m, r, _| m == "PATCH" && r.ends_with("/status")),
            2.0
        );
        assert_eq!(total(&after, |_, _, s| s == "namespace"), 12.0);
        assert_eq!(
            by_kind(&after),
            vec![
                ("GET deployments".to_owned(), 10.0),
                ("PATCH subscriptions/status".to_owned(), 2.0),
                ("GET catalogsources".to_owned(), 1.0),
            ]
        );
    }
}
