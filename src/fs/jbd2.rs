//! The jbd2 journal (fs/jbd2/transaction.c, commit.c) and the in-place
//! writeback of journalled blocks through the block device's page cache
//! (fs/buffer.c, block/fops.c `blkdev_writepages`). ext4 (`ext4_meta`) says
//! which blocks an operation changes and what a writeback handle reserves;
//! this file journals them.
//!
//! A handle adds the blocks it dirties to the running transaction (each
//! block once per transaction). Reserved credits (`j_reserved_credits`) are
//! held by writeback's rounds from their handle's start, then by their
//! io_ends until the conversion after its IO; at most half a transaction may be reserved, and
//! a handle that would pass that waits (`j_wait_reserved`). The transaction
//! commits `commit` seconds after its first block (`j_commit_interval`,
//! 5 s) or when its logged blocks plus the reserved credits reach a quarter
//! of the journal (`j_max_transaction_buffers`); a handle that finds it full
//! while another commit is in flight waits for that commit. The commit task
//! (`jbd2/DEV-8`) writes descriptor blocks (`JBD2_TAGS_PER_DESC` tags each)
//! and the blocks sequentially at the journal head under its plug, waits,
//! then writes the commit block. Once the commit block is on disk, the
//! blocks are dirty in the block device's page cache (`mark_buffer_dirty`
//! from `__jbd2_journal_refile_buffer`), where the flusher writes them like
//! any inode's pages, with REQ_META, in 4 KiB buffers that merge in its plug.
//!
//! An fsync that allocated blocks waits for the running transaction's
//! commit (`jbd2_complete_transaction`, fs/sync.rs).
//!
//! While the commit writes a block's copy to the log, the block is
//! `BH_Shadow` (`jbd2_journal_write_metadata_buffer`), until the commit
//! has waited for that IO (`jbd2_journal_commit_transaction` clears it as
//! it waits on the log buffers). A handle that wants to change such a
//! block waits for it (`do_get_write_access`, in `wait_on_bit_io`: IO
//! wait). A writer's mtime update does this to its inode's table block at
//! each tick (`ext4_dirty_inode`), so where the log write queues behind
//! the data on the device the writer stops for as long as the commit
//! takes.
//!
//! The commit task prints `jbd2_start_commit` as it takes the running
//! transaction and `jbd2_end_commit` once its commit block is on disk.
//!
//! Not modelled: data=ordered waits in the commit (ext4's delalloc
//! writeback allocates unwritten extents under dioread_nolock, the 6.x
//! default, and those add no ordered data), the locked phase in which new
//! handles wait for the running ones to stop (`wait_transaction_locked`),
//! checkpointing when the journal runs out of space (the flusher or a task
//! then writes the blocks in place itself), sync(2) commits, and jbd2's
//! other tracepoints.

use crate::kernel::{Ev, InodeId, Kernel, Pid};
use crate::mm::filemap::RangeSet;
use crate::sim::Ns;

/// `JBD2_TAGS_PER_DESC`: block tags per descriptor block (16-byte
/// csum-v3 tags, `journal_block_tag3_t`, in 4 KiB, less the header and
/// tail).
pub const JBD2_TAGS_PER_DESC: u64 = 254;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitStage {
    /// Descriptor and metadata blocks in flight.
    Data,
    /// The commit block in flight.
    CommitBlock,
}

