//! The families against the backends they run on: a GPU backend that states only its vendor
//! parts gets every shared axis and workload from the families' modules, the CPU's counted
//! (single-threaded) variant runs the same ids as the timed one, and the registry agrees
//! with the model's descriptor table.

use super::alloc::AllocBackend;
use super::attention::AttentionBackend;
use super::gemm::GemmBackend;
use super::memory_bandwidth::BandwidthBackend;
use super::tensor_ops::TensorOpsBackend;
use super::*;
use crate::backend::cpu::CpuBackend;
use crate::backend::gpu::backend::tests::{L2_BYTES, MEMORY_BYTES};
use crate::backend::gpu::tests::HostDevice;
use crate::backend::gpu::{self, axes};
use crate::backend::{BackendKind, Peer};
use crate::workload::attention::{AttentionKernel, AttentionShape};
use crate::workload::tensor_ops::{TensorOp, TensorShape};
use crate::workload::transfer::TransferKind;
use crate::workload::{DType, GemmShape};

#[test]
fn the_single_threaded_backend_runs_everything_on_the_calling_thread() {
    let backend = CpuBackend::open_single_threaded();
    assert!(backend.pool.is_inline());
    assert_eq!(backend.pool.threads(), 1);
    assert_eq!(backend.device().properties["threads"], 1);
    // The same sweep as the timed backend: the counted ids are the timed ids.
    let timed = CpuBackend::open().unwrap();
    assert_eq!(
        backend.stream_sizes(Suite::Quick),
        timed.stream_sizes(Suite::Quick)
    );
    // GEMM takes its thread count from the pool: one means no rayon.
    let mut workload = backend.gemm(GemmShape::square(64), DType::F32).unwrap();
    workload.verify().unwrap();
    workload.run(1).unwrap();
}

#[test]
fn a_gpu_backend_gets_the_shared_axes_and_workloads_from_one_place() {
    let dev = HostDevice::new();
    let backend: &dyn Backend = &dev;
    // The families reach it as a peer, the way `cases` does.
    let Peer::Gpu(gpu) = backend.peer() else {
        panic!("a GPU backend is a GPU peer")
    };
    assert_eq!(backend.kind(), BackendKind::Cuda);
    assert_eq!(backend.device().name, "host test device");
    assert_eq!(gpu.gemm_dtypes(), vec![DType::F32]);
    assert_eq!(
        backend.sampling(Suite::Quick),
        SamplingProfile::gpu(Suite::Quick)
    );
    assert_eq!(
        gpu.gemm_shapes(Suite::Quick),
        crate::workload::gemm::gpu_shapes(Suite::Quick)
    );
    assert_eq!(
        gpu.stream_sizes(Suite::Full),
        gpu::stream::sizes(Suite::Full, L2_BYTES, MEMORY_BYTES)
    );
    assert_eq!(gpu.transfers(Suite::Quick).len(), TransferKind::ALL.len());
    assert_eq!(gpu.tensor_dtypes(), axes::tensor_dtypes());
    assert_eq!(gpu.attention_dtypes(), axes::attention_dtypes());
    assert_eq!(
        gpu.attention_shapes(Suite::Quick),
        axes::attention_shapes(Suite::Quick)
    );
    // The vendor's own parts answer through the backend.
    let gemm = gpu.gemm(GemmShape::square(64), DType::F32);
    assert!(gemm.err().is_some_and(|e| e.is_skip()));
    // Tensor ops and attention reach the shared kernels: the device sees their launches.
    let mut op = gpu
        .tensor_op(TensorOp::Add, DType::F32, TensorShape::new(4, 8))
        .unwrap();
    assert!(op.verify().err().is_some_and(|e| e.is_skip()));
    let shape = AttentionShape::new(1, 1, 16, 64, false);
    if let Ok(mut attn) = gpu.attention(AttentionKernel::Flash, shape, DType::F32) {
        assert!(attn.verify().is_err());
    }
    let launches = dev.launches.borrow();
    assert_eq!(launches.first().map(String::as_str), Some("add_f32"));
}

