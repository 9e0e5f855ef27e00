//! Flexible proportions with time-based aging (lib/flex_proportions.c):
//! each wb's share of recent writeback completions. Exact counters are used
//! in place of the kernel's per-CPU ones, whose batching only adds a
//! bounded error to what the kernel reads.

/// `struct fprop_global`: the domain's event count and period.
#[derive(Clone, Debug)]
pub struct FpropGlobal {
    pub events: u64,
    pub period: u64,
}

impl Default for FpropGlobal {
    fn default() -> Self {
        // fprop_global_init: events start at 1 so fractions never divide by 0.
        FpropGlobal {
            events: 1,
            period: 0,
        }
    }
}

/// `struct fprop_local_percpu`: one wb's events and the period it last saw.
#[derive(Clone, Debug, Default)]
pub struct FpropLocal {
    pub events: u64,
    pub period: u64,
}

pub const FPROP_FRAC_SHIFT: u32 = 10;
pub const FPROP_FRAC_BASE: u64 = 1 << FPROP_FRAC_SHIFT;

impl FpropGlobal {
    /// `fprop_new_period(p, periods)`: age the global count by `periods`
    /// halvings. Returns false when there was nothing left to age.
    pub fn new_period(&mut self, periods: u64) -> bool {
        if self.events <= 1 {
            return false;
        }
        self.events = if periods < 64 {
            self.events >> periods
        } else {
            0
        };
        self.period += periods;
        true
    }
}

impl FpropLocal {
    /// `fprop_reflect_period_percpu`: lazily apply the halvings this local
    /// counter has missed.
    fn reflect(&mut self, g: &FpropGlobal) {
        if self.period == g.period {
            return;
        }
        let k = g.period - self.period;
        self.events = if k < 64 { self.events >> k } else { 0 };
        self.period = g.period;
    }

    /// `__fprop_add_percpu`.
    pub fn add(&mut self, g: &mut FpropGlobal, n: u64) {
        self.reflect(g);
        self.events += n;
        g.events += n;
    }

    /// `fprop_fraction_percpu`: (numerator, denominator).
    pub fn fraction(&mut self, g: &FpropGlobal) -> (u64, u64) {
        self.reflect(g);
        let num = self.events;
        let mut den = g.events;
        if den <= num {
            den = if num != 0 { num } else { 1 };
        }
        (num, den)
    }

    /// `__fprop_add_percpu_max`: add, but do not let this local's share go
    /// above `max_frac / FPROP_FRAC_BASE`.
    pub fn add_max(&mut self, g: &mut FpropGlobal, n: u64, max_frac: u64) {
        let mut n = n;
        if max_frac < FPROP_FRAC_BASE {
            let (num, den) = self.fraction(g);
            let slack = den as i128 * max_frac as i128 - ((num as i128) << FPROP_FRAC_SHIFT);
            if slack < 0 {
                return;
            }
            let per = (FPROP_FRAC_BASE - max_frac) as i128;
            if slack < n as i128 * per {
                n = ((slack + per - 1) / per) as u64;
            }
        }
        self.add(g, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_and_aging() {
        let mut g = FpropGlobal::default();
        let mut a = FpropLocal::default();
        let mut b = FpropLocal::default();
        a.add(&mut g, 300);
        b.add(&mut g, 100);
        assert_eq!(a.fraction(&g), (300, 401));
        assert!(g.new_period(1));
        assert_eq!(g.events, 200);
        // local halves lazily
        assert_eq!(b.fraction(&g), (50, 200));
        assert_eq!(a.fraction(&g), (150, 200));
        // a fresh local has no share
        let mut c = FpropLocal::default();
        assert_eq!(c.fraction(&g), (0, 200));
        let mut g1 = FpropGlobal::default();
        assert!(!g1.new_period(1));
    }

    #[test]
    fn add_max_caps_share() {
        let mut g = FpropGlobal::default();
        let mut a = FpropLocal::default();
        let mut b = FpropLocal::default();
        b.add(&mut g, 1000);
        // a may own at most half (512/1024)
        a.add_max(&mut g, 5000, 512);
        let (n, d) = a.fraction(&g);
        assert!(n * 1024 <= d * 512 + 1024, "{n}/{d}");
        assert!(n > 900);
    }
}
