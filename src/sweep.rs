//! Sweeps: many scenarios from one plan, each run exactly as
//! `wbsim run SCENARIO --set ... --seed N` would run it, and one table of
//! their results.
//!
//! A plan (TOML) names a base scenario (or several), fixed `--set`s, axes
//! and seeds:
//!
//! ```toml
//! scenario = "../dd-matrix/dd-n1-bs1M.toml"   # relative to the plan; or
//! # scenarios = ["a.toml", "b.toml"]          # an axis of its own
//! seeds = "1..=4"                              # or [1, 2], or 7
//! combine = "product"                          # or "zip": all axes in step
//! [set]
//! "run.duration" = "60s"
//! [axes]
//! "jobs.dd.numjobs" = [1, 10, 100]
//! "vm.dirty_bytes" = ["50M", "100M", "200M"]
//! [axes.limits]                                # keys that move together
//! "vm.dirty_bytes" = ["50M", "1G"]
//! "vm.dirty_background_bytes" = ["25M", "500M"]
//! ```
//!
//! Axes combine as a product in the order written (the last varies
//! fastest), then the seeds; a table under `[axes]` zips its keys. An
//! integer range is a string, `"1..8"` (8 excluded) or `"1..=8"`.
//!
//! Each point's outputs go to `OUT/points/ID/`, ID a stable hash of its
//! settings (FNV-1a of the scenario as the plan names it, the settings in
//! order and the seed), with `point.json` written last: a point whose
//! `point.json` is there is done, so a sweep resumes where it stopped.
//! `results.csv` has one row per point done: index, ID, scenario, the axes'
//! values, seed, then every scalar figure of `summary.json`, flattened to
//! dotted names (array elements by their `name`, else their index),
//! columns sorted by name.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A sweep plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The plan file.
    pub path: PathBuf,
    /// Base scenarios as the plan names them (None: the built-in one).
    pub scenarios: Vec<Option<String>>,
    /// `--set`s applied to every point, before the axes.
    pub sets: Vec<String>,
    pub axes: Vec<Axis>,
    pub seeds: Vec<u64>,
    pub zip: bool,
}

/// One axis: one key, or several zipped (`values[i][k]` is key k's value
/// at step i).
#[derive(Clone, Debug)]
pub struct Axis {
    pub keys: Vec<String>,
    pub values: Vec<Vec<String>>,
}

/// One point of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// Its place in the plan's order (what `--index` and `--shard` use).
    pub index: usize,
    pub scenario: Option<String>,
    /// The axes' settings, in the plan's key order.
    pub settings: Vec<(String, String)>,
    pub seed: u64,
}

impl Point {
    /// The stable ID: FNV-1a (64 bits) of the scenario, the settings and
    /// the seed, in hex.
    pub fn id(&self) -> String {
        let mut text = format!("scenario={}\n", self.scenario.as_deref().unwrap_or("-"));
        for (k, v) in &self.settings {
            text.push_str(&format!("{k}={v}\n"));
        }
        text.push_str(&format!("seed={}\n", self.seed));
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{h:016x}")
    }

    /// The `--set`s that make this point: the plan's fixed ones, the axes'
    /// and the seed.
    pub fn sets(&self, plan: &Plan) -> Vec<String> {
        let mut v = plan.sets.clone();
        v.extend(self.settings.iter().map(|(k, x)| format!("{k}={x}")));
        v.push(format!("run.seed={}", self.seed));
        v
    }

    /// The scenario file, resolved against the plan's directory.
    pub fn scenario_path(&self, plan: &Plan) -> Option<PathBuf> {
        self.scenario.as_ref().map(|s| {
            let p = Path::new(s);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                plan.path.parent().unwrap_or(Path::new(".")).join(p)
            }
        })
    }

    /// Load this point's scenario, as `wbsim run` would.
    pub fn load(&self, plan: &Plan) -> Result<crate::scenario::Scenario, String> {
        let sets = self.sets(plan);
        let r = match self.scenario_path(plan) {
            Some(p) => crate::scenario::Scenario::load_file(&p.to_string_lossy(), &sets),
            None => crate::scenario::Scenario::builtin(&sets),
        };
        r.map_err(|e| e.to_string())
    }
}

