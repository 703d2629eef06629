/* engine.h — one interface over every back end: a simulation of a program on the interpreter,
 * the CPU JIT or the GPU, and everything a client does with it.
 *
 * A back end is a table of operations (backend_ops) that its own file fills: the interpreter
 * and the CPU JIT in host_engine.c (both over sim.c's host buffers), the GPU in cuda_backend.c.
 * Its simulations run on an executor (exec_ops, the second table below: the host sim, or a
 * device's), whose few typed operations are all the engine's generic half (runtime/simulation.c)
 * needs for the clock, params, fields, views, NaN reports and steps.
 * The run loop (driver.c), the command (cli/), hot swap and the public API (api.c) reach a back
 * end only through engine_* below, so adding a back end is filling one more table and naming it
 * in engine_backends (engine.c). Over MPI the engine's table is the decomposed engine's
 * (decomp_engine.c), which wraps the back end's.
 *
 *   engine_create      the fields allocated, every kernel compiled or loaded from the cache
 *   engine_init        initial values at t = 0
 *   engine_step        one step of the program's scheme (asynchronous on a device: engine_sync)
 *   engine_prepare     hot swap, part 1: another program's kernels, compiled on any thread
 *   engine_swap        hot swap, part 2: at a step boundary, that program takes over
 *
 * Errors are return codes with a message in the caller's buffer; nothing prints or exits. */
#ifndef PJ_ENGINE_H
#define PJ_ENGINE_H
#include <stdint.h>
#include <stdio.h>
#include "grid.h"
#include "program.h"
#include "state.h"

typedef struct engine_options {
    int single;            /* float buffers and arithmetic */
    int fast_math;         /* reassociation and contraction (CPU), --use_fast_math (GPU) */
    int threads;           /* host back ends: 0 all cores */
    const char *cache_dir; /* NULL: $PDEJIT_CACHE_DIR, else the XDG cache folder */
    int prefetch;          /* host back ends: 1 force row prefetching on, -1 off, 0 decide by size */
    const char *solver_options; /* implicit schemes: options for the solver library (PETSc), or NULL */
    ghost_settings ghosts; /* zeroed: the program's conditions on every side; else hooks and the
                              homogeneous fill (grid.h) */
    uint64_t seed;         /* rand() and randn(): the key of their generator (compiler/noise.h) */
    const grid_block *block; /* host back ends: NULL the whole mesh, else the block this process
                              holds (the decomposed engine sets it from `decomp`) */
    struct decomp *decomp; /* NULL, or the mesh decomposed over the processes of an MPI run
                              (runtime/decomp.h): the engine's table wraps the back end's
                              (decomp_engine.c), which holds this process's block, and the
                              calls below act on the whole mesh (fields gathered on rank 0,
                              flags and monitors reduced over every process) */
    const pj_kernel_id *kernels; /* the program's kernels to prepare (program.h), n_kernels of them;
                              NULL: what a run needs (program_run_kernels). Need not outlive create */
    int n_kernels;
    const double *spacing; /* NULL: each axis's length / cells; else the cell spacing the kernels see
                              along each axis below the dimension (pj_term: the caller's exact h) */
} engine_options;

/* How one kernel was obtained. */
typedef struct engine_kernel_info {
    char name[32];
    int from_cache;        /* 1 loaded from the disk cache, 0 compiled */
    double ms;
    /* where ms went (0 where a back end does not say): LLVM IR emission, the optimisation
       pipeline, machine code generation, the cache's lookup and store, loading the code (ORC) */
    double ms_ir, ms_opt, ms_codegen, ms_cache, ms_load;
} engine_kernel_info;

