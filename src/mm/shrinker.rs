//! Shrinkers (mm/vmscan.c `shrink_slab`, `do_shrink_slab`): how much of a
//! cache a reclaim pass asks a shrinker to scan, in batches, and the work
//! carried over to the next call (`nr_deferred`).
//!
//! Two versions of the arithmetic, chosen by `vm.shrinker_arith`:
//! - `priority` (4.16+, the default): `delta = (freeable >> priority) * 4 /
//!   seeks`, and only `nr_deferred >> priority` of the carried work is
//!   attempted; the deferred pool is capped at twice the cache;
//! - `lru-ratio` (≤ 4.15, for 2016-era results such as simoop on 4.8):
//!   `delta = (4 * nr_scanned / seeks) * freeable / (nr_eligible + 1)`,
//!   where `nr_scanned` is what the pass scanned of the `nr_eligible` LRU
//!   pages; all deferred work is attempted, with the anti-windup clamp to
//!   half the cache while delta is under a quarter of it, and the deferred
//!   pool is not capped.
//!
//! The only shrinker registered is each superblock's (fs/vfs_cache.rs:
//! `super_cache_count`, `super_cache_scan`), in mount order: the root
//! memcg's pass calls every registered shrinker in registration order.

use crate::kernel::{Kernel, Pid};
use crate::mm::page_alloc::Gfp;

/// `SHRINK_BATCH`: a shrinker's batch when it sets none.
pub const SHRINK_BATCH: u64 = 128;
/// `DEFAULT_SEEKS`.
pub const DEFAULT_SEEKS: u64 = 2;

/// Which kernel's `do_shrink_slab` arithmetic (`vm.shrinker_arith`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShrinkerArith {
    /// 4.16+: scaled by the reclaim priority.
    #[default]
    Priority,
    /// ≤ 4.15: scaled by the LRU pages scanned against the LRU's size.
    LruRatio,
}

impl ShrinkerArith {
    pub fn parse(s: &str) -> Option<ShrinkerArith> {
        match s {
            "priority" | "4.16" => Some(ShrinkerArith::Priority),
            "lru-ratio" | "4.15" => Some(ShrinkerArith::LruRatio),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            ShrinkerArith::Priority => "priority",
            ShrinkerArith::LruRatio => "lru-ratio",
        }
    }
}

/// What a reclaim pass tells `shrink_slab` (`struct shrink_control` and
/// the ≤ 4.15 call's arguments).
#[derive(Clone, Copy, Debug)]
pub struct ShrinkCtl {
    pub priority: u32,
    /// ≤ 4.15: LRU pages scanned in this pass (0 counts as
    /// SWAP_CLUSTER_MAX, as `shrink_slab`'s callers passed it).
    pub nr_scanned: u64,
    /// ≤ 4.15: LRU pages eligible on this node.
    pub nr_eligible: u64,
    pub gfp: Gfp,
}

/// The start of one `do_shrink_slab` call: the deferred work taken
/// (`nr`), the new work (`delta`) and what this call tries
/// (`total_scan`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShrinkPlan {
    pub nr: u64,
    pub delta: u64,
    pub total_scan: u64,
}

/// `do_shrink_slab`'s scan amount for a cache of `freeable` objects with
/// `nr` deferred (already taken with `xchg`).
pub fn shrink_plan(
    arith: ShrinkerArith,
    freeable: u64,
    nr: u64,
    seeks: u64,
    c: &ShrinkCtl,
) -> ShrinkPlan {
    match arith {
        ShrinkerArith::Priority => {
            let delta = ((freeable >> c.priority) * 4)
                .checked_div(seeks)
                .unwrap_or(freeable / 2);
            let total_scan = ((nr >> c.priority) + delta).min(2 * freeable);
            ShrinkPlan {
                nr,
                delta,
                total_scan,
            }
        }
        ShrinkerArith::LruRatio => {
            let scanned = if c.nr_scanned == 0 {
                crate::mm::page_alloc::SWAP_CLUSTER_MAX
            } else {
                c.nr_scanned
            };
            let seeks = seeks.max(1);
            // 4.8 computes it in u64: (4 * nr_scanned / seeks) * freeable
            // / (nr_eligible + 1)
            let delta = ((4 * scanned / seeks) as u128 * freeable as u128
                / (c.nr_eligible as u128 + 1)) as u64;
            let mut total_scan = nr + delta;
            if delta < freeable / 4 {
                total_scan = total_scan.min(freeable / 2);
            }
            total_scan = total_scan.min(2 * freeable);
            ShrinkPlan {
                nr,
                delta,
                total_scan,
            }
        }
    }
}

