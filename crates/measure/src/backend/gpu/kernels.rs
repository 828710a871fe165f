//! The kernels stackbench writes itself (STREAM, tensor ops, attention), as one source for
//! both vendors: NVRTC compiles it for NVIDIA, hipRTC for AMD, each with a short prelude.
//!
//! The source includes no headers, so it compiles wherever the runtime compiler runs (pip
//! wheels ship NVRTC without the toolkit's include directory): f16 and bf16 are stored as
//! 16-bit integers and converted in the prelude (PTX `cvt` on NVIDIA, clang's `_Float16`
//! on AMD) or with bit operations (bf16, round-to-nearest-even); arithmetic is f32, as
//! PyTorch's kernels do. Warp-level code works on groups of 32 lanes: a CUDA warp, or half
//! of an AMD wavefront of 64 (shuffles take a width of 32 there), so it is correct on both.
//!
//! One exception to f32 arithmetic: the tensor-core attention kernels (`flash_tc_*`) multiply
//! 16-bit values with f32 accumulation through a warp-level m16n8k16 whose fragment contract
//! is written once: `CUDA_MMA` runs it on NVIDIA's tensor cores, [`MMA_BY_SHUFFLE`] computes
//! it lane by lane (the CPU emulator; on AMD only so that the source compiles).

use super::Grid;

/// Threads per block of the elementwise, stream and row kernels.
pub const BLOCK: u32 = 256;
/// Query rows per block and threads per block of the flash-attention kernel.
pub const FLASH_ROWS: u32 = 16;
pub const FLASH_THREADS: u32 = 128;
/// The same for the tensor-core flash kernel (`FLASH_TC_BQ` in the source): 4 warps of 16 rows.
pub const FLASH_TC_ROWS: u32 = 64;
pub const FLASH_TC_THREADS: u32 = 128;

/// Which runtime compiler the source is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Platform {
    Cuda,
    Hip,
}

const CUDA_PRELUDE: &str = r#"
/* A 16-byte-aligned pair of f64 (no vector-type headers needed), moved with one 128-bit
 * access: the compiler splits a struct copy into two 64-bit ones otherwise. The loads use
 * the read-only path: the STREAM kernels never write an array they read. */
struct alignas(16) D2 { double x, y; };
__device__ __forceinline__ D2 load2(const D2* p) {
    D2 v; asm("ld.global.nc.v2.f64 {%0, %1}, [%2];" : "=d"(v.x), "=d"(v.y) : "l"(p)); return v; }
__device__ __forceinline__ void store2(D2* p, D2 v) {
    asm volatile("st.global.v2.f64 [%0], {%1, %2};" :: "l"(p), "d"(v.x), "d"(v.y) : "memory"); }
/* Sixteen bytes of any element type (8 f16/bf16, 4 f32), for the row kernels' 128-bit
 * accesses; read-only loads take the non-coherent path as load2 does. */
struct alignas(16) V4 { unsigned u[4]; };
__device__ __forceinline__ V4 load16(const V4* p) {
    V4 v; asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.u[0]), "=r"(v.u[1]), "=r"(v.u[2]), "=r"(v.u[3]) : "l"(p)); return v; }
__device__ __forceinline__ void store16(V4* p, V4 v) {
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(v.u[0]), "r"(v.u[1]), "r"(v.u[2]), "r"(v.u[3]) : "memory"); }
#define SHFL_XOR(v, o) __shfl_xor_sync(0xffffffffu, (v), (o))
#define SHFL(v, l) __shfl_sync(0xffffffffu, (v), (l))
typedef unsigned short u16;
struct F16 {
    typedef u16 T;
    static __device__ __forceinline__ float load(u16 v) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v)); return f; }
    static __device__ __forceinline__ u16 store(float f) { u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
};
"#;

const HIP_PRELUDE: &str = r#"
/* A 16-byte-aligned pair of f64; AMD's compiler emits 128-bit accesses for it as is. */
struct alignas(16) D2 { double x, y; };
__device__ __forceinline__ D2 load2(const D2* p) { return *p; }
__device__ __forceinline__ void store2(D2* p, D2 v) { *p = v; }
/* Sixteen bytes of any element type, moved with one 128-bit access. */
struct alignas(16) V4 { unsigned u[4]; };
__device__ __forceinline__ V4 load16(const V4* p) { return *p; }
__device__ __forceinline__ void store16(V4* p, V4 v) { *p = v; }
#define SHFL_XOR(v, o) __shfl_xor((v), (o), 32)
#define SHFL(v, l) __shfl((v), (l), 32)
typedef unsigned short u16;
struct F16 {
    typedef u16 T;
    static __device__ __forceinline__ float load(u16 v) { return (float)__builtin_bit_cast(_Float16, v); }
    static __device__ __forceinline__ u16 store(float f) { return __builtin_bit_cast(u16, (_Float16)f); }
};
"#;

/// The m16n8k16 matrix multiply-accumulate on NVIDIA's tensor cores (sm_80 and newer), one
/// warp-wide `mma.sync` per call. [`MMA_BY_SHUFFLE`] computes the same thing, with the same
/// fragment contract, from shuffles.
const CUDA_MMA: &str = r#"
/* ---------------- tensor cores: c += A·B on a 16x16x8 tile, one warp ----------------
 * The fragment contract (PTX ISA, mma.m16n8k16 with 16-bit inputs and f32 accumulators),
 * g = lane / 4, t = lane % 4; a u32 holds two 16-bit values, the lower index in the low half:
 *   A 16x16, row-major: a[0] = A[g][2t, 2t+1],   a[1] = A[g+8][2t, 2t+1],
 *                       a[2] = A[g][2t+8, 2t+9], a[3] = A[g+8][2t+8, 2t+9];
 *   B 16x8 (k x n):     b[0] = B[2t, 2t+1][g],   b[1] = B[2t+8, 2t+9][g];
 *   C 16x8, f32:        c[0] = C[g][2t], c[1] = C[g][2t+1], c[2] = C[g+8][2t], c[3] = C[g+8][2t+1]. */
__device__ __forceinline__ void mma_m16n8k16_f16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
"#;

/// The m16n8k16 contract of `CUDA_MMA` without tensor cores: each lane gathers the rows
/// of A and the columns of B its four outputs need from the other lanes' fragments, by
/// shuffles, and computes them in f32. The kernel emulator runs the tensor-core kernels
/// through this, so their fragment indexing and online softmax are checked against the
/// float64 reference. The HIP source carries it only so that the one source compiles there:
/// AMD has no `mma.sync`, and `attention.rs` never launches a tensor-core kernel on ROCm.
pub const MMA_BY_SHUFFLE: &str = r#"
/* ---------------- m16n8k16 by shuffles: the tensor-core contract, computed lane by lane */
template <int BF16_INPUTS>
__device__ __forceinline__ float mma_unpack(unsigned v, int high) {
    const u16 h = (u16)(high ? v >> 16 : v & 0xffffu);
    return BF16_INPUTS ? __uint_as_float(((unsigned)h) << 16) : F16::load(h);
}
/* Not inlined: a kernel makes 128 of these calls per tile, each 32 shuffles; inlined and
 * unrolled, that makes AMD's compiler run for many minutes over code nothing launches. */
