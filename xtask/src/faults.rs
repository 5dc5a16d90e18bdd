//! faults: `cargo xtask bench-faults`: recovery figures of olm-controller under faults, from
//! repeated runs of the fault suite's tests (tests/it/faults.rs prints `FAULT-FIGURE <name>
//! <seconds> target <seconds>` lines), each figure's min / median / max beside its target.
//!
//! Figures (each from tests/it/faults.rs):
//!   apiserver-restart-controller-recovery  kube-apiserver stopped mid-install (SIGTERM, 3 s,
//!     SIGKILL) and restarted: from its /readyz answering again until the controller's part of
//!     all 8 installs is done (InstallPlan Complete, CSV and Deployment created). Target <= 30 s.
//!   apiserver-restart-recovery  the same, until all 8 are at the head Succeeded.
//!   leader-failover  two replicas, default lease settings: from the leader's SIGKILL until the
//!     standby holds the Lease. Target <= 15 s.
//!   leader-kill-to-installs-done  the same, until the 4 installs under way are done.
//!   apiserver-restart-deployments-available  the cluster's share: until the 8 Deployments are
//!     Available.
//!   apiserver-restart-at-head-after-deployments  from then until all 8 are at the head.
//! The apiserver restart disturbs everything else on that cluster: run nothing else meanwhile.

use std::{collections::BTreeMap, path::Path, process::Command};

use anyhow::{Context as _, bail};

use crate::{
    cluster::Cluster,
    stats,
    summary::{self, Figure, Op},
};

/// The fault suite's tests that print figures.
const TESTS: [&str; 2] = [
    "an_apiserver_restart_mid_install_leaves_every_install_at_its_head",
    "a_standby_takes_over_from_a_killed_leader_and_finishes_the_installs",
];

/// Where the fault suite is: (test binary, prefix of its test names). The root package's suites
/// are modules of the one test binary `tests/it/`, so the fault suite is `it`'s `faults::`. `None`
/// when it does not exist (a checkout without it).
pub fn suite(repo: &std::path::Path) -> Option<(&'static str, &'static str)> {
    (repo.join("tests/it/faults.rs").is_file() || repo.join("tests/it/faults/mod.rs").is_file())
        .then_some(("it", "faults::"))
}

/// One `FAULT-FIGURE` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    pub name: String,
    pub seconds: f64,
    pub target: f64,
}

/// The `FAULT-FIGURE` lines of a test's output (a line repeated is read once, as the script's
/// `sort -u` did).
pub fn readings(output: &str) -> Vec<Reading> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for line in output.lines() {
        let Some(at) = line.find("FAULT-FIGURE ") else {
            continue;
        };
        let text = line.get(at..).unwrap_or_default().trim_end();
        let words: Vec<&str> = text.split_whitespace().collect();
        if let ["FAULT-FIGURE", name, seconds, "target", target] = words.as_slice()
            && let (Ok(seconds), Ok(target)) = (seconds.parse(), target.parse())
            && seen.insert(text.to_owned())
        {
            out.push(Reading {
                name: (*name).to_owned(),
                seconds,
                target,
            });
        }
    }
    out
}

/// One row of the table: every run of a figure.
#[derive(Debug, PartialEq)]
pub struct Row {
    pub name: String,
    pub runs: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub target: f64,
}

impl Row {
    /// `yes (every run)`, `median only` or `NO`.
    pub fn verdict(&self) -> &'static str {
        if self.max <= self.target {
            "yes (every run)"
        } else if self.median <= self.target {
            "median only"
        } else {
            "NO"
        }
    }
}

/// The rows of all readings, by figure name.
pub fn rows(readings: &[Reading]) -> Vec<Row> {
    let mut by_name: BTreeMap<&str, (Vec<f64>, f64)> = BTreeMap::new();
    for r in readings {
        let entry = by_name.entry(&r.name).or_insert((Vec::new(), r.target));
        entry.0.push(r.seconds);
        entry.1 = r.target;
    }
    by_name
        .into_iter()
        .filter_map(|(name, (values, target))| {
            let (min, median, max) = stats::spread(&values)?;
            Some(Row {
                name: name.to_owned(),
                runs: values.len(),
                min,
                median,
                max,
                target,
            })
        })
        .collect()
}

/// The table the script printed.
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<40} {:>5} {:>8} {:>8} {:>8} {:>8}  met\n",
        "figure", "runs", "min", "median", "max", "target"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<40} {:>5} {:>7.1}s {:>7.1}s {:>7.1}s {:>7.0}s  {}\n",
            r.name,
            r.runs,
            r.min,
            r.median,
            r.max,
            r.target,
            r.verdict()
        ));
    }
    out
}

/// The figures written to target/bench-faults/: each row's median against its target.
pub fn figures(rows: &[Row]) -> Vec<Figure> {
    rows.iter()
        .flat_map(|r| {
            [
                Figure::new(&format!("{}-median", r.name), Some(r.median), "s").target(Op::AtMost, r.target),
                Figure::new(&format!("{}-max", r.name), Some(r.max), "s").target(Op::AtMost, r.target),
            ]
        })
        .collect()
}