/// The work left to defer after a call that scanned `scanned` objects.
pub fn next_deferred(arith: ShrinkerArith, p: &ShrinkPlan, scanned: u64, freeable: u64) -> u64 {
    let left = (p.nr + p.delta).saturating_sub(scanned);
    match arith {
        ShrinkerArith::Priority => left.min(2 * freeable),
        ShrinkerArith::LruRatio => left,
    }
}

/// What a shrinker's `scan_objects` returned for one batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanRet {
    /// Objects freed, and `nr_scanned` as the shrinker left it.
    Freed { freed: u64, scanned: u64 },
    /// `SHRINK_STOP`: nothing can be done in this context.
    Stop,
}

/// The outcome of one `do_shrink_slab` call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShrinkOutcome {
    pub plan: ShrinkPlan,
    pub freed: u64,
    pub scanned: u64,
    /// What goes back into `nr_deferred` (added to it).
    pub deferred: u64,
    /// The last `scan_objects` return (−1: none made, or SHRINK_STOP).
    pub last_ret: i64,
}

/// `do_shrink_slab` for a cache of `freeable` objects (`count_objects`
/// already called, not 0) with `nr` deferred: scan in batches of `batch`
/// while the total reaches a batch or the whole cache, calling `scan` with
/// each batch's size.
pub fn do_shrink_slab(
    arith: ShrinkerArith,
    freeable: u64,
    nr: u64,
    seeks: u64,
    batch: u64,
    c: &ShrinkCtl,
    mut scan: impl FnMut(u64) -> ScanRet,
) -> ShrinkOutcome {
    let plan = shrink_plan(arith, freeable, nr, seeks, c);
    let batch = if batch == 0 { SHRINK_BATCH } else { batch };
    let mut total_scan = plan.total_scan;
    let (mut freed, mut scanned, mut last_ret) = (0u64, 0u64, -1i64);
    while total_scan >= batch || total_scan >= freeable {
        let k = batch.min(total_scan);
        match scan(k) {
            ScanRet::Stop => {
                last_ret = -1;
                break;
            }
            ScanRet::Freed {
                freed: f,
                scanned: s,
            } => {
                freed += f;
                last_ret = f as i64;
                // the ≤ 4.15 loop counts the batch whatever the shrinker says
                let s = if arith == ShrinkerArith::LruRatio {
                    k
                } else {
                    s
                };
                total_scan -= s.min(total_scan);
                scanned += s;
                if s == 0 {
                    break;
                }
            }
        }
        if total_scan == 0 {
            break;
        }
    }
    let deferred = next_deferred(arith, &plan, scanned, freeable);
    ShrinkOutcome {
        plan,
        freed,
        scanned,
        deferred,
        last_ret,
    }
}

/// A superblock shrinker's state (`struct shrinker` of `sb->s_shrink`):
/// node 0's deferred count.
#[derive(Clone, Debug, Default)]
pub struct SuperShrinker {
    pub nr_deferred: u64,
}

/// `super_cache_scan`'s `seeks` and `batch` (fs/super.c `alloc_super`).
pub const SUPER_SEEKS: u64 = DEFAULT_SEEKS;
pub const SUPER_BATCH: u64 = 1024;

impl Kernel {
    /// `shrink_slab` for node 0 and the root memcg, from `shrink_node`
    /// after the LRU part: every superblock's shrinker in mount order.
    /// `pid` is the reclaiming task (kswapd or a direct reclaimer).
    /// Returns the objects freed. A superblock with nothing cached returns
    /// at once (`SHRINK_EMPTY`), with no tracepoint, as the kernel does.
    pub(crate) fn shrink_slab(&mut self, pid: Pid, c: &ShrinkCtl) -> u64 {
        let mut freed = 0;
        for sb in 0..self.sbs.len() {
            freed += self.shrink_one_super(pid, sb, c);
        }
        freed
    }

