//! `wbsim report DIR [DIR...] -o report.html`: one self-contained HTML page
//! (no network; SVG, CSS and the little script inline) for a run, a
//! before/after pair of runs, or a sweep.
//!
//! - One run (a `wbsim run`/`wbsim live` directory): the scenario as TOML
//!   (`scenario.toml`, which `wbsim run --report` writes), the summary as
//!   tables, and Wu-style graphs from `trace.txt`: dirty pages against the
//!   limits, the ratelimits, pause and period, the device's write
//!   throughput, the flusher's work items; fio's jobs when there is a
//!   `fio.json`.
//! - Two runs: `wbsim compare`'s table with the deltas, and the curves
//!   overlaid.
//! - A sweep directory (`results.csv`): the results table (click a header
//!   to sort) and, for the main figures, one chart against the first
//!   numeric axis, one line per value of the other axes, the median over
//!   seeds.

use crate::plot::{field as series, t, tick};
use crate::trace::Record;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Chart size in CSS pixels (the SVG's width and height attributes).
pub const CHART_W: u32 = 1000;
pub const CHART_H: u32 = 340;

const COLOURS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mark {
    Line,
    Dots,
}

/// A named series of (x, y) points and how it is drawn.
pub type Series = (String, Vec<(f64, f64)>, Mark);

/// A chart: title, axis labels with units, and named series.
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Round numbers for axis ticks: about `n` steps of 1, 2 or 5 x 10^k.
fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / n as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= n as f64)
        .unwrap_or(10.0 * mag);
    let mut v = Vec::new();
    let mut x = (lo / step).ceil() * step;
    while x <= hi + step * 1e-9 {
        v.push(if x.abs() < step * 1e-9 { 0.0 } else { x });
        x += step;
    }
    v
}

