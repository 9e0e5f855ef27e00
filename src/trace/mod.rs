//! ftrace text output and the one parser that reads it.
//!
//! Lines are byte-compatible with a 6.18 kernel's `trace` file:
//! `%16s-%-7d [%03d] %5s %5lu.%06lu: event: fields` (comm right-aligned to
//! 16, pid left-aligned to 7, CPU, five latency flag characters, seconds and
//! microseconds). `parse_line` reads both wbsim's lines and a kernel's.

use crate::kernel::{Kernel, Pid};
use crate::sim::{Ns, NSEC_PER_SEC, NSEC_PER_USEC};
use std::fmt::Write as _;

/// Which events are enabled (the instance's events/writeback/*/enable).
#[derive(Clone, Debug, Default)]
pub struct EventMask {
    pub balance_dirty_pages: bool,
    pub bdi_dirty_ratelimit: bool,
    pub global_dirty_state: bool,
    pub writeback_written: bool,
    pub writeback_start: bool,
    pub writeback_queue_io: bool,
    pub writeback_wake_background: bool,
    pub writeback_pages_written: bool,
    pub wbt_step: bool,
    pub wbt_timer: bool,
    pub sched_switch: bool,
    pub sched_wakeup: bool,
    pub mm_vmscan_kswapd_wake: bool,
    pub mm_vmscan_kswapd_sleep: bool,
    pub mm_vmscan_wakeup_kswapd: bool,
    pub mm_vmscan_direct_reclaim_begin: bool,
    pub mm_vmscan_direct_reclaim_end: bool,
    pub mm_vmscan_lru_shrink_inactive: bool,
    pub mm_vmscan_throttled: bool,
    pub mm_shrink_slab_start: bool,
    pub mm_shrink_slab_end: bool,
    pub bcache_write: bool,
    pub bcache_bypass_sequential: bool,
    pub bcache_bypass_congested: bool,
    pub bcache_writeback: bool,
    pub bcache_gc_start: bool,
    pub bcache_gc_end: bool,
    pub track_foreign_dirty: bool,
    pub flush_foreign: bool,
    pub inode_foreign_history: bool,
    pub inode_switch_wbs: bool,
}

impl EventMask {
    pub fn from_names(names: &[String]) -> EventMask {
        let mut m = EventMask::default();
        for n in names {
            match n.as_str() {
                "balance_dirty_pages" => m.balance_dirty_pages = true,
                "bdi_dirty_ratelimit" => m.bdi_dirty_ratelimit = true,
                "global_dirty_state" => m.global_dirty_state = true,
                "writeback_written" => m.writeback_written = true,
                "writeback_start" => m.writeback_start = true,
                "writeback_queue_io" => m.writeback_queue_io = true,
                "writeback_wake_background" => m.writeback_wake_background = true,
                "writeback_pages_written" => m.writeback_pages_written = true,
                "wbt_step" => m.wbt_step = true,
                "wbt_timer" => m.wbt_timer = true,
                "sched_switch" => m.sched_switch = true,
                "sched_wakeup" => m.sched_wakeup = true,
                "mm_vmscan_kswapd_wake" => m.mm_vmscan_kswapd_wake = true,
                "mm_vmscan_kswapd_sleep" => m.mm_vmscan_kswapd_sleep = true,
                "mm_vmscan_wakeup_kswapd" => m.mm_vmscan_wakeup_kswapd = true,
                "mm_vmscan_direct_reclaim_begin" => m.mm_vmscan_direct_reclaim_begin = true,
                "mm_vmscan_direct_reclaim_end" => m.mm_vmscan_direct_reclaim_end = true,
                "mm_vmscan_lru_shrink_inactive" => m.mm_vmscan_lru_shrink_inactive = true,
                "mm_vmscan_throttled" => m.mm_vmscan_throttled = true,
                "mm_shrink_slab_start" => m.mm_shrink_slab_start = true,
                "mm_shrink_slab_end" => m.mm_shrink_slab_end = true,
                "bcache_write" => m.bcache_write = true,
                "bcache_bypass_sequential" => m.bcache_bypass_sequential = true,
                "bcache_bypass_congested" => m.bcache_bypass_congested = true,
                "bcache_writeback" => m.bcache_writeback = true,
                "bcache_gc_start" => m.bcache_gc_start = true,
                "bcache_gc_end" => m.bcache_gc_end = true,
                "track_foreign_dirty" => m.track_foreign_dirty = true,
                "flush_foreign" => m.flush_foreign = true,
                "inode_foreign_history" => m.inode_foreign_history = true,
                "inode_switch_wbs" => m.inode_switch_wbs = true,
                _ => {}
            }
        }
        m
    }
}

