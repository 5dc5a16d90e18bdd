//! duration: the one duration grammar of the workspace, Go's `time.ParseDuration` ([`go`]: what
//! OLM's API fields hold, `registryPoll.interval: 45m`, the unpack timeout `1.5h`), and the
//! duration flags of every binary (`--install-plan-retry-timeout 60s`, `kubectl-olm ... --timeout
//! 1m30s`: [`parse`], the same texts plus a bare number of seconds).
//!
//! Our own rather than `humantime`: these flags document exactly this small grammar (the one
//! kubectl users type), and humantime accepts more (`1h 30m`, `2days`) than we want to promise.

use std::time::Duration;

/// Parses a flag's duration: a bare number of seconds (`30`), or a Go duration ([`go`]: `30s`,
/// `2m`, `1h`, `1m30s`, `500ms`, `1.5h`).
///
/// # Errors
/// A message naming the text and the accepted forms.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    go(text).ok_or_else(|| {
        format!("invalid duration {text:?}: use a number of seconds or units like 30s, 2m, 1m30s, 500ms")
    })
}

/// A Go duration as `time.ParseDuration` reads it, without a sign: decimal numbers each with a
/// unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), summed (`1h30m`, `1.5h`), or `0` alone. `None`
/// for anything else (a number without a unit, an unknown unit, an empty text).
pub fn go(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|n| *n > 0)?;
        let value: f64 = rest.get(..number_len)?.parse().ok()?;
        rest = rest.get(number_len..)?;
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match rest.get(..unit_len)? {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = rest.get(unit_len..)?;
        total += value * seconds;
    }
    (total >= 0.0 && total.is_finite()).then(|| Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_accept_seconds_and_units() {
        assert_eq!(parse("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
    }

    #[test]
    fn go_durations_read_as_go_reads_them() {
        assert_eq!(go("45m"), Some(Duration::from_secs(2700)));
        assert_eq!(go("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(go("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(go("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(go("0"), Some(Duration::ZERO));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        for bad in ["", "30", "h", "1d", "1.5", "-1s", "1 m"] {
            assert_eq!(go(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn bad_durations_say_which_forms_work() {
        for bad in ["", "s", "10x", "1.5", "m5", "1d", "-1s"] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("30s, 2m"), "{bad}: {e}");
        }
    }
}
