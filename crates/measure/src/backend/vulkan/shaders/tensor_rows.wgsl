// The f32 row tensor ops: one workgroup of 256 per row of `cols` elements (workgroup `r` is
// row r), reductions through workgroup memory. Semantics as in `backend/gpu/kernels.rs`:
// `sum_f32` writes one value per row, `softmax_f32` the row's softmax with the row maximum
// subtracted first (bindings x, z; `cols` in the immediates), `layer_norm_f32`
// (x − mean) / √(var + eps) · g + b with mean and variance in two passes (bindings x, g,
// b, z; `cols` and `eps` in the immediates). Each entry point uses one binding set and one
// immediates block of those declared here.

struct Cols { cols: i32 }
var<immediate> p: Cols;

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> z: array<f32>;

struct ColsEps { cols: i32, eps: f32 }
var<immediate> pn: ColsEps;

@group(0) @binding(1) var<storage, read_write> gamma: array<f32>;
@group(0) @binding(2) var<storage, read_write> beta: array<f32>;
@group(0) @binding(3) var<storage, read_write> normed: array<f32>;

// #include workgroup_reductions

@compute @workgroup_size(256)
fn sum_f32(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
    let cols = u32(p.cols);
    let base = group.x * cols;
    var acc = 0.0;
    for (var c = lane; c < cols; c += 256u) {
        acc += x[base + c];
    }
    let total = workgroup_sum(lane, acc);
    if (lane == 0u) {
        z[group.x] = total;
    }
}

@compute @workgroup_size(256)
fn softmax_f32(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
    let cols = u32(p.cols);
    let base = group.x * cols;
    var m = -3.4028235e38;
    for (var c = lane; c < cols; c += 256u) {
        m = max(m, x[base + c]);
    }
    m = workgroup_max(lane, m);
    var s = 0.0;
    for (var c = lane; c < cols; c += 256u) {
        s += exp(x[base + c] - m);
    }
    let inv = 1.0 / workgroup_sum(lane, s);
    for (var c = lane; c < cols; c += 256u) {
        z[base + c] = exp(x[base + c] - m) * inv;
    }
}

@compute @workgroup_size(256)
fn layer_norm_f32(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
    let cols = u32(pn.cols);
    let base = group.x * cols;
    var s = 0.0;
    for (var c = lane; c < cols; c += 256u) {
        s += x[base + c];
    }
    let mean = workgroup_sum(lane, s) / f32(cols);
    var v = 0.0;
    for (var c = lane; c < cols; c += 256u) {
        let d = x[base + c] - mean;
        v += d * d;
    }
    let inv = inverseSqrt(workgroup_sum(lane, v) / f32(cols) + pn.eps);
    for (var c = lane; c < cols; c += 256u) {
        normed[base + c] = (x[base + c] - mean) * inv * gamma[c] + beta[c];
    }
}
