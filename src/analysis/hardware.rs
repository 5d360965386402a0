//! The hardware a trace ran on, as the profiler's metadata gives it: the
//! GPUs' names (`deviceProperties`) and the job's world size
//! (`distributedInfo.world_size`). A comparison of two runs reads it to
//! warn when they ran on different hardware.

use serde_json::Value;

/// What one run ran on; empty when its traces do not say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hardware {
    /// The distinct GPU names, sorted, each with how many devices bear it.
    pub gpus: Vec<(String, usize)>,
    pub world_size: Option<u64>,
}

impl Hardware {
    /// From a trace's `deviceProperties` and `distributedInfo` values.
    pub fn of(device_properties: Option<&Value>, distributed_info: Option<&Value>) -> Self {
        let mut gpus: Vec<(String, usize)> = Vec::new();
        let devices = device_properties.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        // A name left empty (some builds write `""`) says nothing.
        for name in devices.iter().filter_map(|d| d.get("name")?.as_str()).map(str::trim).filter(|n| !n.is_empty()) {
            match gpus.iter_mut().find(|(n, _)| n == name) {
                Some((_, count)) => *count += 1,
                None => gpus.push((name.to_string(), 1)),
            }
        }
        gpus.sort();
        Hardware { gpus, world_size: distributed_number(distributed_info, "world_size") }
    }

    /// How `self` and `other` differ, where both say: the GPU models, or the
    /// world size. `None` when they agree or either side does not say.
    pub fn difference(&self, other: &Hardware) -> Option<String> {
        let names = |h: &Hardware| h.gpus.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        let mut parts = Vec::new();
        if !self.gpus.is_empty() && !other.gpus.is_empty() && names(self) != names(other) {
            parts.push(format!("GPUs {} against {}", self.gpus_text(), other.gpus_text()));
        }
        if let (Some(a), Some(b)) = (self.world_size, other.world_size) {
            if a != b {
                parts.push(format!("world size {a} against {b}"));
            }
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// `8× NVIDIA A100-SXM4-40GB`, models joined by ` + `.
    fn gpus_text(&self) -> String {
        self.gpus.iter().map(|(n, c)| format!("{c}× {n}")).collect::<Vec<_>>().join(" + ")
    }
}

/// `distributedInfo.<key>` as a non-negative integer (or integral float /
/// numeric string).
pub fn distributed_number(info: Option<&Value>, key: &str) -> Option<u64> {
    match info?.get(key)? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64().filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f < 1e15).map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gpus_and_world_size_are_read_from_the_metadata() {
        let h = Hardware::of(
            Some(
                &json!([{"id": 0, "name": "NVIDIA A100"}, {"id": 1, "name": "NVIDIA A100 "}, {"name": "Tesla V100"}, {}, {"name": ""}]),
            ),
            Some(&json!({"rank": 3, "world_size": "8"})),
        );
        assert_eq!(h.gpus, vec![("NVIDIA A100".to_string(), 2), ("Tesla V100".to_string(), 1)]);
        assert_eq!(h.world_size, Some(8));
        assert_eq!(Hardware::of(None, Some(&json!({"world_size": -1}))), Hardware::default());
    }

    #[test]
    fn only_what_both_sides_say_is_compared() {
        let a = Hardware { gpus: vec![("NVIDIA A100".into(), 8)], world_size: Some(8) };
        let b = Hardware { gpus: vec![("Tesla V100".into(), 2)], world_size: Some(2) };
        assert_eq!(
            a.difference(&b).as_deref(),
            Some("GPUs 8× NVIDIA A100 against 2× Tesla V100, world size 8 against 2")
        );
        // The same model on fewer visible devices is the same hardware.
        let fewer = Hardware { gpus: vec![("NVIDIA A100".into(), 1)], world_size: Some(8) };
        assert_eq!(a.difference(&fewer), None);
        // A side that does not say is not a difference.
        assert_eq!(a.difference(&Hardware::default()), None);
        assert_eq!(a.difference(&a), None);
    }
}
