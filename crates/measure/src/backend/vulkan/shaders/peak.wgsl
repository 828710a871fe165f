// vkpeak-style compute peak: each thread runs eight independent FMA chains (enough to hide
// the FMA latency), `rounds` times sixteen FMAs per chain, then writes their sum so the
// compiler cannot drop the work. FLOPs = threads · rounds · 8 chains · 16 · 2.
//
// `peak.spv` runs the chains in f32, `peak_f16.spv` in f16 (shaderFloat16), as two vec4 so
// that a GPU with packed half math can use it. Only the arithmetic is f16: the chains live
// in registers and their sum is written as f32, so no 16-bit storage is needed.
// #variant peak t=f32
// #variant peak_f16 t=f16
// #if t=f16
enable f16;
// #endif

struct Rounds { rounds: u32, unused: u32 }
var<immediate> p: Rounds;

@group(0) @binding(0) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn peak_fma_$t(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let index = gid.x + gid.y * groups.x * 256u;
    let seed = $t(f32(index & 1023u) * 1.0e-6);
    // Eight chains as two vec4 (no indexed arrays: a driver may keep those in memory).
    var x = vec4<$t>(seed, seed + 0.1, seed + 0.2, seed + 0.3);
    var y = vec4<$t>(seed + 0.4, seed + 0.5, seed + 0.6, seed + 0.7);
    let m = vec4<$t>(0.999);
    let add = vec4<$t>(1.0e-3);
    for (var r = 0u; r < p.rounds; r++) {
        for (var s = 0u; s < 16u; s++) {
            x = fma(x, m, add);
            y = fma(y, m, add);
        }
    }
    out[index] = dot(vec4<f32>(x) + vec4<f32>(y), vec4<f32>(1.0));
}