template <int BF16_INPUTS>
__device__ __attribute__((noinline)) void mma_by_shuffle(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    /* A's rows g and g+8, B's columns 2t and 2t+1: what this lane's c[0..3] need. */
    float row_g[16], row_g8[16], col_0[16], col_1[16];
    for (int q = 0; q < 4; ++q) {
        /* Lane 4g+q holds row g's and row g+8's columns 2q, 2q+1 and 2q+8, 2q+9. */
        const unsigned x0 = SHFL(a[0], 4 * g + q), x1 = SHFL(a[1], 4 * g + q);
        const unsigned x2 = SHFL(a[2], 4 * g + q), x3 = SHFL(a[3], 4 * g + q);
        for (int h = 0; h < 2; ++h) {
            row_g[2 * q + h] = mma_unpack<BF16_INPUTS>(x0, h);
            row_g8[2 * q + h] = mma_unpack<BF16_INPUTS>(x1, h);
            row_g[2 * q + 8 + h] = mma_unpack<BF16_INPUTS>(x2, h);
            row_g8[2 * q + 8 + h] = mma_unpack<BF16_INPUTS>(x3, h);
        }
        /* Lane 4n+q holds column n's rows 2q, 2q+1 and 2q+8, 2q+9. */
        for (int j = 0; j < 2; ++j) {
            const unsigned y0 = SHFL(b[0], 4 * (2 * t + j) + q), y1 = SHFL(b[1], 4 * (2 * t + j) + q);
            float* col = j ? col_1 : col_0;
            for (int h = 0; h < 2; ++h) {
                col[2 * q + h] = mma_unpack<BF16_INPUTS>(y0, h);
                col[2 * q + 8 + h] = mma_unpack<BF16_INPUTS>(y1, h);
            }
        }
    }
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    for (int kk = 0; kk < 16; ++kk) {
        d[0] += row_g[kk] * col_0[kk];
        d[1] += row_g[kk] * col_1[kk];
        d[2] += row_g8[kk] * col_0[kk];
        d[3] += row_g8[kk] * col_1[kk];
    }
    for (int e = 0; e < 4; ++e) c[e] += d[e];
}
__device__ __forceinline__ void mma_m16n8k16_f16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    mma_by_shuffle<0>(c, a, b);
}
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    mma_by_shuffle<1>(c, a, b);
}
"#;

/// The full source for `platform`.
pub fn source(platform: Platform) -> String {
    let (prelude, mma) = match platform {
        Platform::Cuda => (CUDA_PRELUDE, CUDA_MMA),
        Platform::Hip => (HIP_PRELUDE, MMA_BY_SHUFFLE),
    };
    format!("{prelude}{mma}{BODY}")
}

pub const BODY: &str = r#"
typedef unsigned char u8;
typedef unsigned long long u64;
/* No math.h under NVRTC without the toolkit headers: spell -inf as its bits. */
#define NEG_INF (__uint_as_float(0xff800000u))

struct F32 {
    typedef float T;
    static __device__ __forceinline__ float load(float v) { return v; }
    static __device__ __forceinline__ float store(float v) { return v; }
};
struct BF16 {
    typedef u16 T;
    static __device__ __forceinline__ float load(u16 v) { return __uint_as_float(((unsigned)v) << 16); }
    static __device__ __forceinline__ u16 store(float f) {
        unsigned u = __float_as_uint(f);
        if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40u);
        u += 0x7fffu + ((u >> 16) & 1u);
        return (u16)(u >> 16);
    }
};
/* F16 comes from the platform prelude. */

#define GRID_STRIDE(i, n) for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < (n); i += (u64)gridDim.x * blockDim.x)

/* ---------------- STREAM kernels on f64, 16-byte accesses (load2/store2 from the prelude) */

extern "C" __global__ void stream_fill(double* a, double v, u64 n) { GRID_STRIDE(i, n) a[i] = v; }

extern "C" __global__ void stream_scale_in_place(double* a, double s, u64 n) { GRID_STRIDE(i, n) a[i] *= s; }

#define PAIRS(n) ((n) / 2)
#define TAIL(stmt, n) if (blockIdx.x == 0 && threadIdx.x == 0 && ((n) & 1)) { u64 i = (n) - 1; stmt; }

/* Four independent 16-byte accesses in flight per thread, and each block's four on one
 * contiguous run of memory: a block owns chunks of 4·blockDim pairs (chunk b, then
 * b + gridDim, ...), thread t taking t, t + blockDim, t + 2·blockDim, t + 3·blockDim inside
 * it, so every warp access is still coalesced. With one access at a time a thread waits out
 * the full memory latency per 16 bytes; with a grid-stride step between the four, they
 * land megabytes apart. On an H200 the one-access copy ran at 94 % of torch's (whose
 * elementwise kernels unroll by four over a block's contiguous chunk the same way). */
template <class Four, class One>
__device__ __forceinline__ void chunked4(u64 n, Four four, One one) {
    const u64 chunk = 4 * (u64)blockDim.x;
    for (u64 base = blockIdx.x * chunk; base < n; base += (u64)gridDim.x * chunk) {
        if (base + chunk <= n) {
            four(base + threadIdx.x, (u64)blockDim.x);
        } else {
            for (u64 i = base + threadIdx.x; i < n; i += blockDim.x) one(i);
        }
    }
}

