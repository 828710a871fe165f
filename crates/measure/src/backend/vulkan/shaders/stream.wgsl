// The STREAM kernels over f64 arrays, grid-stride: the host dispatches as many workgroups
// of 256 as it likes. The arguments are the shared GPU workloads' (`backend/gpu/stream.rs`):
// buffers in order as bindings 0.., then the scalar and the element count in the
// immediates (push constants); the kernels that take no scalar get a zero in its place
// from the host, so one layout serves all. Semantics as in `backend/gpu/kernels.rs`.

struct ScalarCount { s: f64, n: u32, n_hi: u32 }
var<immediate> p: ScalarCount;

@group(0) @binding(0) var<storage, read_write> b0: array<f64>;
@group(0) @binding(1) var<storage, read_write> b1: array<f64>;
@group(0) @binding(2) var<storage, read_write> b2: array<f64>;

// c = a (bindings a, c)
@compute @workgroup_size(256)
fn stream_copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = gid.x; i < p.n; i += stride) {
        b1[i] = b0[i];
    }
}

// c = a + b (bindings a, b, c)
@compute @workgroup_size(256)
fn stream_add(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = gid.x; i < p.n; i += stride) {
        b2[i] = b0[i] + b1[i];
    }
}

var<workgroup> sums: array<f64, 256>;

// partial[workgroup] = the sum of the elements this workgroup read (bindings a, partial)
@compute @workgroup_size(256)
fn stream_read(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let stride = groups.x * 256u;
    var sum = f64(0.0);
    for (var i = gid.x; i < p.n; i += stride) {
        sum += b0[i];
    }
    sums[lane] = sum;
    workgroupBarrier();
    for (var half = 128u; half > 0u; half >>= 1u) {
        if (lane < half) {
            sums[lane] += sums[lane + half];
        }
        workgroupBarrier();
    }
    if (lane == 0u) {
        b1[group.x] = sums[0];
    }
}

// a = v (binding a); also the sweep's write kernel (`stream_write`, the same entry point)
@compute @workgroup_size(256)
fn stream_fill(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
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
