/* implicit.c — implicit time steps and steady solves through PETSc (see implicit.h).
 *
 * Unknowns: the fields with an equation (coefficient fields stay in the sim's slot 0), in a
 * DMDA with dof = their number, interlaced; the DMDA's stencil is the program's halo, a box
 * when the Jacobian couples diagonal neighbours, else a star. The sim's buffers stay the home
 * of the kernels' data: PETSc's vectors are copied into slot 0 before F or the Jacobian runs
 * and F is copied out of slot 1 (the copies cost one sweep each, the solves many).
 *
 * The Jacobian: output j of the Jacobian kernel is dF(row field at cell)/dU(field at cell + off),
 * inserted by global index (PETSc's order: the blocks of the processes one after another, each
 * x fastest, the unknowns of a cell interlaced; on one process the natural order), which costs
 * less than MatSetValuesStencil's mapping per row.
 * Over MPI (a decomp: the sim holds one block of the mesh) the DMDA, the vectors, the matrix and
 * the solvers are on PETSC_COMM_WORLD with the blocks of the decomposition (so the explicit and
 * implicit parts agree); F and the Jacobian kernel run on the block, whose ghost cells the sim's
 * fill gives (the conditions on the mesh's sides, the neighbours' values by decomp's exchange);
 * positions below are in the whole mesh, a column in another process's block is inserted there
 * by its global index.
 * A column off the grid is a ghost cell, and a ghost's value is affine in one interior cell (the
 * mirrored one, or the periodic partner): g = alpha * u_m + beta. alpha is measured exactly by
 * two ghost fills of a scratch slot (interior 0, then 1: alpha = g1 - g0; a corner's alpha is
 * the product along its axes, and comes out of the fills the same way), once, or at every
 * assembly when a boundary condition depends on time.
 * The defaults (docs/solvers.md) follow what the derived Jacobian reads; on one process PCMG gets
 * a cell-centred hierarchy (mg_setup_pc): PETSc's DMDA coarsens vertex-centred. */
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

#ifndef PJ_HAVE_PETSC

struct implicit_solver { int unused; };

int implicit_available(char *why, size_t len)
{
    diag_set(why, len, "this build of pdejit has no implicit solver: it was built without PETSc "
                       "(install libpetsc-real3.18-dev and rebuild); explicit schemes (euler, rk2, rk3, rk4) work");
    return 0;
}

implicit_solver *implicit_create(sim *s, const char *options, char *err, size_t len)
{
    return implicit_create_on(s, NULL, options, err, len);
}

implicit_solver *implicit_create_on(sim *s, struct decomp *d, const char *options, char *err, size_t len)
{
    (void)s;
    (void)d;
    (void)options;
    implicit_available(err, len);
    return NULL;
}

void implicit_destroy(implicit_solver *solver) { (void)solver; }

int implicit_step(implicit_solver *solver, double dt, char *err, size_t len)
{
    (void)solver;
    (void)dt;
    implicit_available(err, len);
    return -1;
}

void implicit_get_stats(const implicit_solver *solver, implicit_stats *stats)
{
    (void)solver;
    memset(stats, 0, sizeof *stats);
}

int implicit_residual_history(implicit_solver *solver, const double **norms)
{
    (void)solver;
    *norms = NULL;
    return 0;
}

int implicit_check_jacobian(implicit_solver *solver, double t, double tol, jacobian_check *r, char *err, size_t len)
{
    (void)solver;
    (void)t;
    (void)tol;
    (void)r;
    implicit_available(err, len);
    return -1;
}

#else
#include <petscdmda.h>
#include <petscsnes.h>
#include <petscts.h>
#include <petsc/private/pcmgimpl.h> /* mg_forget_borrowed */
#ifdef PJ_IMPLICIT_MODULE
/* Built as the module libpdejit-implicit.so (implicit_module.h): the library's functions come
 * from its host table, and the two small helpers of diag.c and driver.c are this file's own. */
#include <stdarg.h>
#include <time.h>
#include "implicit_module.h"
#include "pj_build_id.h"
const implicit_host *implicit_module_host;
#define host implicit_module_host
#define sim_error(s) host->sim_error(s)
#define sim_eval(s, stage, t, dt) host->sim_eval(s, stage, t, dt)
#define sim_fill_ghosts(s, slot, t) host->sim_fill_ghosts(s, slot, t)
#define sim_launch(s) host->sim_launch(s)
#define sim_layout(s) host->sim_layout(s)
#define sim_program(s) host->sim_program(s)
#define sim_set_clock(s, t, steps) host->sim_set_clock(s, t, steps)
#define sim_steps(s) host->sim_steps(s)
#define sim_time(s) host->sim_time(s)
#define program_jacobian(p, err, len) host->program_jacobian(p, err, len)
#define diag_set module_diag_set
#define driver_now module_now
static double module_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#endif

struct implicit_solver {
    sim *s;
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
    Mat J;
    PetscOptions opts;     /* this solver's options (the solver statement, --solver-options) */
    TS ts;                 /* time steps */
    SNES snes;             /* steady: F(U) = 0 */
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
    int cg;                /* conjugate gradients with ICC, pdejit's default for a symmetric Jacobian */
    int mg_auto;           /* cg: the preconditioner follows the step (choose_pc): ICC(1) or multigrid */
    int mg_on;             /* mg_auto: multigrid now */
    double gershgorin;     /* cg: max over rows of J_ii + sum |J_ij| (i != j), of the last Jacobian */
    double dmax;           /* max |J_ii| of the last Jacobian (choose_pc) */
    Vec Dneg;              /* jac_reuse: -diag(Jc) */
    int b_shifted;         /* jac_reuse: J holds shift' I - Jc (ts_ijacobian: only its diagonal changes) */
    int tol_auto;          /* cg, linear, adapt: the linear solve stops at the step's accuracy (step_tolerance) */
    double ts_atol, ts_rtol; /* tol_auto: the step controller's tolerances */
    PetscReal ksp_atol;    /* tol_auto: the linear solve's absolute tolerance otherwise (Newton's) */
    double *jc_params;     /* the params at the last Jacobian (a change makes Jc and alpha stale) */
    PetscInt *cols;        /* one row's columns (global indices) and values */
    PetscScalar *vals;
    implicit_stats st;
    PetscReal history[64]; /* the last solve's residual norms */
    double t_fd;           /* the time of implicit_check_jacobian's differences */
    char error[512];       /* a failure inside a callback */
};

static int mg_count_levels(const implicit_solver *q, PetscInt cap);
static PetscErrorCode mg_setup_pc(implicit_solver *q, PC pc);

/* "WHAT: PETSc error N (its text: the first line of the error's detail)" */
static void petsc_message(PetscErrorCode e, const char *what, char *err, size_t len)
{
    const char *text = NULL;
    char *specific = NULL;
    PetscErrorMessage(e, &text, &specific);
    diag_set(err, len, "%s: PETSc error %d (%s)%s%s", what, (int)e, text ? text : "unknown",
             specific && *specific ? ": " : "", specific && *specific ? specific : "");
}

int implicit_available(char *why, size_t len)
{
    (void)why;
    (void)len;
    return 1;
}

#define CHECK(call, what)                                                                                          \
    do {                                                                                                           \
        PetscErrorCode e_ = (call);                                                                                \
        if (e_) {                                                                                                  \
            petsc_message(e_, what, err, len);                                                                     \
            goto fail;                                                                                             \
        }                                                                                                          \
    } while (0)

#define OPTIONS_REFUSED "the solver's options (the solver statement, --solver-options) were refused"

static double *buffer(implicit_solver *q, int slot, int field)
{
    return (double *)sim_launch(q->s)->buf[slot * q->nf + field];
}

static int64_t at(const grid_layout *g, int64_t i, int64_t j, int64_t k)
{
    return i + j * g->stride[1] + k * g->stride[2];
}

/* PETSc vector <-> slot buffers (interior cells of the fields with an equation). */
static void vec_to_slot(implicit_solver *q, const PetscScalar *x, int slot)
{
    const grid_layout *g = sim_layout(q->s);
    for (int c = 0; c < q->dof; c++) {
        double *b = buffer(q, slot, q->field_of[c]);
        int64_t idx = c;
        for (int64_t k = 0; k < g->n[2]; k++)
            for (int64_t j = 0; j < g->n[1]; j++) {
                double *row = b + at(g, 0, j, k);
                for (int64_t i = 0; i < g->n[0]; i++, idx += q->dof) row[i] = x[idx];
            }
    }
}

static void slot_to_vec(implicit_solver *q, int slot, PetscScalar *x)
{
    const grid_layout *g = sim_layout(q->s);
    for (int c = 0; c < q->dof; c++) {
        const double *b = buffer(q, slot, q->field_of[c]);
        int64_t idx = c;
        for (int64_t k = 0; k < g->n[2]; k++)
            for (int64_t j = 0; j < g->n[1]; j++) {
                const double *row = b + at(g, 0, j, k);
                for (int64_t i = 0; i < g->n[0]; i++, idx += q->dof) x[idx] = row[i];
            }
    }
}

/* Kernel `kernel` of the program (the rhs or a part of it, the Jacobian) at state U and time t: U
 * into slot 0, then the kernel; with_alpha: also the boundary conditions' coefficients, where they
 * may have changed since they were measured (measure_alpha). */
static int measure_alpha(implicit_solver *q, double t);
static PetscErrorCode run_kernel(implicit_solver *q, pj_kernel_id kernel, double t, Vec U, int with_alpha)
{
    const PetscScalar *u;
    PetscCall(VecGetArrayRead(U, &u));
    vec_to_slot(q, u, 0);
    PetscCall(VecRestoreArrayRead(U, &u));
    if (sim_eval(q->s, kernel, t, 0) < 0 ||
        (with_alpha && (!q->alpha_valid || !q->alpha_const) && measure_alpha(q, t) < 0)) {
        snprintf(q->error, sizeof q->error, "%s", sim_error(q->s));
        SETERRQ(PETSC_COMM_SELF, PETSC_ERR_USER, "ghost fill failed");
    }
    return 0;
}

/* F(U) at time t into f: U into slot 0, the rhs kernel `part` (PJ_KERNEL_RHS_IMPLICIT: F, under
 * imex its implicit part; PJ_KERNEL_RHS_EXPLICIT: imex's explicit part) writes slot 1. */
