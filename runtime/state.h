/* state.h — what every executor's simulation holds alike, and the one step protocol.
 *
 * A sim_state is the half of a simulation that does not depend on where the fields live: the
 * program, the buffers' layout and ghost-fill plan (grid.h), every (slot, field) buffer as an
 * address in the executor's memory space (a host pointer, or a CUDA device address), the clock,
 * the params (evaluated by kir_eval_params, the only evaluator) and the failure of a ghost hook.
 * An executor's simulation (sim.c on the host, cuda_backend.c on a device) embeds one, allocates
 * and frees the buffers, and steps through the stepper below with a table of three operations:
 *
 *   fill     the ghost cells of one slot at a time t
 *   stage    stage i of the scheme over the interior, at the stage's clock
 *   swapped  the slots were swapped (buffers moved): refresh whatever mirrors their addresses
 *
 *   stepper_step    per stage i: fill its read slot at t + t_frac*dt, run it (step, stage i + 1);
 *                   then the scheme's slot swap (Euler: slots 0 and 1 of every field with an eq);
 *                   then t += dt, steps += 1
 *   stepper_step_n  n steps: a sweep strategy (temporal blocking, tblock.c) takes as many as it
 *                   can in one sweep over the state, stepper_step the others
 *
 * Library code: never prints, never exits. */
#ifndef PJ_STATE_H
#define PJ_STATE_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "grid.h"
#include "program.h"

/* Where a non-finite value was found. */
typedef struct sim_nan_report {
    int64_t step;
    double t;
    int field;
    int64_t cell[3];      /* interior indices in the mesh (a block's own plus its first) */
    double x[3];          /* cell centre */
    double value;
} sim_nan_report;

/* An implicit solver's iteration counts, for --verbose and the benchmarks. */
typedef struct implicit_stats {
    int64_t steps;             /* accepted steps (time steps, or 1 for a steady solve) */
    int64_t rejected;          /* steps rejected by error control or a failed Newton solve */
    int64_t newton;            /* Newton iterations in all */
    int64_t linear;            /* Krylov iterations in all */
    int last_newton, last_linear;
    double last_residual;      /* the Newton residual norm at the end of the last solve */
    int64_t jacobians;         /* Jacobian assemblies */
    double seconds_jacobian;   /* in assembly (kernel and insertion) */
    double last_dt;            /* the last accepted step's size (0 for a steady solve) */
    int steady, adaptive;      /* a steady solve; time steps under error control */
    int n_unused;              /* options in the solver's database that no solver used */
    const char *unused;        /* their names, "-ksp_typo -pc_foo" (the solver's; "" when none) */
    const char *note;          /* "" or a note on what runs ("imex with no implicit(...) term ...") */
    int64_t pseudo_steps;      /* steady: pseudo-time steps of the continuation (0: Newton alone converged) */
    int64_t pseudo_newton;     /* steady: Newton iterations within them (of newton) */
} implicit_stats;


typedef struct sim_state {
    const pj_program *p;
    size_t esz;               /* bytes per value: 8 double, 4 single */
    grid_layout g;            /* the buffers' shape */
    ghost_plan plan;          /* how their ghost cells are filled */
    int nbuf;                 /* n_slots * n_fields: buffer b is slot b / n_fields, field b % n_fields */
    void **mem;               /* per buffer: its allocation (the executor's), moved with the slots */
    void **buf;               /* per buffer: the address of cell (0,0,0) in the executor's memory space */
    double t;
    int64_t steps;
    uint64_t seed;            /* rand() and randn(): the key of their generator */
    double *param;            /* n_params values */
    unsigned char *param_set; /* set by the user: kept when the params are evaluated again */
    int failed;               /* a ghost hook failed: `error` says why, and no more steps are taken */
    char error[512];
    /* adaptive explicit steps (an embedded pair with adapt: stepper_step) */
    double h_next;            /* the step the controller tries next; 0: the program's dt */
    double h_max;             /* no step longer (the explicit stability limit); <= 0: none */
    double h_last;            /* the last step accepted */
    int64_t rejected;         /* steps the controller rejected (steps counts those accepted) */
    /* called after every try (--verbose): its step number, start time, step, error norm, whether
       accepted; NULL: none */
    void (*on_try)(void *ctx, int64_t step, double t, double h, double error, int accepted);
    void *on_try_ctx;
    /* set (any thread): the adaptive steps stop after the step they are taking, short of the
       end of their span (the run loop's interrupt); NULL: none */
    const atomic_int *stop;
} sim_state;

