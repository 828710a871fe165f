#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#include <__clang_cuda_builtin_vars.h>
__device__ float expf(float);
__device__ float fmaxf(float, float);
__device__ float rsqrtf(float);
__device__ float __uint_as_float(unsigned);
__device__ unsigned __float_as_uint(float);
__device__ float __shfl_xor_sync(unsigned, float, int);
__device__ double __shfl_xor_sync(unsigned, double, int);
__device__ float __shfl_sync(unsigned, float, int);
__device__ void __syncthreads();
__device__ float exp2f(float);
__device__ unsigned __shfl_sync(unsigned, unsigned, int);
