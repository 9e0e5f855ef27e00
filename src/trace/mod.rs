//! ftrace text output and the one parser that reads it.
//!
//! Lines are byte-compatible with a 6.18 kernel's `trace` file:
//! `%16s-%-7d [%03d] %5s %5lu.%06lu: event: fields` (comm right-aligned to
//! 16, pid left-aligned to 7, CPU, five latency flag characters, seconds and
//! microseconds). `parse_line` reads both wbsim's lines and a kernel's.

use crate::kernel::{Kernel, Pid};
use crate::sim::{Ns, NSEC_PER_SEC, NSEC_PER_USEC};
use std::fmt::Write as _;

mod fmt;
pub mod sink;

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
    pub jbd2_start_commit: bool,
    pub jbd2_end_commit: bool,
    pub mark_victim: bool,
    pub reclaim_retry_zone: bool,
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
                "jbd2_start_commit" => m.jbd2_start_commit = true,
                "jbd2_end_commit" => m.jbd2_end_commit = true,
                "mark_victim" => m.mark_victim = true,
                "reclaim_retry_zone" => m.reclaim_retry_zone = true,
                _ => {}
            }
        }
        m
    }
}

/// The trace buffer. Each line is counted into the summary's statistics
/// (`stats`, from the event's time, name and fields as [`parse_line`] reads
/// them) and either kept in `buf` (a run in memory: the tests, `wbsim
/// bench`) or passed to `sink` in chunks and dropped, so that a run's memory
/// does not grow with its trace. A line of integer fields going to the sink
/// is only recorded; the sink formats it on a thread of its own.
#[derive(Default)]
pub struct Tracer {
    pub on: EventMask,
    /// The lines kept in memory (with a sink, none: they go to `chunk`).
    pub buf: String,
    pub lines: u64,
    /// Bytes of trace lines printed (what `buf` would hold without a sink).
    pub bytes: u64,
    /// The statistics of the summary's `trace` section.
    pub stats: crate::metrics::TraceStats,
    /// Where the lines go as they are printed: `trace.txt`, from the
    /// offset `body_at` that its header leaves them, a chunk at a time
    /// ([`sink::Chunk`]), formatted and written on a thread of its own.
    sink: Option<sink::Sink>,
    /// The lines on their way to the sink, once there is one.
    chunk: sink::Chunk,
    /// `trace.txt` before the lines' place in it is chosen (see
    /// [`Tracer::stream_into`]); they wait in `buf` until then.
    unplaced: Option<std::fs::File>,
    /// The file's path, its CPUs (the header's `#P:`), and the run's end
    /// (to extrapolate the lines from).
    file: Option<(std::path::PathBuf, u32, Ns)>,
    /// Where the lines start in the file: the length of the header for the
    /// line count guessed when they were placed.
    body_at: u64,
    /// The lines' bytes held before they are placed.
    pub place_at: usize,
    /// An error placing the lines (the rest are dropped; the run reports it
    /// at its end, as it does the sink's first error writing them).
    sink_error: Option<std::io::Error>,
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

    /// Write the lines into `trace.txt` at `path` as they are printed,
    /// instead of keeping them; `ncpus` is the header's `#P:`, `end` the
    /// run's end. The header, which counts the lines, goes first in the
    /// file: so that the lines need not be copied after it at the end, the
    /// first `place_at` bytes of them (1 MiB) wait in memory, then the
    /// count is extrapolated to the run's end and the lines are written
    /// after a header of that count's length. If the count then has another
    /// number of digits, [`Tracer::finish_file`] copies them into place.
    /// Until the header is written the file is `.trace.txt.partial` beside
    /// `path` (renamed at the end, no copy): a run killed before its end
    /// leaves no `trace.txt` whose header is missing.
    pub fn stream_into(
        &mut self,
        path: &std::path::Path,
        ncpus: u32,
        end: Ns,
    ) -> std::io::Result<()> {
        self.unplaced = Some(std::fs::File::create(partial_of(path))?);
        self.file = Some((path.to_path_buf(), ncpus, end));
        self.place_at = 1 << 20;
        Ok(())
    }

    /// Whether the lines go to a file.
    pub fn streaming(&self) -> bool {
        self.file.is_some()
    }

