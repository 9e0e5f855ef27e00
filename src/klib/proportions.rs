//! Event-counted proportions of the pre-3.5 kernel (lib/proportions.c,
//! the "single" flavour): the share of recent global events (page
//! dirtyings, for `vm_dirties`) owned by one local counter. A local counter
//! is halved once per half-period of `2^(shift-1)` global events.

/// `struct prop_global` with its `shift`.
#[derive(Clone, Debug)]
pub struct PropGlobal {
    pub events: u64,
    pub shift: u32,
}

/// `struct prop_local_single`.
#[derive(Clone, Debug, Default)]
pub struct PropLocal {
    pub events: u64,
    pub period: u64,
}

impl PropGlobal {
    pub fn new(shift: u32) -> PropGlobal {
        PropGlobal {
            events: 0,
            shift: shift.max(1),
        }
    }
    fn period_2(&self) -> u64 {
        1 << (self.shift - 1)
    }
}

impl PropLocal {
    /// `prop_norm_single`: halve for every half-period missed.
    fn norm(&mut self, g: &PropGlobal) {
        let mask = !(g.period_2() - 1);
        let global_period = g.events & mask;
        if self.period == global_period {
            return;
        }
        let periods = (global_period - self.period.min(global_period)) >> (g.shift - 1);
        self.events = if periods < 64 {
            self.events >> periods
        } else {
            0
        };
        self.period = global_period;
    }

    /// `__prop_inc_single`, `n` times.
    pub fn add(&mut self, g: &mut PropGlobal, n: u64) {
        self.norm(g);
        self.events += n;
        g.events += n;
    }

    /// `prop_fraction_single`: x_j / (period/2 + t % (period/2)).
    pub fn fraction(&mut self, g: &PropGlobal) -> (u64, u64) {
        self.norm(g);
        let p2 = g.period_2();
        (self.events, p2 + (g.events & (p2 - 1)))
    }
}

/// `calc_period_shift`: 2 + ilog2(dirty_total - 1).
pub fn calc_period_shift(dirty_total_pages: u64) -> u32 {
    2 + crate::klib::ilog2(dirty_total_pages.saturating_sub(1).max(1)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn halves_per_half_period() {
        // shift 4: half-period 8 events
        let mut g = PropGlobal::new(4);
        let (mut a, mut b) = (PropLocal::default(), PropLocal::default());
        a.add(&mut g, 6);
        assert_eq!(a.fraction(&g), (6, 8 + 6));
        b.add(&mut g, 10); // 16 events: two half-periods done
        assert_eq!(a.fraction(&g), (1, 8)); // 6 >> 2
        assert_eq!(b.fraction(&g), (10 >> 2, 8)); // b was added in period 0
        assert_eq!(calc_period_shift(51_200), 2 + 15);
    }
}
