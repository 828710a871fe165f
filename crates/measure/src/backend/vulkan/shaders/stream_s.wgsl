// STREAM kernels with an f64 scalar (scale, triad, the write and the fills), over f64
// arrays, grid-stride, arguments as the shared GPU workloads pass them
// (`backend/gpu/stream.rs`): buffers as bindings 0.., then the scalar and the count in the
// immediates (push constants), in that order.

struct ScalarCount { s: f64, n: u32, n_hi: u32 }
var<immediate> p: ScalarCount;

@group(0) @binding(0) var<storage, read_write> b0: array<f64>;
@group(0) @binding(1) var<storage, read_write> b1: array<f64>;
@group(0) @binding(2) var<storage, read_write> b2: array<f64>;

// a = v (binding a)
@compute @workgroup_size(256)
fn stream_fill(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = gid.x; i < p.n; i += stride) {
        b0[i] = p.s;
    }
}

// The write kernel of the sweep: a = v, as stream_fill (a separate id in the timings).
@compute @workgroup_size(256)
fn stream_write(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = gid.x; i < p.n; i += stride) {
        b0[i] = p.s;
    }
}

// a *= s (binding a)
@compute @workgroup_size(256)
fn stream_scale_in_place(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = gid.x; i < p.n; i += stride) {
        b0[i] = b0[i] * p.s;
    }
}

// b = s * c (bindings b, c)
@compute @workgroup_size(256)
fn stream_scale(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = gid.x; i < p.n; i += stride) {
        b0[i] = p.s * b1[i];
    }
}

// a = b + s * c (bindings a, b, c)
@compute @workgroup_size(256)
fn stream_triad(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = gid.x; i < p.n; i += stride) {
        b0[i] = b1[i] + p.s * b2[i];
    }
}
