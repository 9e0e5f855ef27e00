//! The trace's part of `summary.json`, kept as the lines are produced: per
//! event and field, how many times each value occurred ([`Counts`]). The
//! percentiles read from these counts are the ones a sort of every value
//! gives, exactly (the counts are the sorted list, run-length coded), so
//! nothing is kept per line and memory grows with the distinct values only
//! (16 bytes each: a cumulative counter such as `global_dirty_state`'s
//! `dirtied` has one per line, a field such as `pause` a few hundred).
//!
//! The simulator feeds each line as it is printed; live mode feeds the
//! records it parsed from tracefs. Both then go through the same
//! [`TraceStats::finish`], so they are measured alike.

use super::{percentile_of_runs, r3, EventSummary, Pct};
use crate::sim::Ns;
use crate::trace::Record;
use std::collections::BTreeMap;

/// One event's lines: how many, and each numeric field's value counts (in
/// the order the lines first gave them: a line's fields come in the same
/// order each time, so that the `i`th is found at `i` first).
#[derive(Clone, Debug, Default)]
struct EventAcc {
    count: u64,
    fields: Vec<(String, Counts)>,
    /// For each static list of names the simulator has printed this event
    /// with ([`TraceStats::add_keyed`]), known by its address: the field
    /// each name counts into, found by name once.
    keyed: Vec<(usize, Vec<usize>)>,
}

/// How many times each value occurred: a sorted run-length list, and the
/// values added since it was last merged (at most an eighth of its length,
/// so that a merge, linear in the list, is paid for by the adds before it).
/// The values added are run-length coded as they come (a threshold repeats
/// line after line), and a merge whose values all lie past the list's end
/// (a cumulative counter's) appends them, with no copy of the list.
///
/// While every merge has only appended, the list is kept packed: each run
/// as the LEB128 of its value's rise over the run before and of its count,
/// a few bytes where a run in full takes 16. A cumulative counter such as
/// `global_dirty_state`'s `dirtied` has a distinct value on each line (408k
/// in 1000 dd at bs=4k: 6.5 MB in full, whose fresh pages cost more than
/// the rest of its counting). The first merge that must insert unpacks it.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// The runs in full, once a merge has had to insert (`plain`).
    sorted: Vec<(i64, u64)>,
    plain: bool,
    /// Until then: the runs packed, but the last.
    packed: Vec<u8>,
    packed_runs: usize,
    /// The value of the last run packed (the next rise is from it; 0 at
    /// first, the rises wrapping).
    packed_prev: i64,
    /// The last run, not packed yet (its count may still grow).
    tail: Option<(i64, u64)>,
    pending: Vec<(i64, u64)>,
    /// Where the next merge is built, then swapped with `sorted`: the two
    /// lists keep their memory from merge to merge, instead of a new list
    /// each time (fresh pages the kernel must fault in and clear).
    spare: Vec<(i64, u64)>,
}

fn put_leb128(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

fn get_leb128(b: &[u8], at: &mut usize) -> u64 {
    let (mut x, mut shift) = (0u64, 0);
    loop {
        let byte = b[*at];
        *at += 1;
        x |= ((byte & 0x7f) as u64) << shift;
        if byte < 0x80 {
            return x;
        }
        shift += 7;
    }
}

/// The runs of a [`Counts`], in order.
#[derive(Clone)]
pub enum Runs<'a> {
    Plain(std::slice::Iter<'a, (i64, u64)>),
    Packed {
        bytes: &'a [u8],
        at: usize,
        prev: i64,
        tail: Option<(i64, u64)>,
    },
}

impl Iterator for Runs<'_> {
    type Item = (i64, u64);
    fn next(&mut self) -> Option<(i64, u64)> {
        match self {
            Runs::Plain(it) => it.next().copied(),
            Runs::Packed {
                bytes,
                at,
                prev,
                tail,
            } => {
                if *at < bytes.len() {
                    let v = prev.wrapping_add(get_leb128(bytes, at) as i64);
                    let n = get_leb128(bytes, at);
                    *prev = v;
                    Some((v, n))
                } else {
                    tail.take()
                }
            }
        }
    }
}

