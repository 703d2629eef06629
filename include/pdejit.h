/* pdejit.h — the public C API of pdejit.
 *
 *     pj_problem_compile   .pde text -> a checked, compiled problem (diagnostics on error)
 *     pj_sim_create        a simulation of it on a back end (interpreter, CPU JIT, GPU)
 *     pj_sim_set_param     change a param (never recompiles)
 *     pj_sim_advance       step to a time, landing on it exactly; NaN/Inf stop it
 *     pj_sim_get_field     read a field's values (a copy)
 *     pj_sim_field_view    a field where it lives, without a copy
 *     pj_term_compile      a text-defined cell or face expression, evaluated on the caller's arrays
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
    PJ_ERR_UNSUPPORTED = 7, /* the back end lacks a capability the problem or the call needs (the
                               message names both: "the cuda back end cannot ... yet") */
} pj_status;

/* A short English text for a status ("the run failed" ...); never NULL, static. */
PJ_API const char *pj_strerror(pj_status status);
/* The library's version, "MAJOR.MINOR.PATCH" (the project version of its CMakeLists.txt;
 * `pdejit --version` prints it); static. */
PJ_API const char *pj_version(void);

typedef enum pj_backend { PJ_BACKEND_INTERP = 0, PJ_BACKEND_CPU = 1, PJ_BACKEND_CUDA = 2 } pj_backend;
/* The back end called `name` ("interp", "cpu", "cuda"): 0, or -1 when there is none. */
PJ_API int pj_backend_by_name(const char *name, pj_backend *backend);
/* "interp, cpu, cuda" (static) */
PJ_API const char *pj_backend_names(void);
/* The time schemes pj_problem_compile_scheme and a file's `scheme =` take, from the compiler's
 * table, as `pdejit help run` lists them: "euler, rk2, rk3, rk4, rk23, rk45, beuler, cn, bdf2, imex"
 * (static). */
PJ_API const char *pj_scheme_names(void);

typedef struct pj_problem pj_problem;
typedef struct pj_sim pj_sim;

/* Compiles `text` (len bytes; `name` is used in messages). On PJ_ERR_INPUT *diagnostics (if
 * not NULL) receives the errors as FILE:LINE:COL lines with carets, then a line "N error(s)"
 * (malloc'd; free it); on PJ_ERR_MEMORY (memory ran out while compiling) they say "out of memory". */
PJ_API pj_status pj_problem_compile(const char *name, const char *text, size_t len, pj_problem **problem,
                             char **diagnostics);
/* As pj_problem_compile, with the time scheme of `scheme` (one of pj_scheme_names()) instead of
 * the file's when it is not NULL; an unknown scheme is PJ_ERR_INPUT with a diagnostic. */
PJ_API pj_status pj_problem_compile_scheme(const char *name, const char *text, size_t len, const char *scheme,
                                    pj_problem **problem, char **diagnostics);
/* As pj_problem_compile_scheme, with n_consts consts set from outside (`pdejit run --set` on a
 * const): const_names[i] takes const_values[i] instead of the expression written, wherever it is
 * used (the mesh included). A name that is not a const of the text is PJ_ERR_INPUT with a
 * diagnostic. */
PJ_API pj_status pj_problem_compile_consts(const char *name, const char *text, size_t len, const char *scheme,
                                           int n_consts, const char *const *const_names, const double *const_values,
                                           pj_problem **problem, char **diagnostics);
/* How many of b's kernels a has no identical kernel for (by canonical IR hash): what changing
 * consts between a and b makes compile anew; *total (may be NULL) receives b's kernel count.
 * -1 when out of memory. */
PJ_API int pj_problem_kernels_changed(const pj_problem *a, const pj_problem *b, int *total);
PJ_API void pj_problem_free(pj_problem *problem);
PJ_API int pj_problem_dim(const pj_problem *problem);
PJ_API int64_t pj_problem_cells(const pj_problem *problem);
/* The mesh along axis 0 (x), 1 (y) or 2 (z): cells (1 beyond the problem's dimension), length
 * (the domain's extent; 0 beyond the dimension) and origin (the lower corner, `x0 =`; 0 beyond the
 * dimension): cell i's centre is origin + (i + 1/2) * length / n. 0 for another axis. */