extern "C" __global__ void stream_copy(const double* __restrict__ a, double* __restrict__ c, u64 n) {
    const D2* a2 = (const D2*)a; D2* c2 = (D2*)c;
    chunked4(PAIRS(n), [&](u64 i, u64 st) {
        D2 x0 = load2(a2 + i), x1 = load2(a2 + i + st), x2 = load2(a2 + i + 2 * st), x3 = load2(a2 + i + 3 * st);
        store2(c2 + i, x0); store2(c2 + i + st, x1); store2(c2 + i + 2 * st, x2); store2(c2 + i + 3 * st, x3);
    }, [&](u64 i) { store2(c2 + i, load2(a2 + i)); });
    TAIL(c[i] = a[i], n)
}
extern "C" __global__ void stream_scale(double* __restrict__ b, const double* __restrict__ c, double s, u64 n) {
    const D2* c2 = (const D2*)c; D2* b2 = (D2*)b;
    chunked4(PAIRS(n), [&](u64 i, u64 st) {
        D2 x0 = load2(c2 + i), x1 = load2(c2 + i + st), x2 = load2(c2 + i + 2 * st), x3 = load2(c2 + i + 3 * st);
        store2(b2 + i, D2{s * x0.x, s * x0.y}); store2(b2 + i + st, D2{s * x1.x, s * x1.y});
        store2(b2 + i + 2 * st, D2{s * x2.x, s * x2.y}); store2(b2 + i + 3 * st, D2{s * x3.x, s * x3.y});
    }, [&](u64 i) { D2 v = load2(c2 + i); store2(b2 + i, D2{s * v.x, s * v.y}); });
    TAIL(b[i] = s * c[i], n)
}
extern "C" __global__ void stream_add(const double* __restrict__ a, const double* __restrict__ b, double* __restrict__ c, u64 n) {
    const D2* a2 = (const D2*)a; const D2* b2 = (const D2*)b; D2* c2 = (D2*)c;
    auto one = [&](u64 i) { D2 x = load2(a2 + i), y = load2(b2 + i); store2(c2 + i, D2{x.x + y.x, x.y + y.y}); };
    chunked4(PAIRS(n), [&](u64 i, u64 st) {
        D2 x0 = load2(a2 + i), y0 = load2(b2 + i), x1 = load2(a2 + i + st), y1 = load2(b2 + i + st);
        D2 x2 = load2(a2 + i + 2 * st), y2 = load2(b2 + i + 2 * st), x3 = load2(a2 + i + 3 * st), y3 = load2(b2 + i + 3 * st);
        store2(c2 + i, D2{x0.x + y0.x, x0.y + y0.y}); store2(c2 + i + st, D2{x1.x + y1.x, x1.y + y1.y});
        store2(c2 + i + 2 * st, D2{x2.x + y2.x, x2.y + y2.y}); store2(c2 + i + 3 * st, D2{x3.x + y3.x, x3.y + y3.y});
    }, one);
    TAIL(c[i] = a[i] + b[i], n)
}
extern "C" __global__ void stream_triad(double* __restrict__ a, const double* __restrict__ b, const double* __restrict__ c, double s, u64 n) {
    D2* a2 = (D2*)a; const D2* b2 = (const D2*)b; const D2* c2 = (const D2*)c;
    auto one = [&](u64 i) { D2 x = load2(b2 + i), y = load2(c2 + i); store2(a2 + i, D2{x.x + s * y.x, x.y + s * y.y}); };
    chunked4(PAIRS(n), [&](u64 i, u64 st) {
        D2 x0 = load2(b2 + i), y0 = load2(c2 + i), x1 = load2(b2 + i + st), y1 = load2(c2 + i + st);
        D2 x2 = load2(b2 + i + 2 * st), y2 = load2(c2 + i + 2 * st), x3 = load2(b2 + i + 3 * st), y3 = load2(c2 + i + 3 * st);
        store2(a2 + i, D2{x0.x + s * y0.x, x0.y + s * y0.y}); store2(a2 + i + st, D2{x1.x + s * y1.x, x1.y + s * y1.y});
        store2(a2 + i + 2 * st, D2{x2.x + s * y2.x, x2.y + s * y2.y}); store2(a2 + i + 3 * st, D2{x3.x + s * y3.x, x3.y + s * y3.y});
    }, one);
    TAIL(a[i] = b[i] + s * c[i], n)
}
extern "C" __global__ void stream_write(double* __restrict__ a, double v, u64 n) {
    D2* a2 = (D2*)a;
    chunked4(PAIRS(n), [&](u64 i, u64 st) {
        store2(a2 + i, D2{v, v}); store2(a2 + i + st, D2{v, v}); store2(a2 + i + 2 * st, D2{v, v}); store2(a2 + i + 3 * st, D2{v, v});
    }, [&](u64 i) { store2(a2 + i, D2{v, v}); });
    TAIL(a[i] = v, n)
}

__device__ __forceinline__ double warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) v += SHFL_XOR(v, o);
    return v;
}

/* Read: each block sums its share into partial[blockIdx.x] (so the loads are not dead). */
extern "C" __global__ void stream_read(const double* __restrict__ a, double* __restrict__ partial, u64 n) {
    __shared__ double warps[32];
    const D2* a2 = (const D2*)a;
    double sum = 0.0, sum1 = 0.0;
    chunked4(PAIRS(n), [&](u64 i, u64 st) {
        D2 x0 = load2(a2 + i), x1 = load2(a2 + i + st), x2 = load2(a2 + i + 2 * st), x3 = load2(a2 + i + 3 * st);
        sum += (x0.x + x0.y) + (x2.x + x2.y); sum1 += (x1.x + x1.y) + (x3.x + x3.y);
    }, [&](u64 i) { D2 v = load2(a2 + i); sum += v.x + v.y; });
    sum += sum1;
    TAIL(sum += a[i], n)
    sum = warp_sum_d(sum);
    if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x < 32) {
        double v = threadIdx.x < (blockDim.x >> 5) ? warps[threadIdx.x] : 0.0;
        v = warp_sum_d(v);
        if (threadIdx.x == 0) partial[blockIdx.x] = v;
    }
}

/* ---------------- block reductions for row kernels ---------------- */

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += SHFL_XOR(v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, SHFL_XOR(v, o));
    return v;
}
/* Every thread of the block gets the result. `scratch` holds 33 floats. */
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    v = warp_sum(v);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        float w = threadIdx.x < (blockDim.x >> 5) ? scratch[threadIdx.x] : 0.f;
        w = warp_sum(w);
        if (threadIdx.x == 0) scratch[32] = w;
    }
    __syncthreads();
    return scratch[32];
}
__device__ __forceinline__ float block_max(float v, float* scratch) {
    v = warp_max(v);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        float w = threadIdx.x < (blockDim.x >> 5) ? scratch[threadIdx.x] : NEG_INF;
        w = warp_max(w);
        if (threadIdx.x == 0) scratch[32] = w;
    }
    __syncthreads();
    return scratch[32];
}

/* ---------------- 128-bit row access (V4, load16/store16 from the prelude) ----------
 * Element k of a 16-byte vector of S::T: 16-bit types pack two per word, low half first
 * (little-endian, as memory holds them); f32 is one per word. The choice is by the size of
 * S::T, a constant, so each instantiation keeps one branch. */
template <class S>
__device__ __forceinline__ float vget(const V4& v, int k) {
    return sizeof(typename S::T) == 2
        ? S::load((typename S::T)((v.u[k >> 1] >> ((k & 1) * 16)) & 0xffffu))
        : S::load((typename S::T)__uint_as_float(v.u[k & 3]));
}
template <class S>
__device__ __forceinline__ void vset(V4& v, int k, float f) {
    if (sizeof(typename S::T) == 2) {
        v.u[k >> 1] |= ((unsigned)(u16)S::store(f)) << ((k & 1) * 16);
    } else {
        v.u[k & 3] = __float_as_uint((float)S::store(f));
    }
}
__device__ __forceinline__ bool aligned16(const void* p) { return ((u64)p & 15) == 0; }