impl Counts {
    #[inline]
    pub fn add(&mut self, v: i64) {
        match self.pending.last_mut() {
            Some((x, n)) if *x == v => *n += 1,
            _ => {
                self.pending.push((v, 1));
                if self.pending.len() >= (self.len() / 8).max(256) {
                    self.merge();
                }
            }
        }
    }

    /// The runs merged so far.
    fn len(&self) -> usize {
        if self.plain {
            self.sorted.len()
        } else {
            self.packed_runs + usize::from(self.tail.is_some())
        }
    }

    /// The runs merged so far, in order (not those pending).
    fn merged(&self) -> Runs<'_> {
        if self.plain {
            Runs::Plain(self.sorted.iter())
        } else {
            Runs::Packed {
                bytes: &self.packed,
                at: 0,
                prev: 0,
                tail: self.tail,
            }
        }
    }

    fn merge(&mut self) {
        self.pending.sort_unstable_by_key(|&(v, _)| v);
        if !self.plain {
            let appends = match (self.tail, self.pending.first()) {
                (Some((last, _)), Some(&(first, _))) => first >= last,
                _ => true,
            };
            if appends {
                for &(v, n) in &self.pending {
                    match &mut self.tail {
                        Some((x, m)) if *x == v => *m += n,
                        Some((x, m)) => {
                            put_leb128(&mut self.packed, x.wrapping_sub(self.packed_prev) as u64);
                            put_leb128(&mut self.packed, *m);
                            self.packed_prev = *x;
                            self.packed_runs += 1;
                            self.tail = Some((v, n));
                        }
                        None => self.tail = Some((v, n)),
                    }
                }
                self.pending.clear();
                return;
            }
            // unpacked for good: an insert would shift every byte after it
            self.sorted = self.merged().collect();
            self.plain = true;
            self.packed = Vec::new();
            self.tail = None;
        }
        match (self.sorted.last(), self.pending.first()) {
            (Some(&(last, _)), Some(&(first, _))) if first >= last => {
                merge_runs([], self.pending.iter().copied(), &mut self.sorted);
            }
            _ => {
                let mut out = std::mem::take(&mut self.spare);
                out.clear();
                out.reserve(self.sorted.len() + self.pending.len());
                merge_runs(
                    self.sorted.iter().copied(),
                    self.pending.iter().copied(),
                    &mut out,
                );
                self.spare = std::mem::replace(&mut self.sorted, out);
            }
        }
        self.pending.clear();
    }

    /// The sorted run-length list of every value added, in full.
    pub fn sorted(&self) -> Vec<(i64, u64)> {
        let mut p = self.pending.clone();
        p.sort_unstable_by_key(|&(v, _)| v);
        let mut out = Vec::with_capacity(self.len() + p.len());
        merge_runs(self.merged(), p, &mut out);
        out
    }

    /// The runs of every value added, in order, with no copy: None until
    /// [`Counts::settle`] has merged what was pending.
    pub fn runs(&self) -> Option<Runs<'_>> {
        self.pending.is_empty().then(|| self.merged())
    }

    /// Merge what is pending, and let the spare list go: no more values
    /// come.
    pub fn settle(&mut self) {
        if !self.pending.is_empty() {
            self.merge();
        }
        self.spare = Vec::new();
    }
}

/// Two sorted run-length lists as one, appended to `out` (equal values
/// add their counts; `b` may repeat a value, as `pending` does). `out`
/// may hold values before them all already.
fn merge_runs(
    a: impl IntoIterator<Item = (i64, u64)>,
    b: impl IntoIterator<Item = (i64, u64)>,
    out: &mut Vec<(i64, u64)>,
) {
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let (v, n) = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x.0 <= y.0 => a.next(),
            (Some(_), Some(_)) | (None, Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, None) => return,
        }
        .expect("peeked");
        match out.last_mut() {
            Some((x, m)) if *x == v => *m += n,
            _ => out.push((v, n)),
        }
    }
}