/// Keep what a `cols`-pixel-wide chart can show of a line: per pixel
/// column, the first, lowest, highest and last point, in order.
fn thin(p: &[(f64, f64)], x0: f64, x1: f64, cols: usize) -> Vec<(f64, f64)> {
    if p.len() <= cols * 4 {
        return p.to_vec();
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < p.len() {
        let col = (((p[i].0 - x0) / (x1 - x0).max(1e-12)) * cols as f64) as i64;
        let mut j = i;
        let (mut lo, mut hi) = (i, i);
        while j < p.len() && (((p[j].0 - x0) / (x1 - x0).max(1e-12)) * cols as f64) as i64 == col {
            if p[j].1 < p[lo].1 {
                lo = j;
            }
            if p[j].1 > p[hi].1 {
                hi = j;
            }
            j += 1;
        }
        let mut idx = vec![i, lo, hi, j - 1];
        idx.sort_unstable();
        idx.dedup();
        out.extend(idx.into_iter().map(|k| p[k]));
        i = j;
    }
    out
}

impl Chart {
    /// The chart as an inline `<svg>`.
    pub fn svg(&self) -> String {
        let (w, h) = (CHART_W as f64, CHART_H as f64);
        let (ml, mr, mt, mb) = (78.0, 236.0, 30.0, 46.0);
        let pts = self.series.iter().flat_map(|s| s.1.iter());
        let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0f64);
        let mut y0 = 0f64;
        for &(x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y1 = y1.max(y);
            y0 = y0.min(y);
        }
        if x0 > x1 {
            (x0, x1) = (0.0, 1.0);
        }
        if x1 - x0 < 1e-12 {
            x1 = x0 + 1.0;
        }
        if y1 - y0 < 1e-12 {
            y1 = y0 + 1.0;
        }
        y1 *= 1.05;
        let px = |x: f64| ml + (x - x0) / (x1 - x0) * (w - ml - mr);
        let py = |y: f64| h - mb - (y - y0) / (y1 - y0) * (h - mt - mb);
        let mut s = String::new();
        let _ = write!(
            s,
            r##"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{CHART_W}" height="{CHART_H}" viewBox="0 0 {CHART_W} {CHART_H}" role="img" aria-label="{t}"><title>{t}</title><rect x="0" y="0" width="{w}" height="{h}" fill="#fff"/>"##,
            t = esc(&self.title)
        );
        let _ = write!(
            s,
            r#"<text x="{}" y="18" class="ct">{}</text>"#,
            ml,
            esc(&self.title)
        );
        for t in ticks(x0, x1, 8) {
            let x = px(t);
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#e6e6e6"/><text x="{x:.1}" y="{:.1}" class="tx">{}</text>"##,
                mt,
                h - mb,
                h - mb + 16.0,
                tick(t, x1 - x0)
            );
        }
        for t in ticks(y0, y1, 6) {
            let y = py(t);
            let _ = write!(
                s,
                r##"<line x1="{ml}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e6e6e6"/><text x="{:.1}" y="{:.1}" class="ty">{}</text>"##,
                w - mr,
                ml - 6.0,
                y + 4.0,
                tick(t, y1 - y0)
            );
        }
        let _ = write!(
            s,
            r##"<rect x="{ml}" y="{mt}" width="{:.1}" height="{:.1}" fill="none" stroke="#444"/>"##,
            w - ml - mr,
            h - mt - mb
        );
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" class="xl">{}</text><text transform="translate(16 {:.1}) rotate(-90)" class="yl">{}</text>"#,
            (ml + w - mr) / 2.0,
            h - 8.0,
            esc(&self.x_label),
            (mt + h - mb) / 2.0,
            esc(&self.y_label)
        );
        let cols = (w - ml - mr) as usize;
        for (i, (name, p, mark)) in self.series.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            match mark {
                Mark::Line => {
                    let p = thin(p, x0, x1, cols);
                    let mut d = String::new();
                    for (k, &(x, y)) in p.iter().enumerate() {
                        let _ = write!(
                            d,
                            "{}{:.1},{:.1}",
                            if k == 0 { "M" } else { "L" },
                            px(x),
                            py(y)
                        );
                    }
                    let _ = write!(
                        s,
                        r#"<path d="{d}" fill="none" stroke="{c}" stroke-width="1.5"><title>{}</title></path>"#,
                        esc(name)
                    );
                }
                Mark::Dots => {
                    // one dot per pixel cell; bigger where there are few
                    let r = if p.len() < 500 { 3.0 } else { 1.6 };
                    let mut seen = std::collections::BTreeSet::new();
                    let _ = write!(s, r#"<g fill="{c}"><title>{}</title>"#, esc(name));
                    for &(x, y) in p {
                        let (cx, cy) = (px(x), py(y));
                        if seen.insert((cx as i64 / 2, cy as i64 / 2)) {
                            let _ = write!(s, r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="{r}"/>"#);
                        }
                    }
                    s.push_str("</g>");
                }
            }
            // legend
            let ly = mt + 8.0 + 16.0 * i as f64;
            let lx = w - mr + 12.0;
            let name: String = if name.chars().count() > 32 {
                name.chars().take(31).chain(std::iter::once('…')).collect()
            } else {
                name.clone()
            };
            let _ = write!(
                s,
                r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="4" fill="{c}"/><text x="{:.1}" y="{ly:.1}" class="lg">{}</text>"#,
                ly - 5.0,
                lx + 18.0,
                esc(&name)
            );
        }
        s.push_str("</svg>");
        s
    }
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}\
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;font-size:13px;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}div.tw{overflow-x:auto}\
th{background:#f3f3f3;cursor:pointer}td:first-child,th:first-child{text-align:left}\
pre{background:#f7f7f7;padding:10px;font-size:12px;overflow:auto;max-height:420px}\
svg.chart{display:block;margin:10px 0;border:1px solid #ddd}\
.ct{font-size:14px;font-weight:bold}.tx{font-size:11px;text-anchor:middle}.ty{font-size:11px;text-anchor:end}\
.xl,.yl{font-size:12px;text-anchor:middle}.lg{font-size:12px}.up{color:#b00}.down{color:#060}";

/// Sorts a table by the clicked header; marks the page ready (the browser
/// test reads `data-ready`), and records script errors in `data-errors`.
const SCRIPT: &str = "window.onerror=function(m){document.body.dataset.errors=(document.body.dataset.errors||'')+m+';'};\
document.querySelectorAll('table.sort th').forEach(function(th,i){th.addEventListener('click',function(){\
var t=th.closest('table'),b=t.tBodies[0],r=Array.from(b.rows),asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';\
r.sort(function(x,y){var a=x.cells[i].textContent,c=y.cells[i].textContent,p=parseFloat(a),q=parseFloat(c);\
var v=(!isNaN(p)&&!isNaN(q))?p-q:a.localeCompare(c);return asc?v:-v});r.forEach(function(x){b.appendChild(x)})})});\
document.body.dataset.ready='1';";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head>\n<body>\n<h1>{t}</h1>\n{body}\n<script>{SCRIPT}</script>\n</body></html>\n",
        t = esc(title)
    )
}

fn read_summary(dir: &Path) -> Result<Value, String> {
    crate::cli::compare::load(dir)
}

/// The run's trace, read once.
struct TraceData {
    recs: Vec<Record>,
    /// The run's `diskstats` snapshots, per device.
    disks: BTreeMap<String, Vec<DiskSnap>>,
}

/// One `diskstats` line: the time and the counters the charts use.
#[derive(Clone, Copy, Debug, PartialEq)]
struct DiskSnap {
    t: f64,
    rd_ios: u64,
    rd_sectors: u64,
    wr_ios: u64,
    wr_sectors: u64,
}

/// The `diskstats` file's lines (the time in seconds, then a
/// `/proc/diskstats` line: major, minor, name, then reads' ios, merges,
/// sectors, ms, writes' ios, merges, sectors, ...), by device name.
/// Lines that do not read so are left out.
fn parse_diskstats(text: &str) -> BTreeMap<String, Vec<DiskSnap>> {
    let mut by: BTreeMap<String, Vec<DiskSnap>> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 12 {
            continue;
        }
        let n = |i: usize| f[i].parse::<u64>().ok();
        let (Ok(t), Some(rd_ios), Some(rd_sectors), Some(wr_ios), Some(wr_sectors)) =
            (f[0].parse::<f64>(), n(4), n(6), n(8), n(10))
        else {
            continue;
        };
        by.entry(f[3].to_string()).or_default().push(DiskSnap {
            t,
            rd_ios,
            rd_sectors,
            wr_ios,
            wr_sectors,
        });
    }
    by
}

impl TraceData {
    fn load(dir: &Path) -> TraceData {
        let text = std::fs::read_to_string(dir.join("trace.txt")).unwrap_or_default();
        let ds = std::fs::read_to_string(dir.join("diskstats")).unwrap_or_default();
        TraceData {
            recs: crate::trace::parse(&text),
            disks: parse_diskstats(&ds),
        }
    }
    fn of(&self, ev: &str) -> Vec<&Record> {
        self.recs.iter().filter(|r| r.event == ev).collect()
    }
}

/// The run's charts: (id, chart). `tag` suffixes series names (for
/// overlays).
fn run_charts(td: &TraceData, tag: &str) -> Vec<(&'static str, Chart)> {
    let n = |s: &str| {
        if tag.is_empty() {
            s.to_string()
        } else {
            format!("{s} ({tag})")
        }
    };
    let mut out = Vec::new();
    let bdp = td.of("balance_dirty_pages");
    let gds = td.of("global_dirty_state");
    let mut dirty = Vec::new();
    if !gds.is_empty() {
        let sum: Vec<(f64, f64)> = gds
            .iter()
            .filter_map(|r| Some((t(r), (r.get("dirty")? + r.get("writeback")?) as f64)))
            .collect();
        dirty.push((n("dirty + writeback"), sum, Mark::Line));
        dirty.push((n("thresh"), series(&gds, "thresh", 1.0), Mark::Line));
        dirty.push((n("bg_thresh"), series(&gds, "bg_thresh", 1.0), Mark::Line));
    }
    if !bdp.is_empty() {
        dirty.push((n("setpoint"), series(&bdp, "setpoint", 1.0), Mark::Line));
        dirty.push((n("limit"), series(&bdp, "limit", 1.0), Mark::Line));
    }
    if !dirty.is_empty() {
        out.push((
            "dirty",
            Chart {
                title: "Dirty pages against the limits".into(),
                x_label: "time (s)".into(),
                y_label: "pages".into(),
                series: dirty,
            },
        ));
    }
    let rl = td.of("bdi_dirty_ratelimit");
    if !rl.is_empty() {
        let s = [
            "write_bw",
            "dirty_ratelimit",
            "task_ratelimit",
            "balanced_dirty_ratelimit",
        ]
        .iter()
        .map(|k| (n(k), series(&rl, k, 1.0), Mark::Line))
        .collect();
        out.push((
            "ratelimit",
            Chart {
                title: "Bandwidth estimate and ratelimits (bdi_dirty_ratelimit)".into(),
                x_label: "time (s)".into(),
                y_label: "KB/s".into(),
                series: s,
            },
        ));
    }
    if !bdp.is_empty() {
        out.push((
            "pause",
            Chart {
                title: "balance_dirty_pages pause and period".into(),
                x_label: "time (s)".into(),
                y_label: "ms".into(),
                series: vec![
                    (n("pause"), series(&bdp, "pause", 1.0), Mark::Dots),
                    (n("period"), series(&bdp, "period", 1.0), Mark::Dots),
                ],
            },
        ));
    }
    if gds.len() > 1 {
        // pages written each second, from global_dirty_state's counter
        let mut per: BTreeMap<i64, (f64, i64, f64, i64)> = BTreeMap::new();
        for r in &gds {
            if let Some(w) = r.get("written") {
                let s = t(r).floor() as i64;
                let e = per.entry(s).or_insert((t(r), w, t(r), w));
                e.2 = t(r);
                e.3 = w;
            }
        }
        let v: Vec<(f64, i64, f64, i64)> = per.into_values().collect();
        let mut pts = Vec::new();
        for pair in v.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let dt = b.0 - a.0;
            if dt > 0.0 {
                pts.push((b.0, (b.1 - a.1) as f64 * 4096.0 / 1048576.0 / dt));
            }
        }
        out.push((
            "throughput",
            Chart {
                title: "Pages written back (global_dirty_state written, per second)".into(),
                x_label: "time (s)".into(),
                y_label: "MiB/s (4 KiB pages)".into(),
                series: vec![(n("written"), pts, Mark::Line)],
            },
        ));
    }
    out.extend(device_charts(td, &n));
    let ww = td.of("writeback_written");
    if !ww.is_empty() {
        let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for r in &ww {
            let reason = r
                .strs
                .iter()
                .find(|(k, _)| k == "reason")
                .map_or("?".to_string(), |(_, v)| v.clone());
            let e = by.entry(reason).or_default();
            let c = e.last().map_or(0.0, |p| p.1) + 1.0;
            e.push((t(r), c));
        }
        out.push((
            "flusher",
            Chart {
                title: "Flusher work rounds (writeback_written), cumulative by reason".into(),
                x_label: "time (s)".into(),
                y_label: "rounds".into(),
                series: by
                    .into_iter()
                    .map(|(k, v)| (n(&k), v, Mark::Line))
                    .collect(),
            },
        ));
    }
    out
}