PJ_API int64_t pj_problem_n(const pj_problem *problem, int axis);
PJ_API double pj_problem_length(const pj_problem *problem, int axis);
PJ_API double pj_problem_origin(const pj_problem *problem, int axis);
/* The mesh's coordinates: 0 a grid (x, y, z), 1 cylindrical (r, then z), 2 spherical (r). */
PJ_API int pj_problem_geometry(const pj_problem *problem);
/* The cell centres along axis (x, the column --dump writes: origin + (i + 1/2) * length / n, or on
 * an axis with listed or stretched widths the middle of each cell's two faces) into out[0..n), and
 * with faces non-NULL the n + 1 face positions into faces[0..n]. 0, or -1 for an axis beyond the
 * problem's dimension (nothing written). */
PJ_API int pj_problem_centres(const pj_problem *problem, int axis, double *out, double *faces);
PJ_API int pj_problem_field_count(const pj_problem *problem);
PJ_API const char *pj_problem_field_name(const pj_problem *problem, int field);
PJ_API int pj_problem_param_count(const pj_problem *problem);
PJ_API const char *pj_problem_param_name(const pj_problem *problem, int param);
PJ_API int pj_problem_const_count(const pj_problem *problem);
PJ_API const char *pj_problem_const_name(const pj_problem *problem, int i); /* in the order written; NULL out of range */
PJ_API double pj_problem_dt(const pj_problem *problem);       /* from `time dt =`, 0 when absent */
PJ_API double pj_problem_until(const pj_problem *problem);    /* from `until =`, -1 when absent */
PJ_API int64_t pj_problem_steps(const pj_problem *problem);   /* from `steps =`, -1 when absent */
PJ_API int pj_problem_has_output(const pj_problem *problem);  /* 1 when the file has an output statement */
/* The file's monitors (`monitor NAME = integral(e) ...`), in the order written: how many, and the
 * name of monitor i (NULL when there is no monitor i; owned by the problem). */
PJ_API int pj_problem_has_monitor(const pj_problem *problem); /* 1 when the file has a monitor statement */
PJ_API int pj_problem_monitor_count(const pj_problem *problem);
PJ_API const char *pj_problem_monitor_name(const pj_problem *problem, int monitor);
/* The order-parameter arrays (`field eta[N]`), in the order declared: how many, the name of array
 * i (NULL out of range; owned by the problem) and its size N (0 out of range). Its members are
 * the fields NAME1 ... NAMEN (pj_problem_field_name). */
PJ_API int pj_problem_array_count(const pj_problem *problem);
PJ_API const char *pj_problem_array_name(const pj_problem *problem, int array);
PJ_API int pj_problem_array_size(const pj_problem *problem, int array);
/* The value of a param as the file sets it (after evaluating params that depend on others); NaN
 * when there is no such param. */
PJ_API double pj_problem_param(const pj_problem *problem, const char *name);

typedef struct pj_sim_options {
    pj_backend backend;    /* default (zeroed options): the interpreter */
    int single;            /* float instead of double */
    int threads;           /* 0: all cores */
    int fast_math;         /* CPU back end: allow reassociation and FMA */
    const char *solver_options; /* implicit schemes: options for PETSc ("-ksp_type cg -pc_type gamg"),
                                   after the problem's solver statement; NULL for none. They are
                                   this simulation's own (not PETSc's process-wide database). */
    uint64_t seed;         /* rand() and randn(): the key of their counter-based generator (0 by
                              default); the same seed gives the same numbers on every back end */
    int decompose;         /* 1: the mesh is split over the processes of MPI_COMM_WORLD (a program
                              started by mpirun; MPI and PETSc are started when needed): each holds
                              a block, pj_sim_create and every call below are then collective (all
                              processes make them, in the same order), fields and dumps are
                              gathered on rank 0, which alone writes outputs. Explicit, implicit
                              and steady schemes on the back ends that declare it (interp, cpu);
                              PJ_ERR_UNSUPPORTED on another, PJ_ERR_INPUT in a build without
                              PETSc. */
    const char *ranks_layout; /* with decompose: "PxQ" / "PxQxR" processes along x, y, z, or NULL
                                 to let PETSc choose (its -da_processors_x option applies) */
} pj_sim_options;

