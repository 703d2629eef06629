/* cuda_backend.h — the GPU back end: a simulation whose fields live on an NVIDIA device.
 *
 * A cuda_sim holds the same sim_state as the host's sim (state.h: program, layout, plan, clock,
 * params) and steps through the same stepper, but every buffer is device memory, allocated once
 * in cuda_sim_create and freed in cuda_sim_destroy. Nothing crosses to the host while stepping:
 *
 *   init        all buffers zeroed (cuMemsetD8), then the program's KIR_INIT kernel on the device
 *   a step      the stepper's: per stage, the fill kernels of the stage's read slot at its time, one
 *               per side (x low, x high, y low, ... : the order of sim_fill_ghosts, each over the
 *               full extent of the other axes), then the stage kernel over the interior;
 *               the scheme's slot swap moves device addresses; the clock advances
 *   checks      the NaN/Inf check kernel per field (first bad cell, x fastest, as sim.c scans)
 *   outputs     cuda_sim_get_field copies one field's interior rows back
 *
 * Kernels: the program's kernels it is asked for by kind (cuda_sim_options.kernels; a run's: every
 * stage kernel and the reduction), the init kernel, one fill kernel per side and one check kernel,
 * each printed by backends/cuda/cuda_codegen.c, compiled by NVRTC for the device's compute
 * capability (a cubin; PTX when this NVRTC has no cubin target for it) and kept in the kernel
 * cache (runtime/cache.h) with its CUDA C beside it (".cu"). Key: ir (the canonical hash of the
 * kernel IR, or of the bc kernel and fill shape), kind, backend=cuda, target=sm_XY, nvrtc
 * version, driver version, precision, fast_math, codegen version, build (PJ_BUILD_HASH, as the
 * CPU back end's) and a hash of the CUDA C (so that a change in the printer can never load a
 * stale image). A run whose kernels are all in
 * the cache never loads NVRTC: the NVRTC version of the key comes from a memo in the cache keyed
 * by the library file's identity (path, size, mtime), written the first time NVRTC is loaded.
 *
 * Errors are return codes with messages (never printed, never exit). When no device can be
 * opened, cuda_sim_create fails with a message that starts with "no CUDA device: " followed by
 * cuda_device_open's reason. */
#ifndef PJ_CUDA_BACKEND_H
#define PJ_CUDA_BACKEND_H
#include <stdint.h>
#include <stdio.h>
#include "cache.h"
#include "cuda_driver.h"
#include "driver.h"
#include "program.h"

/* Bump when the generated CUDA C or the launch protocol changes for the same IR. */
#define PJ_CUDA_CODEGEN_VERSION "cuda-4" /* 4: noise stream 2 (compiler/noise.h) */
#define CUDA_BACKEND_NO_DEVICE "no CUDA device: "

typedef struct cuda_sim cuda_sim;

typedef struct cuda_sim_options {
    int single;            /* --precision single: float buffers and arithmetic */
    int fast_math;         /* NVRTC --use_fast_math (else --fmad=false: IEEE, no contraction) */
    const char *cache_dir; /* NULL: $PDEJIT_CACHE_DIR, else the XDG cache folder */
    int device;            /* ordinal, 0 by default */
    unsigned block[3];     /* stage block shape; zeros: cuda_stage_dims' (or $PDEJIT_CUDA_BLOCK "x,y,z") */
    const struct ghost_settings *ghosts; /* NULL: the program's conditions on every side (grid.h) */
    uint64_t seed;         /* rand() and randn(): the key of their generator (compiler/noise.h) */
    const pj_kernel_id *kernels; /* the program's kernels to compile (program.h), n_kernels of them,
                              besides init, fills and check; NULL: what a run needs
                              (program_run_kernels: the stages, the monitors' reduction) */
    int n_kernels;
} cuda_sim_options;

/* How the kernels were obtained (cuda_sim_prepare_stats). */
typedef struct cuda_prepare_stats {
    int kernels;           /* stage + init + fill + check kernels */
    int from_cache;        /* loaded from the disk cache without NVRTC */
    int compiled;          /* compiled with NVRTC (and stored) */
    int nvrtc_loaded;      /* 1 when NVRTC was opened by this sim */
    double ms_total;       /* the whole preparation (codegen, cache, NVRTC, module loads) */
    double ms_nvrtc;       /* inside nvrtcCompileProgram (and NVRTC's load) */
} cuda_prepare_stats;

/* Opens the device, compiles or loads every kernel of p, allocates every buffer on the device.
 * NULL with a message on failure; the message starts with CUDA_BACKEND_NO_DEVICE when there is no
 * usable device (exit status 2 in the command). p must outlive the sim. */
cuda_sim *cuda_sim_create(const pj_program *p, const cuda_sim_options *opt, char *err, size_t err_len);
/* Frees every device allocation and module, releases the device. */
void cuda_sim_destroy(cuda_sim *s);


