//! The block layer: bios, splitting to the queue limits, per-device IO
//! statistics (/sys/block/DEV/stat), and dispatch to blk-throttle or the
//! device model (block/blk-core.c `submit_bio_noacct`, block/blk-mq.c
//! `blk_mq_submit_bio`, block/blk-merge.c `__bio_split_to_limits`).

pub mod blk_mq;
pub mod blk_throttle;
pub mod blk_wbt;
pub mod mq_deadline;

use crate::drivers::disk::DiskState;
use crate::kernel::{BioId, InodeId, Kernel, Pid};
use crate::scenario::DeviceKind;
use crate::sim::Ns;
use blk_throttle::Throtl;
use serde::Serialize;

/// A write bio of page-cache pages.
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
    /// For a member bio of an md device: the md bio it is part of.
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
}

/// /sys/block/DEV/stat's write half, plus bio counts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DiskStats {
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    /// Sum of request service times (ms in the kernel; ns here).
    pub write_ticks_ns: u64,
    pub in_flight: u64,
    pub bios_submitted: u64,
    pub bios_completed: u64,
    /// Requests created (after splitting); = write_ios + in_flight.
    pub requests_issued: u64,
    /// Completed requests with REQ_META, and of those REQ_SYNC (journal).
    pub meta_write_ios: u64,
    pub meta_write_sectors: u64,
    pub journal_write_ios: u64,
    pub journal_write_sectors: u64,
}