/// Each device's IOPS and throughput over time, from the `diskstats`
/// snapshots (the counters' differences over each interval, as `iostat`
/// computes them), reads and writes apart; a direction that saw no IO
/// is left out. Devices with no IO at all are left out.
fn device_charts(td: &TraceData, n: &dyn Fn(&str) -> String) -> Vec<(&'static str, Chart)> {
    let mut iops = Vec::new();
    let mut mibs = Vec::new();
    for (dev, snaps) in &td.disks {
        let rate = |f: &dyn Fn(&DiskSnap) -> u64, scale: f64| -> Vec<(f64, f64)> {
            snaps
                .windows(2)
                .filter(|w| w[1].t > w[0].t)
                .map(|w| {
                    let d = f(&w[1]).saturating_sub(f(&w[0])) as f64;
                    (w[1].t, d * scale / (w[1].t - w[0].t))
                })
                .collect()
        };
        let (Some(first), Some(last)) = (snaps.first(), snaps.last()) else {
            continue;
        };
        let sect = 512.0 / 1048576.0;
        if last.rd_ios > first.rd_ios {
            iops.push((
                n(&format!("{dev} read")),
                rate(&|s| s.rd_ios, 1.0),
                Mark::Line,
            ));
            mibs.push((
                n(&format!("{dev} read")),
                rate(&|s| s.rd_sectors, sect),
                Mark::Line,
            ));
        }
        if last.wr_ios > first.wr_ios {
            iops.push((
                n(&format!("{dev} write")),
                rate(&|s| s.wr_ios, 1.0),
                Mark::Line,
            ));
            mibs.push((
                n(&format!("{dev} write")),
                rate(&|s| s.wr_sectors, sect),
                Mark::Line,
            ));
        }
    }
    if iops.is_empty() {
        return Vec::new();
    }
    vec![
        (
            "device-iops",
            Chart {
                title: "Device IOPS (diskstats, completed requests per second)".into(),
                x_label: "time (s)".into(),
                y_label: "IOPS".into(),
                series: iops,
            },
        ),
        (
            "device-mibs",
            Chart {
                title: "Device throughput (diskstats sectors, per second)".into(),
                x_label: "time (s)".into(),
                y_label: "MiB/s".into(),
                series: mibs,
            },
        ),
    ]
}

