//! Decode speed of the gzip / zstd decoders alone: `inflate_speed FILE`
//! reads FILE through the same decoder torchtriage uses and discards the
//! output, printing the decoded bytes and the time.
use std::io::Read;
fn main() -> std::io::Result<()> {
    let path = std::env::args().nth(1).expect("usage: inflate_speed FILE");
    let t = std::time::Instant::now();
    let f = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(&path)?);
    let mut r: Box<dyn Read> = if path.ends_with(".zst") {
        Box::new(zstd::stream::read::Decoder::new(f)?)
    } else {
        Box::new(flate2::bufread::MultiGzDecoder::new(f))
    };
    let mut buf = vec![0u8; 4 << 20];
    let mut n = 0u64;
    loop {
        let k = r.read(&mut buf)?;
        if k == 0 {
            break;
        }
        n += k as u64;
    }
    let s = t.elapsed().as_secs_f64();
    println!("{n} bytes in {s:.3} s: {:.0} MB/s", n as f64 / 1e6 / s);
    Ok(())
}
