//! Where a streamed trace's lines go: into its file, written on a thread of
//! its own.
//!
//! The lines are formatted by the simulation in chunks ([`CHUNK`] bytes and
//! more); each full chunk is handed to the writer thread, which writes it
//! and hands the emptied buffer back for reuse. Writing a large trace into
//! the page cache is a third of a traced run's time on one CPU (1000 dd at
//! bs=4k: 179 MB); on a second CPU it overlaps with the simulation. The
//! chunks are written in the order they were formatted, so the file is the
//! same bytes as one written in line; at most [`IN_FLIGHT`] chunks wait, so
//! the memory stays bounded when the disk is the slower of the two.

use std::fs::File;
use std::io::Write as _;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// The size at which the lines formatted so far are handed to the writer.
pub const CHUNK: usize = 256 << 10;

/// How many chunks may wait for the writer before the simulation waits.
const IN_FLIGHT: usize = 4;

/// The buffers that go round: the one being filled, those waiting, the one
/// being written. A fixed pool: a new buffer for each chunk would be fresh
/// memory each time, which the kernel must fault in and clear.
const POOL: usize = IN_FLIGHT + 2;

/// The writer thread and its two channels: full chunks to it, emptied ones
/// back.
pub struct Sink {
    to_writer: Option<SyncSender<String>>,
    emptied: Receiver<String>,
    /// Buffers made so far (at most [`POOL`]; the first is the tracer's).
    made: usize,
    writer: Option<JoinHandle<(File, Option<std::io::Error>)>>,
}

impl Sink {
    /// Start writing into `f` at its current offset.
    pub fn new(mut f: File) -> std::io::Result<Sink> {
        let (to_writer, full) = sync_channel::<String>(IN_FLIGHT);
        let (give_back, emptied) = sync_channel::<String>(POOL);
        let writer = std::thread::Builder::new()
            .name("wbsim-trace".into())
            .spawn(move || {
                // after the first error the rest is dropped, as a full
                // disk would drop it; `finish` reports that error
                let mut error = None;
                for mut chunk in full {
                    if error.is_none() {
                        if let Err(e) = f.write_all(chunk.as_bytes()) {
                            error = Some(e);
                        }
                    }
                    chunk.clear();
                    let _ = give_back.try_send(chunk);
                }
                (f, error)
            })?;
        Ok(Sink {
            to_writer: Some(to_writer),
            emptied,
            made: 1,
            writer: Some(writer),
        })
    }

    /// Hand the lines in `buf` to the writer; `buf` is left empty (an
    /// emptied chunk's buffer when one has come back).
    pub fn send(&mut self, buf: &mut String) {
        if buf.is_empty() {
            return;
        }
        let spare = match self.emptied.try_recv() {
            Ok(b) => b,
            Err(_) if self.made < POOL => {
                self.made += 1;
                String::with_capacity(CHUNK + 4096)
            }
            // wait for the writer to give one back (none comes if it has
            // ended early: it panicked, and `finish` says so)
            Err(_) => self.emptied.recv().unwrap_or_default(),
        };
        let full = std::mem::replace(buf, spare);
        if let Some(tx) = &self.to_writer {
            // the writer only ends when the sender is dropped (or panics,
            // then `finish` reports it)
            let _ = tx.send(full);
        }
    }

    /// Wait for the writer to write everything sent; the file back, or the
    /// first error writing it.
    pub fn finish(mut self) -> std::io::Result<File> {
        self.to_writer = None;
        let writer = self.writer.take().expect("finish runs once");
        match writer.join() {
            Ok((f, None)) => Ok(f),
            Ok((_, Some(e))) => Err(e),
            Err(_) => Err(std::io::Error::other("the trace writer thread panicked")),
        }
    }
}

impl Drop for Sink {
    /// A run dropped before `finish` (an error elsewhere) still waits for
    /// its writer, so that no thread outlives the run's files.
    fn drop(&mut self) {
        self.to_writer = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn chunks_are_written_in_order_and_buffers_come_back() {
        let dir = std::env::temp_dir().join(format!("wbsim-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t");
        let mut f = File::create(&path).unwrap();
        f.write_all(b"HEAD").unwrap();
        let mut s = Sink::new(f).unwrap();
        let mut buf = String::new();
        let mut want = String::from("HEAD");
        for i in 0..2000 {
            let line = format!("line {i} {}\n", "x".repeat(i % 300));
            buf.push_str(&line);
            want.push_str(&line);
            if buf.len() >= 1000 {
                s.send(&mut buf);
                assert!(buf.is_empty());
            }
        }
        s.send(&mut buf);
        // the pool stays bounded however many chunks were sent
        assert!(s.made <= POOL, "{} buffers", s.made);
        drop(s.finish().unwrap());
        let mut got = String::new();
        File::open(&path).unwrap().read_to_string(&mut got).unwrap();
        assert_eq!(got, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_write_error_is_reported_at_the_end() {
        // /dev/full refuses every write with ENOSPC
        let Ok(f) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
            eprintln!("skipped: no /dev/full here");
            return;
        };
        let mut s = Sink::new(f).unwrap();
        for _ in 0..10 {
            let mut buf = "a line\n".repeat(100);
            s.send(&mut buf);
        }
        let e = s.finish().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(28), "{e}");
    }
}
