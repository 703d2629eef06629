/* pdejit.h — the public C API of pdejit.
 *
 *     pj_problem_compile   .pde text -> a checked, compiled problem (diagnostics on error)
 *     pj_sim_create        a simulation of it on a back end (interpreter, CPU JIT, GPU)
 *     pj_sim_set_param     change a param (never recompiles)
 *     pj_sim_advance       step to a time, landing on it exactly; NaN/Inf stop it
 *     pj_sim_get_field     read a field's values (a copy)
 *     pj_sim_field_view    a field where it lives, without a copy
 *
 * Handles are opaque. Every function that can fail returns a pj_status and, where it says so,
 * a message in a caller's buffer. Nothing here prints or exits. Ownership: a pj_problem must
 * outlive the simulations made from it; free both with their _free functions.
 *
 * Link with libpdejit (pkg-config pdejit, or find_package(pdejit) -> pdejit::pdejit): it exports
 * the functions declared here, every one marked PJ_API, and no other symbol. */
#ifndef PDEJIT_H
#define PDEJIT_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exported from the shared library (which is compiled with -fvisibility=hidden). */
#if defined(PJ_BUILDING_LIBRARY) && defined(__GNUC__)
#define PJ_API __attribute__((visibility("default")))
#else
#define PJ_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pj_status {
    PJ_OK = 0,
    PJ_ERR_RUN = 1,        /* the run failed: a NaN/Inf (the message names step, time, field, cell) */
    PJ_ERR_INPUT = 2,      /* a bad problem text or a bad argument */
    PJ_ERR_BACKEND = 3,    /* a back end could not start or compile */
    PJ_ERR_MEMORY = 4,
    PJ_ERR_UNAVAILABLE = 5, /* the back end cannot run on this machine (no GPU) */
    PJ_INTERRUPTED = 6,    /* pj_sim_interrupt stopped pj_sim_run or pj_sim_advance at a step boundary */
} pj_status;

/* A short English text for a status ("the run failed" ...); never NULL, static. */
PJ_API const char *pj_strerror(pj_status status);

typedef enum pj_backend { PJ_BACKEND_INTERP = 0, PJ_BACKEND_CPU = 1, PJ_BACKEND_CUDA = 2 } pj_backend;
/* The back end called `name` ("interp", "cpu", "cuda"): 0, or -1 when there is none. */
PJ_API int pj_backend_by_name(const char *name, pj_backend *backend);
/* "interp, cpu, cuda" (static) */
PJ_API const char *pj_backend_names(void);

typedef struct pj_problem pj_problem;
typedef struct pj_sim pj_sim;

/* Compiles `text` (len bytes; `name` is used in messages). On PJ_ERR_INPUT *diagnostics (if
 * not NULL) receives the errors as FILE:LINE:COL lines with carets, then a line "N error(s)"
 * (malloc'd; free it); on PJ_ERR_MEMORY (memory ran out while compiling) they say "out of memory". */
PJ_API pj_status pj_problem_compile(const char *name, const char *text, size_t len, pj_problem **problem,
                             char **diagnostics);
/* As pj_problem_compile, with the time scheme of `scheme` ("euler", "rk2", "rk3", "rk4") instead of
 * the file's when it is not NULL; an unknown scheme is PJ_ERR_INPUT with a diagnostic. */
PJ_API pj_status pj_problem_compile_scheme(const char *name, const char *text, size_t len, const char *scheme,
                                    pj_problem **problem, char **diagnostics);
PJ_API void pj_problem_free(pj_problem *problem);
PJ_API int pj_problem_dim(const pj_problem *problem);
PJ_API int64_t pj_problem_cells(const pj_problem *problem);
PJ_API int pj_problem_field_count(const pj_problem *problem);
PJ_API const char *pj_problem_field_name(const pj_problem *problem, int field);
PJ_API int pj_problem_param_count(const pj_problem *problem);
PJ_API const char *pj_problem_param_name(const pj_problem *problem, int param);
PJ_API double pj_problem_dt(const pj_problem *problem);       /* from `time dt =`, 0 when absent */
PJ_API double pj_problem_until(const pj_problem *problem);    /* from `until =`, -1 when absent */
PJ_API int64_t pj_problem_steps(const pj_problem *problem);   /* from `steps =`, -1 when absent */
PJ_API int pj_problem_has_output(const pj_problem *problem);  /* 1 when the file has an output statement */
/* The value of a param as the file sets it (after evaluating params that depend on others); NaN
 * when there is no such param. */
