//! RAID 0 (striping) address mapping, as md's raid0 personality lays out a
//! set of equal-size members.
//!
//! The array's address space is cut into chunks of `chunk_sectors`; chunk
//! `c = sector / chunk_sectors` lives on member `c % ndevs`, at member sector
//! `(c / ndevs) * chunk_sectors + sector % chunk_sectors`. So consecutive
//! chunks go round-robin over the members, and the `k`-th stripe (chunks
//! `k * ndevs .. (k + 1) * ndevs`) occupies member sectors
//! `k * chunk_sectors .. (k + 1) * chunk_sectors` on every member.
//!
//! A request is split at chunk boundaries; each piece maps to one member.
//! Pieces that land on the same member are not merged (md splits the same
//! way: one bio per chunk crossed). Unequal member sizes (md's multiple
//! zones) are not modelled. Any non-zero chunk size works, not only powers
//! of two.
//!
//! The `raid0` driver (at the end) is bio-based: md's `submit_bio` splits a
//! bio at chunk boundaries and submits the member bios in the caller's
//! context (and plug); the md bio completes when its last piece does.
//! Reads are remapped and split as writes are (the member bios keep the
//! bio's op).
//! md counts each of its bios as one IO in its disk stats.

use crate::block::Bio;
use crate::drivers::{DeviceKind, DriverType, Parsed, QueueInfo};
use crate::kernel::{BioId, DevId, Kernel, Pid};
use crate::scenario::raw::{err, Entry, RawVal};
use crate::scenario::{DevSection, Device, Origin, Reader, ScenarioError};

/// `MD_MAJOR`.
pub const MD_MAJOR: u32 = 9;

/// An md RAID0 device's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Raid0Conf {
    /// Member device names, in array order.
    pub members: Vec<String>,
    /// Chunk size in sectors.
    pub chunk_sectors: u64,
}

/// `type = "raid0"`.
pub(crate) const TYPE: DriverType = DriverType {
    name: "raid0",
    keys: &["members", "chunk"],
    parse,
};

/// Keys: `members` (required: at least two device names) and `chunk` (a
/// power of two ≥ 4k; 512k).
fn parse(r: &mut Reader, s: &DevSection) -> Result<Parsed, ScenarioError> {
    let members = match r.take(&s.key("members")) {
        Some(Entry {
            val: RawVal::Array(a),
            origin,
            ..
        }) => {
            let mut m = Vec::new();
            for v in a {
                match v {
                    RawVal::Str(s) => m.push(s),
                    v => {
                        return err(
                            &origin,
                            format!("`members` contains {}; expected device names", v.describe()),
                        )
                    }
                }
            }
            if m.len() < 2 {
                return err(&origin, "`members` needs at least two devices");
            }
            m
        }
        Some(e) => {
            return err(
                &e.origin,
                "`members`: expected an array of device names, e.g. [\"ssd0\", \"ssd1\"]",
            )
        }
        None => {
            return err(
                s.type_origin,
                format!("raid0 device `{}` needs `members = [\"DEV\", ...]`", s.name),
            )
        }
    };
    let chunk_sectors = match r.size(&s.key("chunk"))? {
        Some((c, e)) if c < 4096 || !c.is_power_of_two() => {
            return err(
                &e.origin,
                format!("`chunk` = {c}; expected a power of two ≥ 4k"),
            )
        }
        Some((c, _)) => c / 512,
        None => DEFAULT_CHUNK_SECTORS,
    };
    let c = Raid0Conf {
        members,
        chunk_sectors,
    };
    Ok((DeviceKind::Raid0(c), None))
}

/// The members must be unused `ssd`, `hdd` or `disk` devices; they are
/// marked used.
pub(crate) fn claim_members(
    c: &Raid0Conf,
    devices: &[Device],
    used: &mut [bool],
    origin: &Origin,
) -> Result<(), ScenarioError> {
    for m in &c.members {
        crate::drivers::claim_member(devices, used, origin, "raid0 member", m)?;
    }
    Ok(())
}

/// md (`md_alloc`, `md_set_array_info`): bio-based, so no elevator, tags
/// or wbt of its own; not rotational, no write cache of its own.
pub fn queue_info(_: &Raid0Conf) -> QueueInfo {
    QueueInfo::bio_based(MD_MAJOR, 1)
}

/// md's default chunk, 512 KiB (mdadm's default since 3.1), in 512-byte
/// sectors.
pub const DEFAULT_CHUNK_SECTORS: u64 = 512 * 1024 / 512;

/// Split the request `[sector, sector + nr_sectors)` of a RAID 0 array of
/// `ndevs` members with chunks of `chunk_sectors` into per-member pieces:
/// `(member, member sector, nr_sectors)`, in array address order. An empty
/// request maps to no pieces. Panics if `chunk_sectors` or `ndevs` is zero.
pub fn raid0_map(
    chunk_sectors: u64,
    ndevs: u32,
    sector: u64,
    nr_sectors: u64,
) -> Vec<(u32, u64, u64)> {
    raid0_pieces(chunk_sectors, ndevs, sector, nr_sectors).collect()
}

