//! The block layer: bios, splitting to the queue limits, per-device IO
//! statistics (/sys/block/DEV/stat), and dispatch to blk-throttle or the
//! device model (block/blk-core.c `submit_bio_noacct`, block/blk-mq.c
//! `blk_mq_submit_bio`, block/blk-merge.c `__bio_split_to_limits`).

pub mod bfq;
pub mod blk_iocost;
pub mod blk_mq;
pub mod blk_throttle;
pub mod blk_wbt;
pub mod cfq;
pub mod mq_deadline;

use crate::drivers::Driver;
use crate::kernel::{BioId, DevId, InodeId, Kernel, Pid};
use crate::sim::Ns;
use blk_throttle::Throtl;
use serde::Serialize;

/// A bio: page-cache pages being written back or read, a direct IO, or a
/// filesystem's metadata (`owner`); `opf & REQ_READ` marks a read.
#[derive(Clone, Debug)]
pub struct Bio {
    pub dev: usize,
    pub sector: u64,
    pub nr_sectors: u64,
    pub ino: InodeId,
    pub page_start: u64,
    pub npages: u64,
    pub submitter: Pid,
    pub submit_time: Ns,
    /// Sectors per segment (a page-cache folio, at most max_segment_size).
    pub seg_sectors: u64,
    /// For a bio a stacked driver made (md's member bios): the bio on the
    /// stacked device it is part of; the driver hears of its completion.
    pub parent: Option<BioId>,
    /// Pieces of this bio (after splitting) still in flight.
    pub remaining: u32,
    /// `REQ_SYNC` / `REQ_BACKGROUND` from the writeback control
    /// (`wbc_to_write_flags`), `REQ_META`; wbt picks its limit from them.
    pub opf: u8,
    /// Who is told when the bio completes: page-cache writeback, or a
    /// filesystem's metadata machinery (no page-cache pages).
    pub owner: BioOwner,
    /// The ext4 io_end this bio belongs to (dioread_nolock: its pages'
    /// writeback ends with the io_end's, after the extent conversion).
    pub io_end: Option<crate::fs::ext4::IoEndId>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BioOwner {
    /// Page-cache pages of `ino` (end_page_writeback).
    Page,
    /// A jbd2 journal write of superblock N.
    Jbd2(u32),
    /// An XFS log buffer write, and an xfsaild in-place write.
    XfsLog(u32),
    XfsAil(u32),
    /// A reclaimer's synchronous inode cluster write (≤ 5.8 XFS inode
    /// reclaim, `xfs_bwrite`): its submitter sleeps until it is done.
    XfsReclaim(u32),
    /// A synchronous metadata read of superblock N (an inode cluster read
    /// by a lookup that missed the cache): its submitter sleeps on it.
    MetaRead(u32),
    /// A page-cache read of `ino`'s pages `page_start..+npages` (readahead
    /// or a read miss): `filemap_read_end_io` marks them uptodate and wakes
    /// the readers waiting on them.
    PageRead,
    /// A direct IO (O_DIRECT read or write) of task `pid`; `tag` is the
    /// submitter's own number for the IO (`dio_bio_end_io`).
    Dio {
        pid: u32,
        tag: u32,
    },
    /// A bio a stacked driver issues on its own account, not as a piece of
    /// an upper bio (bcache's writeback reads and writes, cache fills):
    /// device `dev`'s driver hears of its completion with its `tag`
    /// (`Kernel::driver_bio_done`).
    Driver {
        dev: u32,
        tag: u32,
    },
}

/// /sys/block/DEV/stat (`part_stat_show`: both halves, `in_flight`,
/// `io_ticks` and `time_in_queue`), plus bio counts. Times are ns (the
/// kernel prints ms).
#[derive(Clone, Debug, Default, Serialize)]
pub struct DiskStats {
    pub read_ios: u64,
    pub read_merges: u64,
    pub read_sectors: u64,
    /// Sum of read requests' times from allocation to completion
    /// (`nsecs[STAT_READ]`).
    pub read_ticks_ns: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    /// Sum of request service times (ms in the kernel; ns here).
    pub write_ticks_ns: u64,
    pub in_flight: u64,
    /// Time with at least one request in flight (`update_io_ticks`: the
    /// time since the last start or completion is added when requests
    /// were in flight); fio's `disk_util` is io_ticks / elapsed.
    pub io_ticks_ns: u64,
    /// When the requests in flight last rose from none (`io_ticks_ns`
    /// has the busy time up to then).
    pub io_stamp: Ns,
    pub bios_submitted: u64,
    pub bios_completed: u64,
    /// Requests created (after splitting); = read_ios + write_ios +
    /// in_flight.
    pub requests_issued: u64,
    /// Completed requests with REQ_META, and of those REQ_SYNC (journal).
    pub meta_write_ios: u64,
    pub meta_write_sectors: u64,
    pub journal_write_ios: u64,
    pub journal_write_sectors: u64,
}

impl DiskStats {
    /// A request (or md bio) is accounted in flight (`blk_account_io_start`).
    /// `update_io_ticks` adds the time since its last call when requests
    /// were in flight: the same sum as the busy periods', which are added
    /// up here when they end.
    #[inline]
    pub fn io_start(&mut self, now: Ns) {
        if self.in_flight == 0 {
            self.io_stamp = now;
        }
        self.in_flight += 1;
    }

