//! blk-throttle's bandwidth limits (block/blk-throttle.c), as the host
//! rig uses them: a rule in the root blkio cgroup caps the device's writes
//! at `write_bps` (and reads at `read_bps`).
//!
//! A rule is a policy on a queue, any queue: `devices.NAME.throttle.write_bps`
//! (and `.read_bps`), as `blkio.throttle.write_bps_device` or cgroup v2's
//! `io.max` set it. Every bio submitted to the device passes here first
//! (`submit_bio_noacct`), bios a stacked driver remaps to its members
//! included; the bios it releases go to the device's driver.
//!
//! The budget comes in slices of `throtl_slice` (HZ/10) jiffies, as the
//! kernel computes it (`tg_within_bps_limit`): the bytes allowed since the
//! slice started are the direction's bps × the elapsed jiffies *rounded up to a
//! whole slice*, so each new 100 ms interval makes its whole budget
//! available at once. Dispatching trims the slice (`throtl_trim_slice`:
//! whole elapsed slices are dropped with their allowance; since Yu Kuai's
//! 2025 fix, in 6.18 and the io-less policy here, only once two whole
//! slices have passed, and the last of them is kept so that a bio the
//! timer released a little late does not lose its allowance), extends its end
//! while bios wait (`throtl_extend_slice`), and a new slice starts when the
//! old one has ended and nothing is queued (`throtl_start_new_slice`).
//!
//! A bio that is within the budget while nothing is queued passes at once,
//! in its submitter's context and plug (`blk_throtl_bio` returning false).
//! Otherwise it queues (without limit) and the pending timer is set for
//! when the first queued bio may go (`tg_update_disptime`, on the jiffy
//! timer wheel). The timer releases every bio that may go by then, in
//! order (`throtl_pending_timer_fn` repeats its rounds until nothing is
//! dispatchable), and the dispatch work submits them in one go under its
//! own plug (`blk_throtl_dispatch_work_fn`), where adjacent bios merge. On
//! the rig this makes 100 ms bursts.
//!
//! Metadata bios (REQ_META) are charged but never queued under the 6.x
//! policy, as the host's 6.18 kernel behaves.
//!
//! A cgroup's `io.max` (`[cgroups.NAME]` `io.max.DEV.*`) is a throttle
//! group of its own on the device (`throtl_grp` of the blkcg), with bps and
//! iops limits per direction (`tg_within_iops_limit`: the IOs allowed since
//! the slice started, the elapsed time plus one jiffy rounded up to a whole
//! slice). A bio is charged to the cgroup that issued it, or for
//! writeback to the cgroup that owns the inode (`wbc_init_bio`), passes its
//! group first and then the device's own rule, if any, as a child group's
//! bios go up to its parent's queue.
//!
//! Reads and writes are two directions with separate limits, slices,
//! budgets and queues (`tg->bytes_disp[rw]`, `sq->queued[rw]`): a read is
//! charged against `read_bps` only and never waits behind queued writes.
//! A direction without a limit is not throttled at all. One pending timer
//! serves both (the earlier of their waits), and the dispatch work submits
//! the released reads before the writes.

use crate::kernel::{BioId, Ev, Kernel, Pid};
use crate::scenario::raw::err;
use crate::scenario::{DevSection, Reader, ScenarioError};
use crate::sim::Ns;
use std::collections::VecDeque;

/// A queue's blk-throttle rule, in bytes per second (`None`: no limit):
/// `read_bps` caps reads, `write_bps` writes, each on its own budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThrotlConf {
    pub write_bps: Option<u64>,
    pub read_bps: Option<u64>,
}

/// `devices.NAME.throttle.write_bps` and `.read_bps` (> 0; leave a key out
/// for no limit). `implied` is the rule the device's type already sets
/// (`throttled`'s `write_bps`); the two cannot be combined.
pub(crate) fn parse_conf(
    r: &mut Reader,
    s: &DevSection,
    implied: Option<ThrotlConf>,
) -> Result<ThrotlConf, ScenarioError> {
    let mut c = implied.unwrap_or_default();
    for (k, v) in [
        ("write_bps", &mut c.write_bps),
        ("read_bps", &mut c.read_bps),
    ] {
        let key = format!("throttle.{k}");
        let Some((bps, e)) = r.rate(&s.key(&key))? else {
            continue;
        };
        if implied.is_some() {
            return err(
                &e.origin,
                format!(
                    "`{key}` on a `throttled` device, whose cap is its own `write_bps` and `read_bps`; expected either `type = \"throttled\"` with `{k}`, or `type = \"loop\"` with `{key}`"
                ),
            );
        }
        if bps == 0 {
            return err(
                &e.origin,
                format!(
                    "`{key}` must be > 0; expected a rate such as \"20MiB/s\" (leave it out for no limit)"
                ),
            );
        }
        *v = Some(bps);
    }
    Ok(c)
}

