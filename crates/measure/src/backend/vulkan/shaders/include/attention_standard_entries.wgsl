// The entry points of `attention_standard.wgsl` for one element type: `batched_gemm_<dt>`
// and `attn_softmax_<dt>`, the names the backend launches (`bf` true for bf16).

@compute @workgroup_size(16, 16)
fn batched_gemm_$dt(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {
    gemm(l, w, $bf);
}

@compute @workgroup_size(256)
fn attn_softmax_$dt(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) w: vec3<u32>) {
    softmax(lane, w, $bf);
}