    /// A request leaves the in-flight count without completing (merged
    /// away into another).
    #[inline]
    pub fn io_gone(&mut self, now: Ns) {
        self.in_flight -= 1;
        if self.in_flight == 0 {
            self.io_ticks_ns += now - self.io_stamp;
        }
    }

    /// A request of `sectors` completed after `ticks` ns
    /// (`blk_account_io_done`, `blk_account_io_completion`), in the half
    /// of its direction.
    #[inline]
    pub fn io_done(&mut self, now: Ns, read: bool, sectors: u64, ticks: Ns) {
        self.io_gone(now);
        if read {
            self.read_ios += 1;
            self.read_sectors += sectors;
            self.read_ticks_ns += ticks;
        } else {
            self.write_ios += 1;
            self.write_sectors += sectors;
            self.write_ticks_ns += ticks;
        }
    }

    /// `io_ticks_ns` brought up to `now` (/sys/block/DEV/stat's reader
    /// calls `update_io_ticks` too).
    pub fn io_ticks_at(&self, now: Ns) -> u64 {
        self.io_ticks_ns
            + if self.in_flight > 0 {
                now - self.io_stamp
            } else {
                0
            }
    }

    /// The device's line of `/proc/diskstats` at `now` (`diskstats_show`,
    /// 6.x's 17 counters): ios, merges, sectors and ms for reads, then for
    /// writes, the requests in flight, `io_ticks` and `time_in_queue` in
    /// ms (the read and write times summed, as 5.x+ print it), then
    /// discards and flushes, which are not modelled (0). `io_ticks` counts
    /// ns here, so it is exact where the kernel's has jiffy steps.
    pub fn diskstats_line(&self, major: u32, minor: u32, name: &str, now: Ns) -> String {
        let ms = |ns: u64| ns / 1_000_000;
        format!(
            "{major:4} {minor:7} {name} {} {} {} {} {} {} {} {} {} {} {} 0 0 0 0 0 0",
            self.read_ios,
            self.read_merges,
            self.read_sectors,
            ms(self.read_ticks_ns),
            self.write_ios,
            self.write_merges,
            self.write_sectors,
            ms(self.write_ticks_ns),
            self.in_flight,
            ms(self.io_ticks_at(now)),
            ms(self.read_ticks_ns + self.write_ticks_ns),
        )
    }

    /// Requests completed, both directions.
    pub fn ios(&self) -> u64 {
        self.read_ios + self.write_ios
    }

    /// `time_in_queue`: since 5.x the sum of the directions' ticks.
    pub fn time_in_queue_ns(&self) -> u64 {
        self.read_ticks_ns + self.write_ticks_ns
    }