#[test]
fn every_registered_family_is_a_backend_family_of_the_model_table_once() {
    let names: Vec<&str> = FAMILIES.iter().map(|f| f.family().name).collect();
    let table = crate::workload::family::FAMILIES;
    // In the table's order, so the registry reads as `run_benchmarks.sh` runs them.
    let in_table: Vec<&str> = table
        .iter()
        .map(|f| f.name)
        .filter(|n| names.contains(n))
        .collect();
    assert_eq!(
        names, in_table,
        "each registered family once, in the table's order"
    );
    for family in FAMILIES {
        let descriptor = family.family();
        assert_eq!(
            descriptor.runs_on,
            crate::workload::family::RunsOn::Backend,
            "{}: a native family's ids name a backend",
            descriptor.name
        );
        // By value: a descriptor is a promoted constant, and an optimised build may keep
        // one copy of it per codegen unit, so its address identifies nothing.
        assert_eq!(by_name(descriptor.name).unwrap().family(), descriptor);
    }
    assert!(by_name("components").is_none());
}

#[test]
fn every_family_has_cases_on_the_cpu_and_ids_of_its_own_name() {
    let cpu = CpuBackend::open_single_threaded();
    for family in FAMILIES {
        for suite in [Suite::Quick, Suite::Full] {
            let cases = family.cases(&cpu, suite);
            assert!(!cases.is_empty(), "{}", family.family().name);
            for case in &cases {
                assert_eq!(case.id.group.split('/').next(), Some(family.family().name));
            }
            let mut ids: Vec<String> = cases.iter().map(|c| c.id.full()).collect();
            ids.sort();
            ids.dedup();
            assert_eq!(
                ids.len(),
                cases.len(),
                "{}: an id twice",
                family.family().name
            );
        }
    }
}

#[test]
fn the_cpu_lists_blas_gemms_beside_its_own_kernels_and_a_gpu_none() {
    let cpu = CpuBackend::open_single_threaded();
    for suite in [Suite::Quick, Suite::Full] {
        let ids: Vec<String> = gemm::Gemm
            .cases(&cpu, suite)
            .iter()
            .map(|c| c.id.full())
            .collect();
        for dtype in ["f32", "f64"] {
            let own: Vec<&String> = ids
                .iter()
                .filter(|id| id.starts_with(&format!("gemm/cpu/{dtype}/")))
                .collect();
            let blas: Vec<String> = ids
                .iter()
                .filter_map(|id| id.strip_prefix(&format!("gemm/cpu/blas_{dtype}/")))
                .map(|shape| format!("gemm/cpu/{dtype}/{shape}"))
                .collect();
            assert!(!own.is_empty(), "{suite}: {ids:?}");
            assert_eq!(own, blas.iter().collect::<Vec<_>>(), "{suite} {dtype}");
        }
        for dtype in ["f16", "bf16", "int8", "int8q"] {
            assert!(!ids.iter().any(|id| id.contains(&format!("/blas_{dtype}/"))));
        }
    }
    let dev = HostDevice::new();
    let ids: Vec<String> = gemm::Gemm
        .cases(&dev, Suite::Full)
        .iter()
        .map(|c| c.id.full())
        .collect();
    assert!(!ids.iter().any(|id| id.contains("/blas_")), "{ids:?}");
    // Counting mode's backend: where a BLAS is installed its GEMM runs with one thread.
    let Peer::Cpu(on) = (&cpu as &dyn Backend).peer() else {
        panic!("the CPU backend is the CPU peer")
    };
    match on.blas_gemm(GemmShape::square(16), DType::F64) {
        Ok(mut workload) => {
            workload.verify().unwrap();
            let notes = workload.notes();
            if notes["blas"].get("threads").is_some() {
                assert_eq!(notes["threads"], 1, "{notes:?}");
            }
        }
        Err(e) => assert!(e.is_skip() && e.to_string().contains("no CPU BLAS"), "{e}"),
    }
}

#[test]
fn the_cpu_is_a_peer_of_every_family_trait() {
    let cpu = CpuBackend::open_single_threaded();
    let backend: &dyn Backend = &cpu;
    let Peer::Cpu(cpu) = backend.peer() else {
        panic!("the CPU backend is the CPU peer")
    };
    assert_eq!(cpu.allocators(), vec![BackendKind::Cpu.id()]);
    assert!(cpu.transfers(Suite::Full).is_empty());
    let transfer = cpu.transfer(TransferKind::ALL[0], 1 << 20);
    assert!(transfer.err().is_some_and(|e| e.is_skip()));
}
