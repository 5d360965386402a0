//! Tests of the frame store: exact values, store order, skipping.

use super::run::{decode_time, encode_time, get, put_all, round_to_int, unzigzag, zigzag};
use super::*;

#[test]
fn times_round_trip_exactly_or_go_verbatim() {
    for text in ["0", "1", "0.001", "12.345", "999.999", "1718000000000.123", "-5.5", "1e-3", "0.5"] {
        let t: f64 = text.parse().unwrap();
        let n = encode_time(t).unwrap_or_else(|| panic!("{text} has a code"));
        assert_eq!(decode_time(n).to_bits(), t.to_bits(), "{text}");
    }
    for t in [-0.0, f64::NAN, f64::INFINITY, 0.0001, 1.23456, 1e300, 1718000000000000.5] {
        assert_eq!(encode_time(t), None, "{t}");
    }
    for v in [0i64, 1, -1, i64::MAX, i64::MIN, 300, -300] {
        assert_eq!(unzigzag(zigzag(v)), v);
        let mut b = Vec::new();
        put_all(&mut b, [zigzag(v)]);
        assert_eq!(unzigzag(get(&b, &mut 0)), v);
    }
}

#[test]
fn rounding_to_an_integer_is_round_half_away_from_zero() {
    let mut next = crate::pysem::test_rng(0x51ed_270b);
    let mut xs = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        0.49999999999999994,
        -0.49999999999999994,
        4_503_599_627_370_495.5,
        -4_503_599_627_370_495.5,
        9_007_199_254_740_991.0,
        3_676_599_907_536_035.0,
    ];
    for _ in 0..100_000 {
        // Uniform bits, kept below 2^53 in magnitude.
        let x = f64::from_bits(next());
        if x.is_finite() && x.abs() < 9_007_199_254_740_992.0 {
            xs.push(x);
        }
        xs.push((next() % 10_000_000) as f64 / 1000.0 * 1000.0 - 5e9);
    }
    for x in xs {
        assert_eq!(round_to_int(x), x.round() as i64, "{x:e}");
    }
}

#[test]
fn varints_of_every_length_read_back_anywhere_in_a_buffer() {
    let mut next = crate::pysem::test_rng(0x7a41_0b5e);
    let mut values: Vec<u64> = vec![0, 1, 127, 128, 16_383, 16_384, u64::MAX, 1 << 56, (1 << 56) - 1, 1 << 63];
    for bits in 0..64 {
        values.push(next() >> bits);
    }
    let mut b = Vec::new();
    for &v in &values {
        put_all(&mut b, [v]);
    }
    // Read from the start: values near the end take the short path.
    let mut pos = 0;
    for &v in &values {
        assert_eq!(get(&b, &mut pos), v);
    }
    assert_eq!(pos, b.len());
    // Each value alone, with and without bytes after it.
    for &v in &values {
        for pad in [0usize, 1, 7, 9] {
            let mut one = Vec::new();
            put_all(&mut one, [v]);
            let len = one.len();
            one.extend(std::iter::repeat_n(0xff, pad));
            let mut at = 0;
            assert_eq!(get(&one, &mut at), v, "{v} pad {pad}");
            assert_eq!(at, len);
        }
    }
}

fn row(i: u32) -> FrameRow {
    // Out-of-order starts, equal starts, odd values, three threads.
    let ts = [5.0, 1.5, 1.5, -0.0, 0.0, 1e300, f64::NAN, 3.25, 1.23456, 2.0][i as usize % 10] + (i / 10) as f64;
    let dur = [0.0, 2.5, -1.0, 1.23456, f64::NAN, 1e12, 0.001][i as usize % 7];
    FrameRow { name: i % 7, thread: i % 3, ts, dur, complete: i % 5 == 0 }
}

fn same(a: &FrameRow, b: &FrameRow) -> bool {
    (a.name, a.thread, a.complete, a.ts.to_bits(), a.dur.to_bits())
        == (b.name, b.thread, b.complete, b.ts.to_bits(), b.dur.to_bits())
}

