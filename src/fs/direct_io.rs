//! fs/direct-io.c and fs/iomap/direct-io.c: O_DIRECT reads and writes as
//! bios straight from the submitter, and their completion.
//!
//! The file's blocks are mapped through its extents (a laid-out or
//! preallocated file: `fs_layout_file`); a raw block device maps byte
//! offsets to sectors directly. A write is REQ_SYNC | REQ_IDLE, as
//! iomap's is, so wbt lets it pass. Not modelled: the page-cache writeback and
//! invalidation of the range a direct write covers.

use crate::block::{Bio, BioOwner};
use crate::kernel::{InodeId, Kernel, Pid};

/// The pages one direct-IO bio holds (BIO_MAX_VECS); the block layer
/// splits it further at the queue's limits.
const DIO_BIO_MAX_PAGES: u64 = 256;

impl Kernel {
    /// `iomap_dio_rw`: submit the bios of a direct IO of `len` bytes at
    /// byte `off` of `ino` (None: the raw device `dev`), a read or a
    /// write, as task `pid`'s IO `tag`. Returns the bios submitted and
    /// whether `pid` must sleep for a tag. Bytes outside the file's blocks
    /// are left out (the kernel would allocate or zero them).
    #[allow(clippy::too_many_arguments)]
    pub fn submit_dio(
        &mut self,
        pid: Pid,
        dev: usize,
        ino: Option<InodeId>,
        off: u64,
        len: u64,
        read: bool,
        tag: u32,
    ) -> (u32, bool) {
        use crate::block::blk_wbt::{REQ_IDLE, REQ_READ, REQ_SYNC};
        let ps = self.page_size();
        let spp = ps / 512;
        let opf = if read { REQ_READ } else { REQ_SYNC | REQ_IDLE };
        // (sector, sectors); one run, inline, in the common case
        let mut runs: crate::sim::vec1::Vec1<(u64, u64)> = Default::default();
        let (mut pos, end) = (off, off + len);
        while pos < end {
            let (sector, n) = match ino {
                None => (pos / 512, (end - pos) / 512),
                Some(ino) => {
                    let p = pos / ps;
                    let in_page = pos % ps;
                    let pages = (end - pos).div_ceil(ps);
                    match self.inodes[ino].extent_lookup(p, pages, spp) {
                        Some((s, run)) => {
                            let bytes = (run * ps - in_page).min(end - pos);
                            (s + in_page / 512, bytes / 512)
                        }
                        None => {
                            pos = (p + 1) * ps;
                            continue;
                        }
                    }
                }
            };
            let n = n.max(1);
            match runs.as_mut_slice().last_mut() {
                Some((s, k)) if *s + *k == sector => *k += n,
                _ => runs.push((sector, n)),
            }
            pos += n * 512;
        }
        let (mut nbios, mut wait) = (0u32, false);
        let max = DIO_BIO_MAX_PAGES * spp;
        let mut bios: crate::sim::vec1::Vec1<(u64, u64)> = Default::default();
        for &(mut s, mut k) in runs.as_slice() {
            while k > 0 {
                let n = k.min(max);
                bios.push((s, n));
                s += n;
                k -= n;
            }
        }
        // the count is known before the first completion can arrive
        let total = bios.len() as u32;
        if total == 0 {
            // nothing mapped: the IO is done at once
            self.dio_expect(pid, tag, 1);
            self.fio_dio_bio_done(pid, tag);
            return (0, false);
        }
        self.dio_expect(pid, tag, total);
        let plug = self.blk_start_plug(pid);
        for &(s, n) in bios.as_slice() {
            let bio = Bio {
                dev,
                sector: s,
                nr_sectors: n,
                ino: ino.unwrap_or(0),
                page_start: 0,
                npages: 0,
                submitter: pid,
                submit_time: self.now(),
                seg_sectors: spp,
                parent: None,
                remaining: 0,
                opf,
                owner: BioOwner::Dio {
                    pid: pid as u32,
                    tag,
                },
                io_end: None,
            };
            if read {
                self.vm.pgpgin += n / 2;
            }
            wait |= self.submit_bio(bio);
            nbios += 1;
        }
        self.blk_finish_plug(pid, plug);
        (nbios, wait)
    }

    /// `iomap_dio_bio_end_io`: one bio of task `pid`'s direct IO `tag` is
    /// done; the IO completes with its last bio (the fio engine's).
    pub fn dio_bio_end_io(&mut self, pid: Pid, tag: u32, b: &Bio) {
        let _ = b;
        self.fio_dio_bio_done(pid, tag);
    }
}
