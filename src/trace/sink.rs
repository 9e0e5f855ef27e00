//! Where a streamed trace's lines go: into its file, formatted and written
//! on a thread of its own.
//!
//! The simulation fills a [`Chunk`]: lines it has formatted itself (text),
//! and lines of integer fields that it has only recorded (their time, task,
//! event and a copy of the fields), which the writer thread formats. A full
//! chunk is handed to the writer, which formats it, writes it and hands the
//! emptied chunk back for reuse. Formatting the fields lines and writing
//! them into the page cache are most of a traced run's time on one CPU
//! (1000 dd at bs=4k: 817k lines, 179 MB); on a second CPU they overlap with
//! the simulation. The chunks are written in the order they were filled, so
//! the file is the same bytes as one formatted and written in line.
//!
//! When the writer is behind (the chunk `k - LAG` not back yet), the
//! simulation formats the chunk it hands over itself rather than wait, and
//! the writer only writes it: the formatting goes to whichever CPU is free.
//!
//! The writer counts the bytes of the lines it formats and gives the count
//! back with the chunk (a chunk formatted here carries its count along). The simulation waits for chunk `k - LAG` when it
//! hands over chunk `k` (the chunks come back in order), so at most
//! `LAG + 1` chunks exist, and the bytes it knows after handing over chunk
//! `k` are those of chunks up to `k - LAG` whatever the threads' timing:
//! the trace limit, checked against them, stops a run at the same point in
//! every run.

use super::fmt::FieldsFmt;
use super::Head;
use crate::sim::Ns;
use std::fs::File;
use std::io::Write as _;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;

/// The text size at which a chunk is handed to the writer.
pub const CHUNK: usize = 256 << 10;

/// The lines at which a chunk is handed to the writer (about 220 KiB of
/// `balance_dirty_pages` lines).
pub const CHUNK_LINES: usize = 1024;

/// The chunks handed over and not yet waited for.
const LAG: usize = 4;

/// One line of a chunk: its strings end at `text_end` in the chunk's text
/// (they start where the line before's end). A formatted line's text is
/// the line; a fields line's is its comm, flags, event and bdi, one after
/// the other, and its values are the next `keys.len()` of the chunk's.
#[derive(Clone, Copy, Debug)]
struct Line {
    t: Ns,
    cpu: usize,
    pid: u32,
    text_end: u32,
    comm: u32,
    flags: u32,
    event: u32,
    /// The bdi's length, [`NONE`] without one.
    bdi: u32,
    /// The fields' names; None for a formatted line.
    keys: Option<&'static [&'static str]>,
}

const NONE: u32 = u32::MAX;

/// Lines on their way to the file.
#[derive(Debug, Default)]
pub struct Chunk {
    /// Formatted lines, and the strings of the fields lines.
    pub text: String,
    lines: Vec<Line>,
    vals: Vec<i64>,
    /// The lines formatted, and the bytes of its fields lines among them,
    /// when the simulation formatted them itself rather than wait for the
    /// writer ([`Sink::send`]).
    done: Vec<u8>,
    done_bytes: Option<u64>,
}

impl Chunk {
    /// The text from `text_end` of the last line to its end is formatted
    /// lines: mark them as the chunk's next line.
    #[inline]
    pub fn formatted(&mut self) {
        let end = self.text.len();
        if self.lines.last().map_or(0, |l| l.text_end as usize) < end {
            self.lines.push(Line {
                t: 0,
                cpu: 0,
                pid: 0,
                text_end: end as u32,
                comm: 0,
                flags: 0,
                event: 0,
                bdi: NONE,
                keys: None,
            });
        }
    }