/* What a back end can say about itself after create (fields absent where they do not apply). */
typedef struct engine_info {
    const char *device;          /* "NVIDIA H200 (sm_90, ...)", or NULL for the host */
    const char *compiler;        /* "LLVM 14.0.6", or NULL when the back end compiles nothing */
    const char *warning;         /* the kernel cache's one warning, or NULL */
    int n_kernels, from_cache;   /* kernels prepared, and how many came from the disk cache */
    double ms_prepare;           /* compiling or loading them all */
    double ms_compiler;          /* of which inside the compiler (NVRTC), when known */
    const engine_kernel_info *kernels; /* per kernel, or NULL when the back end keeps no list */
    double bytes_per_cell;       /* the least memory traffic of one step, per cell */
    const char *stepping;        /* how the explicit steps ran on the host: threads, temporal
                                    blocking, tiles (pj_sim_info.stepping), or NULL */
} engine_info;

/* A field's values where they live, without a copy. Cell (i, j, k) is at
 * data + (i*stride[0] + j*stride[1] + k*stride[2]) * elem_size; valid until the next step (the
 * schemes swap buffers) or hot swap. */
typedef struct engine_view {
    void *data;
    int64_t shape[3];            /* cells along x, y, z (1 beyond the dimension) */
    int64_t stride[3];           /* in elements */
    int elem_size;               /* 8 double, 4 single */
    int on_device;               /* 1: data is a CUDA device address */
} engine_view;

/* Capabilities: what a back end declares it can do beyond stepping an explicit program
 * (backend_ops.caps). The engine checks them before it tries anything, and the API, the command
 * and the Python package ask engine_backend_can or engine_supports first: a missing capability is
 * one message that names the back end and the capability ("the cuda back end cannot solve
 * implicit schemes or steady problems yet (bdf2): use --backend cpu"), never "no device". */
typedef enum engine_cap {
    ENGINE_CAP_SWAP = 1u << 0,        /* hot swap: prepare, swap and release */
    ENGINE_CAP_IMPLICIT = 1u << 1,    /* implicit schemes and steady problems (runtime/implicit.h) */
    ENGINE_CAP_DECOMPOSE = 1u << 2,   /* a mesh split over MPI processes (runtime/decomp.h) */
    ENGINE_CAP_SECOND_BC = 1u << 3,   /* a second boundary condition, lap(u) = value */
    ENGINE_CAP_EXPLAIN = 1u << 4,     /* why each kernel hits or misses the cache (explain) */
    ENGINE_CAP_EMIT = 1u << 5,        /* its generated code (emit, with emit_flag) */
    ENGINE_CAP_MONITORS = 1u << 6,    /* the program's reductions (reduce) */
    ENGINE_CAP_DEVICE = 1u << 7,      /* a property, not a feature: the fields live in device memory
                                         (views are device addresses) and steps are asynchronous */
} engine_cap;

/* ---- executors ---------------------------------------------------------------------------
 *
 * What a back end's simulation runs on: the host sim (interp and cpu: backends/host/sim.c) or a
 * device's (backends/cuda/cuda_backend.c). The state (state.h: program, layout, plan, buffers,
 * clock, params) is common; an executor supplies only the typed operations below, on its handle
 * x, and the engine's generic half (runtime/simulation.c) does the rest alike for every back end:
 * the clock, the params, a field in and out, views, NaN reports and steps. */
enum { EXEC_CLOCK = 1, EXEC_PARAMS = 2 };

/* A kernel run over outer rows [begin, end) of launch L (exec_ops.eval), and a caller's shaping of
 * it: rows() gets each range the executor's threads take and runs the kernel over launches of its
 * own making (other buffer bases, a row at a time) through run(run_ctx, ...). */
typedef void (*exec_kernel_fn)(void *run_ctx, const kir_launch *L, int64_t begin, int64_t end);
typedef void (*exec_rows_fn)(void *ctx, exec_kernel_fn run, void *run_ctx, const kir_launch *L, int64_t begin,
                             int64_t end);

