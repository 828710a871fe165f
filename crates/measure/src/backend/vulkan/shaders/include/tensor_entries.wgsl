// The entry points of `tensor_ops.wgsl` for one element type: `// #include tensor_entries
// dt=<f32|f16|bf16> bf=<false|true>` names them `<op>_<dt>`, the names the backend
// launches, once per element type a module holds.

// #if elementwise=yes
@compute @workgroup_size(256)
fn add_$dt(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    binary(gid.x, groups.x * 256u, $bf, false);
}

@compute @workgroup_size(256)
fn mul_$dt(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    binary(gid.x, groups.x * 256u, $bf, true);
}

@compute @workgroup_size(256)
fn relu_$dt(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    unary(gid.x, groups.x * 256u, $bf, false);
}

@compute @workgroup_size(256)
fn gelu_$dt(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    unary(gid.x, groups.x * 256u, $bf, true);
}
// #endif

// #if rows=yes
@compute @workgroup_size(256)
fn sum_$dt(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
    row_sum(lane, group.x, $bf);
}

@compute @workgroup_size(256)
fn softmax_$dt(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
    row_softmax(lane, group.x, $bf);
}

@compute @workgroup_size(256)
fn layer_norm_$dt(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
    row_layer_norm(lane, group.x, $bf);
}
// #endif
