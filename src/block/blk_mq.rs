//! Requests, the per-task plug and tags (block/blk-mq.c, blk-merge.c,
//! blk-core.c; spec §25–27).
//!
//! - A bio is split at `max_sectors` (`__bio_split_to_limits`).
//! - With a plug, a piece first tries to merge into the *newest* plugged
//!   request only (`blk_attempt_plug_merge`): a back or front merge within
//!   `max_sectors` and `max_segments`; a size failure marks the request
//!   no-merge.
//! - Otherwise it needs a tag; with all `nr_requests` tags in use the
//!   submitter sleeps (and, sleeping, flushes its plug) until completions
//!   free one (`blk_mq_get_tag`).
//! - A new request joins the plug (`blk_add_rq_to_plug`: the plug is first
//!   flushed when it holds 32 requests or its newest is ≥ 128 KiB) or, with
//!   no plug, goes to the device at once.
//! - A plug is flushed by `blk_finish_plug` of the outermost plug, by the
//!   rules above, and when its task sleeps. Requests are issued in
//!   submission order (6.18 keeps the plug list ordered).

use crate::kernel::{BioId, DevId, Kernel, Pid};
use crate::sim::Ns;

pub type ReqId = usize;

/// `BLK_MAX_REQUEST_COUNT`.
pub const BLK_MAX_REQUEST_COUNT: usize = 32;
/// `BLK_PLUG_FLUSH_SIZE` in sectors (128 KiB).
pub const BLK_PLUG_FLUSH_SECTORS: u64 = 256;

#[derive(Clone, Debug)]
pub struct Request {
    pub dev: DevId,
    pub sector: u64,
    pub nr_sectors: u64,
    pub segs: u32,
    /// The bios with a piece in this request (a bio appears once per piece).
    pub pieces: Vec<BioId>,
    pub nomerge: bool,
    pub queued: Ns,
    /// The task waiting for this request's tag, if any.
    pub waiter: Option<Pid>,
}

/// A task's `struct blk_plug`.
#[derive(Clone, Debug, Default)]
pub struct Plug {
    pub reqs: Vec<ReqId>,
}

/// One piece of a bio after splitting: (sector, sectors, segments).
fn split(sector: u64, nr: u64, max: u64, seg_sectors: u64) -> Vec<(u64, u64, u32)> {
    let mut v = Vec::new();
    let (mut s, mut left) = (sector, nr);
    while left > 0 {
        let n = left.min(max);
        v.push((s, n, n.div_ceil(seg_sectors.max(1)) as u32));
        s += n;
        left -= n;
    }
    v
}

impl Kernel {
    fn alloc_req(&mut self, r: Request) -> ReqId {
        if let Some(id) = self.free_reqs.pop() {
            self.reqs[id] = Some(r);
            id
        } else {
            self.reqs.push(Some(r));
            self.reqs.len() - 1
        }
    }

    /// `blk_start_plug`: returns true if this call installed the plug (only
    /// the outermost plug counts; nested ones are no-ops).
    pub fn blk_start_plug(&mut self, pid: Pid) -> bool {
        if self.tasks[pid].plug.is_some() {
            return false;
        }
        self.tasks[pid].plug = Some(Plug::default());
        true
    }

    /// `blk_finish_plug` of the plug `blk_start_plug` returned true for.
    pub fn blk_finish_plug(&mut self, pid: Pid, started: bool) {
        if started {
            self.blk_flush_plug(pid);
            self.tasks[pid].plug = None;
        }
    }

    /// `blk_mq_flush_plug_list`: issue the plugged requests in order.
    pub fn blk_flush_plug(&mut self, pid: Pid) {
        let Some(p) = self.tasks[pid].plug.as_mut() else {
            return;
        };
        if p.reqs.is_empty() {
            return;
        }
        let reqs = std::mem::take(&mut p.reqs);
        self.devs_unplugs(reqs.len());
        for r in reqs {
            self.blk_mq_issue(r);
        }
    }

    fn devs_unplugs(&mut self, depth: usize) {
        self.unplug_depths.push(depth as u32);
    }

