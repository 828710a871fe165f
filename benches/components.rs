//! `components` bench target (being built; see the issues).
use criterion::{Criterion, criterion_group, criterion_main};
fn placeholder(_c: &mut Criterion) {}
criterion_group!(benches, placeholder);
criterion_main!(benches);
