//! Free page reporting, seen from the guest's allocations (mm/page_reporting.c
//! with virtio-balloon's `VIRTIO_BALLOON_F_REPORTING`).
//!
//! A guest that reports free pages tells the hypervisor about free blocks of
//! order >= `page_reporting_order`, a couple of seconds after they were
//! freed; the host discards their memory. The guest's next touch of such a
//! page is a fault on the host, which allocates and zeroes a page before the
//! guest's copy can go on. On the host rig (a Firecracker microVM with
//! `page_reporting.page_reporting_order=11`) this is most of what a buffered
//! write costs once the page cache grows into fresh memory: dd copied at
//! about 1.5 us a page for its first ~180 MB and at 13-19 us a page after,
//! with no writeback running (`vm.dirty_background_bytes=15G`) and the same
//! with it. The profile of the slow phase was 88% `copy_folio_from_iter_atomic`.
//!
//! The model keeps one count: free pages the host still backs. A page-cache
//! page allocated while the count lasts costs nothing extra; after that
//! each new page costs `machine.cost.host_fault`. Pages the guest frees go
//! back to the count: reclaim frees them a few at a time and the allocator
//! hands them out again long before they could coalesce into a reportable
//! block. On bare metal `host_fault` is 0 and none of this shows.

use crate::kernel::Kernel;
use crate::sim::Ns;

#[derive(Clone, Debug, Default)]
pub struct PageReporting {
    /// Free pages whose memory the host still backs.
    pub backed_free: u64,
}

impl Kernel {
    /// At boot: the scenario's `machine.host_backed_free` (all free memory
    /// when it is not given).
    pub fn page_reporting_init(&mut self) {
        let ps = self.page_size();
        let free = self.vm.nr_free_pages;
        self.page_reporting.backed_free = match self.sc.machine.host_backed_free {
            Some(b) => (b / ps).min(free),
            None => free,
        };
    }

    /// CPU time the host's faults add to allocating `n` new pages: the
    /// backed free pages go first, each page after them costs a fault.
    pub fn page_alloc_host_cost(&mut self, n: u64) -> Ns {
        let r = &mut self.page_reporting;
        let warm = n.min(r.backed_free);
        r.backed_free -= warm;
        (n - warm) * self.sc.machine.cost.host_fault
    }

    /// `n` pages freed by the guest: they stay backed until reused.
    pub fn page_freed_host(&mut self, n: u64) {
        self.page_reporting.backed_free += n;
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;

    fn kernel(extra: &str) -> crate::kernel::Kernel {
        let text = format!(
            "[machine]\nmemory = \"1G\"\n{extra}\n\
             [devices.d]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\n\
             [filesystems.f]\ndevice = \"d\"\n[jobs.dd]\nnumjobs = 1\n"
        );
        let sc = Scenario::load_str(&text, "t.toml", "t", &[]).unwrap();
        crate::kernel::Kernel::new(sc, crate::trace::Tracer::disabled())
    }

    #[test]
    fn backed_pages_first_then_one_fault_a_page() {
        // 8 MiB backed = 2048 pages; a fault costs 15 us
        let mut k = kernel("host_backed_free = \"8M\"\n[machine.cost]\nhost_fault = \"15us\"");
        assert_eq!(k.page_reporting.backed_free, 2048);
        assert_eq!(k.page_alloc_host_cost(2000), 0);
        // 48 backed pages left: 52 of 100 fault
        assert_eq!(k.page_alloc_host_cost(100), 52 * 15_000);
        assert_eq!(k.page_alloc_host_cost(1), 15_000);
        // freed pages are handed out again without a fault
        k.page_freed_host(10);
        assert_eq!(k.page_alloc_host_cost(12), 2 * 15_000);
    }

    #[test]
    fn bare_metal_costs_nothing() {
        let mut k = kernel("");
        // all free memory is backed, and a fault would cost 0 anyway
        assert_eq!(k.page_reporting.backed_free, k.vm.nr_free_pages);
        assert_eq!(k.page_alloc_host_cost(1 << 20), 0);
    }
}