#[test]
fn store_keeps_every_value_and_reads_threads_in_start_order() {
    let rows: Vec<FrameRow> = (0..300_000).map(row).collect();
    // Split across two builders: the second's names and threads are
    // translated on append.
    let mut a = FrameStore::default();
    let mut b = FrameStore::default();
    let sym: Vec<Sym> = (0..7).map(|s| (s + 3) % 7).collect();
    let unsym: Vec<Sym> = (0..7).map(|s| (s + 4) % 7).collect();
    let thread: Vec<ThreadIdx> = vec![2, 0, 1];
    let unthread: Vec<ThreadIdx> = vec![1, 2, 0];
    for (i, r) in rows.iter().enumerate() {
        if i < 123_457 {
            a.push(*r);
        } else {
            b.push(FrameRow { name: unsym[r.name as usize], thread: unthread[r.thread as usize], ..*r });
        }
    }
    a.append_mapped(b, &sym, &thread);
    a.seal();
    assert_eq!(a.len(), rows.len());
    let back = a.in_trace_order();
    assert_eq!(back.len(), rows.len());
    for (i, (got, want)) in back.iter().zip(&rows).enumerate() {
        assert!(same(got, want), "row {i}: {got:?} vs {want:?}");
    }
    for t in 0..3 {
        let mut want: Vec<(usize, FrameRow)> = rows.iter().copied().enumerate().filter(|r| r.1.thread == t).collect();
        want.sort_by(|x, y| fcmp(x.1.ts, y.1.ts).then(x.0.cmp(&y.0)));
        let got: Vec<Frame> = a.thread(t).collect();
        assert_eq!(got.len(), want.len());
        for (g, (r, w)) in got.iter().zip(&want) {
            assert_eq!(g.row, *r as u64);
            assert!(same(&FrameRow { name: g.name, thread: t, ts: g.ts, dur: g.dur, complete: g.complete }, w));
        }
        assert!(a.thread_has_nan(t));
    }
}

#[test]
fn skipped_blocks_are_exactly_the_ones_the_test_accepts() {
    // Short frames with one long frame every 2,000: a sparse reader
    // that drops frames ending before its probe may skip most blocks.
    let mut s = FrameStore::default();
    for i in 0..50_000u32 {
        let dur = if i % 2_000 == 0 { 900.0 } else { 0.5 };
        s.push(FrameRow { name: i % 9, thread: 0, ts: f64::from(i), dur, complete: true });
    }
    s.seal();
    let all: Vec<Frame> = s.thread(0).collect();
    let mut cursor = s.cursor(0);
    let mut seen = Vec::new();
    for probe in (0..50_000).step_by(7_919).map(f64::from) {
        let skip = |b: &BlockMark| b.last_ts <= probe && b.max_end < probe;
        while let Some(&f) = cursor.peek_skipping(skip).filter(|f| f.ts <= probe) {
            seen.push(f);
            cursor.advance();
        }
    }
    while let Some(&f) = cursor.peek() {
        seen.push(f);
        cursor.advance();
    }
    assert!(seen.len() < all.len() / 2, "{} of {} read", seen.len(), all.len());
    // Read frames come in store order, and every frame not read would
    // have been dropped: it ends before the probe that would read it.
    let rows: Vec<u64> = seen.iter().map(|f| f.row).collect();
    assert!(rows.windows(2).all(|w| w[0] < w[1]));
    let probes: Vec<f64> = (0..50_000).step_by(7_919).map(f64::from).collect();
    let mut read = rows.iter().peekable();
    for f in &all {
        if read.next_if(|&&r| r == f.row).is_some() {
            continue;
        }
        let reader = probes.iter().find(|&&p| f.ts <= p).expect("frames past the last probe are all read");
        assert!(f.end() < *reader, "frame {} skipped but alive at {reader}", f.row);
    }
    assert!(read.next().is_none());
}

#[test]
fn sorted_input_packs_small() {
    let mut s = FrameStore::default();
    for i in 0..100_000u32 {
        let ts = 1_700_000_000.0 + f64::from(i) * 1.5;
        s.push(FrameRow { name: i % 50, thread: 0, ts, dur: 1.25, complete: true });
    }
    s.seal();
    assert!(s.heap_bytes() < 100_000 * 8, "{} bytes", s.heap_bytes());
    assert!(!s.thread_has_nan(0));
    assert_eq!(s.thread(0).map(|f| f.row).collect::<Vec<_>>(), (0..100_000).collect::<Vec<u64>>());
}

