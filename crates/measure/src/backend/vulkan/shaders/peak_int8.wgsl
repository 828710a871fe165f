// vkpeak-style int8 peak: packed dot products of four signed bytes (dot4I8Packed, which naga
// writes as SPIR-V's OpSDot under VK_KHR_shader_integer_dot_product: one instruction, as
// DP4A is on NVIDIA and dot4 on AMD and Intel). Each step is four multiplies and four adds
// (the products' sum plus the chain's own value), counted as 8 integer operations. Eight
// independent chains per thread, each step depending on the last (no closed form for a
// compiler to fold); the chains' xor is written so that none can be dropped. The host
// replays thread 0's chains exactly. Ops = threads · rounds · 8 chains · 16 · 8.

struct Rounds { rounds: u32, unused: u32 }
var<immediate> p: Rounds;

@group(0) @binding(0) var<storage, read_write> out: array<u32>;

// Four signed bytes: -23, 39, -61, 91 (low byte first).
const WEIGHTS: u32 = 0x5bc327e9u;
// Seeds chain c of thread i at (8i + c) times the 32-bit golden ratio.
const GOLDEN: u32 = 0x9e3779b9u;

fn step(v: u32) -> u32 {
    return bitcast<u32>(dot4I8Packed(v, WEIGHTS) + bitcast<i32>(v));
}

@compute @workgroup_size(256)
fn peak_dot_i8(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let index = gid.x + gid.y * groups.x * 256u;
    let base = index * 8u;
    var c0 = (base + 0u) * GOLDEN;
    var c1 = (base + 1u) * GOLDEN;
    var c2 = (base + 2u) * GOLDEN;
    var c3 = (base + 3u) * GOLDEN;
    var c4 = (base + 4u) * GOLDEN;
    var c5 = (base + 5u) * GOLDEN;
    var c6 = (base + 6u) * GOLDEN;
    var c7 = (base + 7u) * GOLDEN;
    for (var r = 0u; r < p.rounds; r++) {
        for (var s = 0u; s < 16u; s++) {
            c0 = step(c0);
            c1 = step(c1);
            c2 = step(c2);
            c3 = step(c3);
            c4 = step(c4);
            c5 = step(c5);
            c6 = step(c6);
            c7 = step(c7);
        }
    }
    out[index] = c0 ^ c1 ^ c2 ^ c3 ^ c4 ^ c5 ^ c6 ^ c7;
}
