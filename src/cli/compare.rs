//! `wbsim compare A B`: a before/after table of two runs' summary metrics
//! (summary.json from `wbsim run`, or from live mode).
//!
//! By default it shows the figures that matter, grouped: throughput, each
//! device's IO, dirty pages, the ratelimits, the pauses and CPU. `--all`
//! shows every number in the summaries. Either way there are no duplicate
//! rows (the top-level copies of a single job's figures) and no sentinel
//! values (LONG_MAX, which the kernel prints for "all pages"). Each row has
//! its unit and the change in percent; `--format` gives Markdown, CSV or
//! JSON for a mailing-list reply or a spreadsheet.

use serde_json::Value;
use std::path::Path;

/// Flatten a summary into (dotted key, number) rows. Arrays of objects with
/// a `name` are keyed by that name (`jobs.dd.aggregate_mib_s`); of the trace
/// fields only the p50 is kept.
pub fn flatten(v: &Value) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let skip = |parent: &str, k: &str| {
        (parent.starts_with("trace.") && parent.contains(".fields.") && (k == "p10" || k == "p90"))
            || k == "seed"
            || k == "window"
            || k == "duration_s"
    };
    crate::metrics::summary_leaves(v, "", &skip, &mut |k, x| {
        if let Some(f) = x.as_f64() {
            out.push((k.to_string(), f));
        }
    });
    out
}

fn sentinel(v: f64) -> bool {
    v.abs() >= 4.0e18
}

/// The unit a device's or a cgroup's figure has by its name's suffix.
fn rate_unit(last: &str) -> &'static str {
    if last.ends_with("_mib_s") {
        "MiB/s"
    } else if last.ends_with("_iops") {
        "IOPS"
    } else if last.ends_with("_kib") {
        "KiB"
    } else if last.ends_with("merges_s") {
        "merges/s"
    } else if last.ends_with("_pct") {
        "%"
    } else {
        ""
    }
}

/// The group and unit of a flattened key.
fn classify(key: &str) -> (&'static str, &'static str) {
    let last = key.rsplit('.').next().unwrap_or(key);
    let field = key
        .strip_suffix(".p50")
        .and_then(|k| k.rsplit('.').next())
        .unwrap_or(last);
    if key.starts_with("devices.") {
        return ("IO", rate_unit(last));
    }
    if key.contains("cs_per_task_s") {
        return ("CPU", "/task/s");
    }
    if key.starts_with("bcache.") {
        let unit = match last {
            "dirty_data_mib" => "MiB",
            _ => "%",
        };
        return ("bcache", unit);
    }
    if key.starts_with("cgroups.") {
        return ("cgroups", rate_unit(last));
    }
    if key.starts_with("fio.") {
        let unit = if last == "ios" { "IOs" } else { "us" };
        return ("fio latency", unit);
    }
    if key.starts_with("simoop.") {
        let unit = if last.ends_with("_us") { "us" } else { "/s" };
        return ("simoop", unit);
    }
    if last == "cpu_user" || last == "cpu_system" {
        return ("CPU", "CPU-s/s");
    }
    if last.ends_with("mib_s") {
        return ("throughput", "MiB/s");
    }
    if last == "files_per_s" {
        return ("throughput", "files/s");
    }
    if key.starts_with("dirty_pages") || key.starts_with("nr_") {
        return ("dirty", "pages");
    }
    if key.starts_with("trace.") {
        if last == "count" {
            return ("events", "events");
        }
        if last == "per_s" {
            return ("events", "/s");
        }
        return match field {
            "pause" | "period" | "think" | "paused" => ("pauses", "ms"),
            "dirtied_pause" | "dirtied" => ("pauses", "pages"),
            "dirty_ratelimit"
            | "task_ratelimit"
            | "balanced_dirty_ratelimit"
            | "write_bw"
            | "awrite_bw"
            | "dirty_rate" => ("ratelimits", "KB/s"),
            "dirty" | "wb_dirty" | "limit" | "setpoint" | "wb_setpoint" | "thresh"
            | "bg_thresh" | "writeback" | "bdi_dirty" => ("dirty", "pages"),
            _ => ("other", ""),
        };
    }
    ("other", "")
}

