//! Every GPU kernel stackbench writes, executed on the CPU through the kernel emulator
//! (crates/measure/src/backend/gpu/emulator) and checked by its workload's own `verify()` against the CPU
//! reference: the STREAM kernels, the elementwise ops, the block reductions (sum, softmax,
//! layer norm), the standard attention's masked softmax and the flash kernels' online
//! softmax (SIMT, and on tensor cores through a shuffle-built m16n8k16 of the same fragment
//! contract), in f32, f16 and bf16, at shapes that leave partial blocks, warps and tiles.
//!
//! Each runs twice, with the block's threads scheduled in thread order and in reverse, so
//! a read of shared memory that a barrier does not order shows up.
//!
//! The second half proves these checks can fail: the same workloads on deliberately broken
//! kernel source must report a wrong result (or a rejected launch), never pass.

use stackbench::backend::TimedWorkload;
use stackbench::backend::gpu::emulator::{EmulatedDevice, ThreadOrder};
use stackbench::backend::gpu::kernels::BODY;
use stackbench::backend::gpu::stream::GpuStreamKernel;
use stackbench::backend::gpu::{Arg, GpuDevice, Grid, attention, tensor_ops};
use stackbench::backend::{BackendError, BackendKind};
use stackbench::workload::attention::{AttentionKernel, AttentionShape};
use stackbench::workload::tensor_ops::{DTYPES, TensorOp, TensorShape};
use stackbench::workload::{DType, StreamKernel};
use std::sync::OnceLock;

/// One compiled module per thread order for the whole file: compiling takes seconds.
fn device(order: ThreadOrder) -> &'static EmulatedDevice {
    static DEVICES: [OnceLock<EmulatedDevice>; 2] = [OnceLock::new(), OnceLock::new()];
    DEVICES[order as usize].get_or_init(|| match EmulatedDevice::open(order) {
        Ok(dev) => dev,
        // A C++ compiler is part of the test machine's set-up (gcc builds the C parts of
        // the dependencies): its absence is an error here, not a reason to pass.
        Err(e) => panic!("the kernel emulator could not be built: {e}"),
    })
}

fn verify(what: &str, workload: Result<Box<dyn TimedWorkload + '_>, BackendError>) {
    verify_notes(what, workload);
}

/// Verifies and returns the notes the check left.
fn verify_notes(
    what: &str,
    workload: Result<Box<dyn TimedWorkload + '_>, BackendError>,
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut workload = workload.unwrap_or_else(|e| panic!("{what}: could not open: {e}"));
    if let Err(e) = workload.verify() {
        panic!("{what}: {e}");
    }
    workload.notes()
}

/// As [`verify`], for a workload with a float64 reference: the GPU path's notes must carry
/// its accuracy set, over every element of these small outputs.
fn verify_accuracy(
    what: &str,
    workload: Result<Box<dyn TimedWorkload + '_>, BackendError>,
    elements: usize,
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let notes = verify_notes(what, workload);
    let accuracy: stackbench::workload::Accuracy = notes
        .get("accuracy")
        .and_then(|n| serde_json::from_value(n.clone()).ok())
        .unwrap_or_else(|| panic!("{what}: no accuracy set in the notes: {notes:?}"));
    assert_eq!(accuracy.elements as usize, elements, "{what}: {accuracy:?}");
    assert!(
        !accuracy.sliced && accuracy.worst_bound_ratio <= 1.0,
        "{what}: {accuracy:?}"
    );
    notes
}

/// One element; a length the remainder loop covers alone; and one long enough for the
/// four-step unrolled loop (the emulated grid is 64 blocks of 256 threads) plus a remainder
/// and the odd tail.
const STREAM_LENGTHS: [usize; 3] = [1, 40_001, 300_001];

#[test]
fn stream_kernels_match_stream_checks() {
    for order in ThreadOrder::BOTH {
        for &n in &STREAM_LENGTHS {
            for kernel in StreamKernel::ALL {
                let workload = GpuStreamKernel::new(device(order), kernel, n)
                    .map(|w| Box::new(w) as Box<dyn TimedWorkload>);
                verify(&format!("stream {kernel:?} n={n} {order:?}"), workload);
            }
        }
    }
}

/// Rows shorter than a warp, not a multiple of the block, and longer than one block pass;
/// then rows the 16-byte paths take in every precision (whole vectors): one that leaves
/// most threads without a vector, and one with two vectors a thread in f16/bf16.
const TENSOR_SHAPES: [(usize, usize); 5] = [(3, 7), (2, 300), (4, 1031), (3, 520), (2, 4096)];

