//! The memory rule of a batch: how much a file will cost while it is being
//! triaged, and how much may be spent on files in flight at once.
//!
//! Rule: a file's footprint is [`BASE`] plus its uncompressed JSON size ×
//! [`EXPANSION`] (columns, interned strings, kernel views and overlap events
//! of a loaded trace; mapped file pages are released behind the parser and
//! not counted). Files start only while the footprints in flight stay within
//! the budget, [`BUDGET_FRACTION`] of `MemAvailable` in /proc/meminfo
//! (4 GiB when that cannot be read). A file larger than the whole budget
//! still runs, alone.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::input::Encoding;

/// Peak resident bytes per byte of uncompressed JSON, above [`BASE`], while
/// one file is triaged. Measured peaks (GNU time, `triage -q`): 42 MB for a
/// 286 MB synthetic trace (`batch --jobs 1` the same), 103 MB for 1.07 GB,
/// 2.0 GB for 21.5 GB; 114 MB for a real vLLM trace tiled to 1.12 GB; 170 MB
/// for 2.2 GB of Python frames that overlap without nesting: at most a
/// tenth of the JSON. 0.5 leaves a margin of five for kinds of traces not
/// measured; a trace of hundreds of thousands of distinct kernel names
/// (3× its 113 MB) is beyond it.
pub const EXPANSION: f64 = 0.5;

/// Peak resident bytes of triaging a small file: the program, its threads'
/// buffers and the analyses' fixed tables.
pub const BASE: u64 = 64 << 20;

/// Share of `MemAvailable` that files in flight may use together.
pub const BUDGET_FRACTION: f64 = 0.5;

/// Budget used when /proc/meminfo is unreadable.
pub const FALLBACK_BUDGET: u64 = 4 << 30;

/// Assumed compression ratio when the uncompressed size is not recorded.
const ASSUMED_RATIO: u64 = 10;

/// `MemAvailable` from a /proc/meminfo text, in bytes.
pub(crate) fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// The budget for files in flight: [`BUDGET_FRACTION`] of available memory.
pub fn default_budget() -> u64 {
    match std::fs::read_to_string("/proc/meminfo").ok().as_deref().and_then(parse_mem_available) {
        Some(avail) => (avail as f64 * BUDGET_FRACTION) as u64,
        None => FALLBACK_BUDGET,
    }
}

/// Uncompressed size of a file: its length for plain JSON; for gzip the
/// size its trailer records (when that is not below the compressed size,
/// i.e. did not wrap at 4 GiB), else and for zstd the length × 10.
pub fn uncompressed_size(path: &Path, disk_len: u64) -> u64 {
    let Ok(mut f) = std::fs::File::open(path) else {
        return disk_len;
    };
    let mut head = [0u8; 4];
    let n = f.read(&mut head).unwrap_or(0);
    let guess = disk_len.saturating_mul(ASSUMED_RATIO);
    match Encoding::sniff(&head[..n]) {
        Encoding::Plain => disk_len,
        Encoding::Zstd => guess,
        Encoding::Gzip => {
            let mut tail = [0u8; 4];
            let trailer = disk_len >= 18 && f.seek(SeekFrom::End(-4)).is_ok() && f.read_exact(&mut tail).is_ok();
            let isize = u64::from(u32::from_le_bytes(tail));
            if trailer && isize >= disk_len {
                isize
            } else {
                guess
            }
        }
    }
}

/// Estimated peak bytes of triaging a file of `uncompressed` JSON bytes.
pub fn footprint(uncompressed: u64) -> u64 {
    BASE.saturating_add((uncompressed as f64 * EXPANSION) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn meminfo() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   22000000 kB\n";
        assert_eq!(parse_mem_available(text), Some(22_000_000 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
        assert_eq!(parse_mem_available("MemAvailable: x kB\n"), None);
    }

    #[test]
    fn footprints() {
        assert_eq!(footprint(0), 64 << 20);
        assert_eq!(footprint(2 << 30), (64 << 20) + (1 << 30));
        assert!(footprint(u64::MAX) > u64::MAX / 2, "no overflow");
    }

    #[test]
    fn sizes() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.json");
        std::fs::write(&plain, b"{\"traceEvents\": []}").unwrap();
        assert_eq!(uncompressed_size(&plain, 19), 19);
        let gz = dir.path().join("a.json.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&vec![b' '; 100_000]).unwrap();
        let bytes = enc.finish().unwrap();
        std::fs::write(&gz, &bytes).unwrap();
        assert_eq!(uncompressed_size(&gz, bytes.len() as u64), 100_000);
        let missing = dir.path().join("nope");
        assert_eq!(uncompressed_size(&missing, 7), 7);
    }
}
