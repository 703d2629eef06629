/* implicit_internal.h — what the implicit solver module's files share (PETSc builds only; the
 * interface is implicit.h). With PJ_IMPLICIT_MODULE they are the module libpdejit-implicit.so
 * (implicit_module.h) with decomp.c, and every function here is hidden inside it.
 *
 *   implicit.c           the solver: the DMDA, TS and SNES set up from the program and the options,
 *                        pdejit's defaults, the time-stepping callbacks and the preconditioner's
 *                        choices per step, stepping and steady solves, the module's entry
 *   implicit_jacobian.c  F and the Jacobian on PETSc's vectors: the state between vectors and the
 *                        state's slots, the ghost rule measured (alpha) and folded onto the interior,
 *                        assembly, reuse and diagonal updates, implicit_check_jacobian
 *   implicit_mg.c        the cell-centred multigrid hierarchy for PCMG and when it is used
 *   implicit_steady.c    steady solves: Newton, and pseudo-transient continuation where it fails
 *   implicit_conserve.c  which fields keep their sum, and the linear solves' projection that keeps it */
#ifndef PJ_IMPLICIT_INTERNAL_H
#define PJ_IMPLICIT_INTERNAL_H
#include "implicit.h"
#include "decomp.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "derive.h"
#include "diag.h"
#include "driver.h"
#include "grid.h"

#include <petscdmda.h>
#include <petscsnes.h>
#include <petscts.h>
#ifdef PJ_IMPLICIT_MODULE
/* Built as the module libpdejit-implicit.so (implicit_module.h): the library's functions come
 * from its host table, and the two small helpers of diag.c and driver.c are its own. */
#include <stdarg.h>
#include <time.h>
#include "implicit_module.h"
#include "pj_build_id.h"
#define host implicit_module_host
#define program_jacobian(p, err, len) host->program_jacobian(p, err, len)
#define diag_set module_diag_set
#define driver_now module_now
static inline double module_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#endif