typedef struct exec_ops {
    int device;            /* 1: the buffers are device addresses and launches are asynchronous */
    /* the step (state.h): fill a slot's ghosts by the plan, launch a stage over the interior, the
       slots swapped, a sweep strategy (several steps at once) where the executor has one */
    stepper_ops step;
    /* the state's clock (EXEC_CLOCK) or params (EXEC_PARAMS) changed: refresh whatever mirrors
       them (launch arguments, boundary coefficients) */
    void (*refresh)(void *x, unsigned what);
    /* buffer b's (slot * n_fields + field) interior cells, x fastest, to or from doubles on the
       host. 0, or -1 with a message */
    int (*copy_out)(void *x, int b, double *out, char *err, size_t len);
    int (*copy_in)(void *x, int b, const double *in, char *err, size_t len);
    /* 1 when a stage stored a NaN or an infinity since the last call (the record cleared), 0
       when not, -1 with a message */
    int (*take_nonfinite)(void *x, char *err, size_t len);
    /* the first field of slot 0 holding a non-finite value, in order: its number, with the first
       such cell's interior index (x fastest) in *cell and its value in *value; -1 when all are
       finite, -2 with a message */
    int (*find_nonfinite)(void *x, int64_t *cell, double *value, char *err, size_t len);
    /* kernel `id` of the program (program.h: a stage, or a named kernel such as PJ_KERNEL_RHS or
       PJ_KERNEL_JACOBIAN, prepared by the executor) once over the interior at time t with step
       dt: its read slot's ghosts filled first (a named kernel's: slot 0); no swap, the clock
       unchanged. 0, or -1 with a message */
    int (*run)(void *x, pj_kernel_id id, double t, double dt, char *err, size_t len);
    /* Memory in the executor's space (a device's memory: with `device` set; NULL members on the
       host, whose memory is the caller's): `bytes` allocated (NULL with a message), freed, set
       to zero; `rows` rows of `width` bytes copied from src (spitch bytes apart) to dst (dpitch
       apart), both in that space. 0, or -1 with a message */
    void *(*alloc)(void *x, size_t bytes, char *err, size_t len);
    void (*free)(void *x, void *p);
    int (*zero)(void *x, void *p, size_t bytes, char *err, size_t len);
    int (*copy_rows)(void *x, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows,
                     char *err, size_t len);
    /* one more kernel of the program over the state's buffers (a named kernel not prepared at
       create, e.g. PJ_KERNEL_JACOBIAN, whose outputs follow the slots it reads) compiled or
       loaded: its handle for launch, or -1 with a message */
    int (*add_kernel)(void *x, pj_kernel_id id, char *err, size_t len);
    /* kernel `kernel` (add_kernel's) once at time t with step dt after the fill of slot 0, buffer
       first_extra + i at extra[i] (addresses of cell (0,0,0) in the state's layout) for this
       launch alone. 0, or -1 with a message */
    int (*launch)(void *x, int kernel, double t, double dt, int first_extra, void *const *extra, int n_extra, char *err,
                  size_t len);
    /* fields (below 64) whose ghosts the fills leave alone (skip 1: a term reads them from the
       caller's arrays) or fill again (0). NULL: every field is always filled */
    void (*skip_fill)(void *x, int f, int skip);
    /* kernel `id` once over the interior at time t with step dt after the fill of slot 0, on the
       executor's threads, the launch's noise counters as they are; rows NULL: over every outer
       row, else shaped by rows(ctx, ...) per range (exec_rows_fn). NULL on a device. 0, or -1 */
    int (*eval)(void *x, pj_kernel_id id, double t, double dt, exec_rows_fn rows, void *ctx, char *err, size_t len);
    /* waits for every launch (NULL: launches are synchronous). 0, or -1 with an earlier launch's error */
    int (*sync)(void *x, char *err, size_t len);
    /* the cell spacing and origin the kernels see (n, h, origin of a kir_launch) */
    const kir_launch *(*geometry)(void *x);
} exec_ops;

