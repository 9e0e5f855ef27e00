//! Requests, the per-task plug and tags (block/blk-mq.c, blk-merge.c,
//! blk-core.c).
//!
//! - A bio is split at `max_sectors` (`__bio_split_to_limits`), reads and
//!   writes alike.
//! - With a plug, a piece first tries to merge into the *newest* plugged
//!   request only (`blk_attempt_plug_merge`): a back or front merge within
//!   `max_sectors` and `max_segments`, of the same direction
//!   (`blk_rq_merge_ok` compares the op: a read never merges with a write);
//!   a size failure marks the request no-merge. Reads are plugged as
//!   writes are.
//! - Otherwise a write needs a wbt token (block/blk_wbt.rs; reads take
//!   none), then a tag; where
//!   wbt's limit is reached or all `nr_requests` tags are in use the
//!   submitter sleeps (and, sleeping, flushes its plug) until completions
//!   free one (`rq_qos_wait`, `blk_mq_get_tag`).
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
    /// The task waiting for this request's wbt token or tag, if any.
    pub waiter: Option<Pid>,
    /// The bio's `REQ_SYNC`/`REQ_BACKGROUND` flags (wbt's limit), and
    /// `REQ_READ` for a read.
    pub opf: u8,
    /// The request holds a wbt token (`WBT_TRACKED`).
    pub wbt_tracked: bool,
    /// When the driver took it.
    pub issued: Ns,
    /// The cgroup whose request list its tag counts in (CFQ with
    /// per-cgroup request lists), else `u32::MAX` (the shared pool).
    pub rl_group: u32,
    /// The submitter's next request, held back while it sleeps for this
    /// one's wbt token (`u32::MAX`: none). The kernel's task sleeps in
    /// `rq_qos_wait` and submits nothing more (not the rest of a split bio,
    /// `submit_bio_noacct`'s `bio_list`, nor its next bio) until it wakes,
    /// so those join wbt's queue behind whoever came meanwhile.
    pub wbt_next: u32,
}

/// Who asks `blk_mq_get_tag` for a tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagFrom {
    /// A submitter in blk_mq_submit_bio.
    Submit,
    /// A request whose sleeping submitter was handed a wbt token: it queues
    /// behind earlier tag waiters.
    WbtToken,
    /// The oldest tag waiter, given the tag a completion freed.
    FreedTag,
}

/// A task's `struct blk_plug`.
#[derive(Clone, Debug, Default)]
pub struct Plug {
    pub reqs: Vec<ReqId>,
}

impl Request {
    /// A read request (`rq_data_dir` is READ).
    #[inline]
    pub fn is_read(&self) -> bool {
        crate::block::op_is_read(self.opf)
    }

    /// Take a bio piece at the back, or at the front (`bio_attempt_back_merge`
    /// / `bio_attempt_front_merge`); the caller checked the limits.
    pub fn add_bio(&mut self, id: BioId, sector: u64, sectors: u64, segs: u32, front: bool) {
        if front {
            self.sector = sector;
        }
        self.nr_sectors += sectors;
        self.segs += segs;
        self.pieces.push(id);
    }
}

