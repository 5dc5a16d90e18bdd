//! duration: the duration flags of every binary (`--install-plan-retry-timeout 60s`,
//! `kubectl-olm ... --timeout 1m30s`): a bare number of seconds, or numbers with the units `ms`,
//! `s`, `m` and `h`, summed (`1m30s`), as Go's `time.ParseDuration` reads the same texts.
//!
//! Our own rather than `humantime`: these flags document exactly this small grammar (the one
//! kubectl users type), and humantime accepts more (`1h 30m`, `2days`) than we want to promise.

use std::time::Duration;

/// Parses `30`, `30s`, `2m`, `1h`, `1m30s` or `500ms`.
///
/// # Errors
/// A message naming the text and the accepted forms.
pub fn parse(text: &str) -> Result<Duration, String> {
    let bad =
        || format!("invalid duration {text:?}: use a number of seconds or units like 30s, 2m, 1m30s, 500ms");
    let text = text.trim();
    if text.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let value: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        total += match unit {
            "ms" => Duration::from_millis(value),
            "s" => Duration::from_secs(value),
            "m" => Duration::from_secs(value.saturating_mul(60)),
            "h" => Duration::from_secs(value.saturating_mul(3600)),
            _ => return Err(bad()),
        };
    }
    Ok(total)
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
    fn bad_durations_say_which_forms_work() {
        for bad in ["", "s", "10x", "1.5s", "m5", "1d"] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("30s, 2m"), "{bad}: {e}");
        }
    }
}