/* A simulation at t = 0 with the initial values. options may be NULL. PJ_ERR_UNAVAILABLE when the
 * back end cannot run here (PJ_BACKEND_CUDA without a GPU), PJ_ERR_UNSUPPORTED when it lacks a
 * capability the problem needs (an implicit scheme...), PJ_ERR_BACKEND when its kernels do
 * not compile; PJ_ERR_MEMORY, before anything is allocated, when the fields (every slot of the
 * scheme, halos included) do not fit in the memory available — the least of the host's
 * MemAvailable, the cgroup v2 or v1 limit's remainder and the address-space limit (ulimit -v)
 * less what is mapped, named in parentheses after the size; the device's free memory for PJ_BACKEND_CUDA — with "the problem
 * needs 38.4 GB (12 buffers of 3.2 GB); 22.9 GB are available" in err; the reason is in err. */
PJ_API pj_status pj_sim_create(const pj_problem *problem, const pj_sim_options *options, pj_sim **sim,
                        char *err, size_t err_len);
PJ_API void pj_sim_free(pj_sim *sim);
/* A decomposed simulation (pj_sim_options.decompose): this process's rank and the number of
 * processes (0 and 1 otherwise). */
PJ_API int pj_sim_rank(const pj_sim *sim);
PJ_API int pj_sim_processes(const pj_sim *sim);
/* A decomposed simulation: rank 0's n bytes at data copied to every process (collective);
 * nothing otherwise. */
PJ_API void pj_sim_broadcast(pj_sim *sim, void *data, size_t n);
/* A decomposed simulation: 1 when `flag` is nonzero on any process (collective); flag otherwise. */
PJ_API int pj_sim_any(pj_sim *sim, int flag);
/* A decomposed simulation's ghost exchanges on this process so far: how many, their wall seconds
 * (waits for the neighbours included) and the bytes it received; zeros otherwise. */
PJ_API void pj_sim_exchange_stats(const pj_sim *sim, int64_t *exchanges, double *seconds, double *bytes);
PJ_API pj_status pj_sim_set_param(pj_sim *sim, const char *name, double value);
/* The value a param has in the simulation now (set with pj_sim_set_param, or re-evaluated from
 * the params it depends on); NaN when there is no such param. */
PJ_API double pj_sim_param(const pj_sim *sim, const char *name);
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
/* Restarts. pj_sim_resume loads a checkpoint written by pj_sim_run (checkpoint_every) into a
 * simulation of the same problem: fields, time, step count; the next pj_sim_run continues that run
 * (no first snapshot; the output times after the checkpoint's) and ends with the same bits as a
 * run that was never stopped. PJ_ERR_INPUT, nothing changed, when the file is not a checkpoint, is
 * damaged, or was written on another grid, by another problem (fields, equations, conditions,
 * scheme), in another precision, with another seed or other param values (set them with
 * pj_sim_set_param before resuming; the message says which); the next pj_sim_run refuses
 * (PJ_ERR_INPUT) a dt other than the one the checkpoint's run had.
 * pj_sim_init_from_csv sets the fields named in a CSV of the dump format (`x[,y[,z]],NAME...`,
 * one row per cell) of the same grid; the others keep their initial values. */
PJ_API pj_status pj_sim_resume(pj_sim *sim, const char *checkpoint, char *err, size_t err_len);
PJ_API pj_status pj_sim_init_from_csv(pj_sim *sim, const char *csv, char *err, size_t err_len);
PJ_API double pj_sim_time(const pj_sim *sim);
PJ_API int64_t pj_sim_steps(const pj_sim *sim);
/* Copies the field's values (pj_problem_cells of them, x fastest) into out. */
PJ_API pj_status pj_sim_get_field(const pj_sim *sim, const char *name, double *out);
PJ_API pj_status pj_sim_set_field(pj_sim *sim, const char *name, const double *values);
/* The monitor called `name` (pj_problem_monitor_name) evaluated now, on the simulation's back end,
 * at its current state and time: integral(e) the sum of e times the cell volume, maxval(e),
 * minval(e), mean(e) the sum over the number of cells; the same numbers pdejit run writes to
 * monitor.csv. PJ_ERR_INPUT (nothing written to *value) when there is no such monitor,
 * PJ_ERR_BACKEND when the back end cannot evaluate it (reason in err). */
