/* gpu_emu/cuda_on_host.h — the CUDA built-ins pdejit's generated code uses, as host C++: the
 * prelude of every host emulation of generated CUDA C (gpu_emu/nvrtc.c, test_cuda.c,
 * test_derive.c), which each follow with a #line naming their source. */
#ifndef PJ_CUDA_ON_HOST_H
#define PJ_CUDA_ON_HOST_H
#define PJ_CUDA_ON_HOST_PRELUDE                                                                              \
    "#include <math.h>\n#include <string.h>\n#define __global__\n#define __device__\n"                        \
    "#define __forceinline__ inline\nstruct pj_dim3 { unsigned x, y, z; };\n"                                  \
    "static pj_dim3 blockIdx, blockDim, threadIdx;\n"                                                          \
    "static inline long long __double_as_longlong(double d) { long long r; memcpy(&r, &d, 8); return r; }\n" \
    "static inline double __longlong_as_double(long long v) { double r; memcpy(&r, &v, 8); return r; }\n"    \
    "static inline int __float_as_int(float f) { int r; memcpy(&r, &f, 4); return r; }\n"                    \
    "static inline float __int_as_float(int v) { float r; memcpy(&r, &v, 4); return r; }\n"                  \
    "static inline long long atomicMin(long long *p, long long v) { long long o = *p; if (v < o) *p = v; "   \
    "return o; }\n"                                                                                            \
    "static inline int atomicExch(int *p, int v) { int o = *p; *p = v; return o; }\n"
#endif