impl EventAcc {
    /// The field that the `i`th value of a line, named `k`, counts into:
    /// the `i`th if it has that name, else the first of that name, else a
    /// new one.
    fn field_of(&mut self, i: usize, k: &str) -> usize {
        match self.fields.get(i) {
            Some((n, _)) if n == k => i,
            _ => match self.fields.iter().position(|(n, _)| n == k) {
                Some(f) => f,
                None => {
                    self.fields.push((k.to_string(), Counts::default()));
                    self.fields.len() - 1
                }
            },
        }
    }
}

/// The lines of one bdi (or of none: `bdi: None`).
#[derive(Clone, Debug, Default)]
struct BdiAcc {
    bdi: Option<String>,
    /// By event name, in the order first seen (the figures sort them).
    events: Vec<(String, EventAcc)>,
    /// Lines of another cgroup's wb (live mode under cgroup v2), left out
    /// of `events`.
    other_wb: u64,
}

/// The trace's statistics over a window, fed one record at a time.
#[derive(Clone, Debug, Default)]
pub struct TraceStats {
    window: (Ns, Ns),
    cgroup_ino: Option<u64>,
    by_bdi: Vec<BdiAcc>,
}

/// What [`TraceStats::finish`] gives: the summary's `trace`,
/// `other_bdi_lines` and `other_cgroup_lines`.
pub struct TraceFigures {
    pub trace: BTreeMap<String, EventSummary>,
    pub other_bdi_lines: u64,
    pub other_cgroup_lines: Option<u64>,
}

impl TraceStats {
    /// Statistics of the lines in `window` (both ends included). With
    /// `cgroup_ino`, lines of a device's other wbs are counted apart.
    pub fn new(window: (Ns, Ns), cgroup_ino: Option<u64>) -> TraceStats {
        TraceStats {
            window,
            cgroup_ino,
            by_bdi: Vec::new(),
        }
    }

    /// Count one record.
    pub fn add(&mut self, r: &Record) {
        self.add_parts(
            r.ts,
            r.bdi.as_deref(),
            &r.event,
            r.fields.iter().map(|(k, v)| (k.as_str(), *v)),
        );
    }

    /// Count one line from its time (as printed, to the µs), its event and
    /// its body, read as [`crate::trace::parse_line`] reads them, with no
    /// record made.
    pub fn add_body(&mut self, ts: Ns, event: &str, body: &str) {
        if ts < self.window.0 || ts > self.window.1 {
            return;
        }
        let (bdi, b) = crate::trace::split_bdi(event, body);
        let fields = crate::trace::body_fields(b).filter_map(|(k, v)| v.ok().map(|v| (k, v)));
        self.add_parts(ts, bdi, event, fields);
    }

    /// Count one line from its time (to the µs), bdi, event and numeric
    /// fields.
    pub fn add_fields<'a>(
        &mut self,
        ts: Ns,
        bdi: Option<&str>,
        event: &str,
        fields: impl Iterator<Item = (&'a str, i64)> + Clone,
    ) {
        self.add_parts(ts, bdi, event, fields);
    }

