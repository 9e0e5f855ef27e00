//! Block drivers, one file each:
//!
//! | type        | file         | kind                                          |
//! |-------------|--------------|-----------------------------------------------|
//! | `loop`      | `loopdev.rs` | request-based: a loop device over an image    |
//! | `throttled` | `loopdev.rs` | shorthand: `loop` plus a blk-throttle cap     |
//! | `disk`      | `disk.rs`    | request-based: bandwidth, IOPS, latency       |
//! | `ssd`       | `ssd.rs`     | request-based: channels, write cache          |
//! | `hdd`       | `hdd.rs`     | request-based: seek, rotation, zoned media    |
//! | `raid0`     | `raid0.rs`   | bio-based (stacked): md striping              |
//! | `bcache`    | `bcache/`    | bio-based (stacked): an SSD cache over a disk |
//!
//! A driver owns its scenario keys (their defaults and validation), its
//! queue's defaults and device numbers ([`QueueInfo`]), and its part of
//! the IO path: a request-based driver takes requests from blk-mq (its
//! `queue_rq`, as `blk_mq_ops.queue_rq`) and completes them with
//! `request_done`; a bio-based driver takes bios (its `submit_bio`, as
//! `block_device_operations.submit_bio`), remaps them to its lower
//! devices, and completes the original when its pieces are done.
//!
//! This file only dispatches. Each enum below has one variant per driver
//! and each `match` one arm per driver, delegating to the driver's own
//! functions: a `match` on the per-request path, no dynamic dispatch.
//! Adding a driver is its file plus a line in `DRIVER_TYPES`,
//! [`DeviceKind`], [`Driver`] and each `match` here that has no catch-all
//! arm.

pub mod bcache;
pub mod disk;
pub mod hdd;
pub mod loopdev;
pub mod raid0;
pub mod ssd;
pub mod write_cache;

use crate::block::blk_mq::ReqId;
use crate::block::blk_throttle::ThrotlConf;
use crate::kernel::{Action, BioId, DevId, Kernel, Pid};
use crate::scenario::raw::Entry;
use crate::scenario::{DevSection, Device, Elevator, Origin, Reader, ScenarioError};

/// `SCSI_DISK0_MAJOR`: the sd driver's devices (`disk`, `ssd` and `hdd`
/// alike: SCSI and SATA disks) are numbered together, 8:0, 8:16, ...
pub const SCSI_DISK0_MAJOR: u32 = 8;
/// Minors per sd device (`SD_MINORS`: the disk and 15 partitions).
pub const SD_MINORS: u32 = 16;

/// `devices.NAME.size` when the driver has no default of its own.
pub const DEFAULT_SIZE: u64 = 1 << 40;

/// Claim device `name` as a member of a stacked device (md's members,
/// bcache's cache and backing device): it must be a defined request-based
/// disk that no other stacked device has claimed. `who` names the role in
/// the error ("raid0 member", "bcache cache").
pub(crate) fn claim_member(
    devices: &[Device],
    used: &mut [bool],
    origin: &Origin,
    who: &str,
    name: &str,
) -> Result<usize, ScenarioError> {
    match devices.iter().position(|d| d.name == name) {
        Some(j)
            if matches!(
                devices[j].kind,
                DeviceKind::Ssd(_) | DeviceKind::Hdd(_) | DeviceKind::Disk(_)
            ) && !used[j] =>
        {
            used[j] = true;
            Ok(j)
        }
        Some(_) => crate::scenario::raw::err(
            origin,
            format!("{who} `{name}` must be an unused `ssd`, `hdd` or `disk` device"),
        ),
        None => {
            crate::scenario::raw::err(origin, format!("{who} `{name}` is not a defined device"))
        }
    }
}

/// A device type a scenario can name (`devices.NAME.type`): its name, its
/// own keys (under `devices.NAME.`; the keys every device takes are the
/// scenario's) and the parser of those keys.
pub(crate) struct DriverType {
    pub name: &'static str,
    pub keys: &'static [&'static str],
    /// Reads the driver's keys: the device's configuration, and the
    /// blk-throttle rule the type implies (`throttled`), if any.
    pub parse: fn(&mut Reader, &DevSection) -> Result<Parsed, ScenarioError>,
}

/// What a driver's parser returns.
pub(crate) type Parsed = (DeviceKind, Option<ThrotlConf>);

/// Every device type, in the order the scenario error messages list them.
pub(crate) const DRIVER_TYPES: &[DriverType] = &[
    loopdev::THROTTLED,
    loopdev::LOOP,
    disk::TYPE,
    ssd::TYPE,
    hdd::TYPE,
    raid0::TYPE,
    bcache::TYPE,
];