    /// Record a line of integer fields, to be formatted as
    /// [`super::push_fields_line`] formats it.
    #[inline]
    pub fn fields(
        &mut self,
        h: &Head,
        bdi: Option<&str>,
        keys: &'static [&'static str],
        vals: &[i64],
    ) {
        self.text.push_str(h.comm);
        self.text.push_str(h.flags);
        self.text.push_str(h.event);
        if let Some(b) = bdi {
            self.text.push_str(b);
        }
        self.vals.extend_from_slice(vals);
        self.lines.push(Line {
            t: h.t,
            cpu: h.cpu,
            pid: h.pid,
            text_end: self.text.len() as u32,
            comm: h.comm.len() as u32,
            flags: h.flags.len() as u32,
            event: h.event.len() as u32,
            bdi: bdi.map_or(NONE, |b| b.len() as u32),
            keys: Some(keys),
        });
    }

    /// Whether the chunk is to be handed over.
    #[inline]
    pub fn full(&self) -> bool {
        self.text.len() >= CHUNK || self.lines.len() >= CHUNK_LINES
    }

    fn is_empty(&self) -> bool {
        self.text.is_empty() && self.lines.is_empty()
    }

    fn clear(&mut self) {
        self.text.clear();
        self.lines.clear();
        self.vals.clear();
        self.done.clear();
        self.done_bytes = None;
    }

    /// Format the lines into `done` (their text dropped).
    fn format_here(&mut self, fmt: &mut FieldsFmt) {
        let mut done = std::mem::take(&mut self.done);
        done.clear();
        self.done_bytes = Some(self.format_into(fmt, &mut done));
        self.done = done;
        self.text.clear();
        self.lines.clear();
        self.vals.clear();
    }

    /// Append the chunk's lines to `out`; the bytes of its fields lines.
    fn format_into(&self, fmt: &mut FieldsFmt, out: &mut Vec<u8>) -> u64 {
        let (mut at, mut f, mut bytes) = (0usize, 0usize, 0u64);
        for l in &self.lines {
            let s = &self.text[at..l.text_end as usize];
            at = l.text_end as usize;
            let Some(keys) = l.keys else {
                out.extend_from_slice(s.as_bytes());
                continue;
            };
            let (comm, s) = s.split_at(l.comm as usize);
            let (flags, s) = s.split_at(l.flags as usize);
            let (event, bdi) = s.split_at(l.event as usize);
            let bdi = (l.bdi != NONE).then_some(bdi);
            let vals = &self.vals[f..f + keys.len()];
            f += keys.len();
            let h = Head {
                t: l.t,
                comm,
                pid: l.pid,
                cpu: l.cpu,
                flags,
                event,
            };
            let before = out.len();
            fmt.line(out, &h, bdi, keys, vals);
            bytes += (out.len() - before) as u64;
        }
        bytes
    }
}

/// The writer thread and its two channels: full chunks to it, emptied ones
/// back with the bytes of the fields lines formatted from them.
pub struct Sink {
    to_writer: Option<Sender<Chunk>>,
    back: Receiver<(Chunk, u64)>,
    /// Chunks handed over and not yet waited for.
    out: usize,
    /// The formatter of chunks formatted here.
    fmt: FieldsFmt,
    writer: Option<JoinHandle<(File, Option<std::io::Error>)>>,
}

impl Sink {
    /// Start writing into `f` at its current offset.
    pub fn new(mut f: File) -> std::io::Result<Sink> {
        let (to_writer, full) = channel::<Chunk>();
        let (give_back, back) = channel::<(Chunk, u64)>();
        let writer = std::thread::Builder::new()
            .name("wbsim-trace".into())
            .spawn(move || {
                // after the first error the rest is dropped, as a full
                // disk would drop it; `finish` reports that error
                let mut error = None;
                let mut text = Vec::with_capacity(CHUNK * 2);
                let mut fmt = FieldsFmt::default();
                for mut chunk in full {
                    let (done, bytes) = match chunk.done_bytes {
                        Some(b) => (&chunk.done, b),
                        None => {
                            text.clear();
                            let b = chunk.format_into(&mut fmt, &mut text);
                            (&text, b)
                        }
                    };
                    if error.is_none() {
                        if let Err(e) = f.write_all(done) {
                            error = Some(e);
                        }
                    }
                    chunk.clear();
                    let _ = give_back.send((chunk, bytes));
                }
                (f, error)
            })?;
        Ok(Sink {
            to_writer: Some(to_writer),
            back,
            out: 0,
            fmt: FieldsFmt::default(),
            writer: Some(writer),
        })
    }