    /// Count one line of the simulator's from its time (to the µs), bdi,
    /// event, and fields: `keys`, one static list for each place that
    /// prints the line, and their values. As [`TraceStats::add_fields`],
    /// with each name looked up once per list rather than once per line.
    pub fn add_keyed(
        &mut self,
        ts: Ns,
        bdi: Option<&str>,
        event: &str,
        keys: &'static [&'static str],
        vals: &[i64],
    ) {
        if ts < self.window.0 || ts > self.window.1 || self.cgroup_ino.is_some() {
            let fields = keys
                .iter()
                .map(|k| crate::trace::stat_key(k))
                .zip(vals.iter().copied());
            return self.add_parts(ts, bdi, event, fields);
        }
        let ev = self.event_acc(bdi, event);
        ev.count += 1;
        let at = keys.as_ptr() as usize;
        let slot = match ev
            .keyed
            .iter()
            .position(|(a, m)| *a == at && m.len() == keys.len())
        {
            Some(s) => s,
            None => {
                let map = keys
                    .iter()
                    .enumerate()
                    .map(|(i, k)| ev.field_of(i, crate::trace::stat_key(k)))
                    .collect();
                ev.keyed.push((at, map));
                ev.keyed.len() - 1
            }
        };
        let EventAcc { keyed, fields, .. } = ev;
        for (&f, &v) in keyed[slot].1.iter().zip(vals) {
            fields[f].1.add(v);
        }
    }

    /// The accumulator of `bdi`'s lines, made on first sight.
    fn bdi_acc(&mut self, bdi: Option<&str>) -> &mut BdiAcc {
        let i = match self.by_bdi.iter().position(|b| b.bdi.as_deref() == bdi) {
            Some(i) => i,
            None => {
                self.by_bdi.push(BdiAcc {
                    bdi: bdi.map(str::to_string),
                    ..Default::default()
                });
                self.by_bdi.len() - 1
            }
        };
        &mut self.by_bdi[i]
    }

    /// The accumulator of `event`'s lines on `bdi`, made on first sight.
    fn event_acc(&mut self, bdi: Option<&str>, event: &str) -> &mut EventAcc {
        let b = self.bdi_acc(bdi);
        let e = match b.events.iter().position(|(n, _)| n == event) {
            Some(e) => e,
            None => {
                b.events.push((event.to_string(), EventAcc::default()));
                b.events.len() - 1
            }
        };
        &mut b.events[e].1
    }

    fn add_parts<'a>(
        &mut self,
        ts: Ns,
        bdi: Option<&str>,
        event: &str,
        fields: impl Iterator<Item = (&'a str, i64)> + Clone,
    ) {
        if ts < self.window.0 || ts > self.window.1 {
            return;
        }
        let other_wb = self.cgroup_ino.is_some_and(|ino| {
            bdi.is_some()
                && fields
                    .clone()
                    .find(|(k, _)| *k == "cgroup_ino")
                    .is_some_and(|(_, c)| c as u64 != ino)
        });
        if other_wb {
            self.bdi_acc(bdi).other_wb += 1;
            return;
        }
        let ev = self.event_acc(bdi, event);
        ev.count += 1;
        for (i, (k, v)) in fields.enumerate() {
            let f = ev.field_of(i, k);
            ev.fields[f].1.add(v);
        }
    }

    /// Merge each field's pending values into its list (the summary then
    /// reads the lists as they are, with no copy).
    pub fn settle(&mut self) {
        for b in &mut self.by_bdi {
            for (_, e) in &mut b.events {
                for (_, c) in &mut e.fields {
                    c.settle();
                }
            }
        }
    }

    /// The figures, with `bdis` the run's own devices' bdis: lines of other
    /// bdis are counted as `other_bdi_lines` and left out (none are when
    /// `bdis` is empty). `per_s` turns a count into a rate over the window.
    pub fn finish(&self, bdis: &[String], per_s: impl Fn(u64) -> f64) -> TraceFigures {
        let foreign =
            |b: &BdiAcc| !bdis.is_empty() && b.bdi.as_ref().is_some_and(|b| !bdis.contains(b));
        let mut other_bdi_lines = 0;
        let mut other_cgroup_lines = 0;
        // per event: its lines, and each field's value counts (the field's
        // own, read in place, when only one bdi has the event)
        type Merged<'a> = BTreeMap<&'a str, (u64, BTreeMap<&'a str, Vals<'a>>)>;
        let mut merged: Merged = BTreeMap::new();
        for b in &self.by_bdi {
            if foreign(b) {
                other_bdi_lines += b.other_wb + b.events.iter().map(|(_, e)| e.count).sum::<u64>();
                continue;
            }
            other_cgroup_lines += b.other_wb;
            for (name, e) in &b.events {
                let m = merged.entry(name.as_str()).or_default();
                m.0 += e.count;
                for (k, vals) in &e.fields {
                    match m.1.entry(k.as_str()) {
                        std::collections::btree_map::Entry::Vacant(e) => {
                            e.insert(match vals.runs() {
                                Some(_) => Vals::One(vals),
                                None => Vals::Many(vals.sorted()),
                            });
                        }
                        std::collections::btree_map::Entry::Occupied(mut e) => {
                            let mut out = Vec::new();
                            merge_runs(e.get().runs(), vals.sorted(), &mut out);
                            e.insert(Vals::Many(out));
                        }
                    }
                }
            }
        }
        let trace = merged
            .into_iter()
            .map(|(name, (count, fields))| {
                (
                    name.to_string(),
                    EventSummary {
                        count: count as usize,
                        per_s: r3(per_s(count)),
                        fields: fields
                            .into_iter()
                            .map(|(k, vals)| (k.to_string(), Pct::of_runs(vals.runs())))
                            .collect(),
                    },
                )
            })
            .collect();
        TraceFigures {
            trace,
            other_bdi_lines,
            other_cgroup_lines: self.cgroup_ino.map(|_| other_cgroup_lines),
        }
    }
}

