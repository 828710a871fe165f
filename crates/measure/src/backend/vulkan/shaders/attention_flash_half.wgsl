// Fused attention in f16 and bf16, the `flash_{f16,bf16}_{d64,d128}` kernels of
// `backend/gpu/attention.rs`: the f32 kernel's online softmax (`include/flash_body.wgsl`,
// described in `attention_flash.wgsl`) on 16-bit Q, K, V and O, arithmetic in f32 as in
// the CUDA kernels. The buffers are u32 words of two elements (`include/half_words.wgsl`),
// so no shaderFloat16 is needed.
//
// No two threads may write one word, so a lane owns its columns in pairs: its c-th is
// 2·lane + 16·⌊c/2⌋ + (c mod 2), and it writes both halves of each output word. D/8 is even
// for both head dimensions (8 and 16 columns a lane).

struct Params { seq: i32, scale: f32, causal: i32 }
var<immediate> p: Params;

@group(0) @binding(0) var<storage, read> q: array<u32>;
@group(0) @binding(1) var<storage, read> k: array<u32>;
@group(0) @binding(2) var<storage, read> v: array<u32>;
@group(0) @binding(3) var<storage, read_write> o: array<u32>;

// #include half_words

fn load_q(i: u32, bf: bool) -> f32 {
    return element(q[i / 2u], i, bf);
}

fn load_k(i: u32, bf: bool) -> f32 {
    return element(k[i / 2u], i, bf);
}

fn load_v(i: u32, bf: bool) -> f32 {
    return element(v[i / 2u], i, bf);
}

fn col(lane: u32, c: u32) -> u32 {
    return 2u * lane + 2u * LANES * (c / 2u) + (c & 1u);
}

fn store_o(start: u32, lane: u32, per_lane: u32, values: array<f32, MAX_PER_LANE>, bf: bool) {
    var out = values;
    for (var c = 0u; c < per_lane; c += 2u) {
        o[(start + col(lane, c)) / 2u] = pack(vec2<f32>(out[c], out[c + 1u]), bf);
    }
}

// #include flash_body

@compute @workgroup_size(128)
fn flash_f16_d64(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) group: vec3<u32>) {
    flash(64u, false, t, group);
}

@compute @workgroup_size(128)
fn flash_f16_d128(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) group: vec3<u32>) {
    flash(128u, false, t, group);
}

@compute @workgroup_size(128)
fn flash_bf16_d64(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) group: vec3<u32>) {
    flash(64u, true, t, group);
}

@compute @workgroup_size(128)
fn flash_bf16_d128(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) group: vec3<u32>) {
    flash(128u, true, t, group);
}
