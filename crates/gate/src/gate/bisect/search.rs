//! The binary search itself, without git or measurement: positions 0 (`--good`) to n
//! (`--bad`) on the first-parent line, the last position known good, the first known bad,
//! and the positions that could not be judged (no build, a benchmark missing or failing,
//! still unsure after the gate's last round). An untestable position is never guessed: the
//! next probe is its nearest testable neighbour, as `git bisect skip` does, and when only
//! untestable positions are left between good and bad the search ends naming all of them.

use std::collections::BTreeSet;

/// What one probe of a position found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Good,
    Bad,
    /// Not judged: it did not build, or its verdict stayed unsure, or the followed benchmarks
    /// could not be measured there.
    Untestable,
}

/// The state of one search over positions `0..=bad`.
#[derive(Clone, Debug)]
pub struct Search {
    /// The last position known good (0 is `--good`).
    good: usize,
    /// The first position known bad.
    bad: usize,
    untestable: BTreeSet<usize>,
}

/// Where a finished search points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// The one position whose parent on the line is good while it is bad.
    Culprit(usize),
    /// The first bad position is one of these (in order); every one but the last could not
    /// be judged, the last is known bad.
    OneOf(Vec<usize>),
}

impl Search {
    /// A search whose position `bad` (> 0) is known bad against position 0.
    pub fn new(bad: usize) -> Search {
        Search {
            good: 0,
            bad,
            untestable: BTreeSet::new(),
        }
    }

    /// The next position to probe: the testable one nearest the middle of the open range,
    /// the later one on a tie; `None` when nothing testable is left between good and bad.
    pub fn next(&self) -> Option<usize> {
        let middle = self.good + (self.bad - self.good) / 2;
        (self.good + 1..self.bad)
            .filter(|p| !self.untestable.contains(p))
            .min_by_key(|p| (p.abs_diff(middle), *p < middle))
    }

    /// Records what probing `position` found. A position outside the open range is a bug
    /// of the caller and is ignored rather than allowed to widen the range.
    pub fn mark(&mut self, position: usize, mark: Mark) {
        if position <= self.good || position >= self.bad {
            return;
        }
        match mark {
            Mark::Good => self.good = position,
            Mark::Bad => self.bad = position,
            Mark::Untestable => {
                self.untestable.insert(position);
            }
        }
    }

    /// Where the search points once [`Search::next`] has nothing left.
    pub fn found(&self) -> Found {
        if self.bad == self.good + 1 {
            Found::Culprit(self.bad)
        } else {
            Found::OneOf((self.good + 1..=self.bad).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search over `n` positions where `first_bad` is the culprit and `untestable`
    /// cannot be judged; returns the probes in order and where it ended.
    fn simulate(n: usize, first_bad: usize, untestable: &[usize]) -> (Vec<usize>, Found) {
        let mut search = Search::new(n);
        let mut probes = Vec::new();
        while let Some(p) = search.next() {
            probes.push(p);
            let mark = if untestable.contains(&p) {
                Mark::Untestable
            } else if p >= first_bad {
                Mark::Bad
            } else {
                Mark::Good
            };
            search.mark(p, mark);
            assert!(probes.len() <= n, "the search does not end: {probes:?}");
        }
        (probes, search.found())
    }

    #[test]
    fn finds_every_culprit_in_logarithmic_probes() {
        for n in 1..40 {
            for culprit in 1..=n {
                let (probes, found) = simulate(n, culprit, &[]);
                assert_eq!(found, Found::Culprit(culprit), "n {n}");
                let bound = (usize::BITS - n.leading_zeros()) as usize;
                assert!(probes.len() <= bound, "n {n}: {probes:?}");
            }
        }
    }

    #[test]
    fn an_untestable_middle_is_replaced_by_its_later_neighbour() {
        // Positions 1..=7, 7 known bad; 3 does not build, 5 is the culprit.
        let (probes, found) = simulate(7, 5, &[3]);
        assert_eq!(probes, [3, 4, 5]);
        assert_eq!(found, Found::Culprit(5));
    }

    #[test]
    fn untestable_positions_next_to_the_culprit_are_named_never_guessed() {
        // 4 and 5 cannot be judged; the culprit is 5, so 3 is good and 6 bad.
        let (_, found) = simulate(7, 5, &[4, 5]);
        assert_eq!(found, Found::OneOf(vec![4, 5, 6]));
        // Nothing testable at all between good and bad.
        let (probes, found) = simulate(3, 3, &[1, 2]);
        assert_eq!(probes, [1, 2]);
        assert_eq!(found, Found::OneOf(vec![1, 2, 3]));
    }

    #[test]
    fn a_mark_outside_the_open_range_changes_nothing() {
        let mut search = Search::new(4);
        search.mark(2, Mark::Good);
        search.mark(1, Mark::Bad);
        search.mark(4, Mark::Good);
        assert_eq!(search.next(), Some(3));
        search.mark(3, Mark::Bad);
        assert_eq!(search.found(), Found::Culprit(3));
    }
}