    /// Print one line in ftrace's format ([`format_line`]'s, with the
    /// latency `flags`), count it into the statistics and pass it to the
    /// sink if there is one.
    pub fn emit(&mut self, h: Head, args: std::fmt::Arguments) {
        let Head {
            t,
            comm,
            cpu,
            event,
            ..
        } = h;
        let out = match self.sink {
            Some(_) => &mut self.chunk.text,
            None => &mut self.buf,
        };
        let start = out.len();
        push_prefix(out, &h);
        let body_start = out.len();
        match args.as_str() {
            Some(s) => out.push_str(s),
            None => {
                let _ = out.write_fmt(args);
            }
        }
        let body_end = out.len();
        out.push('\n');
        self.lines += 1;
        self.bytes += (out.len() - start) as u64;
        // The statistics read the line as `parse_line` does. Its prefix is
        // known (the time to the µs it prints, the event), unless a comm
        // holding " [" or a line starting '#' would make it read otherwise.
        if comm.contains(" [") || cpu > u32::MAX as usize || out[start..].starts_with('#') {
            if let Some(r) = parse_line(&out[start..body_end]) {
                self.stats.add(&r);
            }
        } else {
            let ts = t / NSEC_PER_USEC * NSEC_PER_USEC;
            self.stats.add_body(ts, event, &out[body_start..body_end]);
        }
        if self.sink.is_some() {
            self.chunk.formatted();
        }
        self.pass_on(t);
    }

