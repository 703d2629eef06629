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
} pj_status;

/* A short English text for a status ("the run failed" ...); never NULL, static. */
PJ_API const char *pj_strerror(pj_status status);

typedef enum pj_backend { PJ_BACKEND_INTERP = 0, PJ_BACKEND_CPU = 1, PJ_BACKEND_CUDA = 2 } pj_backend;

typedef struct pj_problem pj_problem;
typedef struct pj_sim pj_sim;

/* Compiles `text` (len bytes; `name` is used in messages). On PJ_ERR_INPUT *diagnostics (if
 * not NULL) receives the errors as FILE:LINE:COL lines with carets (malloc'd; free it); on
 * PJ_ERR_MEMORY (memory ran out while compiling) they say "out of memory". */
PJ_API pj_status pj_problem_compile(const char *name, const char *text, size_t len, pj_problem **problem,
                                    char **diagnostics);
PJ_API void pj_problem_free(pj_problem *problem);
PJ_API int pj_problem_dim(const pj_problem *problem);
PJ_API int64_t pj_problem_cells(const pj_problem *problem);
PJ_API int pj_problem_field_count(const pj_problem *problem);
PJ_API const char *pj_problem_field_name(const pj_problem *problem, int field);
PJ_API int pj_problem_param_count(const pj_problem *problem);
PJ_API const char *pj_problem_param_name(const pj_problem *problem, int param);
PJ_API double pj_problem_dt(const pj_problem *problem);       /* from `time dt =`, 0 when absent */

typedef struct pj_sim_options {
    pj_backend backend;    /* default (zeroed options): the interpreter */
    int single;            /* float instead of double */
    int threads;           /* 0: all cores */
    int fast_math;         /* CPU back end: allow reassociation and FMA */
} pj_sim_options;

/* A simulation at t = 0 with the initial values. options may be NULL. PJ_ERR_UNAVAILABLE when the
 * back end cannot run here (PJ_BACKEND_CUDA without a GPU), PJ_ERR_BACKEND when its kernels do
 * not compile; the reason is in err. */
PJ_API pj_status pj_sim_create(const pj_problem *problem, const pj_sim_options *options, pj_sim **sim,
                               char *err, size_t err_len);
PJ_API void pj_sim_free(pj_sim *sim);
PJ_API pj_status pj_sim_set_param(pj_sim *sim, const char *name, double value);
/* Steps of at most dt until t_end exactly (the last one shortened), checking for NaN/Inf after
 * every step: PJ_ERR_RUN with the report in err. */
PJ_API pj_status pj_sim_advance(pj_sim *sim, double dt, double t_end, char *err, size_t err_len);
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