/// 1-based line of byte `off` in `text`.
fn line_of(text: &str, off: usize) -> usize {
    text[..off.min(text.len())].matches('\n').count() + 1
}

/// A TOML value as a `--set` value.
fn set_value(v: &toml_edit::Value) -> Option<String> {
    use toml_edit::Value as V;
    Some(match v {
        V::String(s) => s.value().clone(),
        V::Integer(i) => i.value().to_string(),
        V::Float(f) => f.value().to_string(),
        V::Boolean(b) => b.value().to_string(),
        V::Array(a) => {
            let items: Option<Vec<String>> = a.iter().map(set_value).collect();
            format!("[{}]", items?.join(","))
        }
        _ => return None,
    })
}

/// An integer range string: `A..B` (B excluded) or `A..=B`.
fn int_range(s: &str) -> Option<Vec<u64>> {
    let (a, b, incl) = if let Some((a, b)) = s.split_once("..=") {
        (a, b, true)
    } else {
        let (a, b) = s.split_once("..")?;
        (a, b, false)
    };
    let a: u64 = a.trim().parse().ok()?;
    let b: u64 = b.trim().parse().ok()?;
    let end = if incl { b.checked_add(1)? } else { b };
    (a < end && end - a <= 1_000_000).then(|| (a..end).collect())
}

/// The most points a plan may have.
pub const MAX_POINTS: usize = 1_000_000;