typedef struct backend_ops {
    const char *name;            /* "interp", "cpu", "cuda": what --backend takes */
    unsigned caps;               /* engine_cap bits: the members each needs are filled */
    const char *emit_flag;       /* what `pdejit emit --FLAG` prints this back end's code for, or NULL */
    const exec_ops *exec;        /* the executor its simulations run on (above) */
    /* The fields allocated and every kernel of p ready; p must outlive the simulation.
       *unavailable = 1 when the back end cannot run on this machine (no device). */
    void *(*create)(const pj_program *p, const engine_options *o, int *unavailable, char *err, size_t len);
    void (*destroy)(void *impl);
    /* the simulation's state, and in *x the executor's handle for exec's calls (both live as
       long as impl) */
    sim_state *(*state)(void *impl, void **x);
    int (*init)(void *impl, char *err, size_t len);
    /* one step and n steps of dt, where the back end steps otherwise than by its executor's
       stepper (an implicit solver); NULL: the stepper (state.h) over exec's step operations */
    int (*step)(void *impl, double dt, char *err, size_t len);
    int (*step_n)(void *impl, double dt, int64_t n, char *err, size_t len);
    /* what the decomposed engine (decomp_engine.c) does in place of the generic calls over the
       state and executor (runtime/simulation.c): gather and scatter fields through rank 0, agree
       on flags and NaN reports over every process. NULL in a back end's own table */
    int (*get_field)(void *impl, int f, double *out, char *err, size_t len);
    int (*set_field)(void *impl, int f, const double *in, char *err, size_t len);
    int (*take_nonfinite)(void *impl, char *err, size_t len);           /* 1: a stage stored a NaN/Inf */
    int (*check_finite)(void *impl, sim_nan_report *r, char *err, size_t len); /* 1: found, r filled */
    /* the program's monitors (its KIR_REDUCE kernel) at the current state and time, monitor i
       into values[i] (sim_reduce's meaning); with ENGINE_CAP_MONITORS */
    int (*reduce)(void *impl, double *values, char *err, size_t len);
    void (*info)(void *impl, engine_info *info);
    /* hot swap, with ENGINE_CAP_SWAP: prepare may run on any thread while the simulation steps;
       swap runs at a step boundary, after the engine checked that p2 fits the state
       (state_check_program), and on failure leaves everything as it was */
    void *(*prepare)(void *impl, const pj_program *p2, engine_info *info, char *err, size_t len);
    int (*swap)(void *impl, const pj_program *p2, void *prepared, char *err, size_t len);
    void (*release)(void *prepared);
    /* an implicit program's iteration counts (NULL or -1: none) */
    int (*solver_stats)(void *impl, implicit_stats *stats);
    /* of n steps, how many step_n takes in one sweep now (NULL or 1: one at a time) */
    int64_t (*block_steps)(void *impl, int64_t n);
    /* without a simulation: the generated code of every kernel (ENGINE_CAP_EMIT), and why each
       hits or misses the cache (ENGINE_CAP_EXPLAIN; returns 1 with the cache's warning in err
       when it has one) */
    int (*emit)(const pj_program *p, const engine_options *o, FILE *out, char *err, size_t len);
    int (*explain)(const pj_program *p, const engine_options *o, FILE *out, char *err, size_t len);
} backend_ops;

/* 1 when back end `be` has every capability of `caps`; 0 with "the NAME back end cannot WHAT
 * yet: use --backend OTHER" (the first that can) in err. */
int engine_backend_can(const backend_ops *be, unsigned caps, char *err, size_t len);
/* The capabilities program p needs (an implicit scheme, a second boundary condition). */
unsigned engine_needs(const pj_program *p);
/* 1 when back end `be` can run p; 0 with engine_backend_can's message, naming what in p needs it
 * ("(bdf2)", "(lap(u) = ...)"). */
int engine_supports(const backend_ops *be, const pj_program *p, char *err, size_t len);

/* Whether p's buffers (every slot and field, halos included) fit in the host memory available,
 * checked without allocating (`pdejit check`): 0, or -1 with "the problem needs ..." in err. */
int engine_memory_check(const pj_program *p, int single, char *err, size_t len);

/* Every back end, in the order --help lists them; NULL-terminated. */
extern const backend_ops *const engine_backends[];
/* The back end called `name`, or NULL. */
const backend_ops *engine_backend(const char *name);
/* "interp, cpu, cuda" */
const char *engine_backend_names(void);

typedef struct engine engine;

