// Stand-in for CUDA's crt/host_defines.h, which NVIDIA's PyPI header wheels
// leave out (it ships with nvcc) although cupti.h -> builtin_types.h ->
// device_types.h includes it. Host code needs only these empty or GCC
// spellings of the CUDA keywords. Used only when the real one is absent.
#pragma once
#define __align__(n) __attribute__((aligned(n)))
#define __annotate__(a) __attribute__((a))
#define __location__(a) __annotate__(a)
#define CUDARTAPI
#define CUDARTAPI_CDECL
#define __specialization_static
#define __host__
#define __device__
#define __global__
#define __shared__
#define __constant__
#define __managed__
#define __grid_constant__
#define __launch_bounds__(...)
#define __builtin_align__(a) __align__(a)
#define __cudart_builtin__
#define __device_builtin__
#define __device_builtin_texture_type__
#define __device_builtin_surface_type__
#define __CUDA_ALIGN__(n) __align__(n)
#define __nv_register_params__