static PetscErrorCode eval_stage(implicit_solver *q, pj_kernel_id part, double t, Vec U, Vec F)
{
    PetscScalar *f;
    PetscCall(run_kernel(q, part, t, U, 0));
    PetscCall(VecGetArray(F, &f));
    slot_to_vec(q, 1, f);
    PetscCall(VecRestoreArray(F, &f));
    return 0;
}

/* How ghost cells depend on interior cells. A ghost cell out of the grid along one axis a is
 * sum_k alpha_k * u(interior cell k from its side, along a) + beta (the mirror, linear and
 * periodic rules use one k; a second condition lap(u) = c makes the second layer use two).
 * Measured exactly by fills of slot 1: interior 0 (beta), then for each k an indicator of the
 * cells k from either side of every axis: alpha_k = g - beta (a ghost of axis a sees only the
 * indicators along a; the grid has at least 2H cells per axis for that, else one cell per
 * ghost is assumed, the mirror's). A corner ghost (out along two axes) keeps the one-cell rule:
 * alpha from the all-ones fill, at the mirrored cell. */
/* Slot 1 of the unknown fields: 0 everywhere, then (axis >= 0) 1 at the cells k from either side
 * along `axis`, or (axis = -2) 1 at every interior cell; ghosts filled at time t. */
static int fill_slot1(implicit_solver *q, double t, int axis, int k_ind)
{
    const grid_layout *g = sim_layout(q->s);
    for (int c = 0; c < q->dof; c++) {
        double *b = buffer(q, 1, q->field_of[c]) - g->origin_off;
        for (size_t e = 0; e < g->elems; e++) b[e] = 0;
        if (axis == -1) continue;
        for (int64_t kk = 0; kk < g->n[2]; kk++)
            for (int64_t j = 0; j < g->n[1]; j++)
                for (int64_t i = 0; i < g->n[0]; i++) {
                    int64_t pos[3] = {q->first[0] + i, q->first[1] + j, q->first[2] + kk};
                    if (axis == -2 || pos[axis] == k_ind || pos[axis] == q->n[axis] - 1 - k_ind)
                        b[g->origin_off + at(g, i, j, kk)] = 1;
                }
    }
    sim_fill_ghosts(q->s, 1, t);
    return sim_error(q->s) ? -1 : 0;
}

/* The ghost cells (allocated, out of the grid along `axis` only, or along two or more axes for
 * axis = -2) of every unknown field: dst[e] = slot 1's value - base[e] (base NULL: 0). */
static void take_ghosts(implicit_solver *q, int axis, double *const *dst, double *const *base)
{
    const grid_layout *g = sim_layout(q->s);
    for (int c = 0; c < q->dof; c++) {
        const double *b = buffer(q, 1, q->field_of[c]);
        for (int64_t kk = g->lo[2]; kk < g->lo[2] + g->ext[2]; kk++)
            for (int64_t j = g->lo[1]; j < g->lo[1] + g->ext[1]; j++)
                for (int64_t i = g->lo[0]; i < g->lo[0] + g->ext[0]; i++) {
                    int64_t pos[3] = {q->first[0] + i, q->first[1] + j, q->first[2] + kk};
                    int out = 0, last = -1;
                    for (int a = 0; a < q->p->dim; a++)
                        if (pos[a] < 0 || pos[a] >= q->n[a]) {
                            out++;
                            last = a;
                        }
                    if (!out || (axis >= 0 && (out != 1 || last != axis)) || (axis == -2 && out < 2)) continue;
                    int64_t e = at(g, i, j, kk);
                    dst[c][g->origin_off + e] = b[e] - (base ? base[c][g->origin_off + e] : 0);
                }
    }
}

static int measure_alpha(implicit_solver *q, double t)
{
    const grid_layout *g = sim_layout(q->s);
    int H = g->H, S = H + 2;
    double *beta[q->dof > 0 ? q->dof : 1], *slot[q->dof > 0 ? q->dof : 1];
    for (int c = 0; c < q->dof; c++) beta[c] = q->alpha + (size_t)c * g->elems * (size_t)S;
    if (fill_slot1(q, t, -1, 0) < 0) return -1; /* beta: the constant part of every ghost */
    take_ghosts(q, -2, beta, NULL);
    for (int a = 0; a < q->p->dim; a++) take_ghosts(q, a, beta, NULL);
    if (fill_slot1(q, t, -2, 0) < 0) return -1; /* corners: the one-cell rule's alpha */
    for (int c = 0; c < q->dof; c++) slot[c] = beta[c] + g->elems;
    take_ghosts(q, -2, slot, beta);
    for (int a = 0; a < q->p->dim; a++) take_ghosts(q, a, slot, beta);
    for (int a = 0; a < q->p->dim; a++)
        for (int k = 0; k < H; k++) {
            if (fill_slot1(q, t, a, k) < 0) return -1;
            for (int c = 0; c < q->dof; c++) slot[c] = beta[c] + g->elems * (size_t)(k + 2);
            take_ghosts(q, a, slot, beta);
        }
    q->alpha_valid = 1;
    return 0;
}

/* Where a column at cell index v along axis ax lands, as an interior index. */
static int64_t fold(const implicit_solver *q, int ax, int64_t v)
{
    int64_t n = q->n[ax];
    if (q->p->periodic[ax]) return ((v % n) + n) % n;
    if (v < 0) return -v - 1;
    if (v >= n) return 2 * n - 1 - v;
    return v;
}

static PetscErrorCode eval_rhs(implicit_solver *q, double t, Vec U, Vec F)
{
    return eval_stage(q, PJ_KERNEL_RHS_IMPLICIT, t, U, F);
}