PJ_API pj_status pj_sim_monitor(pj_sim *sim, const char *name, double *value, char *err, size_t err_len);

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
 * on the calling thread; when pj_sim_advance runs on another thread meanwhile, its steps wait for
 * them (at most 100 ms, then they go on) and the swap happens between two of its steps (this call
 * waits for it), else at once. The fields keep their state,
 * params set with pj_sim_set_param keep their values, the scheme stays.
 * PJ_ERR_INPUT when the text has an error (*diagnostics, if not NULL, receives it as
 * "<redefine>:LINE:COL: error: ..." with the line and a caret; malloc'd, free it) or changes what a
 * running simulation holds (mesh, fields, params, slots; a stencil wider than its ghost layers);
 * PJ_ERR_BACKEND when the back end cannot compile the kernels, PJ_ERR_UNSUPPORTED when it cannot
 * swap (pj_sim_can_swap). On
 * any error the simulation runs on with its previous definition. The kernels swapped out are
 * released. pj_sim_redefine and pj_sim_advance are the only calls that may run concurrently on one
 * simulation, and only one pj_sim_redefine at a time. */
PJ_API pj_status pj_sim_redefine(pj_sim *sim, const char *text, char **diagnostics);

/* Hot swap of a whole problem (pdejit run --watch): `next`, compiled from an edited file, runs
 * from the next step boundary as pj_sim_redefine's text would (the same rules, the same
 * errors in err, the same threads). next must stay alive while it runs: once another swap has
 * replaced it, it may be freed (unless a pj_sim_run that began with it still runs, whose
 * options point into it); the kernels swapped out are released. On success *t_swap (may
 * be NULL) receives the time at which it took over. A decomposed simulation swaps on every
 * process at once: pj_sim_swap and pj_sim_redefine are then collective, called by every process
 * with the same text at the same step boundary (between steps, on the stepping thread). */
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
    int no_stability_check; /* 1: run an explicit scheme whatever its dt (see pj_sim_run) */
    FILE *monitors;         /* NULL, or a line per monitor time ("pdejit: monitor t = 0.5, step 50:
                               mass = 0.25, peak = 1") */
    double checkpoint_every;  /* > 0: a checkpoint (checkpoint.pjc) into out_dir at the first step
                                 boundary at or after each multiple of this simulated time, written
                                 atomically (temporary name, fsync, rename); the steps taken are the
                                 same with or without it */
    /* NULL, or called on the stepping thread at each monitor time, after monitor.csv's row: the
     * time, the step, and the n monitors' names and values in the order written (valid during the
     * call). A nonzero return stops the run there as pj_sim_interrupt does (PJ_INTERRUPTED). */
    int (*on_monitor)(void *ctx, double t, int64_t step, int n, const char *const *names, const double *values);
    void *monitor_ctx;
    /* NULL, or called on the stepping thread before the first step, at a step boundary whenever
     * progress_seconds of wall time (0.1 when <= 0) have passed since the last call, and when the
     * end is reached: the time, the run's end time and the steps this run took. A nonzero return
     * stops the run as pj_sim_interrupt does. */
    int (*on_progress)(void *ctx, double t, double t_end, int64_t steps);
    void *progress_ctx;
    double progress_seconds;
} pj_run_options;
typedef struct pj_run_result {
    int64_t steps;          /* steps taken in all */
    double t;               /* the time reached */
    double seconds;         /* wall time of the stepping, outputs excluded */
    int snapshots;
    char stopped[256];      /* "" or, when the file's `stop when` ended the run, why:
                               "peak < 0.01 at t = 0.35 (step 350)" */
} pj_run_result;
PJ_API pj_run_options pj_run_options_default(void);
/* Before the first step: PJ_ERR_INPUT when an explicit scheme's dt exceeds the stability limit
 * estimated from the linearised right-hand side at the current state ("dt = X exceeds the
 * explicit stability limit (about Y) of SCHEME; use a smaller dt or an implicit scheme"; unless
 * no_stability_check), when there is no time step or no end, when the end time is
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
    const char *stepping;   /* how the explicit steps ran on the host (temporal blocking, tiles,
                               threads: "temporal blocking, 5 steps a sweep in tiles of 43 rows of
                               y (120 steps blocked); 2 threads"), or NULL (GPU, implicit); owned
                               by the simulation, valid until the next call */
} pj_sim_info;
PJ_API void pj_sim_get_info(const pj_sim *sim, pj_sim_info *info);
/* Kernel i (0 <= i < the number that lists, which may be 0 when the back end keeps no list): its
 * name, whether it came from the cache, milliseconds. 0, or -1 when there is no kernel i. */
