//! Prints BENCHMARKS.md's CPU accuracy table: each CPU backend's check before timing, run
//! on the quick suite's shapes, and the accuracy set it leaves in the benchmark's notes
//! (the same set a recorded run carries).
//!
//! `cargo run --release --example accuracy_table`

use stackbench::backend::TimedWorkload;
use stackbench::backend::cpu::attention::CpuAttention;
use stackbench::backend::cpu::gemm::CpuGemm;
use stackbench::backend::cpu::pool::StaticPool;
use stackbench::backend::cpu::tensor_ops::CpuTensorOp;
use stackbench::workload::accuracy::{ACCURACY_NOTE, eps_figure};
use stackbench::workload::attention::{AttentionKernel, AttentionShape, CPU_HEADS, HEAD_DIM};
use stackbench::workload::tensor_ops::{HIDDEN, HostElement, TensorOp, TensorShape};
use stackbench::workload::{Accuracy, DType, GemmShape};

fn row(id: &str, workload: &mut dyn TimedWorkload) {
    if let Err(e) = workload.verify() {
        println!("| `{id}` | failed: {e} | | | | | |");
        return;
    }
    let notes = workload.notes();
    let Some(a) = notes
        .get(ACCURACY_NOTE)
        .and_then(|n| serde_json::from_value::<Accuracy>(n.clone()).ok())
    else {
        println!("| `{id}` | no accuracy recorded | | | | | |");
        return;
    };
    println!(
        "| `{id}` | {:.2e} | {:.2e} | {:.2e} | {} | {:.0} | {} |",
        a.max_abs_error,
        a.max_rel_error,
        a.mean_rel_error,
        eps_figure(a.max_eps_error),
        a.worst_bound_ratio * 100.0,
        a.reference
    );
}

fn tensor<T: HostElement>(pool: &StaticPool, op: TensorOp, shape: TensorShape) {
    let id = format!("tensor_ops/cpu/{}/{}", op.function_id(T::DTYPE), shape.id());
    match CpuTensorOp::<T>::new(pool, op, shape) {
        Ok(mut w) => row(&id, &mut w),
        Err(e) => println!("| `{id}` | skipped: {e} | | | | | |"),
    }
}

fn main() {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pool = StaticPool::new(threads).expect("a worker pool");
    println!(
        "| benchmark | max abs error | max rel error | mean rel error | error in ε | % of tolerance | reference |"
    );
    println!("|---|---:|---:|---:|---:|---:|---|");
    for size in [512, 2048] {
        for dtype in [
            DType::F64,
            DType::F32,
            DType::F16,
            DType::Bf16,
            DType::Fp8E4m3,
        ] {
            let shape = GemmShape::square(size);
            let id = format!("gemm/cpu/{dtype}/{}", shape.id());
            match CpuGemm::new(shape, dtype, threads) {
                Ok(mut g) => row(&id, &mut g),
                Err(e) => println!("| `{id}` | skipped: {e} | | | | | |"),
            }
        }
    }
    let shape = TensorShape::new(256, HIDDEN);
    for op in [
        TensorOp::Add,
        TensorOp::Gelu,
        TensorOp::Sum,
        TensorOp::Softmax,
        TensorOp::LayerNorm,
    ] {
        tensor::<f32>(&pool, op, shape);
        tensor::<half::f16>(&pool, op, shape);
        tensor::<half::bf16>(&pool, op, shape);
    }
    for kernel in AttentionKernel::ALL {
        for causal in [false, true] {
            let shape = AttentionShape::new(1, CPU_HEADS, 1024, HEAD_DIM, causal);
            let id = format!(
                "attention/cpu/{}/{}",
                shape.function_id(kernel, DType::F32),
                shape.id()
            );
            match CpuAttention::new(&pool, kernel, shape, DType::F32) {
                Ok(mut w) => row(&id, &mut w),
                Err(e) => println!("| `{id}` | skipped: {e} | | | | | |"),
            }
        }
    }
}