/// The rows shown without `--all`, by key pattern (`*` is one name), in
/// the order of the table.
const DEFAULT_ROWS: &[&str] = &[
    "jobs.*.aggregate_mib_s",
    "jobs.*.files_per_s",
    "devices.*.write_mib_s",
    "devices.*.write_iops",
    "devices.*.avg_request_kib",
    "devices.*.read_mib_s",
    "devices.*.read_iops",
    "dirty_pages.p50",
    "nr_writeback.p50",
    "trace.balance_dirty_pages.fields.dirty_ratelimit.p50",
    "trace.balance_dirty_pages.fields.task_ratelimit.p50",
    "trace.bdi_dirty_ratelimit.fields.write_bw.p50",
    "trace.balance_dirty_pages.fields.pause.p50",
    "trace.balance_dirty_pages.fields.period.p50",
    "trace.balance_dirty_pages.fields.dirtied_pause.p50",
    "jobs.*.voluntary_cs_per_task_s.p50",
    "simoop.read_p99_us",
    "simoop.write_p99_us",
    "simoop.alloc_p99_us",
    "simoop.work_rate",
    "simoop.alloc_stall_rate",
    "bcache.*.in_use_p50",
    "bcache.*.in_use_max",
    "bcache.*.past_sync_cutoff_pct",
    "bcache.*.dirty_data_mib",
    "fio.*.read.clat_p50_us",
    "fio.*.read.clat_p99_us",
    "fio.*.write.clat_p50_us",
    "fio.*.write.clat_p99_us",
    "cgroups.*.write_mib_s",
    "cgroups.*.read_mib_s",
    "cgroups.*.io_some_pct",
    "cgroups.*.memory_some_pct",
];

fn matches(pattern: &str, key: &str) -> bool {
    let p: Vec<&str> = pattern.split('.').collect();
    let k: Vec<&str> = key.split('.').collect();
    p.len() == k.len() && p.iter().zip(&k).all(|(a, b)| *a == "*" || a == b)
}

/// One row of the comparison.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Row {
    pub group: &'static str,
    pub metric: String,
    pub unit: &'static str,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// (b - a) / |a| in percent; None where a is 0 or missing.
    pub change_pct: Option<f64>,
}