    /// Print one line whose body is `bdi NAME: ` (with a bdi) and then
    /// integer fields, `k=v` separated by spaces, as `emit` with
    /// `format_args!` prints them ([`push_fields_line`]); `keys` and
    /// `vals` as [`trace_fields!`] gives them. The statistics take the
    /// values as they are, with no text read back. With a sink the line is
    /// only recorded, and formatted on the writer's thread.
    pub fn emit_fields(
        &mut self,
        h: Head,
        bdi: Option<&str>,
        keys: &'static [&'static str],
        vals: &[i128],
    ) {
        debug_assert_eq!(keys.len(), vals.len());
        let Head {
            t,
            comm,
            cpu,
            event,
            ..
        } = h;
        // as `emit`: `parse_line` would read this line as printed unless
        // its comm, CPU or first character (a comm of 16 characters or more
        // starting '#'), a bdi holding ": ", or a wbt event's bare bdi made
        // it read otherwise; then it reads the text. A value past i64 is a
        // string field to the parser: not counted.
        let plain = !(comm.contains(" [")
            || cpu > u32::MAX as usize
            || (comm.starts_with('#') && comm.chars().count() >= 16)
            || bdi.map_or(event.starts_with("wbt_"), |b| b.contains(": ")));
        let ts = t / NSEC_PER_USEC * NSEC_PER_USEC;
        let small = vals.iter().all(|v| i64::try_from(*v).is_ok());
        if plain && small {
            let mut v64 = [0i64; 32];
            let v64: &[i64] = if vals.len() <= v64.len() {
                for (d, v) in v64.iter_mut().zip(vals) {
                    *d = *v as i64;
                }
                &v64[..vals.len()]
            } else {
                &vals.iter().map(|v| *v as i64).collect::<Vec<_>>()
            };
            if self.sink.is_some() {
                self.chunk.fields(&h, bdi, keys, v64);
            } else {
                let start = self.buf.len();
                push_fields_line(&mut self.buf, &h, bdi, keys, v64);
                self.bytes += (self.buf.len() - start) as u64;
            }
            self.lines += 1;
            self.stats.add_keyed(ts, bdi, event, keys, v64);
        } else {
            let out = match self.sink {
                Some(_) => &mut self.chunk.text,
                None => &mut self.buf,
            };
            let start = out.len();
            push_fields_line(out, &h, bdi, keys, vals);
            self.lines += 1;
            self.bytes += (out.len() - start) as u64;
            if plain {
                let vals = keys
                    .iter()
                    .zip(vals)
                    .filter_map(|(k, v)| i64::try_from(*v).ok().map(|v| (stat_key(k), v)));
                self.stats.add_fields(ts, bdi, event, vals);
            } else if let Some(r) = parse_line(&out[start..out.len() - 1]) {
                self.stats.add(&r);
            }
            if self.sink.is_some() {
                self.chunk.formatted();
            }
        }
        self.pass_on(t);
    }

    /// The line just printed or recorded (at `t`) is done: to the sink once
    /// a chunk is full, or kept until the lines are placed.
    #[inline]
    fn pass_on(&mut self, t: Ns) {
        if let Some(s) = &mut self.sink {
            if self.chunk.full() {
                self.bytes += s.send(&mut self.chunk);
            }
        } else if self.unplaced.is_some() && self.buf.len() >= self.place_at {
            self.place(t);
        }
    }

    /// Place the lines in the file: after a header for the lines so far
    /// extrapolated from `t` to the run's end.
    #[cold]
    fn place(&mut self, t: Ns) {
        use std::io::{Seek as _, Write as _};
        let (Some(mut f), Some((_, ncpus, end))) = (self.unplaced.take(), &self.file) else {
            return;
        };
        let guess = (self.lines as u128 * (*end).max(t) as u128 / t.max(1) as u128)
            .min(u64::MAX as u128) as u64;
        self.body_at = header_for(guess, *ncpus).len() as u64;
        // the lines so far written here, the rest by the sink's thread
        let r = f
            .seek(std::io::SeekFrom::Start(self.body_at))
            .and_then(|_| f.write_all(self.buf.as_bytes()))
            .and_then(|_| sink::Sink::new(f));
        match r {
            Ok(s) => self.sink = Some(s),
            Err(e) => self.sink_error = Some(e),
        }
        self.buf = String::new();
    }

    /// Finish `trace.txt`: its header, then the lines (copied into place if
    /// the header is not the length their place was chosen for).
    pub fn finish_file(&mut self) -> std::io::Result<()> {
        use std::io::{Seek as _, Write as _};
        let Some((path, ncpus, _)) = self.file.take() else {
            return Ok(());
        };
        let header = header_for(self.lines, ncpus);
        let partial = partial_of(&path);
        if let Some(mut f) = self.unplaced.take() {
            f.write_all(header.as_bytes())?;
            f.write_all(self.buf.as_bytes())?;
            self.buf.clear();
            f.flush()?;
            return std::fs::rename(&partial, &path);
        }
        if let Some(e) = self.sink_error.take() {
            return Err(e);
        }
        let Some(mut s) = self.sink.take() else {
            return Ok(());
        };
        self.bytes += s.send(&mut self.chunk);
        let (mut f, rest) = s.finish()?;
        self.bytes += rest;
        if header.len() as u64 == self.body_at {
            f.seek(std::io::SeekFrom::Start(0))?;
            f.write_all(header.as_bytes())?;
            f.flush()?;
            return std::fs::rename(&partial, &path);
        }
        // the count has another number of digits than guessed: the lines
        // go after the header in a new file
        drop(f);
        let lines = partial;
        let mut out = std::fs::File::create(&path)?;
        out.write_all(header.as_bytes())?;
        let mut b = std::fs::File::open(&lines)?;
        b.seek(std::io::SeekFrom::Start(self.body_at))?;
        std::io::copy(&mut b, &mut out)?;
        out.flush()?;
        drop(b);
        std::fs::remove_file(&lines)
    }

    /// The `trace` file's header (the nop tracer's), for its lines.
    pub fn header(&self, ncpus: u32) -> String {
        header_for(self.lines, ncpus)
    }

    /// The `trace` file: the nop tracer's header, then the lines (those
    /// kept in memory: none with a sink).
    pub fn render(&self, ncpus: u32) -> String {
        let mut s = self.header(ncpus);
        s.push_str(&self.buf);
        s
    }
}

/// Where a streamed `trace.txt` is written until its header is in place.
fn partial_of(path: &std::path::Path) -> std::path::PathBuf {
    path.with_file_name(".trace.txt.partial")
}

