//! `wbsim plot DIR`: Wu Fengguang-style graphs of a run's trace, as PNG and
//! SVG. It reads `trace.txt` with the one trace parser, so it plots a real
//! kernel's trace (live mode, or a tracefs copy) as well as wbsim's.
//!
//! - `dirty`: global dirty pages from balance_dirty_pages against setpoint
//!   and limit, with freerun and the background threshold from
//!   global_dirty_state;
//! - `ratelimit`: write_bw, awrite_bw, dirty_ratelimit, task_ratelimit and
//!   balanced_dirty_ratelimit from bdi_dirty_ratelimit;
//! - `pause`: pause and period of each balance_dirty_pages call, one colour
//!   per task;
//! - for each bcache device, its controller's trajectory from the run's
//!   `bcache-NAME.txt` samples (`bcache.rs`); a run with only these (no
//!   balance_dirty_pages, as a raw fio job on the device) plots only them.

pub mod bcache;
pub mod reclaim;

use crate::trace::Record;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const W: u32 = 1200;
const H: u32 = 700;
const FONT: &str = "sans-serif";

/// How a series is drawn: a line, or dots of a radius in pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mark {
    Line,
    Dot(i32),
}

type Series = (String, RGBColor, Vec<(f64, f64)>, Mark); // name, colour, points, mark

fn register() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
}

pub(crate) fn t(r: &Record) -> f64 {
    r.ts as f64 / 1e9
}

pub(crate) fn field(recs: &[&Record], k: &str, scale: f64) -> Vec<(f64, f64)> {
    recs.iter()
        .filter_map(|r| r.get(k).map(|v| (t(r), v as f64 * scale)))
        .collect()
}

/// An axis value as a person reads it: whole numbers with thousands
/// separators (80,000), one decimal below 10 where the axis needs it.
pub fn tick(v: f64, span: f64) -> String {
    if span < 10.0 && v.fract().abs() > 1e-9 {
        return format!("{v:.1}");
    }
    let n = v.round() as i64;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// What the plot can show of `p` at `cols` x `rows` pixels over x in
/// `xr` and y in 0..`y1`: for dots, the first point of each pixel cell
/// (in time order); for lines, the first, lowest, highest and last point
/// of each pixel column, in time order, which draws the same line. So a
/// graph's size follows its pixels, not the run's length.
fn decimate(
    p: &[(f64, f64)],
    mark: Mark,
    xr: (f64, f64),
    y1: f64,
    cols: usize,
    rows: usize,
) -> Vec<(f64, f64)> {
    let (x0, x1) = xr;
    let col = |x: f64| ((((x - x0) / (x1 - x0)).clamp(0.0, 1.0)) * (cols - 1) as f64) as usize;
    let row = |y: f64| (((y / y1).clamp(0.0, 1.0)) * (rows - 1) as f64) as usize;
    match mark {
        Mark::Dot(_) => {
            let mut seen = vec![false; cols * rows];
            p.iter()
                .copied()
                .filter(|&(x, y)| !std::mem::replace(&mut seen[col(x) * rows + row(y)], true))
                .collect()
        }
        Mark::Line => {
            let mut out = Vec::new();
            let mut i = 0;
            while i < p.len() {
                let c = col(p[i].0);
                let mut j = i;
                while j < p.len() && col(p[j].0) == c {
                    j += 1;
                }
                let run = &p[i..j];
                let lo = (0..run.len())
                    .min_by(|&a, &b| run[a].1.total_cmp(&run[b].1))
                    .unwrap_or(0);
                let hi = (0..run.len())
                    .max_by(|&a, &b| run[a].1.total_cmp(&run[b].1))
                    .unwrap_or(0);
                let mut keep = vec![0, lo, hi, run.len() - 1];
                keep.sort_unstable();
                keep.dedup();
                out.extend(keep.into_iter().map(|k| run[k]));
                i = j;
            }
            out
        }
    }
}

/// Width of the legend panel right of the data.
const LEGEND_W: u32 = 270;

/// One graph: the data on the left over the run's time axis `xr`, the
/// legend in a panel on its right (never over the data).
fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    ylabel: &str,
    series: &[Series],
    legend: bool,
    xr: (f64, f64),
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let root = root.titled(title, (FONT, 22)).map_err(e)?;
    let (plot, side) = if legend {
        root.split_horizontally(W - LEGEND_W)
    } else {
        root.split_horizontally(W)
    };
    let y1 = series
        .iter()
        .flat_map(|s| s.2.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.05 };
    let (x0, x1) = xr;
    let mut chart = ChartBuilder::on(&plot)
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(90)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(e)?;
    let (xs, ys) = (x1 - x0, y1);
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc(ylabel)
        .x_label_formatter(&|v| tick(*v, xs))
        .y_label_formatter(&|v| tick(*v, ys))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(e)?;
    // the data area's pixels bound what is drawn
    let (cols, rows) = plot.dim_in_pixel();
    let (cols, rows) = (cols.max(2) as usize, rows.max(2) as usize);
    for (_, col, p, mark) in series {
        let p = decimate(p, *mark, xr, y1, cols, rows);
        match *mark {
            Mark::Line => {
                chart
                    .draw_series(LineSeries::new(p, col.stroke_width(2)))
                    .map_err(e)?;
            }
            Mark::Dot(r) => {
                chart
                    .draw_series(
                        p.into_iter()
                            .map(|(x, y)| Circle::new((x, y), r, col.filled())),
                    )
                    .map_err(e)?;
            }
        }
    }
    if legend {
        for (i, (name, col, _, mark)) in series.iter().enumerate() {
            let y = 40 + 24 * i as i32;
            if *mark == Mark::Line {
                side.draw(&PathElement::new(
                    vec![(10, y), (34, y)],
                    col.stroke_width(3),
                ))
                .map_err(e)?;
            } else {
                side.draw(&Circle::new((22, y), 4, col.filled()))
                    .map_err(e)?;
            }
            side.draw(&Text::new(
                name.as_str(),
                (42, y - 8),
                (FONT, 14).into_font().color(&BLACK),
            ))
            .map_err(e)?;
        }
    }
    root.present().map_err(e)?;
    Ok(())
}