#[test]
fn tensor_ops_match_their_references_in_every_precision() {
    for order in ThreadOrder::BOTH {
        for &(rows, cols) in &TENSOR_SHAPES {
            for &dtype in DTYPES {
                for op in TensorOp::ALL {
                    let shape = TensorShape::new(rows, cols);
                    verify_accuracy(
                        &format!("{op:?} {dtype:?} {rows}x{cols} {order:?}"),
                        tensor_ops::open(device(order), op, dtype, shape),
                        op.output_len(shape),
                    );
                }
            }
        }
    }
}

/// Sequence lengths that end mid query block (16) and mid key tile (32), and one shorter
/// than a tile, so masked lanes, skipped tiles and partial blocks all run.
const SEQ_LENS: [usize; 2] = [13, 50];

#[test]
fn attention_kernels_match_the_reference() {
    let cases = SEQ_LENS.iter().flat_map(|&seq| {
        [64, 128].into_iter().flat_map(move |d| {
            [false, true].map(|causal| AttentionShape::new(1, 2, seq, d, causal))
        })
    });
    for shape in cases {
        for order in ThreadOrder::BOTH {
            for dtype in [DType::F32, DType::F16, DType::Bf16] {
                for kernel in AttentionKernel::ALL {
                    verify_accuracy(
                        &format!("{kernel:?} {dtype:?} {shape:?} {order:?}"),
                        attention::open(device(order), kernel, shape, dtype),
                        shape.elements(),
                    );
                }
            }
        }
    }
}

/// Two query blocks and two key tiles of the tensor-core kernel (64 each), the second of
/// both partial: the diagonal tile, the partial tile and the online softmax's rescaling
/// between tiles all run.
const TC_SEQ: usize = 80;

/// What f16 and bf16 flash run on NVIDIA: the tensor-core kernel, here through the
/// shuffle-built m16n8k16 of the same fragment contract.
#[test]
fn tensor_core_flash_matches_the_reference_across_partial_tiles() {
    for d in [64, 128] {
        for causal in [false, true] {
            let shape = AttentionShape::new(1, 1, TC_SEQ, d, causal);
            for order in ThreadOrder::BOTH {
                for dtype in [DType::F16, DType::Bf16] {
                    let what = format!("flash {dtype:?} {shape:?} {order:?}");
                    let notes = verify_accuracy(
                        &what,
                        attention::open(device(order), AttentionKernel::Flash, shape, dtype),
                        shape.elements(),
                    );
                    let implementation = notes["implementation"].as_str().unwrap_or_default();
                    assert!(
                        implementation.contains("tensor cores (mma.sync m16n8k16"),
                        "{what}: {implementation}"
                    );
                }
            }
        }
    }
}

/// AMD has no `mma.sync`: there f16 and bf16 flash stay on the SIMT kernel, and say so.
#[test]
fn on_rocm_flash_runs_the_simt_kernel_in_every_precision() {
    let dev = EmulatedDevice::open(ThreadOrder::Forward)
        .unwrap_or_else(|e| panic!("the kernel emulator could not be built: {e}"))
        .posing_as(BackendKind::Rocm);
    for d in [64, 128] {
        let shape = AttentionShape::new(1, 2, 50, d, true);
        for dtype in [DType::F32, DType::F16, DType::Bf16] {
            let what = format!("rocm flash {dtype:?} {shape:?}");
            let notes = verify_accuracy(
                &what,
                attention::open(&dev, AttentionKernel::Flash, shape, dtype),
                shape.elements(),
            );
            let implementation = notes["implementation"].as_str().unwrap_or_default();
            assert!(
                implementation.contains("SIMT") && !implementation.contains("tensor"),
                "{what}: {implementation}"
            );
        }
    }
}

fn broken(from: &str, to: &str, order: ThreadOrder) -> EmulatedDevice {
    assert!(
        BODY.contains(from),
        "the mutation target {from:?} is no longer in the source"
    );
    EmulatedDevice::with_body(&BODY.replacen(from, to, 1), order)
        .unwrap_or_else(|e| panic!("broken source did not compile: {e}"))
}