/// `journal_t` with its running and committing transaction.
#[derive(Debug)]
pub struct Journal {
    /// The commit task (`jbd2/DEV-8`).
    pub task: Pid,
    /// First block and length of the journal area.
    pub start: u64,
    pub len: u64,
    /// Next journal block to write (wraps).
    pub head: u64,
    /// Home blocks logged in the running transaction.
    pub running: RangeSet,
    /// The running transaction's id (`t_tid`); its commit timer carries it.
    pub tid: u32,
    pub running_since: Option<Ns>,
    pub commit_interval: Ns,
    /// The committing transaction's blocks, its stage and bios in flight.
    pub committing: Option<(RangeSet, CommitStage, u32)>,
    /// A commit was asked for while another was in flight.
    pub commit_again: bool,
    /// Tasks waiting in `start_this_handle` for a full transaction to
    /// commit.
    pub waiters: Vec<Pid>,
    /// `j_reserved_credits`: credits of reserved handles, held from an
    /// inode's writeback until its unwritten extents are converted after
    /// the IO (dioread_nolock); at most half a transaction.
    pub reserved: u64,
    /// Tasks waiting for reserved credits (`j_wait_reserved`).
    pub rsv_waiters: Vec<Pid>,
    /// The committing transaction's id, and the last one committed.
    pub committing_tid: u32,
    pub committed_tid: Option<u32>,
    /// Tasks waiting for transaction `tid` to commit (an fsync).
    pub commit_waiters: Vec<(Pid, u32)>,
    /// Tasks waiting for a block the commit is writing to the log
    /// (`BH_Shadow`, `do_get_write_access`).
    pub shadow_waiters: Vec<Pid>,
    /// io_ends whose conversion waits, in order: the first for its inode's
    /// shadowed block, the rest behind it on the one-at-a-time
    /// `ext4-rsv-conversion` workqueue.
    pub conversions: Vec<(InodeId, crate::fs::ext4::IoEndId)>,
    /// Blocks a transaction took back while their pages waited for
    /// writeback in place: `do_get_write_access` clears the buffer's dirty
    /// bit (it is `jbddirty` until that transaction commits), so the page
    /// stays dirty but writeback finds no dirty buffer in it and writes
    /// nothing (`__block_write_full_folio`). A block the running
    /// transactions keep touching is written in place only when the
    /// flusher reaches it between its commit and the next change.
    pub taken: RangeSet,
}

impl Journal {
    /// `j_max_transaction_buffers`: a quarter of the journal
    /// (`jbd2_journal_get_max_txn_bufs`).
    pub fn max_txn(&self) -> u64 {
        self.len / 4
    }
    /// Whether `block` is `BH_Shadow`: in the committing transaction while
    /// its copy is on its way to the log.
    pub fn shadows(&self, block: u64) -> bool {
        match &self.committing {
            Some((blocks, CommitStage::Data, _)) => blocks.overlap(block, block + 1) > 0,
            _ => false,
        }
    }

    /// The running transaction's `t_outstanding_credits` reached the
    /// maximum: logged blocks plus the reserved credits it started with.
    pub fn full(&self) -> bool {
        self.running.count() + self.reserved >= self.max_txn()
    }
}

impl Kernel {
    /// `jbd2_journal_init_inode` + `jbd2_journal_load`: the journal of
    /// superblock `sb`, `len` blocks from block `start`, committing every
    /// `commit_interval`, and its commit task.
    pub fn jbd2_journal_init(
        &mut self,
        sb: usize,
        start: u64,
        len: u64,
        commit_interval: Ns,
    ) -> Journal {
        // "jbd2/DEV-INO", INO being ext4's journal inode (EXT4_JOURNAL_INO, 8)
        let name = format!("jbd2/{}-8", self.sc.devices[self.sbs[sb].dev].name);
        let task = self.new_task(name, crate::kernel::Body::Kworker, None);
        Journal {
            task,
            start,
            len,
            head: 0,
            running: RangeSet::default(),
            tid: 0,
            running_since: None,
            commit_interval,
            committing: None,
            commit_again: false,
            waiters: Vec::new(),
            reserved: 0,
            rsv_waiters: Vec::new(),
            committing_tid: 0,
            committed_tid: None,
            commit_waiters: Vec::new(),
            shadow_waiters: Vec::new(),
            conversions: Vec::new(),
            taken: RangeSet::default(),
        }
    }

    /// `jbd2_complete_transaction` for an fsync by `pid`: commit the
    /// running transaction (or, if it is empty, wait for the one
    /// committing). Returns the transaction to wait for, None if there is
    /// nothing to wait for.
    pub fn jbd2_complete_transaction(&mut self, sb: usize, pid: Pid) -> Option<u32> {
        let j = self.sbs[sb].ext4_mut().journal();
        let tid = if !j.running.is_empty() {
            j.tid
        } else if j.committing.is_some() {
            j.committing_tid
        } else {
            return None;
        };
        j.commit_waiters.push((pid, tid));
        if !j.running.is_empty() {
            self.jbd2_start_commit(sb);
        }
        Some(tid)
    }

    /// Whether transaction `tid` of `sb` has committed.
    pub fn jbd2_committed(&mut self, sb: usize, tid: u32) -> bool {
        let j = self.sbs[sb].ext4_mut().journal();
        j.committed_tid
            .is_some_and(|c| c.wrapping_sub(tid) as i32 >= 0)
    }