/* The column of processes that holds mesh index v along axis a. */
static int column_of(const implicit_solver *q, int a, int64_t v)
{
    int lo = 0, hi = q->procs[a] - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (q->start[a][mid] <= v) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* The DMDA's global index of unknown c at mesh cell (i, j, k): in the block that holds it, the
 * cells x fastest and the unknowns interlaced (one process: the natural order). */
static PetscInt global_index(const implicit_solver *q, int64_t i, int64_t j, int64_t k, int c)
{
    const grid_block *b = &q->own;
    PetscInt base = q->own_offset;
    if (i < b->first[0] || i >= b->first[0] + b->n[0] || j < b->first[1] || j >= b->first[1] + b->n[1] ||
        k < b->first[2] || k >= b->first[2] + b->n[2]) {
        int r = column_of(q, 0, i) + q->procs[0] * (column_of(q, 1, j) + q->procs[1] * column_of(q, 2, k));
        b = &q->blocks[r];
        base = q->offset[r];
    }
    return base + (PetscInt)((((k - b->first[2]) * b->n[1] + (j - b->first[1])) * b->n[0] + (i - b->first[0])) * q->dof + c);
}

static PetscErrorCode assemble(implicit_solver *q, double t, Vec U, Mat A)
{
    double t0 = driver_now();
    PetscCall(run_kernel(q, PJ_KERNEL_JACOBIAN, t, U, 1));
    const grid_layout *g = sim_layout(q->s);
    const pj_program *p = q->p;
    PetscCall(MatZeroEntries(A));
    const double **jb = malloc(sizeof *jb * (size_t)(q->jac->n + 1));
    if (!jb) SETERRQ(PETSC_COMM_SELF, PETSC_ERR_MEM, "out of memory");
    for (int e = 0; e < q->jac->n; e++) jb[e] = (const double *)sim_launch(q->s)->buf[2 * q->nf + e];
    for (int64_t k = 0; k < g->n[2]; k++)
        for (int64_t j = 0; j < g->n[1]; j++)
            for (int64_t i = 0; i < g->n[0]; i++) {
                int64_t cell = at(g, i, j, k);
                int e = 0;
                while (e < q->jac->n) { /* entries come grouped by output: one row each */
                    const derive_entry *d0 = &q->jac->entries[e];
                    int row_c = q->unknown[d0->out_field];
                    int nc = 0;
                    for (; e < q->jac->n && q->jac->entries[e].output == d0->output; e++) {
                        const derive_entry *d = &q->jac->entries[e];
                        double v = jb[e][cell];
                        int col_c = q->unknown[d->field];
                        if (v == 0 || col_c < 0 || row_c < 0) continue;
                        int64_t pos[3] = {i + d->off[0], j + d->off[1], k + d->off[2]}; /* in the block */
                        int64_t gp[3] = {q->first[0] + pos[0], q->first[1] + pos[1], q->first[2] + pos[2]};
                        int out = 0, axis = -1;
                        for (int ax = 0; ax < p->dim; ax++)
                            if (gp[ax] < 0 || gp[ax] >= q->n[ax]) {
                                out++;
                                axis = ax;
                            }
                        const double *al = q->alpha + (size_t)col_c * g->elems * (size_t)(g->H + 2);
                        size_t ghost_at = (size_t)(g->origin_off + at(g, pos[0], pos[1], pos[2]));
                        if (out == 1 && !p->periodic[axis] && q->n[axis] >= 2 * g->H) {
                            /* a sum over the interior cells k from the ghost's side */
                            int64_t n = q->n[axis];
                            for (int kk = 0; kk < g->H; kk++) {
                                double a = al[(size_t)(kk + 2) * g->elems + ghost_at];
                                if (a == 0) continue;
                                int64_t cp[3] = {gp[0], gp[1], gp[2]};
                                cp[axis] = gp[axis] < 0 ? kk : n - 1 - kk;
                                q->cols[nc] = global_index(q, cp[0], cp[1], cp[2], col_c);
                                q->vals[nc++] = v * a;
                            }
                            continue;
                        }
                        if (out) v *= al[g->elems + ghost_at];
                        if (v == 0) continue;
                        q->cols[nc] = global_index(q, fold(q, 0, gp[0]), p->dim > 1 ? fold(q, 1, gp[1]) : 0,
                                                   p->dim > 2 ? fold(q, 2, gp[2]) : 0, col_c);
                        q->vals[nc++] = v;
                    }
                    if (!nc) continue;
                    PetscInt row = global_index(q, q->first[0] + i, q->first[1] + j, q->first[2] + k, row_c);
                    PetscErrorCode rc = MatSetValues(A, 1, &row, nc, q->cols, q->vals, ADD_VALUES);
                    if (rc) {
                        free(jb);
                        return rc;
                    }
                }
            }
    free(jb);
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    q->st.jacobians++;
    q->st.seconds_jacobian += driver_now() - t0;
    return 0;
}

/* q->gershgorin: the max over the rows of J of J_ii + sum over j != i of |J_ij|: shift I - J is
 * diagonally dominant with a positive diagonal, so symmetric positive (semi)definite when J is
 * symmetric, for every shift at least this (Gershgorin). The sums off the diagonal (q->Voff) are
 * taken row by row after an assembly (offsums), and kept when only the diagonal changed. */
static PetscErrorCode gershgorin_bound(implicit_solver *q, Mat J, int offsums)
{
    if (offsums) {
        PetscInt lo, hi;
        PetscScalar *off;
        PetscCall(MatGetOwnershipRange(J, &lo, &hi));
        PetscCall(VecGetArray(q->Voff, &off));
        for (PetscInt row = lo; row < hi; row++) {
            PetscInt nc;
            const PetscInt *cols;
            const PetscScalar *vals;
            double r = 0;
            PetscCall(MatGetRow(J, row, &nc, &cols, &vals));
            for (PetscInt c = 0; c < nc; c++) r += cols[c] == row ? 0 : fabs(vals[c]);
            PetscCall(MatRestoreRow(J, row, &nc, &cols, &vals));
            off[row - lo] = r;
        }
        PetscCall(VecRestoreArray(q->Voff, &off));
    }
    PetscReal b;
    PetscCall(MatGetDiagonal(J, q->D));
    PetscCall(VecAXPY(q->D, 1.0, q->Voff));
    PetscCall(VecMax(q->D, NULL, &b));
    q->gershgorin = b;
    return 0;
}

/* The sum of the Jacobian kernel's diagonal coefficients (by the unknown itself at the cell: they
 * never fold through a ghost) per row, from its last evaluation, into d. */
static PetscErrorCode diagonal_sum(implicit_solver *q, Vec d)
{
    const grid_layout *g = sim_layout(q->s);
    PetscScalar *v;
    PetscCall(VecSet(d, 0));
    PetscCall(VecGetArray(d, &v));
    for (int e = 0; e < q->jac->n; e++) {
        const derive_entry *de = &q->jac->entries[e];
        int c = q->unknown[de->out_field];
        if (de->off[0] || de->off[1] || de->off[2] || de->field != de->out_field || c < 0) continue;
        const double *jb = (const double *)sim_launch(q->s)->buf[2 * q->nf + e];
        for (int64_t k = 0; k < g->n[2]; k++)
            for (int64_t j = 0; j < g->n[1]; j++)
                for (int64_t i = 0; i < g->n[0]; i++) /* this process's rows: its block, from own_offset */
                    v[global_index(q, q->first[0] + i, q->first[1] + j, q->first[2] + k, c) - q->own_offset] +=
                        jb[at(g, i, j, k)];
    }
    PetscCall(VecRestoreArray(d, &v));
    return 0;
}

/* A Jacobian whose coefficients off the diagonal read neither the state nor the time
 * (q->diag_update): Jc, assembled once, plus the change of the diagonal coefficients since, from
 * one run of the Jacobian kernel; no row is inserted. Equal to an assembly up to rounding (the
 * diagonal is Jc's plus a difference). */
static PetscErrorCode update_diagonal(implicit_solver *q, double t, Vec U, Mat B)
{
    double t0 = driver_now();
    PetscCall(run_kernel(q, PJ_KERNEL_JACOBIAN, t, U, 0));
    PetscCall(diagonal_sum(q, q->D));
    PetscCall(VecAXPY(q->D, -1.0, q->Djc));
    PetscCall(MatCopy(q->Jc, B, SAME_NONZERO_PATTERN));
    PetscCall(MatDiagonalSet(B, q->D, ADD_VALUES));
    if (q->cg) PetscCall(gershgorin_bound(q, B, 0));
    q->st.jacobians++;
    q->st.seconds_jacobian += driver_now() - t0;
    return 0;
}

/* The Jacobian into B: assembled, or, for a Jacobian that depends on nothing that changes during
 * the run (q->jac_reuse), copied from its first assembly (the same values: TS overwrites B with
 * shift I - J, so the assembled J is kept apart in Jc). A param changed between steps
 * (pj_sim_set_param) makes both the kept Jacobian and the ghost rule (alpha: a Robin coefficient
 * may be a param) stale. A copy is a sweep over the matrix; an assembly runs the Jacobian kernel
 * and inserts every row. */
static void check_params(implicit_solver *q)
{
    const double *param = sim_launch(q->s)->param;
    size_t np = sizeof *param * (size_t)q->p->n_params;
    if (np && memcmp(q->jc_params, param, np)) {
        memcpy(q->jc_params, param, np);
        q->alpha_valid = 0;
        q->jc_valid = 0;
        q->b_shifted = 0;
    }
}

static PetscErrorCode jacobian_into(implicit_solver *q, double t, Vec U, Mat B)
{
    check_params(q);
    if (q->jac_reuse && q->jc_valid) {
        PetscCall(MatCopy(q->Jc, B, SAME_NONZERO_PATTERN));
        return 0;
    }
    if (q->diag_update && q->jc_valid) return update_diagonal(q, t, U, B);
    PetscCall(assemble(q, t, U, B));
    if (q->cg) PetscCall(gershgorin_bound(q, B, 1));
    if (!q->jac_reuse && !q->diag_update) return 0;
    if (q->Jc) PetscCall(MatCopy(B, q->Jc, SAME_NONZERO_PATTERN));
    else PetscCall(MatDuplicate(B, MAT_COPY_VALUES, &q->Jc));
    if (q->diag_update) PetscCall(diagonal_sum(q, q->Djc));
    q->jc_valid = 1;
    return 0;
}

/* F(t, U, U') = U' - F(U) (imex: F_implicit), its Jacobian shift I - dF/dU; imex: G = F_explicit */
static PetscErrorCode ts_ifunction(TS ts, PetscReal t, Vec U, Vec Udot, Vec F, void *ctx)
{
    (void)ts;
    PetscCall(eval_stage(ctx, PJ_KERNEL_RHS_IMPLICIT, t, U, F));
    PetscCall(VecAYPX(F, -1.0, Udot));
    return 0;
}

/* B += shift I in one sweep over the diagonal (MatShift inserts it row by row with MatSetValues
 * and assembles: most of a copied Jacobian's cost) */
static PetscErrorCode add_shift(implicit_solver *q, Mat B, PetscReal shift)
{
    PetscCall(VecSet(q->D, shift));
    PetscCall(MatDiagonalSet(B, q->D, ADD_VALUES));
    return 0;
}

/* A symmetric problem's preconditioner for a time step of this shift (q->mg_auto): CG's iterations
 * with ICC(1) grow with the stiffness of shift I - J, max |J_ii| / shift (about 4 dt / h^2 per
 * axis pair for heat, the shift of backward Euler being 1 / dt), and the multigrid's do not: on
 * 2D heat at 256^2, 37 ICC iterations a step against 5 V-cycles at a ratio of 330 (about the same
 * CPU time), 103 against 5 at 3300 (multigrid 2.4x faster), 184 against 5 at 33 000 (3.9x);
 * docs/performance.md. Multigrid from a ratio of MG_STIFF_ON, ICC again below MG_STIFF_OFF (the
 * gap keeps an adaptive step from switching back and forth). B holds J (before the shift). */
#define MG_STIFF_ON 300.0
#define MG_STIFF_OFF 150.0
static PetscErrorCode choose_pc(implicit_solver *q, TS ts, PetscReal shift, Mat B)
{
    if (!q->mg_auto || !q->cg) return 0;
    if (B) { /* else q->dmax is B's still */
        PetscCall(MatGetDiagonal(B, q->D));
        PetscCall(VecNorm(q->D, NORM_INFINITY, &q->dmax));
    }
    double stiff = shift > 0 ? q->dmax / shift : PETSC_MAX_REAL;
    int want = q->mg_on ? stiff >= MG_STIFF_OFF : stiff >= MG_STIFF_ON;
    if (want == q->mg_on) return 0;
    SNES snes;
    KSP ksp;
    PC pc;
    PetscCall(TSGetSNES(ts, &snes));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetPC(ksp, &pc));
    if (want) {
        PetscCall(PCSetType(pc, PCMG));
        PetscCall(mg_setup_pc(q, pc));
    } else {
        PetscCall(PCSetType(pc, PCICC));
        PetscCall(PCFactorSetLevels(pc, 1));
        PetscCall(PCSetFromOptions(pc));
    }
    q->mg_on = want;
    return 0;
}

/* Conjugate gradients need a symmetric positive definite operator: shift I - J is when J is
 * symmetric (jac->symmetric) and shift is at least J's Gershgorin bound. When it is not (a source
 * that grows faster than 1/dt), pdejit's symmetric default gives way to GMRES with ILU(1), its
 * general one, for the rest of the run. */
static PetscErrorCode keep_cg(implicit_solver *q, TS ts, PetscReal shift)
{
    if (!q->cg || shift >= q->gershgorin) return 0;
    SNES snes;
    KSP ksp;
    PC pc;
    PetscCall(TSGetSNES(ts, &snes));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(KSPSetType(ksp, KSPGMRES));
    PetscCall(PCSetType(pc, PCILU));
    PetscCall(PCFactorSetLevels(pc, 1));
    if (q->tol_auto) { /* GMRES's residual is the preconditioned one: Newton's tolerances again */
        PetscReal rtol, atol, dtol;
        PetscInt maxit;
        PetscCall(KSPGetTolerances(ksp, &rtol, &atol, &dtol, &maxit));
        PetscCall(KSPSetTolerances(ksp, rtol, q->ksp_atol, dtol, maxit));
        PetscCall(KSPSetNormType(ksp, KSP_NORM_DEFAULT));
        q->tol_auto = 0;
    }
    q->cg = 0;
    q->mg_on = 0;
    return 0;
}