/* Layer norm of a row that fits in registers: each thread reads its 16-byte vectors of the
 * row once (at most LN_VECS), the mean and then the variance come from those registers
 * (exact two-pass statistics over one pass of memory), and gamma, beta and the output move
 * 16 bytes at a time. The scalar kernel read the row three times, two bytes per access,
 * and ran at half of torch's bandwidth on an H200. */
#define LN_VECS 4
/* This thread's vectors of a row, j = threadIdx.x + t·blockDim.x for t < LN_VECS, j < nv. */
__device__ __forceinline__ void load_row(const V4* __restrict__ r4, int nv, V4 (&cache)[LN_VECS]) {
#pragma unroll
    for (int t = 0; t < LN_VECS; ++t) {
        const int j = threadIdx.x + t * blockDim.x;
        if (j < nv) cache[t] = load16(r4 + j);
    }
}
/* f(x) for every element of the row this thread holds. */
template <class S, class F>
__device__ __forceinline__ void each_cached(const V4 (&cache)[LN_VECS], int nv, F f) {
#pragma unroll
    for (int t = 0; t < LN_VECS; ++t) {
        if ((int)(threadIdx.x + t * blockDim.x) < nv) {
#pragma unroll
            for (int k = 0; k < (int)(16 / sizeof(typename S::T)); ++k) f(vget<S>(cache[t], k));
        }
    }
}
template <class S>
__device__ __forceinline__ void layer_norm_rows_in_registers(
    const typename S::T* __restrict__ row, const typename S::T* __restrict__ g,
    const typename S::T* __restrict__ b, typename S::T* __restrict__ out, int cols, float eps,
    float* scratch) {
    constexpr int EPV = 16 / sizeof(typename S::T);
    const int nv = cols / EPV;
    V4 cache[LN_VECS];
    load_row((const V4*)row, nv, cache);
    float s = 0.f;
    each_cached<S>(cache, nv, [&](float x) { s += x; });
    const float mean = block_sum(s, scratch) / cols;
    float var = 0.f;
    each_cached<S>(cache, nv, [&](float x) { const float d = x - mean; var += d * d; });
    const float inv = rsqrtf(block_sum(var, scratch) / cols + eps);
    const V4* g4 = (const V4*)g; const V4* b4 = (const V4*)b; V4* o4 = (V4*)out;
#pragma unroll
    for (int t = 0; t < LN_VECS; ++t) {
        const int j = threadIdx.x + t * blockDim.x;
        if (j < nv) {
            const V4 gv = load16(g4 + j), bv = load16(b4 + j);
            V4 o = {{0u, 0u, 0u, 0u}};
#pragma unroll
            for (int k = 0; k < EPV; ++k)
                vset<S>(o, k, (vget<S>(cache[t], k) - mean) * inv * vget<S>(gv, k) + vget<S>(bv, k));
            store16(o4 + j, o);
        }
    }
}

/* ---------------- tensor ops ---------------- */

__device__ __forceinline__ float gelu_tanh(float x) {
    /* 0.5 x (1 + tanh u) = x / (1 + exp(-2u)) */
    float u = 0.7978845608f * (x + 0.044715f * x * x * x);
    return x / (1.0f + expf(-2.0f * u));
}

/* Elementwise ops move 16 bytes an access (8 f16/bf16, 4 f32) in chunks of four vectors a
 * thread (chunked4), where the tensors are 16-byte aligned; the elements past the last
 * whole vector, or every element of a misaligned tensor, go one at a time. Two-byte
 * accesses one at a time ran bf16 add at 2.5 TB/s on an H200. */
template <class S, class F>
__device__ __forceinline__ V4 map_v(const V4& a, const V4& b, F f) {
    V4 o = {{0u, 0u, 0u, 0u}};
#pragma unroll
    for (int k = 0; k < (int)(16 / sizeof(typename S::T)); ++k) vset<S>(o, k, f(vget<S>(a, k), vget<S>(b, k)));
    return o;
}
/* ARGS: 2 reads x and y, 1 reads x alone (y is then x and never loaded: a constant, so
 * the second operand's loads are compiled out). */
template <class S, int ARGS, class F>
__device__ __forceinline__ void elementwise(const typename S::T* __restrict__ x, const typename S::T* __restrict__ y,
                                            typename S::T* __restrict__ z, u64 n, F f) {
    constexpr int EPV = 16 / sizeof(typename S::T);
    const u64 nv = aligned16(x) && aligned16(y) && aligned16(z) ? n / EPV : 0;
    const V4* x4 = (const V4*)x; const V4* y4 = (const V4*)y; V4* z4 = (V4*)z;
    auto second = [&](u64 i, const V4& a) { return ARGS == 2 ? load16(y4 + i) : a; };
    chunked4(nv, [&](u64 i, u64 st) {
        const V4 a0 = load16(x4 + i), a1 = load16(x4 + i + st), a2 = load16(x4 + i + 2 * st), a3 = load16(x4 + i + 3 * st);
        const V4 b0 = second(i, a0), b1 = second(i + st, a1), b2 = second(i + 2 * st, a2), b3 = second(i + 3 * st, a3);
        store16(z4 + i, map_v<S>(a0, b0, f)); store16(z4 + i + st, map_v<S>(a1, b1, f));
        store16(z4 + i + 2 * st, map_v<S>(a2, b2, f)); store16(z4 + i + 3 * st, map_v<S>(a3, b3, f));
    }, [&](u64 i) { const V4 a = load16(x4 + i); store16(z4 + i, map_v<S>(a, second(i, a), f)); });
    GRID_STRIDE(j, n - nv * EPV) {
        const u64 i = nv * EPV + j;
        const float a = S::load(x[i]);
        z[i] = S::store(f(a, ARGS == 2 ? S::load(y[i]) : a));
    }
}

#define BINARY(NAME, S, EXPR) \
extern "C" __global__ void NAME(const S::T* __restrict__ x, const S::T* __restrict__ y, S::T* __restrict__ z, u64 n) { \
    elementwise<S, 2>(x, y, z, n, [](float a, float b) { return EXPR; }); }
#define UNARY(NAME, S, EXPR) \
extern "C" __global__ void NAME(const S::T* __restrict__ x, S::T* __restrict__ z, u64 n) { \
    elementwise<S, 1>(x, x, z, n, [](float a, float) { return EXPR; }); }