/// Runs the bench: `runs` times each test, then the table.
pub fn run(repo: &Path, runs: usize, expect: Option<&Path>) -> anyhow::Result<bool> {
    let cluster = Cluster::find(repo)?;
    if !cluster.dir.join("state.json").is_file() {
        bail!(
            "no launcher cluster in {}: run tests/cluster/up first",
            cluster.dir.display()
        );
    }
    let Some((binary, prefix)) = suite(repo) else {
        bail!("no fault suite: tests/it/faults.rs does not exist");
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let test = |args: &[&str]| {
        let mut cmd = Command::new(&cargo);
        cmd.current_dir(repo)
            .args(["test", "--test", binary])
            .args(args)
            .env(
                "CARGO_BUILD_JOBS",
                std::env::var("CARGO_BUILD_JOBS").unwrap_or_else(|_| "1".into()),
            )
            .env("CARGO_INCREMENTAL", "0")
            .env("CI", "true")
            .env("KUBECONFIG", &cluster.kubeconfig)
            .env("OLMRS_CLUSTER_DIR", &cluster.dir)
            .env("OLMRS_CLUSTER_BIN", &cluster.bin);
        cmd
    };
    let built = test(&["--no-run"]).status().context("failed to run cargo test")?;
    if !built.success() {
        bail!("cargo test --test {binary} --no-run failed");
    }
    let out_dir = repo.join("target/bench-faults");
    std::fs::create_dir_all(&out_dir)?;
    let mut all = Vec::new();
    for i in 1..=runs {
        for t in TESTS {
            eprintln!("run {i}/{runs}: {t}");
            let name = format!("{prefix}{t}");
            let out = test(&["-q", &name, "--", "--exact", "--nocapture", "--test-threads=1"])
                .output()
                .context("failed to run cargo test")?;
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            // A failed run still prints its figures; the failure is reported, the bench goes on.
            if !out.status.success() {
                let kept = out_dir.join("failed.log");
                std::fs::write(&kept, &text)?;
                eprintln!("  FAILED (log kept in {})", kept.display());
            }
            for r in readings(&text) {
                eprintln!(
                    "  FAULT-FIGURE {} {:.1} target {:.0}",
                    r.name, r.seconds, r.target
                );
                all.push(r);
            }
        }
    }
    let rows = rows(&all);
    println!();
    print!("{}", table(&rows));
    let mut figures = figures(&rows);
    if let Some(path) = expect {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("failed to read {}", path.display()))?;
        summary::apply_expect(&mut figures, &text, &path.display().to_string())?;
        println!();
        print!("{}", summary::table("against the expect file", &figures));
    }
    summary::write(&out_dir, &figures)?;
    println!("figures in {}", out_dir.join("figures.tsv").display());
    Ok(summary::verdict(&figures, expect.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "running 1 test\n\
        FAULT-FIGURE leader-failover 11.5 target 15\n\
        noise FAULT-FIGURE leader-kill-to-installs-done 20.1 target 60\n\
        FAULT-FIGURE leader-failover 11.5 target 15\n\
        FAULT-FIGURE broken x target 1\n\
        test a ... ok\n";

    #[test]
    fn the_suite_is_found_where_it_lives() {
        let dir = std::env::temp_dir().join(format!("xtask-suite-{}", std::process::id()));
        assert_eq!(suite(&dir), None);
        std::fs::create_dir_all(dir.join("tests/it")).expect("dirs");
        std::fs::write(dir.join("tests/it/faults.rs"), "").expect("write");
        assert_eq!(suite(&dir), Some(("it", "faults::")));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn figure_lines_are_read_once_each() {
        let got = readings(OUTPUT);
        assert_eq!(
            got,
            vec![
                Reading {
                    name: "leader-failover".into(),
                    seconds: 11.5,
                    target: 15.0
                },
                Reading {
                    name: "leader-kill-to-installs-done".into(),
                    seconds: 20.1,
                    target: 60.0
                },
            ]
        );
    }

    #[test]
    fn rows_give_min_median_max_and_the_verdict() {
        let r = |s: f64| Reading {
            name: "leader-failover".into(),
            seconds: s,
            target: 15.0,
        };
        let rows = rows(&[r(16.0), r(11.0), r(12.0)]);
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].min, rows[0].median, rows[0].max), (11.0, 12.0, 16.0));
        assert_eq!(rows[0].verdict(), "median only");
        assert_eq!(
            table(&rows),
            "figure                                    runs      min   median      max   target  met\n\
             leader-failover                              3    11.0s    12.0s    16.0s      15s  median only\n"
        );
        let even = super::rows(&[r(10.0), r(14.0)]);
        assert_eq!(
            even[0].median, 12.0,
            "the median of an even count is the mean of the middle two"
        );
        assert_eq!(even[0].verdict(), "yes (every run)");
        assert_eq!(super::rows(&[r(20.0)])[0].verdict(), "NO");
    }
}
