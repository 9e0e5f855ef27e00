//! io.cost (block/blk-iocost.c) with a fixed vrate: proportional IO
//! control by cost, as cgroup v2's `io.cost.qos` and `io.cost.model` set
//! it on a device, shared by the cgroups' `io.weight`.
//!
//! - **Cost.** Each bio has an absolute cost in device time from the
//!   linear model (`calc_lcoefs`, `calc_vtime_cost_builtin`): per 4 KiB
//!   page `1 s / (bps / 4 KiB)`, plus per IO `1 s / seqiops` less a
//!   page's cost if it starts within 16 MiB (`LCOEF_RANDIO_PAGES`) of where
//!   the cgroup's last IO ended (its `cursor`), else `1 s / randiops` less
//!   a page's. `ctrl=auto` takes the kernel's built-in parameters for the
//!   device's kind (`autop`: AUTOP_HDD for rotational devices, AUTOP_SSD_DFL
//!   for others); `ctrl=user` the model line's.
//! - **Budget.** The device's virtual time runs at `vrate` × wall time
//!   (`ioc_now`). A cgroup pays `abs_cost / hweight` of it per bio, where
//!   `hweight` is its `io.weight` over the sum of the active cgroups'
//!   (`propagate_weights`, one level under the root). A bio whose cost
//!   fits between the cgroup's `vtime` and `vnow` is issued at once and
//!   advances `vtime` (`iocg_commit_bio`); otherwise it waits, in order,
//!   until `vnow` has caught up (`iocg_kick_waitq`, the wait timer).
//! - **Activation.** A cgroup becomes active with its first IO
//!   (`iocg_activate`); its `vtime` is brought up to `vnow` less the
//!   target margin (half a period), so an idle cgroup banks at most that
//!   much. The period timer (`ioc_timer_fn`) deactivates a cgroup that
//!   issued nothing for a whole period and has no waiters or debt, and the
//!   others' hweights grow.
//! - **Debt.** A bio that must not wait behind its cgroup's budget
//!   (`bio_issue_as_root_blkg`: REQ_META) is issued at once and its cost
//!   becomes debt (`iocg_incur_debt`), paid out of the cgroup's budget
//!   before its waiters go (`iocg_pay_debt` in `iocg_kick_waitq`).
//! - The root cgroup's IO (the journal, metadata written by kernel
//!   threads) is never throttled (`!iocg->level`).
//!
//! Not modelled: vrate adjustment from the latency targets and queue depth
//! (the qos line's `min` and `max` must be equal), weight donation
//! (`transfer_surpluses`: a cgroup that uses less than its share keeps it
//! here), the `use_delay` penalty on return to user space, and the
//! submitter sleeping: a waiting bio is held here and issued by the wait
//! timer (the kernel blocks the submitting task in `ioc_rqos_throttle`;
//! here a writer submits its next bio, which queues behind).
//! Times are ns of device time where the kernel counts `VTIME_PER_SEC`
//! (2^37) units a second; the rounding differs by under one part in 10^6.

use crate::kernel::{BioId, Ev, Kernel};
use crate::scenario::raw::err;
use crate::scenario::{Reader, ScenarioError};
use crate::sim::{Ns, NSEC_PER_SEC};
use std::collections::VecDeque;

/// `WEIGHT_ONE`: hweights are fractions of 2^16.
const WEIGHT_ONE: u64 = 1 << 16;
/// `LCOEF_RANDIO_PAGES`: an IO further than 16 MiB from the last one is
/// random.
const RANDIO_PAGES: u64 = 4096;
/// `MARGIN_TARGET_PCT`: an activated cgroup may bank half a period.
const MARGIN_TARGET_PCT: u64 = 50;
/// `MIN_PERIOD` and `MAX_PERIOD` (µs).
const MIN_PERIOD_US: u64 = 1000;
const MAX_PERIOD_US: u64 = 1_000_000;

/// A device's `io.cost.model` (`I_LCOEF_*`): bytes/s and IOs/s, reads then
/// writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IocModel {
    pub rbps: u64,
    pub rseqiops: u64,
    pub rrandiops: u64,
    pub wbps: u64,
    pub wseqiops: u64,
    pub wrandiops: u64,
}

