//! The loop device's worker (drivers/block/loop.c: `loop_queue_rq` queues
//! the command, `loop_process_work` runs it in a kworker), for a loop device
//! whose image is a file on tmpfs, as on the host rig.
//!
//! Each request is written into the image file by the worker on a CPU: it
//! copies the request's data, and the image pages written for the first
//! time are allocated in tmpfs (shmem pages: swap-backed, so on the anon
//! LRU and never dirty-accounted). Under a hypervisor that discards
//! reported free pages each of those allocations can cost a host fault
//! (mm/page_reporting.rs), which makes the worker as busy as the writer
//! that dirtied the data: on the rig, a 10 s sample of a 1 dd bs=4k run
//! put the unbound writeback kworkers at 0.255 CPU-s/s against dd's 0.289.
//! The request completes when the worker is done with it, and the worker
//! takes the next; it sleeps when none is queued.
//!
//! A read (`lo_read_simple` → the image file's `read_iter`) is copied out
//! of the image's pages by the worker in the same way, at `copy_per_kib`;
//! it allocates nothing (a hole in the tmpfs image reads as zeroes).
//!
//! With `backing = "none"` no worker runs: a request completes as soon as
//! the driver takes it (an image whose writes cost nothing). The host
//! rig's device, a loop device on tmpfs capped by blk-throttle, is
//! `type = "throttled"`: a loop device plus `throttle.write_bps`.

use std::collections::VecDeque;

use crate::block::blk_mq::ReqId;
use crate::block::blk_throttle::ThrotlConf;
use crate::drivers::{DeviceKind, DriverType, Parsed, QueueInfo};
use crate::kernel::{Action, DevId, Kernel, Pid};
use crate::mm::filemap::RangeSet;
use crate::scenario::raw::err;
use crate::scenario::{DevSection, Device, Elevator, Reader, ScenarioError};
use crate::sim::Ns;

/// `LOOP_MAJOR`.
pub const LOOP_MAJOR: u32 = 7;

/// What a loop device's image lives on (`devices.NAME.backing`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopBacking {
    /// Requests complete as soon as the driver takes them, with no CPU
    /// spent.
    None,
    /// A file on tmpfs: the loop worker copies each request into the
    /// image's pages, allocating the pages written for the first time.
    Tmpfs,
}

/// A loop device's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopConf {
    pub backing: LoopBacking,
}

/// `type = "loop"`: a loop device, uncapped unless `throttle.*` is set.
pub(crate) const LOOP: DriverType = DriverType {
    name: "loop",
    keys: &["backing"],
    parse: parse_loop,
};

/// `type = "throttled"`: the host rig's device, a loop device with a
/// blk-throttle write cap, as one type: `write_bps` (required) and
/// `read_bps` are its `throttle.write_bps` and `throttle.read_bps`.
pub(crate) const THROTTLED: DriverType = DriverType {
    name: "throttled",
    keys: &["write_bps", "read_bps", "backing"],
    parse: parse_throttled,
};

fn parse_backing(r: &mut Reader, s: &DevSection) -> Result<LoopBacking, ScenarioError> {
    Ok(match r.choice(&s.key("backing"), &["none", "tmpfs"])? {
        Some((b, _)) if b == "tmpfs" => LoopBacking::Tmpfs,
        _ => LoopBacking::None,
    })
}

fn parse_loop(r: &mut Reader, s: &DevSection) -> Result<Parsed, ScenarioError> {
    let backing = parse_backing(r, s)?;
    Ok((DeviceKind::Loop(LoopConf { backing }), None))
}

fn parse_throttled(r: &mut Reader, s: &DevSection) -> Result<Parsed, ScenarioError> {
    let write_bps = match r.rate(&s.key("write_bps"))? {
        Some((0, e)) => return err(&e.origin, "`write_bps` must be > 0 for a throttled device"),
        Some((v, _)) => v,
        None => {
            return err(
                s.type_origin,
                format!(
                    "throttled device `{}` needs `write_bps`, e.g. \"50MiB/s\"",
                    s.name
                ),
            )
        }
    };
    // 0: no read limit
    let read_bps = r.rate(&s.key("read_bps"))?.map(|x| x.0).filter(|&v| v > 0);
    let backing = parse_backing(r, s)?;
    let throttle = ThrotlConf {
        write_bps: Some(write_bps),
        read_bps,
    };
    Ok((DeviceKind::Loop(LoopConf { backing }), Some(throttle)))
}