/// One direction's budget and queue (`throtl_grp`'s `[rw]` halves and
/// its service queue's `queued[rw]`): blk-throttle keeps reads and writes
/// apart, each with its own limit, slice and queue, and a bio waits only
/// behind bios of its own direction.
pub struct TgDir {
    /// Bytes and IOs per second (`u64::MAX`: no limit of that kind).
    pub bps: u64,
    pub iops: u64,
    /// IOs dispatched in the slice (`io_disp`).
    pub io_disp: u64,
    /// `throtl_slice` in jiffies.
    pub slice: u64,
    /// The slice: `slice_start`, `slice_end` (jiffies) and `bytes_disp`
    /// (bytes dispatched in it).
    pub slice_start: u64,
    pub slice_end: u64,
    pub bytes_disp: u64,
    /// Queued bios, oldest first.
    queue: VecDeque<BioId>,
    /// 6.18's trim (see [`Throtl::v6_18`]).
    v6_18: bool,
}

pub struct Throtl {
    /// The read (0) and write (1) directions; `None`: no limit that way.
    pub rw: [Option<TgDir>; 2],
    /// The cgroups' groups with an `io.max` on this device: (cgroup, read
    /// and write directions), children of the rule above.
    pub cgs: Vec<(usize, [Option<TgDir>; 2])>,
    timer_at: Option<Ns>,
    /// The kworker that runs the dispatch work (holds its plug).
    pub dispatcher: Pid,
    /// 6.18's rules (taken with the io-less policy): metadata bios pass at
    /// once and are only charged, and `throtl_trim_slice` trims only past
    /// two whole slices and keeps one. Before, metadata queued like data
    /// and every whole elapsed slice went.
    pub v6_18: bool,
}

