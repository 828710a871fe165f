// The f32 elementwise tensor ops, grid-stride over `n` elements, in the shared workloads'
// argument order (`backend/gpu/tensor_ops.rs`): `add_f32` and `mul_f32` z = x op y
// (bindings x, y, z), `relu_f32` and `gelu_f32` z = f(x) (bindings x, out). The element
// count is in the immediates as two u32 words (low, high; the host refuses a count past
// 2^32). Semantics as in `backend/gpu/kernels.rs`; `gelu_f32` is the tanh form, written as
// x / (1 + exp(-2u)), which stays finite where tanh's exponentials would overflow. Each
// entry point uses one of the binding sets declared here.

struct Count { n: u32, n_hi: u32 }
var<immediate> p: Count;

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> z: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn add_f32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = gid.x; i < p.n; i += stride) {
        z[i] = x[i] + y[i];
    }
}

@compute @workgroup_size(256)
fn mul_f32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = gid.x; i < p.n; i += stride) {
        z[i] = x[i] * y[i];
    }
}

@compute @workgroup_size(256)
fn relu_f32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = gid.x; i < p.n; i += stride) {
        out[i] = max(x[i], 0.0);
    }
}

@compute @workgroup_size(256)
fn gelu_f32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = gid.x; i < p.n; i += stride) {
        let a = x[i];
        let u = 0.7978845608 * (a + 0.044715 * a * a * a);
        out[i] = a / (1.0 + exp(-2.0 * u));
    }
}
