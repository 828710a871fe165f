// vkpeak-style f16 compute peak: the same chains as peak.wgsl in f16 arithmetic
// (shaderFloat16), as two vec4<f16> so that a GPU with packed half math can use it. Only the
// arithmetic is f16: the chains live in registers and their sum is written as f32, so no
// 16-bit storage is needed. FLOPs = threads · rounds · 8 chains · 16 · 2.
enable f16;

struct Rounds { rounds: u32, unused: u32 }
var<immediate> p: Rounds;

@group(0) @binding(0) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn peak_fma_f16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let index = gid.x + gid.y * groups.x * 256u;
    let seed = f16(f32(index & 1023u) * 1.0e-6);
    var x = vec4<f16>(seed, seed + 0.1h, seed + 0.2h, seed + 0.3h);
    var y = vec4<f16>(seed + 0.4h, seed + 0.5h, seed + 0.6h, seed + 0.7h);
    let m = vec4<f16>(0.999h);
    let add = vec4<f16>(1.0e-3h);
    for (var r = 0u; r < p.rounds; r++) {
        for (var s = 0u; s < 16u; s++) {
            x = fma(x, m, add);
            y = fma(y, m, add);
        }
    }
    out[index] = dot(vec4<f32>(x) + vec4<f32>(y), vec4<f32>(1.0));
}
