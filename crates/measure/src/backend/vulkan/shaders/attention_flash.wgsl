// Fused attention in f32 with the online softmax (FlashAttention's recurrence), the
// `flash_f32_d64` and `flash_f32_d128` kernels of `backend/gpu/attention.rs`: O = softmax(
// scale·Q·Kᵀ [causal mask]) · V per head, the scores never written to memory.
//
// Layout as the shared workload stores it: Q, K, V and O are (batch·heads) × seq × D,
// row-major. The launch is the CUDA kernel's grid: workgroup (x, y) takes query rows
// 16·x … 16·x + 15 of head y, with 128 threads: 8 lanes per row. Lane `l` of a row owns the
// columns l, l + 8, l + 16 … of its query and output row (D/8 of them, in registers), so a
// row's loads are contiguous across its lanes. The body is `include/flash_body.wgsl`,
// shared with the f16 and bf16 kernels (`attention_flash_half.wgsl`).
//
// Keys and values go through workgroup memory 8 at a time. For each tile, every lane forms
// the partial dot products of its columns with the 8 keys; the 8 partials of a (row, key)
// are summed through workgroup memory; then each lane updates its row's running maximum m
// and sum l and rescales its part of the output: m' = max(m, s_j), o = o·e^(m − m') +
// Σ_j e^(s_j − m')·v_j, l = l·e^(m − m') + Σ_j e^(s_j − m'); at the end O = o / l. Causal:
// key j > query i is masked, and a workgroup stops at the tile past its last row.
// Workgroup memory: 12 KiB for D = 128 (Vulkan guarantees 16 KiB).

struct Params { seq: i32, scale: f32, causal: i32 }
var<immediate> p: Params;

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> o: array<f32>;

fn load_q(i: u32, bf: bool) -> f32 {
    return q[i];
}

fn load_k(i: u32, bf: bool) -> f32 {
    return k[i];
}

fn load_v(i: u32, bf: bool) -> f32 {
    return v[i];
}

fn col(lane: u32, c: u32) -> u32 {
    return lane + LANES * c;
}

fn store_o(start: u32, lane: u32, per_lane: u32, values: array<f32, MAX_PER_LANE>, bf: bool) {
    var out = values;
    for (var c = 0u; c < per_lane; c++) {
        o[start + col(lane, c)] = out[c];
    }
}

// #include flash_body

@compute @workgroup_size(128)
fn flash_f32_d64(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) group: vec3<u32>) {
    flash(64u, false, t, group);
}

@compute @workgroup_size(128)
fn flash_f32_d128(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) group: vec3<u32>) {
    flash(128u, false, t, group);
}