/// A constant line across `[x0, x1]`, for thresholds.
fn level(x0: f64, x1: f64, y: f64) -> Vec<(f64, f64)> {
    vec![(x0, y), (x1, y)]
}

/// The workloads' own charts, from the files a run writes: bcache's
/// controller (`bcache-NAME.txt`), simoop's interval lines
/// (`simoop.txt`), fio's latency and bandwidth logs (`*_lat.N.log` and
/// the like), fs_mark's loops (`fs_mark.txt`).
fn workload_charts(dir: &Path) -> Vec<(String, Chart)> {
    let mut out = Vec::new();
    for (name, path) in crate::plot::bcache::sample_files(dir) {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(s) = crate::plot::bcache::parse_samples(&text, &path.display().to_string()) else {
            continue;
        };
        let (Some(a), Some(b)) = (s.first(), s.last()) else {
            continue;
        };
        let (x0, x1) = (a.t, b.t);
        let col = |f: &dyn Fn(&crate::plot::bcache::Sample) -> f64| {
            s.iter().map(|x| (x.t, f(x))).collect::<Vec<_>>()
        };
        out.push((
            format!("bcache-{name}-dirty"),
            Chart {
                title: format!("bcache {name}: dirty data against the writeback target"),
                x_label: "time (s)".into(),
                y_label: "MiB".into(),
                series: vec![
                    ("dirty_data".into(), col(&|x| x.dirty_data), Mark::Line),
                    ("target".into(), col(&|x| x.target), Mark::Line),
                ],
            },
        ));
        // the rate where the controller sets it (the idle switch's maximum
        // is left out, as `wbsim plot` does)
        let cap = crate::plot::bcache::MAX_RATE_MIB;
        let rate: Vec<(f64, f64)> = s
            .iter()
            .filter(|x| x.rate < cap)
            .map(|x| (x.t, x.rate))
            .collect();
        out.push((
            format!("bcache-{name}-rate"),
            Chart {
                title: format!("bcache {name}: writeback rate and the PI terms"),
                x_label: "time (s)".into(),
                y_label: "MiB/s (MiB for the terms)".into(),
                series: vec![
                    ("writeback_rate".into(), rate, Mark::Line),
                    ("proportional".into(), col(&|x| x.proportional), Mark::Line),
                    ("integral".into(), col(&|x| x.integral), Mark::Line),
                ],
            },
        ));
        out.push((
            format!("bcache-{name}-buckets"),
            Chart {
                title: format!("bcache {name}: buckets in use against the cutoffs"),
                x_label: "time (s)".into(),
                y_label: "percent".into(),
                series: vec![
                    ("in_use".into(), col(&|x| x.in_use), Mark::Line),
                    (
                        "cache_available_percent".into(),
                        col(&|x| x.avail),
                        Mark::Line,
                    ),
                    (
                        "cutoff_writeback_sync (70)".into(),
                        level(x0, x1, 70.0),
                        Mark::Line,
                    ),
                    (
                        "cutoff_writeback (40)".into(),
                        level(x0, x1, 40.0),
                        Mark::Line,
                    ),
                ],
            },
        ));
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("simoop.txt")) {
        let mut t = None;
        let mut lat: BTreeMap<&str, [Vec<(f64, f64)>; 3]> = BTreeMap::new();
        let mut stall = Vec::new();
        for l in text.lines() {
            if let Some(r) = l.strip_prefix("Run time: ") {
                t = r
                    .split_whitespace()
                    .next()
                    .and_then(|x| x.parse::<f64>().ok());
            }
            let Some(t) = t else { continue };
            let num = |key: &str| -> Option<f64> {
                let i = l.find(key)? + key.len();
                l[i..]
                    .split([')', '/', ' '])
                    .next()?
                    .replace(',', "")
                    .parse()
                    .ok()
            };
            for kind in ["Read", "Write", "Allocation"] {
                if l.starts_with(&format!("{kind} latency")) {
                    let e = lat.entry(kind).or_default();
                    for (i, p) in ["(p50: ", "(p95: ", "(p99: "].iter().enumerate() {
                        if let Some(v) = num(p) {
                            e[i].push((t, v / 1000.0));
                        }
                    }
                }
            }
            if l.starts_with("alloc stall rate = ") {
                if let Some(v) = num("alloc stall rate = ") {
                    stall.push((t, v));
                }
            }
        }
        for (kind, [p50, p95, p99]) in lat {
            out.push((
                format!("simoop-{}", kind.to_lowercase()),
                Chart {
                    title: format!("simoop: {kind} latency per interval"),
                    x_label: "run time (s)".into(),
                    y_label: "ms".into(),
                    series: vec![
                        ("p50".into(), p50, Mark::Line),
                        ("p95".into(), p95, Mark::Line),
                        ("p99".into(), p99, Mark::Line),
                    ],
                },
            ));
        }
        if !stall.is_empty() {
            out.push((
                "simoop-stalls".into(),
                Chart {
                    title: "simoop: alloc stall rate per interval".into(),
                    x_label: "run time (s)".into(),
                    y_label: "stalls/s".into(),
                    series: vec![("alloc stall rate".into(), stall, Mark::Line)],
                },
            ));
        }
    }
    // fio's logs: time (ms), value, direction (0 read, 1 write, 2 trim)
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect()
        })
        .unwrap_or_default();
    logs.sort();
    for p in logs {
        let name = p
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned());
        let (unit, scale) = if name.contains("lat.") {
            ("latency (us)", 1e-3)
        } else if name.contains("_bw.") {
            ("KiB/s", 1.0)
        } else if name.contains("_iops.") {
            ("IOPS", 1.0)
        } else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let mut by: BTreeMap<u8, Vec<(f64, f64)>> = BTreeMap::new();
        for l in text.lines() {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            let (Some(t), Some(v), Some(d)) = (
                f.first().and_then(|x| x.parse::<f64>().ok()),
                f.get(1).and_then(|x| x.parse::<f64>().ok()),
                f.get(2).and_then(|x| x.parse::<u8>().ok()),
            ) else {
                continue;
            };
            by.entry(d).or_default().push((t / 1000.0, v * scale));
        }
        if by.is_empty() {
            continue;
        }
        let dir_name = |d: u8| {
            ["read", "write", "trim"]
                .get(d as usize)
                .copied()
                .unwrap_or("?")
        };
        out.push((
            format!("fio-{name}"),
            Chart {
                title: format!("fio log {name}"),
                x_label: "time (s)".into(),
                y_label: unit.into(),
                series: by
                    .into_iter()
                    .map(|(d, v)| (dir_name(d).to_string(), v, Mark::Dots))
                    .collect(),
            },
        ));
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("fs_mark.txt")) {
        let mut v = Vec::new();
        for l in text.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if let (Some(n), Some(r)) = (
                f.get(1).and_then(|x| x.parse::<f64>().ok()),
                f.get(3).and_then(|x| x.parse::<f64>().ok()),
            ) {
                v.push((n, r));
            }
        }
        if !v.is_empty() {
            out.push((
                "fs_mark".into(),
                Chart {
                    title: "fs_mark: files per second by loop".into(),
                    x_label: "files written (Count)".into(),
                    y_label: "files/s".into(),
                    series: vec![("Files/sec".into(), v, Mark::Line)],
                },
            ));
        }
    }
    out
}

