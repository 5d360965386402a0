//! Runs one task per file on a fixed number of worker threads, never
//! starting a file while the footprints of the files in flight plus its own
//! would exceed the memory budget (an oversized file runs alone). Files are
//! taken largest first, so the long ones start early and the small ones
//! fill the gaps at the end. A task that panics becomes that file's error.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex};

/// A unit of work and its estimated peak memory.
#[derive(Clone, Debug)]
pub struct Task<T> {
    pub item: T,
    pub footprint: u64,
}

/// Callbacks around each task (progress display); called from workers.
pub trait Observer<T>: Sync {
    fn started(&self, _item: &T) {}
    fn finished(&self, _item: &T, _ok: bool) {}
}

/// An observer that does nothing.
pub struct Silent;
impl<T> Observer<T> for Silent {}

/// A finished task: its item and what the work returned.
pub type Done<T, R, E> = (T, Result<R, E>);

struct State<T> {
    /// (input position, task), largest first.
    queue: VecDeque<(usize, Task<T>)>,
    in_flight: usize,
    in_flight_bytes: u64,
    peak_in_flight: usize,
}

/// Runs `work` on every task with up to `workers` threads under `budget`
/// bytes. Returns the results in input order and the most tasks that ever
/// ran at once.
pub fn run_bounded<T, R, E>(
    tasks: Vec<Task<T>>,
    workers: usize,
    budget: u64,
    observer: &dyn Observer<T>,
    work: &(dyn Fn(&T) -> Result<R, E> + Sync),
    on_panic: &(dyn Fn(String) -> E + Sync),
) -> (Vec<Done<T, R, E>>, usize)
where
    T: Send,
    R: Send,
    E: Send,
{
    let n = tasks.len();
    let mut order: Vec<(usize, Task<T>)> = tasks.into_iter().enumerate().collect();
    // Largest first; equal sizes keep input order.
    order.sort_by(|a, b| b.1.footprint.cmp(&a.1.footprint).then(a.0.cmp(&b.0)));
    let state =
        Mutex::new(State { queue: order.into_iter().collect(), in_flight: 0, in_flight_bytes: 0, peak_in_flight: 0 });
    let wake = Condvar::new();
    let results: Mutex<Vec<Option<Done<T, R, E>>>> = Mutex::new((0..n).map(|_| None).collect());

    let worker = || loop {
        // Take the next task once it fits.
        let (pos, task) = {
            let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                let Some((_, front)) = st.queue.front() else {
                    return;
                };
                let fits = st.in_flight == 0 || st.in_flight_bytes.saturating_add(front.footprint) <= budget;
                if fits {
                    break;
                }
                st = wake.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            let Some((pos, task)) = st.queue.pop_front() else {
                return;
            };
            st.in_flight += 1;
            st.in_flight_bytes = st.in_flight_bytes.saturating_add(task.footprint);
            st.peak_in_flight = st.peak_in_flight.max(st.in_flight);
            (pos, task)
        };
        observer.started(&task.item);
        let result = match catch_unwind(AssertUnwindSafe(|| work(&task.item))) {
            Ok(r) => r,
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(on_panic(msg))
            }
        };
        observer.finished(&task.item, result.is_ok());
        {
            let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
            st.in_flight -= 1;
            st.in_flight_bytes = st.in_flight_bytes.saturating_sub(task.footprint);
        }
        wake.notify_all();
        let mut res = results.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cell) = res.get_mut(pos) {
            *cell = Some((task.item, result));
        }
    };
    std::thread::scope(|s| {
        // A thread the system will not give (thread or memory limits) is
        // not an error: the workers already running take its share, and
        // with none running this thread does the work itself.
        let mut spawned = 0;
        for _ in 0..workers.clamp(1, n.max(1)) {
            if std::thread::Builder::new().spawn_scoped(s, worker).is_err() {
                break;
            }
            spawned += 1;
        }
        if spawned == 0 {
            worker();
        }
    });
    let peak = state.lock().unwrap_or_else(|p| p.into_inner()).peak_in_flight;
    let out = results.into_inner().unwrap_or_else(|p| p.into_inner()).into_iter().flatten().collect();
    (out, peak)
}

/// The most tasks that can be in flight at once under `budget`: the most
/// of the smallest footprints that fit it together, and at least one (an
/// oversized task runs alone). A bound fixed by the inputs, where the
/// count [`run_bounded`] observes also depends on timing.
pub fn most_at_once(footprints: &[u64], budget: u64) -> usize {
    let mut sorted = footprints.to_vec();
    sorted.sort_unstable();
    let mut total = 0u64;
    let fit = sorted
        .iter()
        .take_while(|&&f| {
            total = total.saturating_add(f);
            total <= budget
        })
        .count();
    fit.clamp(1, footprints.len().max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn tasks(sizes: &[u64]) -> Vec<Task<usize>> {
        sizes.iter().enumerate().map(|(i, &s)| Task { item: i, footprint: s }).collect()
    }

    #[test]
    fn results_in_input_order_and_panics_caught() {
        let work = |i: &usize| -> Result<usize, String> {
            if *i == 2 {
                panic!("boom");
            }
            Ok(i * 10)
        };
        let (out, _) = run_bounded(tasks(&[1, 5, 3, 4]), 3, u64::MAX, &Silent, &work, &|m| m);
        let got: Vec<(usize, Result<usize, String>)> = out;
        assert_eq!(got, vec![(0, Ok(0)), (1, Ok(10)), (2, Err("boom".into())), (3, Ok(30))]);
    }

    #[test]
    fn budget_bounds_concurrency() {
        let running = AtomicUsize::new(0);
        let max_seen = AtomicUsize::new(0);
        let work = |_: &usize| -> Result<(), ()> {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            max_seen.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        };
        // Each task costs 60 of a 100 budget: one at a time despite 4 workers.
        let (out, peak) = run_bounded(tasks(&[60, 60, 60, 60]), 4, 100, &Silent, &work, &|_| ());
        assert_eq!(out.len(), 4);
        assert_eq!(peak, 1);
        assert_eq!(max_seen.load(Ordering::SeqCst), 1);
        // An oversized task still runs (alone); small ones then share.
        let (out, peak) = run_bounded(tasks(&[500, 10, 10, 10]), 4, 100, &Silent, &work, &|_| ());
        assert_eq!(out.len(), 4);
        assert!(peak >= 2);
    }

    #[test]
    fn most_at_once_counts_the_smallest_that_fit_together() {
        assert_eq!(most_at_once(&[60, 60, 60, 60], 100), 1);
        assert_eq!(most_at_once(&[500, 10, 10, 10], 100), 3);
        assert_eq!(most_at_once(&[500], 100), 1);
        assert_eq!(most_at_once(&[40, 30, 50, 20], 100), 3);
        assert_eq!(most_at_once(&[u64::MAX, u64::MAX], u64::MAX), 2);
        assert_eq!(most_at_once(&[], 100), 1);
    }
}