/// `autop[AUTOP_HDD]`'s model and latency targets (µs).
pub const AUTOP_HDD: (IocModel, u64, u64) = (
    IocModel {
        rbps: 174_019_176,
        rseqiops: 41_708,
        rrandiops: 370,
        wbps: 178_075_866,
        wseqiops: 42_705,
        wrandiops: 378,
    },
    250_000,
    250_000,
);

/// `autop[AUTOP_SSD_DFL]`'s model and latency targets (µs).
pub const AUTOP_SSD_DFL: (IocModel, u64, u64) = (
    IocModel {
        rbps: 488_636_629,
        rseqiops: 8932,
        rrandiops: 8518,
        wbps: 427_891_549,
        wseqiops: 28_755,
        wrandiops: 21_940,
    },
    25_000,
    25_000,
);

/// io.cost on a device: the model, the fixed vrate (percent) and the
/// latency targets (µs) the period follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IocConf {
    pub model: IocModel,
    pub vrate_pct: u64,
    pub rlat_us: u64,
    pub wlat_us: u64,
}

impl IocConf {
    /// `ioc_refresh_period_us` without percentiles: twice the larger
    /// latency target, within 1 ms..1 s.
    pub fn period(&self) -> Ns {
        (2 * self.rlat_us.max(self.wlat_us)).clamp(MIN_PERIOD_US, MAX_PERIOD_US) * 1000
    }
}

/// `calc_lcoefs`: (page, seqio, randio) costs in ns.
fn lcoefs(bps: u64, seqiops: u64, randiops: u64) -> (u64, u64, u64) {
    let page = if bps == 0 {
        0
    } else {
        NSEC_PER_SEC.div_ceil(bps.div_ceil(4096).max(1))
    };
    let per_io = |iops: u64| {
        if iops == 0 {
            0
        } else {
            NSEC_PER_SEC.div_ceil(iops).saturating_sub(page)
        }
    };
    (page, per_io(seqiops), per_io(randiops))
}

/// A cgroup's state on the device (`ioc_gq`).
#[derive(Clone, Debug, Default)]
pub struct Iocg {
    pub weight: u64,
    pub active: bool,
    /// What the cgroup has spent, in device ns scaled by its hweight.
    pub vtime: u64,
    /// Where its last IO ended (sector), for the seq/rand choice.
    pub cursor: u64,
    /// Bios waiting for budget, with their absolute costs.
    pub waitq: VecDeque<(BioId, u64)>,
    /// Absolute cost issued past the budget (`abs_vdebt`).
    pub debt: u64,
    /// When it last issued an IO.
    pub last_io: Ns,
    wait_timer: Option<Ns>,
}

/// `struct ioc`: the device's controller.
#[derive(Clone, Debug)]
pub struct Ioc {
    pub conf: IocConf,
    /// Read and write (page, seqio, randio) costs.
    coefs: [(u64, u64, u64); 2],
    /// Index 0: the root (never throttled); then the scenario's cgroups.
    pub iocgs: Vec<Iocg>,
    period_timer: Option<Ns>,
}

impl Ioc {
    /// A controller for `weights` (index 0: the root's, unused).
    pub fn new(conf: IocConf, weights: &[u64]) -> Ioc {
        let m = conf.model;
        Ioc {
            conf,
            coefs: [
                lcoefs(m.rbps, m.rseqiops, m.rrandiops),
                lcoefs(m.wbps, m.wseqiops, m.wrandiops),
            ],
            iocgs: weights
                .iter()
                .map(|&w| Iocg {
                    weight: w.max(1),
                    ..Default::default()
                })
                .collect(),
            period_timer: None,
        }
    }

    /// `ioc_now`'s vnow at `now`.
    pub fn vnow(&self, now: Ns) -> u64 {
        now * self.conf.vrate_pct / 100
    }