struct implicit_solver {
    simulation m;          /* the simulation solved: its state (program, layout, buffers in host
                              memory, clock, params) and its executor (kernel runs, ghost fills) */
    const pj_program *p;
    const pj_jacobian *jac; /* the program's: its kernel (PJ_KERNEL_JACOBIAN) and entries */
    int nf;                /* fields of the program */
    int dof;               /* fields with an equation: the unknowns per cell */
    int *unknown;          /* [field] its place among the unknowns, or -1 */
    int *field_of;         /* [dof] the field */
    int64_t n[3];          /* the mesh's cells */
    int64_t first[3];      /* this block's first cell in the mesh (0 on one process) */
    decomp *d;             /* NULL on one process */
    int nblocks, procs[3]; /* the processes (1 without a decomp) and their layout */
    const grid_block *blocks; /* [rank] every process's block (&own on one process) */
    grid_block own;
    int64_t *start[3];     /* per axis, the first cell of each column of processes; [procs] = n */
    PetscInt *offset;      /* [rank] the global index of its block's first unknown */
    PetscInt own_offset;   /* this process's */
    DM da;
    Vec X, R;
    Vec D;                 /* scratch: the shift on the diagonal (add_shift) */
    int n_alg;             /* unknowns with an algebraic equation (eq 0 = EXPR): no mass term */
    int *alg;              /* [dof] 1 for those */
    Vec M;                 /* n_alg: the mass's diagonal, 0 on their rows and 1 elsewhere */
    Mat J;
    PetscOptions opts;     /* this solver's options (the solver statement, --solver-options) */
    TS ts;                 /* time steps */
    SNES snes;             /* steady: F(U) = 0 */
    TS pts;                /* steady: pseudo-transient continuation where Newton alone fails (TSPSEUDO) */
    DM pda;                /* pts's DM: a clone of da (its own DMTS and DMSNES, da's are snes's) */
    Vec X0;                /* steady: the initial fields, where continuation starts from */
    int pseudo_off;        /* steady: -pj_pseudo false: Newton alone */
    PetscReal stall[6];    /* steady: Newton's last residual norms (newton_stall_test) */
    double *alpha;         /* [dof][H + 2][elems]: per field, beta (the ghosts' constant part), the
                              all-ones fill less beta, then alpha_k for k = 0 .. H-1 (measure_alpha) */
    int alpha_valid, alpha_const;
    int linear;            /* F is affine in the unknowns (jac->reads): one linear solve a step */
    int jac_reuse;         /* ... and its Jacobian the same at every time and state: assembled once */
    Mat Jc;                /* jac_reuse: the assembled Jacobian (J itself is scaled and shifted by TS) */
    int jc_valid;
    int diag_update;       /* only the diagonal changes (jac->offdiag_reads): Jc plus the diagonal's change */
    Vec Djc;               /* diag_update: the diagonal coefficients' sum at Jc's assembly */
    Vec Voff;              /* cg: per row, the sum of |J_ij| off the diagonal (gershgorin_bound) */
    int direct;            /* a direct solve (LU), pdejit's default on a 1D mesh (direct_defaults) */
    int exact_pattern;     /* the matrix has the Jacobian's own pattern, not the DMDA's (jacobian_matrix) */
    int wide;              /* a wide system's defaults: a matrix-free operator, the Jacobian lagged (wide_defaults) */
    int cg;                /* conjugate gradients with ICC, pdejit's default for a symmetric Jacobian */
    int mg_auto;           /* cg: multigrid is one of choose_pc's choices (one process, 3 levels or more) */
    int pc_auto;           /* cg: the preconditioner choose_pc set: ICC(1) 0, multigrid 1 (mg_auto), Jacobi 2 */
    double gershgorin;     /* cg: max over rows of J_ii + sum |J_ij| (i != j), of the last Jacobian */
    double dmax;           /* max |J_ii| of the last Jacobian (choose_pc) */
    Vec Dneg;              /* jac_reuse: -diag(Jc) */
    int b_shifted;         /* jac_reuse: J holds shift' I - Jc (ts_ijacobian: only its diagonal changes) */
    int tol_auto;          /* cg, linear, adapt: the linear solve stops at the step's accuracy (step_tolerance) */
    double ts_atol, ts_rtol; /* tol_auto: the step controller's tolerances */
    double lin_fraction;     /* tol_auto: the fraction of them a linear solve may leave (-pj_lin_fraction) */
    PetscReal ksp_atol;    /* tol_auto: the linear solve's absolute tolerance otherwise (Newton's) */
    PetscReal shift;       /* the shift of the last time-step Jacobian, shift M - dF/dU (ts_ijacobian) */
    int n_conserved;       /* unknowns whose sum over the mesh the steps keep (implicit_conserve.c) */
    int *conserved;        /* [dof] 1 for those */
    PetscScalar *cons_add; /* [dof] scratch of the projection */
    PetscReal *cons_abs;   /* [dof] scratch of the detection */
    Vec cons_e, cons_z;    /* the projection under a matrix-free operator: 1 on a conserved field, A times it */
    PetscReal mf_shift;    /* that operator's shift, e^T A e / N, measured once a step try (mf_t, mf_dt, mf_step) */
    PetscReal mf_t, mf_dt;
    PetscInt mf_step;
    double *jc_params;     /* the params at the last Jacobian (a change makes Jc and alpha stale) */
    PetscInt *cols;        /* one row's columns (global indices) and values */
    PetscScalar *vals;
    implicit_stats st;
    PetscReal history[64]; /* the last solve's residual norms */
    PetscReal fnorm;       /* the last norm SNES's monitors were given (record_norm): the true final
                              residual norm of a solve, a linear one's too (SNESKSPONLY computes it
                              only for monitors) */
    int fnorm_set;         /* record_norm was called in the current solve */
    int hide_hypre, hide_mg; /* -pc_hypre_type, -pc_mg_galerkin came from the solver statement's pc
                                (not the user's options): not reported unused (implicit_get_stats) */
    char unused[512];      /* implicit_get_stats: the options no solver used, "-a -b" */
    char note[256];        /* "" or what the run does that its scheme's name does not say */
    double t_fd;           /* the time of implicit_check_jacobian's differences */
    char error[512];       /* a failure inside a callback */
};

/* The simulation's layout (its state's), and its clock set after a step: the executor refreshed
 * (what simulation_set_clock does, which is the library's). */
static inline const grid_layout *solver_layout(const implicit_solver *q) { return &q->m.st->g; }
static inline void solver_set_clock(implicit_solver *q, double t, int64_t steps)
{
    q->m.st->t = t;
    q->m.st->steps = steps;
    q->m.ops->refresh(q->m.x, EXEC_CLOCK);
}

