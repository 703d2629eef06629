/* cuda_codegen.h — the kernel IR printed as CUDA C, for NVRTC (see backends/cuda/cuda_driver.h).
 *
 * Three kinds of device kernel, each one `extern "C" __global__` function in its own source:
 *
 *   cuda_codegen          a KIR_STAGE, KIR_INIT or KIR_JACOBIAN kernel: one thread per interior cell, with the
 *                         semantics of kir_eval_scalar (C comparisons, selects without branches,
 *                         libm names, double or float);
 *   cuda_codegen_bc_fill  the ghost layers of one side, for every field: periodic copy, mirror
 *                         (zero gradient) or the linear condition a*u + b*dn(u) = c whose
 *                         coefficients come from a KIR_BC kernel, inlined, with a second
 *                         condition lap(u) = c2 on layer 2;
 *   cuda_codegen_nan_check  the first interior cell of one buffer that is NaN or infinite;
 *   cuda_codegen_reduce, cuda_codegen_reduce_fold  a KIR_REDUCE kernel (monitors): lanes per
 *                         part on the device, then their fold in kir.h's order, one double per
 *                         output copied back.
 *
 * Stage and fill kernels take one argument, a cuda_args by value (the device-side twin of
 * kir_launch, declared identically in every generated source and checked there with
 * static_assert against the host's size); the check kernel takes a cuda_check_args. A source is
 * whole (NVRTC compiles each kernel alone), unless cuda_options.prelude asks for the kernel
 * without the definitions kernels share: then cuda_codegen_prelude prints them once, before every
 * kernel of a translation unit that `nvcc -c` accepts whole (`pdejit emit --cuda`).
 *
 * Precision and FMA: the source does not depend on fast_math except in its header comment;
 * contraction is an NVRTC option (cuda_nvrtc_compile passes --fmad=false, or --use_fast_math).
 *
 * Memory: every generator returns a malloc'd NUL-terminated string the caller frees, or NULL
 * with a message in err (never prints, never exits). */
#ifndef PJ_CUDA_CODEGEN_H
#define PJ_CUDA_CODEGEN_H
#include <stddef.h>
#include <stdint.h>
#include "kir.h"

/* Limits of one launch: n_slots * n_fields buffers and n_params params. The argument struct
 * is passed by value (kernel parameter space: 4 KiB on every supported device), so these are
 * fixed; codegen refuses a kernel that needs more. */
#define CUDA_MAX_BUFS 128
#define CUDA_MAX_PARAMS 128

/* The launch argument of stage and fill kernels; mirrors kir_launch. All members are 8 bytes,
 * so the host and device layouts agree without packing pragmas. */
typedef struct cuda_args {
    uint64_t buf[CUDA_MAX_BUFS];      /* [slot * n_fields + field]: device address of cell (0,0,0) */
    double param[CUDA_MAX_PARAMS];    /* params, double even in single precision */
    double t, dt;
    int64_t n[3];                     /* interior cells per axis; 1 beyond the dimension */
    int64_t stride[3];                /* elements between neighbours; stride[0] = 1 */
    double h[3], origin[3];
    int64_t ghost[3];                 /* ghost layers allocated per axis (fill kernels; 0 beyond dim) */
    uint64_t nonfinite;               /* device address of an int set to 1 by a stage kernel that
                                         stores a NaN or an infinity (0: not recorded) */
    uint64_t seed;                    /* rand(): the key, step and stage code (kir_launch) */
    int64_t step, stage;
} cuda_args;
_Static_assert(sizeof(cuda_args) <= 4096, "cuda_args must fit the 4 KiB kernel parameter space");

/* The launch argument of a NaN/Inf check. *result must hold INT64_MAX (or anything >= the
 * number of interior cells) before the launch; afterwards it holds the smallest interior linear
 * index i + n0*(j + n1*k) whose value is NaN or +-Inf, or is unchanged. */
typedef struct cuda_check_args {
    uint64_t buf;                     /* device address of cell (0,0,0) */
    uint64_t result;                  /* device address of one int64 */
    int64_t n[3], stride[3];
} cuda_check_args;

/* Definitions several kernels share (the prelude), printed once before the kernels that use them. */
enum {
    CUDA_PRELUDE_ARGS = 1,   /* struct pj_args, the launch argument of every kernel but the check */
    CUDA_PRELUDE_CLAMP = 2,  /* pj_clamp, for the fills of linear conditions */
    CUDA_PRELUDE_RAND = 4,   /* pj_noise_*: rand(), randn() (compiler/noise.h) */
};

typedef struct cuda_options {
    int single;       /* float instead of double */
    int fast_math;    /* recorded in the header; pass the same flag to cuda_nvrtc_compile */
    /* NULL: the source is whole, the prelude it needs printed after its header comment (what
     * NVRTC compiles, one kernel a program). Else the prelude is left out and the CUDA_PRELUDE_*
     * bits it needs are ORed into *prelude: the kernel for one translation unit of several, after
     * cuda_codegen_prelude(*prelude) (`pdejit emit --cuda`). */
    unsigned *prelude;
} cuda_options;

/* CUDA C of the definitions `what` (CUDA_PRELUDE_* bits) names, in a fixed order: one copy of
 * each, for the translation unit of several kernels generated with cuda_options.prelude. */
char *cuda_codegen_prelude(unsigned what, char *err, size_t err_len);

