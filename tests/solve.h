/* solve.h — test helpers: compile a problem text, run it to its end on a back end, return the
 * final state of every field; the one table of cases every back end is checked against the
 * interpreter with (test_cases: every registered back end, the GPU's also emulated). */
#ifndef PJ_TEST_SOLVE_H
#define PJ_TEST_SOLVE_H
#include "program.h"
#include "engine.h"
#include "sim.h"
#include "pdejit.h"

typedef struct solved {
    pj_program *p;
    double **u;         /* per field: its final interior values (x fastest) */
    double *x[3];       /* cell centres of each cell along each axis */
    int64_t cells;
    double *mon0, *mon1; /* the monitors before the first step and at the end (NULL: none) */
    double t;
    int status;         /* driver_run's */
    char err[1024];
} solved;

/* BE_CPU_PREFETCH: the CPU back end with kir_launch.prefetch forced on (sim_set_prefetch), as
 * for a state larger than the last-level cache; BE_CUDA: the GPU back end (a real device, or
 * the stand-ins PDEJIT_NVRTC / PDEJIT_LIBCUDA point at) */
typedef enum { BE_INTERP, BE_CPU, BE_CPU_PREFETCH, BE_CUDA } backend_kind;

/* src compiled as file `name` (compile_text: "t.pde"); a test failure, with the diagnostics, when
 * it does not compile. */
pj_program *compile_named(const char *name, const char *src);
pj_program *compile_text(const char *src);
/* src (file `name`) through the public API: a CPU simulation on one thread with these solver
 * options (NULL: the defaults); a test failure, with the diagnostics, when it does not compile or
 * start. api_sim_end takes field "u" into u and the solver's counts into st (either NULL: not
 * wanted) and frees the simulation and its problem. */
typedef struct api_sim { pj_problem *problem; pj_sim *sim; } api_sim;
api_sim api_sim_start(const char *name, const char *src, const char *options);
void api_sim_end(api_sim *a, double *u, pj_solver_stats *st);
/* Sets "name=value,name=value" (NULL: none) on e; a test failure for an unknown name. */
void engine_set_params(engine *e, const char *sets);

/* Runs `src` to its end; `sets` is "name=value,name=value" or NULL. */
solved *solve(const char *src, backend_kind be, int single, int threads, const char *sets);
/* The same with `src` named `name` in diagnostics, on one thread in double, NaN checks every 64
 * steps, back end by name ("interp", "cpu", "cuda"); a test failure when the run fails. */
solved *solve_named(const char *name, const char *src, const char *backend);
void solved_free(solved *s);
double field_sum(const solved *s, int f);

/* A problem of the table: every sample, then problems that reach what the samples do not. */
typedef struct test_case {
    char name[64];
    char *text;
    const char *sets;      /* "name=value,..." applied to both sides, or NULL */
} test_case;
/* The table (malloc'd; test_cases_free): the explicit problems (the files of samples/ and the problems
 * of solve.c); test_cases_all adds the files of samples/implicit/, named "implicit/NAME". */
int test_cases(test_case **cases);
int test_cases_all(test_case **cases);
void test_cases_free(test_case *cases, int n);
/* Largest relative difference between a and b (n values), each relative to the larger magnitude
 * but at least 1e-6 of the largest value of either (NaN on both sides agrees); *at the cell. */
double field_diff(const double *a, const double *b, int64_t n, int64_t *at);
/* Steps program p (params `sets`) on the interpreter and on `backend` from the same initial
 * state, `steps` steps of the problem's dt (1e-3 when it has none), and compares every field: the
 * largest field_diff. The same options (precision...) on both sides; label names it in messages.
 * Fails the test when either side fails. */
double program_agree(const pj_program *p, const char *sets, const char *backend, const engine_options *o, int64_t steps,
                     const char *label);
/* The same on two engines of one program, created and initialised by the caller (ref: the
 * interpreter's), both stepped here. */
double engines_agree(engine *ref, engine *e, int64_t steps, const char *label);
/* Every field of a and b (engines of one program, stepped by the caller) equal to the bit; else
 * a test failure naming `what`, the field, the cell and both values. */
void engines_same_bits(engine *a, engine *b, const char *what);

/* Monitors. case_with_monitors: the text of case c followed by a monitor statement of five
 * reductions (integral, maxval, minval, mean, a neighbour difference) over its fields (malloc'd).
 * engines_monitors_agree: the monitors of two engines of one program (ref: the interpreter's)
 * after `steps` more steps: the largest relative difference (NaN on both sides agrees),
 * *bit_equal (may be NULL) counting the values equal to the bit. */
char *case_with_monitors(const test_case *c);
double engines_monitors_agree(engine *ref, engine *e, int64_t steps, int *bit_equal);

/* The ghost-fill plan (grid.h) on `backend`: the homogeneous fill is the affine difference
 * full(U) - full(0) (euler and rk4); with hooks (host memory only), a hook that mirrors one side
 * gives what dn = 0 there gives, called once per stage. */
void check_ghost_plan(const char *backend, const engine_options *base, int hooks);

#endif