fn summary_tables(v: &Value) -> String {
    let mut flat = BTreeMap::new();
    crate::sweep::flatten(v, "", &mut flat);
    let mut groups: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (k, x) in flat {
        let g = k.split('.').next().unwrap_or("").to_string();
        groups.entry(g).or_default().push((k, x));
    }
    let mut s = String::new();
    for (g, rows) in groups {
        let _ = write!(
            s,
            "<table class=\"sort summary\" data-group=\"{}\"><thead><tr><th>{}</th><th>value</th></tr></thead><tbody>",
            esc(&g),
            esc(&g)
        );
        for (k, x) in rows {
            let _ = write!(s, "<tr><td>{}</td><td>{}</td></tr>", esc(&k), esc(&x));
        }
        s.push_str("</tbody></table>\n");
    }
    s
}

fn fio_table(dir: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(dir.join("fio.json")) else {
        return String::new();
    };
    let Ok(v) = serde_json::from_str::<Value>(&text) else {
        return String::new();
    };
    let mut s = String::from(
        "<h2>fio jobs</h2><table class=\"sort fio\"><thead><tr><th>job</th><th>dir</th><th>bw MiB/s</th><th>IOPS</th><th>clat p50 us</th><th>p90 us</th><th>p99 us</th></tr></thead><tbody>",
    );
    for j in v["jobs"].as_array().into_iter().flatten() {
        for d in ["read", "write"] {
            let x = &j[d];
            if x["total_ios"].as_u64().unwrap_or(0) == 0 {
                continue;
            }
            let p = |q: &str| {
                x["clat_ns"]["percentile"][q]
                    .as_f64()
                    .map_or("-".into(), |n| format!("{:.1}", n / 1000.0))
            };
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{d}</td><td>{:.2}</td><td>{:.0}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(j["jobname"].as_str().unwrap_or("?")),
                x["bw_bytes"].as_f64().unwrap_or(0.0) / 1048576.0,
                x["iops"].as_f64().unwrap_or(0.0),
                p("50.000000"),
                p("90.000000"),
                p("99.000000")
            );
        }
    }
    s.push_str("</tbody></table>\n");
    s
}

