//! The only code that knows Criterion's on-disk format. That format is private to Criterion
//! and changes between versions, so this reader is tolerant and fixture-tested.