    /// `calc_vtime_cost_builtin`: the absolute cost of `pages` pages at
    /// `sector` in direction `write` for a cgroup whose last IO ended at
    /// `cursor` (0: none yet, which counts as sequential, as the kernel's
    /// unset cursor does).
    pub fn abs_cost(&self, write: bool, sector: u64, sectors: u64, cursor: u64) -> u64 {
        let (page, seqio, randio) = self.coefs[usize::from(write)];
        let pages = (sectors >> 3).max(1);
        let seek_pages = if cursor != 0 {
            sector.abs_diff(cursor) >> 3
        } else {
            0
        };
        let per_io = if seek_pages > RANDIO_PAGES {
            randio
        } else {
            seqio
        };
        per_io + pages * page
    }

    /// `hweight_inuse` of cgroup `cg` (of `WEIGHT_ONE`): its weight over
    /// the active cgroups' sum.
    pub fn hweight(&self, cg: usize) -> u64 {
        let sum: u64 = self.iocgs[1..]
            .iter()
            .filter(|g| g.active)
            .map(|g| g.weight)
            .sum();
        (self.iocgs[cg].weight * WEIGHT_ONE)
            .checked_div(sum)
            .map_or(WEIGHT_ONE, |h| h.max(1))
    }

    /// `abs_cost_to_cost`.
    fn cost(&self, cg: usize, abs: u64) -> u64 {
        (abs * WEIGHT_ONE).div_ceil(self.hweight(cg))
    }

    /// `iocg_activate`: `cg` starts a busy spell at `now`; it banks at most
    /// the target margin.
    fn activate(&mut self, cg: usize, now: Ns) {
        let margin = self.conf.period() * MARGIN_TARGET_PCT / 100 * self.conf.vrate_pct / 100;
        let vtarget = self.vnow(now).saturating_sub(margin);
        let g = &mut self.iocgs[cg];
        if !g.active {
            g.active = true;
            g.vtime = g.vtime.max(vtarget);
        }
    }
}

/// Parse one `KEY=VALUE` list (`io.cost.qos`, `io.cost.model`, without the
/// leading `MAJ:MIN`), each key known.
fn pairs<'a>(
    text: &'a str,
    keys: &[&str],
    e: &crate::scenario::raw::Entry,
    what: &str,
) -> Result<Vec<(&'a str, &'a str)>, ScenarioError> {
    let mut out = Vec::new();
    for w in text.split_whitespace() {
        let Some((k, v)) = w.split_once('=') else {
            return err(
                &e.origin,
                format!(
                    "`{what}`: `{w}` is not KEY=VALUE; expected keys {{{}}}",
                    keys.join(",")
                ),
            );
        };
        if !keys.contains(&k) {
            return err(
                &e.origin,
                format!(
                    "`{what}`: unknown key `{k}`; expected one of {{{}}}",
                    keys.join(",")
                ),
            );
        }
        out.push((k, v));
    }
    Ok(out)
}

/// `io.cost.model`'s line: `ctrl=auto` keeps `auto`, figures (or
/// `ctrl=user`) replace its parameters.
fn model_line(
    mtext: &str,
    me: &crate::scenario::raw::Entry,
    auto: IocModel,
) -> Result<IocModel, ScenarioError> {
    let mut m = auto;
    let mut user = false;
    let mut got = Vec::new();
    for (k, v) in pairs(
        mtext,
        &[
            "ctrl",
            "model",
            "rbps",
            "rseqiops",
            "rrandiops",
            "wbps",
            "wseqiops",
            "wrandiops",
        ],
        me,
        "io.cost.model",
    )? {
        match k {
            "ctrl" => match v {
                "auto" => user = false,
                "user" => user = true,
                _ => {
                    return err(
                        &me.origin,
                        format!("`io.cost.model`: `ctrl={v}`; expected auto or user"),
                    )
                }
            },
            "model" => {
                if v != "linear" {
                    return err(
                        &me.origin,
                        format!("`io.cost.model`: `model={v}`; expected linear"),
                    );
                }
            }
            _ => {
                let x = match v.parse::<f64>() {
                    Ok(x) if x.is_finite() && x >= 1.0 => x as u64,
                    _ => {
                        return err(
                            &me.origin,
                            format!("`io.cost.model`: `{k}={v}`; expected a rate of at least 1"),
                        )
                    }
                };
                got.push((k, x));
                user = true;
            }
        }
    }
    if user {
        for (k, x) in got {
            match k {
                "rbps" => m.rbps = x,
                "rseqiops" => m.rseqiops = x,
                "rrandiops" => m.rrandiops = x,
                "wbps" => m.wbps = x,
                "wseqiops" => m.wseqiops = x,
                _ => m.wrandiops = x,
            }
        }
    }
    Ok(m)
}