/// `loop_add`: 128 tags (`hw_queue_depth`), no elevator, a write cache
/// (`loop_configure` sets it when the image's file has fsync), not
/// rotational (an image on tmpfs).
pub fn queue_info(_: &LoopConf) -> QueueInfo {
    QueueInfo {
        major: LOOP_MAJOR,
        minor_step: 1,
        max_hw_sectors_kb: 1280,
        scheduler: Elevator::None,
        nr_requests: 128,
        nr_requests_sched: 128,
        slots: 0,
        queue_depth: None,
        rotational: false,
        write_cache: true,
        bio_based: false,
    }
}

/// A loop device's driver state.
pub struct Loop {
    /// The worker, when the image's backing is modelled.
    pub lo: Option<LoopDev>,
}

pub struct LoopDev {
    /// The worker task.
    pub worker: Pid,
    /// Requests queued by `loop_queue_rq`, with when they were queued.
    pub queue: VecDeque<(ReqId, Ns)>,
    /// The request the worker is writing.
    pub cur: Option<(ReqId, Ns)>,
    /// Image pages written at least once (allocated in tmpfs).
    pub written: RangeSet,
    /// The worker sleeps: a new request wakes it.
    pub idle: bool,
}

impl LoopDev {
    pub fn new(worker: Pid) -> LoopDev {
        LoopDev {
            worker,
            queue: VecDeque::new(),
            cur: None,
            written: RangeSet::default(),
            idle: true,
        }
    }
}

impl Kernel {
    /// `loop_add` + `loop_configure`: the worker of an image on tmpfs (an
    /// unbound kworker), created with the device.
    pub fn loop_add(&mut self, dev: DevId, d: &Device, c: &LoopConf) -> Loop {
        let lo = match c.backing {
            LoopBacking::Tmpfs => {
                let comm = format!("kworker/u{}:0-loop{}", 2 * self.cpus.len(), d.minor);
                let w = self.new_task(comm, crate::kernel::Body::Driver(dev), None);
                Some(LoopDev::new(w))
            }
            LoopBacking::None => None,
        };
        Loop { lo }
    }

    fn lo(&mut self, dev: DevId) -> &mut Option<LoopDev> {
        match &mut self.devs[dev].driver {
            crate::drivers::Driver::Loop(l) => &mut l.lo,
            _ => unreachable!("not a loop device"),
        }
    }

    /// `loop_queue_rq`: queue the request for the worker and wake it; with
    /// no backing modelled it completes at once.
    pub fn loop_queue_rq(&mut self, dev: DevId, rq: ReqId) {
        let now = self.now();
        let Some(lo) = self.lo(dev).as_mut() else {
            let ticks = now - self.reqs[rq].as_ref().expect("rq").queued;
            return self.request_done(rq, ticks);
        };
        lo.queue.push_back((rq, now));
        if lo.idle {
            lo.idle = false;
            let w = lo.worker;
            self.wake_up_process(w);
        }
    }