/* Row statistics from registers (softmax): at most LN_VECS 16-byte vectors a thread. */
template <class S>
__device__ __forceinline__ void softmax_rows_in_registers(const typename S::T* __restrict__ row,
                                                          typename S::T* __restrict__ out, int cols, float* scratch) {
    constexpr int EPV = 16 / sizeof(typename S::T);
    const int nv = cols / EPV;
    V4* o4 = (V4*)out;
    V4 cache[LN_VECS];
    load_row((const V4*)row, nv, cache);
    float m = NEG_INF;
    each_cached<S>(cache, nv, [&](float x) { m = fmaxf(m, x); });
    m = block_max(m, scratch);
    float sum = 0.f;
    each_cached<S>(cache, nv, [&](float x) { sum += expf(x - m); });
    const float inv = 1.f / block_sum(sum, scratch);
#pragma unroll
    for (int t = 0; t < LN_VECS; ++t) {
        const int j = threadIdx.x + t * blockDim.x;
        if (j < nv) {
            V4 o = {{0u, 0u, 0u, 0u}};
#pragma unroll
            for (int k = 0; k < EPV; ++k) vset<S>(o, k, expf(vget<S>(cache[t], k) - m) * inv);
            store16(o4 + j, o);
        }
    }
}

/* Whether a row kernel's row is whole 16-byte vectors and the pointers aligned (the same
 * for every thread of a block, so the barriers after it stay uniform); `fits` also asks
 * that the row fit in LN_VECS vectors a thread. */
#define ROW_VECTORS(S, cols, ptrs_aligned) ((cols) % (16 / (int)sizeof(S::T)) == 0 && (ptrs_aligned))
#define ROW_FITS(S, cols) ((cols) <= (int)blockDim.x * (16 / (int)sizeof(S::T)) * LN_VECS)

#define ROW_OPS(SUFFIX, S) \
BINARY(add_##SUFFIX, S, a + b) \
BINARY(mul_##SUFFIX, S, a * b) \
UNARY(relu_##SUFFIX, S, fmaxf(a, 0.f)) \
UNARY(gelu_##SUFFIX, S, gelu_tanh(a)) \
extern "C" __global__ void sum_##SUFFIX(const S::T* __restrict__ x, S::T* __restrict__ z, int cols) { \
    __shared__ float scratch[33]; \
    const S::T* row = x + (u64)blockIdx.x * cols; \
    float acc = 0.f; \
    if (ROW_VECTORS(S, cols, aligned16(x))) { \
        const V4* r4 = (const V4*)row; \
        const int nv = cols / (16 / (int)sizeof(S::T)); \
        int j = threadIdx.x; \
        for (; j + (int)blockDim.x < nv; j += 2 * blockDim.x) { /* two loads in flight */ \
            const V4 v0 = load16(r4 + j), v1 = load16(r4 + j + blockDim.x); \
            for (int k = 0; k < (int)(16 / sizeof(S::T)); ++k) acc += vget<S>(v0, k) + vget<S>(v1, k); \
        } \
        if (j < nv) { \
            const V4 v = load16(r4 + j); \
            for (int k = 0; k < (int)(16 / sizeof(S::T)); ++k) acc += vget<S>(v, k); \
        } \
    } else { \
        for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += S::load(row[c]); \
    } \
    acc = block_sum(acc, scratch); \
    if (threadIdx.x == 0) z[blockIdx.x] = S::store(acc); } \
extern "C" __global__ void softmax_##SUFFIX(const S::T* __restrict__ x, S::T* __restrict__ z, int cols) { \
    __shared__ float scratch[33]; \
    const S::T* row = x + (u64)blockIdx.x * cols; S::T* out = z + (u64)blockIdx.x * cols; \
    if (ROW_VECTORS(S, cols, aligned16(x) && aligned16(z)) && ROW_FITS(S, cols)) { \
        softmax_rows_in_registers<S>(row, out, cols, scratch); \
        return; \
    } \
    float m = NEG_INF; \
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, S::load(row[c])); \
    m = block_max(m, scratch); \
    float s = 0.f; \
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(S::load(row[c]) - m); \
    s = block_sum(s, scratch); \
    float inv = 1.f / s; \
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = S::store(expf(S::load(row[c]) - m) * inv); } \
extern "C" __global__ void layer_norm_##SUFFIX(const S::T* __restrict__ x, const S::T* __restrict__ g, const S::T* __restrict__ b, S::T* __restrict__ z, int cols, float eps) { \
    __shared__ float scratch[33]; \
    const S::T* row = x + (u64)blockIdx.x * cols; S::T* out = z + (u64)blockIdx.x * cols; \
    /* The same for every thread of the block, so the barriers inside stay uniform. */ \
    if (ROW_VECTORS(S, cols, aligned16(x) && aligned16(g) && aligned16(b) && aligned16(z)) && ROW_FITS(S, cols)) { \
        layer_norm_rows_in_registers<S>(row, g, b, out, cols, eps, scratch); \
        return; \
    } \
    float s = 0.f; \
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += S::load(row[c]); \
    float mean = block_sum(s, scratch) / cols; \
    float v = 0.f; \
    for (int c = threadIdx.x; c < cols; c += blockDim.x) { float d = S::load(row[c]) - mean; v += d * d; } \
    float inv = rsqrtf(block_sum(v, scratch) / cols + eps); \
    for (int c = threadIdx.x; c < cols; c += blockDim.x) \
        out[c] = S::store((S::load(row[c]) - mean) * inv * S::load(g[c]) + S::load(b[c])); } \
/* Attention's standard path: softmax in place over rows of a (B·H·S)×S score matrix, */ \
/* masking keys after the row's query when causal (their probability is written as 0). */ \
extern "C" __global__ void attn_softmax_##SUFFIX(S::T* __restrict__ p, int s, int causal) { \
    __shared__ float scratch[33]; \
    S::T* row = p + (u64)blockIdx.x * s; \
    const int i = blockIdx.x % s; \
    const int keys = causal ? i + 1 : s; \
    float m = NEG_INF; \
    for (int c = threadIdx.x; c < keys; c += blockDim.x) m = fmaxf(m, S::load(row[c])); \
    m = block_max(m, scratch); \
    float t = 0.f; \
    for (int c = threadIdx.x; c < keys; c += blockDim.x) t += expf(S::load(row[c]) - m); \
    t = block_sum(t, scratch); \
    float inv = 1.f / t; \
    for (int c = threadIdx.x; c < s; c += blockDim.x) \
        row[c] = S::store(c < keys ? expf(S::load(row[c]) - m) * inv : 0.f); }

ROW_OPS(f32, F32)
ROW_OPS(f16, F16)
ROW_OPS(bf16, BF16)

