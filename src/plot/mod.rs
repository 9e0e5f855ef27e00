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
//!   per task.

use crate::trace::{parse, Record};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const W: u32 = 1200;
const H: u32 = 700;
const FONT: &str = "sans-serif";

type Series = (String, RGBColor, Vec<(f64, f64)>, bool); // name, colour, points, as line

fn register() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
}

fn t(r: &Record) -> f64 {
    r.ts as f64 / 1e9
}

fn field(recs: &[&Record], k: &str, scale: f64) -> Vec<(f64, f64)> {
    recs.iter()
        .filter_map(|r| r.get(k).map(|v| (t(r), v as f64 * scale)))
        .collect()
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    ylabel: &str,
    series: &[Series],
    legend: bool,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let pts = series.iter().flat_map(|s| s.2.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 - x0 < 1e-6 {
        x1 = x0 + 1.0;
    }
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.08 };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc(ylabel)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(e)?;
    for (name, col, p, line) in series {
        let style = col.filled();
        if *line {
            let a = chart
                .draw_series(LineSeries::new(p.iter().copied(), col.stroke_width(2)))
                .map_err(e)?;
            if legend {
                let c = *col;
                a.label(name.as_str()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3))
                });
            }
        } else {
            let a = chart
                .draw_series(p.iter().map(|&(x, y)| Circle::new((x, y), 2, style)))
                .map_err(e)?;
            if legend {
                let c = *col;
                a.label(name.as_str())
                    .legend(move |(x, y)| Circle::new((x + 9, y), 4, c.filled()));
            }
        }
    }
    if legend {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 14))
            .draw()
            .map_err(e)?;
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
) -> Result<Vec<PathBuf>, String> {
    let png = dir.join(format!("{name}.png"));
    let svg = dir.join(format!("{name}.svg"));
    draw(
        BitMapBackend::new(&png, (W, H)).into_drawing_area(),
        title,
        ylabel,
        series,
        legend,
    )?;
    draw(
        SVGBackend::new(&svg, (W, H)).into_drawing_area(),
        title,
        ylabel,
        series,
        legend,
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
    let tp = dir.join("trace.txt");
    let text =
        std::fs::read_to_string(&tp).map_err(|e| format!("cannot read {}: {e}", tp.display()))?;
    let mut recs = parse(&text);
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
        return Err(format!(
            "{} has no balance_dirty_pages, bdi_dirty_ratelimit or global_dirty_state lines",
            tp.display()
        ));
    }
    let mut out = Vec::new();

    // 1. dirty pages and the control points
    let gdirty: Vec<(f64, f64)> = gds
        .iter()
        .filter_map(|r| Some((t(r), (r.get("dirty")? + r.get("writeback")?) as f64)))
        .collect();
    let mut s: Vec<Series> = vec![
        (
            "dirty+writeback (global_dirty_state)".into(),
            RGBColor(255, 187, 120),
            gdirty,
            false,
        ),
        (
            "dirty (balance_dirty_pages)".into(),
            RGBColor(214, 39, 40),
            field(&bdp, "dirty", 1.0),
            false,
        ),
        (
            "setpoint".into(),
            RGBColor(44, 160, 44),
            field(&bdp, "setpoint", 1.0),
            true,
        ),
        (
            "limit".into(),
            RGBColor(0, 0, 0),
            field(&bdp, "limit", 1.0),
            true,
        ),
    ];
    let freerun: Vec<(f64, f64)> = gds
        .iter()
        .filter_map(|r| Some((t(r), (r.get("thresh")? + r.get("bg_thresh")?) as f64 / 2.0)))
        .collect();
    s.push(("freerun".into(), RGBColor(31, 119, 180), freerun, true));
    s.push((
        "background thresh".into(),
        RGBColor(148, 103, 189),
        field(&gds, "bg_thresh", 1.0),
        true,
    ));
    out.extend(render(
        dir,
        "dirty",
        &format!("dirty pages, bdi {bdi}"),
        "pages",
        &s,
        true,
    )?);

    // 2. rates (MiB/s)
    let k = 1.0 / 1024.0;
    let mut s: Vec<Series> = vec![
        (
            "write_bw".into(),
            RGBColor(31, 119, 180),
            field(&bdr, "write_bw", k),
            true,
        ),
        (
            "awrite_bw".into(),
            RGBColor(23, 190, 207),
            field(&bdr, "awrite_bw", k),
            true,
        ),
        (
            "dirty_ratelimit".into(),
            RGBColor(214, 39, 40),
            field(&bdr, "dirty_ratelimit", k),
            true,
        ),
        (
            "balanced_dirty_ratelimit".into(),
            RGBColor(44, 160, 44),
            field(&bdr, "balanced_dirty_ratelimit", k),
            false,
        ),
    ];
    s.push((
        "task_ratelimit (balance_dirty_pages)".into(),
        RGBColor(255, 127, 14),
        field(&bdp, "task_ratelimit", k),
        false,
    ));
    out.extend(render(
        dir,
        "ratelimit",
        &format!("bandwidth and rate limits, bdi {bdi}"),
        "MiB/s",
        &s,
        true,
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
            false,
        ));
        let pc = RGBColor(c.0 / 2 + 100, c.1 / 2 + 100, c.2 / 2 + 100);
        s.push((
            format!("period {pid}"),
            pc,
            field(&mine, "period", 1.0),
            true,
        ));
    }
    let legend = pids.len() <= 6;
    out.extend(render(
        dir,
        "pause",
        &format!("pause (points) and period (lines) per task, bdi {bdi}"),
        "ms",
        &s,
        legend,
    )?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