/// `devices.NAME."io.cost.qos"` and `"io.cost.model"`, in the kernel's own
/// line syntax without the device number (`ioc_qos_write`,
/// `ioc_cost_model_write`): io.cost is on where the qos line has
/// `enable=1`. Its `min` and `max` (vrate, %) must be equal: the vrate
/// is fixed here. `rlat`/`wlat` (µs) set the period; `rpct`/`wpct` and
/// `ctrl` are taken as the kernel takes them and otherwise unused. The
/// model line's `ctrl=auto` (the default) takes the kernel's parameters
/// for the device's kind, `ctrl=user` its six figures.
pub(crate) fn parse_conf(
    r: &mut Reader,
    p: &impl Fn(&str) -> String,
    info: &crate::drivers::QueueInfo,
) -> Result<Option<IocConf>, ScenarioError> {
    let qos = r.string(
        &p("io.cost.qos"),
        "io.cost.qos's line, e.g. \"enable=1 min=100 max=100\"",
    )?;
    let model = r.string(
        &p("io.cost.model"),
        "io.cost.model's line, e.g. \"ctrl=user rbps=… rseqiops=… rrandiops=… wbps=… wseqiops=… wrandiops=…\"",
    )?;
    let auto = if info.rotational {
        AUTOP_HDD
    } else {
        AUTOP_SSD_DFL
    };
    // a model line alone is kept by the kernel and used once enabled;
    // here it is checked and unused
    let Some((qtext, qe)) = qos else {
        if let Some((mtext, me)) = &model {
            model_line(mtext, me, auto.0)?;
        }
        return Ok(None);
    };
    let num = |k: &str,
               v: &str,
               e: &crate::scenario::raw::Entry,
               what: &str|
     -> Result<f64, ScenarioError> {
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
            _ => err(
                &e.origin,
                format!("`{what}`: `{k}={v}`; expected a number ≥ 0"),
            ),
        }
    };
    let mut enable = false;
    let (mut rlat, mut wlat) = (auto.1, auto.2);
    let (mut min, mut max) = (None, None);
    for (k, v) in pairs(
        &qtext,
        &[
            "enable", "ctrl", "rpct", "rlat", "wpct", "wlat", "min", "max",
        ],
        &qe,
        "io.cost.qos",
    )? {
        match k {
            "enable" => {
                enable = match v {
                    "1" => true,
                    "0" => false,
                    _ => {
                        return err(
                            &qe.origin,
                            format!("`io.cost.qos`: `enable={v}`; expected 0 or 1"),
                        )
                    }
                }
            }
            "ctrl" => {
                if !matches!(v, "auto" | "user") {
                    return err(
                        &qe.origin,
                        format!("`io.cost.qos`: `ctrl={v}`; expected auto or user"),
                    );
                }
            }
            "rpct" | "wpct" => {
                if num(k, v, &qe, "io.cost.qos")? > 100.0 {
                    return err(
                        &qe.origin,
                        format!("`io.cost.qos`: `{k}={v}`; expected a percentile 0–100"),
                    );
                }
            }
            "rlat" => rlat = num(k, v, &qe, "io.cost.qos")? as u64,
            "wlat" => wlat = num(k, v, &qe, "io.cost.qos")? as u64,
            "min" => min = Some(num(k, v, &qe, "io.cost.qos")?),
            _ => max = Some(num(k, v, &qe, "io.cost.qos")?),
        }
    }
    if !enable {
        return Ok(None);
    }
    if info.bio_based {
        return err(
            &qe.origin,
            "`io.cost.qos` on a bio-based device: io.cost is an rq_qos policy of blk-mq queues; set it on the devices below",
        );
    }
    let vrate = match (min, max) {
        (Some(a), Some(b)) if a == b && (1.0..=10000.0).contains(&a) => a,
        _ => {
            return err(
                &qe.origin,
                "`io.cost.qos`: wbsim models io.cost with a fixed vrate, and does not adjust it from the latency targets; expected `min` and `max` equal, 1–10000 (%), e.g. \"enable=1 min=100 max=100\"",
            )
        }
    };
    let m = match &model {
        Some((mtext, me)) => model_line(mtext, me, auto.0)?,
        None => auto.0,
    };
    Ok(Some(IocConf {
        model: m,
        vrate_pct: vrate.round() as u64,
        rlat_us: rlat,
        wlat_us: wlat,
    }))
}

