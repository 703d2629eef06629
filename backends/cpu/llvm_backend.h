/* llvm_backend.h — the CPU back end: kernel IR -> LLVM IR -> host object code, loaded with ORC.
 *
 *   llvm_jit_create        one ORC LLJIT for the process (or per simulation), host target
 *   llvm_compile           kernel -> optimised LLVM IR (default<O3>) -> object bytes   (cache miss)
 *   llvm_load              object bytes -> callable kir_cpu_fn                          (miss or hit)
 *   llvm_unload            removes the code again (hot swap)
 *
 * A cache miss compiles exactly once: llvm_compile gives the object, which the caller stores and
 * then passes to llvm_load; a cache hit calls llvm_load only.
 *
 * The compiled function is a kir_cpu_fn (kir.h): it runs every interior cell whose outermost
 * index (z in 3D, y in 2D, x in 1D) is in [begin, end), the x loop innermost, with unit stride,
 * vectorised for the host. Semantics are kir_eval_scalar()'s and the interpreter's (interp.h),
 * bit for bit in double unless fast_math; KIR_STAGE, KIR_INIT and KIR_JACOBIAN kernels only
 * (boundary and param kernels are evaluated by the interpreter).
 *
 * Aliasing contract of the compiled code: the buffers named by different (slot, field) pairs a
 * kernel uses are either the same array or do not overlap, and an array that is written is read
 * at offset 0 only (in place: every output of a cell is computed before any is stored). The
 * inner loop is annotated parallel on that ground, so no run-time alias checks are emitted.
 *
 * Thread safety: llvm_compile may run on several threads at once with one llvm_jit (each call has
 * its own LLVMContext and TargetMachine); llvm_load and llvm_unload are serialised inside.
 * Errors never abort: functions return -1 (or NULL) with a message in err[err_len]. */
#ifndef PJ_LLVM_BACKEND_H
#define PJ_LLVM_BACKEND_H
#include <stddef.h>
#include "kir.h"

typedef struct llvm_jit llvm_jit;
typedef struct llvm_loaded llvm_loaded;

typedef struct llvm_options {
    int single;    /* buffers are float*, arithmetic in float, libm's expf ... */
    /* Lets LLVM reassociate, contract a*b+c into FMA, use reciprocals and drop the sign of
     * zero (flags reassoc nsz arcp contract afn on the arithmetic and math calls). NaN and Inf
     * keep their IEEE meaning (no nnan / ninf): comparisons and blow-up checks still work. */
    int fast_math;
    /* A kernel of more than this many operations is compiled as a large one (split into segment
     * functions, a lighter pipeline; see llvm_backend.c); 0: LLVM_LARGE_KERNEL. Tests lower it to
     * check the split code on small kernels. Not part of the cache key: the results agree. */
    int large_ops;
    /* 1: the final tier (loop unrolling, and loop strength reduction in code generation); 0: the
     * quick tier, without either (the same arithmetic, so the same results; about a third of
     * the compile time of a stage kernel, a few % slower to run). Large kernels have one tier. */
    int lsr;
} llvm_options;

#define LLVM_LARGE_KERNEL 400

/* Creates the JIT: an ORC LLJIT whose main JITDylib resolves libm and other process symbols.
 * Returns NULL with a message on failure. Free with llvm_jit_destroy (which also frees every
 * kernel still loaded). */
llvm_jit *llvm_jit_create(char *err, size_t err_len);
void llvm_jit_destroy(llvm_jit *jit);

/* "triple cpu features" of the code this JIT generates: part of the kernel cache key. Owned by
 * the JIT. */
const char *llvm_jit_target(const llvm_jit *jit);
/* The vector math library fast-math kernels call ("libmvec-avx512", "libmvec-avx2", "libmvec-sse",
 * or "none"): part of their cache key. */
const char *llvm_jit_vecmath(const llvm_jit *jit);
/* The LLVM version the back end was built against, e.g. "14.0.6". Static storage. */
const char *llvm_version_string(void);

/* Compiles kernel k into a function named `symbol` (printable ASCII without '"' or '\\'; unique
 * per distinct kernel and options, e.g. derived from the cache key). Any output pointer may be
 * NULL to skip that product:
 *   *object, *object_len  the relocatable object file (malloc'd, caller frees) for llvm_load
 *                         and the disk cache;
 *   *ir_text              the optimised LLVM IR, readable (malloc'd, caller frees);
 *   *times                where the call's wall time went, in milliseconds (llvm_times).
 * Returns 0, or -1 with a message (invalid kernel, kernel kind not supported, LLVM error). */
typedef struct llvm_times {
    double total;   /* the whole call */
    double ir;      /* LLVM IR emission: llvm_gen_ir's text, parsing and verifying it */
    double opt;     /* the optimisation pipeline (default<O3>, or the large kernels' lighter one) */
    double codegen; /* machine code generation: instruction selection to the object's bytes */
} llvm_times;
int llvm_compile(llvm_jit *jit, const kir_kernel *k, const llvm_options *opt, const char *symbol,
                 void **object, size_t *object_len, char **ir_text, llvm_times *times,
                 char *err, size_t err_len);

/* 1 when k compiles differently in the quick and the final tier (llvm_options.lsr), else 0. */
int llvm_has_tiers(const kir_kernel *k, const llvm_options *opt);
/* Adds an object made by llvm_compile (read from memory; copied, so the caller keeps `object`)
 * and looks up `symbol`. On success *fn is callable and *handle must later be passed to
 * llvm_unload. Loading a symbol that is already loaded in this JIT does not add the object
 * again: it returns the code already loaded (same symbol = same kernel, by the naming rule of
 * llvm_compile) with a second handle; the code goes away with the last handle. A bad object
 * is an error, never a crash of the process. */
int llvm_load(llvm_jit *jit, const void *object, size_t len, const char *symbol, kir_cpu_fn *fn,
              llvm_loaded **handle, char *err, size_t err_len);
/* Releases a handle from llvm_load; the last one removes the code (its resource tracker). The
 * function must not be running or called afterwards. NULL is ignored. */
void llvm_unload(llvm_jit *jit, llvm_loaded *handle);

#endif
