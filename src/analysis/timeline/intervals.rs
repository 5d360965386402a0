//! Interval arithmetic for the timeline and the overlap rows' running time:
//! the running union of intervals fed in start order (HTA's merge: a new
//! group starts only when a start is strictly after every earlier end, so
//! touching intervals merge), a compensated sum, the linear-interpolation
//! percentile, and HTA's kernel type of a kernel name.

use crate::analysis::kernels::names::names_communication;
use crate::pysem::fcmp;

/// Neumaier's compensated sum: the order of a long sum of durations does not
/// change its value beyond the last bit.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sum {
    sum: f64,
    comp: f64,
}

impl Sum {
    pub(crate) fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if self.sum.abs() >= x.abs() {
            self.comp += (self.sum - t) + x;
        } else {
            self.comp += (x - t) + self.sum;
        }
        self.sum = t;
    }

    pub(crate) fn value(&self) -> f64 {
        self.sum + self.comp
    }
}

/// The union of intervals pushed in ascending start order.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Union {
    /// The open group (start, end).
    cur: Option<(f64, f64)>,
    first_start: Option<f64>,
    total: Sum,
}

impl Union {
    /// Adds `[start, end]`; returns the end of the group before it when it
    /// opens a new group after an earlier one (the gap is `start - that`).
    pub(crate) fn push(&mut self, start: f64, end: f64) -> Option<f64> {
        match &mut self.cur {
            Some((_, ge)) if !(start > *ge) => {
                if end > *ge {
                    *ge = end;
                }
                None
            }
            Some((gs, ge)) => {
                let prev_end = *ge;
                self.total.add(prev_end - *gs);
                self.cur = Some((start, end));
                Some(prev_end)
            }
            None => {
                self.first_start = Some(start);
                self.cur = Some((start, end));
                None
            }
        }
    }

    /// Total covered time (a group whose end is before its start, which µs
    /// rounding can make, counts negative, as in HTA).
    pub(crate) fn total(&self) -> f64 {
        let mut t = self.total;
        if let Some((gs, ge)) = self.cur {
            t.add(ge - gs);
        }
        t.value()
    }

    /// First start to the last group's end; 0 when empty.
    pub(crate) fn span(&self) -> f64 {
        match (self.first_start, self.cur) {
            (Some(s), Some((_, e))) => e - s,
            _ => 0.0,
        }
    }
}

/// The `p`-th quantile (0..=1) of ascending `sorted` values (the
/// definition that [`percentiles`] computes without sorting), interpolating
/// linearly between the two nearest order statistics (numpy's and pandas'
/// default); `None` for no values.
#[cfg(test)]
pub(crate) fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// The quantiles `ps` (ascending; each as `percentile` defines it) of `values`, as if they were
/// sorted, found by selection (linear time): `values` is left reordered.
pub(crate) fn percentiles<const N: usize>(values: &mut [f64], ps: [f64; N]) -> [Option<f64>; N] {
    let n = values.len();
    let mut out = [None; N];
    if n == 0 {
        return out;
    }
    // Everything before `done` is in place and no larger than what follows.
    let mut done = 0usize;
    let mut at = |rank: usize, values: &mut [f64]| -> f64 {
        if rank >= done {
            let (_, nth, _) = values[done..].select_nth_unstable_by(rank - done, |a, b| fcmp(*a, *b));
            let v = *nth;
            done = rank + 1;
            v
        } else {
            values[rank]
        }
    };
    for (slot, &p) in out.iter_mut().zip(ps.iter()) {
        let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
        let lo = h.floor() as usize;
        let hi = (lo + 1).min(n - 1);
        let low = at(lo, values);
        let high = at(hi, values);
        *slot = Some(low + (h - lo as f64) * (high - low));
    }
    out
}

/// Sorts values for [`percentile`] (NaN last, never a panic).
#[cfg(test)]
pub(crate) fn sort_values(v: &mut [f64]) {
    v.sort_unstable_by(|a, b| fcmp(*a, *b));
}

/// HTA's kernel type of a kernel name (Python `re.match`, anchored at the
/// start, `.` not matching a newline); the category is not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KernelType {
    Computation,
    Communication,
    Memory,
    Other,
}

