//! The sweep line: walks kernel start and end points in time order and, for
//! every slice between two points, charges each active kernel's time as
//! exclusive (nothing running on another stream) or hidden (something is),
//! notes whether compute was among the overlappers and which overlapping
//! kernel dominated. Each slice costs O(active kernels): per-stream tallies
//! and the two best overlappers (from different streams) answer every
//! kernel's question without comparing kernels pairwise. While the active
//! set is large, the charges are summed per stream instead
//! ([`super::sweep_lazy`]), so a slice's cost does not grow with it.

use rustc_hash::FxHashMap as HashMap;
use std::cmp::Ordering;

use super::sweep_lazy::Lazy;
use super::{OverlapKernel, OverlapStats};
use crate::pysem::fcmp;

/// Rank of a category when choosing the dominant overlapper.
pub fn category_priority(category: &str) -> u8 {
    match category {
        "compute" => 4,
        "communication" => 3,
        "memory" => 2,
        "elementwise" => 1,
        _ => 0,
    }
}

const NONE: u32 = u32::MAX;

/// Per-stream tallies for one slice; reset after each slice.
#[derive(Clone, Copy)]
struct StreamTally {
    count: u32,
    compute: u32,
    /// Position (in `events`) of the stream's strongest active kernel.
    best: u32,
}

/// What the sweep needs of each kernel, by position.
pub(super) struct Keys {
    pub(super) stream: Vec<u32>,
    pub(super) priority: Vec<u8>,
    /// Order in which each kernel entered the active set: among equally
    /// strong overlappers the reference picks the earliest entered.
    pub(super) entered: Vec<u32>,
}

impl Keys {
    /// Whether kernel `a` dominates kernel `b` as an overlapper (durations
    /// are read from `events`, not copied).
    fn beats(&self, events: &[OverlapKernel], a: u32, b: u32) -> bool {
        let (a, b) = (a as usize, b as usize);
        match self.priority[a].cmp(&self.priority[b]).then_with(|| fcmp(events[a].dur, events[b].dur)) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => self.entered[a] < self.entered[b],
        }
    }
}

/// The read-only part of one slice: per-stream tallies of the active set
/// (streams listed in `touched`), the number of compute kernels, and the
/// two streams holding the strongest overlappers.
fn tally_slice(
    keys: &Keys,
    events: &[OverlapKernel],
    active: &[u32],
    tally: &mut [StreamTally],
    touched: &mut Vec<u32>,
) -> (u32, Option<u32>, Option<u32>) {
    let mut compute = 0;
    for &e in active {
        let s = keys.stream[e as usize];
        let t = &mut tally[s as usize];
        if t.count == 0 {
            touched.push(s);
        }
        t.count += 1;
        // Priority 4 is exactly the compute category.
        if keys.priority[e as usize] == 4 {
            t.compute += 1;
            compute += 1;
        }
        if t.best == NONE || keys.beats(events, e, t.best) {
            t.best = e;
        }
    }
    let mut first: Option<u32> = None;
    let mut second: Option<u32> = None;
    for &s in touched.iter() {
        let b = tally[s as usize].best;
        match first {
            None => first = Some(s),
            Some(f) if keys.beats(events, b, tally[f as usize].best) => {
                second = first;
                first = Some(s);
            }
            Some(_) => match second {
                Some(sc) if !keys.beats(events, b, tally[sc as usize].best) => {}
                _ => second = Some(s),
            },
        }
    }
    (compute, first, second)
}

/// Splits every kernel's time into exclusive / hidden / hidden-by-compute
/// and fills `overlap_with`, adding onto the values already there.
/// Returns busy time, multi-stream time and the peak number of streams.
pub fn analyze_overlap(events: &mut [OverlapKernel]) -> OverlapStats {
    analyze_overlap_with(events, LAZY_ABOVE)
}

/// The time order the sweep walks: kernel positions by start and by end.
/// It reads the kernels only, so it can be built while something else
/// reads them too.
pub struct SweepOrder {
    starts: Vec<u32>,
    ends: Vec<u32>,
}

impl SweepOrder {
    /// The reference sorts one list of (time, kind) points, pushed start
    /// then end per kernel, stably, ends (kind 0) first on equal times. The
    /// same order comes from merging the starts and the ends, each sorted
    /// stably by time, taking the end on a tie: 8 bytes a kernel instead of
    /// 32 for the point list. The two sorts run side by side.
    pub fn new(events: &[OverlapKernel]) -> Self {
        let by = |time: fn(&OverlapKernel) -> f64| {
            let mut order: Vec<u32> = (0..events.len() as u32).collect();
            order.sort_by(|&a, &b| fcmp(time(&events[a as usize]), time(&events[b as usize])));
            order
        };
        let (starts, ends) = rayon::join(|| by(|e| e.ts), || by(OverlapKernel::end));
        SweepOrder { starts, ends }
    }
}