/// [`raid0_map`]'s pieces, one at a time (nothing allocated): after the
/// first piece, each starts a chunk on the next member.
pub fn raid0_pieces(
    chunk_sectors: u64,
    ndevs: u32,
    sector: u64,
    nr_sectors: u64,
) -> impl Iterator<Item = (u32, u64, u64)> {
    assert!(chunk_sectors > 0, "raid0: chunk_sectors must be > 0");
    assert!(ndevs > 0, "raid0: ndevs must be > 0");
    let n = ndevs as u64;
    let c = sector / chunk_sectors;
    let (mut member, mut stripe) = (c % n, c / n);
    let mut off = sector % chunk_sectors;
    let mut left = nr_sectors;
    std::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let len = (chunk_sectors - off).min(left);
        let piece = (member as u32, stripe * chunk_sectors + off, len);
        left -= len;
        off = 0;
        member += 1;
        if member == n {
            member = 0;
            stripe += 1;
        }
        Some(piece)
    })
}

/// A RAID 0 array's geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raid0 {
    /// Chunk size in 512-byte sectors (md's `chunk_size` / 512). Non-zero.
    pub chunk_sectors: u64,
    /// Number of members. Non-zero.
    pub ndevs: u32,
}

impl Raid0 {
    /// An array of `ndevs` members with the default 512 KiB chunk.
    pub fn new(ndevs: u32) -> Raid0 {
        Raid0 {
            chunk_sectors: DEFAULT_CHUNK_SECTORS,
            ndevs,
        }
    }

    /// [`raid0_map`] with this array's geometry.
    pub fn map(&self, sector: u64, nr_sectors: u64) -> Vec<(u32, u64, u64)> {
        raid0_map(self.chunk_sectors, self.ndevs, sector, nr_sectors)
    }

    /// Bytes in one full stripe (a chunk on every member): the request size
    /// that keeps every member busy once.
    pub fn stripe_bytes(&self) -> u64 {
        self.chunk_sectors * self.ndevs as u64 * 512
    }

    /// Array capacity in sectors for members of `member_sectors` each (md
    /// rounds each member down to a whole number of chunks).
    pub fn capacity_sectors(&self, member_sectors: u64) -> u64 {
        member_sectors / self.chunk_sectors * self.chunk_sectors * self.ndevs as u64
    }
}

impl Default for Raid0 {
    /// Two members, 512 KiB chunks.
    fn default() -> Raid0 {
        Raid0::new(2)
    }
}

/// An md RAID0 device's driver state.
pub struct Raid0State {
    /// The members' device ids, in array order.
    pub members: Vec<DevId>,
    pub chunk_sectors: u64,
}

impl Kernel {
    /// `raid0_run`: the array over its members.
    pub fn raid0_run(&mut self, c: &Raid0Conf) -> Raid0State {
        Raid0State {
            members: c
                .members
                .iter()
                .map(|m| {
                    self.sc
                        .devices
                        .iter()
                        .position(|d| &d.name == m)
                        .expect("validated")
                })
                .collect(),
            chunk_sectors: c.chunk_sectors,
        }
    }

    fn raid0(&self, dev: DevId) -> &Raid0State {
        match &self.devs[dev].driver {
            crate::drivers::Driver::Raid0(r) => r,
            _ => unreachable!("not an md raid0 device"),
        }
    }

    /// `md_submit_bio` → `raid0_make_request`: split at chunk boundaries,
    /// remap, and submit the member bios (`submit_bio_noacct`) in `pid`'s
    /// context and plug. Returns true if `pid` must sleep for a tag.
    pub fn raid0_submit_bio(&mut self, dev: DevId, id: BioId, pid: Pid) -> bool {
        let r = self.raid0(dev);
        let (ndevs, chunk) = (r.members.len() as u32, r.chunk_sectors);
        let (sector, nr, seg) = {
            let b = self.bios[id].as_ref().expect("bio");
            (b.sector, b.nr_sectors, b.seg_sectors)
        };
        let pieces = || raid0_pieces(chunk, ndevs, sector, nr);
        self.bios[id].as_mut().expect("bio").remaining = pieces().count() as u32;
        let now = self.now();
        self.devs[dev].stat.io_start(now);
        self.devs[dev].stat.requests_issued += 1;
        let mut wait = false;
        for (m, msector, mnr) in pieces() {
            let mdev = self.raid0(dev).members[m as usize];
            let child = Bio {
                dev: mdev,
                sector: msector,
                nr_sectors: mnr,
                seg_sectors: seg,
                parent: Some(id),
                remaining: 0,
                ..self.bios[id].clone().expect("bio")
            };
            self.devs[mdev].stat.bios_submitted += 1;
            let cid = self.alloc_bio(child);
            wait |= self.submit_bio_noacct(mdev, cid, pid);
        }
        wait
    }

