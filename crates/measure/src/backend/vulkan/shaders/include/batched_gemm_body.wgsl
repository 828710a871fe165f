// The tile loop of the strided-batched GEMMs (`attention_standard.wgsl` in f32,
// `attention_standard_half.wgsl` in f16 and bf16), column-major as cuBLAS reads it: C_b
// (m×n, ldc) = alpha · op(A_b) · B_b with op(A) = A (m×k, lda) or Aᵀ (A stored k×m, lda),
// B k×n (ldb), matrix b at offsets b·stride_{a,b,c}. The including module declares the
// buffers and reads element `idx` of A and B with `elem_a(idx, bf)` and `elem_b(idx, bf)`,
// and stores what `gemm_tile` returns. A workgroup of 16×16 computes a 16×16 tile of C,
// lane x down a column, over k in steps of 16 staged in workgroup memory; the edges load
// zeros. Grid (⌈m/16⌉, ⌈n/16⌉, batch).

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
