//! stats: the order statistics the benches print (percentiles with linear interpolation, as the
//! Python benches computed them, and min / median / max).

/// The `p`-th percentile of `values` (0..=100), interpolated linearly between the two closest
/// ranks; `None` for no values.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let rank = (sorted.len() - 1) as f64 * p.clamp(0.0, 100.0) / 100.0;
    let lo = rank.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let (a, b) = (sorted.get(lo)?, sorted.get(hi)?);
    Some(a + (b - a) * (rank - lo as f64))
}

/// Min, median and max of `values` (`None` for no values).
pub fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    Some((
        percentile(values, 0.0)?,
        percentile(values, 50.0)?,
        percentile(values, 100.0)?,
    ))
}

/// A number for a report: `-` when there is none.
pub fn show(value: Option<f64>, decimals: usize) -> String {
    match value {
        Some(v) => format!("{v:.decimals$}"),
        None => "-".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(4.0));
        // rank 0.95 * 3 = 2.85: 3 + 0.85
        let p95 = percentile(&v, 95.0).expect("values");
        assert!((p95 - 3.85).abs() < 1e-9, "{p95}");
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7.0], 95.0), Some(7.0));
    }

    #[test]
    fn spread_is_min_median_max() {
        assert_eq!(spread(&[3.0, 1.0, 2.0]), Some((1.0, 2.0, 3.0)));
        assert_eq!(spread(&[]), None);
        assert_eq!(show(None, 2), "-");
        assert_eq!(show(Some(1.234), 2), "1.23");
    }
}