/// A field's value counts in the summary: one bdi's [`Counts`], read in
/// place, or several merged.
enum Vals<'a> {
    One(&'a Counts),
    Many(Vec<(i64, u64)>),
}

impl Vals<'_> {
    fn runs(&self) -> Runs<'_> {
        match self {
            Vals::One(c) => c.runs().expect("settled"),
            Vals::Many(v) => Runs::Plain(v.iter()),
        }
    }
}

impl Pct {
    /// [`Pct::of`] the values that `counts` holds (sorted, value: how many
    /// times).
    pub fn of_counts(counts: &[(i64, u64)]) -> Pct {
        Pct::of_runs(counts.iter().copied())
    }

    /// [`Pct::of_counts`] of runs read in order.
    pub fn of_runs(runs: impl Iterator<Item = (i64, u64)> + Clone) -> Pct {
        Pct {
            p10: r3(percentile_of_runs(runs.clone(), 0.1)),
            p50: r3(percentile_of_runs(runs.clone(), 0.5)),
            p90: r3(percentile_of_runs(runs, 0.9)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_counts_are_those_of_the_sorted_values() {
        let vals: Vec<i64> = vec![5, -3, 7, 7, 7, 100, 0, 5, 2, 9_007_199_254_740_993, 42];
        for n in 1..=vals.len() {
            let v = &vals[..n];
            let mut counts = Counts::default();
            for x in v {
                counts.add(*x);
            }
            assert_eq!(
                Pct::of_counts(&counts.sorted()),
                Pct::of(v.iter().map(|x| *x as f64).collect()),
                "{v:?}"
            );
        }
        assert_eq!(Pct::of_counts(&[]), Pct::of(Vec::new()));
    }

    #[test]
    fn counts_merge_as_they_grow() {
        // a counter (one value a line) and a field of few values
        let mut c = Counts::default();
        let mut d = Counts::default();
        let mut all = Vec::new();
        for i in 0..20_000i64 {
            let v = (i * 7919) % 10_007;
            c.add(v);
            d.add(i % 5);
            all.push(v as f64);
        }
        assert!(c.pending.len() < 20_000 / 8 + 256);
        assert_eq!(Pct::of_counts(&c.sorted()), Pct::of(all));
        assert_eq!(d.sorted(), (0..5).map(|v| (v, 4000)).collect::<Vec<_>>());
    }

    proptest::proptest! {
        /// Whatever the order (rising like a cumulative counter, repeating
        /// like a threshold, or neither), the counts are the run-length
        /// coded sort of every value added.
        #[test]
        fn counts_are_the_sorted_values(
            parts in proptest::collection::vec(
                (0u8..3, -50i64..50, 1usize..700),
                1..12,
            )
        ) {
            let mut c = Counts::default();
            let mut all = Vec::new();
            let mut rising = 1000i64;
            for (kind, v, n) in parts {
                for i in 0..n {
                    let x = match kind {
                        0 => { rising += (i % 3) as i64; rising }
                        1 => v,
                        _ => v * (i as i64 % 7) - 3,
                    };
                    c.add(x);
                    all.push(x);
                }
            }
            all.sort_unstable();
            let mut want: Vec<(i64, u64)> = Vec::new();
            for x in all {
                match want.last_mut() {
                    Some((y, n)) if *y == x => *n += 1,
                    _ => want.push((x, 1)),
                }
            }
            proptest::prop_assert_eq!(&c.sorted(), &want);
            // settled, read in place (packed or in full)
            c.settle();
            proptest::prop_assert_eq!(c.runs().unwrap().collect::<Vec<_>>(), want);
        }
    }
}