fn name_of(v: &Value, dir: &Path) -> String {
    v.get("scenario")
        .and_then(|x| x.as_str())
        .map_or_else(|| dir.display().to_string(), String::from)
}

/// The page for one run.
pub fn run_page(dir: &Path) -> Result<String, String> {
    let v = read_summary(dir)?;
    let mut body = String::new();
    let name = name_of(&v, dir);
    if let Ok(toml) = std::fs::read_to_string(dir.join("scenario.toml")) {
        let _ = write!(
            body,
            "<h2>Scenario</h2><pre class=\"scenario\">{}</pre>",
            esc(&toml)
        );
    }
    let td = TraceData::load(dir);
    let charts = run_charts(&td, "");
    if !charts.is_empty() {
        body.push_str("<h2>Graphs</h2>\n");
    }
    for (id, c) in &charts {
        let _ = writeln!(body, "<div class=\"fig\" id=\"{id}\">{}</div>", c.svg());
    }
    let wl = workload_charts(dir);
    if !wl.is_empty() {
        body.push_str("<h2>The workloads' own graphs</h2>\n");
    }
    for (id, c) in &wl {
        let _ = writeln!(
            body,
            "<div class=\"fig\" id=\"{}\">{}</div>",
            esc(id),
            c.svg()
        );
    }
    body.push_str(&fio_table(dir));
    body.push_str("<h2>Summary</h2>\n");
    body.push_str(&summary_tables(&v));
    Ok(page(&format!("wbsim run: {name}"), &body))
}

/// The page for two runs: compare's table and the curves overlaid.
pub fn compare_page(a: &Path, b: &Path) -> Result<String, String> {
    let (va, vb) = (read_summary(a)?, read_summary(b)?);
    let (na, nb) = (name_of(&va, a), name_of(&vb, b));
    let (la, lb) = if na == nb {
        ("before".to_string(), "after".to_string())
    } else {
        (na.clone(), nb.clone())
    };
    let rows = crate::cli::compare::rows(&va, &vb, false);
    let mut body = format!(
        "<h2>Summary</h2><table class=\"sort compare\"><thead><tr><th>metric</th><th>unit</th><th>{}</th><th>{}</th><th>change %</th></tr></thead><tbody>",
        esc(&la),
        esc(&lb)
    );
    for r in &rows {
        let cls = match r.change_pct {
            Some(p) if p > 0.05 => " class=\"up\"",
            Some(p) if p < -0.05 => " class=\"down\"",
            _ => "",
        };
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td{cls}>{}</td></tr>",
            esc(&r.metric),
            esc(r.unit),
            crate::cli::compare::num(r.a),
            crate::cli::compare::num(r.b),
            crate::cli::compare::pct(r.change_pct)
        );
    }
    body.push_str("</tbody></table>\n<h2>Graphs</h2>\n");
    let (ta, tb) = (TraceData::load(a), TraceData::load(b));
    let (ca, cb) = (run_charts(&ta, &la), run_charts(&tb, &lb));
    for (id, mut c) in ca {
        if let Some((_, other)) = cb.iter().find(|(j, _)| *j == id) {
            // the main curve of each run, overlaid (for dirty, the dirty
            // count and the limit)
            let keep = |s: &Series| {
                !(id == "dirty" && !(s.0.starts_with("dirty") || s.0.starts_with("limit")))
            };
            c.series.retain(keep);
            c.series
                .extend(other.series.iter().filter(|s| keep(s)).cloned());
        }
        let _ = writeln!(body, "<div class=\"fig\" id=\"{id}\">{}</div>", c.svg());
    }
    Ok(page(&format!("wbsim: {la} against {lb}"), &body))
}

/// The figures a sweep page charts, and their labels.
const SWEEP_FIGURES: [(&str, &str); 5] = [
    (
        "trace.balance_dirty_pages.fields.dirty_ratelimit.p50",
        "dirty_ratelimit p50 (KB/s)",
    ),
    (
        "trace.balance_dirty_pages.fields.pause.p50",
        "pause p50 (ms)",
    ),
    ("dirty_pages.p50", "dirty pages p50"),
    ("dirtying_mib_s", "dirtying MiB/s"),
    ("devices.loop0.write_mib_s", "device write MiB/s"),
];

/// A size or number as a number (`50M` = 50 x 2^20), for the x axis.
fn axis_number(s: &str) -> Option<f64> {
    if let Ok(x) = s.parse::<f64>() {
        return Some(x);
    }
    crate::units::parse_size(s).ok().map(|b| b as f64)
}