#[test]
fn parallel_filter_finds_the_same_frames_as_reading_in_order() {
    let rows: Vec<FrameRow> = (0..200_000).map(row).collect();
    let mut s = FrameStore::default();
    for r in &rows {
        s.push(*r);
    }
    s.seal();
    let keep = |f: &Frame| f.name == 3 && f.complete;
    let key = |(t, f): &(ThreadIdx, Frame)| (f.row, *t, f.name, f.ts.to_bits(), f.dur.to_bits());
    let mut want: Vec<(ThreadIdx, Frame)> = s.iter().filter(|(_, f)| keep(f)).collect();
    let mut got = s.par_filter(keep);
    want.sort_by_key(key);
    got.sort_by_key(key);
    assert!(!want.is_empty());
    assert_eq!(got.iter().map(key).collect::<Vec<_>>(), want.iter().map(key).collect::<Vec<_>>());
}

#[test]
fn merges_cut_in_slices_give_the_frames_of_one_merge() {
    // Runs of two builders, the second's appended (its rows and names
    // translated), out-of-order starts with NaNs and signed zeros: a merge
    // cut in slices of start times (which passes over blocks before its
    // slice) gives the same frames, rows included, as one merge.
    let rows: Vec<FrameRow> = (0..120_000).map(|i| FrameRow { thread: 0, ..row(i) }).collect();
    let mut a = FrameStore::default();
    let mut b = FrameStore::default();
    for (i, r) in rows.iter().enumerate() {
        if i < 50_001 {
            a.push(*r);
        } else {
            b.push(*r);
        }
    }
    let sym: Vec<Sym> = (0..7).collect();
    a.append_mapped(b, &sym, &[0]);
    a.flush_all();
    let runs = &a.threads[0].runs;
    let read = |runs: Vec<Run>| -> Vec<(u64, u64, Sym)> {
        runs.iter().flat_map(|r| r.iter()).map(|f| (f.row, f.ts.to_bits(), f.name)).collect()
    };
    let one = read(merge_in_slices(runs, 1));
    assert_eq!(one.len(), rows.len());
    for (row, _, name) in &one {
        assert_eq!(rows[*row as usize].name, *name, "row {row}");
    }
    for pieces in [2, 3, 8, 64] {
        assert!(!slice_starts(runs, pieces).is_empty());
        assert_eq!(read(merge_in_slices(runs, pieces)), one, "{pieces} slices");
    }
}

/// Frames as a profiler writes steps: each step's frames in start order,
/// then the step's own frame, which starts before all of them.
fn stepped_rows(steps: u32, per_step: u32) -> Vec<FrameRow> {
    let mut rows = Vec::new();
    for s in 0..steps {
        let start = f64::from(s * (per_step + 2)) * 10.0;
        for i in 0..per_step {
            rows.push(FrameRow { name: 1, thread: 0, ts: start + f64::from(i + 1) * 10.0, dur: 5.0, complete: true });
        }
        rows.push(FrameRow { name: 2, thread: 0, ts: start, dur: f64::from(per_step + 1) * 10.0, complete: true });
    }
    rows
}

/// Frames as (row, bits of the start).
type RowStarts = Vec<(u64, u64)>;

/// The store's frames of thread 0, and the same rows sorted by (start, row)
/// as the reference order.
fn read_and_expected(s: &FrameStore, rows: &[FrameRow]) -> (RowStarts, RowStarts) {
    let got: Vec<(u64, u64)> = s.thread(0).map(|f| (f.row, f.ts.to_bits())).collect();
    let mut want: Vec<(u64, f64)> = rows.iter().enumerate().map(|(i, r)| (i as u64, r.ts)).collect();
    want.sort_by(|a, b| fcmp(a.1, b.1).then(a.0.cmp(&b.0)));
    (got, want.into_iter().map(|(row, ts)| (row, ts.to_bits())).collect())
}