/// `roundup(x, to)`.
fn roundup(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

impl Throtl {
    /// A rule with a read and a write limit (either may be absent).
    pub fn new_rw(
        read_bps: Option<u64>,
        write_bps: Option<u64>,
        dispatcher: Pid,
        hz: u64,
        v6_18: bool,
    ) -> Throtl {
        let dir = |bps: Option<u64>| bps.map(|b| TgDir::new(b, hz, v6_18));
        Throtl {
            rw: [dir(read_bps), dir(write_bps)],
            cgs: Vec::new(),
            timer_at: None,
            dispatcher,
            v6_18,
        }
    }

    /// Add cgroup `cg`'s group with its `io.max` line for this device.
    pub fn add_cgroup(&mut self, cg: usize, m: &crate::kernel::cgroup::IoMax, hz: u64) {
        let v6_18 = self.v6_18;
        let dir = |bps: Option<u64>, iops: Option<u64>| {
            (bps.is_some() || iops.is_some()).then(|| {
                let mut d = TgDir::new(bps.unwrap_or(u64::MAX), hz, v6_18);
                d.iops = iops.unwrap_or(u64::MAX);
                d
            })
        };
        self.cgs
            .push((cg, [dir(m.rbps, m.riops), dir(m.wbps, m.wiops)]));
    }

    /// The write direction (a rule made with a write limit).
    pub fn write(&self) -> Option<&TgDir> {
        self.rw[1].as_ref()
    }
}

impl TgDir {
    pub fn new(bps: u64, hz: u64, v6_18: bool) -> TgDir {
        TgDir {
            bps,
            iops: u64::MAX,
            io_disp: 0,
            slice: (hz / 10).max(1),
            slice_start: 0,
            slice_end: 0,
            bytes_disp: 0,
            queue: VecDeque::new(),
            v6_18,
        }
    }

    /// `calculate_bytes_allowed`.
    fn bytes_allowed(&self, jiffies: u64, hz: u64) -> u64 {
        (u128::from(self.bps) * u128::from(jiffies) / u128::from(hz)).min(u64::MAX as u128) as u64
    }

    /// `calculate_io_allowed`.
    fn ios_allowed(&self, jiffies: u64, hz: u64) -> u64 {
        (u128::from(self.iops) * u128::from(jiffies) / u128::from(hz)).min(u64::MAX as u128) as u64
    }

    /// `throtl_set_slice_end` (rounded up to a multiple of the slice).
    fn set_slice_end(&mut self, end: u64) {
        self.slice_end = roundup(end, self.slice);
    }

    /// `throtl_slice_used`: jiffies outside [slice_start, slice_end].
    fn slice_used(&self, now: u64) -> bool {
        !(self.slice_start <= now && now <= self.slice_end)
    }

    /// `tg_may_dispatch` for a bio of `size` bytes at jiffy `now`: Ok, or
    /// the jiffies to wait.
    pub fn may_dispatch(&mut self, size: u64, now: u64, hz: u64) -> Result<(), u64> {
        if self.slice_used(now) && self.queue.is_empty() {
            // throtl_start_new_slice
            self.bytes_disp = 0;
            self.io_disp = 0;
            self.slice_start = now;
            self.slice_end = now + self.slice;
        } else if self.slice_end < now + self.slice {
            self.set_slice_end(now + self.slice);
        }
        let elapsed = now - self.slice_start;
        let mut wait = 0;
        if self.bps != u64::MAX {
            // tg_within_bps_limit
            let rnd = roundup(if elapsed == 0 { self.slice } else { elapsed }, self.slice);
            let allowed = self.bytes_allowed(rnd, hz);
            if self.bytes_disp + size > allowed {
                let extra = self.bytes_disp + size - allowed;
                let w = (u128::from(extra) * u128::from(hz) / u128::from(self.bps)).max(1) as u64;
                wait = w + (rnd - elapsed);
            }
        }
        if self.iops != u64::MAX {
            // tg_within_iops_limit
            let rnd = roundup(elapsed + 1, self.slice);
            if self.io_disp + 1 > self.ios_allowed(rnd, hz) {
                wait = wait.max(rnd - elapsed);
            }
        }
        if wait == 0 {
            return Ok(());
        }
        if self.slice_end < now + wait {
            self.set_slice_end(now + wait);
        }
        Err(wait)
    }

    /// `throtl_charge_bio` + `throtl_trim_slice`.
    pub fn charge(&mut self, size: u64, now: u64, hz: u64) {
        self.bytes_disp += size;
        self.io_disp += 1;
        if self.slice_used(now) {
            return;
        }
        self.set_slice_end(now + self.slice);
        let mut elapsed = (now - self.slice_start) / self.slice * self.slice;
        if self.v6_18 {
            if elapsed < 2 * self.slice {
                return;
            }
            elapsed -= self.slice;
        }
        if elapsed == 0 {
            return;
        }
        let trim = self.bytes_allowed(elapsed, hz);
        self.bytes_disp = self.bytes_disp.saturating_sub(trim);
        self.io_disp = self.io_disp.saturating_sub(self.ios_allowed(elapsed, hz));
        self.slice_start += elapsed;
    }
}

impl Kernel {
    fn bio_bytes(&self, id: BioId) -> u64 {
        self.bios[id].as_ref().expect("bio").nr_sectors * 512
    }

    fn throtl(&mut self, dev: usize) -> &mut Throtl {
        self.devs[dev].throtl.as_mut().expect("a blk-throttle rule")
    }

    /// `blk_throtl_bio`: pass the bio now if its direction has no limit,
    /// or nothing of its direction is queued and it is within the budget;
    /// else queue it. Returns true if the submitter must sleep for a tag.
    pub fn blk_throtl_bio(&mut self, dev: usize, id: BioId, submitter: Pid) -> bool {
        if !self.throtl(dev).cgs.is_empty() && self.throtl_cgroup_bio(dev, id) {
            return false;
        }
        self.blk_throtl_root(dev, id, submitter)
    }

    /// The bio's cgroup's group, if it has one with a limit in the bio's
    /// direction: charge it, or queue it there (true).
    fn throtl_cgroup_bio(&mut self, dev: usize, id: BioId) -> bool {
        let cg = self.bio_blkcg(id);
        let size = self.bio_bytes(id);
        let (now, hz) = (self.jiffies(), self.hz());
        let opf = self.bios[id].as_ref().expect("bio").opf;
        let rw = usize::from(!crate::block::op_is_read(opf));
        let meta = opf & crate::block::blk_wbt::REQ_META != 0;
        let t = self.throtl(dev);
        let v6_18 = t.v6_18;
        let Some(d) = t
            .cgs
            .iter_mut()
            .find(|(c, _)| *c == cg)
            .and_then(|(_, g)| g[rw].as_mut())
        else {
            return false;
        };
        if meta && v6_18 {
            d.bytes_disp += size;
            d.io_disp += 1;
            return false;
        }
        if d.queue.is_empty() && d.may_dispatch(size, now, hz).is_ok() {
            d.charge(size, now, hz);
            return false;
        }
        d.queue.push_back(id);
        if d.queue.len() == 1 {
            self.throtl_arm(dev);
        }
        true
    }

    /// The device's own rule (the root group) for a bio.
    fn blk_throtl_root(&mut self, dev: usize, id: BioId, submitter: Pid) -> bool {
        let size = self.bio_bytes(id);
        let (now, hz) = (self.jiffies(), self.hz());
        let opf = self.bios[id].as_ref().expect("bio").opf;
        let rw = usize::from(!crate::block::op_is_read(opf));
        // 6.18 lets metadata (REQ_META: ext4's journal and buffers, XFS's log
        // and buffers) through at once and only charges it: on the host rig
        // XFS metadata went from submit to issue in 0.2 ms (p50) while data
        // waited, and the device ran above the cap during xfsaild's waves
        // (docs/validation.md)
        let meta = opf & crate::block::blk_wbt::REQ_META != 0;
        let t = self.throtl(dev);
        let v6_18 = t.v6_18;
        // blk_should_throtl: no rule in this direction
        let Some(d) = t.rw[rw].as_mut() else {
            return self.driver_submit_bio(dev, id, submitter);
        };
        if meta && v6_18 {
            d.bytes_disp += size;
            return self.driver_submit_bio(dev, id, submitter);
        }
        if d.queue.is_empty() && d.may_dispatch(size, now, hz).is_ok() {
            d.charge(size, now, hz);
            return self.driver_submit_bio(dev, id, submitter);
        }
        d.queue.push_back(id);
        if d.queue.len() == 1 {
            self.throtl_arm(dev);
        }
        false
    }

    /// `tg_update_disptime` + `throtl_schedule_pending_timer`: the pending
    /// timer for when the first queued bio of either direction may go (an
    /// armed timer is brought forward when a direction's first bio may go
    /// earlier).
    fn throtl_arm(&mut self, dev: usize) {
        let (now, hz) = (self.jiffies(), self.hz());
        let mut wait: Option<u64> = None;
        for rw in 0..2 {
            let first = self.throtl(dev).rw[rw]
                .as_ref()
                .and_then(|d| d.queue.front().copied());
            let Some(first) = first else { continue };
            let size = self.bio_bytes(first);
            let d = self.throtl(dev).rw[rw].as_mut().expect("dir");
            let w = d.may_dispatch(size, now, hz).err().unwrap_or(0);
            wait = Some(wait.map_or(w, |x| x.min(w)));
        }
        for g in 0..self.throtl(dev).cgs.len() {
            for rw in 0..2 {
                let first = self.throtl(dev).cgs[g].1[rw]
                    .as_ref()
                    .and_then(|d| d.queue.front().copied());
                let Some(first) = first else { continue };
                let size = self.bio_bytes(first);
                let d = self.throtl(dev).cgs[g].1[rw].as_mut().expect("dir");
                let w = d.may_dispatch(size, now, hz).err().unwrap_or(0);
                wait = Some(wait.map_or(w, |x| x.min(w)));
            }
        }
        let Some(wait) = wait else {
            return;
        };
        let at = if wait == 0 {
            self.now()
        } else {
            self.timer_fire_time(now + wait)
        };
        let t = self.throtl(dev);
        if t.timer_at.is_some_and(|a| a <= at) {
            return;
        }
        t.timer_at = Some(at);
        self.q.schedule(at, Ev::ThrotlTimer { dev: dev as u32 });
    }

    /// The pending timer: release every queued bio that may go now, in
    /// order within each direction, and submit them under the dispatch
    /// work's plug to the driver, reads first
    /// (`blk_throtl_dispatch_work_fn` → `submit_bio_noacct_nocheck`; the
    /// 3:1 read/write quantum of `throtl_dispatch_tg` only orders bios
    /// that all go in this one run). A timer that was brought forward
    /// leaves its old expiry, which does nothing.
    pub fn blk_throtl_timer(&mut self, dev: usize) {
        let at = self.now();
        if self.throtl(dev).timer_at != Some(at) {
            return;
        }
        let (now, hz) = (self.jiffies(), self.hz());
        let mut ready = Vec::new();
        for rw in 0..2 {
            while let Some(&id) = self.throtl(dev).rw[rw]
                .as_ref()
                .and_then(|d| d.queue.front())
            {
                let size = self.bio_bytes(id);
                let d = self.throtl(dev).rw[rw].as_mut().expect("dir");
                if d.may_dispatch(size, now, hz).is_err() {
                    break;
                }
                d.charge(size, now, hz);
                d.queue.pop_front();
                ready.push(id);
            }
        }
        // the cgroups' released bios go up to the device's rule
        for g in 0..self.throtl(dev).cgs.len() {
            for rw in 0..2 {
                while let Some(&id) = self.throtl(dev).cgs[g].1[rw]
                    .as_ref()
                    .and_then(|d| d.queue.front())
                {
                    let size = self.bio_bytes(id);
                    let d = self.throtl(dev).cgs[g].1[rw].as_mut().expect("dir");
                    if d.may_dispatch(size, now, hz).is_err() {
                        break;
                    }
                    d.charge(size, now, hz);
                    d.queue.pop_front();
                    match self.throtl(dev).rw[rw].as_mut() {
                        None => ready.push(id),
                        Some(p) => {
                            if p.queue.is_empty() && p.may_dispatch(size, now, hz).is_ok() {
                                p.charge(size, now, hz);
                                ready.push(id);
                            } else {
                                p.queue.push_back(id);
                            }
                        }
                    }
                }
            }
        }
        let t = self.throtl(dev);
        t.timer_at = None;
        let disp = t.dispatcher;
        if !ready.is_empty() {
            let plug = self.blk_start_plug(disp);
            for id in ready {
                self.driver_submit_bio(dev, id, disp);
            }
            self.blk_finish_plug(disp, plug);
        }
        self.throtl_arm(dev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HZ: u64 = 250;
    const MIB: u64 = 1 << 20;

    /// 50 MiB/s, slice 25 jiffies: 5 MiB per slice (6.18's trim).
    fn tg() -> TgDir {
        TgDir::new(50 * MIB, HZ, true)
    }

    #[test]
    fn a_new_slice_allows_a_whole_slice_at_once() {
        let mut t = tg();
        let now = 1000;
        // 5 MiB in 1 MiB bios pass at once at the start of a slice
        for _ in 0..5 {
            assert_eq!(t.may_dispatch(MIB, now, HZ), Ok(()));
            t.charge(MIB, now, HZ);
        }
        // the sixth waits for the next slice: 25 jiffies rounded, plus 0
        // extra (1 MiB at 50 MiB/s is 5 jiffies; elapsed 0 rounds to 25)
        assert_eq!(t.may_dispatch(MIB, now, HZ), Err(5 + 25));
        // 10 jiffies later: still inside the first slice's allowance
        assert_eq!(t.may_dispatch(MIB, now + 10, HZ), Err(5 + 15));
        // at 25 jiffies the second slice's 5 MiB become available
        assert_eq!(t.may_dispatch(MIB, now + 26, HZ), Ok(()));
    }

    /// Dispatch (and charge) one 1 MiB bio at each of `times` (jiffies),
    /// each of which the budget must allow.
    fn dispatch(t: &mut TgDir, times: &[u64]) {
        for &now in times {
            t.may_dispatch(MIB, now, HZ).unwrap();
            t.charge(MIB, now, HZ);
        }
    }

    #[test]
    fn dispatching_extends_then_trims_the_slice_before_6_18() {
        let mut t = TgDir::new(50 * MIB, HZ, false);
        dispatch(&mut t, &[1000, 1020]);
        // the slice was extended to cover now + 25, rounded up to 25
        assert_eq!(
            (t.slice_start, t.slice_end, t.bytes_disp),
            (1000, 1050, 2 * MIB)
        );
        // at 1049 one whole slice has elapsed: its 5 MiB of allowance are
        // trimmed with it (3 MiB dispatched -> 0) and the slice starts at 1025
        dispatch(&mut t, &[1049]);
        assert_eq!((t.slice_start, t.slice_end, t.bytes_disp), (1025, 1075, 0));
    }

    /// 6.18: the same dispatches; at 1049 only one whole slice has
    /// passed, so nothing is trimmed; at 1051 two have, and one of them
    /// goes with its 5 MiB (4 MiB dispatched -> 0).
    #[test]
    fn the_6_18_trim_waits_for_two_slices_and_keeps_one() {
        let mut t = tg();
        dispatch(&mut t, &[1000, 1020, 1049]);
        assert_eq!(
            (t.slice_start, t.slice_end, t.bytes_disp),
            (1000, 1075, 3 * MIB)
        );
        // elapsed 51 rounds up to 75 jiffies: 15 MiB allowed
        dispatch(&mut t, &[1051]);
        assert_eq!((t.slice_start, t.slice_end, t.bytes_disp), (1025, 1100, 0));
    }

    #[test]
    fn an_ended_idle_slice_starts_afresh() {
        let mut t = tg();
        dispatch(&mut t, &[1000]);
        assert_eq!(t.slice_end, 1025);
        assert_eq!(t.may_dispatch(MIB, 2000, HZ), Ok(()));
        assert_eq!((t.slice_start, t.slice_end, t.bytes_disp), (2000, 2025, 0));
    }
}