/* How the ghost layers of one field are filled on one side. */
typedef enum cuda_bc_kind {
    CUDA_BC_NONE,      /* left alone */
    CUDA_BC_PERIODIC,  /* copied from the far side of the interior */
    CUDA_BC_MIRROR,    /* zero gradient: ghost layer m = interior cell m (mirror about the face) */
    CUDA_BC_LINEAR,    /* a*u + b*dn(u) = c, coefficients from the KIR_BC kernel */
    CUDA_BC_LINEAR0,   /* a*u + b*dn(u) = 0: the homogeneous condition (grid.h) */
} cuda_bc_kind;

/* CUDA C for a KIR_STAGE, KIR_INIT or KIR_JACOBIAN kernel, named `name` (a C identifier). Launch
 * with cuda_stage_dims over the interior cells. Refuses (NULL, err) kernels that fail kir_verify,
 * other kinds, or more than CUDA_MAX_BUFS buffers (a jacobian's outputs included) /
 * CUDA_MAX_PARAMS params. */
char *cuda_codegen(const kir_kernel *k, const cuda_options *opt, const char *name, char *err,
                   size_t err_len);

/* CUDA C that fills the ghost layers m = 1..ghost[axis] of side `side` (0 left/x low, 1 right,
 * 2 bottom/y low, 3 top, 4 back/z low, 5 front) of the buffers of slot 0, over the full extent
 * of the other axes including their ghost layers (fill x sides, then y, then z: corners get
 * values). kinds[f] says how field f is filled (n_fields entries).
 *
 * bc is the side's KIR_BC kernel (may be NULL when no field is CUDA_BC_LINEAR); its outputs
 * (slot 0, 1, 2, 3; field f) are a, b, c and c2 of field f (the first output of each counts); a
 * missing a, b or c is 0, a field with neither a nor b is refused. As in the CPU fill (sim_fill_ghosts), the
 * coefficients of a row of ghost cells are those of its face cell: the boundary cell (index 0
 * or n-1 along the side's axis) with the other axes clamped to the interior, so rows in another
 * axis' ghost layers take the nearest face cell. COORD is evaluated as written (the compiler
 * gives the side's axis half = -1 low / +1 high: the face). Loads read the face cell at their
 * offset, clamped along the side's axis to the interior (never a ghost this kernel writes) and
 * along the others to the allocated cells. Ghost layer m pairs with interior cell m mirrored
 * about the face, at distance d = (2m-1)h, and is computed in double in either precision:
 *     ghost = (c - u_in*(a/2 - b/d)) / (a/2 + b/d).
 * A field with c2 (a second condition, lap(u) = c2; read as 0 by CUDA_BC_LINEAR0) has layer 2
 * (when the axis has 2 cells or more) instead 2*h*h*c2 + g1 + u0 - u1, as sim_fill_axis: u0, u1
 * the first two interior cells, g1 layer 1's value, computed again by that thread with layer 1's
 * formula and rounded to the field's precision (the host reads it back from the buffer).
 * Launch with cuda_bc_fill_dims. dim and n_fields must equal the bc kernel's when it is given. */
char *cuda_codegen_bc_fill(const kir_kernel *bc, int dim, int n_fields, int side,
                           const cuda_bc_kind *kinds, const cuda_options *opt, const char *name,
                           char *err, size_t err_len);

/* CUDA C of the lanes of a KIR_REDUCE kernel (kir.h, "Reductions"): thread (threadIdx.x = lane
 * l < KIR_REDUCE_LANES, part q = blockIdx.x * blockDim.y + threadIdx.y) accumulates, in double,
 * the cells of part q at x positions l mod KIR_REDUCE_LANES, rows in order, x increasing, and
 * stores its accumulator for output o at a.buf[n_fields + o][q * KIR_REDUCE_LANES + l] (a.buf[f]
 * the fields of slot 0, their ghosts filled). Launch with blockDim (KIR_REDUCE_LANES, 32, 1) over
 * kir_reduce_parts parts. */
char *cuda_codegen_reduce(const kir_kernel *k, const cuda_options *opt, const char *name, char *err, size_t err_len);
/* CUDA C that folds those lanes: thread o (output o) combines, per part in order, lane 0 with
 * lanes 1, 2, ... and the parts in order into a.buf[n_outputs][o]; a.buf[o] holds output o's
 * lanes, a.n[0] the number of parts. The order is kir.h's: the interpreter's result, bit for bit.
 * Always in double: of opt (may be NULL) only the prelude member is read. */
char *cuda_codegen_reduce_fold(const kir_kernel *k, const cuda_options *opt, const char *name, char *err, size_t err_len);

/* CUDA C of a NaN/Inf check over the interior cells of one buffer (float when single). Launch
 * with cuda_stage_dims over the interior cells. Its argument struct pj_check_args is its own, in
 * its source whatever the prelude: a program has one check kernel. */
char *cuda_codegen_nan_check(int dim, int single, const char *name, char *err, size_t err_len);

/* Fills a cuda_args from a kir_launch whose buf[] entries are device addresses (CUdeviceptr
 * cast to void *), n_bufs of them, and n_params params; ghost may be NULL (all 0). Unused
 * entries are zero. Returns 0, or -1 with a message when over the limits. */
int cuda_args_from_launch(cuda_args *out, const kir_launch *l, int n_bufs, int n_params,
                          const int64_t ghost[3], char *err, size_t err_len);

/* Grid and block for a stage (or check) kernel over n[0] x n[1] x n[2] cells of a dim-D mesh:
 * x fastest, 2D/3D blocks. Returns -1 when the grid would exceed the device limits. */
int cuda_stage_dims(int dim, const int64_t n[3], unsigned grid[3], unsigned block[3]);
/* Grid and block for the fill of one side (one thread per ghost cell). */
int cuda_bc_fill_dims(const cuda_args *a, int side, unsigned grid[3], unsigned block[3]);

#endif