#[test]
fn frames_written_late_within_the_held_rows_need_no_merge() {
    // 400 frames a step: a step's frame is never more than 401 rows late,
    // so the runs packed at each flush already follow one another in time
    // and are kept as packed (merged runs would hold FLUSH_ROWS frames).
    let rows = stepped_rows(200, 400);
    let mut s = FrameStore::default();
    for r in &rows {
        s.push(*r);
    }
    s.seal();
    let runs = &s.threads[0].runs;
    assert!(runs.len() > 4);
    assert!(runs[..runs.len() - 1].iter().all(|r| r.len == FLUSH_ROWS - HOLD_ROWS), "runs were merged");
    let (got, want) = read_and_expected(&s, &rows);
    assert_eq!(got, want);
}

#[test]
fn only_the_runs_that_overlap_are_merged() {
    // Two builders cut inside a step: the second's first run starts with
    // the step's frame, before the first builder's last frames. Only the
    // runs around the cut are merged; the order is that of one merge.
    let rows = stepped_rows(200, 400);
    let cut = 40_000 + 200;
    let mut a = FrameStore::default();
    let mut b = FrameStore::default();
    for (i, r) in rows.iter().enumerate() {
        if i < cut {
            a.push(*r);
        } else {
            b.push(*r);
        }
    }
    let sym: Vec<Sym> = (0..3).collect();
    a.append_mapped(b, &sym, &[0]);
    let packed: Vec<usize> = a.threads[0].runs.iter().map(|r| r.len).collect();
    let groups = overlapping_groups(&a.threads[0].runs);
    assert!(groups.len() > 2 && groups.len() < packed.len(), "{groups:?}");
    a.seal();
    let sealed: Vec<usize> = a.threads[0].runs.iter().map(|r| r.len).collect();
    assert_eq!(sealed[..2], packed[..2], "runs before the cut were re-packed");
    assert_eq!(sealed[sealed.len() - 2..], packed[packed.len() - 2..], "runs after the cut were re-packed");
    let (got, want) = read_and_expected(&a, &rows);
    assert_eq!(got, want);
}

#[test]
fn rows_sorted_by_start_match_a_stable_sort_in_order_or_not() {
    let mut next = crate::pysem::test_rng(0x5047_11aa);
    let mut scratch = Vec::new();
    // Nearly in order with a few late rows (the merge), in order (nothing
    // to do), and far out of order (the sort after rows were set aside).
    for (late_every, n) in [(200u64, 16_384usize), (0, 1_000), (2, 4_000), (40, 3), (1, 500), (7, 0)] {
        for _ in 0..4 {
            let mut clock = 0.0f64;
            let rows: Vec<Frame> = (0..n)
                .map(|i| {
                    clock += (next() % 3) as f64 * 0.5;
                    let late = late_every > 0 && next() % late_every == 0;
                    // Starts repeat often, so ties across the set-aside
                    // rows and the kept ones are common.
                    let ts = if late { (clock - (next() % 40) as f64 * 0.5).max(0.0) } else { clock };
                    Frame { name: 0, ts, dur: 1.0, complete: true, row: i as u64 }
                })
                .collect();
            let mut want = rows.clone();
            want.sort_by(|a, b| fcmp(a.ts, b.ts));
            let mut got = rows;
            sort_by_start(&mut got, &mut scratch);
            assert_eq!(got, want, "late one row in {late_every}, {n} rows");
        }
    }
}

#[test]
fn a_sealed_store_lets_its_flush_buffer_go() {
    let mut store = FrameStore::default();
    // One busy thread whose every hundredth frame starts before the one
    // written before it: its flushes merge through the store's buffer.
    for i in 0..3 * FLUSH_ROWS as u32 {
        let ts = if i % 100 == 99 { f64::from(i) - 50.0 } else { f64::from(i) };
        store.push(FrameRow { name: 0, thread: 0, ts, dur: 1.0, complete: true });
    }
    assert!(store.scratch.capacity() > 0, "no flush merged through the buffer");
    // The buffer is counted while it is held.
    let held = store.heap_bytes();
    let buffer = store.scratch.capacity() * std::mem::size_of::<Frame>();
    let taken = std::mem::take(&mut store.scratch);
    assert_eq!(held - store.heap_bytes(), buffer);
    store.scratch = taken;
    store.seal();
    assert_eq!(store.scratch.capacity(), 0);
    assert_eq!(store.len(), 3 * FLUSH_ROWS);
}