/* An adaptive step of a linear problem with CG (q->tol_auto): the linear solve stops when its error
 * is below a tenth of what the step controller allows, LIN_TOL_FRACTION (atol + rtol max |U|), in
 * every cell, instead of at Newton's 1e-8 relative reduction of the residual, which is far more than
 * the step's own accuracy (TSADAPTBASIC's tolerances) needs. The bound is Varah's: a matrix A with
 * a_ii - sum over j != i of |a_ij| >= m > 0 in every row has ||A^-1||_inf <= 1 / m; for A = shift I
 * - J, m = shift - q->gershgorin, so the error of a solve with residual r is at most ||r||_inf / m
 * <= ||r||_2 / m, and CG's unpreconditioned residual norm ||r||_2 is tested against m times the
 * bound (KSP's absolute tolerance; Newton's relative one still applies, whichever is reached first).
 * Heat, 256^2, bdf2 with adapt: half the CG iterations, the same errors (docs/performance.md). */
#define LIN_TOL_FRACTION 0.1
static PetscErrorCode step_tolerance(implicit_solver *q, TS ts, PetscReal shift, Vec U)
{
    if (!q->tol_auto || !q->cg) return 0;
    SNES snes;
    KSP ksp;
    PetscReal rtol, atol, dtol, umax;
    PetscInt maxit;
    PetscCall(TSGetSNES(ts, &snes));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetTolerances(ksp, &rtol, &atol, &dtol, &maxit));
    PetscCall(VecNorm(U, NORM_INFINITY, &umax));
    double m = shift - q->gershgorin, bound = LIN_TOL_FRACTION * (q->ts_atol + q->ts_rtol * umax);
    atol = m > 0 && isfinite(m * bound) ? fmax(q->ksp_atol, m * bound) : q->ksp_atol;
    PetscCall(KSPSetTolerances(ksp, rtol, atol, dtol, maxit));
    return 0;
}

/* shift I - J into B. A Jacobian assembled once (jac_reuse) is shifted where B held it already,
 * shifted for an earlier step: only the diagonal is written, -Jc_ii + shift, the same values as
 * copying, negating and shifting the whole matrix (a sweep over it, twice). */
static PetscErrorCode ts_ijacobian(TS ts, PetscReal t, Vec U, Vec Udot, PetscReal shift, Mat A, Mat B, void *ctx)
{
    (void)Udot;
    (void)A;
    implicit_solver *q = ctx;
    check_params(q);
    int fast = q->jac_reuse && q->jc_valid && q->b_shifted;
    if (!fast) PetscCall(jacobian_into(q, t, U, B));
    PetscCall(choose_pc(q, ts, shift, fast ? NULL : B));
    PetscCall(keep_cg(q, ts, shift));
    PetscCall(step_tolerance(q, ts, shift, U));
    if (fast) {
        PetscCall(VecCopy(q->Dneg, q->D));
        PetscCall(VecShift(q->D, shift));
        PetscCall(MatDiagonalSet(B, q->D, INSERT_VALUES));
        return 0;
    }
    PetscCall(MatScale(B, -1.0));
    if (q->jac_reuse && q->jc_valid) {
        if (!q->Dneg) PetscCall(VecDuplicate(q->X, &q->Dneg));
        PetscCall(MatGetDiagonal(B, q->Dneg));
        q->b_shifted = 1;
    }
    PetscCall(add_shift(q, B, shift));
    return 0;
}

static PetscErrorCode ts_explicit(TS ts, PetscReal t, Vec U, Vec G, void *ctx)
{
    (void)ts;
    return eval_stage(ctx, PJ_KERNEL_RHS_EXPLICIT, t, U, G);
}

static PetscErrorCode snes_rhs(SNES snes, Vec U, Vec F, void *ctx)
{
    (void)snes;
    implicit_solver *q = ctx;
    return eval_rhs(q, sim_time(q->s), U, F);
}

static PetscErrorCode snes_jacobian(SNES snes, Vec U, Mat A, Mat B, void *ctx)
{
    (void)snes;
    (void)A;
    implicit_solver *q = ctx;
    return jacobian_into(q, sim_time(q->s), U, B);
}

/* pdejit's defaults where PETSc's differ, set on the objects after the options were read, and
 * only where the options do not name them: ILU(1) rather than ILU(0), no cap on the length of a
 * Newton step (PETSc's line search shortens any step longer than 1e8), and, when the linear
 * solver is a Krylov method (not preonly: a lagged direct solve would no longer be Newton's),
 * the preconditioner rebuilt at every 10th Jacobian, across steps, rather than at each: Newton
 * still applies the exact Jacobian of every iteration as the operator; only the preconditioner
 * lags. Measured in docs/performance.md ("Implicit solves against FiPy"). */
static PetscErrorCode apply_defaults(PetscOptions o, SNES snes)
{
    KSP ksp;
    PC pc;
    KSPType kt;
    PCType pt;
    PetscBool set, preonly, ilu;
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(KSPGetType(ksp, &kt));
    PetscCall(PCGetType(pc, &pt));
    PetscCall(PetscOptionsHasName(o, NULL, "-pc_factor_levels", &set));
    PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCILU, &ilu));
    if (pt && ilu && !set) PetscCall(PCFactorSetLevels(pc, 1));
    PetscCall(PetscOptionsHasName(o, NULL, "-snes_linesearch_maxstep", &set));
    if (!set) { /* PETSc's 1e8 cuts every longer Newton step: the solution may be that large */
        SNESLineSearch ls;
        PetscCall(SNESGetLineSearch(snes, &ls));
        PetscCall(SNESLineSearchSetTolerances(ls, PETSC_DEFAULT, PETSC_MAX_REAL, PETSC_DEFAULT, PETSC_DEFAULT,
                                              PETSC_DEFAULT, PETSC_DEFAULT));
    }
    PetscCall(PetscObjectTypeCompare((PetscObject)ksp, KSPPREONLY, &preonly));
    PetscCall(PetscOptionsHasName(o, NULL, "-snes_lag_preconditioner", &set));
    if (kt && !preonly && !set) {
        PetscCall(SNESSetLagPreconditioner(snes, 10));
        PetscCall(PetscOptionsHasName(o, NULL, "-snes_lag_preconditioner_persists", &set));
        if (!set) PetscCall(SNESSetLagPreconditionerPersists(snes, PETSC_TRUE));
    }
    return 0;
}

/* Over MPI: PETSc's own LU and Cholesky factor a matrix of one process only; a direct solve of
 * a matrix spread over the processes goes to MUMPS unless the options name another package. */
static PetscErrorCode parallel_defaults(PetscOptions o, SNES snes)
{
    KSP ksp;
    PC pc;
    PetscBool lu, cholesky, set;
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCLU, &lu));
    PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCCHOLESKY, &cholesky));
    PetscCall(PetscOptionsHasName(o, NULL, "-pc_factor_mat_solver_type", &set));
    if ((lu || cholesky) && !set) PetscCall(PCFactorSetMatSolverType(pc, MATSOLVERMUMPS));
    return 0;
}

/* A linear problem (F affine in U, q->linear): Newton's second iteration only confirms the first,
 * so one linear solve a step (SNESKSPONLY) to Newton's tolerances (-snes_rtol, -snes_atol: the
 * linear solve's accuracy is the step's), unless the options name a SNES type, or the linear
 * solve's own tolerances (-ksp_rtol, -ksp_atol, which then win). */
static PetscErrorCode linear_defaults(PetscOptions o, SNES snes)
{
    KSP ksp;
    PetscBool set;
    PetscReal rtol, atol, stol, krtol, katol, kdtol;
    PetscInt maxit, maxf, kmaxit;
    PetscCall(PetscOptionsHasName(o, NULL, "-snes_type", &set));
    if (set) return 0;
    PetscCall(SNESGetTolerances(snes, &atol, &rtol, &stol, &maxit, &maxf));
    PetscCall(SNESSetType(snes, SNESKSPONLY));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetTolerances(ksp, &krtol, &katol, &kdtol, &kmaxit));
    PetscCall(PetscOptionsHasName(o, NULL, "-ksp_rtol", &set));
    if (!set) krtol = rtol;
    PetscCall(PetscOptionsHasName(o, NULL, "-ksp_atol", &set));
    if (!set) katol = atol;
    PetscCall(KSPSetTolerances(ksp, krtol, katol, kdtol, kmaxit));
    return 0;
}

/* 1 when kernel k's node `node` reads t, dt or rand() (through its operands); -1 out of memory. */
static int node_reads_time(const kir_kernel *k, int node)
{
    char *live = calloc((size_t)k->n_nodes + 1, 1);
    int found = 0;
    if (!live) return -1;
    live[node] = 1;
    for (int id = node; id >= 0 && !found; id--) { /* operands come before their users */
        if (!live[id]) continue;
        const kir_node *n = &k->nodes[id];
        found = n->op == KIR_TIME || n->op == KIR_DT || n->op == KIR_RAND;
        for (int a = 0; a < 3; a++)
            if (n->arg[a] >= 0) live[n->arg[a]] = 1;
    }
    free(live);
    return found;
}

/* 1 when the ghost rule's dependence on the interior (alpha, measure_alpha) stays the same for the
 * whole run: no linear boundary condition a u + b dn(u) = c whose a or b reads the time (c, the
 * constant part, and coordinates do not change alpha), so it is measured once. */
static int ghost_rule_constant(const pj_program *p)
{
    for (int side = 0; side < 6; side++) {
        const kir_kernel *k = p->bc_kernel[side];
        for (int f = 0; f < p->n_fields; f++) {
            if (p->bc[f][side].kind != PJ_BC_LINEAR || p->bc[f][side].constant) continue;
            if (!k) return 0;
            for (int o = 0; o < k->n_outputs; o++)
                if (k->outputs[o].field == f && k->outputs[o].slot <= 1 && node_reads_time(k, k->outputs[o].node)) return 0;
        }
    }
    return 1;
}

/* A symmetric Jacobian (jac->symmetric: by its structure, at every state) in a time step: conjugate
 * gradients with incomplete Cholesky, ICC(1), rather than GMRES with ILU(1), unless the options
 * name a linear solver or a preconditioner (keep_cg gives way to GMRES where shift I - J is not
 * positive definite). CG keeps no basis to orthogonalise against; ICC stores half of ILU's factor.
 * Measured in docs/performance.md ("Implicit solves against FiPy"). */