PJ_API int pj_sim_kernel(const pj_sim *sim, int i, const char **name, int *from_cache, double *ms);
/* Where the time of making the running problem's kernels went, in milliseconds: the front end and
 * the kernel IR passes of its compile, then summed over the kernels of the last prepare (those
 * compiled run concurrently, so the sums may exceed `wall`). Fields a back end does not report
 * are 0 (the interpreter compiles nothing; the GPU's compiler time is pj_sim_info.ms_compiler). */
typedef struct pj_compile_times {
    double front;     /* parsing, names and checks, lowering to kernel IR */
    double kir;       /* kernel IR passes: folding, sharing, fused multiply-adds, the scheme's stages */
    double ir;        /* LLVM IR emission (text, parse, verify; the optimised text kept in the cache) */
    double opt;       /* the optimisation pipeline */
    double codegen;   /* machine code generation (instruction selection to object bytes) */
    double load;      /* ORC: adding the objects and resolving their symbols */
    double cache;     /* the kernel cache's lookups and stores */
    double wall;      /* preparing all kernels (pj_sim_info.ms_prepare) */
    int kernels, compiled;
} pj_compile_times;
PJ_API void pj_sim_compile_times(const pj_sim *sim, pj_compile_times *t);

/* The implicit solver's work (implicit schemes and steady problems), counted since the start.
 * The steps are the scheme's own: under error control (adapt) pj_sim_advance and pj_sim_run take
 * as many as the controller chooses, and pj_sim_steps counts the same accepted steps. */
typedef struct pj_solver_stats {
    int64_t steps;           /* accepted time steps (1 for a steady solve) */
    int64_t rejected;        /* steps rejected (error control, or a Newton solve that failed) */
    int64_t newton, linear;  /* Newton and Krylov iterations in all (a linear problem: 1 "Newton"
                                iteration per solve, its one linear solve) */
    int last_newton, last_linear; /* in the last step (its last solve) */
    double last_residual;    /* the true 2-norm of the residual at the end of the last solve, the
                                number PETSc's -snes_monitor prints last (a linear solve's too);
                                NaN when it is not finite */
    int64_t jacobians;       /* Jacobian assemblies */
    double seconds_jacobian; /* spent in them */
    double last_dt;          /* the size of the last accepted step (0 for a steady solve) */
    int steady;              /* 1: a steady solve (Newton iterations, no time steps) */
    int adaptive;            /* 1: time steps chosen by error control */
    int unused_options;      /* options in the solver's database that no solver used (so far: some
                                are read only at the first solve; ask after the run) */
    const char *unused_option_names; /* their names, "-ksp_typo -foo" ("" when none); owned by the
                                simulation, valid until the next call */
    const char *note;        /* "" or a note on what the scheme does here that its name does not say
                                (imex with no implicit(...) term); owned by the simulation */
    int64_t pseudo_steps;    /* steady: pseudo-time steps of the continuation that took over where
                                Newton from the initial fields failed (0: Newton alone converged) */
    int64_t pseudo_newton;   /* steady: the Newton iterations within them (part of newton; the
                                rest are the failed first attempt's) */
} pj_solver_stats;
/* PJ_OK with the counts, or PJ_ERR_INPUT when the problem steps explicitly. */
PJ_API pj_status pj_sim_solver_stats(const pj_sim *sim, pj_solver_stats *stats);

/* An explicit embedded pair with adapt (rk23, rk45): steps accepted (pj_sim_steps) and rejected
 * by its error controller since the start, the last step accepted and the next it will try.
 * PJ_OK, or PJ_ERR_INPUT when the problem does not step so (any pointer may be NULL). */
PJ_API pj_status pj_sim_adaptive_stats(const pj_sim *sim, int64_t *accepted, int64_t *rejected, double *dt_last,
                                       double *dt_next);
/* For such a problem, fn(ctx, ...) after every step its controller tries (accepted or not): the
 * step's number (accepted steps before it), its start time, its dt and the weighted RMS norm of
 * its error estimate (accepted when <= 1). fn NULL: none. PJ_ERR_INPUT when the problem does not
 * step so. fn runs on the stepping thread, inside pj_sim_advance or pj_sim_run. */
PJ_API pj_status pj_sim_on_adaptive_step(pj_sim *sim,
                                         void (*fn)(void *ctx, int64_t step, double t, double dt, double error,
                                                    int accepted),
                                         void *ctx);

