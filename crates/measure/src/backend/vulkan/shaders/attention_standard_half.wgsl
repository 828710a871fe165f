// The standard (unfused) attention path's kernels in f16 and bf16: the f32 module's
// semantics (`attention_standard.wgsl`) on 16-bit storage, arithmetic in f32, as cuBLAS's
// GemmStridedBatchedEx with f32 compute and the CUDA softmax kernel do. The buffers are u32
// words of two elements (`include/half_words.wgsl`); no shaderFloat16 is needed.
//
// No two threads may write one word:
// - `batched_gemm_{f16,bf16}` (the tile loop of `include/batched_gemm_body.wgsl`) stages
//   its 16×16 tile of C in workgroup memory and writes it as words, two rows of a column each. The host asks for an even m, leading dimension and
//   stride of C, so a word never holds two columns or two matrices.
// - `attn_softmax_{f16,bf16}` writes its row a word at a time; the row length s must be
//   even (the host refuses an odd one), so a word never holds two rows.

@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> c: array<u32>;

// #include half_words

fn elem_a(idx: u32, bf: bool) -> f32 {
    return element(a[idx / 2u], idx, bf);
}

fn elem_b(idx: u32, bf: bool) -> f32 {
    return element(b[idx / 2u], idx, bf);
}

// #include batched_gemm_body

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

@compute @workgroup_size(16, 16)
fn batched_gemm_f16(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {
    gemm(l, w, false);
}

@compute @workgroup_size(16, 16)
fn batched_gemm_bf16(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {
    gemm(l, w, true);
}

struct Rows { s: i32, causal: i32 }
var<immediate> rp: Rows;

@group(0) @binding(0) var<storage, read_write> scores: array<u32>;

// #include workgroup_reductions

fn score(idx: u32, bf: bool) -> f32 {
    return element(scores[idx / 2u], idx, bf);
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
    let inv = 1.0 / t;
    // Every read of the row is behind workgroup_sum's barrier: the words can be rewritten.
    for (var j = 2u * lane; j < s; j += 512u) {
        let word = scores[(base + j) / 2u];
        let pair = unpack(word, bf);
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

@compute @workgroup_size(256)
fn attn_softmax_f16(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) w: vec3<u32>) {
    softmax(lane, w, false);
}

@compute @workgroup_size(256)
fn attn_softmax_bf16(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) w: vec3<u32>) {
    softmax(lane, w, true);
}
