// The standard (unfused) attention path's kernels: what `backend/gpu/attention.rs` runs
// between and around its two batched GEMMs, and the GEMMs themselves, which CUDA and ROCm
// take from their BLAS and Vulkan has none of. `attention_standard.spv` holds the f32
// kernels, `attention_standard_half.spv` the f16 and bf16 ones: the same semantics on 16-bit
// storage, arithmetic in f32, as cuBLAS's GemmStridedBatchedEx with f32 compute and the CUDA
// softmax kernel do. Their buffers are u32 words of two elements (`include/half_words.wgsl`);
// no shaderFloat16 is needed.
// #variant attention_standard word=f32 words=f32_words
// #variant attention_standard_half word=u32 words=half_words
//
// `batched_gemm_{f32,f16,bf16}`: BLAS's strided-batched GEMM with beta = 0, column-major as
// cuBLAS reads it: C_b (m×n, ldc) = alpha · op(A_b) · B_b with op(A) = A (m×k, lda) or Aᵀ
// (A stored k×m, lda), B k×n (ldb), matrix b at offsets b·stride_{a,b,c}; any m, n and k,
// the edges storing nothing. A workgroup of 16×16 computes a 16×16 tile of C, lane x down a
// column (so stores are contiguous), over k in steps of 16 staged in workgroup memory; the
// edges load zeros. Grid (⌈m/16⌉, ⌈n/16⌉, batch).
//
// `attn_softmax_{f32,f16,bf16}`: the row softmax of the scores in place, one workgroup of
// 256 per row of `s` (row r is query r mod s of its head), keys past the query masked to
// zero under the causal mask, the row maximum subtracted first: the CUDA kernel's semantics.
//
// In 16-bit storage no two threads may write one word:
// - the GEMM stages its 16×16 tile of C in workgroup memory and writes it as words, two
//   rows of a column each. The host asks for an even m, leading dimension and stride of C,
//   so a word never holds two columns or two matrices.
// - the softmax writes its row a word at a time; the row length s must be even (the host
//   refuses an odd one), so a word never holds two rows.

@group(0) @binding(0) var<storage, read> a: array<$word>;
@group(0) @binding(1) var<storage, read> b: array<$word>;
@group(0) @binding(2) var<storage, read_write> c: array<$word>;

// #include $words

fn elem_a(idx: u32, bf: bool) -> f32 {
    return element(a[word_of(idx)], idx, bf);
}

fn elem_b(idx: u32, bf: bool) -> f32 {
    return element(b[word_of(idx)], idx, bf);
}

struct Gemm {
    m: u32, n: u32, k: u32,
    lda: u32, ldb: u32, ldc: u32,
    stride_a: u32, stride_b: u32, stride_c: u32,
    alpha: f32, transpose_a: u32,
}
var<immediate> g: Gemm;

var<workgroup> ta: array<f32, 256>;
var<workgroup> tb: array<f32, 256>;

// op(A)[i, kk] of matrix `batch`, zero outside it.
fn load_a(batch: u32, i: u32, kk: u32, bf: bool) -> f32 {
    if (i >= g.m || kk >= g.k) {
        return 0.0;
    }
    if (g.transpose_a != 0u) {
        return elem_a(batch * g.stride_a + kk + i * g.lda, bf);
    }
    return elem_a(batch * g.stride_a + i + kk * g.lda, bf);
}

// alpha · (op(A)·B)[w.x·16 + l.x, w.y·16 + l.y] of matrix w.z (0 outside C). Every thread
// of the workgroup calls it: it holds barriers.
fn gemm_tile(l: vec3<u32>, w: vec3<u32>, bf: bool) -> f32 {
    let j = w.y * 16u + l.y;
    let batch = w.z;
    var acc = 0.0;
    for (var k0 = 0u; k0 < g.k; k0 += 16u) {
        // ta[kk][row]: op(A)[i0 + row, k0 + kk]; tb[col][kk]: B[k0 + kk, j0 + col].
        ta[l.y * 16u + l.x] = load_a(batch, w.x * 16u + l.x, k0 + l.y, bf);
        var bv = 0.0;
        if (k0 + l.x < g.k && j < g.n) {
            bv = elem_b(batch * g.stride_b + k0 + l.x + j * g.ldb, bf);
        }
        tb[l.y * 16u + l.x] = bv;
        workgroupBarrier();
        for (var kk = 0u; kk < 16u; kk++) {
            acc = fma(ta[kk * 16u + l.x], tb[l.y * 16u + kk], acc);
        }
        workgroupBarrier();
    }
    return g.alpha * acc;
}