pub enum Backend {
    Throttled(Throtl),
    Disk(DiskState),
    Ssd(crate::drivers::ssd::SsdState),
    /// A rotating disk, served FIFO in dispatch order.
    Hdd(crate::drivers::hdd::HddState),
    /// md RAID0: bio-based, remaps to member devices.
    Raid0 {
        members: Vec<usize>,
        chunk_sectors: u64,
    },
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
    pub stat: DiskStats,
    pub backend: Backend,
    /// wbt's state (`queue/wbt_lat_usec`; off for md devices).
    pub wbt: blk_wbt::RqWb,
    /// A loop device's worker, when its image's backing is modelled.
    pub lo: Option<crate::drivers::loopdev::LoopDev>,
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
            let depth = match &d.kind {
                DeviceKind::Disk { queue_depth, .. } => *queue_depth,
                DeviceKind::Hdd(_) => crate::drivers::hdd::NCQ_DEPTH,
                _ => 0,
            };
            // blk_queue_depth: the driver's depth where it sets one (SCSI
            // disks and SATA SSDs: 32 NCQ slots), else nr_requests
            let wbt_depth = match &d.kind {
                DeviceKind::Disk { queue_depth, .. } => *queue_depth,
                DeviceKind::Hdd(_) | DeviceKind::Ssd(_) => crate::drivers::hdd::NCQ_DEPTH,
                _ => d.queue.nr_requests,
            };
            // QUEUE_FLAG_WC: loop sets it (its file has fsync), disks report
            // their cache
            let wc = match &d.kind {
                DeviceKind::Throttled { .. } => true,
                DeviceKind::Ssd(m) => m.write_cache,
                DeviceKind::Hdd(m) => m.write_cache,
                _ => false,
            };
            let wbt =
                blk_wbt::RqWb::new(d.queue.wbt_lat_usec * 1000, wc, wbt_depth, self.jiffies());
            let dev_id = self.devs.len();
            // the loop worker of an image on tmpfs (an unbound kworker)
            let lo = match &d.kind {
                DeviceKind::Throttled {
                    backing: crate::scenario::LoopBacking::Tmpfs,
                    ..
                } => {
                    let comm = format!("kworker/u{}:0-loop{}", 2 * self.cpus.len(), d.minor);
                    let w = self.new_task(comm, crate::kernel::Body::Loop(dev_id), None);
                    Some(crate::drivers::loopdev::LoopDev::new(w))
                }
                _ => None,
            };
            let backend = match d.kind {
                DeviceKind::Throttled { write_bps, .. } => {
                    let comm = format!("kworker/{}:1H", self.devs.len());
                    let disp = self.new_task(comm, crate::kernel::Body::Kworker, None);
                    // 6.18's blk-throttle with the 6.x policy, the older
                    // one with the 3.2 and legacy policies
                    let v6_18 = self.sc.features.blk_throttle_v6_18;
                    Backend::Throttled(Throtl::new(write_bps, disp, self.hz(), v6_18))
                }
                DeviceKind::Disk {
                    bandwidth,
                    iops,
                    latency,
                    ..
                } => Backend::Disk(DiskState::new(bandwidth, iops, latency)),
                DeviceKind::Ssd(m) => Backend::Ssd(crate::drivers::ssd::SsdState::new(m)),
                DeviceKind::Hdd(m) => Backend::Hdd(crate::drivers::hdd::HddState::new(m)),
                DeviceKind::Raid0 {
                    ref members,
                    chunk_sectors,
                } => Backend::Raid0 {
                    members: members
                        .iter()
                        .map(|m| {
                            self.sc
                                .devices
                                .iter()
                                .position(|d| &d.name == m)
                                .expect("validated")
                        })
                        .collect(),
                    chunk_sectors,
                },
            };
            self.devs.push(BlockDev {
                name: d.name.clone(),
                major: d.major,
                minor: d.minor,
                max_sectors: d.queue.max_sectors_kb * 2,
                max_segments: d.queue.max_segments,
                nr_requests: d.queue.nr_requests,
                elevator: d.queue.scheduler,
                sched: crate::block::mq_deadline::SchedQueue {
                    depth,
                    ..Default::default()
                },
                tags_used: 0,
                tag_waiters: Default::default(),
                stat: DiskStats::default(),
                backend,
                wbt,
                lo,
            });
        }
    }

    /// `submit_bio`: blk-throttle first (it sits in front of the queue and
    /// holds bios over budget), then the request queue.
    /// Returns true if the submitter must sleep for a tag.
    pub fn submit_bio(&mut self, bio: Bio) -> bool {
        let dev = bio.dev;
        let pid = bio.submitter;
        self.devs[dev].stat.bios_submitted += 1;
        let id = self.alloc_bio(bio);
        match &self.devs[dev].backend {
            Backend::Throttled(_) => self.blk_throtl_bio(dev, id, pid),
            Backend::Raid0 {
                members,
                chunk_sectors,
            } => {
                // md raid0: split at chunk boundaries, remap, and submit the
                // member bios in the caller's context (and plug)
                let (ndevs, chunk) = (members.len() as u32, *chunk_sectors);
                let (sector, nr, seg) = {
                    let b = self.bios[id].as_ref().expect("bio");
                    (b.sector, b.nr_sectors, b.seg_sectors)
                };
                let pieces = || crate::drivers::raid0::raid0_pieces(chunk, ndevs, sector, nr);
                self.bios[id].as_mut().expect("bio").remaining = pieces().count() as u32;
                self.devs[dev].stat.in_flight += 1;
                self.devs[dev].stat.requests_issued += 1;
                let mut wait = false;
                for (m, msector, mnr) in pieces() {
                    let Backend::Raid0 { members, .. } = &self.devs[dev].backend else {
                        unreachable!("raid0")
                    };
                    let mdev = members[m as usize];
                    let child = Bio {
                        dev: mdev,
                        sector: msector,
                        nr_sectors: mnr,
                        seg_sectors: seg,
                        parent: Some(id),
                        remaining: 0,
                        ..self.bios[id].clone().expect("bio")
                    };
                    self.devs[mdev].stat.bios_submitted += 1;
                    let cid = self.alloc_bio(child);
                    wait |= self.blk_mq_submit_bio(Some(pid), cid);
                }
                wait
            }
            _ => self.blk_mq_submit_bio(Some(pid), id),
        }
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
    /// a member bio of an md device, one piece of its parent done).
    pub fn bio_endio(&mut self, id: BioId) {
        let b = self.free_bio(id);
        self.devs[b.dev].stat.bios_completed += 1;
        if let Some(parent) = b.parent {
            let p = self.bios[parent].as_mut().expect("parent bio");
            p.remaining -= 1;
            if p.remaining == 0 {
                let dev = p.dev;
                let sectors = p.nr_sectors;
                let st = &mut self.devs[dev].stat;
                st.in_flight -= 1;
                st.write_ios += 1;
                st.write_sectors += sectors;
                self.bio_endio(parent);
            }
            return;
        }
        self.fs_bio_endio(&b);
    }
}
