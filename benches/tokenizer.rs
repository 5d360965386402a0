//! Criterion benches for the tokenizer: whole-document parse of the bundled
//! fixture on one thread (`load_bytes`), and the event-chunk parser on a
//! larger buffer made by repeating the fixture's events.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use torchtriage::ingest::load_bytes;
use torchtriage::tokenizer::parse_chunk;

fn fixture() -> Vec<u8> {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/synthetic_vllm_small.json");
    std::fs::read(p).expect("fixture")
}

/// `[` + the fixture's events repeated to about `target` bytes + `]`.
fn repeated_events(doc: &[u8], target: usize) -> Vec<u8> {
    let text = std::str::from_utf8(doc).expect("utf8");
    let start = text.find("\"traceEvents\": [").expect("traceEvents") + "\"traceEvents\": [".len();
    let end = text.rfind(']').expect("]");
    let events = text[start..end].trim();
    let mut out = String::from("[");
    while out.len() < target {
        if out.len() > 1 {
            out.push_str(",\n");
        }
        out.push_str(events);
    }
    out.push(']');
    out.into_bytes()
}

fn bench(c: &mut Criterion) {
    let doc = fixture();
    let mut g = c.benchmark_group("tokenizer");
    g.throughput(Throughput::Bytes(doc.len() as u64));
    g.bench_function("load_bytes/fixture", |b| b.iter(|| load_bytes(&doc).expect("parse")));
    let big = repeated_events(&doc, 16 << 20);
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.sample_size(20);
    g.bench_function("parse_chunk/16MiB", |b| {
        b.iter(|| parse_chunk(&big, 1, true, usize::MAX, |_| {}).map(|c| c.next).expect("parse"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