PJ_API double pj_problem_param(const pj_problem *problem, const char *name);

typedef struct pj_sim_options {
    pj_backend backend;    /* default (zeroed options): the interpreter */
    int single;            /* float instead of double */
    int threads;           /* 0: all cores */
    int fast_math;         /* CPU back end: allow reassociation and FMA */
} pj_sim_options;

/* A simulation at t = 0 with the initial values. options may be NULL. PJ_ERR_UNAVAILABLE when the
 * back end cannot run here (PJ_BACKEND_CUDA without a GPU), PJ_ERR_BACKEND when its kernels do
 * not compile; PJ_ERR_MEMORY, before anything is allocated, when the fields (every slot of the
 * scheme, halos included) do not fit in the memory available — the host's MemAvailable or the
 * cgroup's remaining limit, the device's free memory for PJ_BACKEND_CUDA — with "the problem
 * needs 38.4 GB (12 buffers of 3.2 GB); 22.9 GB are available" in err; the reason is in err. */
PJ_API pj_status pj_sim_create(const pj_problem *problem, const pj_sim_options *options, pj_sim **sim,
                        char *err, size_t err_len);
PJ_API void pj_sim_free(pj_sim *sim);
PJ_API pj_status pj_sim_set_param(pj_sim *sim, const char *name, double value);
/* Steps of at most dt until t_end exactly (the last one shortened), checking for NaN/Inf after
 * every step: PJ_ERR_RUN with the report in err. PJ_ERR_INPUT, before any step, when t_end is not
 * finite or is more than 1e15 steps of dt away, or when dt is below the resolution of t_end.
 * PJ_INTERRUPTED when pj_sim_interrupt stopped it (err says at which step and time). */
PJ_API pj_status pj_sim_advance(pj_sim *sim, double dt, double t_end, char *err, size_t err_len);
/* Makes pj_sim_run or pj_sim_advance (running on another thread, or the next one called) stop at
 * the next step boundary and return PJ_INTERRUPTED, with every output complete and no dump
 * written; the flag is cleared when they return. Async-signal-safe (one atomic store): a
 * SIGINT handler may call it. The library installs no signal handler of its own. */
PJ_API void pj_sim_interrupt(pj_sim *sim);
PJ_API double pj_sim_time(const pj_sim *sim);
PJ_API int64_t pj_sim_steps(const pj_sim *sim);
/* Copies the field's values (pj_problem_cells of them, x fastest) into out. */
PJ_API pj_status pj_sim_get_field(const pj_sim *sim, const char *name, double *out);
PJ_API pj_status pj_sim_set_field(pj_sim *sim, const char *name, const double *values);

/* A field's current values where they live, without a copy: cell (i, j, k) is the element at
 * data + i*strides[0] + j*strides[1] + k*strides[2] (strides in elements of elem_size bytes:
 * 8 double, 4 single). On the GPU back end data is a CUDA device address (on_device = 1). Writes
 * through the view change the field. The view is valid until the next step or pj_sim_free:
 * the time schemes swap buffers, so take a new view after stepping. PJ_ERR_INPUT for an unknown
 * field. */
/* Hot swap: redefines func, flux, eq, const or boundary-condition statements of the running
 * problem from `text` (statements of the problem language, e.g. "func r(s) = 2*s\non left: u = 1"):
 * a later definition replaces the earlier one of the same func or flux, the eq of the same field,
 * the same const, the conditions of the same field on the same sides. The new kernels are compiled
 * on the calling thread; when pj_sim_advance runs on another thread meanwhile, the swap happens
 * between two of its steps (this call waits for it), else at once. The fields keep their state,
 * params set with pj_sim_set_param keep their values, the scheme stays.
 * PJ_ERR_INPUT when the text has an error (*diagnostics, if not NULL, receives it as
 * "<redefine>:LINE:COL: error: ..." with the line and a caret; malloc'd, free it) or changes what a
 * running simulation holds (mesh, fields, params, slots; a stencil wider than its ghost layers);
 * PJ_ERR_BACKEND when the back end cannot compile the kernels or cannot swap (cuda, for now). On
 * any error the simulation runs on with its previous definition. The kernels swapped out are
 * released. pj_sim_redefine and pj_sim_advance are the only calls that may run concurrently on one
 * simulation, and only one pj_sim_redefine at a time. */