    /// `jbd2_journal_get_write_access` + `jbd2_journal_dirty_metadata`: the
    /// block joins the running transaction, which commits by size at once
    /// or by age when its timer fires.
    ///
    /// A block whose page waits for writeback in place from an earlier
    /// commit is taken back (`Journal::taken`).
    pub fn jbd2_journal_dirty_metadata(&mut self, sb: usize, block: u64) {
        let m = self.sbs[sb].ext4_mut().meta();
        let bdev = m.bdev_inode;
        if m.journal.running.insert(block, block + 1) > 0
            && self.inodes[bdev].dirty.overlap(block, block + 1) > 0
        {
            let j = self.sbs[sb].ext4_mut().journal();
            j.taken.insert(block, block + 1);
        }
        self.jbd2_get_transaction(sb);
        let j = self.sbs[sb].ext4_mut().journal();
        if j.full() {
            self.jbd2_start_commit(sb);
        }
    }

    /// `jbd2_get_transaction`: the first handle to start with no running
    /// transaction creates one, and its commit timer starts then
    /// (`t_expires`), whether or not the handle goes on to log a block.
    pub fn jbd2_get_transaction(&mut self, sb: usize) {
        let now = self.now();
        let j = self.sbs[sb].ext4_mut().journal();
        if j.running_since.is_none() {
            j.running_since = Some(now);
            let (at, tid) = (now + j.commit_interval, j.tid);
            self.q
                .schedule(at, Ev::JournalCommit { sb: sb as u32, tid });
        }
    }

    /// `jbd2_journal_get_write_access` of `block` by `pid`'s handle: false
    /// if the block is in the committing transaction and its copy is on its
    /// way to the log (`BH_Shadow`); `pid` then sleeps in IO wait until
    /// the commit's log blocks are written (`do_get_write_access`). A block
    /// the commit has not reached, or has written, is copied or taken at
    /// once.
    pub fn jbd2_get_write_access(&mut self, sb: usize, pid: Pid, block: u64) -> bool {
        let j = self.sbs[sb].ext4_mut().journal();
        if !j.shadows(block) {
            return true;
        }
        if !j.shadow_waiters.contains(&pid) {
            j.shadow_waiters.push(pid);
        }
        self.tasks[pid].stall = crate::kernel::psi::Stall::Io;
        false
    }

    /// Whether the conversion of `ino`'s io_end `id` must wait, and if so
    /// park it: the conversion logs the inode's table block, so it waits
    /// while that block is shadowed (`ext4_convert_unwritten_io_end_vec` →
    /// `ext4_mark_inode_dirty` → `do_get_write_access`), and the workqueue
    /// runs one conversion at a time, so any after a waiting one wait too.
    /// The pages stay under writeback and the round's credits reserved
    /// until the shadow clears.
    pub fn jbd2_conversion_must_wait(
        &mut self,
        ino: InodeId,
        id: crate::fs::ext4::IoEndId,
    ) -> bool {
        let sb = self.inodes[ino].sb as usize;
        if self.sbs[sb].ext4().meta.is_none() {
            return false;
        }
        let iblock = self.ext4_inode_block(ino);
        let j = self.sbs[sb].ext4_mut().journal();
        if !j.shadows(iblock) && j.conversions.is_empty() {
            return false;
        }
        j.conversions.push((ino, id));
        true
    }

    /// `start_this_handle` → `add_transaction_credits`: a handle may start
    /// unless the running transaction is full; then its commit starts, and
    /// if another commit is still in flight the task waits for that one
    /// (`wait_transaction_locked`). Returns false if `pid` must sleep; the
    /// end of the commit wakes it.
    ///
    /// A writeback handle also reserves `rsv` credits for the conversion
    /// after its IO (`jbd2__journal_start` with `rsv_blocks`: the reserved
    /// handle's credits join `j_reserved_credits` in
    /// `add_transaction_credits` as the handle starts); with half a
    /// transaction reserved it waits for conversions to return some
    /// (`j_wait_reserved`). ext4 starts such a handle for every round of
    /// ->writepages (every extent it maps, `ext4_do_writepages`), and its
    /// io_end keeps the reservation. This is what paces ext4 small-file
    /// writeback on the rig, and random writes into a file's unwritten
    /// extents (a round per run of adjacent dirty pages).
    pub fn jbd2_handle_start(&mut self, sb: usize, pid: Pid, rsv: u64) -> bool {
        let j = self.sbs[sb].ext4_mut().journal();
        if rsv > 0 && j.reserved + rsv > j.max_txn() / 2 {
            if !j.rsv_waiters.contains(&pid) {
                j.rsv_waiters.push(pid);
            }
            return false;
        }
        if j.full() {
            self.jbd2_start_commit(sb);
            let j = self.sbs[sb].ext4_mut().journal();
            if j.full() {
                if !j.waiters.contains(&pid) {
                    j.waiters.push(pid);
                }
                return false;
            }
        }
        self.sbs[sb].ext4_mut().journal().reserved += rsv;
        self.jbd2_get_transaction(sb);
        true
    }

