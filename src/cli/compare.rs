//! `wbsim compare DIR_A DIR_B`: a before/after table of two runs' summary
//! metrics (summary.json from `wbsim run`, or from live mode).

use serde_json::Value;
use std::path::Path;

/// Flatten a summary into (dotted key, number) rows. Arrays of objects with
/// a `name` are keyed by that name (`jobs.dd.aggregate_mib_s`); of the trace
/// fields only the p50 is kept, to keep the table readable.
pub fn flatten(v: &Value) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    walk(v, String::new(), &mut out);
    out
}

fn walk(v: &Value, key: String, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                out.push((key, f));
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                if key.starts_with("trace.")
                    && key.contains(".fields.")
                    && (k == "p10" || k == "p90")
                {
                    continue;
                }
                if k == "seed" || k == "window" || k == "duration_s" {
                    continue;
                }
                let nk = if key.is_empty() {
                    k.clone()
                } else {
                    format!("{key}.{k}")
                };
                walk(x, nk, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let name = x
                    .get("name")
                    .and_then(|n| n.as_str())
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| i.to_string());
                walk(x, format!("{key}.{name}"), out);
            }
        }
        _ => {}
    }
}

fn load(dir: &Path) -> Result<Value, String> {
    let p = if dir.is_dir() {
        dir.join("summary.json")
    } else {
        dir.to_path_buf()
    };
    let text =
        std::fs::read_to_string(&p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not a summary.json: {e}", p.display()))
}

/// The comparison table as text.
pub fn table(a: &Value, b: &Value, label_a: &str, label_b: &str) -> String {
    let fa = flatten(a);
    let fb = flatten(b);
    let mut keys: Vec<&String> = fa.iter().map(|(k, _)| k).collect();
    for (k, _) in &fb {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let get = |f: &[(String, f64)], k: &str| f.iter().find(|(x, _)| x == k).map(|(_, v)| *v);
    let w = keys.iter().map(|k| k.len()).max().unwrap_or(6).max(6);
    let mut s = format!(
        "{:<w$}  {:>14}  {:>14}  {:>9}\n",
        "metric", label_a, label_b, "change %"
    );
    for k in keys {
        let (va, vb) = (get(&fa, k), get(&fb, k));
        let f = |v: Option<f64>| {
            v.map(|x| {
                format!("{x:.3}")
                    .trim_end_matches('0')
                    .trim_end_matches('.')
                    .to_string()
            })
            .unwrap_or_else(|| "-".into())
        };
        let ch = match (va, vb) {
            (Some(x), Some(y)) if x != 0.0 => format!("{:+.1}", (y - x) / x.abs() * 100.0),
            (Some(x), Some(y)) if x == y => "0.0".into(),
            _ => "-".into(),
        };
        s += &format!("{:<w$}  {:>14}  {:>14}  {:>9}\n", k, f(va), f(vb), ch);
    }
    s
}

pub fn run(a: &Path, b: &Path) -> Result<String, String> {
    let (va, vb) = (load(a)?, load(b)?);
    let la = va
        .get("scenario")
        .and_then(|x| x.as_str())
        .unwrap_or("A")
        .to_string();
    let lb = vb
        .get("scenario")
        .and_then(|x| x.as_str())
        .unwrap_or("B")
        .to_string();
    let (la, lb) = if la == lb {
        ("A".to_string(), "B".to_string())
    } else {
        (la, lb)
    };
    Ok(format!(
        "A = {}\nB = {}\n\n{}",
        a.display(),
        b.display(),
        table(&va, &vb, &la, &lb)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn flattens_and_compares() {
        let a: Value = serde_json::json!({"scenario": "x", "seed": 1, "dirtying_mib_s": 40.0,
            "jobs": [{"name": "dd", "aggregate_mib_s": 40.0}],
            "trace": {"balance_dirty_pages": {"count": 10, "fields": {"pause": {"p10": 1, "p50": 2, "p90": 3}}}}});
        let b: Value = serde_json::json!({"scenario": "x", "seed": 1, "dirtying_mib_s": 44.0,
            "jobs": [{"name": "dd", "aggregate_mib_s": 44.0}],
            "trace": {"balance_dirty_pages": {"count": 10, "fields": {"pause": {"p10": 1, "p50": 4, "p90": 3}}}}});
        let f = flatten(&a);
        assert!(f.contains(&("jobs.dd.aggregate_mib_s".into(), 40.0)));
        assert!(f.contains(&("trace.balance_dirty_pages.fields.pause.p50".into(), 2.0)));
        assert!(!f
            .iter()
            .any(|(k, _)| k.ends_with("pause.p10") || k == "seed"));
        let t = table(&a, &b, "A", "B");
        assert!(
            t.lines()
                .any(|l| l.starts_with("dirtying_mib_s") && l.trim_end().ends_with("+10.0")),
            "{t}"
        );
        assert!(
            t.lines()
                .any(|l| l.contains("pause.p50") && l.trim_end().ends_with("+100.0")),
            "{t}"
        );
    }
}