fn render(
    dir: &Path,
    name: &str,
    title: &str,
    ylabel: &str,
    series: &[Series],
    legend: bool,
    xr: (f64, f64),
) -> Result<Vec<PathBuf>, String> {
    let png = dir.join(format!("{name}.png"));
    let svg = dir.join(format!("{name}.svg"));
    draw(
        BitMapBackend::new(&png, (W, H)).into_drawing_area(),
        title,
        ylabel,
        series,
        legend,
        xr,
    )?;
    draw(
        SVGBackend::new(&svg, (W, H)).into_drawing_area(),
        title,
        ylabel,
        series,
        legend,
        xr,
    )?;
    Ok(vec![png, svg])
}

/// A palette for per-task colours.
fn task_colour(i: usize) -> RGBColor {
    const P: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    P[i % P.len()]
}

/// Under cgroup writeback a bdi has a wb per cgroup: the plot shows the
/// writers' one, the `cgroup_ino` with most balance_dirty_pages lines on
/// `bdi` (-1: lines without the field).
fn writers_cgroup(bdp: &[&Record], bdi: &str) -> i64 {
    let mut inos: Vec<(i64, usize)> = Vec::new();
    for r in bdp.iter().filter(|r| r.bdi.as_deref() == Some(bdi)) {
        let c = r.get("cgroup_ino").unwrap_or(-1);
        match inos.iter_mut().find(|(i, _)| *i == c) {
            Some(n) => n.1 += 1,
            None => inos.push((c, 1)),
        }
    }
    inos.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    inos.first().map(|c| c.0).unwrap_or(-1)
}