static PetscErrorCode symmetric_defaults(implicit_solver *q, PetscOptions o, SNES snes)
{
    KSP ksp;
    PC pc;
    PetscBool set;
    PetscCall(PetscOptionsHasName(o, NULL, "-ksp_type", &set));
    if (set) return 0;
    PetscCall(PetscOptionsHasName(o, NULL, "-pc_type", &set));
    if (set) return 0;
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(KSPSetType(ksp, KSPCG));
    PetscCall(PCSetType(pc, PCICC));
    PetscCall(PCFactorSetLevels(pc, 1));
    PetscCall(PCSetFromOptions(pc)); /* -pc_factor_levels and the like, read for ILU before */
    q->cg = 1;
    q->gershgorin = PETSC_MAX_REAL; /* until the first Jacobian */
    q->mg_auto = !q->d && mg_count_levels(q, 0) >= 3;
    return 0;
}

/* The linear solve of an adaptive step to the step's accuracy (step_tolerance): for a linear problem
 * solved by one CG solve a step (SNESKSPONLY), with the step controller's tolerances, unless the
 * options (or the solver statement's rtol, atol) name a tolerance or the norm (-ksp_atol, -ksp_rtol,
 * -ksp_norm_type, -snes_rtol, -snes_atol). */
static PetscErrorCode step_tolerance_defaults(implicit_solver *q, PetscOptions o, SNES snes)
{
    KSP ksp;
    PetscBool set, ksponly;
    PetscReal rtol, dtol;
    PetscInt maxit;
    PetscCall(PetscObjectTypeCompare((PetscObject)snes, SNESKSPONLY, &ksponly));
    if (!ksponly) return 0;
    const char *names[] = {"-ksp_atol", "-ksp_rtol", "-ksp_norm_type", "-snes_rtol", "-snes_atol"};
    for (int i = 0; i < 5; i++) {
        PetscCall(PetscOptionsHasName(o, NULL, names[i], &set));
        if (set) return 0;
    }
    PetscCall(TSGetTolerances(q->ts, &q->ts_atol, NULL, &q->ts_rtol, NULL));
    if (!(q->ts_atol >= 0 && q->ts_rtol >= 0)) return 0;
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetTolerances(ksp, &rtol, &q->ksp_atol, &dtol, &maxit));
    PetscCall(KSPSetNormType(ksp, KSP_NORM_UNPRECONDITIONED));
    q->tol_auto = 1;
    return 0;
}

/* Geometric multigrid for cell-centred grids (pc = mg, one process). PETSc's DMDA coarsens a
 * non-periodic side vertex-centred, (n - 1) / 2, which a grid of 2^k cells is not: its pc = mg was
 * one level. pdejit gives PCMG its own hierarchy instead: each level halves every axis with more
 * than one cell while all of them stay even and the coarse one keeps at least MG_MIN_CELLS cells;
 * the interpolation is cell-centred and bilinear (trilinear) per unknown: a fine cell takes 3/4 of
 * its coarse parent and 1/4 of the parent's neighbour on its side, per axis (the parent alone at
 * a non-periodic side, the wrapped neighbour at a periodic one); restriction is its transpose and
 * the coarse operators are Galerkin's, P^T A P (PC_MG_GALERKIN_BOTH), so nothing but the finest
 * Jacobian is assembled. -pc_mg_levels caps the levels. */
#define MG_MIN_CELLS 4

/* The levels the mesh allows (1: none coarser), at most cap (cap <= 0: no cap). */
static int mg_count_levels(const implicit_solver *q, PetscInt cap)
{
    int64_t n[3] = {q->n[0], q->n[1], q->n[2]};
    int levels = 1;
    for (;;) {
        int ok = 0, any = 0;
        for (int a = 0; a < q->p->dim; a++) {
            if (n[a] == 1) continue;
            any = 1;
            ok = 1;
            if (n[a] % 2 || n[a] / 2 < MG_MIN_CELLS) {
                ok = 0;
                break;
            }
        }
        if (!any || !ok || (cap > 0 && levels >= cap)) return levels;
        for (int a = 0; a < q->p->dim; a++)
            if (n[a] > 1) n[a] /= 2;
        levels++;
    }
}

/* The interpolation from a coarse grid nc (every axis of nf with more than one cell halved) to
 * the fine grid nf, dof unknowns interlaced, the natural order (x fastest). */
static PetscErrorCode mg_interpolation(const implicit_solver *q, const int64_t nf[3], const int64_t nc[3], Mat *P)
{
    int dof = q->dof, dim = q->p->dim;
    PetscInt rows = (PetscInt)(nf[0] * nf[1] * nf[2] * dof), cols = (PetscInt)(nc[0] * nc[1] * nc[2] * dof);
    PetscCall(MatCreateSeqAIJ(PETSC_COMM_SELF, rows, cols, 1 << dim, NULL, P));
    for (int64_t k = 0; k < nf[2]; k++)
        for (int64_t j = 0; j < nf[1]; j++)
            for (int64_t i = 0; i < nf[0]; i++) {
                int64_t f[3] = {i, j, k}, idx[3][2];
                double w[3][2];
                for (int a = 0; a < 3; a++) {
                    if (nf[a] == nc[a]) { /* not coarsened */
                        idx[a][0] = idx[a][1] = f[a];
                        w[a][0] = 1.0;
                        w[a][1] = 0.0;
                        continue;
                    }
                    int64_t c = f[a] / 2, nb = f[a] % 2 ? c + 1 : c - 1;
                    idx[a][0] = c;
                    w[a][0] = 0.75;
                    w[a][1] = 0.25;
                    if (nb < 0 || nb >= nc[a]) {
                        if (q->p->periodic[a]) nb = (nb + nc[a]) % nc[a];
                        else {
                            nb = c;
                            w[a][0] = 1.0;
                            w[a][1] = 0.0;
                        }
                    }
                    idx[a][1] = nb;
                }
                for (int c = 0; c < dof; c++) {
                    PetscInt row = (PetscInt)(((k * nf[1] + j) * nf[0] + i) * dof + c), col[8];
                    PetscScalar val[8];
                    int m = 0;
                    for (int cz = 0; cz < 2; cz++)
                        for (int cy = 0; cy < 2; cy++)
                            for (int cx = 0; cx < 2; cx++) {
                                double v = w[0][cx] * w[1][cy] * w[2][cz];
                                if (v == 0.0) continue;
                                col[m] = (PetscInt)(((idx[2][cz] * nc[1] + idx[1][cy]) * nc[0] + idx[0][cx]) * dof + c);
                                val[m++] = v;
                            }
                    PetscCall(MatSetValues(*P, 1, &row, m, col, val, ADD_VALUES));
                }
            }
    PetscCall(MatAssemblyBegin(*P, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(*P, MAT_FINAL_ASSEMBLY));
    return 0;
}

/* A steady problem with a symmetric Jacobian (jac->symmetric: diffusion with constant
 * coefficients, a state-dependent diagonal) on one process gets the multigrid above when the mesh
 * gives it at least three levels and the options name no linear solver and no preconditioner: its
 * iterations do not grow with the grid, ILU(1)'s do (steady Poisson at 256^2: 6 against 114;
 * docs/solvers.md, Which preconditioner wins). Time steps choose at each step (choose_pc). */
static PetscErrorCode steady_defaults(implicit_solver *q, PetscOptions o, SNES snes)
{
    KSP ksp;
    PC pc;
    PetscBool set;
    if (!q->jac->symmetric || mg_count_levels(q, 0) < 3) return 0;
    PetscCall(PetscOptionsHasName(o, NULL, "-ksp_type", &set));
    if (set) return 0;
    PetscCall(PetscOptionsHasName(o, NULL, "-pc_type", &set));
    if (set) return 0;
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCMG));
    return 0;
}

/* PCMG's levels, interpolations and smoothers for this mesh (nothing where it has one level only). */
static PetscErrorCode mg_setup_pc(implicit_solver *q, PC pc)
{
    PetscOptions o = q->opts;
    PetscBool set, smoother_set;
    PetscInt cap = 0;
    PetscCall(PetscOptionsGetInt(o, NULL, "-pc_mg_levels", &cap, &set));
    int levels = mg_count_levels(q, set ? cap : 0);
    if (levels < 2) return 0;
    PetscCall(DMDASetInterpolationType(q->da, DMDA_Q0));
    PetscCall(PCMGSetLevels(pc, levels, NULL));
    PetscCall(PCMGSetGalerkin(pc, PC_MG_GALERKIN_BOTH));
    int64_t nf[3] = {q->n[0], q->n[1], q->n[2]};
    for (int l = levels - 1; l > 0; l--) {
        int64_t nc[3];
        for (int a = 0; a < 3; a++) nc[a] = nf[a] > 1 ? nf[a] / 2 : 1;
        Mat P;
        PetscCall(mg_interpolation(q, nf, nc, &P));
        PetscCall(PCMGSetInterpolation(pc, l, P));
        PetscCall(MatDestroy(&P));
        for (int a = 0; a < 3; a++) nf[a] = nc[a];
    }
    for (int l = 0; l < levels; l++) { /* the levels' solvers read this solver's options too */
        KSP smoother;
        PC spc;
        PetscCall(PCMGGetSmoother(pc, l, &smoother));
        PetscCall(PetscObjectSetOptions((PetscObject)smoother, o));
        PetscCall(KSPGetPC(smoother, &spc));
        PetscCall(PetscObjectSetOptions((PetscObject)spc, o));
    }
    PetscCall(PCSetFromOptions(pc));
    /* one symmetric SOR sweep before and after each coarse correction (V(1,1)) rather than PETSc's
     * two Chebyshev iterations, each a matrix product and a sweep, after eigenvalue estimates: the
     * same iteration counts within two, 25-38 % less CPU for the whole run (docs/performance.md) */
    PetscCall(PetscOptionsHasName(o, NULL, "-mg_levels_ksp_type", &smoother_set));
    if (!smoother_set) {
        PetscCall(PetscOptionsHasName(o, NULL, "-mg_levels_ksp_max_it", &set));
        for (int l = 1; l < levels; l++) {
            KSP smoother;
            PetscCall(PCMGGetSmoother(pc, l, &smoother));
            PetscCall(KSPSetType(smoother, KSPRICHARDSON));
            if (!set) PetscCall(KSPSetTolerances(smoother, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT, 1));
        }
    }
    return 0;
}

