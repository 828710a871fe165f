//! What is measured, independent of the device: shapes and parameter axes as named
//! constants, FLOP and byte formulas, benchmark ids, seeded input data and the tolerances
//! that correctness checks use. Backends implement these workloads; they never redefine them.

pub mod accuracy;
pub mod alloc;
pub mod attention;
pub mod compile;
pub mod components;
pub mod dtype;
pub mod family;
pub mod fp8;
pub mod gemm;
pub mod ids;
pub mod int8;
pub mod models;
pub mod random;
pub mod stream;
pub mod suite;
pub mod tensor_ops;
pub mod transfer;

pub use accuracy::Accuracy;
pub use dtype::DType;
pub use gemm::GemmShape;
pub use ids::BenchId;
pub use stream::StreamKernel;
pub use suite::Suite;