impl Kernel {
    fn ioc(&mut self, dev: usize) -> &mut Ioc {
        self.devs[dev].iocost.as_mut().expect("io.cost")
    }

    /// `ioc_rqos_throttle`: charge bio `id` on `dev` to its cgroup. Returns
    /// true if the bio is held (it waits for its cgroup's budget and the
    /// wait timer issues it); false: issue it now.
    pub fn ioc_rqos_throttle(&mut self, dev: usize, id: BioId) -> bool {
        let cg = self.bio_blkcg(id);
        if cg == 0 {
            return false;
        }
        let now = self.now();
        let (sector, sectors, write, meta) = {
            let b = self.bios[id].as_ref().expect("bio");
            (
                b.sector,
                b.nr_sectors,
                !crate::block::op_is_read(b.opf),
                b.opf & crate::block::blk_wbt::REQ_META != 0,
            )
        };
        let ioc = self.ioc(dev);
        let abs = ioc.abs_cost(write, sector, sectors, ioc.iocgs[cg].cursor);
        ioc.activate(cg, now);
        let cost = ioc.cost(cg, abs);
        let vnow = ioc.vnow(now);
        let g = &mut ioc.iocgs[cg];
        g.cursor = sector + sectors;
        g.last_io = now;
        if g.waitq.is_empty() && g.debt == 0 && g.vtime + cost <= vnow {
            g.vtime += cost;
            self.ioc_arm_period(dev);
            return false;
        }
        if meta {
            // bio_issue_as_root_blkg: issued now, paid later
            g.debt += abs;
            self.ioc_kick_waitq(dev, cg);
            self.ioc_arm_period(dev);
            return false;
        }
        g.waitq.push_back((id, abs));
        self.ioc_kick_waitq(dev, cg);
        self.ioc_arm_period(dev);
        true
    }

    /// `iocg_kick_waitq`: pay the cgroup's debt out of its budget, issue
    /// the waiters that fit, and set the wait timer for the next one.
    fn ioc_kick_waitq(&mut self, dev: usize, cg: usize) {
        let now = self.now();
        let mut ready = Vec::new();
        let next = {
            let ioc = self.ioc(dev);
            let vnow = ioc.vnow(now);
            let hw = ioc.hweight(cg);
            let g = &mut ioc.iocgs[cg];
            if g.debt > 0 && g.vtime < vnow {
                // iocg_pay_debt: the budget at the current hweight
                let budget_abs = (vnow - g.vtime) * hw / WEIGHT_ONE;
                let pay = budget_abs.min(g.debt);
                g.debt -= pay;
                g.vtime += (pay * WEIGHT_ONE).div_ceil(hw);
            }
            let mut need = None;
            if g.debt > 0 {
                need = Some((g.debt * WEIGHT_ONE).div_ceil(hw));
            } else {
                while let Some(&(id, abs)) = g.waitq.front() {
                    let cost = (abs * WEIGHT_ONE).div_ceil(hw);
                    if g.vtime + cost > vnow {
                        need = Some(g.vtime + cost - vnow);
                        break;
                    }
                    g.vtime += cost;
                    g.waitq.pop_front();
                    ready.push(id);
                }
            }
            let vrate = ioc.conf.vrate_pct.max(1);
            need.map(|v| now + (v * 100).div_ceil(vrate))
        };
        for id in ready {
            self.blk_mq_submit_bio(None, id);
        }
        let g = &mut self.ioc(dev).iocgs[cg];
        if let Some(at) = next {
            if g.wait_timer.is_none_or(|t| t > at) {
                g.wait_timer = Some(at);
                self.q.schedule(
                    at,
                    Ev::IocWait {
                        dev: dev as u32,
                        cg: cg as u32,
                    },
                );
            }
        }
    }

