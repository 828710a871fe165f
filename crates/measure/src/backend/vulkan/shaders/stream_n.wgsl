// STREAM kernels without a scalar (copy, add, and the read's per-workgroup sums), over f64
// arrays, grid-stride: the host dispatches as many workgroups of 256 as it likes. The
// arguments are the shared GPU workloads' (`backend/gpu/stream.rs`): buffers in order as
// bindings 0.., the element count in the immediates (push constants). Semantics as in
// `backend/gpu/kernels.rs`.

struct Count { n: u32, n_hi: u32 }
var<immediate> p: Count;

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