/// A device's driver and its configuration, as read from the scenario.
#[derive(Clone, Debug)]
pub enum DeviceKind {
    /// A loop device (drivers/loopdev.rs).
    Loop(loopdev::LoopConf),
    /// A simple disk (drivers/disk.rs): bandwidth, IOPS, completion
    /// latency, queue depth.
    Disk(disk::DiskConf),
    /// An SSD (drivers/ssd.rs): parallel channels, per-IO cost, bandwidth
    /// and a volatile write cache.
    Ssd(ssd::SsdModel),
    /// A rotating disk (drivers/hdd.rs): seek curve, rotational latency,
    /// zoned media rate, FIFO service and a volatile write cache. Its
    /// `capacity_sectors` is the device's `size` in sectors.
    Hdd(hdd::HddModel),
    /// md RAID0 over member devices (drivers/raid0.rs).
    Raid0(raid0::Raid0Conf),
    /// bcache: a cache device over a backing device (drivers/bcache/).
    Bcache(Box<bcache::BcacheConf>),
}

/// What a driver sets up for its queue (the `queue_limits` and tag set a
/// driver's probe fills in) and its device numbers.
#[derive(Clone, Copy, Debug)]
pub struct QueueInfo {
    /// The driver's major (`register_blkdev`).
    pub major: u32,
    /// Minors per device: the N-th device of this major is MAJOR:N*step.
    pub minor_step: u32,
    /// `queue/max_hw_sectors_kb`.
    pub max_hw_sectors_kb: u64,
    /// The elevator the kernel picks (`elevator_get_default`: mq-deadline
    /// for a single hardware queue, none for loop, multi-queue and md).
    pub scheduler: Elevator,
    /// `queue/nr_requests` without a scheduler (the tag set's depth), and
    /// with mq-deadline (`blk_mq_init_sched`: 2 × min(depth, 128)).
    pub nr_requests: u32,
    pub nr_requests_sched: u32,
    /// Requests the driver holds at once; more wait in the scheduler
    /// (block/mq_deadline.rs). 0: it takes every request at once.
    pub slots: u32,
    /// `blk_queue_depth` where the driver sets one (wbt sizes its limits
    /// from it); `None`: `nr_requests`.
    pub queue_depth: Option<u32>,
    /// `queue/rotational` (wbt's default latency follows it).
    pub rotational: bool,
    /// `QUEUE_FLAG_WC`: a volatile write cache.
    pub write_cache: bool,
    /// The driver takes bios (`submit_bio`), not requests: no tags, no
    /// scheduler, no wbt.
    pub bio_based: bool,
}

impl QueueInfo {
    /// A bio-based stacking driver's queue (md, bcache): `submit_bio` with
    /// no tags, scheduler or wbt of its own; the block layer's default
    /// limits; not rotational, no write cache of its own.
    pub fn bio_based(major: u32, minor_step: u32) -> QueueInfo {
        QueueInfo {
            major,
            minor_step,
            max_hw_sectors_kb: 32767,
            scheduler: Elevator::None,
            nr_requests: 32,
            nr_requests_sched: 32,
            slots: 0,
            queue_depth: None,
            rotational: false,
            write_cache: false,
            bio_based: true,
        }
    }
}

impl DeviceKind {
    /// The driver's name in messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            DeviceKind::Loop(_) => "loop",
            DeviceKind::Disk(_) => "disk",
            DeviceKind::Ssd(_) => "ssd",
            DeviceKind::Hdd(_) => "hdd",
            DeviceKind::Raid0(_) => "raid0",
            DeviceKind::Bcache(_) => "bcache",
        }
    }

    /// The driver's queue defaults and device numbers.
    pub fn queue_info(&self) -> QueueInfo {
        match self {
            DeviceKind::Loop(c) => loopdev::queue_info(c),
            DeviceKind::Disk(c) => disk::queue_info(c),
            DeviceKind::Ssd(m) => ssd::queue_info(m),
            DeviceKind::Hdd(m) => hdd::queue_info(m),
            DeviceKind::Raid0(c) => raid0::queue_info(c),
            DeviceKind::Bcache(c) => bcache::queue_info(c),
        }
    }

    /// `devices.NAME.size` (`set`, if given): the capacity in bytes, which
    /// a driver that models positions takes into its configuration.
    pub(crate) fn set_size(&mut self, set: Option<(u64, Entry)>) -> Result<u64, ScenarioError> {
        match self {
            DeviceKind::Hdd(m) => hdd::set_size(m, set),
            _ => Ok(set.map(|x| x.0).unwrap_or(DEFAULT_SIZE)),
        }
    }

    /// A stacked driver claims its lower devices (`devices`, by name): each
    /// must exist, be of a type it stacks on, and not be `used` by a
    /// filesystem or another stacked device. `origin` is the device's table.
    pub(crate) fn claim_lower(
        &self,
        devices: &[Device],
        used: &mut [bool],
        origin: &Origin,
    ) -> Result<(), ScenarioError> {
        match self {
            DeviceKind::Raid0(c) => raid0::claim_members(c, devices, used, origin),
            DeviceKind::Bcache(c) => bcache::claim_members(c, devices, used, origin),
            _ => Ok(()),
        }
    }
}

