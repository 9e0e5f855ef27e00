//! The one unit syntax used everywhere in scenario files and `--set`.
//!
//! * Sizes: an integer or decimal number followed by an optional suffix.
//!   `K`, `M`, `G`, `T` (also `k`, `KiB`, `MiB`, `GiB`, `TiB`) are powers of
//!   1024, as in `dd` and `fio`. `KB`, `MB`, `GB`, `TB` are powers of 1000, as in
//!   `dd`. No suffix (or `B`) means bytes. Examples: `4k`, `1M`, `200MiB`, `1.5G`.
//! * Rates: a size followed by `/s`. Examples: `50M/s`, `50MiB/s`, `100MB/s`.
//! * Durations: a number followed by `ns`, `us`, `ms`, `s`, `min` or `h`.
//!   Examples: `60s`, `100ms`, `1.5s`.
//!
//! Results are integers (bytes, bytes per second, nanoseconds); a fractional
//! value that does not come out whole is rounded down.

use crate::sim::Ns;

/// A number with an optional decimal fraction and a suffix: the integer
/// part, the fraction as the exact ratio num/den (den a power of ten), and
/// the suffix.
fn split_num(s: &str) -> Result<(u128, u128, u128, &str), String> {
    let s = s.trim();
    if s.starts_with('-') {
        return Err("a negative value".into());
    }
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(end);
    let num: String = num.chars().filter(|&c| c != '_').collect();
    if num.is_empty() || num == "." {
        return Err("no number".into());
    }
    let mut parts = num.splitn(2, '.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next().unwrap_or("");
    if frac.contains('.') {
        return Err("a malformed number".into());
    }
    let ip: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| "a number too large".to_string())?
    };
    let frac = frac.trim_end_matches('0');
    if frac.len() > 18 {
        return Err("too many decimal places".into());
    }
    let fnum: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| "a malformed number".to_string())?
    };
    let fden: u128 = 10u128.pow(frac.len() as u32);
    Ok((ip, fnum, fden, suffix.trim()))
}

/// (ip + fnum/fden) * mult, rounded down, exactly.
fn scale(ip: u128, fnum: u128, fden: u128, mult: u128) -> Result<u64, String> {
    let v = ip
        .checked_mul(mult)
        .and_then(|x| x.checked_add(fnum.checked_mul(mult)? / fden))
        .ok_or("a value too large")?;
    u64::try_from(v).map_err(|_| "a value too large".to_string())
}

fn size_mult(suffix: &str) -> Option<u128> {
    const K: u128 = 1024;
    Some(match suffix {
        "" | "B" | "b" => 1,
        "k" | "K" | "KiB" | "kiB" | "Ki" => K,
        "m" | "M" | "MiB" | "Mi" => K * K,
        "g" | "G" | "GiB" | "Gi" => K * K * K,
        "t" | "T" | "TiB" | "Ti" => K * K * K * K,
        "kB" | "KB" => 1000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => return None,
    })
}

const SIZE_EXPECT: &str =
    "a size such as 4096, 4k, 1M, 200MiB or 1.5G (K/M/G/T = 1024^n, KB/MB/GB/TB = 1000^n)";
const RATE_EXPECT: &str = "a rate such as 50M/s, 50MiB/s or 100MB/s";
const TIME_EXPECT: &str = "a duration such as 60s, 100ms, 250us or 2min";

/// Parse a size in bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (ip, fnum, fden, suf) =
        split_num(s).map_err(|e| format!("{e} in `{s}`; expected {SIZE_EXPECT}"))?;
    let m = size_mult(suf)
        .ok_or_else(|| format!("unknown size suffix `{suf}` in `{s}`; expected {SIZE_EXPECT}"))?;
    // a size is whole bytes: 1.5k is 1536, 1024.9 is no size
    if (fnum * m) % fden != 0 {
        return Err(format!(
            "`{s}` is not a whole number of bytes; expected {SIZE_EXPECT}"
        ));
    }
    scale(ip, fnum, fden, m).map_err(|e| format!("{e} in `{s}`"))
}

/// Parse a rate in bytes per second.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let body = t
        .strip_suffix("/s")
        .or_else(|| t.strip_suffix("ps"))
        .ok_or_else(|| format!("`{s}` has no `/s`; expected {RATE_EXPECT}"))?;
    let (ip, fnum, fden, suf) =
        split_num(body).map_err(|e| format!("{e} in `{s}`; expected {RATE_EXPECT}"))?;
    let m = size_mult(suf)
        .ok_or_else(|| format!("unknown size suffix `{suf}` in `{s}`; expected {RATE_EXPECT}"))?;
    scale(ip, fnum, fden, m).map_err(|e| format!("{e} in `{s}`"))
}

/// Parse a duration in nanoseconds.
pub fn parse_duration(s: &str) -> Result<Ns, String> {
    let (ip, fnum, fden, suf) =
        split_num(s).map_err(|e| format!("{e} in `{s}`; expected {TIME_EXPECT}"))?;
    let m: u128 = match suf {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "min" | "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" => return Err(format!("`{s}` has no unit; expected {TIME_EXPECT}")),
        _ => {
            return Err(format!(
                "unknown time unit `{suf}` in `{s}`; expected {TIME_EXPECT}"
            ))
        }
    };
    scale(ip, fnum, fden, m).map_err(|e| format!("{e} in `{s}`"))
}

/// Format bytes compactly for humans (`200MiB`, `4KiB`, `1.5GiB`).
pub fn fmt_bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if (v - v.round()).abs() < 1e-9 {
        format!("{}{}", v.round() as u64, U[i])
    } else {
        format!("{v:.2}{}", U[i])
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn sizes_are_whole_bytes_and_fractions_exact() {
        use super::parse_size;
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert_eq!(parse_size("1.001KB"), Ok(1001));
        assert_eq!(parse_size("0.25K"), Ok(256));
        let e = parse_size("1024.9").unwrap_err();
        assert!(e.contains("not a whole number of bytes"), "{e}");
        assert!(parse_size("1.1G").is_err());
        // rates and durations round down
        assert_eq!(super::parse_rate("1.5B/s"), Ok(1));
        assert_eq!(super::parse_duration("1.5ns"), Ok(1));
        assert_eq!(super::parse_duration("0.001s"), Ok(1_000_000));
    }

    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("200MiB").unwrap(), 200 << 20);
        assert_eq!(parse_size("100MB").unwrap(), 100_000_000);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size("1_000").unwrap(), 1000);
        assert!(parse_size("-5M").unwrap_err().contains("negative"));
        assert!(parse_size("5Q")
            .unwrap_err()
            .contains("unknown size suffix"));
        assert!(parse_size("M").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn rates_and_times() {
        assert_eq!(parse_rate("50MiB/s").unwrap(), 50 << 20);
        assert_eq!(parse_rate("50M/s").unwrap(), 50 << 20);
        assert_eq!(parse_rate("20Mps").unwrap(), 20 << 20);
        assert!(parse_rate("50M").is_err());
        assert_eq!(parse_duration("60s").unwrap(), 60_000_000_000);
        assert_eq!(parse_duration("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration("100ms").unwrap(), 100_000_000);
        assert!(parse_duration("60").unwrap_err().contains("no unit"));
        assert_eq!(fmt_bytes(200 << 20), "200MiB");
    }
}