typedef struct pj_field_view {
    void *data;
    int64_t shape[3];      /* cells along x, y, z; 1 beyond the problem's dimension */
    int64_t strides[3];
    int elem_size;
    int on_device;
} pj_field_view;
PJ_API pj_status pj_sim_field_view(pj_sim *sim, const char *name, pj_field_view *view);

/* ---- terms: a text-defined cell or face expression evaluated on the caller's arrays ------------
 *
 * A term is an expression of the problem language in cell context (neighbour offsets u[1, 0],
 * lap, grad, div of fluxes, L R harm upwind ..., conditionals, x y z coordinates, params), over
 * input fields on a uniform grid, e.g. "D*lap(u) + (u > 0.5 ? k*u*(1 - u) : 0)". It is compiled
 * once, like a problem's kernel (LLVM on the CPU, or NVRTC for the GPU with on_device, through the
 * kernel cache), and evaluated at every cell of arrays the caller owns (x fastest, no ghost cells),
 * on the term's threads; the values
 * beyond the grid come from the boundary treatment of each axis. In 1D and 2D the kernel reads the
 * inputs from the caller's arrays and writes `out` directly (inputs read at neighbours, in 2D,
 * through small windows of rows with their ghost cells); in 3D, and for face terms, the inputs are
 * copied into buffers with ghost layers and the result copied out (on the GPU: always, device
 * to device).
 *
 * Boundaries: PJ_TERM_ZERO_FLUX (the default) mirrors the cells next to the wall into the ghost
 * layers (dn(u) = 0 on both sides: lap(u) and div(D*grad(u)) see no flux through the wall);
 * PJ_TERM_PERIODIC wraps around the axis. */
typedef enum pj_term_boundary { PJ_TERM_ZERO_FLUX = 0, PJ_TERM_PERIODIC = 1 } pj_term_boundary;
/* What a term evaluates: PJ_TERM_CELLS an expression in cell context at every cell (pj_term_eval);
 * PJ_TERM_FACES an expression in face context (docs/language.md section 6: `grad(u)` the normal
 * gradient, a bare field the face average, `L R LL RR harm upwind normal`, `boundary`, `wall(u)`,
 * x y z the face centre) on every face, boundary faces included, as div(...) of it would see them
 * (pj_term_eval_faces). */
typedef enum pj_term_at { PJ_TERM_CELLS = 0, PJ_TERM_FACES = 1 } pj_term_at;
typedef struct pj_term pj_term;
typedef struct pj_term_options {
    int dim;                       /* 1, 2 or 3 */
    int64_t n[3];                  /* cells along x, y, z (beyond dim: ignored) */
    double h[3];                   /* cell spacing along x, y, z (> 0; beyond dim: ignored) */
    int n_fields;                  /* the inputs, named as the expression names them */
    const char *const *fields;
    int n_params;                  /* params the expression names, with their initial values */
    const char *const *params;
    const double *param_values;
    pj_term_boundary boundary[3];  /* per axis; zeroed: zero flux */
    int threads;                   /* 0: all cores */
    /* func, flux and const statements the expression may use ("func f(s) = s*(1 - s)"), or NULL */
    const char *definitions;
    pj_term_at at;                 /* zeroed: a cell term */
    int on_device;                 /* 1: on the GPU (the cuda back end, device 0): every array passed
                                      to pj_term_eval, pj_term_eval_faces and pj_term_jacobian is a
                                      CUDA device address (a CUdeviceptr cast to a pointer) in
                                      device 0's primary context (where CuPy's arrays live);
                                      zeroed: host arrays, the CPU */
    int single;                    /* with on_device: the arrays are float (4 bytes a value) and the
                                      kernels compute in float (the cuda back end's single
                                      precision); PJ_ERR_INPUT without on_device */
} pj_term_options;
/* Compiles `expr` for the grid and inputs of `options`. PJ_ERR_INPUT on a bad expression or
 * definition (*diagnostics, if not NULL, receives "<term>:LINE:COL: error: ..." or
 * "<definitions>:LINE:COL: ...", with the line and a caret, then "N error(s)"; malloc'd, free it)
 * or a bad option (a name that is not an identifier or is given twice, a spacing that is not
 * positive, too few cells for the stencil: the message in *diagnostics); PJ_ERR_BACKEND when
 * the kernel does not compile; PJ_ERR_MEMORY. Coordinates: cell i's centre is (i + 1/2)·h.
 * With on_device: PJ_ERR_UNAVAILABLE when no GPU, CUDA driver or NVRTC is there ("no CUDA device:
 * libcuda.so.1 not found (no NVIDIA driver)" in *diagnostics); the term then holds device buffers
 * with ghost layers (one per input and output), freed by pj_term_free. threads is ignored. */