    fn shrink_one_super(&mut self, pid: Pid, sb: usize, c: &ShrinkCtl) -> u64 {
        let freeable = self.super_cache_count(sb);
        if freeable == 0 {
            return 0;
        }
        let arith = self.sc.vm.shrinker_arith;
        let nr = std::mem::take(&mut self.sbs[sb].s_shrink.nr_deferred);
        let plan = shrink_plan(arith, freeable, nr, SUPER_SEEKS, c);
        if self.tracer.on.mm_shrink_slab_start {
            self.trace_line(
                pid,
                "mm_shrink_slab_start",
                format_args!(
                    "super_cache_scan+0x0/0x1f0 {:016x}: nid: 0 objects to shrink {} gfp_flags {} cache items {} delta {} total_scan {} priority {}",
                    shrinker_addr(sb),
                    nr,
                    c.gfp.name(),
                    freeable,
                    plan.delta,
                    plan.total_scan,
                    c.priority
                ),
            );
        }
        let o = do_shrink_slab(arith, freeable, nr, SUPER_SEEKS, SUPER_BATCH, c, |k| {
            self.super_cache_scan(pid, sb, k, c.gfp)
        });
        self.vm.slabs_scanned += o.scanned;
        self.vmscan.shrink_freed += o.freed;
        self.sbs[sb].s_shrink.nr_deferred += o.deferred;
        if self.tracer.on.mm_shrink_slab_end {
            let new = self.sbs[sb].s_shrink.nr_deferred;
            let total = o.plan.total_scan.saturating_sub(o.scanned);
            self.trace_line(
                pid,
                "mm_shrink_slab_end",
                format_args!(
                    "super_cache_scan+0x0/0x1f0 {:016x}: nid: 0 unused scan count {} new scan count {} total_scan {} last shrinker return val {}",
                    shrinker_addr(sb),
                    nr,
                    new,
                    total,
                    o.freed
                ),
            );
        }
        o.freed
    }
}