    /// `jbd2_journal_free_reserved`: a reserved handle that will not be
    /// used (its round found nothing to write) gives its `rsv` credits
    /// back, and the tasks waiting for reserved credits wake
    /// (`sub_reserved_credits`).
    pub fn jbd2_free_reserved(&mut self, sb: usize, rsv: u64) {
        let j = self.sbs[sb].ext4_mut().journal();
        j.reserved -= rsv;
        for p in std::mem::take(&mut j.rsv_waiters) {
            self.wake_up_process(p);
        }
    }

    /// A reserved handle of `rsv` credits is used
    /// (`jbd2_journal_start_reserved`) to log `block`: its credits go back,
    /// and the tasks waiting for reserved credits wake once the block is
    /// logged.
    pub fn jbd2_reserved_handle_log(&mut self, sb: usize, rsv: u64, block: u64) {
        let j = self.sbs[sb].ext4_mut().journal();
        j.reserved -= rsv;
        let waiters = std::mem::take(&mut j.rsv_waiters);
        self.jbd2_journal_dirty_metadata(sb, block);
        for p in waiters {
            self.wake_up_process(p);
        }
    }

    /// The commit timer of transaction `tid`.
    pub fn jbd2_commit_timer(&mut self, sb: usize, tid: u32) {
        let j = self.sbs[sb].ext4_mut().journal();
        if j.tid == tid && j.running_since.is_some() {
            self.jbd2_start_commit(sb);
        }
    }

    /// `jbd2_journal_commit_transaction`, first half: the running
    /// transaction becomes the committing one and its descriptor and
    /// metadata blocks go to the journal, sequentially, under the commit
    /// task's plug. One commit at a time.
    fn jbd2_start_commit(&mut self, sb: usize) {
        let j = self.sbs[sb].ext4_mut().journal();
        if j.committing.is_some() {
            j.commit_again = true;
            return;
        }
        let blocks = std::mem::take(&mut j.running);
        let (task, tid) = (j.task, j.tid);
        j.committing_tid = j.tid;
        j.tid = j.tid.wrapping_add(1);
        j.running_since = None;
        let n = blocks.count();
        let total = n + n.div_ceil(JBD2_TAGS_PER_DESC);
        // a transaction whose handles logged nothing writes its commit
        // block alone
        let stage = if total == 0 {
            CommitStage::CommitBlock
        } else {
            CommitStage::Data
        };
        j.committing = Some((blocks, stage, 0));
        if self.tracer.on.jbd2_start_commit {
            self.jbd2_trace_commit(sb, task, "jbd2_start_commit", tid, None);
        }
        self.jbd2_write(sb, total.max(1));
    }

    /// Write `n` journal blocks at the head (two bios when they wrap),
    /// counting them in the committing transaction before each is
    /// submitted (a bio may complete within submit_bio).
    fn jbd2_write(&mut self, sb: usize, n: u64) {
        let dev = self.sbs[sb].dev;
        let (task, start, len, head) = {
            let j = self.sbs[sb].ext4_mut().journal();
            (j.task, j.start, j.len, j.head)
        };
        let first = n.min(len - head);
        let runs = [(head, first), (0, n - first)];
        let plugged = self.blk_start_plug(task);
        for (at, k) in runs.into_iter().filter(|r| r.1 > 0) {
            let j = self.sbs[sb].ext4_mut().journal();
            j.committing.as_mut().expect("a commit").2 += 1;
            // WRITE_SYNC | REQ_META (and PREFLUSH|FUA for the commit block)
            let opf = crate::block::blk_wbt::REQ_SYNC | crate::block::blk_wbt::REQ_META;
            let owner = crate::block::BioOwner::Jbd2(sb as u32);
            self.submit_meta_bio(dev, task, (start + at) * 8, k * 8, opf, owner);
        }
        let j = self.sbs[sb].ext4_mut().journal();
        j.head = (head + n) % len;
        self.blk_finish_plug(task, plugged);
    }