/* The clock one stage launch sees. */
typedef struct stage_clock {
    double t, dt;
    int64_t step;             /* the step's number (0 for the first) */
    int stage;                /* 1 + the stage's number: the noise counter's stage code */
} stage_clock;

/* p's state on layout g (the executor's: its row alignment, its block) with the ghost settings
 * (NULL: the program's conditions) and the noise seed; buffers NULL, params at their defaults.
 * 0, or -1 out of memory (`who` starts the message). */
int state_init(sim_state *st, const pj_program *p, const grid_layout *g, const ghost_settings *ghosts, uint64_t seed,
               const char *who, char *err, size_t len);
/* Frees what state_init allocated (not the buffers: the executor's). */
void state_free(sim_state *st);

/* Param `name` set by the user (kept from then on), the params that depend on it evaluated
 * again: its number, or -1 when p has none of that name. */
int state_set_param(sim_state *st, const char *name, double value);
/* Every param at once (n_params values), all as set by the user: what state_set_param of each in
 * turn leaves, with one evaluation instead of one a param. */
void state_set_params(sim_state *st, const double *values);

/* Hot swap: 0 when p2 fits the running state (mesh, fields, params, scheme slots, a stencil
 * within the ghost layers), else -1 with the reason (nothing changes). state_adopt then makes
 * p2 the program: its ghost plan (the settings kept), its params where the user set none. */
int state_check_program(const sim_state *st, const pj_program *p2, char *err, size_t len);
int state_adopt(sim_state *st, const pj_program *p2);

/* The clock of stage i of a step that starts at t (step number `step`) with dt. */
stage_clock state_stage_clock(const pj_program *p, int i, double t, int64_t step, double dt);
/* The scheme's slot swap after a step (Euler: slots 0 and 1 of every field with an eq) applied to
 * a table of nbuf buffer numbers (map[b] = the buffer now in place b), or, with map NULL, to the
 * state's buffers. */
void state_swap_slots(sim_state *st, int *map);
/* Where a non-finite `value` of field f at interior cell idx (of the layout: a block's own)
 * lies, with the cell spacing h and origin the kernels see. */
void state_nan_report(const sim_state *st, int f, const int64_t idx[3], double value, const double origin[3],
                      const double h[3], sim_nan_report *report);

typedef struct stepper_ops {
    int (*fill)(void *x, int slot, double t, char *err, size_t len);
    int (*stage)(void *x, int i, const stage_clock *c, char *err, size_t len);
    void (*swapped)(void *x);  /* may be NULL */
    /* several steps in one sweep over the state: how many of n it took (0: none: it does not
       apply or pay now), -1 on a failure; the state's clock advanced by them. NULL: none */
    int64_t (*sweep)(void *x, double dt, int64_t n, char *err, size_t len);
    /* the interior of buffer b into out (cells, x fastest, as doubles); NULL: the buffers are
       host memory, read where they are (the adaptive steps' error, stepper_step) */
    int (*fetch)(void *x, int b, double *out, char *err, size_t len);
} stepper_ops;

/* One step of dt (see the top). 0, or -1 with a message (a failed fill or launch; st->failed
 * stops every later step).
 *
 * An embedded pair with adapt (p->adapt_order > 0) instead covers dt with the steps its error
 * controller chooses, landing on t + dt exactly: each try runs the stages at the step h, reads
 * the error buffer the last stage wrote (fetch) and takes its weighted RMS norm E over the cells
 * and the fields with an eq; E <= 1 accepts (the swap, t += h, steps += 1), else the state stays
 * as it was (slot 0 untouched: rejected += 1). The next h is PETSc's TSADAPTBASIC's (the implicit
 * schemes' controller): h * clip(safety * E^(-1/order), 0.1, 10), safety 0.9 (halved after a
 * rejection that follows one), never beyond h_max; within 1 % of the landing the step lands, and
 * with less than 2 h left it is the half of what is left (PETSc's matchstep). 11 rejections in a row
 * fail the step (PETSc's -ts_max_reject 10). */
int stepper_step(sim_state *st, const stepper_ops *ops, void *x, double dt, char *err, size_t len);
/* n steps of dt, slot 0 bit for bit as n calls of stepper_step leave it. Stops at the first
 * failure (st->steps says how far it got). */
int stepper_step_n(sim_state *st, const stepper_ops *ops, void *x, double dt, int64_t n, char *err, size_t len);

#endif