/// Attention with `from` replaced by `to` in the kernel source must fail its check.
fn assert_broken_attention_fails(
    what: &str,
    (from, to): (&str, &str),
    shape: AttentionShape,
    kernel: AttentionKernel,
    dtype: DType,
) {
    let dev = broken(from, to, ThreadOrder::Forward);
    let mut w = attention::open(&dev, kernel, shape, dtype).unwrap();
    assert_mismatch(what, w.verify());
}

fn assert_mismatch(what: &str, result: Result<(), BackendError>) {
    match result {
        Err(BackendError::Mismatch { .. }) => {}
        Err(other) => panic!("{what}: expected a wrong-result failure, got {other}"),
        Ok(()) => panic!("{what}: a broken kernel passed its check"),
    }
}

#[test]
fn a_warp_reduction_that_skips_lanes_fails_the_sum_and_softmax_checks() {
    // Starting the butterfly at 8 instead of 16 sums only half of each warp.
    let dev = broken(
        "__device__ __forceinline__ float warp_sum(float v) {\n    for (int o = 16;",
        "__device__ __forceinline__ float warp_sum(float v) {\n    for (int o = 8;",
        ThreadOrder::Forward,
    );
    for op in [TensorOp::Sum, TensorOp::Softmax, TensorOp::LayerNorm] {
        let mut w = tensor_ops::open(&dev, op, DType::F32, TensorShape::new(2, 300)).unwrap();
        assert_mismatch(&format!("{op:?}"), w.verify());
    }
}

#[test]
fn an_online_softmax_without_its_rescaling_fails_the_attention_check() {
    // Forgetting to rescale the running sum when the max grows is the classic flash bug.
    assert_broken_attention_fails(
        "flash without rescaling",
        (
            "l[rr] = l[rr] * correction + warp_sum(p);",
            "l[rr] = l[rr] + warp_sum(p);",
        ),
        AttentionShape::new(1, 2, 50, 64, false),
        AttentionKernel::Flash,
        DType::F32,
    );
}

#[test]
fn a_tensor_core_fragment_read_from_the_wrong_columns_fails_the_attention_check() {
    // K's B fragment: b[0] holds keys' columns 2t, 2t+1 of the 16-wide step, b[1] columns
    // 2t+8, 2t+9. Swapping them still multiplies every value, but by the wrong Q column.
    assert_broken_attention_fails(
        "flash_tc with swapped K fragment",
        (
            "const unsigned b[2] = {load_word(key), load_word(key + 8)};",
            "const unsigned b[2] = {load_word(key + 8), load_word(key)};",
        ),
        AttentionShape::new(1, 1, TC_SEQ, 64, false),
        AttentionKernel::Flash,
        DType::F16,
    );
}

#[test]
fn a_tensor_core_online_softmax_without_its_rescaling_fails_the_attention_check() {
    assert_broken_attention_fails(
        "flash_tc without rescaling",
        ("l[h] = l[h] * correction + sum;", "l[h] = l[h] + sum;"),
        AttentionShape::new(1, 1, TC_SEQ, 64, true),
        AttentionKernel::Flash,
        DType::Bf16,
    );
}

#[test]
fn a_causal_mask_off_by_one_fails_the_standard_attention_check() {
    // Row 0 then has no keys at all: its softmax divides by zero.
    assert_broken_attention_fails(
        "causal mask off by one",
        (
            "const int keys = causal ? i + 1 : s;",
            "const int keys = causal ? i : s;",
        ),
        AttentionShape::new(1, 2, 13, 64, true),
        AttentionKernel::Standard,
        DType::F32,
    );
}

#[test]
fn a_stream_tail_that_is_not_written_fails_the_stream_check() {
    let dev = broken("TAIL(a[i] = b[i] + s * c[i], n)", "", ThreadOrder::Forward);
    let mut w = GpuStreamKernel::new(&dev, StreamKernel::Triad, 41).unwrap();
    assert_mismatch("triad without its tail", w.verify());
}

#[test]
fn a_missing_barrier_before_reading_other_warps_partial_sums_is_caught() {
    // Warp 0 reads every warp's partial sum; without the barrier it reads them before the
    // other warps wrote them. Under one of the two schedules that is a wrong sum.
    let racy = "if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;\n    __syncthreads();";
    let caught = ThreadOrder::BOTH.iter().any(|&order| {
        let dev = broken(
            racy,
            "if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;",
            order,
        );
        let mut w =
            tensor_ops::open(&dev, TensorOp::Sum, DType::F32, TensorShape::new(2, 300)).unwrap();
        matches!(w.verify(), Err(BackendError::Mismatch { .. }))
    });
    assert!(
        caught,
        "a block reduction without its barrier passed under both schedules"
    );
}

