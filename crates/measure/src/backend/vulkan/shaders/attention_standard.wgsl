// The standard (unfused) attention path's kernels in f32: what `backend/gpu/attention.rs`
// runs between and around its two batched GEMMs, and the GEMMs themselves, which CUDA and
// ROCm take from their BLAS and Vulkan has none of.
//
// `batched_gemm_f32`: BLAS's strided-batched GEMM with beta = 0, column-major as cuBLAS
// reads it: C_b (m×n, leading dimension ldc) = alpha · op(A_b) · B_b, op(A) = A (m×k, lda)
// or Aᵀ (A stored k×m, lda), B k×n (ldb), matrix b at offsets b·stride_{a,b,c}. A
// workgroup of 16×16 computes a 16×16 tile of C (lane x down a column, so stores are
// contiguous), over k in steps of 16 staged in workgroup memory; any m, n and k (the edges
// load zeros and store nothing). Grid (⌈m/16⌉, ⌈n/16⌉, batch).
//
// `attn_softmax_f32`: the row softmax of the scores in place, one workgroup of 256 per row
// of `s` (row r is query r mod s of its head), keys past the query masked to zero under
// the causal mask, the row maximum subtracted first: the CUDA kernel's semantics.

struct Gemm {
    m: u32, n: u32, k: u32,
    lda: u32, ldb: u32, ldc: u32,
    stride_a: u32, stride_b: u32, stride_c: u32,
    alpha: f32, transpose_a: u32,
}
var<immediate> g: Gemm;

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;

var<workgroup> ta: array<f32, 256>;
var<workgroup> tb: array<f32, 256>;

// op(A)[i, kk] of matrix `batch`, zero outside it.
fn load_a(batch: u32, i: u32, kk: u32) -> f32 {
    if (i >= g.m || kk >= g.k) {
        return 0.0;
    }
    let base = batch * g.stride_a;
    if (g.transpose_a != 0u) {
        return a[base + kk + i * g.lda];
    }
    return a[base + i + kk * g.lda];
}

@compute @workgroup_size(16, 16)
fn batched_gemm_f32(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {
    let i = w.x * 16u + l.x;
    let j = w.y * 16u + l.y;
    let batch = w.z;
    var acc = 0.0;
    for (var k0 = 0u; k0 < g.k; k0 += 16u) {
        // ta[kk][row]: op(A)[i0 + row, k0 + kk]; tb[col][kk]: B[k0 + kk, j0 + col].
        ta[l.y * 16u + l.x] = load_a(batch, w.x * 16u + l.x, k0 + l.y);
        var bv = 0.0;
        if (k0 + l.x < g.k && j < g.n) {
            bv = b[batch * g.stride_b + k0 + l.x + j * g.ldb];
        }
        tb[l.y * 16u + l.x] = bv;
        workgroupBarrier();
        for (var kk = 0u; kk < 16u; kk++) {
            acc = fma(ta[kk * 16u + l.x], tb[l.y * 16u + kk], acc);
        }
        workgroupBarrier();
    }
    if (i < g.m && j < g.n) {
        c[batch * g.stride_c + i + j * g.ldc] = g.alpha * acc;
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