// #if word=f32
fn gemm(l: vec3<u32>, w: vec3<u32>, bf: bool) {
    let value = gemm_tile(l, w, bf);
    let i = w.x * 16u + l.x;
    let j = w.y * 16u + l.y;
    if (i < g.m && j < g.n) {
        c[w.z * g.stride_c + i + j * g.ldc] = value;
    }
}
// #else
// The finished tile, [col][row], written out as words.
var<workgroup> tc: array<f32, 256>;

fn gemm(l: vec3<u32>, w: vec3<u32>, bf: bool) {
    tc[l.y * 16u + l.x] = gemm_tile(l, w, bf);
    workgroupBarrier();
    // Lanes 0..7 of each column write its 16 rows as 8 words (m is even: a word's two rows
    // are both in C or both past it).
    let i = w.x * 16u + 2u * l.x;
    let j = w.y * 16u + l.y;
    if (l.x < 8u && i < g.m && j < g.n) {
        let pair = vec2<f32>(tc[l.y * 16u + 2u * l.x], tc[l.y * 16u + 2u * l.x + 1u]);
        c[(w.z * g.stride_c + i + j * g.ldc) / 2u] = pack(pair, bf);
    }
}
// #endif

struct Rows { s: i32, causal: i32 }
var<immediate> rp: Rows;

@group(0) @binding(0) var<storage, read_write> scores: array<$word>;

// #include workgroup_reductions

fn score(idx: u32, bf: bool) -> f32 {
    return element(scores[word_of(idx)], idx, bf);
}

fn softmax(lane: u32, w: vec3<u32>, bf: bool) {
    let s = u32(rp.s);
    let base = w.x * s;
    let i = w.x % s;
    var keys = s;
    if (rp.causal != 0) {
        keys = i + 1u;
    }
    var m = -3.0e38;
    for (var j = lane; j < keys; j += 256u) {
        m = max(m, score(base + j, bf));
    }
    m = workgroup_max(lane, m);
    var t = 0.0;
    for (var j = lane; j < keys; j += 256u) {
        t += exp(score(base + j, bf) - m);
    }
    t = workgroup_sum(lane, t);
    // Every read of the row is behind workgroup_sum's barrier: the row can be rewritten.
    store_row(lane, base, s, keys, m, 1.0 / t, bf);
}

// #if word=f32
fn store_row(lane: u32, base: u32, s: u32, keys: u32, m: f32, inv: f32, bf: bool) {
    for (var j = lane; j < s; j += 256u) {
        var out = 0.0;
        if (j < keys) {
            out = exp(scores[base + j] - m) * inv;
        }
        scores[base + j] = out;
    }
}
// #else
fn store_row(lane: u32, base: u32, s: u32, keys: u32, m: f32, inv: f32, bf: bool) {
    for (var j = 2u * lane; j < s; j += 512u) {
        let pair = unpack(scores[(base + j) / 2u], bf);
        var out = vec2<f32>(0.0);
        if (j < keys) {
            out.x = exp(pair.x - m) * inv;
        }
        if (j + 1u < keys) {
            out.y = exp(pair.y - m) * inv;
        }
        scores[(base + j) / 2u] = pack(out, bf);
    }
}
// #endif

// #if word=f32
// #include attention_standard_entries dt=f32 bf=false
// #else
// #include attention_standard_entries dt=f16 bf=false
// #include attention_standard_entries dt=bf16 bf=true
// #endif