/// [`analyze_overlap`] along an order already built for these `events`.
/// An order of another length (built for other kernels) is rebuilt rather
/// than followed.
pub fn analyze_overlap_in(order: SweepOrder, events: &mut [OverlapKernel]) -> OverlapStats {
    let order = if order.starts.len() == events.len() { order } else { SweepOrder::new(events) };
    sweep(order, events, LAZY_ABOVE)
}

/// Active kernels above which the sweep sums charges per stream
/// ([`Lazy`]); it returns to slice-by-slice accounting below half of it.
const LAZY_ABOVE: usize = 256;

fn analyze_overlap_with(events: &mut [OverlapKernel], lazy_above: usize) -> OverlapStats {
    sweep(SweepOrder::new(events), events, lazy_above)
}

fn sweep(order: SweepOrder, events: &mut [OverlapKernel], lazy_above: usize) -> OverlapStats {
    let n = events.len();
    debug_assert_eq!((order.starts.len(), order.ends.len()), (n, n), "a sweep order made for other kernels");
    let SweepOrder { starts, ends } = order;
    let mut stream_ids: HashMap<&str, u32> = HashMap::default();
    let stream: Vec<u32> = events
        .iter()
        .map(|e| {
            let next = stream_ids.len() as u32;
            *stream_ids.entry(&**e.stream).or_insert(next)
        })
        .collect();
    let n_streams = stream_ids.len();
    drop(stream_ids);
    let mut keys = Keys {
        stream,
        priority: events.iter().map(|e| category_priority(e.category())).collect(),
        entered: vec![0; n],
    };

    let (mut next_start, mut next_end) = (0, 0);

    // Active set as positions, with each one's slot for O(1) removal.
    let mut active: Vec<u32> = Vec::new();
    let mut slot: Vec<u32> = vec![NONE; n];
    let mut tally = vec![StreamTally { count: 0, compute: 0, best: NONE }; n_streams];
    let mut touched: Vec<u32> = Vec::new();
    let mut entered_seq: u32 = 0;
    let mut prev_time: Option<f64> = None;
    let mut stats = OverlapStats::default();
    let mut lazy: Option<Lazy> = None;

    loop {
        let (time, kind, pos) = match (starts.get(next_start), ends.get(next_end)) {
            (Some(&s), Some(&e)) if fcmp(events[e as usize].end(), events[s as usize].ts) != Ordering::Greater => {
                next_end += 1;
                (events[e as usize].end(), 0u8, e)
            }
            (Some(&s), _) => {
                next_start += 1;
                (events[s as usize].ts, 1, s)
            }
            (None, Some(&e)) => {
                next_end += 1;
                (events[e as usize].end(), 0, e)
            }
            (None, None) => break,
        };
        if let Some(prev) = prev_time {
            if let (true, Some(l)) = (time > prev && !active.is_empty(), lazy.as_mut()) {
                l.slice(events, time - prev, &mut stats);
            } else if time > prev && !active.is_empty() {
                let segment = time - prev;
                let (compute, first, second) = tally_slice(&keys, events, &active, &mut tally, &mut touched);
                stats.total_busy_us += segment;
                stats.max_concurrent_streams = stats.max_concurrent_streams.max(touched.len());
                let overlapped = touched.len() >= 2;
                if overlapped {
                    stats.overlap_us += segment;
                }
                for &e in &active {
                    let s = keys.stream[e as usize];
                    if !overlapped {
                        events[e as usize].exclusive_us += segment;
                        continue;
                    }
                    let other_compute = compute > tally[s as usize].compute;
                    let other_stream = if first == Some(s) { second } else { first };
                    let dominant = other_stream.map(|o| tally[o as usize].best);
                    let name = dominant.map(|d| events[d as usize].name.clone());
                    let ev = &mut events[e as usize];
                    ev.hidden_us += segment;
                    if other_compute {
                        ev.hidden_by_compute_us += segment;
                    }
                    // An empty name is falsy in the reference and not counted.
                    if let Some(name) = name.filter(|n| !n.canonical.is_empty()) {
                        ev.overlap_with.add(&name, segment);
                    }
                }
                for t in touched.drain(..) {
                    tally[t as usize] = StreamTally { count: 0, compute: 0, best: NONE };
                }
            }
        }
        if kind == 0 {
            let s = slot[pos as usize];
            if s != NONE {
                if let Some(l) = lazy.as_mut() {
                    l.leave(&keys, events, pos);
                }
                active.swap_remove(s as usize);
                if let Some(&moved) = active.get(s as usize) {
                    slot[moved as usize] = s;
                }
                slot[pos as usize] = NONE;
                if lazy.is_some() && active.len() < lazy_above / 2 {
                    if let Some(l) = lazy.take() {
                        l.finish(&keys, events, &active);
                    }
                }
            }
        } else if slot[pos as usize] == NONE {
            // A kernel whose end rounds onto its start is removed (no-op)
            // before it is added, and then stays active to the end, as in
            // the reference.
            slot[pos as usize] = active.len() as u32;
            active.push(pos);
            keys.entered[pos as usize] = entered_seq;
            entered_seq += 1;
            match lazy.as_mut() {
                Some(l) => l.join(&keys, events, pos),
                None if active.len() > lazy_above => lazy = Some(Lazy::start(n_streams, &keys, events, &active)),
                None => {}
            }
        }
        prev_time = Some(time);
    }
    if let Some(l) = lazy {
        l.finish(&keys, events, &active);
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    pub fn kernel(idx: usize, name: &str, category: &'static str, stream: &str, ts: f64, dur: f64) -> OverlapKernel {
        let name = Arc::new(crate::analysis::kernels::extract::KernelName { canonical: name.into(), category });
        OverlapKernel::new(idx, super::super::NO_ROW, name, Arc::new(Box::from(stream)), ts, dur)
    }

    /// The reference's quadratic sweep, transcribed literally.
    fn naive(events: &mut [OverlapKernel]) -> OverlapStats {
        let mut points: Vec<(f64, u8, usize)> = Vec::new();
        for (p, e) in events.iter().enumerate() {
            points.push((e.ts, 1, p));
            points.push((e.end(), 0, p));
        }
        points.sort_by(|a, b| fcmp(a.0, b.0).then(a.1.cmp(&b.1)));
        let mut active: Vec<usize> = Vec::new();
        let mut prev: Option<f64> = None;
        let mut st = OverlapStats::default();
        for (t, kind, p) in points {
            if let Some(pt) = prev {
                if t > pt && !active.is_empty() {
                    let seg = t - pt;
                    let mut streams: Vec<&str> = active.iter().map(|&a| &**events[a].stream).collect();
                    streams.sort();
                    streams.dedup();
                    st.total_busy_us += seg;
                    st.max_concurrent_streams = st.max_concurrent_streams.max(streams.len());
                    if streams.len() >= 2 {
                        st.overlap_us += seg;
                    }
                    let snapshot: Vec<OverlapKernel> = active.iter().map(|&a| events[a].clone()).collect();
                    for (i, &a) in active.iter().enumerate() {
                        let mut others: Vec<&OverlapKernel> = snapshot
                            .iter()
                            .enumerate()
                            .filter(|(j, o)| *j != i && o.stream != snapshot[i].stream)
                            .map(|(_, o)| o)
                            .collect();
                        if others.is_empty() {
                            events[a].exclusive_us += seg;
                            continue;
                        }
                        let any_compute = others.iter().any(|o| o.category() == "compute");
                        others.sort_by(|x, y| {
                            category_priority(y.category())
                                .cmp(&category_priority(x.category()))
                                .then_with(|| fcmp(y.dur, x.dur))
                        });
                        let name = others[0].name.clone();
                        let e = &mut events[a];
                        e.hidden_us += seg;
                        if any_compute {
                            e.hidden_by_compute_us += seg;
                        }
                        if !name.canonical.is_empty() {
                            e.overlap_with.add(&name, seg);
                        }
                    }
                }
            }
            if kind == 0 {
                active.retain(|&a| a != p);
            } else {
                active.push(p);
            }
            prev = Some(t);
        }
        st
    }

    #[test]
    fn matches_the_literal_sweep_on_random_schedules() {
        let mut seed: u64 = 0x9e3779b97f4a7c15;
        let mut rnd = |m: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let cats = ["compute", "communication", "memory", "elementwise", "other"];
        for _ in 0..200 {
            let n = 1 + rnd(40) as usize;
            let evs: Vec<OverlapKernel> = (0..n)
                .map(|i| {
                    let name = format!("k{}", rnd(6));
                    let cat = cats[rnd(5) as usize];
                    let stream = format!("s{}", rnd(4));
                    kernel(i, &name, cat, &stream, rnd(50) as f64, 1.0 + rnd(12) as f64)
                })
                .collect();
            let mut a = evs.clone();
            let mut b = evs;
            assert_eq!(analyze_overlap(&mut a), naive(&mut b));
            assert_eq!(a, b);
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn per_stream_sums_match_the_literal_sweep() {
        // Forcing the per-stream accounting from 2, 3, 5 active kernels
        // on (and back below half of it): the same charges up to rounding,
        // the same overlappers in the same order, the same statistics.
        let mut seed: u64 = 0x2545f4914f6cdd1d;
        let mut rnd = |m: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let cats = ["compute", "communication", "memory", "elementwise", "other"];
        for round in 0..300 {
            let n = 1 + rnd(60) as usize;
            let evs: Vec<OverlapKernel> = (0..n)
                .map(|i| {
                    let name = if rnd(9) == 0 { String::new() } else { format!("k{}", rnd(6)) };
                    let cat = cats[rnd(5) as usize];
                    let stream = format!("s{}", rnd(5));
                    kernel(i, &name, cat, &stream, rnd(50) as f64, 1.0 + rnd(25) as f64)
                })
                .collect();
            let mut a = evs.clone();
            let mut b = evs;
            let got = analyze_overlap_with(&mut a, [2, 3, 5][round % 3]);
            let want = naive(&mut b);
            assert_eq!(got.max_concurrent_streams, want.max_concurrent_streams);
            assert!(close(got.total_busy_us, want.total_busy_us) && close(got.overlap_us, want.overlap_us));
            for (x, y) in a.iter().zip(&b) {
                assert!(close(x.exclusive_us, y.exclusive_us), "round {round}: {x:?} {y:?}");
                assert!(close(x.hidden_us, y.hidden_us), "round {round}: {x:?} {y:?}");
                assert!(close(x.hidden_by_compute_us, y.hidden_by_compute_us), "round {round}: {x:?} {y:?}");
                let (ox, oy): (Vec<_>, Vec<_>) = (x.overlap_with.iter().collect(), y.overlap_with.iter().collect());
                assert_eq!(ox.len(), oy.len(), "round {round}: {ox:?} {oy:?}");
                for ((nx, vx), (ny, vy)) in ox.iter().zip(&oy) {
                    assert!(nx == ny && close(*vx, *vy), "round {round}: {ox:?} {oy:?}");
                }
            }
        }
    }

    #[test]
    fn an_order_built_for_other_kernels_is_rebuilt() {
        let make = || {
            vec![
                kernel(0, "gemm", "compute", "7", 0.0, 10.0),
                kernel(1, "nccl", "communication", "20", 5.0, 10.0),
                kernel(2, "copy", "memory", "9", 12.0, 4.0),
            ]
        };
        let mut expected = make();
        let want = analyze_overlap(&mut expected);
        let other = vec![kernel(0, "gemm", "compute", "7", 0.0, 1.0)];
        let mut evs = make();
        assert_eq!(analyze_overlap_in(SweepOrder::new(&other), &mut evs), want);
        assert_eq!(evs, expected);
    }

    #[test]
    fn two_streams_hide_each_other() {
        let mut evs =
            vec![kernel(0, "gemm", "compute", "7", 0.0, 10.0), kernel(1, "nccl", "communication", "20", 5.0, 10.0)];
        let st = analyze_overlap(&mut evs);
        assert_eq!(st, OverlapStats { total_busy_us: 15.0, overlap_us: 5.0, max_concurrent_streams: 2 });
        assert_eq!((evs[0].exclusive_us, evs[0].hidden_us, evs[0].hidden_by_compute_us), (5.0, 5.0, 0.0));
        assert_eq!((evs[1].exclusive_us, evs[1].hidden_us, evs[1].hidden_by_compute_us), (5.0, 5.0, 5.0));
        assert_eq!(evs[1].overlap_with.iter().collect::<Vec<_>>(), vec![("gemm", 5.0)]);
    }

    #[test]
    fn kernel_whose_end_rounds_onto_start_stays_active() {
        let ts = 1.0e16;
        let mut evs = vec![kernel(0, "a", "other", "1", ts, 0.5), kernel(1, "b", "other", "2", ts, 4.0)];
        assert_eq!(evs[0].end(), evs[0].ts);
        let st = analyze_overlap(&mut evs);
        assert_eq!(st.max_concurrent_streams, 2);
        assert_eq!(evs[0].hidden_us, 4.0);
    }
}