impl Plan {
    /// Read and check a plan file.
    pub fn load(path: &Path) -> Result<Plan, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read the plan: {e}", path.display()))?;
        Plan::parse(&text, path)
    }

    /// Parse a plan's text (`path` names it in errors and anchors its
    /// relative scenario paths).
    pub fn parse(text: &str, path: &Path) -> Result<Plan, String> {
        let name = path.display().to_string();
        let doc = toml_edit::ImDocument::parse(text.to_string()).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            format!("{name}:{line}: not valid TOML: {}", e.message().trim())
        })?;
        let root = doc.as_table();
        let at = |item: &toml_edit::Item| item.span().map_or(1, |s| line_of(text, s.start));
        let keyline = |t: &toml_edit::Table, k: &str| {
            t.key(k)
                .and_then(|k| k.span())
                .map_or(1, |s| line_of(text, s.start))
        };
        let mut plan = Plan {
            path: path.to_path_buf(),
            scenarios: vec![None],
            sets: Vec::new(),
            axes: Vec::new(),
            seeds: vec![1],
            zip: false,
        };
        for (k, item) in root.iter() {
            let line = keyline(root, k);
            let err = |what: &str| format!("{name}:{line}: `{k}`: {what}");
            match k {
                "scenario" => {
                    let s = item
                        .as_str()
                        .ok_or_else(|| err("expected a scenario file path (a string)"))?;
                    plan.scenarios = vec![Some(s.to_string())];
                }
                "scenarios" => {
                    let a = item
                        .as_array()
                        .ok_or_else(|| err("expected a list of scenario file paths"))?;
                    let v: Option<Vec<Option<String>>> =
                        a.iter().map(|x| x.as_str().map(|s| Some(s.to_string()))).collect();
                    plan.scenarios = v
                        .filter(|v| !v.is_empty())
                        .ok_or_else(|| err("expected a non-empty list of strings"))?;
                }
                "seeds" => {
                    let bad = || err("expected a seed, a list of seeds, or a range \"1..8\" / \"1..=8\"");
                    plan.seeds = match item.as_value().ok_or_else(bad)? {
                        toml_edit::Value::Integer(i) => {
                            vec![u64::try_from(*i.value()).map_err(|_| bad())?]
                        }
                        toml_edit::Value::String(s) => int_range(s.value()).ok_or_else(bad)?,
                        toml_edit::Value::Array(a) => a
                            .iter()
                            .map(|x| x.as_integer().and_then(|i| u64::try_from(i).ok()))
                            .collect::<Option<Vec<u64>>>()
                            .filter(|v| !v.is_empty())
                            .ok_or_else(bad)?,
                        _ => return Err(bad()),
                    };
                }
                "combine" => match item.as_str() {
                    Some("product") => plan.zip = false,
                    Some("zip") => plan.zip = true,
                    _ => return Err(err("expected \"product\" or \"zip\"")),
                },
                "set" => {
                    let t = item
                        .as_table_like()
                        .ok_or_else(|| err("expected a table of PATH = VALUE"))?;
                    for (sk, sv) in t.iter() {
                        let v = sv.as_value().and_then(set_value).ok_or_else(|| {
                            format!("{name}:{}: set `{sk}`: expected a value", at(sv))
                        })?;
                        plan.sets.push(format!("{sk}={v}"));
                    }
                }
                "axes" => {
                    let t = item
                        .as_table_like()
                        .ok_or_else(|| err("expected a table of PATH = [VALUES]"))?;
                    for (ak, av) in t.iter() {
                        plan.axes.push(axis(ak, av, &name, &at)?);
                    }
                }
                _ => {
                    return Err(err(
                        "unknown key; a plan has scenario or scenarios, seeds, combine, [set] and [axes]",
                    ))
                }
            }
        }
        if plan.zip {
            let lens: Vec<usize> = plan.axes.iter().map(|a| a.values.len()).collect();
            if lens.windows(2).any(|w| w[0] != w[1]) {
                return Err(format!(
                    "{name}: combine = \"zip\" needs axes of one length; they have {lens:?}"
                ));
            }
        }
        let n = plan.points_len();
        if n > MAX_POINTS {
            return Err(format!(
                "{name}: the plan has {n} points; at most {MAX_POINTS} are allowed"
            ));
        }
        Ok(plan)
    }

    fn steps(&self) -> usize {
        if self.axes.is_empty() {
            1
        } else if self.zip {
            self.axes[0].values.len()
        } else {
            self.axes
                .iter()
                .map(|a| a.values.len())
                .fold(1usize, |p, n| p.saturating_mul(n))
        }
    }

    /// How many points the plan has.
    pub fn points_len(&self) -> usize {
        self.scenarios
            .len()
            .saturating_mul(self.steps())
            .saturating_mul(self.seeds.len())
    }

    /// The points, in order: scenarios outermost, then the axes (the last
    /// varies fastest), then the seeds.
    pub fn points(&self) -> Vec<Point> {
        let mut out = Vec::with_capacity(self.points_len());
        for sc in &self.scenarios {
            for step in 0..self.steps() {
                // the value index on each axis for this step
                let mut pick = vec![0; self.axes.len()];
                if self.zip {
                    pick.iter_mut().for_each(|p| *p = step);
                } else {
                    let mut r = step;
                    for (i, a) in self.axes.iter().enumerate().rev() {
                        pick[i] = r % a.values.len();
                        r /= a.values.len();
                    }
                }
                let mut settings = Vec::new();
                for (a, &p) in self.axes.iter().zip(&pick) {
                    for (k, v) in a.keys.iter().zip(&a.values[p]) {
                        settings.push((k.clone(), v.clone()));
                    }
                }
                for &seed in &self.seeds {
                    out.push(Point {
                        index: out.len(),
                        scenario: sc.clone(),
                        settings: settings.clone(),
                        seed,
                    });
                }
            }
        }
        out
    }
}

