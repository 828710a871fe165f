//! Seeded input data. Inputs are random normal, never zeros: low-toggle data lets GPUs
//! raise their clocks and inflates throughput (AMD's max-achievable-FLOPs study).
//!
//! The generator is xoshiro256** seeded through SplitMix64, written here rather than taken
//! from `rand` because a benchmark's inputs must be the same bytes across crate upgrades:
//! `rand` documents that its seeded generators may change output between versions.

/// xoshiro256** (Blackman & Vigna), a small, fast, statistically strong generator.
#[derive(Clone, Debug)]
pub struct SeededRng {
    state: [u64; 4],
}

impl SeededRng {
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let mut next = || {
            sm = sm.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = sm;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        SeededRng {
            state: [next(), next(), next(), next()],
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, bound).
    pub fn below(&mut self, bound: usize) -> usize {
        ((self.next_u64() as u128 * bound as u128) >> 64) as usize
    }

    /// Standard normal by the Box–Muller transform (both outputs used).
    pub fn fill_normal(&mut self, out: &mut [f64]) {
        let mut chunks = out.chunks_exact_mut(2);
        for pair in &mut chunks {
            let (a, b) = self.normal_pair();
            pair[0] = a;
            pair[1] = b;
        }
        if let [last] = chunks.into_remainder() {
            *last = self.normal_pair().0;
        }
    }

    fn normal_pair(&mut self) -> (f64, f64) {
        // 1 - u lies in (0, 1], so the logarithm is finite.
        let radius = (-2.0 * (1.0 - self.next_f64()).ln()).sqrt();
        let angle = std::f64::consts::TAU * self.next_f64();
        (radius * angle.cos(), radius * angle.sin())
    }
}

/// `len` standard normal values from `seed`, as f64.
pub fn normal_f64(seed: u64, len: usize) -> Vec<f64> {
    let mut out = vec![0.0; len];
    SeededRng::new(seed).fill_normal(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_data_and_no_zeros() {
        let a = normal_f64(7, 10_001);
        assert_eq!(a, normal_f64(7, 10_001));
        assert_ne!(a, normal_f64(8, 10_001));
        assert!(a.iter().all(|v| v.is_finite() && *v != 0.0));
    }

    #[test]
    fn moments_are_standard_normal() {
        let a = normal_f64(42, 200_000);
        let n = a.len() as f64;
        let mean = a.iter().sum::<f64>() / n;
        let var = a.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "variance {var}");
    }

    #[test]
    fn below_stays_in_range() {
        let mut rng = SeededRng::new(1);
        assert!((0..10_000).all(|_| rng.below(17) < 17));
    }
}