#[test]
fn a_barrier_that_only_half_a_warp_reaches_fails_the_launch() {
    // A __syncthreads inside a branch taken by half of warp 0: its other half goes on to a
    // shuffle that needs the whole warp. On a GPU that hangs or corrupts; here it is a
    // failed launch that names the kernel and the block. (Threads that have exited count
    // as arrived, as on the hardware, so only a real deadlock is reported.)
    let dev = broken(
        "acc = block_sum(acc, scratch); \\\n    if (threadIdx.x == 0) z[blockIdx.x]",
        "if (threadIdx.x < 16) __syncthreads(); acc = block_sum(acc, scratch); \\\n    if (threadIdx.x == 0) z[blockIdx.x]",
        ThreadOrder::Forward,
    );
    let mut w = tensor_ops::open(&dev, TensorOp::Sum, DType::F32, TensorShape::new(1, 64)).unwrap();
    let text = w.verify().unwrap_err().to_string();
    assert!(
        text.contains("sum_f32: block (0, 0, 0): threads wait at different barriers"),
        "{text}"
    );
}

#[test]
fn launches_whose_arguments_do_not_match_the_kernel_are_rejected() {
    let dev = device(ThreadOrder::Forward);
    let grid = Grid {
        blocks: (1, 1, 1),
        threads: 32,
    };
    let buffer = dev.alloc_zeroed(64).unwrap();
    // stream_fill(double*, double, u64): one argument short, then a wrong kind.
    let short = dev.launch("stream_fill", grid, &[Arg::Ptr(buffer.ptr), Arg::F64(1.0)]);
    let text = short.unwrap_err().to_string();
    assert!(text.contains("stream_fill takes (pdu)"), "{text}");
    let wrong = dev.launch(
        "stream_fill",
        grid,
        &[Arg::Ptr(buffer.ptr), Arg::F32(1.0), Arg::U64(8)],
    );
    assert!(wrong.unwrap_err().to_string().contains("passed (pfu)"));
    let unknown = dev.launch("stream_fil", grid, &[]).unwrap_err().to_string();
    assert!(unknown.contains("no kernel named stream_fil"), "{unknown}");
}

#[test]
fn a_kernel_name_that_is_not_in_the_source_does_not_compile() {
    // The launch table names every kernel kernels.rs lists; renaming one in the source
    // without the list (or the other way round) breaks the build of the module.
    let renamed = BODY.replacen("void stream_copy(", "void stream_kopy(", 1);
    let err = EmulatedDevice::with_body(&renamed, ThreadOrder::Forward)
        .err()
        .expect("a missing kernel compiled");
    assert!(err.to_string().contains("stream_copy"), "{err}");
}

#[test]
fn layer_norm_in_registers_is_the_path_that_runs_and_its_statistics_are_checked() {
    // The variance from the registers summing deviations instead of their squares (about
    // zero, so the rows are scaled by 1/sqrt(eps)): every vector-path row (all of them at
    // 2x4096, in each precision) is wrong, and the check must say so.
    let dev = broken(
        "{ const float d = x - mean; var += d * d; }",
        "{ const float d = x - mean; var += d; }",
        ThreadOrder::Reverse,
    );
    for dtype in [DType::F32, DType::F16, DType::Bf16] {
        let mut w =
            tensor_ops::open(&dev, TensorOp::LayerNorm, dtype, TensorShape::new(2, 4096)).unwrap();
        assert_mismatch(&format!("layer_norm {dtype:?}"), w.verify());
    }
    // A row that is not whole vectors keeps the scalar path, which the mutation leaves alone.
    let mut w = tensor_ops::open(
        &dev,
        TensorOp::LayerNorm,
        DType::Bf16,
        TensorShape::new(2, 300),
    )
    .unwrap();
    w.verify().expect("the scalar path is untouched");
}

#[test]
fn a_copy_whose_unrolled_steps_overlap_fails_the_stream_check() {
    // The third of four unrolled stores written to the second's place: every element the
    // unrolled loop owns at i + 2·stride is never written.
    let dev = broken(
        "store2(c2 + i + 2 * st, x2);",
        "store2(c2 + i + st, x2);",
        ThreadOrder::Forward,
    );
    let n = STREAM_LENGTHS[2];
    let mut w = GpuStreamKernel::new(&dev, StreamKernel::Copy, n).unwrap();
    assert_mismatch("copy", w.verify());
}
