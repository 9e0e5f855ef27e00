//! Lines of integer fields formatted into bytes, fast: the streamed trace's
//! hot path (1000 dd at bs=4k print 817k of them, 179 MB).
//!
//! The bytes are those of [`super::push_fields_line`] (the tests compare
//! the two). The speed comes from copying whole blocks: a number is
//! formatted into a block of padding and the block copied whole, then the
//! vector cut back to the number's length; each field's ` name=` is copied
//! from a block of its own, made once for each static list of names. A copy
//! of a fixed size is a few moves; a copy of a length known only at run time
//! is a call.

use super::Head;
use crate::sim::{NSEC_PER_SEC, NSEC_PER_USEC};

/// Two decimal digits for each of 0..100.
const DIGITS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

const SPACES: [u8; 16] = [b' '; 16];

/// The block a field's ` name=` is copied from.
const PIECE: usize = 32;

/// Append `n` in decimal. With `right_pad`, padded with spaces on the right
/// to `width` (`%-7d`); without, padded on the left with `pad` to `width`
/// (`%5lu`, `%06lu`). `width` is at most 16.
///
/// Up to 16 characters are put together in a register and stored whole:
/// digits stored a byte at a time and read back as a block would make the
/// read wait for the stores (a store-forwarding stall).
#[inline]
fn put_num(out: &mut Vec<u8>, n: u64, width: usize, pad: u8, right_pad: bool) {
    debug_assert!(width <= 16 && (!right_pad || pad == b' '));
    let len = n.checked_ilog10().map_or(1, |l| l as usize + 1);
    let total = len.max(width);
    if total > 16 {
        return put_num_long(out, n, width, pad);
    }
    // the digits at bytes 0..len
    let mut digits: u128 = 0;
    let (mut m, mut pos) = (n, len);
    while m >= 100 {
        let d = 2 * (m % 100) as usize;
        m /= 100;
        pos -= 2;
        digits |= (DIGITS[d] as u128 | (DIGITS[d + 1] as u128) << 8) << (8 * pos);
    }
    if m >= 10 {
        let d = 2 * m as usize;
        digits |= DIGITS[d] as u128 | (DIGITS[d + 1] as u128) << 8;
    } else {
        digits |= (b'0' + m as u8) as u128;
    }
    let lead = if right_pad { 0 } else { total - len };
    let mask = (u128::MAX >> (128 - 8 * len)) << (8 * lead);
    let word = (digits << (8 * lead)) | (u128::from_le_bytes([pad; 16]) & !mask);
    let at = out.len();
    out.extend_from_slice(&word.to_le_bytes());
    out.truncate(at + total);
}

/// [`put_num`] for more than 16 characters, padded on the left.
#[cold]
fn put_num_long(out: &mut Vec<u8>, n: u64, width: usize, pad: u8) {
    let d = n.to_string();
    out.extend(std::iter::repeat_n(pad, width.saturating_sub(d.len())));
    out.extend_from_slice(d.as_bytes());
}

/// A static list of field names as blocks: for each, ` name=` (no space
/// before the first) at the start of a block of [`PIECE`] bytes, and its
/// length (0 for a name too long for its block: copied as it is).
struct Pieces {
    at: usize,
    len: usize,
    blocks: Vec<([u8; PIECE], u8)>,
}

impl Pieces {
    fn of(keys: &'static [&'static str]) -> Pieces {
        let blocks = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let mut b = [b' '; PIECE];
                let sep = usize::from(i > 0);
                if sep + k.len() + 1 > PIECE {
                    return (b, 0);
                }
                b[sep..sep + k.len()].copy_from_slice(k.as_bytes());
                b[sep + k.len()] = b'=';
                (b, (sep + k.len() + 1) as u8)
            })
            .collect();
        Pieces {
            at: keys.as_ptr() as usize,
            len: keys.len(),
            blocks,
        }
    }
}

/// The formatter: the blocks of each list of names it has met.
#[derive(Default)]
pub struct FieldsFmt {
    lists: Vec<Pieces>,
}

