// GEMM, C = A·B row-major (M×K times K×N), f32 accumulation, tiled through workgroup
// memory: a workgroup of 16×16 threads computes a 64×64 block of C, each thread 4×4
// entries, over K in steps of 16 staged in workgroup memory. M and N must be multiples of
// 64 and K of 16 (the host checks; other shapes are a recorded skip).
//
// The buffers are u32 words: f32 values as their bits, or (`p.f16` = 1) two f16 values
// per word along each row: f16 storage, unpacked to f32 with unpack2x16float, so it needs
// no shaderFloat16 arithmetic and runs on every Vulkan device. The branch on `p.f16` is
// uniform: every thread of every workgroup takes the same side. Each thread
// owns columns 2·lx, 2·lx+1, 32+2·lx, 32+2·lx+1 of the block, so an f16 pair of C is
// stored by one thread.

struct Dims { m: u32, n: u32, k: u32, f16: u32 }
var<immediate> p: Dims;

@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> c: array<u32>;

// A's tile k-major (ta[kk*64 + row]) and B's (tb[kk*64 + col]).
var<workgroup> ta: array<f32, 1024>;
var<workgroup> tb: array<f32, 1024>;

fn column(lx: u32, j: u32) -> u32 {
    return 2u * lx + (j & 1u) + 32u * (j >> 1u);
}

// acc += the staged 64×16 by 16×64 product, this thread's 4×4 part: rows ly + 16·i
// (acc[i]) by the columns of `column` (the lanes of each acc[i]), unrolled by hand so
// the accumulators stay in registers.
fn multiply_tile(lx: u32, ly: u32, acc: ptr<function, array<vec4<f32>, 4>>) {
    for (var kk = 0u; kk < 16u; kk++) {
        let base = kk * 64u;
        let av = vec4<f32>(ta[base + ly], ta[base + ly + 16u], ta[base + ly + 32u], ta[base + ly + 48u]);
        let col = base + 2u * lx;
        let bv = vec4<f32>(tb[col], tb[col + 1u], tb[col + 32u], tb[col + 33u]);
        (*acc)[0] = fma(vec4<f32>(av.x), bv, (*acc)[0]);
        (*acc)[1] = fma(vec4<f32>(av.y), bv, (*acc)[1]);
        (*acc)[2] = fma(vec4<f32>(av.z), bv, (*acc)[2]);
        (*acc)[3] = fma(vec4<f32>(av.w), bv, (*acc)[3]);
    }
}

// Stages A's 64×16 and B's 16×64 tiles at k0 as f32; thread t moves four of each.
fn load_tiles(t: u32, row0: u32, col0: u32, k0: u32) {
    if (p.f16 == 0u) {
        for (var r = 0u; r < 4u; r++) {
            let idx = t + r * 256u;
            let row = idx / 16u;
            let kk = idx % 16u;
            ta[kk * 64u + row] = bitcast<f32>(a[(row0 + row) * p.k + k0 + kk]);
            let kb = idx / 64u;
            let col = idx % 64u;
            tb[kb * 64u + col] = bitcast<f32>(b[(k0 + kb) * p.n + col0 + col]);
        }
        return;
    }
    for (var r = 0u; r < 2u; r++) {
        let idx = t + r * 256u;
        // A: 64 rows × 8 words (16 k); B: 16 k × 32 words (64 columns).
        let row = idx / 8u;
        let kp = idx % 8u;
        let av = unpack2x16float(a[(row0 + row) * (p.k / 2u) + k0 / 2u + kp]);
        ta[(2u * kp) * 64u + row] = av.x;
        ta[(2u * kp + 1u) * 64u + row] = av.y;
        let kb = idx / 32u;
        let cp = idx % 32u;
        let bv = unpack2x16float(b[(k0 + kb) * (p.n / 2u) + col0 / 2u + cp]);
        tb[kb * 64u + 2u * cp] = bv.x;
        tb[kb * 64u + 2u * cp + 1u] = bv.y;
    }
}

@compute @workgroup_size(16, 16)
fn gemm(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) g: vec3<u32>) {
    let row0 = g.y * 64u;
    let col0 = g.x * 64u;
    var acc: array<vec4<f32>, 4>;
    for (var k0 = 0u; k0 < p.k; k0 += 16u) {
        load_tiles(l.y * 16u + l.x, row0, col0, k0);
        workgroupBarrier();
        multiply_tile(l.x, l.y, &acc);
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i++) {
        let row = (row0 + l.y + 16u * i) * p.n + col0;
        if (p.f16 == 0u) {
            let v = bitcast<vec4<u32>>(acc[i]);
            c[row + column(l.x, 0u)] = v.x;
            c[row + column(l.x, 1u)] = v.y;
            c[row + column(l.x, 2u)] = v.z;
            c[row + column(l.x, 3u)] = v.w;
        } else {
            c[(row + column(l.x, 0u)) / 2u] = pack2x16float(acc[i].xy);
            c[(row + column(l.x, 2u)) / 2u] = pack2x16float(acc[i].zw);
        }
    }
}
