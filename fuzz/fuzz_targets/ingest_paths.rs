//! Fuzz target: the three ingest paths must agree byte for byte. The input
//! is parsed by `load_bytes` (reference), by `load_path` on a plain temp
//! file forced into 3 parallel chunks (mapped path), by `load_reader` with a
//! tiny refill size (stream path, every window boundary), and gzip-compressed
//! through `load_path` (decoder thread), including a truncated gzip stream.
#![no_main]

use std::io::Write;
use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use torchtriage::ingest::{load_bytes, load_path, load_reader, IngestOptions};

#[path = "common.rs"]
mod common;

fn temp(name: &str) -> PathBuf {
    let dir = if std::path::Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    dir.join(format!("tt-fuzz-{}-{name}", std::process::id()))
}

fn same(what: &str, data: &[u8], want: &torchtriage::Result<Vec<String>>, got: torchtriage::Result<torchtriage::columns::Trace>) {
    match (want, got) {
        (Ok(w), Ok(g)) => assert_eq!(&common::fingerprint(&g), w, "{what}: columns differ"),
        (Err(w), Err(g)) => {
            common::check_error(&g, data.len());
            assert_eq!((w.offset, &w.message), (g.offset, &g.message), "{what}: errors differ");
        }
        (Ok(_), Err(g)) => panic!("{what}: failed where load_bytes succeeded: {g}"),
        (Err(w), Ok(_)) => panic!("{what}: succeeded where load_bytes failed: {w}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let want = load_bytes(data).map(|t| {
        common::check_trace(&t);
        common::fingerprint(&t)
    });
    if let Err(e) = &want {
        common::check_error(e, data.len());
    }
    let quiet = IngestOptions { chunks: Some(3), parallel_min: Some(1) };

    // Mapped file, parallel chunks.
    let plain = temp("plain.json");
    std::fs::write(&plain, data).unwrap();
    let got = load_path(&plain, &quiet).map_err(|mut e| {
        e.path = None;
        e
    });
    if torchtriage::input::Encoding::sniff(data) != torchtriage::input::Encoding::Plain {
        // Sniffed as gzip / zstd: a different reader, only checked for shape.
        if let Err(e) = got {
            assert!(!e.to_string().contains('\n'));
        }
    } else {
        same("mapped", data, &want, got);
    }

    // Stream path with a refill size derived from the input.
    // Tiny refills for small inputs (every boundary position), about 16
    // windows for larger ones (thread hand-offs dominate otherwise).
    let chunk = if data.len() < 512 { 1 + data.len() % 29 } else { data.len() / 16 + data.len() % 29 };
    let reader: Box<dyn std::io::Read + Send> = Box::new(std::io::Cursor::new(data.to_vec()));
    same(&format!("stream(chunk={chunk})"), data, &want, load_reader(reader, chunk));

    // Gzip through the real decoder, whole and truncated (one input in four:
    // its 4 MiB buffers make it the slowest check).
    if data.len() % 4 != 0 {
        return;
    }
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    let gz = enc.finish().unwrap();
    let gzp = temp("data.json.gz");
    std::fs::write(&gzp, &gz).unwrap();
    let got = load_path(&gzp, &quiet).map_err(|mut e| {
        e.path = None;
        // Offsets into compressed input say they are after decompression.
        let note = " [offset in the decompressed gzip data]";
        if e.offset.is_some() {
            assert!(e.message.ends_with(note), "gzip error without its note: {}", e.message);
            e.message.truncate(e.message.len() - note.len());
        }
        e
    });
    same("gzip", data, &want, got);
    let cut = gz.len() * (data.len() % 7 + 1) / 8;
    std::fs::write(&gzp, &gz[..cut]).unwrap();
    if let Err(e) = load_path(&gzp, &quiet) {
        let line = e.to_string();
        assert!(!line.contains('\n') && e.path.is_some(), "truncated gzip error: {line}");
    }
});