/// The trace buffer. Each line is formatted into `buf`, counted into the
/// summary's statistics (`stats`, through [`parse_line`]), and then either
/// kept in `buf` (a run in memory: the tests, `wbsim bench`) or written to
/// `sink` and dropped, so that a run's memory does not grow with its trace.
#[derive(Default)]
pub struct Tracer {
    pub on: EventMask,
    /// The lines kept in memory; with a sink, only the line being formatted.
    pub buf: String,
    pub lines: u64,
    /// Bytes of trace lines printed (what `buf` would hold without a sink).
    pub bytes: u64,
    /// The statistics of the summary's `trace` section.
    pub stats: crate::metrics::TraceStats,
    /// Where the lines go as they are printed (the body of `trace.txt`).
    sink: Option<std::io::BufWriter<std::fs::File>>,
    /// The first error writing to the sink (the rest of the lines are
    /// dropped; the run reports it at its end).
    pub sink_error: Option<std::io::Error>,
    /// Where the line being formatted starts in `buf`.
    line_start: usize,
}

impl Tracer {
    pub fn new(events: &[String]) -> Tracer {
        Tracer {
            on: EventMask::from_names(events),
            ..Default::default()
        }
    }
    pub fn disabled() -> Tracer {
        Tracer::default()
    }

    /// Write the lines to `f` as they are printed instead of keeping them.
    pub fn stream_to(&mut self, f: std::fs::File) {
        self.sink = Some(std::io::BufWriter::with_capacity(1 << 16, f));
    }

    /// Whether the lines go to a sink.
    pub fn streaming(&self) -> bool {
        self.sink.is_some()
    }

    /// A line was formatted at the end of `buf`: count it, read it into
    /// the statistics, and pass it to the sink if there is one.
    #[inline]
    pub fn line_done(&mut self) {
        self.lines += 1;
        let line = &self.buf[self.line_start..];
        self.bytes += line.len() as u64;
        if let Some(r) = parse_line(line.strip_suffix('\n').unwrap_or(line)) {
            self.stats.add(&r);
        }
        if let Some(w) = &mut self.sink {
            if self.sink_error.is_none() {
                use std::io::Write as _;
                if let Err(e) = w.write_all(line.as_bytes()) {
                    self.sink_error = Some(e);
                }
            }
            self.buf.clear();
        }
        self.line_start = self.buf.len();
    }

    /// Flush the sink and close it: the trace's lines are all written.
    pub fn finish_sink(&mut self) -> std::io::Result<()> {
        if let Some(mut w) = self.sink.take() {
            use std::io::Write as _;
            if let Some(e) = self.sink_error.take() {
                return Err(e);
            }
            w.flush()?;
        }
        Ok(())
    }

    /// The `trace` file's header (the nop tracer's), for `lines` lines.
    pub fn header(&self, ncpus: u32) -> String {
        let mut s = String::with_capacity(1024);
        let _ = writeln!(s, "# tracer: nop\n#");
        let _ = writeln!(
            s,
            "# entries-in-buffer/entries-written: {}/{}   #P:{}",
            self.lines, self.lines, ncpus
        );
        s.push_str(
            "#\n\
#                                _-----=> irqs-off/BH-disabled\n\
#                               / _----=> need-resched\n\
#                              | / _---=> hardirq/softirq\n\
#                              || / _--=> preempt-depth\n\
#                              ||| / _-=> migrate-disable\n\
#                              |||| /     delay\n\
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
#              | |         |   |||||     |         |\n",
        );
        s
    }

    /// The `trace` file: the nop tracer's header, then the lines (those
    /// kept in memory: none with a sink).
    pub fn render(&self, ncpus: u32) -> String {
        let mut s = self.header(ncpus);
        s.push_str(&self.buf);
        s
    }
}

/// Append one line in ftrace's format.
pub fn format_line(
    buf: &mut String,
    t: Ns,
    comm: &str,
    pid: u32,
    cpu: usize,
    event: &str,
    args: std::fmt::Arguments,
) {
    let secs = t / NSEC_PER_SEC;
    let usecs = (t % NSEC_PER_SEC) / NSEC_PER_USEC;
    let _ = write!(
        buf,
        "{comm:>16}-{pid:<7} [{cpu:03}] ..... {secs:>5}.{usecs:06}: {event}: "
    );
    let _ = buf.write_fmt(args);
    buf.push('\n');
}