impl Kernel {
    fn alloc_req(&mut self, r: Request) -> ReqId {
        crate::sim::slot_insert(&mut self.reqs, &mut self.free_reqs, r)
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
            // a request may join the plug while it is being flushed (a
            // completion that runs at once submits more: a journal commit
            // block after its blocks): flush until it stays empty
            while self.tasks[pid]
                .plug
                .as_ref()
                .is_some_and(|p| !p.reqs.is_empty())
            {
                self.blk_flush_plug(pid);
            }
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
            self.blk_mq_issue(r, Some(pid));
        }
    }

    fn devs_unplugs(&mut self, depth: usize) {
        if self.unplug_depths.len() <= depth {
            self.unplug_depths.resize(depth + 1, 0);
        }
        self.unplug_depths[depth] += 1;
        self.last_unplug_depth = depth as u32;
    }

    /// `blk_mq_submit_bio`. Returns true if the submitter must sleep for a
    /// tag (its requests wait in FIFO order and are issued as tags free).
    pub fn blk_mq_submit_bio(&mut self, submitter: Option<Pid>, id: BioId) -> bool {
        let (dev, sector, nr, seg_sectors, opf) = {
            let b = self.bios[id].as_ref().expect("bio");
            (b.dev, b.sector, b.nr_sectors, b.seg_sectors, b.opf)
        };
        let d = &self.devs[dev];
        let max_segs = d.max_segments;
        // __bio_split_to_limits: at max_sectors, and at max_segments
        // segments of the bio's segment size
        let max = d
            .max_sectors
            .max(8)
            .min(u64::from(max_segs) * seg_sectors.max(1));
        self.bios[id].as_mut().expect("bio").remaining = nr.div_ceil(max).max(1) as u32;
        let mut must_wait = false;
        let (mut s, mut left) = (sector, nr);
        while left > 0 {
            let n = left.min(max);
            let segs = n.div_ceil(seg_sectors.max(1)) as u32;
            let s_piece = s;
            s += n;
            left -= n;
            let s = s_piece;
            // 1. merge into a plugged request: the newest one (6.x) or, in
            //    the ≤ 4.x rule, any plugged request of this queue (flush
            //    and FUA writes never merge)
            let nomerge = opf & crate::block::blk_wbt::REQ_NOMERGE != 0;
            let read = crate::block::op_is_read(opf);
            if let Some(pid) = submitter.filter(|_| !nomerge) {
                let any = self.sc.features.plug_merge_any;
                let mut merged = false;
                let nplug = self.tasks[pid].plug.as_ref().map_or(0, |p| p.reqs.len());
                for k in (0..nplug).rev() {
                    let c = self.tasks[pid].plug.as_ref().expect("plug").reqs[k];
                    let rq = self.reqs[c].as_mut().expect("rq");
                    if rq.dev != dev {
                        continue; // another queue's request (a plug over md members)
                    }
                    if rq.is_read() != read {
                        // blk_rq_merge_ok: another op; the 6.x rule looks
                        // at the newest request only
                        if !any {
                            break;
                        }
                        continue;
                    }
                    let back = rq.sector + rq.nr_sectors == s;
                    let front = s + n == rq.sector;
                    if !rq.nomerge && (back || front) {
                        if rq.nr_sectors + n > max || rq.segs + segs > max_segs {
                            rq.nomerge = true;
                        } else {
                            rq.add_bio(id, s, n, segs, front);
                            self.devs[dev].stat.merged(read);
                            merged = true;
                        }
                        break;
                    }
                    if !any {
                        break; // 6.x: only the newest request of this queue
                    }
                }
                if merged {
                    continue;
                }
            }
            // 2. a request waiting in the scheduler (mq-deadline)
            if !nomerge && self.dd_bio_merge(dev, id, s, n, segs, read) {
                continue;
            }
            // 3. a new request, which needs a wbt token and a tag
            let now = self.now();
            let mut pieces = self.piece_pool.pop().unwrap_or_default();
            pieces.push(id);
            let rq = self.alloc_req(Request {
                dev,
                sector: s,
                nr_sectors: n,
                segs,
                pieces,
                nomerge,
                queued: now,
                waiter: None,
                opf,
                wbt_tracked: false,
                issued: now,
                rl_group: u32::MAX,
                wbt_next: u32::MAX,
            });
            self.devs[dev].stat.requests_issued += 1;
            let wbt =
                self.devs[dev].wbt.enabled() && crate::block::blk_wbt::wbt_should_throttle(opf);
            let tail = submitter.and_then(|p| {
                let t = &self.devs[dev].wbt_tails;
                t.iter().position(|&(q, _)| q == p)
            });
            if let (true, Some(i)) = (wbt, tail) {
                // the submitter sleeps for an earlier request's token: this
                // one is not submitted until that one has it
                must_wait = true;
                self.reqs[rq].as_mut().expect("rq").waiter = submitter;
                let t = self.devs[dev].wbt_tails[i].1 as usize;
                self.reqs[t].as_mut().expect("rq").wbt_next = rq as u32;
                self.devs[dev].wbt_held += 1;
                self.devs[dev].wbt_tails[i].1 = rq as u32;
                continue;
            }
            if must_wait {
                // the submitter already sleeps: later pieces queue behind
                self.reqs[rq].as_mut().expect("rq").waiter = submitter;
                if wbt {
                    self.devs[dev].wbt.waiters.push_back(rq);
                } else {
                    self.devs[dev].tag_waiters.push_back(rq);
                }
                continue;
            }
            let throttled = crate::block::blk_wbt::wbt_should_throttle(opf);
            if read {
                // wbt_should_throttle is false for reads: no token, only
                // the issue time (close_io)
                self.wbt_read_seen(dev);
            } else if throttled && !self.wbt_wait(dev, opf) {
                must_wait = true;
                self.reqs[rq].as_mut().expect("rq").waiter = submitter;
                self.devs[dev].wbt.waiters.push_back(rq);
                if let Some(p) = submitter {
                    self.devs[dev].wbt_tails.push((p, rq as u32));
                }
                continue;
            }
            let r = self.reqs[rq].as_mut().expect("rq");
            r.wbt_tracked = self.devs[dev].wbt.enabled() && throttled;
            must_wait |= !self.blk_mq_get_tag(dev, rq, submitter, TagFrom::Submit);
        }
        must_wait
    }

    /// `blk_mq_get_tag`: a free tag, then the plug or the queue; with all
    /// tags in use the request waits for one (its submitter sleeps) and
    /// false is returned.
    pub fn blk_mq_get_tag(
        &mut self,
        dev: DevId,
        rq: ReqId,
        submitter: Option<Pid>,
        from: TagFrom,
    ) -> bool {
        let now = self.now();
        if let Some(g) = self.rl_group(dev, rq) {
            return self.get_tag_per_cgroup(dev, rq, submitter, from, g);
        }
        let d = &mut self.devs[dev];
        let full = d.tags_used >= d.nr_requests || !d.tag_waiters.is_empty();
        if from != TagFrom::FreedTag && full {
            self.reqs[rq].as_mut().expect("rq").waiter = submitter;
            self.devs[dev].tag_waiters.push_back(rq);
            return false;
        }
        self.tag_taken(dev, rq, submitter, from, now);
        true
    }

    /// The cgroup whose request list a request counts in: with CFQ's
    /// per-cgroup async queues (`async_in_root = false`), TerAvest's
    /// "block: Per cgroup request descriptor counts" gives each cgroup
    /// `nr_requests` of its own (`get_request` against the group's
    /// count); under BFQ each group's share of the tags is limited by its
    /// weight (`bfqq_request_over_limit`). None: the device's shared tags
    /// only.
    fn rl_group(&self, dev: DevId, rq: ReqId) -> Option<u32> {
        let s = &self.devs[dev].sched;
        match (&s.cfq, &s.bfq) {
            (Some(c), _) if !c.tun.async_in_root => Some(self.rq_qkey(rq, false).cg),
            (_, Some(_)) => Some(self.rq_qkey(rq, false).cg),
            _ => None,
        }
    }

    /// Whether a request of cgroup `g` may take a tag now: under CFQ, while
    /// its cgroup's list has room; under BFQ, while the device has a free
    /// tag and the cgroup holds fewer than its share (`bfq_limit_depth`:
    /// async writes get half the depth, sync writes 3/4, reads all; split
    /// among the cgroups holding or wanting tags by their weights, at
    /// least one: `bfqq_request_over_limit`).
    fn rl_room(&self, dev: DevId, rq: ReqId, g: u32) -> bool {
        let d = &self.devs[dev];
        let used = d.sched.rl.get(g as usize).copied().unwrap_or(0);
        let Some(b) = d.sched.bfq.as_ref() else {
            return used < d.nr_requests;
        };
        if d.tags_used >= d.nr_requests {
            return false;
        }
        let r = self.reqs[rq].as_ref().expect("rq");
        let depth = u64::from(d.nr_requests);
        let limit = if r.is_read() {
            depth
        } else if r.opf & crate::block::blk_wbt::REQ_SYNC != 0 {
            depth * 3 / 4
        } else {
            depth / 2
        };
        let mut wsum = 0;
        for (c, bg) in b.groups.iter().enumerate() {
            let holds = d.sched.rl.get(c).copied().unwrap_or(0) > 0;
            let wants = d
                .tag_waiters
                .iter()
                .any(|&w| self.rl_group(dev, w) == Some(c as u32));
            if holds || wants || c == g as usize {
                wsum += bg.ent.weight;
            }
        }
        let w = b.groups.get(g as usize).map_or(1, |x| x.ent.weight);
        let share = ((limit * w + wsum / 2) / wsum.max(1)).max(1);
        u64::from(used) < share
    }

    /// `blk_mq_get_tag` against the request's cgroup's limit: it waits
    /// only behind requests of its own cgroup.
    fn get_tag_per_cgroup(
        &mut self,
        dev: DevId,
        rq: ReqId,
        submitter: Option<Pid>,
        from: TagFrom,
        g: u32,
    ) -> bool {
        let now = self.now();
        let waiters = self.devs[dev]
            .tag_waiters
            .iter()
            .any(|&w| self.rl_group(dev, w) == Some(g));
        self.reqs[rq].as_mut().expect("rq").rl_group = g;
        if from != TagFrom::FreedTag && (waiters || !self.rl_room(dev, rq, g)) {
            self.reqs[rq].as_mut().expect("rq").waiter = submitter;
            self.devs[dev].tag_waiters.push_back(rq);
            return false;
        }
        let rl = &mut self.devs[dev].sched.rl;
        if rl.len() <= g as usize {
            rl.resize(g as usize + 1, 0);
        }
        rl[g as usize] += 1;
        self.tag_taken(dev, rq, submitter, from, now);
        true
    }

    /// The request has its tag: it joins its submitter's plug or goes to
    /// the queue.
    fn tag_taken(&mut self, dev: DevId, rq: ReqId, submitter: Option<Pid>, from: TagFrom, now: Ns) {
        let d = &mut self.devs[dev];
        d.tags_used += 1;
        // accounted from tag allocation, as blk-mq does
        d.stat.io_start(now);
        self.reqs[rq].as_mut().expect("rq").waiter = None;
        // a submitter woken with a token or tag continues in
        // blk_mq_submit_bio: the request joins its plug (flushed when it went
        // to sleep), where the bios that follow can merge; without a plug it
        // is issued. If it must sleep again for another piece, that sleep
        // flushes the plug at once: the request is issued now.
        // A request with later ones held behind it (`wbt_next`) is issued
        // at once, as the sleep for them would flush the plug.
        let held = self.reqs[rq].as_ref().expect("rq").wbt_next != u32::MAX;
        let resumes = submitter.filter(|&p| {
            self.tasks[p].plug.is_some()
                && !held
                && (from == TagFrom::Submit || !self.task_waits(p))
        });
        match resumes {
            Some(pid) => self.blk_add_rq_to_plug(pid, rq),
            None if from == TagFrom::Submit => self.blk_mq_issue(rq, submitter),
            None => self.blk_mq_issue(rq, None),
        }
    }

    /// Whether any request of `pid` still waits for a wbt token or a tag,
    /// on any queue (an md bio's pieces go to several).
    fn task_waits(&self, pid: Pid) -> bool {
        let mine = |q: &ReqId| {
            self.reqs[*q]
                .as_ref()
                .is_some_and(|r| r.waiter == Some(pid))
        };
        self.devs
            .iter()
            .any(|d| d.tag_waiters.iter().any(mine) || d.wbt.waiters.iter().any(mine))
    }

    /// Wake `pid` once none of its requests waits any more.
    pub fn wake_if_done_waiting(&mut self, pid: Pid) {
        if !self.task_waits(pid) {
            self.wake_up_process(pid);
        }
    }

    /// `blk_add_rq_to_plug` (6.x), or the ≤ 4.x rule: flush at 16 requests.
    fn blk_add_rq_to_plug(&mut self, pid: Pid, rq: ReqId) {
        let plug = self.tasks[pid].plug.as_ref().expect("plug");
        if let Some(&last) = plug.reqs.last() {
            let flush = if self.sc.features.plug_merge_any {
                plug.reqs.len() >= 16
            } else {
                let big =
                    self.reqs[last].as_ref().expect("rq").nr_sectors >= BLK_PLUG_FLUSH_SECTORS;
                plug.reqs.len() >= BLK_MAX_REQUEST_COUNT || big
            };
            if flush {
                self.blk_flush_plug(pid);
            }
        }
        self.tasks[pid].plug.as_mut().expect("plug").reqs.push(rq);
    }

    /// Hand a request to the device's queue; `by` pays the dispatch CPU
    /// cost. Devices with driver slots go through the scheduler.
    fn blk_mq_issue(&mut self, rq: ReqId, by: Option<Pid>) {
        if let Some(p) = by {
            self.tasks[p].owed_sys += self.sc.machine.cost.rq_dispatch;
        }
        let dev = self.reqs[rq].as_ref().expect("rq").dev;
        if self.devs[dev].sched.depth > 0 {
            self.blk_mq_sched_insert(dev, rq);
        } else {
            let now = self.now();
            self.reqs[rq].as_mut().expect("rq").issued = now;
            self.driver_queue_rq(dev, rq);
        }
    }

    /// A request completed: account it, end its bios, free its tag and give
    /// it to the oldest waiting request.
    pub fn request_done(&mut self, rq: ReqId, service: Ns) {
        if self.cg.enabled {
            self.blkcg_disk_time(rq);
        }
        let (dev, rl_group) = {
            let r = self.reqs[rq].as_ref().expect("rq");
            (r.dev, r.rl_group)
        };
        match self.devs[dev].elevator {
            crate::scenario::Elevator::Bfq => {
                let key = self.rq_qkey(rq, false);
                self.bfq_completed(dev, key);
            }
            crate::scenario::Elevator::Cfq => {
                let root = self.devs[dev]
                    .sched
                    .cfq
                    .as_ref()
                    .expect("cfq")
                    .tun
                    .async_in_root;
                let key = self.rq_qkey(rq, root);
                self.cfq_completed(dev, key);
            }
            _ => {}
        }
        let r = self.reqs[rq].take().expect("rq completed twice");
        self.free_reqs.push(rq);
        let dev = r.dev;
        let now = self.now();
        let read = r.is_read();
        let st = &mut self.devs[dev].stat;
        st.io_done(now, read, r.nr_sectors, service);
        use crate::block::blk_wbt::{REQ_META, REQ_SYNC};
        if r.opf & REQ_META != 0 && !read {
            st.meta_write_ios += 1;
            st.meta_write_sectors += r.nr_sectors;
            if r.opf & REQ_SYNC != 0 {
                st.journal_write_ios += 1;
                st.journal_write_sectors += r.nr_sectors;
            }
        }
        let mut pieces = r.pieces;
        for &b in &pieces {
            let bio = self.bios[b].as_mut().expect("bio");
            bio.remaining -= 1;
            if bio.remaining == 0 {
                self.bio_endio(b);
            }
        }
        // keep the vector for the next request (no allocation per request)
        pieces.clear();
        self.piece_pool.push(pieces);
        // rq_qos_done before the tag is freed
        if read {
            self.wbt_read_seen(dev);
        } else {
            let granted = self.wbt_done(dev, r.wbt_tracked);
            if !granted.is_empty() {
                self.wbt_tokens_granted(dev, granted);
            }
        }
        self.blk_mq_put_tag(dev, rl_group);
    }

    /// The device time a completing request took, to its cgroup: from its
    /// issue or the previous completion, whichever is later (a device
    /// serving one request at a time is busy with this one from then).
    fn blkcg_disk_time(&mut self, rq: ReqId) {
        let now = self.now();
        let cg = {
            let r = self.reqs[rq].as_ref().expect("rq");
            self.bio_dirtier(r.pieces[0])
        };
        let r = self.reqs[rq].as_ref().expect("rq");
        let warm = self.sc.run.warmup;
        let d = &mut self.devs[r.dev];
        let from = d.last_done.max(r.issued).max(warm);
        d.last_done = now;
        if now > from {
            if d.cg_time.len() <= cg {
                d.cg_time.resize(cg + 1, 0);
            }
            d.cg_time[cg] += now - from;
        }
    }

    /// Free a tag and give it to the oldest request waiting for one.
    /// A request of a per-cgroup list frees its slot there and wakes the
    /// oldest waiter of that cgroup.
    pub fn blk_mq_put_tag(&mut self, dev: DevId, rl_group: u32) {
        self.devs[dev].tags_used -= 1;
        if rl_group != u32::MAX {
            self.devs[dev].sched.rl[rl_group as usize] -= 1;
            // CFQ: the oldest waiter of the cgroup whose list has room;
            // BFQ: the oldest waiter the limits now let through
            let cfq = self.devs[dev].sched.cfq.is_some();
            let i = self.devs[dev].tag_waiters.iter().position(|&w| {
                let g = self.rl_group(dev, w);
                if cfq {
                    g == Some(rl_group)
                } else {
                    g.is_some_and(|g| self.rl_room(dev, w, g))
                }
            });
            if let Some(next) = i.and_then(|i| self.devs[dev].tag_waiters.remove(i)) {
                let waiter = self.reqs[next].as_ref().expect("rq").waiter;
                self.blk_mq_get_tag(dev, next, waiter, TagFrom::FreedTag);
                if let Some(pid) = waiter {
                    self.wake_if_done_waiting(pid);
                }
            }
            return;
        }
        if let Some(next) = self.devs[dev].tag_waiters.pop_front() {
            let waiter = self.reqs[next].as_ref().expect("rq").waiter;
            self.blk_mq_get_tag(dev, next, waiter, TagFrom::FreedTag);
            if let Some(pid) = waiter {
                self.wake_if_done_waiting(pid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::block::Bio;
    use crate::kernel::Kernel;
    use crate::scenario::Scenario;

    /// A machine with one disk (qd 4) and a plugged submitter (the flusher
    /// task). wbt is off unless `extra` sets `queue.wbt_lat_usec`.
    fn machine(extra: &[&str]) -> Kernel {
        let mut sets: Vec<String> = vec!["devices.sda.queue.wbt_lat_usec=0".into()];
        sets.extend(extra.iter().map(|s| s.to_string()));
        let toml = "[devices.sda]\ntype = \"disk\"\nqueue_depth = 4\n[filesystems.f]\ndevice = \"sda\"\n[jobs.dd]\nbs = \"1M\"\n";
        let sc = Scenario::load_str(toml, "t.toml", "t", &sets).unwrap();
        Kernel::new(sc, crate::trace::Tracer::disabled())
    }

    fn bio(k: &Kernel, sector: u64, sectors: u64) -> Bio {
        Bio {
            dev: 0,
            sector,
            nr_sectors: sectors,
            ino: 0,
            page_start: 0,
            npages: 0,
            submitter: 0,
            submit_time: k.now(),
            seg_sectors: 8,
            parent: None,
            remaining: 0,
            opf: 0,
            owner: crate::block::BioOwner::Page,
            io_end: None,
        }
    }

    /// (sector, sectors) of each request.
    fn spans<'a>(k: &Kernel, ids: impl Iterator<Item = &'a usize>) -> Vec<(u64, u64)> {
        ids.map(|&r| {
            let r = k.reqs[r].as_ref().unwrap();
            (r.sector, r.nr_sectors)
        })
        .collect()
    }

    fn plugged(k: &Kernel) -> Vec<(u64, u64)> {
        spans(k, k.tasks[0].plug.as_ref().unwrap().reqs.iter())
    }

    #[test]
    fn merges_only_into_the_newest_plugged_request() {
        let mut k = machine(&[]);
        k.create_inode(0);
        assert!(k.blk_start_plug(0));
        k.submit_bio(bio(&k, 0, 8));
        k.submit_bio(bio(&k, 100, 8));
        k.submit_bio(bio(&k, 8, 8)); // adjacent to the older request: no merge in 6.x
        assert_eq!(plugged(&k), vec![(0, 8), (100, 8), (8, 8)]);
        k.submit_bio(bio(&k, 16, 8)); // back merge into the newest
        k.submit_bio(bio(&k, 0, 8)); // (0..8) ends where the newest starts: front merge
        assert_eq!(plugged(&k), vec![(0, 8), (100, 8), (0, 24)]);
        assert_eq!(k.devs[0].stat.write_merges, 2);
    }

    #[test]
    fn any_rule_merges_into_older_plugged_requests() {
        let mut k = machine(&["run.plug_merge=any"]);
        k.create_inode(0);
        k.blk_start_plug(0);
        k.submit_bio(bio(&k, 0, 8));
        k.submit_bio(bio(&k, 100, 8));
        k.submit_bio(bio(&k, 8, 8));
        assert_eq!(plugged(&k), vec![(0, 16), (100, 8)]);
    }

    /// The plug flushes so far: (depth, how many).
    fn flushes(k: &Kernel) -> Vec<(usize, u64)> {
        let d = k.unplug_depths.iter().enumerate();
        d.filter(|&(_, &n)| n > 0).map(|(i, &n)| (i, n)).collect()
    }

    #[test]
    fn plug_flushes_at_128k_and_at_32_requests() {
        let mut k = machine(&["devices.sda.queue.nr_requests=1000"]);
        k.blk_start_plug(0);
        // a 128 KiB request is flushed when the next request is added
        k.submit_bio(bio(&k, 0, 256));
        k.submit_bio(bio(&k, 1000, 8));
        assert_eq!(plugged(&k), vec![(1000, 8)]);
        assert_eq!(flushes(&k), vec![(1, 1)]);
        // 32 small requests, then the 33rd flushes them
        for i in 1..32 {
            k.submit_bio(bio(&k, 1000 + i * 100, 8));
        }
        assert_eq!(plugged(&k).len(), 32);
        k.submit_bio(bio(&k, 9999, 8));
        assert_eq!(plugged(&k).len(), 1);
        assert_eq!(flushes(&k), vec![(1, 1), (32, 1)]);
        // size and segment limits stop merging
        k.blk_finish_plug(0, true);
        k.blk_start_plug(0);
        // (64 KiB segments: 20 of them stay below max_segments)
        let big = Bio {
            seg_sectors: 128,
            ..bio(&k, 20000, 2560 - 8)
        };
        k.submit_bio(big);
        // this one would exceed max_sectors (2560): no merge, a new
        // request, and the big one (>= 128 KiB) was flushed
        k.submit_bio(bio(&k, 20000 + 2552, 16));
        assert_eq!(plugged(&k), vec![(22552, 16)]);
        assert_eq!(k.last_unplug_depth, 1);
    }

    #[test]
    fn wbt_holds_writes_at_its_limit_and_wakes_by_its_rules() {
        // qd 16, 64 tags: wbt's max_depth 16, wb_normal 8, wb_background 4
        let mut k = machine(&[
            "devices.sda.queue.wbt_lat_usec=75000",
            "devices.sda.queue_depth=16",
            "devices.sda.queue.nr_requests=64",
        ]);
        let w = &k.devs[0].wbt;
        assert_eq!((w.max_depth, w.wb_normal, w.wb_background), (16, 8, 4));
        // no dirtier slept in the last second
        k.wbs[0].dirty_sleep = 0;
        // in the first 100 ms (close_io) and for background writeback the
        // limit is wb_background: the fifth request waits, with a tag free
        let bg = crate::block::blk_wbt::REQ_BACKGROUND;
        for i in 0..4 {
            let b = Bio {
                opf: bg,
                ..bio(&k, i * 100, 8)
            };
            assert!(!k.submit_bio(b), "token {i}");
        }
        let b = Bio {
            opf: bg,
            ..bio(&k, 1000, 8)
        };
        assert!(k.submit_bio(b), "the fifth waits for a wbt token");
        assert_eq!(
            (k.devs[0].wbt.inflight, k.devs[0].wbt.waiters.len()),
            (4, 1)
        );
        assert_eq!(k.devs[0].tags_used, 4, "no tag was taken while waiting");
        // another task's sync write queues behind the sleeper even below
        // its own limit
        let b = Bio {
            opf: crate::block::blk_wbt::REQ_SYNC,
            submitter: 1,
            ..bio(&k, 2000, 8)
        };
        assert!(k.submit_bio(b), "FIFO: sleepers first");
        // the disk has no write cache and no dirtier slept: completions
        // wake at limit wb_normal = 8 once 8 - inflight >= 4 / 2, i.e. at
        // the first completion; the sleepers then get tokens in order
        while k.devs[0].wbt.waiters.len() == 2 {
            assert!(k.step());
        }
        assert!(
            k.devs[0].wbt.waiters.is_empty(),
            "both woken by one completion"
        );
        assert_eq!(k.devs[0].wbt.inflight, 5);
        k.check_invariants().unwrap();
    }

    /// A task asleep for a wbt token submits nothing more until it has it:
    /// its later bios wait behind that request, not in wbt's queue, so a
    /// journal write another task submits meanwhile gets the next token.
    #[test]
    fn a_task_waiting_for_a_wbt_token_holds_its_later_bios() {
        let mut k = machine(&["devices.sda.queue.wbt_lat_usec=75000"]);
        let bg = crate::block::blk_wbt::REQ_BACKGROUND;
        for i in 0..4 {
            assert!(!k.submit_bio(Bio {
                opf: bg,
                ..bio(&k, i * 100, 8)
            }));
        }
        // the flusher (task 0) waits for a token, then "submits" two more
        for i in 0..3 {
            assert!(k.submit_bio(Bio {
                opf: bg,
                ..bio(&k, 1000 + i * 100, 8)
            }));
        }
        assert_eq!(
            k.devs[0].wbt.waiters.len(),
            1,
            "one sleeper, one queued request"
        );
        assert_eq!(k.devs[0].wbt_held, 2);
        // jbd2 (task 1): a sync metadata write joins the queue behind it
        let meta = crate::block::blk_wbt::REQ_SYNC | crate::block::blk_wbt::REQ_META;
        assert!(k.submit_bio(Bio {
            opf: meta,
            submitter: 1,
            ..bio(&k, 5000, 8)
        }));
        assert_eq!(k.devs[0].wbt.waiters.len(), 2);
        k.check_invariants().unwrap();
        // the first completion wakes both sleepers in order, the flusher's
        // request and then the journal's; only then does the flusher go
        // on with its next requests, each taking a token as its limit
        // allows (before, all three sat in wbt's queue ahead of the journal)
        while k.devs[0].wbt_held == 2 {
            assert!(k.step());
        }
        let issued: Vec<u64> = k
            .reqs
            .iter()
            .flatten()
            .filter(|r| r.wbt_tracked)
            .map(|r| r.sector)
            .collect();
        assert!(
            issued.contains(&1000) && issued.contains(&5000),
            "{issued:?}"
        );
        while k.devs[0].wbt_held > 0 || !k.devs[0].wbt.waiters.is_empty() {
            assert!(k.step());
        }
        assert!(k.devs[0].wbt_tails.is_empty());
        k.check_invariants().unwrap();
    }

    /// Fill wbt's limit with background writes and submit one more, which
    /// waits for a token, on a queue (depth 16) with a volatile write cache;
    /// return how many requests had completed when the waiter got its token.
    fn wbt_wake_point(dirtier_slept_recently: bool) -> u64 {
        let mut k = machine(&[
            "devices.sda.queue.wbt_lat_usec=75000",
            "devices.sda.queue_depth=16",
            "devices.sda.queue.nr_requests=64",
        ]);
        k.devs[0].wbt.wc = true;
        if !dirtier_slept_recently {
            k.wbs[0].dirty_sleep = 0; // long ago
        }
        let bg = crate::block::blk_wbt::REQ_BACKGROUND;
        // get_limit: wb_background (4) for background writeback, max_depth
        // (16) for any write while dirtiers are being throttled
        let limit = if dirtier_slept_recently { 16 } else { 4 };
        for i in 0..limit {
            assert!(!k.submit_bio(Bio {
                opf: bg,
                ..bio(&k, i * 100, 8)
            }));
        }
        assert!(k.submit_bio(Bio {
            opf: bg,
            ..bio(&k, 10_000, 8)
        }));
        while !k.devs[0].wbt.waiters.is_empty() {
            assert!(k.step());
        }
        k.check_invariants().unwrap();
        k.devs[0].stat.write_ios
    }

    #[test]
    fn a_write_cache_makes_wbt_waiters_wait_for_an_empty_queue() {
        // no throttled dirtier: the wake limit is 0, so the waiter gets its
        // token only when all 4 in flight completed
        assert_eq!(wbt_wake_point(false), 4);
        // a dirtier slept in balance_dirty_pages within the last second
        // (wb_init sets dirty_sleep, so the first second counts): the wake
        // limit is wb_normal (8), and waking needs 8 - inflight >= 4 / 2,
        // so 10 of the 16 complete first
        assert_eq!(wbt_wake_point(true), 10);
    }

    #[test]
    fn bios_split_at_max_segments() {
        // 4 KiB segments (order-0 pages): 128 segments = 512 KiB pieces,
        // below max_sectors_kb (1280)
        let mut k = machine(&["devices.sda.queue.max_sectors_kb=1280"]);
        k.submit_bio(bio(&k, 0, 4096));
        let sizes: Vec<u64> = k.reqs.iter().flatten().map(|r| r.nr_sectors).collect();
        assert!(sizes.iter().all(|&s| s == 1024), "{sizes:?}");
        assert_eq!(k.devs[0].stat.requests_issued, 4);
    }

    #[test]
    fn a_full_queue_makes_the_submitter_wait() {
        let mut k = machine(&["devices.sda.queue.nr_requests=4"]);
        // no plug: each bio is its own request; 4 tags
        for i in 0..4 {
            assert!(!k.submit_bio(bio(&k, i * 100, 8)), "tag {i} is free");
        }
        assert!(
            k.submit_bio(bio(&k, 1000, 8)),
            "the fifth must wait for a tag"
        );
        assert_eq!(k.devs[0].tag_waiters.len(), 1);
        assert_eq!(k.devs[0].tags_used, 4);
        // completions hand the tag to the waiter
        while k.devs[0].tag_waiters.len() == 1 {
            assert!(k.step());
        }
        assert_eq!(k.devs[0].tags_used, 4);
        assert!(k.check_invariants().is_ok(), "{:?}", k.check_invariants());
    }

    fn waiting(k: &Kernel) -> Vec<(u64, u64)> {
        spans(k, k.devs[0].sched.waiting.iter())
    }

    #[test]
    fn mq_deadline_is_the_disk_default_with_twice_the_depth_in_tags() {
        let k = machine(&[]);
        assert_eq!(k.devs[0].elevator, crate::scenario::Elevator::MqDeadline);
        assert_eq!(k.devs[0].nr_requests, 8); // 2 * min(qd 4, 128)
        let k = machine(&["devices.sda.queue.scheduler=none"]);
        assert_eq!(k.devs[0].nr_requests, 4);
    }

    #[test]
    fn mq_deadline_merges_bios_and_requests_into_waiting_requests() {
        let mut k = machine(&[]);
        // 4 slots busy
        for i in 0..4 {
            k.submit_bio(bio(&k, 100_000 + i * 1000, 8));
        }
        k.submit_bio(bio(&k, 0, 8)); // waits in the scheduler
        k.submit_bio(bio(&k, 8, 8)); // back merge (dd_bio_merge)
        k.submit_bio(bio(&k, 500, 8)); // not adjacent: a second waiting request
        k.submit_bio(bio(&k, 492, 8)); // front merge into it
        assert_eq!(waiting(&k), vec![(0, 16), (492, 16)]);
        assert_eq!(k.devs[0].stat.write_merges, 2);
        // a plugged request that continues a waiting one is appended to it
        // at insertion and its tag is freed
        assert_eq!(k.devs[0].tags_used, 6);
        k.blk_start_plug(0);
        k.submit_bio(bio(&k, 24, 8)); // not adjacent to anything: a plugged request
        k.submit_bio(bio(&k, 16, 8)); // front merge in the plug (tried before the scheduler)
        assert_eq!(plugged(&k), vec![(16, 16)]);
        assert_eq!(k.devs[0].tags_used, 7);
        k.blk_finish_plug(0, true);
        assert_eq!(waiting(&k), vec![(0, 32), (492, 16)]);
        assert_eq!(k.devs[0].tags_used, 6);
        assert_eq!(k.devs[0].stat.write_merges, 4);
        assert!(k.check_invariants().is_ok(), "{:?}", k.check_invariants());
        // without a scheduler nothing merges outside the plug
        let mut k = machine(&[
            "devices.sda.queue.scheduler=none",
            "devices.sda.queue.nr_requests=16",
        ]);
        for i in 0..4 {
            k.submit_bio(bio(&k, 100_000 + i * 1000, 8));
        }
        k.submit_bio(bio(&k, 0, 8));
        k.submit_bio(bio(&k, 8, 8));
        assert_eq!(waiting(&k), vec![(0, 8), (8, 8)]);
    }

    #[test]
    fn mq_deadline_dispatches_in_sector_order_from_the_last_position() {
        let mut k = machine(&[]);
        for i in 0..4 {
            k.submit_bio(bio(&k, 50_000 + i * 1000, 8)); // dispatched; the last ends at 53_008
        }
        for s in [90_000, 10_000, 60_000, 20_000] {
            k.submit_bio(bio(&k, s, 8));
        }
        let mut order = Vec::new();
        while order.len() < 4 {
            assert!(k.step());
            for s in [90_000, 10_000, 60_000, 20_000] {
                if !waiting(&k).iter().any(|w| w.0 == s) && !order.contains(&s) {
                    order.push(s);
                }
            }
        }
        // the sweep continues upward from 53_008, then wraps
        assert_eq!(order, vec![60_000, 90_000, 10_000, 20_000]);
    }
}
