//! End-to-end processing latency (publish → FIN) over a sliding window, for nsqd's
//! `--e2e-processing-latency-percentile` / `--e2e-processing-latency-window-time`.
//!
//! Like nsqd's quantile stream, the window is two halves: samples land in the current half,
//! and every half-window the older half is dropped. Each half keeps a fixed-size uniform
//! sample (reservoir sampling with a seeded generator), so memory stays bounded at any
//! message rate and results are deterministic.

use crate::time::{Nanos, Time};
use serde::{Serialize, Serializer};

/// Samples kept per half-window.
const RESERVOIR: usize = 1024;

#[derive(Debug, Clone, Default)]
struct Half {
    samples: Vec<u64>,
    seen: u64,
}

/// One channel's latency window.
#[derive(Debug, Clone)]
pub struct E2eWindow {
    current: Half,
    previous: Half,
    /// When the current half began.
    started: Time,
    rng: u64,
}

impl E2eWindow {
    pub fn new(now: Time, seed: u64) -> Self {
        Self {
            current: Half::default(),
            previous: Half::default(),
            started: now,
            rng: seed | 1,
        }
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn rotate(&mut self, now: Time, window: Nanos) {
        let half = (window / 2).max(1);
        if now.saturating_sub(self.started) >= window {
            self.previous = Half::default();
            self.current = Half::default();
            self.started = now;
        } else if now.saturating_sub(self.started) >= half {
            self.previous = std::mem::take(&mut self.current);
            self.started += half;
        }
    }

    /// A message finished `latency` after it was published.
    pub fn insert(&mut self, now: Time, latency: Nanos, window: Nanos) {
        self.rotate(now, window);
        self.current.seen += 1;
        if self.current.samples.len() < RESERVOIR {
            self.current.samples.push(latency);
        } else {
            let j = self.next_random() % self.current.seen;
            if (j as usize) < RESERVOIR {
                self.current.samples[j as usize] = latency;
            }
        }
    }

    /// Add this window's samples (those still inside it at `now`) to `acc`.
    pub fn collect(&self, now: Time, window: Nanos, acc: &mut Samples) {
        let age = now.saturating_sub(self.started);
        if age >= window {
            return;
        }
        let halves: &[&Half] = if age >= (window / 2).max(1) {
            &[&self.current]
        } else {
            &[&self.current, &self.previous]
        };
        for h in halves {
            acc.count += h.seen;
            acc.samples.extend_from_slice(&h.samples);
        }
    }
}

/// Samples gathered from one or more windows (a topic merges its channels').
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub count: u64,
    pub samples: Vec<u64>,
}

impl Samples {
    /// nsqd's `Result`: the count and, per configured quantile, its value.
    pub fn result(mut self, quantiles: &[f64]) -> E2eLatency {
        if quantiles.is_empty() {
            return E2eLatency::default();
        }
        self.samples.sort_unstable();
        let n = self.samples.len();
        let percentiles = quantiles
            .iter()
            .map(|&q| {
                let value = if n == 0 {
                    0
                } else {
                    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
                    self.samples[rank - 1]
                };
                Percentile { quantile: q, value }
            })
            .collect();
        E2eLatency {
            count: self.count,
            percentiles: Some(percentiles),
        }
    }
}

/// nsqd's `e2e_processing_latency` object.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct E2eLatency {
    pub count: u64,
    pub percentiles: Option<Vec<Percentile>>,
}

/// One quantile and its value in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Percentile {
    #[serde(serialize_with = "go_float")]
    pub quantile: f64,
    pub value: u64,
}

/// Go's JSON for a float64: a whole number has no fraction (`1`, not `1.0`).
fn go_float<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

impl std::fmt::Display for E2eLatency {
    /// nsqd's `Result.String()`: the values, `NanoSecondToHuman`, joined by `", "`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(ps) = &self.percentiles else {
            return Ok(());
        };
        let parts: Vec<String> = ps
            .iter()
            .map(|p| {
                let v = p.value as f64;
                let (v, unit) = if v > 1e9 {
                    (v / 1e9, "s")
                } else if v > 1e6 {
                    (v / 1e6, "ms")
                } else if v > 1e3 {
                    (v / 1e3, "us")
                } else {
                    (v, "ns")
                };
                format!("{v:.1}{unit}")
            })
            .collect();
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SECOND;

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn quantiles_over_the_window_and_its_halves() {
        let window = 10 * SECOND;
        let mut w = E2eWindow::new(0, 1);
        for v in 1..=100u64 {
            w.insert(SECOND, v * 1_000_000, window);
        }
        let mut acc = Samples::default();
        w.collect(2 * SECOND, window, &mut acc);
        let r = acc.result(&[1.0, 0.99, 0.5]);
        assert_eq!(r.count, 100);
        let values: Vec<u64> = r
            .percentiles
            .clone()
            .unwrap()
            .iter()
            .map(|p| p.value)
            .collect();
        assert_eq!(values, vec![100_000_000, 99_000_000, 50_000_000]);
        assert_eq!(r.to_string(), "100.0ms, 99.0ms, 50.0ms");
        assert_eq!(
            serde_json::to_string(&r.percentiles.unwrap()[0]).unwrap(),
            r#"{"quantile":1,"value":100000000}"#
        );
        // Half a window later the old half still counts; a whole window later nothing does.
        w.insert(6 * SECOND, 5, window);
        let mut acc = Samples::default();
        w.collect(6 * SECOND, window, &mut acc);
        assert_eq!(acc.count, 101);
        let mut acc = Samples::default();
        w.collect(17 * SECOND, window, &mut acc);
        assert_eq!(acc.count, 0);
        // Bounded memory at any rate.
        for v in 0..100_000u64 {
            w.insert(20 * SECOND, v, window);
        }
        assert!(w.current.samples.len() <= RESERVOIR);
        assert_eq!(E2eLatency::default().to_string(), "");
    }
}
