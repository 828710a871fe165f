//! Verdicts: before/after comparison, the regression gate, trends over history and
//! cross-hardware views. Judges run records; never knows how a number was measured.