/* When the preconditioner is PCMG on one process (named by the options, or steady_defaults): the
 * cell-centred hierarchy above. The DMDA is told to coarsen cell-centred too (DMDA_Q0: n / 2),
 * since PCMG coarsens the solver's DM alongside the levels it is given (it then keeps the
 * interpolations it was given). */
static PetscErrorCode mg_defaults(implicit_solver *q, SNES snes)
{
    KSP ksp;
    PC pc;
    PetscBool mg;
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCMG, &mg));
    if (mg) PetscCall(mg_setup_pc(q, pc));
    return 0;
}

/* What the Jacobian depends on (its reads, derive.h) decides how it is used: F affine in the
 * unknowns (no unknown in the Jacobian, none through a piecewise-constant op) is a linear problem;
 * a linear problem whose Jacobian reads no time, coefficient field or rand(), with a ghost rule
 * that does not change (ghost_rule_constant), has the same Jacobian at every step: assembled once
 * (jacobian_into). Returns -1 when out of memory. */
static int jacobian_plan(implicit_solver *q)
{
    unsigned r = q->jac->reads;
    q->linear = !(r & DERIVE_READS_UNKNOWN);
    q->jac_reuse = q->linear && q->alpha_const && !(r & (DERIVE_READS_FIELD | DERIVE_READS_TIME | DERIVE_READS_RAND));
    q->diag_update = !q->jac_reuse && q->alpha_const &&
                     !(q->jac->offdiag_reads &
                       (DERIVE_READS_UNKNOWN | DERIVE_READS_FIELD | DERIVE_READS_TIME | DERIVE_READS_RAND));
    q->jc_params = malloc(sizeof *q->jc_params * (size_t)(q->p->n_params + 1));
    if (!q->jc_params) return -1;
    if (q->p->n_params) memcpy(q->jc_params, sim_launch(q->s)->param, sizeof *q->jc_params * (size_t)q->p->n_params);
    return 0;
}

/* The solver statement, then the user's options (later ones win), into this solver's own options
 * database: two simulations in one process never see each other's options. */
static int insert_options(PetscOptions o, const pj_program *p, const char *options, char *err, size_t len)
{
    char buf[256];
    if (p->solver_rtol > 0) {
        snprintf(buf, sizeof buf, "%.17g", p->solver_rtol);
        PetscOptionsSetValue(o, "-snes_rtol", buf);
    }
    if (p->solver_atol > 0) {
        snprintf(buf, sizeof buf, "%.17g", p->solver_atol);
        PetscOptionsSetValue(o, "-snes_atol", buf);
    }
    if (p->solver_max_it > 0) {
        snprintf(buf, sizeof buf, "%d", p->solver_max_it);
        PetscOptionsSetValue(o, "-snes_max_it", buf);
    }
    if (p->solver_linear) PetscOptionsSetValue(o, "-ksp_type", p->solver_linear);
    if (p->solver_pc) {
        const char *pc = p->solver_pc;
        if (!strcmp(pc, "hypre")) PetscOptionsSetValue(o, "-pc_hypre_type", "boomeramg");
        if (!strcmp(pc, "mg")) PetscOptionsSetValue(o, "-pc_mg_galerkin", "pmat");
        PetscOptionsSetValue(o, "-pc_type", pc);
    }
    if (options && *options) {
        PetscErrorCode e = PetscOptionsInsertString(o, options);
        if (e) {
            diag_set(err, len, "--solver-options \"%s\": PETSc cannot read these options", options);
            return -1;
        }
    }
    return 0;
}

/* Every object that reads options takes them from the solver's own database. */
static PetscErrorCode use_options(implicit_solver *q, SNES snes)
{
    KSP ksp;
    PC pc;
    SNESLineSearch ls;
    PetscCall(PetscObjectSetOptions((PetscObject)snes, q->opts));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(PetscObjectSetOptions((PetscObject)ksp, q->opts));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PetscObjectSetOptions((PetscObject)pc, q->opts));
    PetscCall(SNESGetLineSearch(snes, &ls));
    PetscCall(PetscObjectSetOptions((PetscObject)ls, q->opts));
    return 0;
}

/* The blocks of the processes (one on one process), their columns along each axis (PETSc's
 * DMDA numbers process (cx, cy, cz) cx + px * (cy + py * cz)) and the global index of each
 * block's first unknown. 0, or -1 out of memory. */
static int set_blocks(implicit_solver *q, decomp *d)
{
    q->d = d;
    for (int a = 0; a < 3; a++) q->procs[a] = 1;
    q->nblocks = 1;
    q->blocks = &q->own;
    for (int a = 0; a < 3; a++) {
        q->own.first[a] = 0;
        q->own.n[a] = q->n[a];
    }
    if (d) {
        decomp_layout(d, q->procs);
        q->nblocks = decomp_size(d);
        q->blocks = decomp_blocks(d);
        q->own = *decomp_block(d);
    }
    for (int a = 0; a < 3; a++) {
        q->first[a] = q->own.first[a];
        if (!(q->start[a] = malloc(sizeof *q->start[a] * ((size_t)q->procs[a] + 1)))) return -1;
        int64_t step = a == 0 ? 1 : a == 1 ? q->procs[0] : (int64_t)q->procs[0] * q->procs[1];
        for (int c = 0; c < q->procs[a]; c++) q->start[a][c] = q->blocks[c * step].first[a];
        q->start[a][q->procs[a]] = q->n[a];
    }
    if (!(q->offset = malloc(sizeof *q->offset * (size_t)q->nblocks))) return -1;
    PetscInt at = 0;
    for (int r = 0; r < q->nblocks; r++) {
        q->offset[r] = at;
        at += (PetscInt)(q->blocks[r].n[0] * q->blocks[r].n[1] * q->blocks[r].n[2] * q->dof);
    }
    q->own_offset = q->offset[d ? decomp_rank(d) : 0];
    return 0;
}

implicit_solver *implicit_create(sim *s, const char *options, char *err, size_t len)
{
    return implicit_create_on(s, NULL, options, err, len);
}

/* The steady solve's SNES on q->da, its options and pdejit's defaults. 0, or -1 with a message. */
static int create_snes(implicit_solver *q, decomp *d, MPI_Comm comm, char *err, size_t len)
{
    CHECK(SNESCreate(comm, &q->snes), "SNESCreate");
    CHECK(use_options(q, q->snes), "PetscObjectSetOptions");
    CHECK(SNESSetDM(q->snes, q->da), "SNESSetDM");
    CHECK(SNESSetFunction(q->snes, q->R, snes_rhs, q), "SNESSetFunction");
    CHECK(SNESSetJacobian(q->snes, q->J, q->J, snes_jacobian, q), "SNESSetJacobian");
    CHECK(SNESSetFromOptions(q->snes), OPTIONS_REFUSED);
    CHECK(apply_defaults(q->opts, q->snes), "the solver's defaults");
    if (d) CHECK(parallel_defaults(q->opts, q->snes), "the solver's defaults");
    if (q->linear) CHECK(linear_defaults(q->opts, q->snes), "the solver's defaults");
    if (!d) CHECK(steady_defaults(q, q->opts, q->snes), "the solver's defaults");
    if (!d) CHECK(mg_defaults(q, q->snes), "the multigrid levels");
    CHECK(SNESSetConvergenceHistory(q->snes, q->history, NULL, 64, PETSC_TRUE), "SNESSetConvergenceHistory");
    return 0;
fail:
    return -1;
}

/* A time-stepping scheme's TS on q->da (its SNES, adaptivity and pdejit's defaults), starting from
 * slot 0 of the sim at its time. 0, or -1 with a message. */
static int create_ts(implicit_solver *q, decomp *d, MPI_Comm comm, char *err, size_t len)
{
    const pj_program *p = q->p;
    sim *s = q->s;
    CHECK(TSCreate(comm, &q->ts), "TSCreate");
    CHECK(PetscObjectSetOptions((PetscObject)q->ts, q->opts), "PetscObjectSetOptions");
    SNES ts_snes;
    TSAdapt ts_adapt;
    CHECK(TSGetSNES(q->ts, &ts_snes), "TSGetSNES");
    CHECK(use_options(q, ts_snes), "PetscObjectSetOptions");
    CHECK(TSGetAdapt(q->ts, &ts_adapt), "TSGetAdapt");
    CHECK(PetscObjectSetOptions((PetscObject)ts_adapt, q->opts), "PetscObjectSetOptions");
    CHECK(TSSetDM(q->ts, q->da), "TSSetDM");
    CHECK(TSSetProblemType(q->ts, TS_NONLINEAR), "TSSetProblemType");
    if (p->scheme == PJ_BEULER) CHECK(TSSetType(q->ts, TSBEULER), "TSSetType");
    else if (p->scheme == PJ_CN) CHECK(TSSetType(q->ts, TSCN), "TSSetType");
    else if (p->scheme == PJ_BDF2) {
        CHECK(TSSetType(q->ts, TSBDF), "TSSetType");
        CHECK(TSBDFSetOrder(q->ts, 2), "TSBDFSetOrder");
    } else {
        CHECK(TSSetType(q->ts, TSARKIMEX), "TSSetType");
        CHECK(TSARKIMEXSetType(q->ts, TSARKIMEX3), "TSARKIMEXSetType");
    }
    if (p->scheme == PJ_IMEX) {
        CHECK(TSSetIFunction(q->ts, NULL, ts_ifunction, q), "TSSetIFunction");
        CHECK(TSSetIJacobian(q->ts, q->J, q->J, ts_ijacobian, q), "TSSetIJacobian");
        CHECK(TSSetRHSFunction(q->ts, q->R, ts_explicit, q), "TSSetRHSFunction");
    } else { /* the implicit form U' - F(U) too: PETSc's conversion of a right-hand side's Jacobian
                shifts its diagonal with MatShift (row by row) twice per Newton iteration */
        CHECK(TSSetIFunction(q->ts, NULL, ts_ifunction, q), "TSSetIFunction");
        CHECK(TSSetIJacobian(q->ts, q->J, q->J, ts_ijacobian, q), "TSSetIJacobian");
    }
    CHECK(TSSetExactFinalTime(q->ts, TS_EXACTFINALTIME_MATCHSTEP), "TSSetExactFinalTime");
    CHECK(TSSetMaxSteps(q->ts, 1000000000), "TSSetMaxSteps");
    CHECK(TSSetMaxTime(q->ts, 1e300), "TSSetMaxTime");
    CHECK(TSSetErrorIfStepFails(q->ts, PETSC_FALSE), "TSSetErrorIfStepFails");
    CHECK(TSSetTimeStep(q->ts, p->dt > 0 ? p->dt : 1e-3), "TSSetTimeStep");
    TSAdapt adapt;
    CHECK(TSGetAdapt(q->ts, &adapt), "TSGetAdapt");
    if (p->adapt > 0) {
        CHECK(TSAdaptSetType(adapt, TSADAPTBASIC), "TSAdaptSetType");
        CHECK(TSSetTolerances(q->ts, p->adapt * 1e-3, NULL, p->adapt, NULL), "TSSetTolerances");
    } else {
        CHECK(TSAdaptSetType(adapt, TSADAPTNONE), "TSAdaptSetType");
    }
    CHECK(TSSetFromOptions(q->ts), OPTIONS_REFUSED);
    CHECK(apply_defaults(q->opts, ts_snes), "the solver's defaults");
    if (d) CHECK(parallel_defaults(q->opts, ts_snes), "the solver's defaults");
    if (q->linear) CHECK(linear_defaults(q->opts, ts_snes), "the solver's defaults");
    /* over MPI the matrix is spread: PETSc's ICC factors one process's only */
    if (q->jac->symmetric && !d) CHECK(symmetric_defaults(q, q->opts, ts_snes), "the solver's defaults");
    if (q->cg && q->linear && p->adapt > 0) CHECK(step_tolerance_defaults(q, q->opts, ts_snes), "the solver's defaults");
    if (!d) CHECK(mg_defaults(q, ts_snes), "the multigrid levels");
    PetscScalar *x;
    CHECK(VecGetArray(q->X, &x), "VecGetArray");
    slot_to_vec(q, 0, x);
    CHECK(VecRestoreArray(q->X, &x), "VecRestoreArray");
    CHECK(TSSetSolution(q->ts, q->X), "TSSetSolution");
    CHECK(TSSetTime(q->ts, sim_time(s)), "TSSetTime");
    CHECK(TSSetUp(q->ts), "TSSetUp");
    SNES snes;
    CHECK(TSGetSNES(q->ts, &snes), "TSGetSNES");
    CHECK(SNESSetConvergenceHistory(snes, q->history, NULL, 64, PETSC_TRUE), "SNESSetConvergenceHistory");
    return 0;
fail:
    return -1;
}

