//! Decode speed of the gzip / zstd decoders alone: `inflate_speed FILE`
//! opens FILE as torchtriage does (`input::open`, by content), reads the
//! decoded stream and discards it, printing the decoded bytes and the time.
use std::io::Read;

use torchtriage::input::{self, Source};

fn main() -> std::io::Result<()> {
    let path = std::env::args().nth(1).expect("usage: inflate_speed FILE");
    let t = std::time::Instant::now();
    let opened = input::open(path.as_ref()).map_err(|e| std::io::Error::other(e.to_string()))?;
    let Source::Stream { mut reader, .. } = opened.source else {
        eprintln!("{path}: not compressed; nothing to decode");
        std::process::exit(2);
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = reader.read(&mut buf)?;
        if k == 0 {
            break;
        }
        n += k as u64;
    }
    let s = t.elapsed().as_secs_f64();
    println!("{n} bytes in {s:.3} s: {:.0} MB/s", n as f64 / 1e6 / s);
    Ok(())
}