/* Initial values at t = 0; resets t and the step count. 0, or -1 with a message. */
int cuda_sim_init(cuda_sim *s, char *err, size_t err_len);
/* One step of dt: launches only (asynchronous); a launch error is reported here or by the next
 * call that waits. 0, or -1 with a message. */
int cuda_sim_step(cuda_sim *s, double dt, char *err, size_t err_len);
/* Kernel `kernel` (an index cuda_sim_add_kernel returned) once, after the fill of `read_slot` at
 * time t, with buffer first_extra + i at extra[i] for this launch (device addresses of cell (0,0,0)
 * in the sim's layout: a jacobian kernel's outputs, which follow the slots it reads; those past
 * CUDA_MAX_BUFS are left out in the executor's launch). Launches only. 0, or -1 with a message. */
int cuda_sim_run_kernel(cuda_sim *s, int kernel, int read_slot, double t, double dt, int first_extra,
                        const cuda_ptr *extra, int n_extra, char *err, size_t err_len);
/* Compiles (or loads from the cache) one more kernel over the sim's buffers (stage-like: interior
 * cells; a jacobian kernel of derive.c); k need not outlive the call. Its index, or -1. */
int cuda_sim_add_kernel(cuda_sim *s, const kir_kernel *k, char *err, size_t err_len);
/* Sets the cell spacing of axes below the program's dim (instead of length / n), as sim_set_spacing. */
void cuda_sim_set_spacing(cuda_sim *s, const double h[3]);
/* Changes the block shape of the stage and init launches (x, y, z; 1 beyond the dimension);
 * 0, or -1 with a message when the shape is not launchable. For tuning (pdejit's gpu benchmark). */
int cuda_sim_set_block(cuda_sim *s, const unsigned block[3], char *err, size_t err_len);
/* The stage block shape in use. */
void cuda_sim_block(const cuda_sim *s, unsigned block[3]);
/* Waits for the device. 0, or -1 with the error of an earlier launch. */
int cuda_sim_sync(cuda_sim *s, char *err, size_t err_len);

/* First non-finite value in the state (fields in order, cells x fastest), found on the device:
 * 1 with report filled, 0 when all are finite, -1 on a device error (message in err). */
int cuda_sim_check_finite(cuda_sim *s, sim_nan_report *report, char *err, size_t err_len);
/* The counterpart of sim_take_nonfinite: 1 when the state holds a NaN or an infinity (the check
 * kernels run on the device; only one integer per field comes back), 0 when not, -1 on error. */
int cuda_sim_take_nonfinite(cuda_sim *s, char *err, size_t err_len);
/* The program's monitors at the current state and time, as sim_reduce gives them: reduced on the
 * device (cuda_codegen_reduce, then its fold), n_outputs doubles copied back. 0 or -1. */
int cuda_sim_reduce(cuda_sim *s, double *values, char *err, size_t err_len);

/* Copies buffer f's (slot * n_fields + field) interior values (x fastest) back as doubles (the
 * generic half's copy: runtime/simulation.h). 0, or -1 with a message. */
int cuda_sim_get_field(cuda_sim *s, int f, double *out, char *err, size_t err_len);
/* Replaces buffer f's interior values from doubles. 0, or -1. */
int cuda_sim_set_field(cuda_sim *s, int f, const double *in, char *err, size_t err_len);

int64_t cuda_sim_cells(const cuda_sim *s);
/* Device bytes this sim holds in buffers, and the number of allocations. */
size_t cuda_sim_device_bytes(const cuda_sim *s, int *n_allocs);
/* Bytes one step must move (per stage: each loaded (slot, field) once, each store), per cell. */
double cuda_sim_bytes_per_cell(const cuda_sim *s);
const cuda_prepare_stats *cuda_sim_prepare_stats(const cuda_sim *s);
/* "NVIDIA H200 (sm_90, driver 13000, NVRTC 13.0)" */
const char *cuda_sim_device_text(const cuda_sim *s);
cuda_device *cuda_sim_device(cuda_sim *s);

/* `pdejit emit FILE --cuda`: the CUDA C of every kernel of p (init, stages, fills, check,
 * reduction) as one translation unit that `nvcc -c` accepts: the definitions they share once
 * (cuda_codegen_prelude), then each kernel after a "// ---- kernel NAME" line. Each kernel is the
 * source NVRTC compiles at run time less that prelude. Needs neither a device nor NVRTC. 0, or -1
 * with a message. */
int cuda_backend_emit(const pj_program *p, int single, int fast_math, FILE *out, char *err, size_t err_len);

/* The cache key of one kernel (exposed for tests and `pdejit cache explain`): fills key (whose
 * strings live in kb) from its parts. nvrtc and driver are version strings. */
typedef struct cuda_key_buf {
    char ir[80], kind[16], target[16], nvrtc[32], driver[16], src[40];
    cache_key key;
} cuda_key_buf;
void cuda_backend_key(cuda_key_buf *kb, const char *ir, const char *kind, int cc, const char *nvrtc_version,
                      int driver_version, int single, int fast_math, const char *source);

#endif