    /// A `jbd2_commit` class line (`jbd2_start_commit`, `jbd2_end_commit`
    /// with `head`): "dev MAJOR,MINOR transaction TID sync 0".
    fn jbd2_trace_commit(
        &mut self,
        sb: usize,
        task: Pid,
        event: &str,
        tid: u32,
        head: Option<u32>,
    ) {
        let dev = self.devs[self.sbs[sb].dev].bdi_name().replace(':', ",");
        match head {
            Some(h) => self.trace_line(
                task,
                event,
                format_args!("dev {dev} transaction {tid} sync 0 head {h}"),
            ),
            None => self.trace_line(
                task,
                event,
                format_args!("dev {dev} transaction {tid} sync 0"),
            ),
        }
    }

    /// A journal bio completed: after the blocks, the commit block; after
    /// the commit block, the transaction's blocks are dirty buffers of the
    /// block device, and a commit asked for meanwhile starts.
    pub fn jbd2_bio_done(&mut self, sb: usize) {
        let m = self.sbs[sb].ext4_mut().meta();
        let bdev = m.bdev_inode;
        let j = &mut m.journal;
        let c = j.committing.as_mut().expect("a commit in flight");
        c.2 -= 1;
        if c.2 > 0 {
            return;
        }
        if c.1 == CommitStage::Data {
            c.1 = CommitStage::CommitBlock;
            // the log buffers are written: their shadows clear
            let shadowed = std::mem::take(&mut j.shadow_waiters);
            let conversions = std::mem::take(&mut j.conversions);
            self.jbd2_write(sb, 1);
            for p in shadowed {
                self.wake_up_process(p);
            }
            for (ino, id) in conversions {
                self.ext4_release_io_end(ino, id);
            }
            return;
        }
        let (blocks, _, _) = j.committing.take().expect("commit");
        let done = j.committing_tid;
        j.committed_tid = Some(done);
        let mut woken = Vec::new();
        j.commit_waiters.retain(|&(p, t)| {
            let ready = done.wrapping_sub(t) as i32 >= 0;
            if ready {
                woken.push(p);
            }
            !ready
        });
        let again = std::mem::take(&mut j.commit_again) || j.full();
        let pending = j.running_since.is_some();
        let task = j.task;
        let waiters = std::mem::take(&mut j.waiters);
        if self.tracer.on.jbd2_end_commit {
            // head: j_tail_sequence, the oldest transaction the log still
            // needs; with checkpoints not modelled, the one just committed
            self.jbd2_trace_commit(sb, task, "jbd2_end_commit", done, Some(done));
        }
        for &(s, e) in blocks.ranges() {
            self.sbs[sb].ext4_mut().journal().taken.remove(s, e);
            self.filemap_dirty_range(task, bdev, s, e - s);
        }
        for p in waiters.into_iter().chain(woken) {
            self.wake_up_process(p);
        }
        if again && pending {
            self.jbd2_start_commit(sb);
        }
    }

    /// The pieces of a run `[start, start + n)` of block-device inode
    /// `ino`'s pages that writeback takes, each with whether its buffers
    /// are dirty: not those a transaction took back (`Journal::taken`,
    /// which they leave). Only a journal's block device has any.
    pub fn jbd2_buffer_runs(&mut self, ino: InodeId, start: u64, n: u64) -> Vec<(u64, u64, bool)> {
        let sb = self.inodes[ino].sb as usize;
        let e = start + n;
        let j = match self.sbs[sb].fs {
            crate::fs::FsType::Ext4(ref mut x) => match x.meta.as_mut() {
                Some(m) if m.bdev_inode == ino => &mut m.journal,
                _ => return vec![(start, n, true)],
            },
            _ => return vec![(start, n, true)],
        };
        if j.taken.overlap(start, e) == 0 {
            return vec![(start, n, true)];
        }
        let mut out = Vec::new();
        let mut p = start;
        while p < e {
            let (q, dirty) = match j.taken.run_end(p) {
                Some(x) => (x.min(e), false),
                None => (j.taken.next_at_or_after(p).map_or(e, |x| x.min(e)), true),
            };
            out.push((p, q - p, dirty));
            p = q;
        }
        j.taken.remove(start, e);
        out
    }
}