/// One `[axes]` entry: a key with a list or a range, or a table of keys
/// zipped together.
fn axis(
    key: &str,
    item: &toml_edit::Item,
    name: &str,
    at: &dyn Fn(&toml_edit::Item) -> usize,
) -> Result<Axis, String> {
    let list = |k: &str, it: &toml_edit::Item| -> Result<Vec<String>, String> {
        let bad = || {
            format!(
                "{name}:{}: axis `{k}`: expected a non-empty list of values or an integer range \"1..8\"",
                at(it)
            )
        };
        match it.as_value().ok_or_else(bad)? {
            toml_edit::Value::Array(a) => {
                let v: Option<Vec<String>> = a.iter().map(set_value).collect();
                v.filter(|v| !v.is_empty()).ok_or_else(bad)
            }
            toml_edit::Value::String(s) => int_range(s.value())
                .map(|v| v.iter().map(|x| x.to_string()).collect())
                .ok_or_else(bad),
            _ => Err(bad()),
        }
    };
    if let Some(t) = item.as_table_like() {
        let mut keys = Vec::new();
        let mut cols = Vec::new();
        for (k, it) in t.iter() {
            keys.push(k.to_string());
            cols.push(list(k, it)?);
        }
        let n = cols.first().map_or(0, |c| c.len());
        if keys.is_empty() || cols.iter().any(|c| c.len() != n) {
            return Err(format!(
                "{name}:{}: axis group `{key}`: its keys need lists of one length (they move together)",
                at(item)
            ));
        }
        let values = (0..n)
            .map(|i| cols.iter().map(|c| c[i].clone()).collect())
            .collect();
        Ok(Axis { keys, values })
    } else {
        let v = list(key, item)?;
        Ok(Axis {
            keys: vec![key.to_string()],
            values: v.into_iter().map(|x| vec![x]).collect(),
        })
    }
}

/// What `point.json` records: enough to rebuild the point's row without
/// the plan (`wbsim sweep merge`).
pub fn point_json(p: &Point) -> String {
    let settings: Vec<Value> = p
        .settings
        .iter()
        .map(|(k, v)| serde_json::json!([k, v]))
        .collect();
    let mut s = serde_json::to_string_pretty(&serde_json::json!({
        "index": p.index,
        "id": p.id(),
        "scenario": p.scenario,
        "settings": settings,
        "seed": p.seed,
    }))
    .expect("serialises");
    s.push('\n');
    s
}

fn parse_point_json(text: &str) -> Option<Point> {
    let v: Value = serde_json::from_str(text).ok()?;
    let settings = v["settings"]
        .as_array()?
        .iter()
        .map(|kv| Some((kv[0].as_str()?.to_string(), kv[1].as_str()?.to_string())))
        .collect::<Option<Vec<_>>>()?;
    Some(Point {
        index: usize::try_from(v["index"].as_u64()?).ok()?,
        scenario: v["scenario"].as_str().map(String::from),
        settings,
        seed: v["seed"].as_u64()?,
    })
}

/// The directory of a point's outputs.
pub fn point_dir(out: &Path, p: &Point) -> PathBuf {
    out.join("points").join(p.id())
}

/// Whether `p` is done in `out` (its `point.json` is there and names it).
pub fn is_done(out: &Path, p: &Point) -> bool {
    std::fs::read_to_string(point_dir(out, p).join("point.json"))
        .ok()
        .and_then(|t| parse_point_json(&t))
        .is_some_and(|q| q.settings == p.settings && q.seed == p.seed && q.scenario == p.scenario)
}