/* ---------------- fused attention (online softmax) ----------------
 * Grid (ceil(S / 16), B·H), 128 threads. Each block owns 16 query rows (4 per warp) and
 * sweeps key/value tiles of 32 rows through shared memory. For a tile, lane j scores key
 * j against each of its warp's rows (K rows padded by one float: conflict-free), the warp
 * updates the running max and sum, and each lane accumulates D/32 output columns. The
 * scores never leave registers: the extra memory is the shared tiles only. */

#define FLASH_BQ 16
#define FLASH_BK 32
#define FLASH_WARPS 4
#define FLASH_RPW (FLASH_BQ / FLASH_WARPS)

/* The shared tiles are declared in each kernel and passed in: AMD's compiler gives every
 * kernel of the module room for shared variables declared in device functions. */
template <class S, int D>
__device__ __forceinline__ void flash_forward(const typename S::T* __restrict__ q, const typename S::T* __restrict__ k,
                              const typename S::T* __restrict__ v, typename S::T* __restrict__ o,
                              int s, float scale, int causal,
                              float (*qs)[D], float (*ks)[D + 1], float (*vs)[D]) {
    constexpr int PER_LANE = D / 32;
    const int q0 = blockIdx.x * FLASH_BQ;
    const u64 base = (u64)blockIdx.y * s * D;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    for (int e = tid; e < FLASH_BQ * D; e += blockDim.x) {
        int r = e / D, c = e % D, i = q0 + r;
        qs[r][c] = i < s ? S::load(q[base + (u64)i * D + c]) * scale : 0.f;
    }
    float acc[FLASH_RPW][PER_LANE];
    float m[FLASH_RPW], l[FLASH_RPW];
#pragma unroll
    for (int r = 0; r < FLASH_RPW; ++r) {
        m[r] = NEG_INF; l[r] = 0.f;
#pragma unroll
        for (int t = 0; t < PER_LANE; ++t) acc[r][t] = 0.f;
    }
    const int key_end = causal ? (s < q0 + FLASH_BQ ? s : q0 + FLASH_BQ) : s;
    for (int k0 = 0; k0 < key_end; k0 += FLASH_BK) {
        __syncthreads();
        for (int e = tid; e < FLASH_BK * D; e += blockDim.x) {
            int r = e / D, c = e % D, j = k0 + r;
            bool ok = j < s;
            ks[r][c] = ok ? S::load(k[base + (u64)j * D + c]) : 0.f;
            vs[r][c] = ok ? S::load(v[base + (u64)j * D + c]) : 0.f;
        }
        __syncthreads();
        const int j = k0 + lane;
#pragma unroll
        for (int rr = 0; rr < FLASH_RPW; ++rr) {
            const int r = warp * FLASH_RPW + rr, i = q0 + r;
            float sc = 0.f;
#pragma unroll 16
            for (int c = 0; c < D; ++c) sc += qs[r][c] * ks[lane][c];
            const bool valid = j < s && i < s && (!causal || j <= i);
            sc = valid ? sc : NEG_INF;
            const float tile_max = warp_max(sc);
            if (tile_max == NEG_INF) continue; /* warp-uniform: the whole tile is masked */
            const float m_new = fmaxf(m[rr], tile_max);
            const float p = valid ? expf(sc - m_new) : 0.f;
            const float correction = expf(m[rr] - m_new);
            l[rr] = l[rr] * correction + warp_sum(p);
            m[rr] = m_new;
#pragma unroll
            for (int t = 0; t < PER_LANE; ++t) acc[rr][t] *= correction;
            for (int jj = 0; jj < FLASH_BK; ++jj) {
                const float pj = SHFL(p, jj);
#pragma unroll
                for (int t = 0; t < PER_LANE; ++t) acc[rr][t] += pj * vs[jj][lane + 32 * t];
            }
        }
    }
#pragma unroll
    for (int rr = 0; rr < FLASH_RPW; ++rr) {
        const int i = q0 + warp * FLASH_RPW + rr;
        if (i >= s) continue;
        const float inv = 1.f / l[rr];
#pragma unroll
        for (int t = 0; t < PER_LANE; ++t)
            o[base + (u64)i * D + lane + 32 * t] = S::store(acc[rr][t] * inv);
    }
}

#define FLASH(SUFFIX, S, D) \
extern "C" __global__ void __launch_bounds__(128) flash_##SUFFIX##_d##D( \
    const S::T* q, const S::T* k, const S::T* v, S::T* o, int s, float scale, int causal) { \
    __shared__ float qs[FLASH_BQ][D]; \
    __shared__ float ks[FLASH_BK][D + 1]; \
    __shared__ float vs[FLASH_BK][D]; \
    flash_forward<S, D>(q, k, v, o, s, scale, causal, qs, ks, vs); }
FLASH(f32, F32, 64)
FLASH(f32, F32, 128)
FLASH(f16, F16, 64)
FLASH(f16, F16, 128)
FLASH(bf16, BF16, 64)
FLASH(bf16, BF16, 128)

/* ---------------- fused attention on tensor cores (FlashAttention-2 forward, f16/bf16) ----
 * Grid (ceil(S / 64), B·H), 128 threads: each of the 4 warps owns 16 query rows, held as
 * mma A fragments in registers for the whole sweep (the contract is in the mma section of the
 * prelude). For each tile of 64 keys, staged in shared memory as 16-bit values (K as stored,
 * V transposed, so that both B operands are two adjacent values read as one word; rows
 * padded by 8 values, so a fragment read touches 32 different banks):
 *   S = Q·Kᵀ on tensor cores, f32 accumulators; scaled to base 2, masked where needed;
 *   the online softmax on the accumulator fragments: a row's 64 scores sit in the 4 lanes
 *   of a quad, so its max is two xor-shuffles; each lane keeps a partial row sum, rescaled
 *   with the row, and the quad adds them up once at the end;
 *   O += P·V: P is rounded to 16 bits in registers and, as the fragments of two adjacent
 *   8-key tiles of S are exactly one A fragment, reused as the A operand without leaving
 *   registers (FlashAttention-2's trick).
 * Causal: tiles wholly above the diagonal are never loaded; masking runs only on the tiles
 * that cross the diagonal or the end of the sequence. */

#define FLASH_TC_BQ 64
#define FLASH_TC_BK 64
#define FLASH_TC_PAD 8

