// The f16 and bf16 tensor ops: the f32 ones' semantics (`tensor_elementwise.wgsl`,
// `tensor_rows.wgsl`) on 16-bit storage, arithmetic in f32, as the CUDA kernels do.
//
// The buffers are u32 words, two elements each, element 2w in the low half of word w
// (the shared workload's little-endian f16/bf16 arrays; the backend pads every buffer to
// whole words). f16 converts with unpack2x16float / pack2x16float, so no shaderFloat16 is
// needed; bf16 is the high half of an f32, stored rounded to nearest even (NaN kept).
// Every thread owns whole words, so no two threads write one word:
// - elementwise ops walk the ⌈n/2⌉ words grid-stride (the half past an odd n is padding);
// - row ops take one 256-thread workgroup per row of `cols` elements, which must be even
//   (the host refuses an odd row length: a word would then hold two rows);
// - `sum` writes one element per row, and rows share words, so it sets its half of the
//   word with two atomics that leave the other half alone.

struct Count { n: u32, n_hi: u32 }
var<immediate> p: Count;

@group(0) @binding(0) var<storage, read_write> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<storage, read_write> z: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

// #include half_words

fn words() -> u32 {
    return p.n / 2u + (p.n & 1u);
}

fn binary(gid: u32, stride: u32, bf: bool, multiply: bool) {
    for (var w = gid; w < words(); w += stride) {
        let a = unpack(x[w], bf);
        let b = unpack(y[w], bf);
        z[w] = pack(select(a + b, a * b, multiply), bf);
    }
}

fn gelu(a: vec2<f32>) -> vec2<f32> {
    let u = 0.7978845608 * (a + 0.044715 * a * a * a);
    return a / (1.0 + exp(-2.0 * u));
}

fn unary(gid: u32, stride: u32, bf: bool, is_gelu: bool) {
    for (var w = gid; w < words(); w += stride) {
        let a = unpack(x[w], bf);
        out[w] = pack(select(max(a, vec2<f32>(0.0)), gelu(a), is_gelu), bf);
    }
}

@compute @workgroup_size(256)
fn add_f16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    binary(gid.x, groups.x * 256u, false, false);
}

@compute @workgroup_size(256)
fn add_bf16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    binary(gid.x, groups.x * 256u, true, false);
}

@compute @workgroup_size(256)
fn mul_f16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    binary(gid.x, groups.x * 256u, false, true);
}

@compute @workgroup_size(256)
fn mul_bf16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    binary(gid.x, groups.x * 256u, true, true);
}

@compute @workgroup_size(256)
fn relu_f16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    unary(gid.x, groups.x * 256u, false, false);
}

@compute @workgroup_size(256)
fn relu_bf16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    unary(gid.x, groups.x * 256u, true, false);
}

@compute @workgroup_size(256)
fn gelu_f16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    unary(gid.x, groups.x * 256u, false, true);
}

@compute @workgroup_size(256)
fn gelu_bf16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    unary(gid.x, groups.x * 256u, true, true);
}

// Row ops: `cols` (even) in the immediates, and `eps` for layer norm.
struct Cols { cols: i32 }
var<immediate> rp: Cols;
struct ColsEps { cols: i32, eps: f32 }
var<immediate> np: ColsEps;

@group(0) @binding(1) var<storage, read_write> sums: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> gamma: array<u32>;
@group(0) @binding(2) var<storage, read_write> beta: array<u32>;
@group(0) @binding(3) var<storage, read_write> normed: array<u32>;

// #include workgroup_reductions

fn row_sum(lane: u32, row: u32, bf: bool) {
    let pairs = u32(rp.cols) / 2u;
    let base = row * pairs;
    var acc = 0.0;
    for (var w = lane; w < pairs; w += 256u) {
        let v = unpack(x[base + w], bf);
        acc += v.x + v.y;
    }
    let total = workgroup_sum(lane, acc);
    if (lane == 0u) {
        // This row's half of word row/2: cleared, then set; the other row's half untouched.
        let shift = 16u * (row & 1u);
        let bits = (pack(vec2<f32>(total, 0.0), bf) & 0xffffu) << shift;
        atomicAnd(&sums[row / 2u], ~(0xffffu << shift));
        atomicOr(&sums[row / 2u], bits);
    }
}

fn row_softmax(lane: u32, row: u32, bf: bool) {
    let pairs = u32(rp.cols) / 2u;
    let base = row * pairs;
    var m = -3.4028235e38;
    for (var w = lane; w < pairs; w += 256u) {
        let v = unpack(x[base + w], bf);
        m = max(m, max(v.x, v.y));
    }
    m = workgroup_max(lane, m);
    var s = 0.0;
    for (var w = lane; w < pairs; w += 256u) {
        let e = exp(unpack(x[base + w], bf) - m);
        s += e.x + e.y;
    }
    let inv = 1.0 / workgroup_sum(lane, s);
    for (var w = lane; w < pairs; w += 256u) {
        out[base + w] = pack(exp(unpack(x[base + w], bf) - m) * inv, bf);
    }
}

fn row_layer_norm(lane: u32, row: u32, bf: bool) {
    let cols = u32(np.cols);
    let pairs = cols / 2u;
    let base = row * pairs;
    var s = 0.0;
    for (var w = lane; w < pairs; w += 256u) {
        let v = unpack(x[base + w], bf);
        s += v.x + v.y;
    }
    let mean = workgroup_sum(lane, s) / f32(cols);
    var q = 0.0;
    for (var w = lane; w < pairs; w += 256u) {
        let d = unpack(x[base + w], bf) - mean;
        q += d.x * d.x + d.y * d.y;
    }
    let inv = inverseSqrt(workgroup_sum(lane, q) / f32(cols) + np.eps);
    for (var w = lane; w < pairs; w += 256u) {
        let v = (unpack(x[base + w], bf) - mean) * inv * unpack(gamma[w], bf) + unpack(beta[w], bf);
        normed[base + w] = pack(v, bf);
    }
}

@compute @workgroup_size(256)
fn sum_f16(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
    row_sum(lane, group.x, false);
}

@compute @workgroup_size(256)
fn sum_bf16(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
    row_sum(lane, group.x, true);
}

@compute @workgroup_size(256)
fn softmax_f16(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
    row_softmax(lane, group.x, false);
}

@compute @workgroup_size(256)
fn softmax_bf16(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
    row_softmax(lane, group.x, true);
}

@compute @workgroup_size(256)
fn layer_norm_f16(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
    row_layer_norm(lane, group.x, false);
}

@compute @workgroup_size(256)
fn layer_norm_bf16(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
    row_layer_norm(lane, group.x, true);
}