/* Why engine_create failed, beyond a plain error (*unavailable = 0). */
enum { ENGINE_UNAVAILABLE = 1, /* the back end cannot run here (no device) */
       ENGINE_TOO_LARGE = 2,    /* the buffers do not fit in the memory available (grid_memory_check) */
       ENGINE_UNSUPPORTED = 3 }; /* the back end lacks a capability p needs (engine_supports) */

/* A simulation of p on back end `be`, kernels ready, not yet initialised. NULL with a message on
 * failure; *unavailable (may be NULL) is set to ENGINE_UNAVAILABLE when the back end cannot run
 * here, ENGINE_TOO_LARGE when the problem does not fit in its memory, ENGINE_UNSUPPORTED when the
 * back end lacks a capability p (or a decomposed run) needs. */
engine *engine_create(const backend_ops *be, const pj_program *p, const engine_options *o, int *unavailable,
                      char *err, size_t len);
void engine_destroy(engine *e);

const backend_ops *engine_ops(const engine *e);
/* A decomposed run (engine_options.decomp): this process's rank and the number of processes
 * (0 and 1 otherwise). Every call below is then collective: every process makes it, in the same
 * order; engine_get_field fills `out` on rank 0 only (it may be NULL elsewhere), engine_set_field
 * takes `in` from rank 0; a failure on any process fails the call on every one, with its message. */
int engine_rank(const engine *e);
/* A decomposed run's blocks: this process's, and every process's by rank (NULL otherwise); and
 * field f of this process's block alone (interior values, x fastest; not collective). */
const grid_block *engine_block(const engine *e);
const grid_block *engine_blocks(const engine *e);
int engine_get_block_field(engine *e, int f, double *out, char *err, size_t len);
int engine_processes(const engine *e);
/* Agreement on a failure outside the engine (an output that rank 0 could not write): 1 on every
 * process when `failed` on any, err then holding the lowest failing rank's message; on one
 * process simply whether `failed`. */
int engine_agree(engine *e, int failed, char *err, size_t len);
/* n bytes of rank 0's data to every process (nothing on one process). */
void engine_bcast(engine *e, void *data, size_t n);
/* 1 on every process when `flag` is set on any (an interrupt). */
int engine_any(engine *e, int flag);
const pj_program *engine_program(const engine *e);
/* The grid (n, h, origin, strides of a host buffer; no buffers): for writers and reports. */
const kir_launch *engine_geometry(const engine *e);
int64_t engine_cells(const engine *e);
void engine_get_info(engine *e, engine_info *info);

int engine_init(engine *e, char *err, size_t len);
int engine_step(engine *e, double dt, char *err, size_t len);
int engine_sync(engine *e, char *err, size_t len);
/* n steps of dt, the state (slot 0) bit for bit as n calls of engine_step leave it; the host back
 * ends take several per sweep where temporal blocking applies and pays. Stops at the first
 * failure (engine_steps says how far it got). */
int engine_step_n(engine *e, double dt, int64_t n, char *err, size_t len);
/* How many of n steps engine_step_n would take in one sweep now (1: one at a time), for the run
 * loop: it hands the engine that many at once when nothing is due in between. */
int64_t engine_block_steps(engine *e, int64_t n);
double engine_time(engine *e);
int64_t engine_steps(engine *e);
/* Sets the time and the step count (a restart: runtime/checkpoint.h); the fields are set apart. */
void engine_set_clock(engine *e, double t, int64_t steps);
int engine_set_param(engine *e, const char *name, double value);
/* Every param at once (n_params values, as engine_params gives them), as engine_set_param of each
 * in turn leaves them, evaluated once. */
void engine_set_param_values(engine *e, const double *values);
const double *engine_params(engine *e);
int engine_get_field(engine *e, int f, double *out, char *err, size_t len);
int engine_set_field(engine *e, int f, const double *in, char *err, size_t len);
int engine_take_nonfinite(engine *e, char *err, size_t len);
int engine_check_finite(engine *e, sim_nan_report *r, char *err, size_t len);
int engine_view_field(engine *e, int f, engine_view *v);
/* An embedded pair with adapt (rk23, rk45: state.h's adaptive steps): the longest step the
 * controller may take (the explicit stability limit; <= 0 or infinity: none), and its counts:
 * accepted steps (engine_steps), rejected ones, the last step accepted and the next it tries.
 * engine_adaptive_stats returns -1 when the program does not step so. */