    /// `blk_mq_submit_bio`. Returns true if the submitter must sleep for a
    /// tag (its requests wait in FIFO order and are issued as tags free).
    pub fn blk_mq_submit_bio(&mut self, submitter: Option<Pid>, id: BioId) -> bool {
        let (dev, sector, nr, seg_sectors) = {
            let b = self.bios[id].as_ref().expect("bio");
            (b.dev, b.sector, b.nr_sectors, b.seg_sectors)
        };
        let d = &self.devs[dev];
        let (max, max_segs) = (d.max_sectors.max(8), d.max_segments);
        let pieces = split(sector, nr, max, seg_sectors);
        self.bios[id].as_mut().expect("bio").remaining = pieces.len() as u32;
        let mut must_wait = false;
        for (s, n, segs) in pieces {
            // 1. merge into a plugged request: the newest one (6.x) or, in
            //    the ≤ 4.x rule, any plugged request of this queue
            if let Some(pid) = submitter {
                let any = self.sc.run.plug_merge_any;
                let cands: Vec<ReqId> = match self.tasks[pid].plug.as_ref() {
                    Some(p) if any => p.reqs.iter().rev().copied().collect(),
                    Some(p) => p.reqs.last().copied().into_iter().collect(),
                    None => Vec::new(),
                };
                let mut merged = false;
                for c in cands {
                    let rq = self.reqs[c].as_mut().expect("rq");
                    if rq.dev != dev || rq.nomerge {
                        continue;
                    }
                    let back = rq.sector + rq.nr_sectors == s;
                    let front = s + n == rq.sector;
                    if !(back || front) {
                        continue;
                    }
                    if rq.nr_sectors + n > max || rq.segs + segs > max_segs {
                        rq.nomerge = true;
                        break;
                    }
                    if front {
                        rq.sector = s;
                    }
                    rq.nr_sectors += n;
                    rq.segs += segs;
                    rq.pieces.push(id);
                    self.devs[dev].stat.write_merges += 1;
                    merged = true;
                    break;
                }
                if merged {
                    continue;
                }
            }
            // 2. a new request, which needs a tag
            let now = self.now();
            let rq = self.alloc_req(Request {
                dev,
                sector: s,
                nr_sectors: n,
                segs,
                pieces: vec![id],
                nomerge: false,
                queued: now,
                waiter: None,
            });
            self.devs[dev].stat.requests_issued += 1;
            let d = &mut self.devs[dev];
            if must_wait || d.tags_used >= d.nr_requests {
                must_wait = true;
                self.reqs[rq].as_mut().expect("rq").waiter = submitter;
                self.devs[dev].tag_waiters.push_back(rq);
                continue;
            }
            d.tags_used += 1;
            d.stat.in_flight += 1; // accounted from tag allocation, as blk-mq does
            match submitter.and_then(|p| self.tasks[p].plug.as_ref().map(|_| p)) {
                Some(pid) => self.blk_add_rq_to_plug(pid, rq),
                None => self.blk_mq_issue(rq),
            }
        }
        must_wait
    }

    /// `blk_add_rq_to_plug` (6.x), or the ≤ 4.x rule: flush at 16 requests.
    fn blk_add_rq_to_plug(&mut self, pid: Pid, rq: ReqId) {
        let plug = self.tasks[pid].plug.as_ref().expect("plug");
        if let Some(&last) = plug.reqs.last() {
            let flush = if self.sc.run.plug_merge_any {
                plug.reqs.len() >= 16
            } else {
                let big = self.reqs[last].as_ref().expect("rq").nr_sectors >= BLK_PLUG_FLUSH_SECTORS;
                plug.reqs.len() >= BLK_MAX_REQUEST_COUNT || big
            };
            if flush {
                self.blk_flush_plug(pid);
            }
        }
        self.tasks[pid].plug.as_mut().expect("plug").reqs.push(rq);
    }

    /// Hand a request to the device.
    fn blk_mq_issue(&mut self, rq: ReqId) {
        let (dev, sectors) = {
            let r = self.reqs[rq].as_ref().expect("rq");
            (r.dev, r.nr_sectors)
        };
        match &self.devs[dev].backend {
            // the loop device over tmpfs completes at once
            crate::block::Backend::Throttled(_) => self.request_done(rq, 0),
            crate::block::Backend::Disk(_) => self.disk_queue_rq(dev, rq, sectors),
        }
    }

    /// A request completed: account it, end its bios, free its tag and give
    /// it to the oldest waiting request.
    pub fn request_done(&mut self, rq: ReqId, service: Ns) {
        let r = self.reqs[rq].take().expect("rq completed twice");
        self.free_reqs.push(rq);
        let dev = r.dev;
        let st = &mut self.devs[dev].stat;
        st.in_flight -= 1;
        st.write_ios += 1;
        st.write_sectors += r.nr_sectors;
        st.write_ticks_ns += service;
        for b in r.pieces {
            let bio = self.bios[b].as_mut().expect("bio");
            bio.remaining -= 1;
            if bio.remaining == 0 {
                self.bio_endio(b);
            }
        }
        self.devs[dev].tags_used -= 1;
        if let Some(next) = self.devs[dev].tag_waiters.pop_front() {
            self.devs[dev].tags_used += 1;
            self.devs[dev].stat.in_flight += 1;
            let waiter = self.reqs[next].as_mut().expect("rq").waiter.take();
            // the woken submitter continues in blk_mq_submit_bio: its new
            // request joins its plug (flushed when it went to sleep), where
            // the bios that follow can merge; without a plug it is issued
            match waiter.filter(|&p| self.tasks[p].plug.is_some()) {
                Some(pid) => self.blk_add_rq_to_plug(pid, next),
                None => self.blk_mq_issue(next),
            }
            if let Some(pid) = waiter {
                let still_waiting = self.devs[dev]
                    .tag_waiters
                    .iter()
                    .any(|&q| self.reqs[q].as_ref().is_some_and(|r| r.waiter == Some(pid)));
                if !still_waiting {
                    self.wake_up_process(pid);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_at_max_sectors_and_count_segments() {
        // 8 MiB bio, max 2560 sectors (1280 KiB), 64 KiB segments (128 sectors)
        let p = split(0, 16384, 2560, 128);
        assert_eq!(p.len(), 7);
        assert_eq!(p[0], (0, 2560, 20));
        assert_eq!(p[6], (15360, 1024, 8));
        assert_eq!(p.iter().map(|x| x.1).sum::<u64>(), 16384);
        // a 4 KiB bio of one page
        assert_eq!(split(800, 8, 2560, 8), vec![(800, 8, 1)]);
    }
}