/// A stable stand-in for `&sb->s_shrink` in the tracepoints: `%p`
/// prints a hashed pointer, 16 hex digits without `0x`.
fn shrinker_addr(sb: usize) -> u64 {
    let mut z = 0x5eed_0000_0000_0000u64 ^ (sb as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z ^= z >> 31;
    z & 0xffff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctl(priority: u32) -> ShrinkCtl {
        ShrinkCtl {
            priority,
            nr_scanned: 0,
            nr_eligible: 0,
            gfp: Gfp::Anon,
        }
    }

    #[test]
    fn priority_delta_and_total() {
        // seeks 2: delta = 2 * (freeable >> p)
        let p = shrink_plan(ShrinkerArith::Priority, 9197, 552, 2, &ctl(12));
        assert_eq!(p.delta, 2 * (9197 >> 12));
        assert_eq!(p.total_scan, p.delta, "552 deferred >> 12 is 0");
        let p = shrink_plan(ShrinkerArith::Priority, 9197, 552, 2, &ctl(4));
        assert_eq!(
            p,
            ShrinkPlan {
                nr: 552,
                delta: 2 * (9197 >> 4),
                total_scan: (552 >> 4) + 1148
            }
        );
        // capped at twice the cache
        let p = shrink_plan(ShrinkerArith::Priority, 100, 1 << 20, 2, &ctl(0));
        assert_eq!(p.total_scan, 200);
        // seeks 0: half the cache
        assert_eq!(
            shrink_plan(ShrinkerArith::Priority, 4096, 0, 0, &ctl(12)).delta,
            2048
        );
    }

    #[test]
    fn priority_defers_what_it_did_not_scan() {
        // 10k objects at priority 12: delta 4, under a batch of 1024 and
        // under the cache: nothing scanned, all deferred
        let mut calls = 0;
        let o = do_shrink_slab(
            ShrinkerArith::Priority,
            10_000,
            0,
            2,
            1024,
            &ctl(12),
            |_| {
                calls += 1;
                ScanRet::Freed {
                    freed: 0,
                    scanned: 0,
                }
            },
        );
        assert_eq!((calls, o.scanned, o.deferred), (0, 0, 4));
        // the deferred pool grows by delta per call but only nr >> 12 of it
        // is tried: at priority 1 the pool's half plus delta goes
        let o = do_shrink_slab(
            ShrinkerArith::Priority,
            10_000,
            4000,
            2,
            1024,
            &ctl(1),
            |k| ScanRet::Freed {
                freed: k / 2,
                scanned: k,
            },
        );
        assert_eq!(o.plan.total_scan, 2000 + 10_000);
        assert_eq!(o.scanned, 11 * 1024);
        assert_eq!(o.freed, 11 * 512);
        assert_eq!(o.deferred, 4000 + 10_000 - 11 * 1024);
        // SHRINK_STOP (a GFP_NOFS caller): everything is carried over,
        // capped at twice the cache
        let o = do_shrink_slab(ShrinkerArith::Priority, 1000, 1900, 2, 128, &ctl(0), |_| {
            ScanRet::Stop
        });
        assert_eq!((o.scanned, o.deferred), (0, 2000));
    }

    #[test]
    fn small_cache_is_scanned_whole() {
        // total_scan ≥ freeable also runs a batch: a 100-object cache at
        // priority 0 is scanned in one batch of min(batch, total)
        let mut sizes = vec![];
        let o = do_shrink_slab(ShrinkerArith::Priority, 100, 0, 2, 1024, &ctl(0), |k| {
            sizes.push(k);
            ScanRet::Freed {
                freed: k,
                scanned: k,
            }
        });
        assert_eq!(sizes, vec![200]);
        assert_eq!((o.scanned, o.deferred), (200, 0));
    }

    #[test]
    fn lru_ratio_arithmetic() {
        // 4.8: delta = (4 * scanned / seeks) * freeable / (eligible + 1)
        let c = ShrinkCtl {
            priority: 12,
            nr_scanned: 1448,
            nr_eligible: 196_821,
            gfp: Gfp::Anon,
        };
        let p = shrink_plan(ShrinkerArith::LruRatio, 9197, 680, 2, &c);
        assert_eq!(p.delta, (4 * 1448 / 2) * 9197 / 196_822);
        // delta < freeable/4: clamped to half the cache
        assert_eq!(p.total_scan, (680 + p.delta).min(9197 / 2));
        // a deferred pool beyond half the cache is clamped while delta is
        // small, and the remainder is kept uncapped
        let p = shrink_plan(ShrinkerArith::LruRatio, 1000, 50_000, 2, &c);
        assert_eq!(p.total_scan, 500);
        let o = do_shrink_slab(ShrinkerArith::LruRatio, 1000, 50_000, 2, 128, &c, |k| {
            ScanRet::Freed {
                freed: k,
                scanned: 0,
            }
        });
        // each batch counts as scanned in full (no nr_scanned feedback);
        // the last 116 are under a batch and under the cache
        assert_eq!(o.scanned, 3 * 128);
        assert_eq!(o.deferred, 50_000 + o.plan.delta - 3 * 128);
        // a big delta (scanned the whole LRU) is not clamped to half
        let c = ShrinkCtl {
            priority: 0,
            nr_scanned: 100_000,
            nr_eligible: 100_000,
            gfp: Gfp::Anon,
        };
        let p = shrink_plan(ShrinkerArith::LruRatio, 1000, 0, 2, &c);
        assert_eq!(p.delta, 1999);
        assert_eq!(p.total_scan, 1999);
        // nr_scanned 0 counts as a cluster
        let c = ShrinkCtl {
            priority: 0,
            nr_scanned: 0,
            nr_eligible: 63,
            gfp: Gfp::Anon,
        };
        assert_eq!(shrink_plan(ShrinkerArith::LruRatio, 64, 0, 2, &c).delta, 64);
    }
}