impl Kernel {
    pub fn trace_line(&mut self, pid: Pid, event: &str, args: std::fmt::Arguments) {
        let t = &self.tasks[pid];
        let now = self.q.now();
        format_line(
            &mut self.tracer.buf,
            now,
            &t.comm,
            t.pid,
            t.cpu,
            event,
            args,
        );
        self.tracer.line_done();
    }
}

impl Kernel {
    /// A line from a timer callback in softirq context, where nothing else
    /// runs: the idle task (`<idle>-0`) on CPU 0, in softirq at preempt
    /// depth 1, as the host kernel prints it.
    pub fn trace_line_softirq(&mut self, event: &str, args: std::fmt::Arguments) {
        let now = self.q.now();
        let secs = now / NSEC_PER_SEC;
        let usecs = (now % NSEC_PER_SEC) / NSEC_PER_USEC;
        let _ = write!(
            self.tracer.buf,
            "{:>16}-{:<7} [{:03}] ..s1. {secs:>5}.{usecs:06}: {event}: ",
            "<idle>", 0, 0
        );
        let _ = self.tracer.buf.write_fmt(args);
        self.tracer.buf.push('\n');
        self.tracer.line_done();
    }
}

/// The tracefs subsystem directory of a wbsim event name.
pub fn event_subsystem(event: &str) -> &'static str {
    if event.starts_with("wbt_") {
        "wbt"
    } else if event.starts_with("sched_") {
        "sched"
    } else if event.starts_with("mm_vmscan_") {
        "vmscan"
    } else if event.starts_with("bcache_") {
        "bcache"
    } else {
        "writeback"
    }
}

/// The marker `wbsim live` writes to trace_marker when its writers start.
pub const START_MARKER: &str = "WBSIM_START";

/// Put a live run's records on the simulator's clock: times from the
/// [`START_MARKER`] line, marker lines dropped. Returns false (and leaves
/// `recs` alone) if there is no start marker, as in wbsim's own traces.
pub fn rebase_on_start_marker(recs: &mut Vec<Record>) -> bool {
    let Some(start) = recs
        .iter()
        .find(|r| r.event == "tracing_mark_write" && r.body.contains(START_MARKER))
        .map(|r| r.ts)
    else {
        return false;
    };
    recs.retain(|r| r.event != "tracing_mark_write");
    for r in recs.iter_mut() {
        r.ts = r.ts.saturating_sub(start);
    }
    true
}

/// One parsed trace line.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub comm: String,
    pub pid: u32,
    pub cpu: u32,
    /// Timestamp in ns (microsecond precision).
    pub ts: Ns,
    pub event: String,
    /// `bdi X:Y:` prefix, if any.
    pub bdi: Option<String>,
    /// Numeric `key=value` fields in order (string-valued fields such as
    /// `reason=` are in `strs`).
    pub fields: Vec<(String, i64)>,
    pub strs: Vec<(String, String)>,
    /// The rest of the line after `event: `.
    pub body: String,
}

impl Record {
    pub fn get(&self, k: &str) -> Option<i64> {
        self.fields.iter().find(|(n, _)| n == k).map(|(_, v)| *v)
    }
}