    /// A member bio of md bio `parent` completed (`bio_chain_endio`): the
    /// md bio ends with its last piece (`md_end_clone_io`: md's IO
    /// accounting).
    #[inline]
    pub fn raid0_end_child_bio(&mut self, parent: BioId) {
        let p = self.bios[parent].as_mut().expect("parent bio");
        p.remaining -= 1;
        if p.remaining == 0 {
            let (dev, sectors, at) = (p.dev, p.nr_sectors, p.submit_time);
            let read = crate::block::op_is_read(p.opf);
            let now = self.now();
            self.devs[dev].stat.io_done(now, read, sectors, now - at);
            self.bio_endio(parent);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inverse of the mapping, for checking: array sector of a member sector.
    fn unmap(chunk: u64, ndevs: u32, member: u32, msector: u64) -> u64 {
        let stripe = msector / chunk;
        (stripe * ndevs as u64 + member as u64) * chunk + msector % chunk
    }

    #[test]
    fn default_chunk_is_512k() {
        assert_eq!(DEFAULT_CHUNK_SECTORS, 1024);
        let r = Raid0::default();
        assert_eq!(r.chunk_sectors, 1024);
        assert_eq!(r.ndevs, 2);
        assert_eq!(Raid0::new(4).stripe_bytes(), 2 << 20);
        // 1000 sectors per member round down to 0 chunks; 2500 to 2.
        assert_eq!(Raid0::new(3).capacity_sectors(1000), 0);
        assert_eq!(Raid0::new(3).capacity_sectors(2500), 3 * 2048);
    }

    #[test]
    fn request_inside_one_chunk_maps_to_one_member() {
        // Chunk 1024, 3 members. Sector 5000 is in chunk 4 (4096..5120),
        // member 4 % 3 = 1, member sector (4 / 3) * 1024 + 904 = 1928.
        assert_eq!(raid0_map(1024, 3, 5000, 100), vec![(1, 1928, 100)]);
        // Exactly one whole chunk.
        assert_eq!(raid0_map(1024, 3, 4096, 1024), vec![(1, 1024, 1024)]);
        // The first sector of the array.
        assert_eq!(raid0_map(1024, 3, 0, 1), vec![(0, 0, 1)]);
    }

    #[test]
    fn hand_worked_split() {
        // Chunk 8, 2 members: array sectors 6..30 cross chunks 0, 1, 2, 3.
        assert_eq!(
            raid0_map(8, 2, 6, 24),
            vec![(0, 6, 2), (1, 0, 8), (0, 8, 8), (1, 8, 6)]
        );
        // 1 MiB at 0 on the default geometry: two 512 KiB halves.
        assert_eq!(
            Raid0::default().map(0, 2048),
            vec![(0, 0, 1024), (1, 0, 1024)]
        );
    }

    #[test]
    fn empty_request_maps_to_nothing() {
        assert!(raid0_map(8, 2, 100, 0).is_empty());
    }

    #[test]
    fn single_member_is_identity() {
        assert_eq!(
            raid0_map(8, 1, 5, 12),
            vec![(0, 5, 3), (0, 8, 8), (0, 16, 1)]
        );
    }

    #[test]
    fn pieces_cover_request_respect_chunks_and_round_robin() {
        for &(chunk, ndevs) in &[(1u64, 1u32), (8, 2), (7, 3), (1024, 4), (128, 5)] {
            for &(sector, nr) in &[
                (0u64, 1u64),
                (3, 50),
                (1000, 4096),
                (12345, 777),
                (1 << 40, 3000),
            ] {
                let pieces = raid0_map(chunk, ndevs, sector, nr);
                // Lengths add up; pieces are contiguous in array space.
                assert_eq!(pieces.iter().map(|p| p.2).sum::<u64>(), nr);
                let mut s = sector;
                for (i, &(m, ms, len)) in pieces.iter().enumerate() {
                    assert!(len > 0 && m < ndevs);
                    assert_eq!(unmap(chunk, ndevs, m, ms), s);
                    // Never crosses a chunk boundary (array or member side).
                    assert!(s % chunk + len <= chunk);
                    assert_eq!(ms % chunk, s % chunk);
                    // Every piece but the first starts a chunk, every piece
                    // but the last ends one.
                    if i > 0 {
                        assert_eq!(s % chunk, 0);
                    }
                    if i + 1 < pieces.len() {
                        assert_eq!((s + len) % chunk, 0);
                    }
                    // Round-robin: consecutive pieces go to consecutive members.
                    if i > 0 {
                        assert_eq!(m, (pieces[i - 1].0 + 1) % ndevs);
                    }
                    s += len;
                }
                assert_eq!(s, sector + nr);
                // The number of pieces is the number of chunks touched.
                let chunks = (sector + nr - 1) / chunk - sector / chunk + 1;
                assert_eq!(pieces.len() as u64, chunks);
            }
        }
    }

    #[test]
    fn full_stripe_touches_each_member_once() {
        let r = Raid0::new(4);
        let pieces = r.map(3 * 4 * 1024, 4 * 1024);
        assert_eq!(pieces.len(), 4);
        for (i, &(m, ms, len)) in pieces.iter().enumerate() {
            assert_eq!((m, ms, len), (i as u32, 3 * 1024, 1024));
        }
    }

    #[test]
    #[should_panic]
    fn zero_chunk_rejected() {
        raid0_map(0, 2, 0, 1);
    }
}
