//! The block layer: bios, splitting to the queue limits, per-device IO
//! statistics (/sys/block/DEV/stat), and dispatch to blk-throttle or the
//! device model (block/blk-core.c `submit_bio_noacct`, block/blk-mq.c
//! `blk_mq_submit_bio`, block/blk-merge.c `__bio_split_to_limits`).

pub mod blk_mq;
pub mod blk_throttle;

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
    /// Pieces of this bio (after splitting) still in flight.
    pub remaining: u32,
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
}

pub enum Backend {
    Throttled(Throtl),
    Disk(DiskState),
}

pub struct BlockDev {
    pub name: String,
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
}

impl Kernel {
    pub fn block_init(&mut self) {
        for d in self.sc.devices.clone() {
            let backend = match d.kind {
                DeviceKind::Throttled { write_bps, .. } => {
                    Backend::Throttled(Throtl::new(write_bps))
                }
                DeviceKind::Disk {
                    bandwidth,
                    iops,
                    latency,
                    queue_depth,
                } => Backend::Disk(DiskState::new(bandwidth, iops, latency, queue_depth)),
            };
            self.devs.push(BlockDev {
                name: d.name.clone(),
                major: d.major,
                minor: d.minor,
                max_sectors: d.queue.max_sectors_kb * 2,
                max_segments: d.queue.max_segments,
                nr_requests: d.queue.nr_requests,
                tags_used: 0,
                tag_waiters: Default::default(),
                stat: DiskStats::default(),
                backend,
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
        if let Backend::Throttled(_) = self.devs[dev].backend {
            self.blk_throtl_bio(dev, id);
            false
        } else {
            self.blk_mq_submit_bio(Some(pid), id)
        }
    }

    /// `bio_endio` → end_page_writeback for every page of the bio.
    pub fn bio_endio(&mut self, id: BioId) {
        let b = self.free_bio(id);
        self.devs[b.dev].stat.bios_completed += 1;
        self.end_writeback_range(b.ino, b.npages);
    }
}