/// The page for a sweep directory (its `results.csv`).
pub fn sweep_page(dir: &Path) -> Result<String, String> {
    let f = dir.join("results.csv");
    let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
    let rows = parse_csv(&text);
    let Some((head, data)) = rows.split_first() else {
        return Err(format!("{}: empty", f.display()));
    };
    let col = |n: &str| head.iter().position(|h| h == n);
    let seed_c = col("seed").ok_or(format!("{}: no seed column", f.display()))?;
    let axes: Vec<usize> = (3..seed_c).collect();
    let mut body = String::new();
    // charts: each figure against the numeric axis with the most values;
    // one line per value of the other axes, leaving out those that move
    // with it (a zipped group)
    let numeric: Vec<usize> = axes
        .iter()
        .copied()
        .filter(|&c| data.iter().all(|r| axis_number(&r[c]).is_some()))
        .collect();
    let distinct = |c: usize| {
        data.iter()
            .map(|r| r[c].as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    let xa = numeric
        .iter()
        .copied()
        .max_by_key(|&c| (distinct(c), usize::MAX - c));
    if let Some(xc) = xa {
        let tied = |c: usize| {
            let mut m: BTreeMap<&str, &str> = BTreeMap::new();
            data.iter()
                .all(|r| *m.entry(r[xc].as_str()).or_insert(r[c].as_str()) == r[c].as_str())
        };
        let others: Vec<usize> = axes
            .iter()
            .copied()
            .filter(|&c| c != xc && !tied(c))
            .collect();
        // sizes (50M, 1G) are drawn in MiB
        let sized = data.iter().any(|r| r[xc].parse::<f64>().is_err());
        let (xscale, xname) = if sized {
            (1.0 / 1048576.0, format!("{} (MiB)", head[xc]))
        } else {
            (1.0, head[xc].clone())
        };
        body.push_str("<h2>Figures against ");
        body.push_str(&esc(&head[xc]));
        body.push_str("</h2>\n");
        for (fig, label) in SWEEP_FIGURES {
            let Some(fc) = col(fig) else { continue };
            // one line per combination of the other axes; median over seeds
            let mut lines: BTreeMap<String, BTreeMap<u64, Vec<f64>>> = BTreeMap::new();
            for r in data {
                let (Some(x), Ok(y)) = (axis_number(&r[xc]), r[fc].parse::<f64>()) else {
                    continue;
                };
                let x = x * xscale;
                let key: Vec<String> = others
                    .iter()
                    .map(|&c| format!("{}={}", head[c], r[c]))
                    .collect();
                lines
                    .entry(key.join(" "))
                    .or_default()
                    .entry(x.to_bits())
                    .or_default()
                    .push(y);
            }
            let series = lines
                .into_iter()
                .map(|(k, pts)| {
                    let mut p: Vec<(f64, f64)> = pts
                        .into_iter()
                        .map(|(x, mut ys)| {
                            ys.sort_by(f64::total_cmp);
                            (f64::from_bits(x), ys[ys.len() / 2])
                        })
                        .collect();
                    p.sort_by(|a, b| a.0.total_cmp(&b.0));
                    (if k.is_empty() { "all".into() } else { k }, p, Mark::Line)
                })
                .collect();
            let c = Chart {
                title: format!("{label} against {}", head[xc]),
                x_label: xname.clone(),
                y_label: label.to_string(),
                series,
            };
            let _ = writeln!(body, "<div class=\"fig\">{}</div>", c.svg());
        }
    }
    // the table: the axes, seed and the charted figures (all columns are in
    // results.csv)
    let shown: Vec<usize> = (0..=seed_c)
        .chain(SWEEP_FIGURES.iter().filter_map(|(f, _)| col(f)))
        .collect();
    body.push_str("<h2>Results</h2><div class=\"tw\"><table class=\"sort results\"><thead><tr>");
    for &c in &shown {
        let _ = write!(body, "<th>{}</th>", esc(&head[c]));
    }
    body.push_str("</tr></thead><tbody>");
    for r in data {
        body.push_str("<tr>");
        for &c in &shown {
            let _ = write!(
                body,
                "<td>{}</td>",
                esc(r.get(c).map_or("", |s| s.as_str()))
            );
        }
        body.push_str("</tr>");
    }
    body.push_str("</tbody></table></div>\n");
    Ok(page(&format!("wbsim sweep: {}", dir.display()), &body))
}

/// RFC 4180 CSV, as results.csv writes it.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut f = String::new();
    let mut q = false;
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        match (q, c) {
            (true, '"') if it.peek() == Some(&'"') => {
                f.push('"');
                it.next();
            }
            (true, '"') => q = false,
            (true, c) => f.push(c),
            (false, '"') => q = true,
            (false, ',') => row.push(std::mem::take(&mut f)),
            (false, '\n') => {
                row.push(std::mem::take(&mut f));
                rows.push(std::mem::take(&mut row));
            }
            (false, '\r') => {}
            (false, c) => f.push(c),
        }
    }
    if !f.is_empty() || !row.is_empty() {
        row.push(f);
        rows.push(row);
    }
    rows
}