/// The `trace` file's header (the nop tracer's), for `lines` lines.
pub fn header_for(lines: u64, ncpus: u32) -> String {
    let mut s = String::with_capacity(1024);
    let _ = writeln!(s, "# tracer: nop\n#");
    let _ = writeln!(
        s,
        "# entries-in-buffer/entries-written: {lines}/{lines}   #P:{ncpus}"
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

/// Append `n` in decimal, padded to `width` with `pad` on the left
/// (`{n:>width$}`, `{n:0width$}`) or with spaces on the right (`pad` None:
/// `{n:<width$}`).
#[inline]
fn push_num(buf: &mut String, n: u64, width: usize, pad: Option<char>) {
    let mut digits = itoa::Buffer::new();
    let d = digits.format(n);
    if let Some(c) = pad {
        for _ in d.len()..width {
            buf.push(c);
        }
    }
    buf.push_str(d);
    if pad.is_none() {
        for _ in d.len()..width {
            buf.push(' ');
        }
    }
}

/// What a line's prefix says: when, which task on which CPU, the latency
/// flags, and the event.
#[derive(Clone, Copy, Debug)]
pub struct Head<'a> {
    pub t: Ns,
    pub comm: &'a str,
    pub pid: u32,
    pub cpu: usize,
    pub flags: &'a str,
    pub event: &'a str,
}

impl<'a> Head<'a> {
    /// A line of task `comm`-`pid` on `cpu` at `t`, with no latency flags
    /// set.
    #[inline]
    pub fn new(t: Ns, comm: &'a str, pid: u32, cpu: usize, event: &'a str) -> Head<'a> {
        Head {
            t,
            comm,
            pid,
            cpu,
            flags: ".....",
            event,
        }
    }

    /// A line in task `task`'s context at `t`, with no latency flags set.
    #[inline]
    pub fn task(t: Ns, task: &'a crate::kernel::Task, event: &'a str) -> Head<'a> {
        Head::new(t, &task.comm, task.pid, task.cpu as usize, event)
    }

    /// The spaces that right-align the comm to 16 characters.
    #[inline]
    pub fn comm_pad(&self) -> usize {
        let w = if self.comm.is_ascii() {
            self.comm.len()
        } else {
            self.comm.chars().count()
        };
        16usize.saturating_sub(w)
    }
}

/// Append a line's prefix, up to its body: `%16s-%-7d [%03d] FLAGS
/// %5lu.%06lu: event: `.
fn push_prefix(buf: &mut String, h: &Head) {
    let Head {
        t,
        comm,
        pid,
        cpu,
        flags,
        event,
    } = *h;
    for _ in 0..h.comm_pad() {
        buf.push(' ');
    }
    buf.push_str(comm);
    buf.push('-');
    push_num(buf, pid as u64, 7, None);
    buf.push_str(" [");
    push_num(buf, cpu as u64, 3, Some('0'));
    buf.push_str("] ");
    buf.push_str(flags);
    buf.push(' ');
    push_num(buf, t / NSEC_PER_SEC, 5, Some(' '));
    buf.push('.');
    push_num(buf, (t % NSEC_PER_SEC) / NSEC_PER_USEC, 6, Some('0'));
    buf.push_str(": ");
    buf.push_str(event);
    buf.push_str(": ");
}

/// The name the statistics give a field: `parse_line`'s (the kernel's
/// `bdi_*` names of 3.2's line are read as 6.x's `wb_*`).
pub(crate) fn stat_key(k: &str) -> &str {
    match k {
        "bdi_setpoint" => "wb_setpoint",
        "bdi_dirty" => "wb_dirty",
        k => k,
    }
}

/// A trace line's integer fields as [`Tracer::emit_fields`] takes them: the
/// names, one static list for each place that prints the line, and the
/// values, each as its own type prints it (hence i128, which holds every
/// u64 and i64): `trace_fields!(limit = l, pause = p)`.
#[macro_export]
macro_rules! trace_fields {
    ($($k:ident = $v:expr),* $(,)?) => {{
        const KEYS: &[&str] = &[$(stringify!($k)),*];
        (KEYS, [$(::core::primitive::i128::from($v)),*])
    }};
}

/// Append one line of integer fields (and a bdi): `bdi NAME: ` with one,
/// then `k=v` separated by spaces, as `format_args!` prints them, byte for
/// byte.
#[inline]
pub(crate) fn push_fields_line<V: Copy + Into<i128>>(
    buf: &mut String,
    h: &Head,
    bdi: Option<&str>,
    keys: &[&str],
    vals: &[V],
) {
    push_prefix(buf, h);
    if let Some(b) = bdi {
        buf.push_str("bdi ");
        buf.push_str(b);
        buf.push_str(": ");
    }
    for (i, (k, v)) in keys.iter().zip(vals).enumerate() {
        debug_assert!(!k.is_empty() && !k.contains(|c: char| c == '=' || c.is_whitespace()));
        if i > 0 {
            buf.push(' ');
        }
        buf.push_str(k);
        buf.push('=');
        let v: i128 = (*v).into();
        if v < 0 {
            buf.push('-');
        }
        match u64::try_from(v.unsigned_abs()) {
            Ok(m) => push_num(buf, m, 0, Some(' ')),
            Err(_) => {
                let _ = write!(buf, "{}", v.unsigned_abs());
            }
        }
    }
    buf.push('\n');
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
    push_prefix(buf, &Head::new(t, comm, pid, cpu, event));
    let _ = buf.write_fmt(args);
    buf.push('\n');
}