    /// Hand `chunk` to the writer; `chunk` is left empty (an emptied
    /// chunk's buffers once `LAG` are out). The bytes of the fields lines
    /// of the chunk handed over `LAG` chunks before, or 0.
    pub fn send(&mut self, chunk: &mut Chunk) -> u64 {
        if chunk.is_empty() {
            return 0;
        }
        let (spare, bytes) = if self.out < LAG {
            self.out += 1;
            (Chunk::default(), 0)
        } else {
            match self.back.try_recv() {
                Ok(b) => b,
                Err(_) => {
                    // the writer is behind: format this chunk here rather
                    // than wait (its bytes still count when it comes back,
                    // so that they count at the same point whoever
                    // formatted it)
                    chunk.format_here(&mut self.fmt);
                    // none comes if the writer has ended early: it
                    // panicked, and `finish` says so
                    self.back.recv().unwrap_or_default()
                }
            }
        };
        let full = std::mem::replace(chunk, spare);
        if let Some(tx) = &self.to_writer {
            let _ = tx.send(full);
        }
        bytes
    }

    /// Wait for the writer to write everything sent; the file back and the
    /// bytes of the fields lines not counted yet, or the first error
    /// writing them.
    pub fn finish(mut self) -> std::io::Result<(File, u64)> {
        self.to_writer = None;
        let bytes = self.back.iter().map(|(_, n)| n).sum();
        let writer = self.writer.take().expect("finish runs once");
        match writer.join() {
            Ok((f, None)) => Ok((f, bytes)),
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

    /// Chunks of formatted and fields lines, handed over as they fill: the
    /// file holds the lines in order, formatted as in line, the bytes
    /// counted are theirs, and no more than `LAG + 1` chunks are made.
    #[test]
    fn chunks_are_written_in_order_and_counted() {
        let dir = std::env::temp_dir().join(format!("wbsim-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t");
        let mut f = File::create(&path).unwrap();
        f.write_all(b"HEAD").unwrap();
        let mut s = Sink::new(f).unwrap();
        let mut c = Chunk::default();
        let mut want = String::from("HEAD");
        let (mut counted, mut fields_bytes, mut sent) = (0u64, 0u64, 0);
        for i in 0..5000u64 {
            if i % 7 == 3 {
                let line = format!("line {i} {}\n", "x".repeat(i as usize % 300));
                c.text.push_str(&line);
                c.formatted();
                want.push_str(&line);
            } else {
                const KEYS: &[&str] = &["a", "min"];
                let keys = KEYS;
                let vals = [i as i64, i64::MIN + i as i64];
                let bdi = (i % 2 == 0).then_some("7:0");
                let h = Head {
                    t: i * 1000,
                    comm: "dd",
                    pid: 7,
                    cpu: 1,
                    flags: ".....",
                    event: "ev",
                };
                c.fields(&h, bdi, keys, &vals);
                let before = want.len();
                crate::trace::push_fields_line(&mut want, &h, bdi, keys, &vals);
                fields_bytes += (want.len() - before) as u64;
            }
            if c.full() || i % 500 == 0 {
                counted += s.send(&mut c);
                sent += 1;
                assert!(c.is_empty());
            }
        }
        counted += s.send(&mut c);
        assert!(s.out <= LAG, "{} chunks out", s.out);
        assert!(sent > 2 * LAG);
        let (f, rest) = s.finish().unwrap();
        drop(f);
        assert_eq!(counted + rest, fields_bytes);
        let mut got = String::new();
        File::open(&path).unwrap().read_to_string(&mut got).unwrap();
        assert_eq!(got, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A chunk the simulation formats itself (the writer behind) holds the
    /// bytes the writer would have made of it.
    #[test]
    fn a_chunk_formatted_here_is_the_chunk_formatted_there() {
        const KEYS: &[&str] = &["a", "b"];
        let mut c = Chunk::default();
        for i in 0..100i64 {
            let h = Head {
                t: i as u64 * 7919,
                comm: "dd",
                pid: 7,
                cpu: 1,
                flags: ".....",
                event: "ev",
            };
            c.fields(&h, Some("8:0"), KEYS, &[i, -i]);
            if i % 10 == 0 {
                c.text.push_str("a formatted line\n");
                c.formatted();
            }
        }
        let mut want = Vec::new();
        let bytes = c.format_into(&mut FieldsFmt::default(), &mut want);
        c.format_here(&mut FieldsFmt::default());
        assert_eq!(c.done, want);
        assert_eq!(c.done_bytes, Some(bytes));
        assert_eq!(bytes as usize, want.len() - 10 * "a formatted line\n".len());
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
            let mut c = Chunk {
                text: "a line\n".repeat(100),
                ..Default::default()
            };
            c.formatted();
            s.send(&mut c);
        }
        let e = s.finish().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(28), "{e}");
    }
}
