//! The inode cache (fs/inode.c): every inode by id, and inode reclaim.
//!
//! Ids are handed out in creation order and never reused, so walking the
//! ids in order visits inodes oldest first. An inode that nothing will
//! touch again is evicted (`evict()`, as `prune_icache_sb` does for unused
//! inodes once reclaim has taken their last page): its slot stays, marked
//! `I_FREEING`, until every inode of its chunk is gone, and then the chunk's
//! memory takes new inodes. A long small-file run keeps about as many
//! inodes as it has files in the page cache, not one per file created.

use super::Inode;
use crate::kernel::InodeId;

/// Inodes per chunk of the table: 4096 (wbsim's memory layout, 512 KiB
/// a chunk; not a kernel constant).
const CHUNK_SHIFT: u32 = 12;
const CHUNK: usize = 1 << CHUNK_SHIFT;

/// Every inode from the oldest chunk with one not evicted, by id.
#[derive(Default)]
pub struct InodeTable {
    /// Chunk `c` holds ids `c * CHUNK ..`; the released ones are empty.
    chunks: Vec<Vec<Inode>>,
    /// How many inodes of each chunk are evicted.
    evicted: Vec<usize>,
    /// Chunks before this one are released.
    first_chunk: usize,
    /// The id the next inode gets.
    end: InodeId,
    /// Released chunks' memory, for new chunks.
    spare: Vec<Vec<Inode>>,
}

impl InodeTable {
    /// The first id still in the table (ids below it are evicted).
    pub fn first_id(&self) -> InodeId {
        self.first_chunk * CHUNK
    }
    /// One past the last id handed out.
    pub fn end_id(&self) -> InodeId {
        self.end
    }
    /// Add an inode; returns its id.
    pub fn push(&mut self, inode: Inode) -> InodeId {
        let id = self.end;
        if id & (CHUNK - 1) == 0 {
            let v = self
                .spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(CHUNK));
            self.chunks.push(v);
            self.evicted.push(0);
        }
        self.chunks[id >> CHUNK_SHIFT].push(inode);
        self.end += 1;
        id
    }
    /// Mark an inode evicted (its memory goes with its chunk's, in
    /// `release_evicted`).
    pub fn evict(&mut self, id: InodeId) {
        let inode = &mut self[id];
        inode.i_state = super::I_FREEING;
        inode.dirty = Default::default();
        inode.extents = Default::default();
        self.evicted[id >> CHUNK_SHIFT] += 1;
    }
    /// Release the chunks at the front that hold only evicted inodes: their
    /// ids go below `first_id`.
    pub fn release_evicted(&mut self) {
        while self.evicted.get(self.first_chunk) == Some(&CHUNK) {
            let mut v = std::mem::take(&mut self.chunks[self.first_chunk]);
            v.clear();
            self.spare.push(v);
            self.first_chunk += 1;
        }
    }
    /// The inode `id` if the table holds it (evicted ones included while
    /// their chunk is kept).
    #[inline]
    pub fn get(&self, id: InodeId) -> Option<&Inode> {
        self.chunks.get(id >> CHUNK_SHIFT)?.get(id & (CHUNK - 1))
    }
    /// The inodes in the table, oldest first, with their ids.
    pub fn iter(&self) -> impl Iterator<Item = (InodeId, &Inode)> {
        let first = self.first_id();
        self.chunks[self.first_chunk..]
            .iter()
            .flatten()
            .enumerate()
            .map(move |(i, inode)| (first + i, inode))
    }
}

impl std::ops::Index<InodeId> for InodeTable {
    type Output = Inode;
    fn index(&self, id: InodeId) -> &Inode {
        &self.chunks[id >> CHUNK_SHIFT][id & (CHUNK - 1)]
    }
}

impl std::ops::IndexMut<InodeId> for InodeTable {
    fn index_mut(&mut self, id: InodeId) -> &mut Inode {
        let inode = &mut self.chunks[id >> CHUNK_SHIFT][id & (CHUNK - 1)];
        debug_assert!(
            inode.i_state & super::I_FREEING == 0,
            "inode {id} used after eviction"
        );
        inode
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_leave_when_all_their_inodes_are_evicted() {
        let mut t = InodeTable::default();
        for i in 0..3 * CHUNK {
            assert_eq!(t.push(Inode::default()), i);
        }
        t[5].nr_cached = 7;
        // the first chunk but one inode, and all of the second
        for i in (0..2 * CHUNK).filter(|&i| i != 5) {
            t.evict(i);
        }
        t.release_evicted();
        assert_eq!(t.first_id(), 0, "inode 5 holds the first chunk");
        t.evict(5);
        t.release_evicted();
        assert_eq!((t.first_id(), t.end_id()), (2 * CHUNK, 3 * CHUNK));
        assert_eq!(t.iter().count(), CHUNK);
        // new inodes take the released chunks' memory
        assert_eq!(t.spare.len(), 2);
        t.push(Inode::default());
        assert_eq!((t.spare.len(), t.end_id()), (1, 3 * CHUNK + 1));
        assert_eq!(t.iter().last().map(|(id, _)| id), Some(3 * CHUNK));
    }
}
