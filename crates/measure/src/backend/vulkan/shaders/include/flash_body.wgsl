// The body of the fused attention kernels (`attention_flash.wgsl` in f32,
// `attention_flash_half.wgsl` in f16 and bf16): the including module declares the buffers,
// `Params` in `p`, and how elements are read and written:
// - `load_q`, `load_k`, `load_v(i, bf) -> f32`: element i of Q, K, V;
// - `col(lane, c)`: the column of the row that lane `lane` owns as its c-th;
// - `store_o(row_start, lane, per_lane, values, bf)`: the lane's D/8 output values.
// Arithmetic is f32 throughout, as in the CUDA kernels. The algorithm is described in
// `attention_flash.wgsl`.

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