/// A device's driver state.
pub enum Driver {
    Loop(loopdev::Loop),
    Disk(disk::DiskState),
    Ssd(ssd::SsdState),
    Hdd(hdd::HddState),
    Raid0(raid0::Raid0State),
    Bcache(Box<bcache::BcacheState>),
}

impl Kernel {
    /// The driver's probe for device `dev` (scenario device `d`): its
    /// state, and any kernel thread it runs (created here, in device order).
    pub fn driver_init(&mut self, dev: DevId, d: &Device) -> Driver {
        match &d.kind {
            DeviceKind::Loop(c) => Driver::Loop(self.loop_add(dev, d, c)),
            DeviceKind::Disk(c) => Driver::Disk(disk::DiskState::new(c)),
            DeviceKind::Ssd(m) => Driver::Ssd(ssd::SsdState::new(m.clone())),
            DeviceKind::Hdd(m) => Driver::Hdd(hdd::HddState::new(m.clone())),
            DeviceKind::Raid0(c) => Driver::Raid0(self.raid0_run(c)),
            DeviceKind::Bcache(c) => Driver::Bcache(Box::new(self.bcache_register(dev, d, c))),
        }
    }

    /// `__submit_bio`: a bio-based driver's `submit_bio`, or blk-mq's for a
    /// request-based one. The bio passed blk-throttle; `pid` submits it
    /// (its plug). Returns true if the submitter must sleep for a tag.
    #[inline]
    pub fn driver_submit_bio(&mut self, dev: DevId, id: BioId, pid: Pid) -> bool {
        match self.devs[dev].driver {
            Driver::Raid0(_) => self.raid0_submit_bio(dev, id, pid),
            Driver::Bcache(_) => self.bcache_submit_bio(dev, id, pid),
            Driver::Loop(_) | Driver::Disk(_) | Driver::Ssd(_) | Driver::Hdd(_) => {
                // rq_qos_throttle: io.cost may hold the bio
                if self.devs[dev].iocost.is_some() && self.ioc_rqos_throttle(dev, id) {
                    return false;
                }
                self.blk_mq_submit_bio(Some(pid), id)
            }
        }
    }

    /// The driver's `queue_rq`: the device takes a request. It completes it
    /// with `request_done`, now, from its own thread, or at a time it
    /// schedules (`Ev::ReqDone`).
    #[inline]
    pub fn driver_queue_rq(&mut self, dev: DevId, rq: ReqId) {
        match self.devs[dev].driver {
            Driver::Loop(_) => self.loop_queue_rq(dev, rq),
            Driver::Disk(_) => self.disk_queue_rq(dev, rq),
            Driver::Ssd(_) => self.ssd_queue_rq(dev, rq),
            Driver::Hdd(_) => self.hdd_queue_rq(dev, rq),
            Driver::Raid0(_) => unreachable!("md devices are bio-based"),
            Driver::Bcache(_) => unreachable!("bcache devices are bio-based"),
        }
    }

    /// A bio that a stacked driver made of `parent` (a bio on its device)
    /// completed: the driver's end_io for it.
    #[inline]
    pub fn driver_end_child_bio(&mut self, parent: BioId) {
        let dev = self.bios[parent].as_ref().expect("parent bio").dev;
        match self.devs[dev].driver {
            Driver::Raid0(_) => self.raid0_end_child_bio(parent),
            Driver::Loop(_)
            | Driver::Disk(_)
            | Driver::Ssd(_)
            | Driver::Hdd(_)
            | Driver::Bcache(_) => {
                unreachable!("only md makes child bios")
            }
        }
    }

    /// A step of device `dev`'s driver thread (`Body::Driver`). Not inlined
    /// into the scheduler's `task_step`, which every task's burst passes.
    #[inline(never)]
    pub fn driver_step(&mut self, pid: Pid, dev: DevId) -> Action {
        match self.devs[dev].driver {
            Driver::Loop(_) => self.loop_step(pid, dev),
            Driver::Disk(_)
            | Driver::Ssd(_)
            | Driver::Hdd(_)
            | Driver::Raid0(_)
            | Driver::Bcache(_) => {
                unreachable!("the driver runs no thread")
            }
        }
    }

    /// A bio a driver issued on its own account (`BioOwner::Driver`:
    /// bcache's writeback, cache fills and member IO) completed.
    pub fn driver_bio_done(&mut self, dev: DevId, tag: u32, b: &crate::block::Bio) {
        match self.devs[dev].driver {
            Driver::Bcache(_) => self.bcache_bio_done(dev, tag, b),
            Driver::Loop(_)
            | Driver::Disk(_)
            | Driver::Ssd(_)
            | Driver::Hdd(_)
            | Driver::Raid0(_) => {
                unreachable!("the driver issues no bios of its own")
            }
        }
    }
}
