// Fused attention in f32 with the online softmax (FlashAttention's recurrence), the
// `flash_f32_d64` and `flash_f32_d128` kernels of `backend/gpu/attention.rs`: O = softmax(
// scale·Q·Kᵀ [causal mask]) · V per head, the scores never written to memory.
//
// Layout as the shared workload stores it: Q, K, V and O are (batch·heads) × seq × D,
// row-major. The launch is the CUDA kernel's grid: workgroup (x, y) takes query rows
// 16·x … 16·x + 15 of head y, with 128 threads: 8 lanes per row. Lane `l` of a row owns the
// columns l, l + 8, l + 16 … of its query and output row (D/8 of them, in registers), so a
// row's loads are contiguous across its lanes.
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

const ROWS: u32 = 16u;
const LANES: u32 = 8u;
const KEYS: u32 = 8u;
// D/8 for the largest head dimension, 128.
const MAX_PER_LANE: u32 = 16u;

var<workgroup> kt: array<f32, 1024>;
var<workgroup> vt: array<f32, 1024>;
// The partial dot products: [row][key][lane].
var<workgroup> part: array<f32, 1024>;

fn flash(d: u32, t: u32, group: vec3<u32>) {
    let seq = u32(p.seq);
    let row = t / LANES;
    let lane = t % LANES;
    let qi = group.x * ROWS + row;
    let valid = qi < seq;
    let head = group.y * seq * d;
    let per_lane = d / LANES;

    var qv: array<f32, MAX_PER_LANE>;
    var acc: array<f32, MAX_PER_LANE>;
    for (var c = 0u; c < per_lane; c++) {
        qv[c] = 0.0;
        acc[c] = 0.0;
        if (valid) {
            qv[c] = q[head + qi * d + lane + LANES * c] * p.scale;
        }
    }
    var m = -3.0e38;
    var l = 0.0;

    // Keys past the workgroup's last row are all masked under the causal mask.
    var end = seq;
    if (p.causal != 0) {
        end = min(seq, group.x * ROWS + ROWS);
    }
    for (var k0 = 0u; k0 < end; k0 += KEYS) {
        // Stage keys k0 … k0 + 7: 8·d values each of K and V over 128 threads.
        for (var idx = t; idx < KEYS * d; idx += ROWS * LANES) {
            let j = k0 + idx / d;
            var kv = 0.0;
            var vv = 0.0;
            if (j < seq) {
                kv = k[head + k0 * d + idx];
                vv = v[head + k0 * d + idx];
            }
            kt[idx] = kv;
            vt[idx] = vv;
        }
        workgroupBarrier();
        for (var j = 0u; j < KEYS; j++) {
            var s = 0.0;
            for (var c = 0u; c < per_lane; c++) {
                s = fma(qv[c], kt[j * d + lane + LANES * c], s);
            }
            part[(row * KEYS + j) * LANES + lane] = s;
        }
        workgroupBarrier();
        var scores: array<f32, KEYS>;
        var tile_max = -3.0e38;
        for (var j = 0u; j < KEYS; j++) {
            var s = 0.0;
            for (var x = 0u; x < LANES; x++) {
                s += part[(row * KEYS + j) * LANES + x];
            }
            let kj = k0 + j;
            let masked = kj >= seq || (p.causal != 0 && kj > qi);
            scores[j] = select(s, -3.0e38, masked);
            if (!masked) {
                tile_max = max(tile_max, s);
            }
        }
        if (tile_max > -3.0e38) {
            let m_new = max(m, tile_max);
            let rescale = exp(m - m_new);
            var weights: array<f32, KEYS>;
            var tile_sum = 0.0;
            for (var j = 0u; j < KEYS; j++) {
                let w = select(exp(scores[j] - m_new), 0.0, scores[j] <= -3.0e38);
                weights[j] = w;
                tile_sum += w;
            }
            l = l * rescale + tile_sum;
            for (var c = 0u; c < per_lane; c++) {
                var sum = acc[c] * rescale;
                for (var j = 0u; j < KEYS; j++) {
                    sum = fma(weights[j], vt[j * d + lane + LANES * c], sum);
                }
                acc[c] = sum;
            }
            m = m_new;
        }
        // The next tile overwrites kt, vt and part.
        workgroupBarrier();
    }
    if (valid) {
        for (var c = 0u; c < per_lane; c++) {
            o[head + qi * d + lane + LANES * c] = acc[c] / l;
        }
    }
}

@compute @workgroup_size(128)
fn flash_f32_d64(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) group: vec3<u32>) {
    flash(64u, t, group);
}

@compute @workgroup_size(128)
fn flash_f32_d128(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) group: vec3<u32>) {
    flash(128u, t, group);
}