#define CHECK(call, what)                                                                                          \
    do {                                                                                                           \
        PetscErrorCode e_ = (call);                                                                                \
        if (e_) {                                                                                                  \
            petsc_message(e_, what, err, len);                                                                     \
            goto fail;                                                                                             \
        }                                                                                                          \
    } while (0)

/* implicit.c */
/* "WHAT: PETSc error N (its text: the first line of the error's detail)" */
void petsc_message(PetscErrorCode e, const char *what, char *err, size_t len);

/* implicit.c: the callbacks and defaults that implicit_steady.c's pseudo-time steps share */
PetscErrorCode ts_ifunction(TS ts, PetscReal t, Vec U, Vec Udot, Vec F, void *ctx);
PetscErrorCode ts_ijacobian(TS ts, PetscReal t, Vec U, Vec Udot, PetscReal shift, Mat A, Mat B, void *ctx);
PetscErrorCode apply_defaults(PetscOptions o, SNES snes);
PetscErrorCode use_options(implicit_solver *q, SNES snes);
PetscErrorCode record_norm(SNES snes, PetscInt it, PetscReal fnorm, void *ctx);
/* The last solve's iterations and true final residual norm into q->st.last_* */
void count_snes(implicit_solver *q, SNES snes);

/* implicit_steady.c */
/* A steady solve: Newton from the initial fields, then, where it fails, pseudo-transient
 * continuation from them. 0, or -1 with a message. */
int steady_solve(implicit_solver *q, char *err, size_t len);
/* The steady solve's own options (read when the solver is made, so that none goes unused). */
PetscErrorCode steady_setup(implicit_solver *q);

/* implicit_conserve.c */
/* The fields whose equations keep their sum (divergence form, no-flux or periodic sides) found,
 * and the projection that keeps it in every linear solve of a time step set on snes's KSP, unless
 * the options say -pj_conserve false. */
PetscErrorCode conserve_setup(implicit_solver *q, SNES snes);

/* implicit_jacobian.c */
/* PETSc vector <-> slot buffers (interior cells of the fields with an equation). */
void vec_to_slot(implicit_solver *q, const PetscScalar *x, int slot);
void slot_to_vec(implicit_solver *q, int slot, PetscScalar *x);
/* F(U) at time t into F: the rhs kernel `part` (PJ_KERNEL_RHS_IMPLICIT, PJ_KERNEL_RHS_EXPLICIT). */
PetscErrorCode eval_stage(implicit_solver *q, pj_kernel_id part, double t, Vec U, Vec F);
PetscErrorCode eval_rhs(implicit_solver *q, double t, Vec U, Vec F);
/* A param changed since the last Jacobian: the kept Jacobian and the ghost rule are stale. */
void check_params(implicit_solver *q);
/* The Jacobian at (t, U) into B: assembled, copied from its first assembly, or its diagonal updated. */
PetscErrorCode jacobian_into(implicit_solver *q, double t, Vec U, Mat B);
/* The DMDA's matrix with the Jacobian's own pattern (its entries, folded ghosts, the diagonal). */
PetscErrorCode jacobian_matrix(implicit_solver *q, Mat *J);
/* 1 when the ghost rule's dependence on the interior stays the same for the whole run. */
int ghost_rule_constant(const pj_program *p);
/* How the Jacobian is used (q->linear, jac_reuse, diag_update) from what it reads. -1 out of memory. */
int jacobian_plan(implicit_solver *q);

/* implicit_mg.c */
int mg_count_levels(const implicit_solver *q, PetscInt cap);
PetscErrorCode mg_setup_pc(implicit_solver *q, PC pc);
PetscErrorCode linear_solver_unnamed(PetscOptions o, SNES snes, KSP *ksp, PC *pc, PetscBool *unnamed);
PetscErrorCode direct_defaults(implicit_solver *q, PetscOptions o, SNES snes);
PetscErrorCode steady_defaults(implicit_solver *q, PetscOptions o, SNES snes);
PetscErrorCode mg_defaults(implicit_solver *q, SNES snes);
PetscErrorCode wide_defaults(implicit_solver *q, PetscOptions o, TS ts);
void mg_forget_borrowed(SNES snes);

#endif