    /// A merge in `read`'s direction.
    #[inline]
    pub fn merged(&mut self, read: bool) {
        if read {
            self.read_merges += 1;
        } else {
            self.write_merges += 1;
        }
    }
}

/// Whether request flags `opf` are a read's (`op_is_write` false).
#[inline]
pub fn op_is_read(opf: u8) -> bool {
    opf & blk_wbt::REQ_READ != 0
}

pub struct BlockDev {
    pub name: String,
    /// queue/scheduler: with mq-deadline, requests waiting for the driver
    /// take bio and insert merges and are dispatched in sector order.
    pub elevator: crate::scenario::Elevator,
    /// The scheduler's (or hardware queue's) waiting requests and the
    /// driver's slots.
    pub sched: crate::block::mq_deadline::SchedQueue,
    pub major: u32,
    pub minor: u32,
    /// queue/max_sectors_kb in sectors.
    pub max_sectors: u64,
    /// queue/max_segments and queue/nr_requests.
    pub max_segments: u32,
    pub nr_requests: u32,
    pub tags_used: u32,
    /// Requests waiting for a tag, oldest first.
    pub tag_waiters: std::collections::VecDeque<crate::block::blk_mq::ReqId>,
    /// Requests held behind one of their submitter's that waits for its
    /// wbt token (`Request::wbt_next`): submitted, not yet in any queue.
    pub wbt_held: u64,
    /// Each task sleeping for a wbt token here (`rq_qos_wait`) and its last
    /// request: the bios it submits meanwhile wait behind that one.
    pub wbt_tails: Vec<(crate::kernel::Pid, u32)>,
    pub stat: DiskStats,
    /// The driver's state (drivers/).
    pub driver: Driver,
    /// blk-throttle's state, when the queue has a limit
    /// (`throttle.write_bps`, `throttle.read_bps`).
    pub throtl: Option<Throtl>,
    /// io.cost on this queue (`io.cost.qos` enable=1).
    pub iocost: Option<crate::block::blk_iocost::Ioc>,
    /// wbt's state (`queue/wbt_lat_usec`; off for bio-based devices).
    pub wbt: blk_wbt::RqWb,
    /// Device time by the cgroup whose IO it served (ns, index: cgroup),
    /// from the end of the warmup: the interval from a request's issue or
    /// the previous completion, whichever is later, to its completion.
    /// Kept only with cgroups (the isolation report's disk-time fractions).
    pub cg_time: Vec<Ns>,
    /// The last completion's time.
    pub last_done: Ns,
}

impl BlockDev {
    /// `bdi_dev_name`: "MAJOR:MINOR".
    pub fn bdi_name(&self) -> String {
        format!("{}:{}", self.major, self.minor)
    }
}

impl Kernel {
    pub fn block_init(&mut self) {
        for d in self.sc.devices.clone() {
            let q = d.kind.queue_info();
            // blk_queue_depth: the driver's depth where it sets one, else
            // nr_requests
            let wbt_depth = q.queue_depth.unwrap_or(d.queue.nr_requests);
            let wbt = blk_wbt::RqWb::new(
                d.queue.wbt_lat_usec * 1000,
                q.write_cache,
                wbt_depth,
                self.jiffies(),
            );
            let dev_id = self.devs.len();
            let driver = self.driver_init(dev_id, &d);
            // the groups' weights (index 0: the root) for BFQ and CFQ
            let bfq_weights: Vec<u64> = std::iter::once(100)
                .chain(self.sc.cgroups.iter().map(|c| u64::from(c.bfq_weight)))
                .collect();
            let cfq_weights: Vec<u64> = std::iter::once(crate::block::cfq::WEIGHT_DEFAULT)
                .chain(self.sc.cgroups.iter().map(|c| u64::from(c.blkio_weight)))
                .collect();
            let jiffy = crate::sim::NSEC_PER_SEC / self.hz();
            // blk_throtl_init: the rule's dispatch work runs in a kworker
            let t = d.throttle;
            // the cgroups' io.max lines for this device
            let cg_rules: Vec<(usize, crate::kernel::cgroup::IoMax)> = self
                .sc
                .cgroups
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    c.io_max
                        .iter()
                        .find(|(dv, _)| *dv == dev_id)
                        .map(|(_, m)| (i + 1, *m))
                })
                .collect();
            let has_rule = t.write_bps.is_some() || t.read_bps.is_some() || !cg_rules.is_empty();
            let throtl = has_rule.then(|| {
                let comm = format!("kworker/{dev_id}:1H");
                let disp = self.new_task(comm, crate::kernel::Body::Kworker, None);
                // 6.18's blk-throttle with the 6.x policy, the older
                // one with the 3.2 and legacy policies
                let v6_18 = self.sc.features.blk_throttle_v6_18;
                let mut th = Throtl::new_rw(t.read_bps, t.write_bps, disp, self.hz(), v6_18);
                for (cg, m) in &cg_rules {
                    th.add_cgroup(*cg, m, self.hz());
                }
                th
            });
            self.devs.push(BlockDev {
                name: d.name.clone(),
                major: d.major,
                minor: d.minor,
                max_sectors: d.queue.max_sectors_kb * 2,
                max_segments: d.queue.max_segments,
                nr_requests: d.queue.nr_requests,
                elevator: d.queue.scheduler,
                sched: crate::block::mq_deadline::SchedQueue {
                    depth: q.slots,
                    tun: d.queue.iosched,
                    bfq: (d.queue.scheduler == crate::scenario::Elevator::Bfq)
                        .then(|| Box::new(crate::block::bfq::Bfq::new(d.queue.bfq, &bfq_weights))),
                    cfq: (d.queue.scheduler == crate::scenario::Elevator::Cfq).then(|| {
                        Box::new(crate::block::cfq::Cfq::new(
                            d.queue.cfq,
                            &cfq_weights,
                            jiffy,
                        ))
                    }),
                    ..Default::default()
                },
                cg_time: Vec::new(),
                last_done: 0,
                tags_used: 0,
                tag_waiters: Default::default(),
                wbt_held: 0,
                wbt_tails: Vec::new(),
                stat: DiskStats::default(),
                driver,
                throtl,
                wbt,
                iocost: d.queue.iocost.map(|c| {
                    let w: Vec<u64> = std::iter::once(100)
                        .chain(self.sc.cgroups.iter().map(|c| u64::from(c.io_weight)))
                        .collect();
                    crate::block::blk_iocost::Ioc::new(c, &w)
                }),
            });
        }
    }

    /// `submit_bio`: account the bio and pass it on (`submit_bio_noacct`).
    /// Returns true if the submitter must sleep for a tag.
    pub fn submit_bio(&mut self, bio: Bio) -> bool {
        let dev = bio.dev;
        let pid = bio.submitter;
        self.devs[dev].stat.bios_submitted += 1;
        let id = self.alloc_bio(bio);
        self.submit_bio_noacct(dev, id, pid)
    }

    /// `submit_bio_noacct`: blk-throttle first, where the queue has a rule
    /// (it sits in front of the driver and holds bios over budget), then
    /// the driver (`__submit_bio`: a bio-based driver's own, or blk-mq).
    /// Stacked drivers submit their lower bios here too. Returns true if
    /// `pid` must sleep for a tag.
    #[inline]
    pub fn submit_bio_noacct(&mut self, dev: DevId, id: BioId, pid: Pid) -> bool {
        if self.cg.enabled {
            self.blkcg_bio_start(dev, id);
        }
        if self.devs[dev].throtl.is_some() {
            return self.blk_throtl_bio(dev, id, pid);
        }
        self.driver_submit_bio(dev, id, pid)
    }

    /// The cgroup a bio is charged to (`bio_blkcg`): the inode owner's for
    /// page-cache writeback (`wbc_init_bio` with the wb's blkcg), the
    /// issuer's for reads and direct IO, the root for the filesystems'
    /// metadata and journal (kernel threads); a stacked driver's member
    /// bios inherit their parent's.
    pub fn bio_blkcg(&self, id: BioId) -> usize {
        if !self.cg.enabled {
            return 0;
        }
        let b = self.bios[id].as_ref().expect("bio");
        if let Some(p) = b.parent {
            return self.bio_blkcg(p);
        }
        match b.owner {
            BioOwner::Page => self.wbs[self.inodes[b.ino].wb].memcg,
            BioOwner::PageRead | BioOwner::Dio { .. } => self.task_cgroup(b.submitter),
            _ => 0,
        }
    }

    /// The cgroup that dirtied a writeback bio's pages (the inode's
    /// record of its first dirtier; without cgroup writeback the wb says
    /// nothing), else the bio's blkcg: whose IO the device served.
    pub fn bio_dirtier(&self, id: BioId) -> usize {
        if !self.cg.enabled {
            return 0;
        }
        let b = self.bios[id].as_ref().expect("bio");
        if let Some(p) = b.parent {
            return self.bio_dirtier(p);
        }
        if b.owner == BioOwner::Page && !self.sc.features.cgroup_writeback {
            return self.cg.inodes.get(&b.ino).map_or(0, |i| i.dirtier);
        }
        self.bio_blkcg(id)
    }

    /// `blk_cgroup_bio_start`: count the bio in its cgroup's `io.stat`
    /// for this device.
    #[inline(never)]
    fn blkcg_bio_start(&mut self, dev: DevId, id: BioId) {
        let cg = self.bio_blkcg(id);
        let b = self.bios[id].as_ref().expect("bio");
        let (bytes, read) = (b.nr_sectors * 512, op_is_read(b.opf));
        self.blkcg_account_io(cg, dev, bytes, read);
    }

    /// Submit a filesystem metadata write of `sectors` at `sector` from
    /// kernel thread `task` (a journal, log or buffer write: no page-cache
    /// pages, 4 KiB buffers as segments); `owner` hears of its completion.
    /// The caller holds `task`'s plug. Tag and wbt waits of kernel threads
    /// are not modelled: their requests wait in the queues.
    pub fn submit_meta_bio(
        &mut self,
        dev: usize,
        task: Pid,
        sector: u64,
        sectors: u64,
        opf: u8,
        owner: BioOwner,
    ) {
        let bio = Bio {
            dev,
            sector,
            nr_sectors: sectors,
            ino: 0,
            page_start: 0,
            npages: 0,
            submitter: task,
            submit_time: self.now(),
            seg_sectors: 8,
            parent: None,
            remaining: 0,
            opf,
            owner,
            io_end: None,
        };
        let _ = self.submit_bio(bio);
    }

    /// `bio_endio` → end_page_writeback for every page of the bio (or, for
    /// a bio a stacked driver made, that driver's end_io).
    pub fn bio_endio(&mut self, id: BioId) {
        let b = self.free_bio(id);
        self.devs[b.dev].stat.bios_completed += 1;
        if let Some(parent) = b.parent {
            return self.driver_end_child_bio(parent);
        }
        self.fs_bio_endio(&b);
    }
}