impl Kernel {
    pub fn trace_line(&mut self, pid: Pid, event: &str, args: std::fmt::Arguments) {
        let h = Head::task(self.q.now(), &self.tasks[pid], event);
        self.tracer.emit(h, args);
    }

    /// A line from a timer callback in softirq context, where nothing else
    /// runs: the idle task (`<idle>-0`) on CPU 0, in softirq at preempt
    /// depth 1, as the host kernel prints it.
    pub fn trace_line_softirq(&mut self, event: &str, args: std::fmt::Arguments) {
        let now = self.q.now();
        let h = Head {
            t: now,
            comm: "<idle>",
            pid: 0,
            cpu: 0,
            flags: "..s1.",
            event,
        };
        self.tracer.emit(h, args);
    }
}

/// The tracefs subsystem directory of a wbsim event name.
pub fn event_subsystem(event: &str) -> &'static str {
    if event.starts_with("wbt_") {
        "wbt"
    } else if event.starts_with("sched_") {
        "sched"
    } else if event.starts_with("mm_vmscan_") || event.starts_with("mm_shrink_slab_") {
        "vmscan"
    } else if event.starts_with("jbd2_") {
        "jbd2"
    } else if event == "mark_victim" || event == "reclaim_retry_zone" {
        "oom"
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
    let (bdi, b) = split_bdi(event, body);
    let mut fields = Vec::new();
    let mut strs = Vec::new();
    for (k, v) in body_fields(b) {
        match v {
            Ok(n) => fields.push((k.to_string(), n)),
            Err(v) => strs.push((k.to_string(), v.to_string())),
        }
    }
    let bdi = bdi.map(str::to_string);
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

/// An event's body without its bdi, and the bdi: a `bdi X:Y: ` prefix, or
/// for wbt's events the bare name (`8:0: status=3, ...`).
pub fn split_bdi<'a>(event: &str, body: &'a str) -> (Option<&'a str>, &'a str) {
    if let Some(x) = body.strip_prefix("bdi ") {
        if let Some(i) = x.find(": ") {
            return (Some(&x[..i]), &x[i + 2..]);
        }
    } else if event.starts_with("wbt_") {
        if let Some(i) = body.find(": ") {
            return (Some(&body[..i]), &body[i + 2..]);
        }
    }
    (None, body)
}