impl FieldsFmt {
    fn pieces(&mut self, keys: &'static [&'static str]) -> &Pieces {
        let at = keys.as_ptr() as usize;
        // a list is known by its address and length: static memory does not
        // change, so those give its names
        let i = match self
            .lists
            .iter()
            .position(|p| p.at == at && p.len == keys.len())
        {
            Some(i) => i,
            None => {
                self.lists.push(Pieces::of(keys));
                self.lists.len() - 1
            }
        };
        &self.lists[i]
    }

    /// Append one line: the prefix `%16s-%-7d [%03d] FLAGS %5lu.%06lu:
    /// event: `, then `bdi NAME: ` with a bdi, then `name=value` for each
    /// of `keys` and `vals`, separated by spaces, and a newline.
    pub fn line(
        &mut self,
        out: &mut Vec<u8>,
        h: &Head,
        bdi: Option<&str>,
        keys: &'static [&'static str],
        vals: &[i64],
    ) {
        let (t, comm) = (h.t, h.comm);
        let pad = h.comm_pad();
        if pad > 0 {
            let at = out.len();
            out.extend_from_slice(&SPACES);
            out.truncate(at + pad);
        }
        out.extend_from_slice(comm.as_bytes());
        out.push(b'-');
        put_num(out, h.pid as u64, 7, b' ', true);
        out.extend_from_slice(b" [");
        put_num(out, h.cpu as u64, 3, b'0', false);
        out.extend_from_slice(b"] ");
        out.extend_from_slice(h.flags.as_bytes());
        out.push(b' ');
        put_num(out, t / NSEC_PER_SEC, 5, b' ', false);
        out.push(b'.');
        put_num(out, (t % NSEC_PER_SEC) / NSEC_PER_USEC, 6, b'0', false);
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.event.as_bytes());
        out.extend_from_slice(b": ");
        if let Some(b) = bdi {
            out.extend_from_slice(b"bdi ");
            out.extend_from_slice(b.as_bytes());
            out.extend_from_slice(b": ");
        }
        let p = self.pieces(keys);
        for (i, ((block, len), v)) in p.blocks.iter().zip(vals).enumerate() {
            if *len == 0 {
                if i > 0 {
                    out.push(b' ');
                }
                out.extend_from_slice(keys[i].as_bytes());
                out.push(b'=');
            } else {
                let at = out.len();
                out.extend_from_slice(block);
                out.truncate(at + *len as usize);
            }
            if *v < 0 {
                out.push(b'-');
            }
            put_num(out, v.unsigned_abs(), 0, b' ', false);
        }
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEYS: &[&str] = &["limit", "x", "a_name_of_thirty_one_characters", "pause"];
    const LONG: &[&str] = &["a_name_long_enough_to_pass_its_block", "b"];

    proptest! {
        /// The bytes are those of `push_fields_line`, whatever the task,
        /// time and values, with names short and too long for their block.
        #[test]
        fn the_bytes_are_those_of_the_string_formatter(
            comm in "[ -~]{0,20}|[a-zé]{0,18}",
            pid in any::<u32>(),
            cpu in prop_oneof![0usize..300, Just(usize::MAX)],
            t in any::<u64>(),
            bdi in proptest::option::of("[0-9]{1,3}:[0-9]{1,3}"),
            vals in proptest::collection::vec(any::<i64>(), 4),
            long in any::<bool>(),
        ) {
            let keys = if long { LONG } else { KEYS };
            let vals = &vals[..keys.len()];
            let h = Head { t, comm: &comm, pid, cpu, flags: ".....", event: "ev" };
            let mut f = FieldsFmt::default();
            let mut got = Vec::new();
            // twice: the list's blocks made, then reused
            for _ in 0..2 {
                f.line(&mut got, &h, bdi.as_deref(), keys, vals);
            }
            let mut want = String::new();
            for _ in 0..2 {
                crate::trace::push_fields_line(&mut want, &h, bdi.as_deref(), keys, vals);
            }
            prop_assert_eq!(String::from_utf8(got).unwrap(), want);
        }
    }

    #[test]
    fn numbers_are_padded_as_printf_pads_them() {
        let mut v = Vec::new();
        for (n, w, p, r) in [
            (0, 0, b' ', false),
            (7, 7, b' ', true),
            (12345678, 7, b' ', true),
            (5, 3, b'0', false),
            (123456789012, 5, b' ', false),
            (u64::MAX, 0, b' ', false),
            (10, 6, b'0', false),
            (99, 16, b'0', false),
            (1234567890123456, 0, b' ', false),
            (12345678901234567, 0, b' ', false),
            (1, 16, b' ', true),
        ] {
            put_num(&mut v, n, w, p, r);
            v.push(b'|');
        }
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "0|7      |12345678|005|123456789012|18446744073709551615|000010|\
             0000000000000099|1234567890123456|12345678901234567|1               |"
        );
    }
}
