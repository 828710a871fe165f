// The tensor ops, in the shared workloads' argument order (`backend/gpu/tensor_ops.rs`) with
// the semantics of `backend/gpu/kernels.rs`. `tensor_elementwise.spv` holds the f32
// elementwise ops, `tensor_rows.spv` the f32 row ops, `tensor_half.spv` both in f16 and bf16
// (`include/tensor_entries.wgsl` names every entry point):
// #variant tensor_elementwise word=f32 words=f32_words elementwise=yes rows=no
// #variant tensor_rows word=f32 words=f32_words elementwise=no rows=yes
// #variant tensor_half word=u32 words=half_words elementwise=yes rows=yes
//
// - elementwise: `add` and `mul` z = x op y (bindings x, y, z), `relu` and `gelu` z = f(x)
//   (bindings x, out), grid-stride over the words of `n` elements; the element count is in
//   the immediates as two u32 words (low, high; the host refuses a count past 2^32). `gelu`
//   is the tanh form, written as x / (1 + exp(-2u)), which stays finite where tanh's
//   exponentials would overflow.
// - rows: one workgroup of 256 per row of `cols` elements (workgroup `r` is row r),
//   reductions through workgroup memory: `sum` writes one value per row, `softmax` the row's
//   softmax with the row maximum subtracted first (bindings x, out; `cols` in the
//   immediates), `layer_norm` (x − mean) / √(var + eps) · g + b with mean and variance in
//   two passes (bindings x, g, b, normed; `cols` and `eps` in the immediates).
// Each entry point uses one binding set and one immediates block of those declared here.
//
// In 16-bit storage the buffers are u32 words, two elements each (`include/half_words.wgsl`;
// the backend pads every buffer to whole words), arithmetic in f32 as the CUDA kernels do,
// so no shaderFloat16 is needed. Every thread owns whole words, so no two threads write one:
// the half word past an odd n is padding; a row's length must be even (the host refuses an
// odd one: a word would then hold two rows); and `sum`, whose rows share words, sets its
// half of the word with two atomics that leave the other half alone.

struct Count { n: u32, n_hi: u32 }
var<immediate> p: Count;

@group(0) @binding(0) var<storage, read_write> x: array<$word>;
@group(0) @binding(1) var<storage, read_write> y: array<$word>;
@group(0) @binding(2) var<storage, read_write> z: array<$word>;
@group(0) @binding(1) var<storage, read_write> out: array<$word>;

// #include $words

// #if elementwise=yes
// The words that hold the n elements.
fn words() -> u32 {
    return p.n / PER_WORD + min(p.n % PER_WORD, 1u);
}

fn binary(gid: u32, stride: u32, bf: bool, multiply: bool) {
    for (var w = gid; w < words(); w += stride) {
        let a = unpack(x[w], bf);
        let b = unpack(y[w], bf);
        z[w] = pack(select(a + b, a * b, multiply), bf);
    }
}

fn gelu(a: Lanes) -> Lanes {
    let u = 0.7978845608 * (a + 0.044715 * a * a * a);
    return a / (1.0 + exp(-2.0 * u));
}

fn unary(gid: u32, stride: u32, bf: bool, is_gelu: bool) {
    for (var w = gid; w < words(); w += stride) {
        let a = unpack(x[w], bf);
        out[w] = pack(select(max(a, Lanes(0.0)), gelu(a), is_gelu), bf);
    }
}
// #endif

// #if rows=yes
struct Cols { cols: i32 }
var<immediate> rp: Cols;
struct ColsEps { cols: i32, eps: f32 }
var<immediate> np: ColsEps;

@group(0) @binding(1) var<storage, read_write> gamma: array<$word>;
@group(0) @binding(2) var<storage, read_write> beta: array<$word>;
@group(0) @binding(3) var<storage, read_write> normed: array<$word>;

// #include workgroup_reductions

fn row_sum(lane: u32, row: u32, bf: bool) {
    let row_words = u32(rp.cols) / PER_WORD;
    let base = row * row_words;
    var acc = 0.0;
    for (var w = lane; w < row_words; w += 256u) {
        acc += total(unpack(x[base + w], bf));
    }
    let sum = workgroup_sum(lane, acc);
    if (lane == 0u) {
        store_sum(row, sum, bf);
    }
}

// #if word=f32
fn store_sum(row: u32, sum: f32, bf: bool) {
    out[row] = sum;
}
// #else
@group(0) @binding(1) var<storage, read_write> sums: array<atomic<u32>>;

fn store_sum(row: u32, sum: f32, bf: bool) {
    // This row's half of word row/2: cleared, then set; the other row's half untouched.
    let shift = 16u * (row & 1u);
    let bits = (pack(vec2<f32>(sum, 0.0), bf) & 0xffffu) << shift;
    atomicAnd(&sums[row / 2u], ~(0xffffu << shift));
    atomicOr(&sums[row / 2u], bits);
}
// #endif

fn row_softmax(lane: u32, row: u32, bf: bool) {
    let row_words = u32(rp.cols) / PER_WORD;
    let base = row * row_words;
    var m = -3.4028235e38;
    for (var w = lane; w < row_words; w += 256u) {
        m = max(m, largest(unpack(x[base + w], bf)));
    }
    m = workgroup_max(lane, m);
    var s = 0.0;
    for (var w = lane; w < row_words; w += 256u) {
        s += total(exp(unpack(x[base + w], bf) - m));
    }
    let inv = 1.0 / workgroup_sum(lane, s);
    for (var w = lane; w < row_words; w += 256u) {
        out[base + w] = pack(exp(unpack(x[base + w], bf) - m) * inv, bf);
    }
}

fn row_layer_norm(lane: u32, row: u32, bf: bool) {
    let cols = u32(np.cols);
    let row_words = cols / PER_WORD;
    let base = row * row_words;
    var s = 0.0;
    for (var w = lane; w < row_words; w += 256u) {
        s += total(unpack(x[base + w], bf));
    }
    let mean = workgroup_sum(lane, s) / f32(cols);
    var q = 0.0;
    for (var w = lane; w < row_words; w += 256u) {
        let d = unpack(x[base + w], bf) - mean;
        q += total(d * d);
    }
    let inv = inverseSqrt(workgroup_sum(lane, q) / f32(cols) + np.eps);
    for (var w = lane; w < row_words; w += 256u) {
        let g = unpack(gamma[w], bf);
        normed[base + w] = pack((unpack(x[base + w], bf) - mean) * inv * g + unpack(beta[w], bf), bf);
    }
}
// #endif

// #if word=f32
// #include tensor_entries dt=f32 bf=false
// #else
// #include tensor_entries dt=f16 bf=false
// #include tensor_entries dt=bf16 bf=true
// #endif
