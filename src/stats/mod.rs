//! Statistics: robust summaries, significance tests, confidence intervals, trend fits and
//! change points. Pure functions over slices, property-tested.
