// The standard (unfused) attention path's kernels in f32: what `backend/gpu/attention.rs`
// runs between and around its two batched GEMMs, and the GEMMs themselves, which CUDA and
// ROCm take from their BLAS and Vulkan has none of.
//
// `batched_gemm_f32`: BLAS's strided-batched GEMM with beta = 0 (`include/
// batched_gemm_body.wgsl`, shared with the f16 and bf16 kernels): any m, n and k, the edges
// storing nothing; lane x runs down a column of C, so stores are contiguous.
//
// `attn_softmax_f32`: the row softmax of the scores in place, one workgroup of 256 per row
// of `s` (row r is query r mod s of its head), keys past the query masked to zero under
// the causal mask, the row maximum subtracted first: the CUDA kernel's semantics.

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;

fn elem_a(idx: u32, bf: bool) -> f32 {
    return a[idx];
}

fn elem_b(idx: u32, bf: bool) -> f32 {
    return b[idx];
}

// #include batched_gemm_body

@compute @workgroup_size(16, 16)
fn batched_gemm_f32(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {
    let value = gemm_tile(l, w, false);
    let i = w.x * 16u + l.x;
    let j = w.y * 16u + l.y;
    if (i < g.m && j < g.n) {
        c[w.z * g.stride_c + i + j * g.ldc] = value;
    }
}

struct Rows { s: i32, causal: i32 }
var<immediate> rp: Rows;

@group(0) @binding(0) var<storage, read_write> scores: array<f32>;

// #include workgroup_reductions

@compute @workgroup_size(256)
fn attn_softmax_f32(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) w: vec3<u32>) {
    let s = u32(rp.s);
    let base = w.x * s;
    let i = w.x % s;
    var keys = s;
    if (rp.causal != 0) {
        keys = i + 1u;
    }
    var m = -3.0e38;
    for (var j = lane; j < keys; j += 256u) {
        m = max(m, scores[base + j]);
    }
    m = workgroup_max(lane, m);
    var t = 0.0;
    for (var j = lane; j < keys; j += 256u) {
        t += exp(scores[base + j] - m);
    }
    t = workgroup_sum(lane, t);
    let inv = 1.0 / t;
    for (var j = lane; j < s; j += 256u) {
        var out = 0.0;
        if (j < keys) {
            out = exp(scores[base + j] - m) * inv;
        }
        scores[base + j] = out;
    }
}