void engine_set_max_step(engine *e, double h);
int engine_adaptive_stats(engine *e, int64_t *accepted, int64_t *rejected, double *h_last, double *h_next);
/* Such steps stop short of their span after the step in progress once *flag is set (the run
 * loop's interrupt: state.h's stop); NULL: never. */
void engine_set_adaptive_stop(engine *e, atomic_int *flag);
/* fn after every try of such a step (state.h's on_try); NULL: none. */
void engine_on_adaptive_try(engine *e, void (*fn)(void *ctx, int64_t step, double t, double h, double error, int accepted),
                            void *ctx);
/* The implicit solver's iteration counts: 0, or -1 when the program steps explicitly. */
int engine_solver_stats(engine *e, implicit_stats *stats);
/* The program's monitors now: values[i] for monitor i (n_monitors entries). 0 (nothing done
 * without monitors), or -1 with a message. */
int engine_reduce(engine *e, double *values, char *err, size_t len);

/* Beyond a run, for the runtime's own modules (the stability check's scratch simulations): the
 * buffers' layout (grid.h); buffer b (slot * n_fields + field, any slot) where it lives, as
 * engine_view_field; the ghosts of `slot` filled by the plan at time t; kernel `id` of the program
 * run once at time t (exec_ops.run). 0, or -1 with a message (engine_view_buffer: no buffer b).
 * Not over MPI. */
const grid_layout *engine_layout(const engine *e);
int engine_view_buffer(engine *e, int b, engine_view *v);
int engine_fill(engine *e, int slot, double t, char *err, size_t len);
int engine_run(engine *e, pj_kernel_id id, double t, double dt, char *err, size_t len);
/* The executor's memory and kernels (exec_ops: alloc, free, zero, copy_rows, add_kernel, launch)
 * for terms on a device (runtime/term.c). -1 (NULL) with a message where the executor has none. */
void *engine_alloc(engine *e, size_t bytes, char *err, size_t len);
void engine_free(engine *e, void *p);
int engine_zero(engine *e, void *p, size_t bytes, char *err, size_t len);
int engine_copy_rows(engine *e, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows,
                     char *err, size_t len);
int engine_add_kernel(engine *e, pj_kernel_id id, char *err, size_t len);
int engine_launch(engine *e, int kernel, double t, double dt, int first_extra, void *const *extra, int n_extra,
                  char *err, size_t len);
/* For terms on the host (runtime/term.c): the ghost fill of field f skipped or not
 * (exec_ops.skip_fill), kernel `id` once shaped by rows (exec_ops.eval), and buffer b (any slot)
 * out as doubles, x fastest. 0, or -1 with a message. */
void engine_skip_fill(engine *e, int f, int skip);
int engine_eval(engine *e, pj_kernel_id id, double t, double dt, exec_rows_fn rows, void *ctx, char *err, size_t len);
int engine_get_buffer(engine *e, int b, double *out, char *err, size_t len);

/* Hot swap (ENGINE_CAP_SWAP). engine_can_swap: the back end has it. engine_prepare compiles p2's kernels
 * (any thread; the engine keeps stepping meanwhile); engine_swap, at a step boundary, checks that
 * p2 fits the running simulation (mesh, fields, params, slots, stencil within the ghost layers),
 * then runs p2 from the next step with the fields' state kept; on failure nothing changes and
 * the prepared kernels are released. p2 must outlive the simulation's use of it. Over MPI both
 * are collective (every process at the same step boundary, on the stepping thread): rank 0
 * compiles first, the others load from the kernel cache, and a refusal is every process's. */
int engine_can_swap(const engine *e);
void *engine_prepare(engine *e, const pj_program *p2, engine_info *info, char *err, size_t len);
int engine_swap(engine *e, const pj_program *p2, void *prepared, char *err, size_t len);
void engine_release(engine *e, void *prepared);

#endif