PJ_API pj_status pj_sim_redefine(pj_sim *sim, const char *text, char **diagnostics);

/* Hot swap of a whole problem (pdejit run --watch): `next`, compiled from an edited file, runs
 * from the next step boundary as pj_sim_redefine's text would (the same rules, the same
 * errors in err, the same threads). next must outlive the simulation. On success *t_swap (may
 * be NULL) receives the time at which it took over. */
PJ_API pj_status pj_sim_swap(pj_sim *sim, const pj_problem *next, double *t_swap, char *err, size_t err_len);
/* 1 when the simulation's back end can swap kernels while it runs (pj_sim_redefine, pj_sim_swap). */
PJ_API int pj_sim_can_swap(const pj_sim *sim);

/* A whole run with the outputs of the problem file, as `pdejit run` makes it: steps of dt to the
 * end, landing exactly on the file's output times (snapshots in out_dir, in the file's formats)
 * and on the end, a NaN/Inf check every check_every steps (PJ_ERR_RUN names step, time, field
 * and cell), the final state as CSV in dump_path. Start from pj_run_options_default(). */
typedef struct pj_run_options {
    double dt;              /* <= 0: the file's */
    double until;           /* < 0: the file's (used when steps < 0) */
    int64_t steps;          /* >= 0: exactly this many steps of dt; < 0: the file's steps, or until */
    const char *out_dir;    /* snapshots, or NULL for none */
    const char *dump_path;  /* the final CSV, or NULL */
    int check_every;        /* >= 1 */
    FILE *progress;         /* a line every few seconds on long runs, or NULL */
    void (*between_steps)(void *ctx); /* NULL, or called after every step on the stepping thread */
    void *between_ctx;
} pj_run_options;
typedef struct pj_run_result {
    int64_t steps;          /* steps taken in all */
    double t;               /* the time reached */
    double seconds;         /* wall time of the stepping, outputs excluded */
    int snapshots;
} pj_run_result;
PJ_API pj_run_options pj_run_options_default(void);
/* Before the first step: PJ_ERR_INPUT when there is no time step or no end, when the end time is
 * not finite, when the run would take more than 1e15 steps or stop at more than 1e7 output times
 * (a dt or `output every` that underflowed), when the dump's folder does not take a file, or when
 * out_dir cannot be created or written (message in err). In a reused out_dir the files of a
 * previous series (snapshot_NNNNNN.csv/.vti, FIELD_NNNNNN.png, snapshots.csv, snapshots.pvd; no
 * other name) are removed first, said in a line on `progress`. Then PJ_ERR_RUN for a NaN/Inf, a
 * device error or an output that could not be written; PJ_INTERRUPTED when pj_sim_interrupt
 * stopped it (the snapshots written are complete, the dump is not written). */
PJ_API pj_status pj_sim_run(pj_sim *sim, const pj_run_options *options, pj_run_result *result, char *err, size_t err_len);

/* How the back end got ready: kernels compiled or loaded from the kernel cache. Strings are owned
 * by the simulation. */
typedef struct pj_sim_info {
    const char *backend;    /* "interp", "cpu", "cuda" */
    const char *device;     /* the GPU's description, or NULL */
    const char *warning;    /* the kernel cache's one warning (e.g. a read-only folder), or NULL */
    int kernels, from_cache;
    double ms_prepare;      /* compiling or loading them all */
    double ms_compiler;     /* of which inside NVRTC, when known */
} pj_sim_info;
PJ_API void pj_sim_get_info(const pj_sim *sim, pj_sim_info *info);
/* Kernel i (0 <= i < the number that lists, which may be 0 when the back end keeps no list): its
 * name, whether it came from the cache, milliseconds. 0, or -1 when there is no kernel i. */
PJ_API int pj_sim_kernel(const pj_sim *sim, int i, const char **name, int *from_cache, double *ms);

typedef struct pj_field_view {
    void *data;
    int64_t shape[3];      /* cells along x, y, z; 1 beyond the problem's dimension */
    int64_t strides[3];
    int elem_size;
    int on_device;
} pj_field_view;
PJ_API pj_status pj_sim_field_view(pj_sim *sim, const char *name, pj_field_view *view);

#ifdef __cplusplus
}
#endif
#endif