    /// `loop_process_work`: complete the request just written, then start
    /// on the next one, or sleep.
    pub fn loop_step(&mut self, pid: Pid, dev: DevId) -> Action {
        if let Some((rq, _)) = self.lo(dev).as_mut().expect("loop").cur.take() {
            // the request's time from its allocation (`nsecs[]`)
            let ticks = self.now() - self.reqs[rq].as_ref().expect("rq").queued;
            self.request_done(rq, ticks);
        }
        let lo = self.lo(dev).as_mut().expect("loop");
        let Some((rq, at)) = lo.queue.pop_front() else {
            lo.idle = true;
            return Action::Block;
        };
        lo.cur = Some((rq, at));
        let (sector, sectors, read) = {
            let r = self.reqs[rq].as_ref().expect("rq");
            (r.sector, r.nr_sectors, r.is_read())
        };
        let c = &self.sc.machine.cost;
        let kib = sectors / 2;
        if read {
            return Action::Cpu {
                user: 0,
                sys: kib * c.copy_per_kib,
            };
        }
        let ps = self.page_size();
        let first = sector * 512 / ps;
        let end = ((sector + sectors) * 512).div_ceil(ps);
        let lo = self.lo(dev).as_mut().expect("loop");
        let new = lo.written.insert(first, end);
        // the new shmem pages: anon LRU memory, taken from the free pages
        self.vm.nr_anon_pages += new;
        self.page_alloc(Some(pid), new, crate::mm::page_alloc::Gfp::Anon);
        let host = self.page_alloc_host_cost(new);
        let c = &self.sc.machine.cost;
        let kib = sectors / 2;
        Action::Cpu {
            user: 0,
            sys: kib * c.copy_per_kib + new * c.page_cache_insert + host,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::Kernel;
    use crate::scenario::Scenario;

    /// The loop worker of the scenario's first device.
    fn loop_worker(k: &Kernel) -> Option<&super::LoopDev> {
        match &k.devs[0].driver {
            crate::drivers::Driver::Loop(l) => l.lo.as_ref(),
            _ => panic!("not a loop device"),
        }
    }

    fn run(backing: &str) -> Kernel {
        run_with(backing, 1, "", 10).0
    }

    /// `numjobs` dd at bs=1M over a loop device for `secs` s (`machine`
    /// adds lines to the [machine] table). Also returns the longest time a
    /// request waited in the worker's queue over the second half of the
    /// run (ms).
    fn run_with(backing: &str, numjobs: u32, machine: &str, secs: u64) -> (Kernel, f64) {
        let toml = format!(
            "[machine]\ncpus = 2\nhost_backed_free = \"40M\"\n{machine}\
             [machine.cost]\ncopy_per_kib = \"100ns\"\npage_cache_insert = \"1us\"\nhost_fault = \"15us\"\n\
             [vm]\ndirty_bytes = \"200M\"\ndirty_background_bytes = \"100M\"\n\
             [devices.loop0]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\nbacking = \"{backing}\"\n\
             [filesystems.f]\ndevice = \"loop0\"\nmetadata = false\n\
             [jobs.dd]\nnumjobs = {numjobs}\nbs = \"1M\"\n[run]\nduration = \"{secs}s\"\nwarmup = \"0s\"\n"
        );
        let sc = Scenario::load_str(&toml, "t.toml", "t", &[]).unwrap();
        let mut k = Kernel::new(sc, crate::trace::Tracer::disabled());
        let half = secs * 1_000_000_000 / 2;
        let mut wait = 0;
        while k.step() {
            let now = k.now();
            if let Some((_, at)) = loop_worker(&k).and_then(|l| l.queue.front()) {
                if now >= half {
                    wait = wait.max(now - at);
                }
            }
        }
        (k, wait as f64 / 1e6)
    }

    #[test]
    fn the_worker_pays_for_the_image_pages_it_allocates() {
        let k = run("tmpfs");
        let lo = loop_worker(&k).expect("a loop worker");
        let worker = &k.tasks[lo.worker];
        assert!(
            worker.comm.starts_with("kworker/u4:0-loop"),
            "{}",
            worker.comm
        );
        // every page written was written once: 4 KiB copied (0.4 us), a
        // shmem page inserted (1 us) and, with the dd's pages having used
        // up the 40M the host backed long before, a host fault (15 us)
        let pages = k.devs[0].stat.write_sectors / 8;
        assert!(pages > 10 * 11_000, "{pages} pages in 10 s at 50 MiB/s");
        assert_eq!(lo.written.count(), pages);
        let want = pages * (400 + 1_000 + 15_000);
        let got = worker.stime + worker.burst_left; // the burst in progress
        let err = (got as f64 - want as f64).abs() / want as f64;
        assert!(err < 0.01, "worker CPU {got} ns, expected {want} ns");
        // the shmem pages are anon memory now
        let k0 = run("none");
        assert_eq!(k.vm.nr_anon_pages - k0.vm.nr_anon_pages, pages);
        assert!(loop_worker(&k0).is_none());
    }

    #[test]
    fn under_autogroup_the_worker_is_not_starved_by_the_writers() {
        // 100 dd keep both CPUs busy while they dirty. In one run queue with
        // them (kernel.sched_autogroup_enabled=0) the worker gets 1/101 of
        // the CPU and its requests wait; with the writers in their session's
        // autogroup it competes with the group as a whole and gets its
        // 1280 pages per 100 ms blk-throttle slice written at once. The
        // rig's kernel showed the same: 227-384 pages completed during a
        // rise of the sawtooth with autogroup off, 3584-3896 with it on.
        let (flat, w0) = run_with("tmpfs", 100, "sched = \"eevdf\"\n", 20);
        let (ag, w1) = run_with("tmpfs", 100, "sched = \"eevdf\"\nautogroup = 1\n", 20);
        // A slice's 5 requests take ~21 ms of the worker's CPU: with twice
        // the weight of the group's entity on its CPU, the last of them
        // waits some 30 ms (measured: 38 ms against 113 ms flat).
        assert!(
            w1 < 50.0 && w1 * 2.0 < w0,
            "longest wait: flat {w0:.1} ms, autogroup {w1:.1} ms"
        );
        // the worker keeps up either way over the run: 50 MiB/s
        for k in [&flat, &ag] {
            let mib = k.devs[0].stat.write_sectors as f64 / 2048.0 / 20.0;
            assert!((mib - 50.0).abs() < 2.5, "{mib:.1} MiB/s");
        }
    }
}
