// Fused attention with the online softmax (FlashAttention's recurrence), the
// `flash_{f32,f16,bf16}_{d64,d128}` kernels of `backend/gpu/attention.rs`: O = softmax(
// scale·Q·Kᵀ [causal mask]) · V per head, the scores never written to memory.
// `attention_flash.spv` holds the f32 kernels, `attention_flash_half.spv` the f16 and bf16
// ones, whose buffers are u32 words of two elements (`include/half_words.wgsl`), so no
// shaderFloat16 is needed; arithmetic is f32 in both, as in the CUDA kernels.
// #variant attention_flash word=f32 words=f32_words
// #variant attention_flash_half word=u32 words=half_words
//
// Layout as the shared workload stores it: Q, K, V and O are (batch·heads) × seq × D,
// row-major. The launch is the CUDA kernel's grid: workgroup (x, y) takes query rows
// 16·x … 16·x + 15 of head y, with 128 threads: 8 lanes per row. Lane `l` of a row owns D/8
// columns of its query and output row, in registers: in f32 the columns l, l + 8, l + 16 …,
// so a row's loads are contiguous across its lanes.
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

@group(0) @binding(0) var<storage, read> q: array<$word>;
@group(0) @binding(1) var<storage, read> k: array<$word>;
@group(0) @binding(2) var<storage, read> v: array<$word>;
@group(0) @binding(3) var<storage, read_write> o: array<$word>;

// #include $words

fn load_q(i: u32, bf: bool) -> f32 {
    return element(q[word_of(i)], i, bf);
}

fn load_k(i: u32, bf: bool) -> f32 {
    return element(k[word_of(i)], i, bf);
}

fn load_v(i: u32, bf: bool) -> f32 {
    return element(v[word_of(i)], i, bf);
}

// #if word=f32
fn col(lane: u32, c: u32) -> u32 {
    return lane + LANES * c;
}

fn store_o(start: u32, lane: u32, per_lane: u32, values: array<f32, MAX_PER_LANE>, bf: bool) {
    var out = values;
    for (var c = 0u; c < per_lane; c++) {
        o[start + col(lane, c)] = out[c];
    }
}
// #else
// No two threads may write one word, so a lane owns its columns in pairs: its c-th is
// 2·lane + 16·⌊c/2⌋ + (c mod 2), and it writes both halves of each output word. D/8 is even
// for both head dimensions (8 and 16 columns a lane).
fn col(lane: u32, c: u32) -> u32 {
    return 2u * lane + 2u * LANES * (c / 2u) + (c & 1u);
}

fn store_o(start: u32, lane: u32, per_lane: u32, values: array<f32, MAX_PER_LANE>, bf: bool) {
    var out = values;
    for (var c = 0u; c < per_lane; c += 2u) {
        o[(start + col(lane, c)) / 2u] = pack(vec2<f32>(out[c], out[c + 1u]), bf);
    }
}
// #endif

const ROWS: u32 = 16u;
const LANES: u32 = 8u;
const KEYS: u32 = 8u;
// D/8 for the largest head dimension, 128.
const MAX_PER_LANE: u32 = 16u;

var<workgroup> kt: array<f32, 1024>;
var<workgroup> vt: array<f32, 1024>;
// The partial dot products: [row][key][lane].
var<workgroup> part: array<f32, 1024>;

fn flash(d: u32, bf: bool, t: u32, group: vec3<u32>) {
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
            qv[c] = load_q(head + qi * d + col(lane, c), bf) * p.scale;
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
                kv = load_k(head + k0 * d + idx, bf);
                vv = load_v(head + k0 * d + idx, bf);
            }
            kt[idx] = kv;
            vt[idx] = vv;
        }
        workgroupBarrier();
        for (var j = 0u; j < KEYS; j++) {
            var s = 0.0;
            for (var c = 0u; c < per_lane; c++) {
                s = fma(qv[c], kt[j * d + col(lane, c)], s);
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
                    sum = fma(weights[j], vt[j * d + col(lane, c)], sum);
                }
                acc[c] = sum;
            }
            m = m_new;
        }
        // The next tile overwrites kt, vt and part.
        workgroupBarrier();
    }
    if (valid) {
        var row_out: array<f32, MAX_PER_LANE>;
        for (var c = 0u; c < per_lane; c++) {
            row_out[c] = acc[c] / l;
        }
        store_o(head + qi * d, lane, per_lane, row_out, bf);
    }
}

// #if word=f32
// #include flash_entry dt=f32 bf=false d=64
// #include flash_entry dt=f32 bf=false d=128
// #else
// #include flash_entry dt=f16 bf=false d=64
// #include flash_entry dt=f16 bf=false d=128
// #include flash_entry dt=bf16 bf=true d=64
// #include flash_entry dt=bf16 bf=true d=128
// #endif