impl KernelType {
    pub(crate) fn of(name: &str) -> KernelType {
        let line = name.split('\n').next().unwrap_or("");
        // ^nccl.*Kernel
        if line.starts_with("nccl") && line[4..].contains("Kernel") {
            return KernelType::Communication;
        }
        // (^Memcpy)|(^Memset)|(^dma)
        if name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma") {
            return KernelType::Memory;
        }
        // (^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync): the first and the
        // `^Memset` branch are taken above.
        if line.contains("Memcpy") || line.contains("Sync") {
            return KernelType::Other;
        }
        KernelType::Computation
    }

    /// The kind of a kernel on the `trace` basis: HTA's, except that a
    /// kernel whose name names a collective or a communication library, or
    /// lies in an expert-parallel library's namespace
    /// ([`names_communication`]: vLLM's custom all-reduce
    /// `cross_device_reduce`, `multimem_all_reduce`, RCCL and NCCL names
    /// without `Kernel`, DeepEP's `dispatch`, `combine` and `notify` steps)
    /// is communication.
    pub(crate) fn of_trace(name: &str) -> KernelType {
        if names_communication(name) {
            return KernelType::Communication;
        }
        KernelType::of(name)
    }

    pub(crate) fn code(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_code(c: u8) -> KernelType {
        match c {
            0 => KernelType::Computation,
            1 => KernelType::Communication,
            2 => KernelType::Memory,
            _ => KernelType::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn union(iv: &[(f64, f64)]) -> (f64, f64, Vec<f64>) {
        let mut u = Union::default();
        let mut gaps = Vec::new();
        for &(s, e) in iv {
            if let Some(prev) = u.push(s, e) {
                gaps.push(s - prev);
            }
        }
        (u.total(), u.span(), gaps)
    }

    #[test]
    fn union_merges_overlapping_and_touching() {
        let (total, span, gaps) = union(&[(0.0, 10.0), (5.0, 12.0), (12.0, 15.0), (20.0, 25.0), (21.0, 22.0)]);
        assert_eq!((total, span, gaps), (20.0, 25.0, vec![5.0]));
        assert_eq!(union(&[]), (0.0, 0.0, vec![]));
        // A later interval contained in an earlier one does not end the group.
        let (total, span, gaps) = union(&[(0.0, 100.0), (10.0, 20.0), (30.0, 40.0), (101.0, 102.0)]);
        assert_eq!((total, span, gaps), (101.0, 102.0, vec![1.0]));
    }

    #[test]
    fn union_counts_inverted_groups_negative() {
        // µs rounding can give a sub-µs kernel an end before its start.
        let (total, span, _) = union(&[(5.0, 4.0), (6.0, 8.0)]);
        assert_eq!((total, span), (1.0, 3.0));
    }

    #[test]
    fn percentiles_interpolate_linearly() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.5), Some(2.5));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 1.0), Some(4.0));
        assert!((percentile(&v, 0.9).unwrap() - 3.7).abs() < 1e-12);
        assert_eq!(percentile(&[7.0], 0.99), Some(7.0));
        assert_eq!(percentile(&[], 0.5), None);
        let mut w = [3.0, f64::NAN, 1.0];
        sort_values(&mut w);
        assert_eq!(&w[..2], &[1.0, 3.0]);
    }

    #[test]
    fn compensated_sum() {
        let mut s = Sum::default();
        for x in [1e16, 1.0, -1e16, 1.0] {
            s.add(x);
        }
        assert_eq!(s.value(), 2.0);
    }

    #[test]
    fn kernel_types_follow_hta() {
        use KernelType::*;
        assert_eq!(KernelType::of("ncclKernel_AllReduce_RING"), Communication);
        assert_eq!(KernelType::of("ncclDevKernel_AllGather"), Communication);
        assert_eq!(KernelType::of("nccl\nKernel"), Computation);
        assert_eq!(KernelType::of("Memcpy HtoD (Pinned -> Device)"), Memory);
        assert_eq!(KernelType::of("Memset (Device)"), Memory);
        assert_eq!(KernelType::of("dma_copy"), Memory);
        assert_eq!(KernelType::of("xMemcpyAsync"), Other);
        assert_eq!(KernelType::of("Event Sync"), Other);
        assert_eq!(KernelType::of("Stream Wait Event"), Computation);
        assert_eq!(KernelType::of("void vllm::cross_device_reduce_1stage<float, 2>"), Computation);
        assert_eq!(KernelType::of_trace("void vllm::cross_device_reduce_1stage<float, 2>"), Communication);
        assert_eq!(KernelType::of_trace("multimem_all_reduce_kernel<c10::BFloat16, 16>"), Communication);
        assert_eq!(KernelType::of_trace("ncclKernel_AllReduce_RING"), Communication);
        // The weaker words of the kernel table name compute kernels too.
        assert_eq!(KernelType::of_trace("groupnorm_kernel_dispatch_down<float>"), Computation);
        assert_eq!(KernelType::of_trace("_combined_routing_compute"), Computation);
        assert_eq!(KernelType::of_trace("Memcpy DtoD"), Memory);
        assert_eq!(KernelType::of("void gemm<float>(...)"), Computation);
        assert_eq!(KernelType::of("a\nSync"), Computation);
        for t in [Computation, Communication, Memory, Other] {
            assert_eq!(KernelType::from_code(t.code()), t);
        }
    }
}
