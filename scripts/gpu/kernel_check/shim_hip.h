#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
struct Dim3V { unsigned x, y, z; };
__device__ Dim3V __tid(); __device__ Dim3V __bid(); __device__ Dim3V __bdim(); __device__ Dim3V __gdim();
#define threadIdx (__tid())
#define blockIdx (__bid())
#define blockDim (__bdim())
#define gridDim (__gdim())
__device__ float expf(float);
__device__ float fmaxf(float, float);
__device__ float rsqrtf(float);
__device__ float __uint_as_float(unsigned);
__device__ unsigned __float_as_uint(float);
__device__ float __shfl_xor(float, int, int);
__device__ double __shfl_xor(double, int, int);
__device__ float __shfl(float, int, int);
__device__ void __syncthreads();
__device__ float exp2f(float);
__device__ unsigned __shfl(unsigned, int, int);
