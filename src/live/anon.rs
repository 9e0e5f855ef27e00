//! An anonymous private mapping, the memory the live side's programs touch
//! page by page: simoop's working sets, allocations and read buffers
//! (live/simoop.rs) and the host probe's memory (live/host_probe.rs).

/// An anonymous private mapping, unmapped when dropped.
pub struct Anon {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by one Anon and used through it only.
unsafe impl Send for Anon {}

impl Anon {
    /// Map `len` bytes, untouched (no page is allocated until written).
    pub fn new(len: usize) -> Result<Anon, String> {
        Anon::map(len, 0)
    }

    /// `new` with more mmap flags (`MAP_NORESERVE`).
    pub fn map(len: usize, flags: libc::c_int) -> Result<Anon, String> {
        if len == 0 {
            return Ok(Anon {
                ptr: std::ptr::null_mut(),
                len: 0,
            });
        }
        // SAFETY: a new anonymous private mapping; no existing memory is
        // affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!(
                "mmap of {} MiB: {}",
                len >> 20,
                std::io::Error::last_os_error()
            ));
        }
        Ok(Anon {
            ptr: p as *mut u8,
            len,
        })
    }

    /// Write one byte to each page, faulting the mapping in.
    pub fn touch(&mut self, page: usize) {
        for off in (0..self.len).step_by(page) {
            // SAFETY: off < len, inside the mapping.
            unsafe { std::ptr::write_volatile(self.ptr.add(off), 1) };
        }
    }

    /// The mapping's first byte (null for an empty one).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    /// `MADV_NOHUGEPAGE`: one fault a 4 KiB page, not one a huge page
    /// (failure only means THP is off, which is what is wanted).
    pub fn no_huge_pages(&mut self) {
        if self.len > 0 {
            // SAFETY: ptr..ptr+len is this mapping.
            unsafe {
                libc::madvise(
                    self.ptr as *mut libc::c_void,
                    self.len,
                    libc::MADV_NOHUGEPAGE,
                )
            };
        }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: the mapping is len bytes, readable and writable, zeroed
        // by the kernel, and borrowed mutably through self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Anon {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: our own mapping, unmapped once.
            unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
        }
    }
}
