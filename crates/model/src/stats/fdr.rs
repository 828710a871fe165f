//! False-discovery-rate control across all benchmarks of one comparison: with hundreds of
//! benchmarks, a per-benchmark 5 % test flags several unchanged ones by chance alone.

/// Benjamini-Hochberg adjusted p-values (q-values), in the input order. NaN stays NaN and
/// does not count towards the number of tests.
pub fn benjamini_hochberg(p_values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p_values.len())
        .filter(|&i| !p_values[i].is_nan())
        .collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let m = order.len() as f64;
    let mut q = vec![f64::NAN; p_values.len()];
    let mut running_min = 1.0_f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        let adjusted = p_values[i] * m / (rank + 1) as f64;
        running_min = running_min.min(adjusted);
        q[i] = running_min;
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn matches_a_worked_example() {
        // R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "BH") = 0.02 0.04 0.04 0.02
        let q = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.02, 0.04, 0.04, 0.02];
        for (a, b) in q.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{q:?}");
        }
        assert!(benjamini_hochberg(&[f64::NAN, 0.5])[0].is_nan());
    }

    proptest! {
        #[test]
        fn adjusted_values_bound_and_keep_order(p in proptest::collection::vec(0.0f64..=1.0, 1..50)) {
            let q = benjamini_hochberg(&p);
            for i in 0..p.len() {
                prop_assert!(q[i] >= p[i] - 1e-15 && q[i] <= 1.0);
                for j in 0..p.len() {
                    if p[i] < p[j] { prop_assert!(q[i] <= q[j] + 1e-15); }
                }
            }
        }
    }
}
