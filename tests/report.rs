//! `wbsim report` in a real browser: each kind of page (one run, before and
//! after, a sweep) is loaded by headless Chromium, and the DOM it built is
//! checked: the page's script ran (`data-ready`) without an error
//! (`data-errors`, and no console error), and every chart is there as a
//! non-empty `<svg>` of the size the report draws. Screenshots go to
//! `target/report-screenshots/` (CI keeps them). Chromium is
//! `WBSIM_CHROMIUM`, else `chromium` on PATH (`.ci/run` installs Debian's);
//! without one the browser half skips and says so, and the HTML is checked
//! as written.

use std::path::{Path, PathBuf};
use std::process::Command;

fn wbsim(args: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_wbsim"))
        .args(args)
        .output()
        .expect("run wbsim");
    assert!(
        o.status.success(),
        "wbsim {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wbsim-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn chromium() -> Option<PathBuf> {
    let c = std::env::var_os("WBSIM_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("chromium"));
    Command::new(&c)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| c)
}

/// The `<svg class="chart" ...>...</svg>` elements of an HTML text, each
/// with its width and height attributes.
fn charts(html: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<svg") {
        let tail = &rest[i..];
        let end = tail.find("</svg>").map_or(tail.len(), |e| e + 6);
        let el = &tail[..end];
        let attr = |name: &str| {
            let k = format!(" {name}=\"");
            el.find(&k)
                .map(|p| {
                    el[p + k.len()..]
                        .split('"')
                        .next()
                        .unwrap_or("")
                        .to_string()
                })
                .unwrap_or_default()
        };
        if el.contains("class=\"chart\"") {
            out.push((attr("width"), attr("height"), el.to_string()));
        }
        rest = &tail[end..];
    }
    out
}

fn check(html: &str, want: usize, what: &str) {
    let c = charts(html);
    assert_eq!(c.len(), want, "{what}: charts");
    for (w, h, el) in c {
        assert_eq!((w.as_str(), h.as_str()), ("1000", "340"), "{what}");
        assert!(
            el.contains("<path d=\"M") || el.contains("<circle"),
            "{what}: an empty chart"
        );
        assert!(
            el.contains("class=\"xl\"") && el.contains("class=\"yl\""),
            "{what}: axis labels"
        );
    }
}

fn in_browser(chrome: &Path, page: &Path, name: &str, want: usize) {
    let url = format!("file://{}", page.display());
    let o = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            &url,
        ])
        .output()
        .expect("run chromium");
    assert!(o.status.success(), "{name}: chromium failed");
    let dom = String::from_utf8_lossy(&o.stdout);
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(
        dom.contains("data-ready=\"1\""),
        "{name}: the page's script did not run"
    );
    assert!(
        !dom.contains("data-errors"),
        "{name}: script errors in the DOM"
    );
    for l in log.lines().filter(|l| l.contains(":CONSOLE")) {
        assert!(!l.to_lowercase().contains("error"), "{name}: console: {l}");
    }
    check(&dom, want, name);
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let png = shots.join(format!("{name}.png"));
    let o = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1200,2400",
            &format!("--screenshot={}", png.display()),
            &url,
        ])
        .output()
        .expect("run chromium");
    assert!(o.status.success(), "{name}: screenshot");
    assert!(
        std::fs::metadata(&png).unwrap().len() > 10_000,
        "{name}: screenshot"
    );
}

#[test]
fn run_compare_and_sweep_reports_render_in_a_browser() {
    let d = tmpdir("pages");
    let (a, b) = (d.join("a"), d.join("b"));
    let s = |p: &Path| p.to_str().unwrap().to_string();
    wbsim(&[
        "run",
        "-q",
        "--report",
        "--out",
        &s(&a),
        "--set",
        "run.duration=20s",
    ]);
    wbsim(&[
        "run",
        "-q",
        "--out",
        &s(&b),
        "--set",
        "run.duration=20s",
        "--set",
        "vm.dirty_bytes=400M",
    ]);
    let cmp = d.join("compare.html");
    wbsim(&["report", &s(&a), &s(&b), "-o", &s(&cmp)]);
    let plan = d.join("plan.toml");
    std::fs::write(
        &plan,
        "[set]\n\"run.duration\" = \"8s\"\n\"run.warmup\" = \"2s\"\n[axes]\n\
         \"jobs.dd.numjobs\" = [1, 4]\n\"vm.dirty_bytes\" = [\"50M\", \"100M\", \"200M\"]\n",
    )
    .unwrap();
    let sw = d.join("sweep");
    wbsim(&["sweep", &s(&plan), "--out", &s(&sw), "-q"]);
    let swp = d.join("sweep.html");
    wbsim(&["report", &s(&sw), "-o", &s(&swp)]);
    // a workload with its own graphs: seed 004's fio on bcache (the
    // controller's three, fio's three latency logs)
    let bc = d.join("bcache");
    let s4 = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-004/seed004-fio.toml");
    wbsim(&[
        "run",
        "-q",
        "--report",
        "--out",
        &s(&bc),
        &s(&s4),
        "--set",
        "run.duration=60s",
        "--set",
        "run.warmup=10s",
    ]);
    let pages = [
        (a.join("report.html"), "run", 7),
        (bc.join("report.html"), "bcache-fio", 8),
        (cmp, "compare", 7),
        (swp, "sweep", 5),
    ];
    for (p, name, n) in &pages {
        let html = std::fs::read_to_string(p).unwrap();
        // self-contained: nothing is fetched
        assert!(
            !html.contains("http://") || !html.contains("src=\"http"),
            "{name}"
        );
        assert!(
            !html.contains("<link") && !html.contains("src="),
            "{name}: external resources"
        );
        check(&html, *n, name);
    }
    let run = std::fs::read_to_string(a.join("report.html")).unwrap();
    assert!(run.contains("<pre class=\"scenario\">") && run.contains("[vm]"));
    assert!(run.contains("# --set run.duration=20s"));
    // device IOPS and throughput over time, from the run's diskstats
    for id in ["device-iops", "device-mibs"] {
        assert!(run.contains(&format!("id=\"{id}\"")), "run: {id}");
    }
    let bcache = std::fs::read_to_string(bc.join("report.html")).unwrap();
    assert!(
        bcache.contains("bcache0 write"),
        "bcache-fio: the bcache device's IOPS"
    );
    let Some(chrome) = chromium() else {
        eprintln!("skipped the browser half: no chromium (set WBSIM_CHROMIUM, or run .ci/run, which installs Debian's)");
        return;
    };
    for (p, name, n) in &pages {
        in_browser(&chrome, p, name, *n);
    }
    let _ = std::fs::remove_dir_all(&d);
}
