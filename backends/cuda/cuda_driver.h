/* cuda_driver.h — NVRTC and the CUDA Driver API, loaded with dlopen at run time.
 *
 * Nothing here links against CUDA: the binary builds and runs where CUDA is absent, and the
 * open calls then return NULL with a plain reason ("libcuda.so.1 not found (no NVIDIA
 * driver)", "the CUDA driver is a stub (cuInit returned 34)", "no CUDA device" ...).
 *
 *   cuda_nvrtc    the compiler: CUDA C -> cubin for sm_XX (or PTX for compute_XX when this
 *                 NVRTC cannot emit a cubin for that architecture; the driver JITs it)
 *   cuda_device   one device through its primary context: memory, modules, launches, timing
 *
 * Every call returns 0 or -1 with "call: error name: error string" in err; none prints, none
 * aborts, and an error path frees what it made (the NVRTC program and its log included).
 * Handles may be used from several threads: each device call makes the primary context current
 * on the calling thread first.
 *
 * Library search: NVRTC from $PDEJIT_NVRTC, then libnvrtc.so.13, libnvrtc.so, then
 * $CUDA_HOME/lib64 and /usr/local/cuda/lib64; the driver from $PDEJIT_LIBCUDA, then
 * libcuda.so.1 (the override is for tests: pointing it at the toolkit's stub must fail
 * cleanly). */
#ifndef PJ_CUDA_DRIVER_H
#define PJ_CUDA_DRIVER_H
#include <stddef.h>
#include <stdint.h>

/* ---- NVRTC ------------------------------------------------------------------------------ */

typedef struct cuda_nvrtc cuda_nvrtc;

/* Loads NVRTC; NULL with the reason when it is not installed. Free with cuda_nvrtc_close. */
cuda_nvrtc *cuda_nvrtc_open(char *reason, size_t reason_len);
/* The NVRTC libraries cuda_nvrtc_open tries, in order ($PDEJIT_NVRTC, the loader path,
 * $CUDA_HOME, /usr/local/cuda); empty entries are to be skipped. One list, so that whoever
 * needs to know which file would be loaded finds the same one. */
#define CUDA_NVRTC_CANDIDATES 8
typedef struct cuda_nvrtc_names {
    const char *name[CUDA_NVRTC_CANDIDATES];
    char home13[4096], home[4096];   /* the $CUDA_HOME paths name[] points into */
} cuda_nvrtc_names;
void cuda_nvrtc_names_init(cuda_nvrtc_names *n);
void cuda_nvrtc_close(cuda_nvrtc *nv);
/* "13.0" (owned by nv). */
const char *cuda_nvrtc_version(const cuda_nvrtc *nv);
/* Whether this NVRTC emits a cubin for sm_<sm> (e.g. 80, 90). */
int cuda_nvrtc_has_cubin(const cuda_nvrtc *nv, int sm);

/* Compiles one source for compute capability sm (major*10 + minor). fast_math: --use_fast_math,
 * else --fmad=false (IEEE results, no contraction). On success *image (malloc'd) and *len hold
 * the cubin, or the PTX when is_cubin is 0 (NUL-terminated text; len counts the NUL, as NVRTC
 * reports it). log (may be NULL):
 * the compile log, malloc'd, or NULL when empty; it is also set on a compile error, whose first
 * lines are copied into err. Returns 0 or -1. */
int cuda_nvrtc_compile(cuda_nvrtc *nv, const char *src, const char *name, int sm, int fast_math,
                       void **image, size_t *len, int *is_cubin, char **log, char *err,
                       size_t err_len);

/* ---- the device ------------------------------------------------------------------------- */

typedef struct cuda_device cuda_device;
typedef struct cuda_module cuda_module;
typedef struct cuda_event cuda_event;
typedef void *cuda_function;   /* a CUfunction, valid while its module is loaded */
typedef uint64_t cuda_ptr;     /* a CUdeviceptr */

/* Opens device `ordinal` (0 ...) through its primary context; NULL with the reason when there
 * is no usable device. Close with cuda_device_close (releases the primary context). */
cuda_device *cuda_device_open(int ordinal, char *reason, size_t reason_len);
void cuda_device_close(cuda_device *d);
const char *cuda_device_name(const cuda_device *d);
int cuda_device_cc(const cuda_device *d);              /* compute capability, e.g. 90 */
int cuda_device_driver_version(const cuda_device *d);  /* e.g. 13000 */
int cuda_device_sm_count(const cuda_device *d);
/* Bytes and number of allocations made through this handle and not yet freed. */
size_t cuda_device_live_bytes(const cuda_device *d, int *n_allocs);

int cuda_mem_info(cuda_device *d, size_t *free_bytes, size_t *total_bytes, char *err, size_t err_len);
int cuda_mem_alloc(cuda_device *d, size_t bytes, cuda_ptr *out, char *err, size_t err_len);
/* Frees p, which must come from cuda_mem_alloc on d; 0 is a no-op. */
int cuda_mem_free(cuda_device *d, cuda_ptr p, char *err, size_t err_len);
int cuda_memcpy_htod(cuda_device *d, cuda_ptr dst, const void *src, size_t bytes, char *err, size_t err_len);
int cuda_memcpy_dtoh(cuda_device *d, void *dst, cuda_ptr src, size_t bytes, char *err, size_t err_len);
int cuda_memcpy_dtod(cuda_device *d, cuda_ptr dst, cuda_ptr src, size_t bytes, char *err, size_t err_len);
/* `height` rows of `width` bytes from src (rows src_pitch bytes apart) to dst (dst_pitch apart),
 * device to device, in stream order (cuMemcpy2D where the driver has it, else a copy per row). */
int cuda_memcpy_dtod_2d(cuda_device *d, cuda_ptr dst, size_t dst_pitch, cuda_ptr src, size_t src_pitch,
                       size_t width, size_t height, char *err, size_t err_len);
int cuda_memset8(cuda_device *d, cuda_ptr dst, unsigned char value, size_t bytes, char *err, size_t err_len);

/* Loads a cubin or PTX image (copied by the driver; the caller keeps image). */
cuda_module *cuda_module_load(cuda_device *d, const void *image, char *err, size_t err_len);
void cuda_module_unload(cuda_module *m);
int cuda_module_function(cuda_module *m, const char *name, cuda_function *out, char *err, size_t err_len);

/* Launches f on the default stream with the kernel parameters args (as cuLaunchKernel). */
int cuda_launch(cuda_device *d, cuda_function f, const unsigned grid[3], const unsigned block[3],
                void **args, char *err, size_t err_len);
/* Launches f whose one parameter is a struct of `size` bytes at arg (cuda_args ...). */
int cuda_launch_struct(cuda_device *d, cuda_function f, const unsigned grid[3], const unsigned block[3],
                       const void *arg, size_t size, char *err, size_t err_len);
/* Waits for all work on the device; reports errors of earlier launches. */
int cuda_synchronize(cuda_device *d, char *err, size_t err_len);

/* Events for timing on the default stream. */
cuda_event *cuda_event_create(cuda_device *d, char *err, size_t err_len);
void cuda_event_destroy(cuda_event *e);
int cuda_event_record(cuda_event *e, char *err, size_t err_len);
/* Milliseconds between two recorded events (waits for `end`). */
int cuda_event_elapsed(cuda_event *start, cuda_event *end, float *ms, char *err, size_t err_len);

#endif