/// Parse a line of ftrace text (ours or a kernel's). Comment lines and
/// lines that are not events give None.
pub fn parse_line(line: &str) -> Option<Record> {
    if line.starts_with('#') || line.trim().is_empty() {
        return None;
    }
    // "<comm>-<pid> [<cpu>] <flags> <secs>.<usecs>: <event>: <body>"
    let lb = line.find(" [")?;
    let head = line[..lb].trim_start();
    let dash = head.rfind('-')?;
    let comm = head[..dash].to_string();
    let pid: u32 = head[dash + 1..].trim().parse().ok()?;
    let rest = &line[lb + 2..];
    let rb = rest.find(']')?;
    let cpu: u32 = rest[..rb].trim().parse().ok()?;
    let rest = rest[rb + 1..].trim_start();
    // optional flags field (absent when irq-info is off)
    let mut it = rest.splitn(2, ' ');
    let first = it.next()?;
    let rest = if first.contains('.') && first.ends_with(':') {
        rest
    } else {
        it.next()?.trim_start()
    };
    let colon = rest.find(": ")?;
    let ts_s = &rest[..colon];
    let (secs, usecs) = ts_s.split_once('.')?;
    // a timestamp past u64 nanoseconds is not a kernel's: the line is
    // skipped, not wrapped
    let ts = secs
        .trim()
        .parse::<u64>()
        .ok()?
        .checked_mul(NSEC_PER_SEC)?
        .checked_add(usecs.parse::<u64>().ok()?.checked_mul(NSEC_PER_USEC)?)?;
    let rest = &rest[colon + 2..];
    let (event, body) = match rest.find(": ") {
        Some(i) => (&rest[..i], &rest[i + 2..]),
        None => (rest.trim_end_matches(':'), ""),
    };
    let mut bdi = None;
    let mut b = body;
    if let Some(x) = b.strip_prefix("bdi ") {
        if let Some(i) = x.find(": ") {
            bdi = Some(x[..i].to_string());
            b = &x[i + 2..];
        }
    } else if event.starts_with("wbt_") {
        // wbt's lines start with the bare bdi name: "8:0: status=3, ..."
        if let Some(i) = b.find(": ") {
            bdi = Some(b[..i].to_string());
            b = &b[i + 2..];
        }
    }
    let mut fields = Vec::new();
    let mut strs = Vec::new();
    for tok in b.split_whitespace() {
        if let Some((k, v)) = tok.split_once('=') {
            // wbt separates fields with ", " and gives window in µs
            let v = v.trim_end_matches(',');
            let v = v
                .strip_suffix("us")
                .filter(|n| n.parse::<i64>().is_ok())
                .unwrap_or(v);
            // kernels before 6.x's wb rename print bdi_setpoint/bdi_dirty
            // (6.1 still does) where 6.18 prints wb_setpoint/wb_dirty
            let k = match k {
                "bdi_setpoint" => "wb_setpoint",
                "bdi_dirty" => "wb_dirty",
                k => k,
            };
            match v.parse::<i64>() {
                Ok(n) => fields.push((k.to_string(), n)),
                Err(_) => strs.push((k.to_string(), v.to_string())),
            }
        }
    }
    if fields.is_empty() && !b.contains('=') {
        if let Ok(n) = b.trim().parse::<i64>() {
            fields.push(("value".into(), n));
        }
    }
    Some(Record {
        comm,
        pid,
        cpu,
        ts,
        event: event.to_string(),
        bdi,
        fields,
        strs,
        body: body.to_string(),
    })
}

/// Parse a whole trace file.
pub fn parse(text: &str) -> Vec<Record> {
    text.lines().filter_map(parse_line).collect()
}

/// Lines of a trace that are neither comments nor events the parser reads
/// (`CPU:1 [LOST 120 EVENTS]`, a truncated line, a timestamp that
/// overflows): how many, and the first with its line number.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    pub count: u64,
    pub first: Option<(usize, String)>,
}

impl Skipped {
    /// "skipped 12 lines: first at line 3401: ..." (None when none were).
    pub fn describe(&self, file: &str) -> Option<String> {
        let (n, l) = self.first.as_ref()?;
        let mut l: String = l.chars().take(120).collect();
        l = l
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        Some(format!(
            "{file}: skipped {} line{} the parser does not read: first at line {n}: {l}",
            self.count,
            if self.count == 1 { "" } else { "s" }
        ))
    }
}

/// [`parse`], counting the lines it skips.
pub fn parse_counted(text: &str) -> (Vec<Record>, Skipped) {
    let mut recs = Vec::new();
    let mut sk = Skipped::default();
    for (i, l) in text.lines().enumerate() {
        match parse_line(l) {
            Some(r) => recs.push(r),
            None if l.starts_with('#') || l.trim().is_empty() => {}
            None => {
                sk.count += 1;
                if sk.first.is_none() {
                    sk.first = Some((i + 1, l.to_string()));
                }
            }
        }
    }
    (recs, sk)
}

#[cfg(test)]
mod tests {

    #[test]
    fn older_kernels_bdi_field_names_read_as_wb_names() {
        let l = "              dd-1234    [001] .....   100.000000: balance_dirty_pages: bdi 254:16: limit=16384 setpoint=14336 dirty=15253 bdi_setpoint=14335 bdi_dirty=15253 dirty_ratelimit=5000 task_ratelimit=4000 dirtied=32 dirtied_pause=32 paused=0 pause=20 period=24 think=4 cgroup_ino=23";
        let r = parse_line(l).unwrap();
        assert_eq!(r.get("wb_setpoint"), Some(14335));
        assert_eq!(r.get("wb_dirty"), Some(15253));
        assert_eq!(r.get("cgroup_ino"), Some(23));
    }

    use super::*;