    /// `iocg_waitq_timer_fn`.
    pub fn ioc_wait_timer(&mut self, dev: usize, cg: usize) {
        let now = self.now();
        let g = &mut self.ioc(dev).iocgs[cg];
        if g.wait_timer != Some(now) {
            return;
        }
        g.wait_timer = None;
        self.ioc_kick_waitq(dev, cg);
    }

    fn ioc_arm_period(&mut self, dev: usize) {
        let now = self.now();
        let ioc = self.ioc(dev);
        if ioc.period_timer.is_none() {
            let at = now + ioc.conf.period();
            ioc.period_timer = Some(at);
            self.q.schedule(at, Ev::IocPeriod { dev: dev as u32 });
        }
    }

    /// `ioc_timer_fn`, as far as a fixed vrate needs it: a cgroup that
    /// issued nothing for a whole period and owes nothing goes inactive,
    /// and the others' hweights grow; the waiters are kicked at their new
    /// hweights.
    pub fn ioc_period_timer(&mut self, dev: usize) {
        let now = self.now();
        let ioc = self.ioc(dev);
        ioc.period_timer = None;
        let period = ioc.conf.period();
        let mut busy = false;
        for g in ioc.iocgs.iter_mut().skip(1) {
            if !g.active {
                continue;
            }
            if g.waitq.is_empty() && g.debt == 0 && g.last_io + period <= now {
                g.active = false;
            } else {
                busy = true;
            }
        }
        let waiting: Vec<usize> = (1..ioc.iocgs.len())
            .filter(|&c| !ioc.iocgs[c].waitq.is_empty() || ioc.iocgs[c].debt > 0)
            .collect();
        for c in waiting {
            self.ioc_kick_waitq(dev, c);
        }
        if busy {
            self.ioc_arm_period(dev);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdd() -> Ioc {
        Ioc::new(
            IocConf {
                model: AUTOP_HDD.0,
                vrate_pct: 100,
                rlat_us: AUTOP_HDD.1,
                wlat_us: AUTOP_HDD.2,
            },
            &[100, 100, 300],
        )
    }

    #[test]
    fn linear_model_costs_as_calc_lcoefs_does() {
        let i = hdd();
        // rbps 174019176: 42486 pages/s (rounded up), 23538 ns a page (rounded
        // up); rrandiops 370:
        // 2702703 ns an IO, less a page
        assert_eq!(i.coefs[0].0, 23_538);
        assert_eq!(i.coefs[0].2, 2_702_703 - 23_538);
        assert_eq!(i.coefs[0].1, NSEC_PER_SEC.div_ceil(41_708) - 23_538);
        // a 4 KiB read 1 GiB away from the last is random: one IO at
        // 1/370 s
        let far = i.abs_cost(false, 2 << 21, 8, 8);
        assert_eq!(far, 2_702_703);
        // a 1 MiB write right after the last: seqio + 256 pages
        let (wp, ws, _) = i.coefs[1];
        assert_eq!(i.abs_cost(true, 2048, 2048, 2048), ws + 256 * wp);
        // the period: twice the 250 ms latency target
        assert_eq!(i.conf.period(), 500_000_000);
    }

    #[test]
    fn hweight_shares_by_active_weight() {
        let mut i = hdd();
        i.activate(1, 0);
        assert_eq!(i.hweight(1), WEIGHT_ONE);
        i.activate(2, 0);
        assert_eq!(i.hweight(1), WEIGHT_ONE / 4);
        assert_eq!(i.hweight(2), WEIGHT_ONE * 3 / 4);
        // a quarter's share pays four times the absolute cost
        assert_eq!(i.cost(1, 1000), 4000);
    }

    #[test]
    fn activation_banks_at_most_the_target_margin() {
        let mut i = hdd();
        i.activate(1, 10 * NSEC_PER_SEC);
        // half of the 500 ms period
        assert_eq!(i.iocgs[1].vtime, 10 * NSEC_PER_SEC - 250_000_000);
    }
}