/// The rows for summaries `a` and `b`: the default set, or every number
/// (`all`), without duplicates or sentinels.
pub fn rows(a: &Value, b: &Value, all: bool) -> Vec<Row> {
    let fa = flatten(a);
    let fb = flatten(b);
    let mut keys: Vec<&String> = fa.iter().map(|(k, _)| k).collect();
    for (k, _) in &fb {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let njobs = |v: &Value| {
        v.get("jobs")
            .and_then(|j| j.as_array())
            .map_or(0, |j| j.len())
    };
    // with one job, the top-level figures are that job's again
    let one_job = njobs(a) <= 1 && njobs(b) <= 1;
    let dup = |k: &str| {
        one_job
            && (k == "dirtying_mib_s"
                || k.starts_with("voluntary_cs_per_task_s.")
                || k.starts_with("involuntary_cs_per_task_s."))
    };
    let get = |f: &[(String, f64)], k: &str| f.iter().find(|(x, _)| x == k).map(|(_, v)| *v);
    let mut chosen: Vec<&String> = if all {
        keys.into_iter().filter(|k| !dup(k)).collect()
    } else {
        let mut v = Vec::new();
        for p in DEFAULT_ROWS {
            for k in &keys {
                if matches(p, k) && !v.contains(k) {
                    v.push(*k);
                }
            }
        }
        // a device's or a cgroup's reads, and a cgroup's memory
        // pressure, only where there are any
        v.retain(|k| {
            !(k.ends_with(".read_mib_s")
                || k.ends_with(".read_iops")
                || k.ends_with(".memory_some_pct"))
                || get(&fa, k).unwrap_or(0.0) != 0.0
                || get(&fb, k).unwrap_or(0.0) != 0.0
        });
        v
    };
    chosen.retain(|k| !get(&fa, k).is_some_and(sentinel) && !get(&fb, k).is_some_and(sentinel));
    chosen
        .into_iter()
        .map(|k| {
            let (group, unit) = classify(k);
            let (va, vb) = (get(&fa, k), get(&fb, k));
            let change_pct = match (va, vb) {
                (Some(x), Some(y)) if x != 0.0 => Some((y - x) / x.abs() * 100.0),
                (Some(x), Some(y)) if x == y => Some(0.0),
                _ => None,
            };
            Row {
                group,
                metric: k.clone(),
                unit,
                a: va,
                b: vb,
                change_pct,
            }
        })
        .collect()
}

pub(crate) fn num(v: Option<f64>) -> String {
    v.map(|x| {
        let s = format!("{x:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    })
    .unwrap_or_else(|| "-".into())
}

pub(crate) fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{x:+.1}")).unwrap_or_else(|| "-".into())
}

/// Output formats of `wbsim compare --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Csv,
    Json,
}

/// The rows as text: grouped, with units.
pub fn table(rows: &[Row], label_a: &str, label_b: &str) -> String {
    let w = rows
        .iter()
        .map(|r| r.metric.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut s = format!(
        "{:<w$}  {:<8}  {:>14}  {:>14}  {:>9}\n",
        "metric", "unit", label_a, label_b, "change %"
    );
    let mut group = "";
    for r in rows {
        if r.group != group {
            group = r.group;
            s += &format!("{group}\n");
        }
        s += &format!(
            "{:<w$}  {:<8}  {:>14}  {:>14}  {:>9}\n",
            r.metric,
            r.unit,
            num(r.a),
            num(r.b),
            pct(r.change_pct)
        );
    }
    s
}

/// The rows in `fmt`.
pub fn render(rows: &[Row], fmt: Format, label_a: &str, label_b: &str) -> String {
    match fmt {
        Format::Text => table(rows, label_a, label_b),
        Format::Markdown => {
            let mut s =
                format!("| group | metric | unit | {label_a} | {label_b} | change % |\n|---|---|---|---:|---:|---:|\n");
            for r in rows {
                s += &format!(
                    "| {} | {} | {} | {} | {} | {} |\n",
                    r.group,
                    r.metric,
                    r.unit,
                    num(r.a),
                    num(r.b),
                    pct(r.change_pct)
                );
            }
            s
        }
        Format::Csv => {
            let q = |t: &str| {
                if t.contains([',', '"']) {
                    format!("\"{}\"", t.replace('"', "\"\""))
                } else {
                    t.to_string()
                }
            };
            let mut s = format!(
                "group,metric,unit,{},{},change_pct\n",
                q(label_a),
                q(label_b)
            );
            let n = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
            for r in rows {
                s += &format!(
                    "{},{},{},{},{},{}\n",
                    r.group,
                    q(&r.metric),
                    r.unit,
                    n(r.a),
                    n(r.b),
                    r.change_pct.map(|x| format!("{x:.3}")).unwrap_or_default()
                );
            }
            s
        }
        Format::Json => {
            let v = serde_json::json!({"a": label_a, "b": label_b, "rows": rows});
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
        }
    }
}

pub(crate) fn load(dir: &Path) -> Result<Value, String> {
    let p = if dir.is_dir() {
        dir.join("summary.json")
    } else {
        dir.to_path_buf()
    };
    let text =
        std::fs::read_to_string(&p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a summary.json: {e}", p.display()))?;
    // a summary has these; a JSON file that is not one gets a clear no
    for k in ["scenario", "window", "devices"] {
        if v.get(k).is_none() {
            return Err(format!(
                "{}: not a wbsim summary.json (no `{k}`); expected the output directory of `wbsim run` or `wbsim live`, or its summary.json",
                p.display()
            ));
        }
    }
    Ok(v)
}

pub fn run(a: &Path, b: &Path, all: bool, fmt: Format) -> Result<String, String> {
    let (va, vb) = (load(a)?, load(b)?);
    let name = |v: &Value, d: &str| {
        v.get("scenario")
            .and_then(|x| x.as_str())
            .unwrap_or(d)
            .to_string()
    };
    let (la, lb) = (name(&va, "A"), name(&vb, "B"));
    let (la, lb) = if la == lb {
        ("A".to_string(), "B".to_string())
    } else {
        (la, lb)
    };
    let rows = rows(&va, &vb, all);
    let body = render(&rows, fmt, &la, &lb);
    Ok(match fmt {
        Format::Text => {
            let more = if all {
                String::new()
            } else {
                "\n(the figures that matter; --all shows every number in the summaries)\n".into()
            };
            format!(
                "A = {}\nB = {}\n\n{body}{more}",
                super::shown(a),
                super::shown(b)
            )
        }
        _ => body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(mib: f64, pause: f64, writers: u64) -> Value {
        serde_json::json!({"scenario": "x", "seed": 1, "window": {"start_s": 0, "end_s": 1},
            "dirtying_mib_s": mib,
            "voluntary_cs_per_task_s": {"p50": 5.0},
            "jobs": [{"name": "dd", "tasks": writers, "aggregate_mib_s": mib,
                      "voluntary_cs_per_task_s": {"p50": 5.0}}],
            "devices": [{"name": "loop0", "write_mib_s": 50.0, "write_iops": 46.0,
                         "avg_request_kib": 1100.0, "read_mib_s": 0.0, "read_iops": 0.0}],
            "dirty_pages": {"p10": 1, "p50": 47000, "p90": 3},
            "trace": {"balance_dirty_pages": {"count": 10, "fields": {
                "pause": {"p10": 1, "p50": pause, "p90": 3}}},
                "writeback_written": {"count": 3, "fields": {
                "nr_pages": {"p50": 9223372036854750208.0_f64}}}}})
    }

    #[test]
    fn flattens_and_keeps_the_p50_of_trace_fields() {
        let f = flatten(&summary(40.0, 2.0, 10));
        assert!(f.contains(&("jobs.dd.aggregate_mib_s".into(), 40.0)));
        assert!(f.contains(&("trace.balance_dirty_pages.fields.pause.p50".into(), 2.0)));
        assert!(!f
            .iter()
            .any(|(k, _)| k.ends_with("pause.p10") || k == "seed"));
    }

    #[test]
    fn the_default_rows_are_grouped_with_units_and_no_duplicates() {
        let (a, b) = (summary(40.0, 2.0, 10), summary(44.0, 4.0, 10));
        let r = rows(&a, &b, false);
        let keys: Vec<&str> = r.iter().map(|r| r.metric.as_str()).collect();
        assert_eq!(
            keys,
            [
                "jobs.dd.aggregate_mib_s",
                "devices.loop0.write_mib_s",
                "devices.loop0.write_iops",
                "devices.loop0.avg_request_kib",
                "dirty_pages.p50",
                "trace.balance_dirty_pages.fields.pause.p50",
                "jobs.dd.voluntary_cs_per_task_s.p50"
            ]
        );
        assert_eq!((r[0].group, r[0].unit), ("throughput", "MiB/s"));
        assert_eq!(r[0].change_pct, Some(10.0));
        assert_eq!((r[5].group, r[5].unit), ("pauses", "ms"));
        assert_eq!(r[5].change_pct, Some(100.0));
        let t = table(&r, "A", "B");
        assert!(
            t.contains("\nthroughput\n") && t.contains("\npauses\n"),
            "{t}"
        );
        assert!(
            t.lines().any(|l| l.starts_with("jobs.dd.aggregate_mib_s")
                && l.contains("MiB/s")
                && l.trim_end().ends_with("+10.0")),
            "{t}"
        );
    }

    #[test]
    fn each_cgroups_rates_and_pressure_are_default_rows() {
        let with = |b_mib: f64, b_io: f64| {
            let mut s = summary(40.0, 2.0, 10);
            s["cgroups"] = serde_json::json!([
                {"name": "A", "write_mib_s": 10.0, "read_mib_s": 0.0, "io_some_pct": 99.0,
                 "memory_some_pct": 0.0, "wbytes": 1},
                {"name": "B", "write_mib_s": b_mib, "read_mib_s": 0.0, "io_some_pct": b_io,
                 "memory_some_pct": 0.0, "wbytes": 1}]);
            s
        };
        let r = rows(&with(15.0, 99.5), &with(25.0, 99.0), false);
        let cg: Vec<(&str, &str, &str)> = r
            .iter()
            .filter(|r| r.metric.starts_with("cgroups."))
            .map(|r| (r.metric.as_str(), r.group, r.unit))
            .collect();
        // reads and memory pressure only where there are any
        assert_eq!(
            cg,
            [
                ("cgroups.A.write_mib_s", "cgroups", "MiB/s"),
                ("cgroups.B.write_mib_s", "cgroups", "MiB/s"),
                ("cgroups.A.io_some_pct", "cgroups", "%"),
                ("cgroups.B.io_some_pct", "cgroups", "%"),
            ]
        );
    }

    #[test]
    fn all_rows_skip_the_single_jobs_copies_and_the_sentinels() {
        let (a, b) = (summary(40.0, 2.0, 10), summary(44.0, 4.0, 12));
        let r = rows(&a, &b, true);
        let keys: Vec<&str> = r.iter().map(|r| r.metric.as_str()).collect();
        assert!(keys.contains(&"jobs.dd.tasks"));
        assert!(!keys.contains(&"dirtying_mib_s"), "{keys:?}");
        assert!(
            !keys.iter().any(|k| k.starts_with("voluntary_cs")),
            "{keys:?}"
        );
        assert!(!keys.iter().any(|k| k.contains("nr_pages")), "{keys:?}");
        // with two jobs the top-level figures are their sum: kept
        let mut two = a.clone();
        two["jobs"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"name": "dd2", "aggregate_mib_s": 1.0}));
        let r = rows(&two, &b, true);
        assert!(r.iter().any(|r| r.metric == "dirtying_mib_s"));
    }

    #[test]
    fn markdown_csv_and_json() {
        let (a, b) = (summary(40.0, 2.0, 10), summary(44.0, 4.0, 10));
        let r = rows(&a, &b, false);
        let md = render(&r, Format::Markdown, "before", "after");
        assert!(md.starts_with("| group | metric | unit | before | after | change % |\n|---|"));
        assert!(
            md.contains("| throughput | jobs.dd.aggregate_mib_s | MiB/s | 40 | 44 | +10.0 |"),
            "{md}"
        );
        let csv = render(&r, Format::Csv, "before", "a,b");
        assert!(
            csv.starts_with("group,metric,unit,before,\"a,b\",change_pct\n"),
            "{csv}"
        );
        assert!(
            csv.contains("throughput,jobs.dd.aggregate_mib_s,MiB/s,40,44,10.000\n"),
            "{csv}"
        );
        let js: Value = serde_json::from_str(&render(&r, Format::Json, "A", "B")).unwrap();
        assert_eq!(js["rows"][0]["metric"], "jobs.dd.aggregate_mib_s");
        assert_eq!(js["rows"][0]["change_pct"], 10.0);
    }

    #[test]
    fn a_json_file_that_is_not_a_summary_is_refused() {
        let d = std::env::temp_dir().join(format!("wbsim-cmp-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("other.json");
        std::fs::write(&f, "{\"jobs\": []}").unwrap();
        let e = run(&f, &f, false, Format::Text).unwrap_err();
        assert!(
            e.contains("not a wbsim summary.json (no `scenario`)"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