    #[test]
    fn live_traces_are_rebased_on_their_start_marker() {
        let text = "\
           wbsim-12205   [000] ...1. 12769.280951: tracing_mark_write: WBSIM_START
              dd-12591   [001] ..... 12769.285375: global_dirty_state: dirty=5 writeback=0 bg_thresh=25600 thresh=51200 limit=51200 dirtied=1 written=0
";
        let mut recs = parse(text);
        assert!(rebase_on_start_marker(&mut recs));
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].ts, 4_424_000);
        // wbsim's own traces have no marker and keep their times
        let mut recs = parse(text.lines().nth(1).unwrap());
        let ts = recs[0].ts;
        assert!(!rebase_on_start_marker(&mut recs));
        assert_eq!(recs[0].ts, ts);
    }

    #[test]
    fn skipped_lines_are_counted_and_overflowing_times_refused() {
        let text = "# tracer: nop\n\
            \n\
                          dd-1 [000] .....     1.000000: writeback_pages_written: 12\n\
            CPU:1 [LOST 120 EVENTS]\n\
                          dd-1 [000] ..... 99999999999999.999999: writeback_pages_written: 1\n\
                          dd-1 [000] .....     2.000000: writeback_pages_written: 13\n";
        let (recs, sk) = parse_counted(text);
        assert_eq!(recs.len(), 2);
        assert_eq!(sk.count, 2);
        assert_eq!(sk.first, Some((4, "CPU:1 [LOST 120 EVENTS]".to_string())));
        assert_eq!(
            sk.describe("t/trace.txt").unwrap(),
            "t/trace.txt: skipped 2 lines the parser does not read: first at line 4: CPU:1 [LOST 120 EVENTS]"
        );
        assert_eq!(Skipped::default().describe("x"), None);
        // 18446744073709 s is the last second u64 ns can hold
        let edge = "  dd-1 [000] ..... 18446744073.709551: writeback_pages_written: 1";
        assert_eq!(parse_line(edge).unwrap().ts, 18_446_744_073_709_551_000);
        let over = "  dd-1 [000] ..... 18446744074.000000: writeback_pages_written: 1";
        assert!(parse_line(over).is_none());
    }

    #[test]
    fn prefix_matches_kernel_layout() {
        let mut s = String::new();
        format_line(
            &mut s,
            208_191_140_123,
            "<...>",
            3025,
            1,
            "tracing_mark_write",
            format_args!("hello"),
        );
        assert_eq!(
            s,
            "           <...>-3025    [001] .....   208.191140: tracing_mark_write: hello\n"
        );
    }

    #[test]
    fn parses_kernel_lines() {
        let l = "              dd-4242    [000] .....  1234.567890: balance_dirty_pages: bdi 7:0: limit=51200 setpoint=44800 dirty=45000 wb_setpoint=44700 wb_dirty=44990 dirty_ratelimit=5120 task_ratelimit=5000 dirtied=256 dirtied_pause=32 paused=0 pause=40 period=48 think=8 cgroup_ino=1";
        let r = parse_line(l).unwrap();
        assert_eq!(r.comm, "dd");
        assert_eq!(r.pid, 4242);
        assert_eq!(r.ts, 1_234_567_890_000);
        assert_eq!(r.event, "balance_dirty_pages");
        assert_eq!(r.bdi.as_deref(), Some("7:0"));
        assert_eq!(r.get("pause"), Some(40));
        assert_eq!(r.get("cgroup_ino"), Some(1));
        let k = "     kworker/u4:1-123     [001] .....    12.000004: writeback_written: bdi 7:0: sb_dev 0:0 nr_pages=9223372036854765 sync_mode=0 kupdate=0 range_cyclic=1 background=1 reason=background cgroup_ino=1";
        let r = parse_line(k).unwrap();
        assert_eq!(r.comm, "kworker/u4:1");
        assert_eq!(
            r.strs,
            vec![("reason".to_string(), "background".to_string())]
        );
        let g = "           <...>-3025    [001] ...1.   208.191140: global_dirty_state: dirty=1 writeback=2 bg_thresh=3 thresh=4 limit=5 dirtied=6 written=7";
        let r = parse_line(g).unwrap();
        assert_eq!(r.get("written"), Some(7));
        assert!(parse_line("# tracer: nop").is_none());
        // a comm with a dash in it
        let d = "  kworker/0:1-abc-77      [000] .....     0.000001: writeback_pages_written: 12";
        let r = parse_line(d).unwrap();
        assert_eq!((r.comm.as_str(), r.pid), ("kworker/0:1-abc", 77));
        assert_eq!(r.get("value"), Some(12));
    }
}