/// The `key=value` fields of a body (without its bdi), in order: a number
/// (Ok) or a string such as `reason=background` (Err). A body of one bare
/// number (`writeback_pages_written: 12`) is the field `value`.
pub fn body_fields(b: &str) -> impl Iterator<Item = (&str, Result<i64, &str>)> + Clone {
    let bare = if b.contains('=') {
        None
    } else {
        b.trim().parse::<i64>().ok().map(|n| ("value", Ok(n)))
    };
    b.split_whitespace()
        .filter_map(|tok| {
            let (k, v) = tok.split_once('=')?;
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
            Some((k, v.parse::<i64>().map_err(|_| v)))
        })
        .chain(bare)
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

    /// `emit_fields` prints what `emit` prints from the same values, and
    /// counts them as the parser reads that text, in the odd cases too: a
    /// value past i64, a negative one, a comm holding " [", a bdi holding
    /// ": ", a wide CPU, the old field names.
    #[test]
    fn emit_fields_prints_and_counts_as_emit_does() {
        let cases: [(&str, u32, usize, Option<&str>, &str); 5] = [
            ("dd", 4242, 1, Some("7:0"), "balance_dirty_pages"),
            ("a [b", 7, 0, Some("8:16"), "balance_dirty_pages"),
            ("<idle>", 0, 12345, None, "global_dirty_state"),
            ("#############hash", 1, 3, Some("x: y"), "wbt_step"),
            ("kworker/u4:1-ab", 99, 2, None, "wbt_timer"),
        ];
        for (comm, pid, cpu, bdi, event) in cases {
            let (keys, vals) = trace_fields!(
                limit = 51200,
                pause = -40,
                big = u64::MAX,
                bdi_setpoint = 12,
                min = i64::MIN,
                zero = 0
            );
            let fields: Vec<_> = keys.iter().zip(vals).collect();
            let mut a = Tracer::new(&[]);
            a.stats = crate::metrics::TraceStats::new((0, u64::MAX), None);
            let mut b = Tracer::new(&[]);
            b.stats = crate::metrics::TraceStats::new((0, u64::MAX), None);
            for t in [0, 999, 1_234_567_890_123, u64::MAX] {
                let body: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let body = body.join(" ");
                let h = Head::new(t, comm, pid, cpu, event);
                match bdi {
                    Some(d) => a.emit(h, format_args!("bdi {d}: {body}")),
                    None => a.emit(h, format_args!("{body}")),
                }
                b.emit_fields(h, bdi, keys, &vals);
            }
            assert_eq!(a.buf, b.buf);
            assert_eq!((a.lines, a.bytes), (b.lines, b.bytes));
            let fa = a.stats.finish(&[], |n| n as f64);
            let fb = b.stats.finish(&[], |n| n as f64);
            assert_eq!(
                format!("{:?}", fa.trace),
                format!("{:?}", fb.trace),
                "{comm}"
            );
            // and as the parser reads the text
            let mut c = crate::metrics::TraceStats::new((0, u64::MAX), None);
            for r in parse(&a.buf) {
                c.add(&r);
            }
            let fc = c.finish(&[], |n| n as f64);
            assert_eq!(
                format!("{:?}", fa.trace),
                format!("{:?}", fc.trace),
                "{comm}"
            );
        }
        let mut s = String::new();
        for (n, w, p) in [
            (0, 0, None),
            (7, 7, None),
            (5, 3, Some('0')),
            (123456789012, 5, Some(' ')),
            (u64::MAX, 0, Some(' ')),
            (10, 6, Some('0')),
        ] {
            push_num(&mut s, n, w, p);
            s.push('|');
        }
        assert_eq!(s, "0|7      |005|123456789012|18446744073709551615|000010|");
    }

    /// `trace.txt` streamed is the trace kept in memory, byte for byte,
    /// whether the lines' count was guessed right when they were placed
    /// (the header written in front of them), guessed wrong (the lines
    /// copied after it), or the lines were never placed (a short trace).
    #[test]
    fn a_streamed_trace_is_the_trace_in_memory() {
        let dir = std::env::temp_dir().join(format!("wbsim-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("trace.txt");
        // (lines, the run's end as a multiple of the last line's time)
        // (20000 lines: chunks handed to the writer thread after the placing)
        for (n, end_x) in [(2000u64, 1u64), (2000, 1000), (3, 1), (950, 1), (20_000, 1)] {
            let mut a = Tracer::new(&[]);
            let mut b = Tracer::new(&[]);
            let last = n * 1_000_000;
            b.stream_into(&path, 4, last * end_x).unwrap();
            b.place_at = 20_000;
            assert!(b.streaming());
            for i in 1..=n {
                let t = i * 1_000_000;
                let (k, v) = trace_fields!(dirty = i, pause = -(i as i64));
                // fields lines (recorded, or formatted here when a comm
                // makes the parser read them otherwise, or a value is past
                // i64) and lines formatted by `emit`
                let comm = if i % 11 == 0 { "a [b" } else { "dd" };
                let head = |comm, pid, cpu, event| Head {
                    t,
                    comm,
                    pid,
                    cpu,
                    flags: ".....",
                    event,
                };
                for x in [&mut a, &mut b] {
                    x.emit_fields(head(comm, 7, 1, "global_dirty_state"), None, k, &v);
                    if i % 7 == 0 {
                        x.emit(head("kworker", 9, 0, "ev"), format_args!("n={i}"));
                    }
                    if i % 13 == 0 {
                        let (k, v) = trace_fields!(big = u64::MAX - i);
                        x.emit_fields(head("dd", 7, 1, "wb"), Some("7:0"), k, &v);
                    }
                }
            }
            b.finish_file().unwrap();
            let got = std::fs::read_to_string(&path).unwrap();
            assert_eq!(got, a.render(4), "{n} lines, end x{end_x}");
            assert_eq!((a.lines, a.bytes), (b.lines, b.bytes));
            assert_eq!(
                format!("{:?}", a.stats.finish(&[], |n| n as f64).trace),
                format!("{:?}", b.stats.finish(&[], |n| n as f64).trace)
            );
            assert!(!dir.join(".trace.txt.partial").exists());
        }
        let _ = std::fs::remove_dir_all(&dir);
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