PJ_API pj_status pj_term_compile(const char *expr, const pj_term_options *options, pj_term **term,
                                 char **diagnostics);
PJ_API void pj_term_free(pj_term *term);
/* Evaluates the term at every cell: inputs[f] is field f's values (prod n cells, x fastest,
 * in the order of options.fields), out receives the term's (it may be one of the inputs); t is
 * the time the expression's `t` reads. PJ_ERR_INPUT for NULL arrays; PJ_ERR_RUN when a boundary
 * fill failed (message in err). Not to be called on one term from two threads at once.
 * A term compiled on_device takes device addresses (inputs and out, as for host arrays, x fastest,
 * no ghost cells): the inputs are copied device to device into its ghosted buffers, the kernels run
 * on the default stream, the result is copied device to device into out; nothing of the arrays
 * crosses to the host. It returns when out holds the result (it waits for the device); a device
 * error (an address that is not a device allocation of the right size, a failed launch) is
 * PJ_ERR_RUN with the driver's message. */
PJ_API pj_status pj_term_eval(pj_term *term, const double *const *inputs, double t, double *out, char *err,
                              size_t err_len);
/* Evaluates a face term (options.at = PJ_TERM_FACES) on every face: out[a], for each axis a below
 * dim, receives the faces normal to axis a, pj_term_face_count(term, a) values: the grid's cells
 * with one more along a (n[a] + 1), x fastest; face i along a lies between cells i - 1 and i (face
 * 0 and face n[a] are the boundary faces, where the ghost cells of the boundary treatment are the
 * outer side). Inputs, t and errors as pj_term_eval; PJ_ERR_INPUT on a cell term (and pj_term_eval
 * and pj_term_jacobian return it on a face term). */
PJ_API pj_status pj_term_eval_faces(pj_term *term, const double *const *inputs, double t, double *const *out,
                                    char *err, size_t err_len);
/* The number of faces normal to axis a of a face term, (n[a] + 1) times the cells along the
 * other axes; 0 for a cell term or an axis beyond its dim. */
PJ_API int64_t pj_term_face_count(const pj_term *term, int axis);
/* The derivative of the term at each cell with respect to input `field` at that same cell (the
 * diagonal of its Jacobian: what an implicit source term's linearisation takes), from the
 * symbolic derivative of the kernel (compiled once per field, through the kernel cache); zero
 * where the term does not depend on it. Arguments and errors as pj_term_eval, and PJ_ERR_INPUT
 * for an unknown field. On a term compiled on_device, inputs and out are device addresses as for
 * pj_term_eval and the derivative's kernel runs on the device (compiled on first use per field). */
PJ_API pj_status pj_term_jacobian(pj_term *term, const char *field, const double *const *inputs, double t,
                                  double *out, char *err, size_t err_len);
/* Changes a param (never recompiles). PJ_ERR_INPUT when the term has no such param. */
PJ_API pj_status pj_term_set_param(pj_term *term, const char *name, double value);
/* A term compiled on_device: 1, else 0. */
PJ_API int pj_term_on_device(const pj_term *term);
/* Device memory for a term's arrays (for callers without a GPU array library of their own):
 * `bytes` bytes on the term's device at *ptr (a device address; the caller owns it and frees it
 * with pj_term_device_free on the same term, before pj_term_free). PJ_ERR_INPUT on a host term or
 * for 0 bytes, PJ_ERR_MEMORY when the device has no room (the driver's message in err). */
PJ_API pj_status pj_term_device_alloc(pj_term *term, size_t bytes, void **ptr, char *err, size_t err_len);
PJ_API void pj_term_device_free(pj_term *term, void *ptr);
/* 1 when the term's kernel was loaded from the disk cache, 0 when it was compiled now. */
PJ_API int pj_term_from_cache(const pj_term *term);

#ifdef __cplusplus
}
#endif
#endif