/// Run one point: simulate, write its outputs, then `point.json`.
pub fn run_point(plan: &Plan, p: &Point, out: &Path) -> Result<(), String> {
    let sc = p.load(plan)?;
    let dir = point_dir(out, p);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let has_fio = sc
        .jobs
        .iter()
        .any(|j| matches!(j.kind, crate::scenario::JobKind::Fio(_)));
    let opts = crate::output::SimOpts {
        trace: true,
        fio_log_dir: has_fio.then(|| dir.clone()),
        trace_dir: Some(dir.clone()),
        // as `wbsim run` without --force
        trace_limit: Some(crate::output::TRACE_LIMIT),
        ..Default::default()
    };
    let r = crate::output::simulate_with(&sc, &opts, |_, _| {})?;
    crate::output::write_outputs(&dir, &r).map_err(|e| format!("{}: {e}", dir.display()))?;
    if let Some(why) = r.stopped_by {
        // its outputs stay for a look; without point.json it is not done
        return Err(format!(
            "stopped at {:.3} s simulated ({why}); see {}",
            r.stopped_at.unwrap_or(0) as f64 / 1e9,
            dir.display()
        ));
    }
    let tmp = dir.join("point.json.tmp");
    std::fs::write(&tmp, point_json(p))
        .and_then(|_| std::fs::rename(&tmp, dir.join("point.json")))
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// Flatten a summary's scalar figures into dotted names (booleans as 0
/// or 1; strings are not figures).
pub fn flatten(v: &Value, prefix: &str, out: &mut BTreeMap<String, String>) {
    crate::metrics::summary_leaves(v, prefix, &|_, _| false, &mut |k, x| match x {
        Value::Number(n) => {
            out.insert(k.to_string(), n.to_string());
        }
        Value::Bool(b) => {
            out.insert(k.to_string(), (*b as u8).to_string());
        }
        _ => {}
    });
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The points done under the output directories, by index (a point found
/// twice is taken once).
pub fn done_points(dirs: &[PathBuf]) -> Result<Vec<(Point, PathBuf)>, String> {
    let mut found: BTreeMap<usize, (Point, PathBuf)> = BTreeMap::new();
    for d in dirs {
        let pts = d.join("points");
        let Ok(rd) = std::fs::read_dir(&pts) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for e in entries {
            let Ok(t) = std::fs::read_to_string(e.join("point.json")) else {
                continue;
            };
            let p = parse_point_json(&t)
                .ok_or_else(|| format!("{}: not a point.json of wbsim sweep", e.display()))?;
            if let Some((q, _)) = found.get(&p.index) {
                if q.id() != p.id() {
                    return Err(format!(
                        "point {} is {} in one directory and {} in another: not shards of one plan",
                        p.index,
                        q.id(),
                        p.id()
                    ));
                }
                continue;
            }
            found.insert(p.index, (p, e));
        }
    }
    Ok(found.into_values().collect())
}

/// `results.csv` for these points: index, point, scenario, the settings,
/// seed, then the summaries' figures (columns sorted).
pub fn results_csv(points: &[(Point, PathBuf)]) -> Result<String, String> {
    let mut setting_cols: Vec<String> = Vec::new();
    let mut figure_cols: std::collections::BTreeSet<String> = Default::default();
    let mut rows = Vec::new();
    for (p, dir) in points {
        for (k, _) in &p.settings {
            if !setting_cols.contains(k) {
                setting_cols.push(k.clone());
            }
        }
        let f = dir.join("summary.json");
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        let mut m = BTreeMap::new();
        flatten(&v, "", &mut m);
        figure_cols.extend(m.keys().cloned());
        rows.push(m);
    }
    let mut s = String::from("index,point,scenario");
    for c in setting_cols
        .iter()
        .chain(std::iter::once(&"seed".to_string()))
    {
        s.push(',');
        s.push_str(&csv_field(c));
    }
    for c in &figure_cols {
        s.push(',');
        s.push_str(&csv_field(c));
    }
    s.push('\n');
    for ((p, _), m) in points.iter().zip(&rows) {
        s.push_str(&format!(
            "{},{},{}",
            p.index,
            p.id(),
            csv_field(p.scenario.as_deref().unwrap_or("(built-in)"))
        ));
        for c in &setting_cols {
            s.push(',');
            if let Some((_, v)) = p.settings.iter().find(|(k, _)| k == c) {
                s.push_str(&csv_field(v));
            }
        }
        s.push_str(&format!(",{}", p.seed));
        for c in &figure_cols {
            s.push(',');
            if let Some(v) = m.get(c) {
                s.push_str(v);
            }
        }
        s.push('\n');
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Result<Plan, String> {
        Plan::parse(text, Path::new("dir/p.toml"))
    }

    #[test]
    fn product_in_plan_order_last_axis_fastest_then_seeds() {
        let p = plan(
            "seeds = \"1..=2\"\n[axes]\n\"jobs.dd.numjobs\" = [1, 10]\n\"vm.dirty_bytes\" = [\"50M\", \"1G\"]\n",
        )
        .unwrap();
        let pts = p.points();
        assert_eq!(pts.len(), 8);
        let s = |i: usize| {
            let q = &pts[i];
            format!("{}/{}/{}", q.settings[0].1, q.settings[1].1, q.seed)
        };
        assert_eq!(
            (0..8).map(s).collect::<Vec<_>>(),
            [
                "1/50M/1", "1/50M/2", "1/1G/1", "1/1G/2", "10/50M/1", "10/50M/2", "10/1G/1",
                "10/1G/2"
            ]
        );
        assert!(pts.iter().enumerate().all(|(i, q)| q.index == i));
    }

    #[test]
    fn zipped_groups_and_zip_plans_move_keys_together() {
        let p = plan(
            "[axes.limits]\n\"vm.dirty_bytes\" = [\"50M\", \"1G\"]\n\"vm.dirty_background_bytes\" = [\"25M\", \"500M\"]\n[axes]\nx = 0\n",
        );
        // an axis is a list (or a range), not one value
        assert!(p.unwrap_err().contains("axis `x`"));
        let p = plan(
            "[axes]\n\"jobs.dd.numjobs\" = [1, 2, 3]\n[axes.limits]\n\"vm.dirty_bytes\" = [\"50M\", \"1G\"]\n\"vm.dirty_background_bytes\" = [\"25M\", \"500M\"]\n",
        )
        .unwrap();
        let pts = p.points();
        assert_eq!(pts.len(), 6);
        assert_eq!(
            pts[1].settings,
            [
                ("jobs.dd.numjobs".to_string(), "1".to_string()),
                ("vm.dirty_bytes".to_string(), "1G".to_string()),
                ("vm.dirty_background_bytes".to_string(), "500M".to_string()),
            ]
        );
        let z = plan("combine = \"zip\"\n[axes]\na = [1, 2]\nb = [3, 4]\n").unwrap();
        assert_eq!(z.points().len(), 2);
        let e = plan("combine = \"zip\"\n[axes]\na = [1, 2]\nb = [3]\n").unwrap_err();
        assert!(e.contains("one length"), "{e}");
    }

    #[test]
    fn ids_are_stable_and_name_the_settings() {
        let p = plan("scenario = \"s.toml\"\n[axes]\n\"vm.dirty_bytes\" = [\"50M\", \"100M\"]\n")
            .unwrap();
        let pts = p.points();
        assert_ne!(pts[0].id(), pts[1].id());
        // the hash of "scenario=s.toml\nvm.dirty_bytes=50M\nseed=1\n"
        assert_eq!(pts[0].id(), pts[0].clone().id());
        assert_eq!(pts[0].id().len(), 16);
        assert_eq!(pts[0].scenario_path(&p).unwrap(), Path::new("dir/s.toml"));
        let back = parse_point_json(&point_json(&pts[1])).unwrap();
        assert_eq!(back, pts[1]);
    }

    #[test]
    fn bad_plans_name_the_line_and_what_is_expected() {
        let e = plan("scenario = \"a\"\n\nseeds = \"x..y\"\n").unwrap_err();
        assert!(e.starts_with("dir/p.toml:3: `seeds`"), "{e}");
        let e = plan("[axes]\na = []\n").unwrap_err();
        assert!(e.starts_with("dir/p.toml:2: axis `a`"), "{e}");
        let e = plan("bogus = 1\n").unwrap_err();
        assert!(e.contains("unknown key"), "{e}");
        let e = plan("seeds = [\n").unwrap_err();
        assert!(e.contains("not valid TOML"), "{e}");
        let e = plan("[axes]\na = \"0..2000000\"\n").unwrap_err();
        assert!(e.contains("axis `a`"), "{e}");
        let e =
            plan("seeds = \"0..1000\"\n[axes]\na = \"0..1000\"\nb = \"0..1000\"\n").unwrap_err();
        assert!(e.contains("at most"), "{e}");
    }

    #[test]
    fn summaries_flatten_by_name_and_index() {
        let v: Value = serde_json::from_str(
            r#"{"a": 1, "devices": [{"name": "loop0", "w": 2.5}], "p": [3, 4], "s": "x", "b": true}"#,
        )
        .unwrap();
        let mut m = BTreeMap::new();
        flatten(&v, "", &mut m);
        let got: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(got, ["a=1", "b=1", "devices.loop0.w=2.5", "p.0=3", "p.1=4"]);
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("[a,\"b\"]"), "\"[a,\"\"b\"\"]\"");
    }
}