template <class S> struct Mma;
template <> struct Mma<F16> {
    static __device__ __forceinline__ void run(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { mma_m16n8k16_f16(c, a, b); }
};
template <> struct Mma<BF16> {
    static __device__ __forceinline__ void run(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { mma_m16n8k16_bf16(c, a, b); }
};

/* Two values rounded to 16 bits, the first in the low half: one fragment register. */
template <class S>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
    return (unsigned)S::store(lo) | ((unsigned)S::store(hi) << 16);
}
__device__ __forceinline__ unsigned load_word(const u16* p) { return *(const unsigned*)p; }

template <class S, int D>
__device__ __forceinline__ void flash_tc_forward(const u16* __restrict__ q, const u16* __restrict__ k,
                              const u16* __restrict__ v, u16* __restrict__ o, int s, float scale, int causal,
                              u16 (*ks)[D + FLASH_TC_PAD], u16 (*vt)[FLASH_TC_BK + FLASH_TC_PAD]) {
    constexpr int Q_STEPS = D / 16;          /* k-steps of S = Q·Kᵀ */
    constexpr int S_TILES = FLASH_TC_BK / 8; /* 8-key column tiles of S */
    constexpr int P_STEPS = FLASH_TC_BK / 16; /* k-steps of O += P·V */
    constexpr int O_TILES = D / 8;           /* 8-column tiles of O */
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    /* Causal blocks' work grows with their row: the last query blocks go first, so the
     * short ones fill the gaps at the end instead of a long one running alone. */
    const int q_block = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    const int q0 = q_block * FLASH_TC_BQ, warp_row = q0 + warp * 16;
    const int rows[2] = {warp_row + g, warp_row + g + 8};
    const u64 base = (u64)blockIdx.y * s * D;
    const float scale_log2 = scale * 1.4426950408889634f;

    unsigned qa[Q_STEPS][4];
#pragma unroll
    for (int kk = 0; kk < Q_STEPS; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int r = rows[e & 1], c = kk * 16 + 2 * t + (e >> 1) * 8;
            qa[kk][e] = r < s ? load_word(q + base + (u64)r * D + c) : 0u;
        }
    float acc[O_TILES][4];
#pragma unroll
    for (int n = 0; n < O_TILES; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[n][e] = 0.f;
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.f, 0.f};

    const int key_end = causal ? (s < q0 + FLASH_TC_BQ ? s : q0 + FLASH_TC_BQ) : s;
    for (int k0 = 0; k0 < key_end; k0 += FLASH_TC_BK) {
        __syncthreads();
        /* Keys past the end are zeros: their P is 0, and 0 times a stale NaN would not be. */
        for (int e = tid; e < FLASH_TC_BK * D / 2; e += blockDim.x) {
            const int r = e / (D / 2), c = (e % (D / 2)) * 2, j = k0 + r;
            const unsigned kw = j < s ? load_word(k + base + (u64)j * D + c) : 0u;
            const unsigned vw = j < s ? load_word(v + base + (u64)j * D + c) : 0u;
            *(unsigned*)&ks[r][c] = kw;
            vt[c][r] = (u16)(vw & 0xffffu);
            vt[c + 1][r] = (u16)(vw >> 16);
        }
        __syncthreads();

        float sc[S_TILES][4];
#pragma unroll
        for (int n = 0; n < S_TILES; ++n) {
#pragma unroll
            for (int e = 0; e < 4; ++e) sc[n][e] = 0.f;
#pragma unroll
            for (int kk = 0; kk < Q_STEPS; ++kk) {
                const u16* key = &ks[n * 8 + g][kk * 16 + 2 * t];
                const unsigned b[2] = {load_word(key), load_word(key + 8)};
                Mma<S>::run(sc[n], qa[kk], b);
            }
        }
        /* Warp-uniform: only a tile that crosses the end or this warp's diagonal masks. */
        const bool edge = k0 + FLASH_TC_BK > s || (causal && k0 + FLASH_TC_BK - 1 > warp_row);
#pragma unroll
        for (int n = 0; n < S_TILES; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int key = k0 + n * 8 + 2 * t + (e & 1);
                const bool masked = edge && (key >= s || (causal && key > rows[e >> 1]));
                sc[n][e] = masked ? NEG_INF : sc[n][e] * scale_log2;
            }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = m[h];
#pragma unroll
            for (int n = 0; n < S_TILES; ++n) mx = fmaxf(mx, fmaxf(sc[n][2 * h], sc[n][2 * h + 1]));
            mx = fmaxf(mx, SHFL_XOR(mx, 1));
            mx = fmaxf(mx, SHFL_XOR(mx, 2));
            /* A row with no key yet keeps -inf; subtracting 0 then gives exp2(-inf) = 0. */
            const float shift = mx == NEG_INF ? 0.f : mx;
            const float correction = exp2f(m[h] - shift);
            m[h] = mx;
            float sum = 0.f;
#pragma unroll
            for (int n = 0; n < S_TILES; ++n)
#pragma unroll
                for (int e = 2 * h; e < 2 * h + 2; ++e) {
                    sc[n][e] = exp2f(sc[n][e] - shift);
                    sum += sc[n][e];
                }
            l[h] = l[h] * correction + sum;
#pragma unroll
            for (int n = 0; n < O_TILES; ++n) {
                acc[n][2 * h] *= correction;
                acc[n][2 * h + 1] *= correction;
            }
        }
#pragma unroll
        for (int kk = 0; kk < P_STEPS; ++kk) {
            const unsigned pa[4] = {pack2<S>(sc[2 * kk][0], sc[2 * kk][1]), pack2<S>(sc[2 * kk][2], sc[2 * kk][3]),
                                    pack2<S>(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                                    pack2<S>(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
#pragma unroll
            for (int n = 0; n < O_TILES; ++n) {
                const u16* col = &vt[n * 8 + g][kk * 16 + 2 * t];
                const unsigned b[2] = {load_word(col), load_word(col + 8)};
                Mma<S>::run(acc[n], pa, b);
            }
        }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += SHFL_XOR(l[h], 1);
        l[h] += SHFL_XOR(l[h], 2);
        if (rows[h] >= s) continue;
        const float inv = 1.f / l[h];
#pragma unroll
        for (int n = 0; n < O_TILES; ++n)
            *(unsigned*)(o + base + (u64)rows[h] * D + n * 8 + 2 * t) =
                pack2<S>(acc[n][2 * h] * inv, acc[n][2 * h + 1] * inv);
    }
}

#define FLASH_TC(SUFFIX, S, D) \
extern "C" __global__ void __launch_bounds__(128) flash_tc_##SUFFIX##_d##D( \
    const u16* q, const u16* k, const u16* v, u16* o, int s, float scale, int causal) { \
    alignas(16) __shared__ u16 ks[FLASH_TC_BK][D + FLASH_TC_PAD]; \
    alignas(16) __shared__ u16 vt[D][FLASH_TC_BK + FLASH_TC_PAD]; \
    flash_tc_forward<S, D>(q, k, v, o, s, scale, causal, ks, vt); }
FLASH_TC(f16, F16, 64)
FLASH_TC(f16, F16, 128)
FLASH_TC(bf16, BF16, 64)
FLASH_TC(bf16, BF16, 128)
"#;

/// Names of every `extern "C"` kernel the source defines.
pub fn kernel_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "stream_fill",
        "stream_scale_in_place",
        "stream_copy",
        "stream_scale",
        "stream_add",
        "stream_triad",
        "stream_write",
        "stream_read",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    for suffix in ["f32", "f16", "bf16"] {
        for op in [
            "add",
            "mul",
            "relu",
            "gelu",
            "sum",
            "softmax",
            "layer_norm",
            "attn_softmax",
        ] {
            names.push(format!("{op}_{suffix}"));
        }
        for d in [64, 128] {
            names.push(format!("flash_{suffix}_d{d}"));
        }
    }
    for suffix in ["f16", "bf16"] {
        for d in [64, 128] {
            names.push(format!("flash_tc_{suffix}_d{d}"));
        }
    }
    names
}

/// A grid-stride launch over `n` items: enough blocks to fill the device several times
/// over, but never more than the items need.
pub fn grid_stride(n: u64, units: u32) -> Grid {
    let needed = n.div_ceil(BLOCK as u64).max(1);
    let cap = (units.max(1) as u64) * 32;
    Grid {
        blocks: (needed.min(cap) as u32, 1, 1),
        threads: BLOCK,
    }
}

/// One block per row.
pub fn per_row(rows: usize) -> Grid {
    Grid {
        blocks: (rows as u32, 1, 1),
        threads: BLOCK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `extern "C"` kernels `source` defines, found the way the compiler finds them:
    /// function-like macros expanded (with `##` pasting) until none is left, then every
    /// `extern "C" __global__ void NAME(` read off. A misspelled or missing kernel cannot
    /// hide behind a macro invocation.
    fn defined_kernels(source: &str) -> std::collections::BTreeSet<String> {
        let joined = source.replace("\\\n", " ");
        let define = regex::Regex::new(r"^\s*#define\s+(\w+)\(([^)]*)\)(.*)$").unwrap();
        let mut macros = std::collections::HashMap::new();
        let mut text = String::new();
        for line in joined.lines() {
            if let Some(c) = define.captures(line) {
                let params: Vec<String> = c[2].split(',').map(|p| p.trim().to_owned()).collect();
                macros.insert(c[1].to_owned(), (params, c[3].to_owned()));
            } else if !line.trim_start().starts_with('#') {
                text.push_str(line);
                text.push('\n');
            }
        }
        let ident = regex::Regex::new(r"[A-Za-z_]\w*").unwrap();
        for _ in 0..64 {
            let Some(expanded) = expand_first(&text, &macros, &ident) else {
                break;
            };
            text = expanded;
        }
        let kernel = regex::Regex::new(
            r#"extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\(\d+\)\s+)?(\w+)\s*\("#,
        )
        .unwrap();
        kernel
            .captures_iter(&text)
            .map(|c| c[1].to_owned())
            .collect()
    }

    type Macros = std::collections::HashMap<String, (Vec<String>, String)>;

    /// `text` with every invocation of a function-like macro expanded once, or `None`
    /// when it has none.
    fn expand_first(text: &str, macros: &Macros, ident: &regex::Regex) -> Option<String> {
        let paste = regex::Regex::new(r"\s*##\s*").unwrap();
        let mut out = String::new();
        let mut rest = text;
        let mut any = false;
        while let Some(m) = ident.find(rest) {
            let after = &rest[m.end()..];
            let Some((params, body)) = macros.get(m.as_str()).filter(|_| after.starts_with('('))
            else {
                out.push_str(&rest[..m.end()]);
                rest = after;
                continue;
            };
            let (args, consumed) = macro_args(after)?;
            let substituted = ident.replace_all(body, |c: &regex::Captures| {
                let name = &c[0];
                params
                    .iter()
                    .position(|p| p == name)
                    .map_or(name.to_owned(), |i| {
                        args.get(i).cloned().unwrap_or_default()
                    })
            });
            let pasted = paste.replace_all(&substituted, "");
            out.push_str(&rest[..m.start()]);
            out.push_str(&pasted);
            rest = &after[consumed..];
            any = true;
        }
        out.push_str(rest);
        any.then_some(out)
    }

    /// The comma-separated arguments of `(a, f(b, c), d)...` at the start of `s`, and the
    /// bytes they span including both parentheses.
    fn macro_args(s: &str) -> Option<(Vec<String>, usize)> {
        let (mut depth, mut args, mut current) = (0usize, Vec::new(), String::new());
        for (i, ch) in s.char_indices() {
            match ch {
                '(' if depth == 0 => depth = 1,
                '(' => (depth += 1, current.push(ch)).1,
                ')' if depth == 1 => {
                    args.push(current.trim().to_owned());
                    return Some((args, i + 1));
                }
                ')' => (depth -= 1, current.push(ch)).1,
                ',' if depth == 1 => args.push(std::mem::take(&mut current).trim().to_owned()),
                _ => current.push(ch),
            }
        }
        None
    }

    #[test]
    fn every_named_kernel_is_defined_in_the_source_and_nothing_else() {
        for platform in [Platform::Cuda, Platform::Hip] {
            let defined = defined_kernels(&source(platform));
            let named: std::collections::BTreeSet<String> = kernel_names().into_iter().collect();
            assert_eq!(named, defined, "{platform:?}: kernel_names() vs the source");
        }
    }

    #[test]
    fn the_expander_sees_through_macros_and_rejects_misspellings() {
        let src = "#define K(NAME, T) \\\nextern \"C\" __global__ void NAME(T* x) { f(x, (1, 2)); }\n\
                   #define TWO(S) K(add_##S, float) K(mul_##S, float)\nTWO(f32)\n";
        let found = defined_kernels(src);
        let want: std::collections::BTreeSet<String> = ["add_f32", "mul_f32"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(found, want);
        let defined = defined_kernels(&source(Platform::Cuda));
        for typo in [
            "add_f23",
            "softmx_f32",
            "layer_norm_bf32",
            "flash_f16_d96",
            "stream_cpy",
        ] {
            assert!(!defined.contains(typo), "{typo}");
        }
        assert!(defined.contains("flash_bf16_d128") && defined.contains("attn_softmax_f16"));
    }

    #[test]
    fn both_platforms_get_shuffles_and_f16() {
        for platform in [Platform::Cuda, Platform::Hip] {
            let s = source(platform);
            assert!(s.contains("#define SHFL_XOR") && s.contains("struct F16"));
            assert_eq!(s.matches("struct F16 {").count(), 1);
        }
        assert!(
            !BODY.contains("__shfl"),
            "shuffles must go through the prelude's macros"
        );
    }

    #[test]
    fn grids_cover_the_work() {
        assert_eq!(grid_stride(100, 132).blocks.0, 1);
        assert_eq!(grid_stride(1 << 30, 132).blocks.0, 132 * 32);
        assert_eq!(per_row(7).blocks, (7, 1, 1));
    }
}