implicit_solver *implicit_create_on(sim *s, decomp *d, const char *options, char *err, size_t len)
{
    const pj_program *p = sim_program(s);
    if (!PJ_SCHEME_IMPLICIT(p->scheme)) {
        diag_set(err, len, "internal error: implicit_create on an explicit program");
        return NULL;
    }
    if (decomp_petsc_start(err, len) < 0) return NULL;
    implicit_solver *q = calloc(1, sizeof *q);
    if (!q) {
        diag_set(err, len, "out of memory");
        return NULL;
    }
    q->s = s;
    q->p = p;
    if (!(q->jac = program_jacobian(p, err, len))) {
        free(q);
        return NULL;
    }
    q->nf = p->n_fields;
    q->unknown = malloc(sizeof *q->unknown * (size_t)(p->n_fields + 1));
    q->field_of = malloc(sizeof *q->field_of * (size_t)(p->n_fields + 1));
    q->cols = malloc(sizeof *q->cols * (size_t)(q->jac->n + 1) * (size_t)(p->halo + 1));
    q->vals = malloc(sizeof *q->vals * (size_t)(q->jac->n + 1) * (size_t)(p->halo + 1));
    const grid_layout *g = sim_layout(s);
    if (!q->unknown || !q->field_of || !q->cols || !q->vals) goto oom;
    for (int f = 0; f < p->n_fields; f++) {
        q->unknown[f] = p->field_has_eq[f] ? q->dof : -1;
        if (p->field_has_eq[f]) q->field_of[q->dof++] = f;
    }
    if (!q->dof) {
        diag_set(err, len, "an implicit scheme needs at least one equation");
        goto fail;
    }
    q->alpha = malloc(sizeof *q->alpha * g->elems * (size_t)q->dof * (size_t)(g->H + 2));
    if (!q->alpha) goto oom;
    q->alpha_const = ghost_rule_constant(p);
    for (int a = 0; a < 3; a++) q->n[a] = p->n[a];
    if (jacobian_plan(q) < 0) goto oom;
    if (set_blocks(q, d) < 0) goto oom;
    MPI_Comm comm = d ? PETSC_COMM_WORLD : PETSC_COMM_SELF;
    PetscInt *lx[3] = {NULL, NULL, NULL}; /* over MPI the blocks' widths along each axis */
    for (int a = 0; d && a < p->dim; a++) {
        if (!(lx[a] = malloc(sizeof *lx[a] * (size_t)q->procs[a]))) {
            for (int b = 0; b < a; b++) free(lx[b]);
            goto oom;
        }
        for (int c = 0; c < q->procs[a]; c++) lx[a][c] = (PetscInt)(q->start[a][c + 1] - q->start[a][c]);
    }
    PetscErrorCode e_da;

    int box = 0; /* a Jacobian entry off more than one axis needs the box stencil */
    for (int e = 0; e < q->jac->n; e++) {
        const int *off = q->jac->entries[e].off;
        box |= (off[0] != 0) + (off[1] != 0) + (off[2] != 0) > 1;
    }
    DMBoundaryType bt[3];
    for (int a = 0; a < 3; a++) bt[a] = p->periodic[a] ? DM_BOUNDARY_PERIODIC : DM_BOUNDARY_NONE;
    DMDAStencilType stype = box ? DMDA_STENCIL_BOX : DMDA_STENCIL_STAR;
    PetscInt sw = p->halo;
    if (p->dim == 1)
        e_da = DMDACreate1d(comm, bt[0], (PetscInt)p->n[0], q->dof, sw, lx[0], &q->da);
    else if (p->dim == 2)
        e_da = DMDACreate2d(comm, bt[0], bt[1], stype, (PetscInt)p->n[0], (PetscInt)p->n[1], q->procs[0], q->procs[1],
                            q->dof, sw, lx[0], lx[1], &q->da);
    else
        e_da = DMDACreate3d(comm, bt[0], bt[1], bt[2], stype, (PetscInt)p->n[0], (PetscInt)p->n[1], (PetscInt)p->n[2],
                            q->procs[0], q->procs[1], q->procs[2], q->dof, sw, lx[0], lx[1], lx[2], &q->da);
    for (int a = 0; a < 3; a++) free(lx[a]);
    CHECK(e_da, "DMDACreate");
    CHECK(DMSetUp(q->da), "DMSetUp");
    if (d) { /* the DMDA's block must be the sim's */
        PetscInt xs[3] = {0, 0, 0}, xm[3] = {1, 1, 1};
        CHECK(DMDAGetCorners(q->da, &xs[0], &xs[1], &xs[2], &xm[0], &xm[1], &xm[2]), "DMDAGetCorners");
        for (int a = 0; a < p->dim; a++)
            if (xs[a] != q->own.first[a] || xm[a] != q->own.n[a]) {
                diag_set(err, len, "internal error: the solver's block (axis %d: %lld + %lld) is not the "
                         "decomposition's (%lld + %lld)", a, (long long)xs[a], (long long)xm[a],
                         (long long)q->own.first[a], (long long)q->own.n[a]);
                goto fail;
            }
    }
    for (int c = 0; c < q->dof; c++) CHECK(DMDASetFieldName(q->da, c, p->field_names[q->field_of[c]]), "DMDASetFieldName");
    CHECK(DMCreateGlobalVector(q->da, &q->X), "DMCreateGlobalVector");
    CHECK(VecDuplicate(q->X, &q->R), "VecDuplicate");
    CHECK(VecDuplicate(q->X, &q->D), "VecDuplicate");
    CHECK(VecDuplicate(q->X, &q->Djc), "VecDuplicate");
    CHECK(VecDuplicate(q->X, &q->Voff), "VecDuplicate");
    CHECK(DMCreateMatrix(q->da, &q->J), "DMCreateMatrix");
    CHECK(MatSetOption(q->J, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE), "MatSetOption");
    CHECK(PetscOptionsCreate(&q->opts), "PetscOptionsCreate");
    if (insert_options(q->opts, p, options, err, len) < 0) goto fail;

    if ((p->scheme == PJ_STEADY ? create_snes(q, d, comm, err, len) : create_ts(q, d, comm, err, len)) < 0) goto fail;
    return q;
oom:
    diag_set(err, len, "out of memory");
fail:
    implicit_destroy(q);
    return NULL;
}

void implicit_destroy(implicit_solver *q)
{
    if (!q) return;
    if (q->ts) TSDestroy(&q->ts);
    if (q->snes) SNESDestroy(&q->snes);
    if (q->J) MatDestroy(&q->J);
    if (q->Jc) MatDestroy(&q->Jc);
    if (q->X) VecDestroy(&q->X);
    if (q->R) VecDestroy(&q->R);
    if (q->D) VecDestroy(&q->D);
    if (q->Djc) VecDestroy(&q->Djc);
    if (q->Voff) VecDestroy(&q->Voff);
    if (q->Dneg) VecDestroy(&q->Dneg);
    if (q->da) DMDestroy(&q->da);
    if (q->opts) PetscOptionsDestroy(&q->opts);
    free(q->unknown);
    free(q->field_of);
    free(q->alpha);
    free(q->jc_params);
    free(q->cols);
    free(q->vals);
    for (int a = 0; a < 3; a++) free(q->start[a]);
    free(q->offset);
    free(q);
}

/* PETSc 3.18's PCMG borrows the vector it is applied to as its finest level's right-hand side
 * (levels[finest]->b = b, no reference taken) and sets it back to NULL when the cycle returns. A
 * cycle that fails (a smoother's "Zero diagonal on row 0" on an all-zero Jacobian row) leaves it
 * set, and PCReset_MG later destroys it as its own: the SNES's function vector lost a reference it
 * never gave, and implicit_destroy crashed freeing it a second time. After a failed solve the
 * borrowed pointer is dropped as a successful cycle drops it. */