/// `wbsim report`: the page for these directories, written to `out`.
pub fn report(dirs: &[PathBuf], out: &Path) -> Result<(), String> {
    let html = match dirs {
        [d] if d.join("results.csv").is_file() => sweep_page(d)?,
        [d] => run_page(d)?,
        [a, b] => compare_page(a, b)?,
        _ => {
            return Err(
                "expected one run directory, two (before and after), or one sweep directory".into(),
            )
        }
    };
    std::fs::write(out, html).map_err(|e| format!("{}: {e}", out.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(ticks(0.0, 100.0, 5), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(ticks(0.0, 7.0, 8), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    }

    #[test]
    fn a_chart_has_its_size_labels_and_legend() {
        let c = Chart {
            title: "T <x>".into(),
            x_label: "time (s)".into(),
            y_label: "pages".into(),
            series: vec![("a".into(), vec![(0.0, 1.0), (1.0, 3.0)], Mark::Line)],
        };
        let s = c.svg();
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains(&format!("width=\"{CHART_W}\" height=\"{CHART_H}\"")));
        assert!(s.contains("T &lt;x&gt;") && s.contains("time (s)") && s.contains(">a</text>"));
        assert!(s.contains("<path d=\"M"));
    }

    #[test]
    fn thinning_keeps_extremes() {
        let p: Vec<(f64, f64)> = (0..100_000).map(|i| (i as f64, (i % 97) as f64)).collect();
        let t = thin(&p, 0.0, 99_999.0, 100);
        assert!(t.len() <= 400, "{}", t.len());
        assert!(t.iter().any(|q| q.1 == 96.0) && t.iter().any(|q| q.1 == 0.0));
    }

    #[test]
    fn csv_round_trip() {
        let r = parse_csv("a,b\n1,\"x,\"\"y\"\"\"\n");
        assert_eq!(r, [vec!["a", "b"], vec!["1", "x,\"y\""]]);
    }

    #[test]
    fn diskstats_give_iops_and_throughput_over_time() {
        let text = "0.000000    7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n\
                    0.000000    8       0 sda 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n\
                    1.000000    7       0 loop0 0 0 0 0 100 3 204800 50 0 900 50 0 0 0 0 0 0\n\
                    1.000000    8       0 sda 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n\
                    not a line\n\
                    2.000000    7       0 loop0 10 0 80 1 300 3 409600 90 1 1800 91 0 0 0 0 0 0\n";
        let td = TraceData {
            recs: Vec::new(),
            disks: parse_diskstats(text),
        };
        assert_eq!(td.disks.len(), 2);
        assert_eq!(td.disks["loop0"].len(), 3);
        let c = device_charts(&td, &|s| s.to_string());
        assert_eq!(c[0].0, "device-iops");
        let names: Vec<&str> = c[0].1.series.iter().map(|s| s.0.as_str()).collect();
        // sda did no IO: left out
        assert_eq!(names, ["loop0 read", "loop0 write"]);
        assert_eq!(c[0].1.series[1].1, [(1.0, 100.0), (2.0, 200.0)]);
        assert_eq!(c[0].1.series[0].1, [(1.0, 0.0), (2.0, 10.0)]);
        // 204800 sectors a second: 100 MiB/s
        assert_eq!(c[1].1.series[1].1, [(1.0, 100.0), (2.0, 100.0)]);
        let none = TraceData {
            recs: Vec::new(),
            disks: parse_diskstats(""),
        };
        assert!(device_charts(&none, &|s| s.to_string()).is_empty());
    }

    #[test]
    fn simoop_fio_and_fs_mark_files_give_their_charts() {
        let d = std::env::temp_dir().join(format!("wbsim-report-wl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("simoop.txt"),
            "Warmup complete (120 seconds)\nRun time: 10 seconds\n\
             Read latency (p50: 1,870,659) (p95: 2,701,131) (p99: 2,835,349)\n\
             alloc stall rate = 12.10/sec (avg: 12.10) (p50: 12.10) (p95: 12.10) (p99: 12.10)\n\
             Run time: 20 seconds\n\
             Read latency (p50: 1,568,669) (p95: 2,466,250) (p99: 2,801,795)\n\
             alloc stall rate = 11.10/sec (avg: 11.60) (p50: 11.10) (p95: 12.10) (p99: 12.10)\n",
        )
        .unwrap();
        std::fs::write(
            d.join("w_clat.1.log"),
            "1000, 20000, 1, 4096, 0\n2000, 30000, 1, 4096, 0\n",
        )
        .unwrap();
        std::fs::write(
            d.join("fs_mark.txt"),
            "#  fs_mark\nFSUse%        Count         Size    Files/sec     App Overhead\n     0        80000       4096         453296.5            0\n",
        )
        .unwrap();
        let c = workload_charts(&d);
        let ids: Vec<&str> = c.iter().map(|(i, _)| i.as_str()).collect();
        assert_eq!(
            ids,
            [
                "simoop-read",
                "simoop-stalls",
                "fio-w_clat.1.log",
                "fs_mark"
            ]
        );
        // read latency p99 in ms at 10 s and 20 s
        assert_eq!(c[0].1.series[2].1, [(10.0, 2835.349), (20.0, 2801.795)]);
        assert_eq!(c[1].1.series[0].1, [(10.0, 12.1), (20.0, 11.1)]);
        assert_eq!(c[2].1.series[0].0, "write");
        assert_eq!(c[2].1.series[0].1, [(1.0, 20.0), (2.0, 30.0)]);
        assert_eq!(c[3].1.series[0].1, [(80000.0, 453296.5)]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