/// Plot `DIR/trace.txt` into DIR. Returns the files written. `bdi` limits
/// the plot to one device (default: the bdi with most balance_dirty_pages lines).
pub fn plot_dir(dir: &Path, bdi: Option<&str>) -> Result<Vec<PathBuf>, String> {
    register();
    // the scenario's name, where the run left its summary
    let scenario = std::fs::read_to_string(dir.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("scenario")?.as_str().map(str::to_string));
    let mut bc = bcache::plot_bcache(dir)?;
    bc.extend(reclaim::plot_reclaim(dir, scenario.as_deref())?);
    let tp = dir.join("trace.txt");
    let text = match std::fs::read_to_string(&tp) {
        Ok(t) => t,
        Err(_) if !bc.is_empty() => return Ok(bc),
        Err(e) => return Err(format!("cannot read {}: {e}", tp.display())),
    };
    let (mut recs, skipped) = crate::trace::parse_counted(&text);
    if let Some(m) = skipped.describe(&tp.display().to_string()) {
        eprintln!("wbsim: plot: {m}");
    }
    // a live run's trace: times from its start marker, as in wbsim's
    crate::trace::rebase_on_start_marker(&mut recs);
    let bdp_all: Vec<&Record> = recs
        .iter()
        .filter(|r| r.event == "balance_dirty_pages")
        .collect();
    let bdi = match bdi {
        Some(b) => b.to_string(),
        None => {
            let mut counts: Vec<(String, usize)> = Vec::new();
            for r in recs.iter().filter(|r| r.bdi.is_some()) {
                let b = r.bdi.clone().unwrap();
                match counts.iter_mut().find(|(n, _)| *n == b) {
                    Some(c) => c.1 += 1,
                    None => counts.push((b, 1)),
                }
            }
            counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            counts.first().map(|c| c.0.clone()).unwrap_or_default()
        }
    };
    let cgroup = writers_cgroup(&bdp_all, &bdi);
    let mine = |r: &&Record| {
        r.bdi.as_deref() == Some(bdi.as_str()) && r.get("cgroup_ino").unwrap_or(-1) == cgroup
    };
    let bdp: Vec<&Record> = bdp_all.into_iter().filter(mine).collect();
    let bdr: Vec<&Record> = recs
        .iter()
        .filter(|r| r.event == "bdi_dirty_ratelimit")
        .filter(mine)
        .collect();
    let gds: Vec<&Record> = recs
        .iter()
        .filter(|r| r.event == "global_dirty_state")
        .collect();
    if bdp.is_empty() && bdr.is_empty() && gds.is_empty() {
        if !bc.is_empty() {
            return Ok(bc);
        }
        return Err(format!(
            "{} has no balance_dirty_pages, bdi_dirty_ratelimit or global_dirty_state lines",
            tp.display()
        ));
    }
    let mut out = bc;
    // one time axis for all of a run's graphs
    let ts = bdp.iter().chain(&bdr).chain(&gds).map(|r| t(r));
    let (mut x0, mut x1) = ts.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 - x0 < 1e-6 {
        x1 = x0 + 1.0;
    }
    let xr = (x0, x1);
    let named = |what: &str| match &scenario {
        Some(n) => format!("{n}: {what}, bdi {bdi}"),
        None => format!("{what}, bdi {bdi}"),
    };

    // 1. dirty pages and the control points
    let gdirty: Vec<(f64, f64)> = gds
        .iter()
        .filter_map(|r| Some((t(r), (r.get("dirty")? + r.get("writeback")?) as f64)))
        .collect();
    let mut s: Vec<Series> = vec![
        (
            "dirty (balance_dirty_pages)".into(),
            RGBColor(214, 39, 40),
            field(&bdp, "dirty", 1.0),
            Mark::Dot(3),
        ),
        // drawn over the balance_dirty_pages points, which it mostly
        // shares, so both stay visible
        (
            "dirty+writeback (global_dirty_state)".into(),
            RGBColor(255, 160, 60),
            gdirty,
            Mark::Dot(1),
        ),
        (
            "setpoint".into(),
            RGBColor(44, 160, 44),
            field(&bdp, "setpoint", 1.0),
            Mark::Line,
        ),
        (
            "limit".into(),
            RGBColor(0, 0, 0),
            field(&bdp, "limit", 1.0),
            Mark::Line,
        ),
    ];
    let freerun: Vec<(f64, f64)> = gds
        .iter()
        .filter_map(|r| Some((t(r), (r.get("thresh")? + r.get("bg_thresh")?) as f64 / 2.0)))
        .collect();
    s.push((
        "freerun".into(),
        RGBColor(31, 119, 180),
        freerun,
        Mark::Line,
    ));
    s.push((
        "background thresh".into(),
        RGBColor(148, 103, 189),
        field(&gds, "bg_thresh", 1.0),
        Mark::Line,
    ));
    out.extend(render(
        dir,
        "dirty",
        &named("dirty pages"),
        "pages",
        &s,
        true,
        xr,
    )?);

    // 2. rates (MiB/s)
    let k = 1.0 / 1024.0;
    let mut s: Vec<Series> = vec![
        (
            "write_bw".into(),
            RGBColor(31, 119, 180),
            field(&bdr, "write_bw", k),
            Mark::Line,
        ),
        (
            "awrite_bw".into(),
            RGBColor(23, 190, 207),
            field(&bdr, "awrite_bw", k),
            Mark::Line,
        ),
        (
            "dirty_ratelimit".into(),
            RGBColor(214, 39, 40),
            field(&bdr, "dirty_ratelimit", k),
            Mark::Line,
        ),
        (
            "balanced_dirty_ratelimit".into(),
            RGBColor(44, 160, 44),
            field(&bdr, "balanced_dirty_ratelimit", k),
            Mark::Dot(2),
        ),
    ];
    s.push((
        "task_ratelimit (balance_dirty_pages)".into(),
        RGBColor(255, 127, 14),
        field(&bdp, "task_ratelimit", k),
        Mark::Dot(2),
    ));
    out.extend(render(
        dir,
        "ratelimit",
        &named("bandwidth and rate limits"),
        "MiB/s",
        &s,
        true,
        xr,
    )?);

    // 3. pause and period per task
    let mut pids: Vec<u32> = bdp.iter().map(|r| r.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    let mut s: Vec<Series> = Vec::new();
    for (i, pid) in pids.iter().enumerate() {
        let mine: Vec<&Record> = bdp.iter().copied().filter(|r| r.pid == *pid).collect();
        let c = task_colour(i);
        s.push((
            format!("pause {pid}"),
            c,
            field(&mine, "pause", 1.0)
                .into_iter()
                .map(|(x, y)| (x, y.max(0.0)))
                .collect(),
            Mark::Dot(2),
        ));
        let pc = RGBColor(c.0 / 2 + 100, c.1 / 2 + 100, c.2 / 2 + 100);
        s.push((
            format!("period {pid}"),
            pc,
            field(&mine, "period", 1.0),
            Mark::Line,
        ));
    }
    let legend = pids.len() <= 6;
    out.extend(render(
        dir,
        "pause",
        &named("pause (points) and period (lines) per task"),
        "ms",
        &s,
        legend,
        xr,
    )?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimation_keeps_what_the_pixels_show() {
        // 10000 dots over 100 columns x 10 rows: at most one a cell
        let p: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, (i % 7) as f64)).collect();
        let d = decimate(&p, Mark::Dot(2), (0.0, 9999.0), 6.0, 100, 10);
        assert!(d.len() <= 1000 && d.len() >= 100, "{}", d.len());
        // in time order, the first point kept
        assert_eq!(d[0], (0.0, 0.0));
        assert!(d.windows(2).all(|w| w[0].0 < w[1].0));
        // a line keeps each column's first, lowest, highest and last point
        let l: Vec<(f64, f64)> = vec![(0.0, 5.0), (0.1, 9.0), (0.2, 1.0), (0.3, 4.0), (5.0, 2.0)];
        let d = decimate(&l, Mark::Line, (0.0, 5.0), 10.0, 10, 10);
        assert_eq!(
            d,
            vec![(0.0, 5.0), (0.1, 9.0), (0.2, 1.0), (0.3, 4.0), (5.0, 2.0)]
        );
        let many: Vec<(f64, f64)> = (0..1000)
            .map(|i| (i as f64 / 1000.0, (i % 10) as f64))
            .collect();
        let d = decimate(&many, Mark::Line, (0.0, 1.0), 10.0, 10, 10);
        // 10 columns x at most 4 points
        assert!(d.len() <= 40, "{}", d.len());
        assert_eq!(d.first(), many.first());
        assert_eq!(d.last(), many.last());
    }

    #[test]
    fn ticks_read_as_numbers_do() {
        assert_eq!(tick(80000.0, 80000.0), "80,000");
        assert_eq!(tick(1234567.0, 2e6), "1,234,567");
        assert_eq!(tick(500.0, 1000.0), "500");
        assert_eq!(tick(0.0, 1000.0), "0");
        // a short axis keeps its decimal, a whole value does not need it
        assert_eq!(tick(2.5, 5.0), "2.5");
        assert_eq!(tick(2.0, 5.0), "2");
        assert_eq!(tick(-1500.0, 3000.0), "-1,500");
    }

    #[test]
    fn plots_the_writers_cgroup_wb() {
        let line = |ino: u32| {
            format!("              dd-10      [000] .....     1.000000: balance_dirty_pages: bdi 7:64: limit=100 setpoint=80 dirty=70 wb_setpoint=80 wb_dirty=70 dirty_ratelimit=5120 task_ratelimit=5000 dirtied=32 dirtied_pause=32 paused=0 pause=10 period=10 think=0 cgroup_ino={ino}")
        };
        let recs: Vec<Record> = [23, 1, 23, 23, 1]
            .iter()
            .map(|&i| crate::trace::parse_line(&line(i)).unwrap())
            .collect();
        let refs: Vec<&Record> = recs.iter().collect();
        assert_eq!(writers_cgroup(&refs, "7:64"), 23);
        assert_eq!(writers_cgroup(&refs, "8:0"), -1);
    }
}