static void mg_forget_borrowed(SNES snes)
{
    KSP ksp;
    PC pc;
    PetscBool mg = PETSC_FALSE;
    if (SNESGetKSP(snes, &ksp) || KSPGetPC(ksp, &pc) || PetscObjectTypeCompare((PetscObject)pc, PCMG, &mg) || !mg)
        return;
    PC_MG *m = (PC_MG *)pc->data;
    if (m && m->levels && m->nlevels > 0) m->levels[m->nlevels - 1]->b = NULL;
}

static void count_snes(implicit_solver *q, SNES snes)
{
    PetscInt it = 0, lin = 0;
    PetscReal norm = 0;
    SNESGetIterationNumber(snes, &it);
    SNESGetLinearSolveIterations(snes, &lin);
    SNESGetFunctionNorm(snes, &norm);
    q->st.last_newton = (int)it;
    q->st.last_linear = (int)lin;
    q->st.last_residual = norm;
}

static int steady_solve(implicit_solver *q, char *err, size_t len)
{
    PetscScalar *x;
    CHECK(VecGetArray(q->X, &x), "VecGetArray");
    slot_to_vec(q, 0, x);
    CHECK(VecRestoreArray(q->X, &x), "VecRestoreArray");
    q->error[0] = 0;
    PetscErrorCode e = SNESSolve(q->snes, NULL, q->X);
    if (e) mg_forget_borrowed(q->snes);
    count_snes(q, q->snes);
    q->st.newton += q->st.last_newton;
    q->st.linear += q->st.last_linear;
    if (e) {
        if (q->error[0]) diag_set(err, len, "%s", q->error);
        else petsc_message(e, "the steady solve failed", err, len);
        return -1;
    }
    SNESConvergedReason reason;
    SNESGetConvergedReason(q->snes, &reason);
    CHECK(VecGetArray(q->X, &x), "VecGetArray");
    vec_to_slot(q, x, 0);
    CHECK(VecRestoreArray(q->X, &x), "VecRestoreArray");
    if (reason < 0) {
        diag_set(err, len, "the steady solve did not converge: Newton stopped after %d iterations with residual %.3g (%s)",
                 q->st.last_newton, q->st.last_residual, SNESConvergedReasons[reason]);
        return -1;
    }
    q->st.steps++;
    sim_set_clock(q->s, sim_time(q->s), sim_steps(q->s) + 1);
    return 0;
fail:
    return -1;
}

int implicit_step(implicit_solver *q, double dt, char *err, size_t len)
{
    if (q->snes) return steady_solve(q, err, len);
    double t = sim_time(q->s), target = t + dt;
    SNES snes;
    CHECK(TSGetSNES(q->ts, &snes), "TSGetSNES");
    /* the state may have been changed from outside between steps (set_field, a view) */
    PetscScalar *x;
    CHECK(VecGetArray(q->X, &x), "VecGetArray");
    slot_to_vec(q, 0, x);
    CHECK(VecRestoreArray(q->X, &x), "VecRestoreArray");
    CHECK(TSSetTime(q->ts, t), "TSSetTime");
    double eps = 1e-12 * fmax(fabs(target), dt);
    while (t < target - eps) {
        PetscReal h;
        CHECK(TSGetTimeStep(q->ts, &h), "TSGetTimeStep");
        if (q->p->adapt <= 0 || t + h > target - eps) CHECK(TSSetTimeStep(q->ts, target - t), "TSSetTimeStep");
        q->error[0] = 0;
        PetscErrorCode e = TSStep(q->ts);
        if (e) mg_forget_borrowed(snes);
        count_snes(q, snes);
        q->st.newton += q->st.last_newton;
        q->st.linear += q->st.last_linear;
        TSConvergedReason reason = TS_CONVERGED_ITERATING;
        TSGetConvergedReason(q->ts, &reason);
        PetscInt rejects = 0;
        TSGetStepRejections(q->ts, &rejects);
        q->st.rejected = rejects;
        if (e || reason < 0) {
            if (q->error[0]) diag_set(err, len, "%s", q->error);
            else if (e) petsc_message(e, "the implicit step failed", err, len);
            else
                diag_set(err, len, "Newton did not converge in the step from t = %.9g: residual %.3g after %d iterations%s%s",
                         t, q->st.last_residual, q->st.last_newton, reason < 0 ? " (" : "",
                         reason < 0 ? TSConvergedReasons[reason] : "");
            if (!q->error[0] && reason < 0) strncat(err, ")", len - strlen(err) - 1);
            return -1;
        }
        PetscReal tn;
        CHECK(TSGetTime(q->ts, &tn), "TSGetTime");
        t = tn;
        q->st.steps++;
        if (q->p->adapt <= 0) break;
    }
    CHECK(VecGetArray(q->X, &x), "VecGetArray");
    vec_to_slot(q, x, 0);
    CHECK(VecRestoreArray(q->X, &x), "VecRestoreArray");
    sim_set_clock(q->s, target, sim_steps(q->s) + 1);
    return 0;
fail:
    return -1;
}

void implicit_get_stats(const implicit_solver *q, implicit_stats *stats) { *stats = q->st; }

int implicit_residual_history(implicit_solver *q, const double **norms)
{
    SNES snes = q->snes;
    if (!snes && TSGetSNES(q->ts, &snes)) return 0;
    PetscReal *a = NULL;
    PetscInt n = 0;
    if (SNESGetConvergenceHistory(snes, &a, NULL, &n)) return 0;
    *norms = a;
    return (int)n;
}

static PetscErrorCode fd_function(SNES snes, Vec U, Vec F, void *ctx)
{
    (void)snes;
    implicit_solver *q = ctx;
    return eval_rhs(q, q->t_fd, U, F);
}

int implicit_check_jacobian(implicit_solver *q, double t, double tol, jacobian_check *r, char *err, size_t len)
{
    SNES snes = NULL;
    Mat Jfd = NULL;
    Vec U = NULL;
    PetscScalar *x;
    memset(r, 0, sizeof *r);
    r->first_bad = -1;
    if (q->d && q->nblocks > 1) {
        diag_set(err, len, "the Jacobian check runs on one process");
        return -1;
    }
    CHECK(VecDuplicate(q->X, &U), "VecDuplicate");
    CHECK(VecGetArray(U, &x), "VecGetArray");
    slot_to_vec(q, 0, x);
    CHECK(VecRestoreArray(U, &x), "VecRestoreArray");
    q->b_shifted = 0; /* J is overwritten */
    CHECK(assemble(q, t, U, q->J), "assembling the Jacobian");
    CHECK(MatDuplicate(q->J, MAT_DO_NOT_COPY_VALUES, &Jfd), "MatDuplicate");
    CHECK(SNESCreate(PETSC_COMM_SELF, &snes), "SNESCreate");
    CHECK(SNESSetDM(snes, q->da), "SNESSetDM");
    CHECK(SNESSetFunction(snes, q->R, fd_function, q), "SNESSetFunction");
    q->t_fd = t;
    CHECK(SNESComputeJacobianDefault(snes, U, Jfd, Jfd, q), "SNESComputeJacobianDefault");
    PetscInt n;
    CHECK(MatGetSize(q->J, &n, NULL), "MatGetSize");
    /* differencing's own error, the rounding of F over the step (about sqrt(eps) |F|), is a floor */
    CHECK(eval_rhs(q, t, U, q->R), "F");
    const PetscScalar *f;
    CHECK(VecGetArrayRead(q->R, &f), "VecGetArrayRead");
    PetscScalar *dense = calloc((size_t)n, sizeof *dense);
    if (!dense) {
        diag_set(err, len, "out of memory");
        goto fail;
    }
    for (PetscInt row = 0; row < n; row++) {
        PetscInt nc;
        const PetscInt *cols;
        const PetscScalar *vals;
        double scale = 0, diff = 0;
        int finite = 1;
        /* the row of J into dense[], then J_fd's subtracted: both on the same pattern */
        CHECK(MatGetRow(q->J, row, &nc, &cols, &vals), "MatGetRow");
        for (PetscInt c = 0; c < nc; c++) dense[cols[c]] += vals[c];
        CHECK(MatRestoreRow(q->J, row, &nc, &cols, &vals), "MatRestoreRow");
        CHECK(MatGetRow(Jfd, row, &nc, &cols, &vals), "MatGetRow");
        for (PetscInt c = 0; c < nc; c++) {
            finite &= isfinite(vals[c]) && isfinite(dense[cols[c]]);
            scale = fmax(scale, fabs(vals[c]));
            dense[cols[c]] -= vals[c];
        }
        for (PetscInt c = 0; c < nc; c++) {
            diff = fmax(diff, fabs(dense[cols[c]]));
            dense[cols[c]] = 0;
        }
        CHECK(MatRestoreRow(Jfd, row, &nc, &cols, &vals), "MatRestoreRow");
        r->rows++;
        if (!finite) continue;
        r->compared++;
        r->entries += nc;
        double rel = scale > 0 ? diff / scale : diff;
        if (!(diff <= tol * scale + 1e-6 * fmax(1, fabs(f[row])))) {
            r->disagree++;
            if (r->first_bad < 0) r->first_bad = row;
        } else if (diff <= tol * scale && rel > r->worst) {
            r->worst = rel;
        }
    }
    free(dense);
    VecRestoreArrayRead(q->R, &f);
    MatDestroy(&Jfd);
    VecDestroy(&U);
    SNESDestroy(&snes);
    return 0;
fail:
    if (Jfd) MatDestroy(&Jfd);
    if (U) VecDestroy(&U);
    if (snes) SNESDestroy(&snes);
    return -1;
}

#ifdef PJ_IMPLICIT_MODULE
__attribute__((visibility("default"))) const implicit_ops *pj_implicit_module_init(const implicit_host *h);
const implicit_ops *pj_implicit_module_init(const implicit_host *h)
{
    static const implicit_ops ops = {IMPLICIT_MODULE_ABI, PJ_BUILD_ID, implicit_available, implicit_create_on,
                                     implicit_destroy, implicit_step, implicit_get_stats,
                                     implicit_residual_history, implicit_check_jacobian, &decomp_module_ops};
    if (!h || h->abi != IMPLICIT_MODULE_ABI || !h->build_id || strcmp(h->build_id, PJ_BUILD_ID)) return NULL;
    host = h;
    return &ops;
}
#endif
#endif
