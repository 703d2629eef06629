/* implicit.c — implicit time steps and steady solves through PETSc (see implicit.h).
 *
 * Unknowns: the fields with an equation (coefficient fields stay in the state's slot 0), in a
 * DMDA with dof = their number, interlaced; the DMDA's stencil is the program's halo, a box
 * when the Jacobian couples diagonal neighbours, else a star. The state's buffers stay the home
 * of the kernels' data: PETSc's vectors are copied into slot 0 before F or the Jacobian runs
 * and F is copied out of slot 1 (the copies cost one sweep each, the solves many).
 *
 * The Jacobian: output j of the Jacobian kernel is dF(row field at cell)/dU(field at cell + off),
 * inserted by global index (PETSc's order: the blocks of the processes one after another, each
 * x fastest, the unknowns of a cell interlaced; on one process the natural order), which costs
 * less than MatSetValuesStencil's mapping per row.
 * Over MPI (a decomp: the simulation holds one block of the mesh) the DMDA, the vectors, the
 * matrix and the solvers are on PETSC_COMM_WORLD with the blocks of the decomposition (so the
 * explicit and implicit parts agree); F and the Jacobian kernel run on the block, whose ghost
 * cells the executor's fill gives (the conditions on the mesh's sides, the neighbours' values by decomp's exchange);
 * positions below are in the whole mesh, a column in another process's block is inserted there
 * by its global index.
 * A column off the grid is a ghost cell, and a ghost's value is affine in one interior cell (the
 * mirrored one, or the periodic partner): g = alpha * u_m + beta. alpha is measured exactly by
 * two ghost fills of a scratch slot (interior 0, then 1: alpha = g1 - g0; a corner's alpha is
 * the product along its axes, and comes out of the fills the same way), once, or at every
 * assembly when a boundary condition depends on time.
 * The defaults (docs/solvers.md) follow what the derived Jacobian reads; on one process PCMG gets
 * a cell-centred hierarchy (mg_setup_pc): PETSc's DMDA coarsens vertex-centred.
 * This file sets the solver up and steps it; F and the Jacobian are implicit_jacobian.c's, the
 * multigrid hierarchy implicit_mg.c's (implicit_internal.h). */
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

implicit_solver *implicit_create(const simulation *m, const char *options, char *err, size_t len)
{
    return implicit_create_on(m, NULL, options, err, len);
}

implicit_solver *implicit_create_on(const simulation *m, struct decomp *d, const char *options, char *err, size_t len)
{
    (void)m;
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
#include "implicit_internal.h"
#ifdef PJ_IMPLICIT_MODULE
const implicit_host *implicit_module_host;
#endif

/* "WHAT: PETSc error N (its text: the first line of the error's detail)" */
void petsc_message(PetscErrorCode e, const char *what, char *err, size_t len)
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

#define OPTIONS_REFUSED "the solver's options (the solver statement, --solver-options) were refused"

/* A monitor on every SNES of the solver: the norm of F it was last given is the solve's true final
 * residual norm, the number -snes_monitor prints. Newton computes it at every iteration anyway; a
 * linear solve (SNESKSPONLY) computes F at its answer only when a monitor asks (one evaluation of F
 * a step), and SNESGetFunctionNorm then says 0. */
PetscErrorCode record_norm(SNES snes, PetscInt it, PetscReal fnorm, void *ctx)
{
    (void)snes;
    (void)it;
    implicit_solver *q = ctx;
    q->fnorm = fnorm;
    q->fnorm_set = 1;
    return 0;
}

/* F(t, U, U') = M U' - F(U) (imex: F_implicit), its Jacobian shift M - dF/dU; imex: G = F_explicit.
 * M is the identity but on the rows of an algebraic equation (eq 0 = EXPR, F's row EXPR), where it
 * is 0: a DAE of index 1, whose row -EXPR = 0 beuler and bdf2 impose at the end of every step. */
PetscErrorCode ts_ifunction(TS ts, PetscReal t, Vec U, Vec Udot, Vec F, void *ctx)
{
    (void)ts;
    implicit_solver *q = ctx;
    PetscCall(eval_stage(ctx, PJ_KERNEL_RHS_IMPLICIT, t, U, F));
    if (!q->n_alg) {
        PetscCall(VecAYPX(F, -1.0, Udot));
        return 0;
    }
    PetscScalar *f;
    const PetscScalar *ud;
    PetscInt n;
    PetscCall(VecGetLocalSize(F, &n));
    PetscCall(VecGetArray(F, &f));
    PetscCall(VecGetArrayRead(Udot, &ud));
    for (PetscInt i = 0; i < n; i++) f[i] = q->alg[i % q->dof] ? -f[i] : ud[i] - f[i];
    PetscCall(VecRestoreArrayRead(Udot, &ud));
    PetscCall(VecRestoreArray(F, &f));
    return 0;
}

/* B += shift M in one sweep over the diagonal (MatShift inserts it row by row with MatSetValues
 * and assembles: most of a copied Jacobian's cost) */
static PetscErrorCode add_shift(implicit_solver *q, Mat B, PetscReal shift)
{
    if (q->n_alg) {
        PetscCall(VecCopy(q->M, q->D));
        PetscCall(VecScale(q->D, shift));
    } else {
        PetscCall(VecSet(q->D, shift));
    }
    PetscCall(MatDiagonalSet(B, q->D, ADD_VALUES));
    return 0;
}

/* A symmetric problem's preconditioner for a time step of this shift (q->mg_auto): CG's iterations
 * with ICC(1) grow with the stiffness of shift I - J, max |J_ii| / shift (about 4 dt / h^2 per
 * axis pair for heat, the shift of backward Euler being 1 / dt), and the multigrid's do not: on
 * 2D heat at 256^2, 37 ICC iterations a step against 5 V-cycles at a ratio of 330 (about the same
 * CPU time), 103 against 5 at 3300 (multigrid 2.4x faster), 184 against 5 at 33 000 (3.9x);
 * docs/performance.md. Multigrid from a ratio of MG_STIFF_ON, ICC again below MG_STIFF_OFF (the
 * gap keeps an adaptive step from switching back and forth). Where the solve stops at the step's
 * accuracy (q->tol_auto: a reduction of 10-100 from the predictor, 1-3 iterations), below
 * DIAG_STIFF_ON (until DIAG_STIFF_OFF) the diagonal alone, PCJACOBI: shift I - J is then so
 * dominated by its diagonal that Jacobi's CG converges in a few iterations whatever the mesh (for
 * heat its condition number is at most 1 + 2 x the ratio), each a third of an ICC(1) iteration's
 * cost, with no factorization; the small steps of an adaptive run's start. To Newton's 1e-8, ICC's
 * stronger iterations win even there (docs/performance.md, "Stiff heat, round four"). B holds J
 * (before the shift). */
#define MG_STIFF_ON 300.0
#define MG_STIFF_OFF 150.0
#define DIAG_STIFF_ON 3.0
#define DIAG_STIFF_OFF 5.0
enum { PC_AUTO_ICC, PC_AUTO_MG, PC_AUTO_DIAG };
static PetscErrorCode choose_pc(implicit_solver *q, TS ts, PetscReal shift, Mat B)
{
    if (!q->cg) return 0;
    if (B) { /* else q->dmax is B's still */
        PetscCall(MatGetDiagonal(B, q->D));
        PetscCall(VecNorm(q->D, NORM_INFINITY, &q->dmax));
    }
    double stiff = shift > 0 ? q->dmax / shift : PETSC_MAX_REAL;
    int want = PC_AUTO_ICC;
    if (q->mg_auto && stiff >= (q->pc_auto == PC_AUTO_MG ? MG_STIFF_OFF : MG_STIFF_ON)) want = PC_AUTO_MG;
    else if (q->tol_auto && stiff < (q->pc_auto == PC_AUTO_DIAG ? DIAG_STIFF_OFF : DIAG_STIFF_ON)) want = PC_AUTO_DIAG;
    if (want == q->pc_auto) return 0;
    SNES snes;
    KSP ksp;
    PC pc;
    PetscCall(TSGetSNES(ts, &snes));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetPC(ksp, &pc));
    if (want == PC_AUTO_MG) {
        PetscCall(PCSetType(pc, PCMG));
        PetscCall(mg_setup_pc(q, pc));
    } else if (want == PC_AUTO_DIAG) {
        PetscCall(PCSetType(pc, PCJACOBI));
    } else {
        PetscCall(PCSetType(pc, PCICC));
        PetscCall(PCFactorSetLevels(pc, 1));
        PetscCall(PCSetFromOptions(pc));
    }
    q->pc_auto = want;
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
    q->pc_auto = 0;
    return 0;
}

/* An adaptive step of a linear problem with CG (q->tol_auto): the linear solve stops when its error
 * is below a third of what the step controller allows, LIN_TOL_FRACTION (atol + rtol max |U|), in
 * every cell (-pj_lin_fraction F sets the fraction), instead of at Newton's 1e-8 relative reduction
 * of the residual, which is far more than the step's own accuracy (TSADAPTBASIC's tolerances) needs. The bound is Varah's: a matrix A with
 * a_ii - sum over j != i of |a_ij| >= m > 0 in every row has ||A^-1||_inf <= 1 / m; for A = shift I
 * - J, m = shift - q->gershgorin, so the error of a solve with residual r is at most ||r||_inf / m
 * <= ||r||_2 / m, and CG's unpreconditioned residual norm ||r||_2 is tested against m times the
 * bound (KSP's absolute tolerance; Newton's relative one still applies, whichever is reached first).
 * Heat, 256^2, bdf2 with adapt: half the CG iterations, the same errors; a third rather than a tenth:
 * 14-16 % fewer again, the same steps and errors (docs/performance.md, "Stiff heat, round two"). */
#define LIN_TOL_FRACTION 0.3
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
    double m = shift - q->gershgorin, bound = q->lin_fraction * (q->ts_atol + q->ts_rtol * umax);
    atol = m > 0 && isfinite(m * bound) ? fmax(q->ksp_atol, m * bound) : q->ksp_atol;
    PetscCall(KSPSetTolerances(ksp, rtol, atol, dtol, maxit));
    return 0;
}

/* shift I - J into B. A Jacobian assembled once (jac_reuse) is shifted where B held it already,
 * shifted for an earlier step: only the diagonal is written, -Jc_ii + shift, the same values as
 * copying, negating and shifting the whole matrix (a sweep over it, twice). */
PetscErrorCode ts_ijacobian(TS ts, PetscReal t, Vec U, Vec Udot, PetscReal shift, Mat A, Mat B, void *ctx)
{
    (void)Udot;
    implicit_solver *q = ctx;
    check_params(q);
    q->shift = shift;
    if (A != B) { /* a matrix-free operator (-snes_mf_operator): its assembly takes U as its base */
        PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
        PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    }
    int fast = q->jac_reuse && q->jc_valid && q->b_shifted;
    if (!fast) PetscCall(jacobian_into(q, t, U, B));
    PetscCall(choose_pc(q, ts, shift, fast ? NULL : B));
    PetscCall(keep_cg(q, ts, shift));
    PetscCall(step_tolerance(q, ts, shift, U));
    if (fast) {
        PetscCall(VecCopy(q->Dneg, q->D));
        if (q->n_alg) PetscCall(VecAXPY(q->D, shift, q->M));
        else PetscCall(VecShift(q->D, shift));
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
    return eval_rhs(q, q->m.st->t, U, F);
}

static PetscErrorCode snes_jacobian(SNES snes, Vec U, Mat A, Mat B, void *ctx)
{
    (void)snes;
    (void)A;
    implicit_solver *q = ctx;
    q->b_shifted = 0; /* J is dF/dU now, not a pseudo-time step's shift M - dF/dU */
    return jacobian_into(q, q->m.st->t, U, B);
}

/* pdejit's defaults where PETSc's differ, set on the objects after the options were read, and
 * only where the options do not name them: ILU(1) rather than ILU(0), no cap on the length of a
 * Newton step (PETSc's line search shortens any step longer than 1e8), and, when the linear
 * solver is a Krylov method (not preonly: a lagged direct solve would no longer be Newton's),
 * the preconditioner rebuilt at every 10th Jacobian, across steps, rather than at each: Newton
 * still applies the exact Jacobian of every iteration as the operator; only the preconditioner
 * lags. Measured in docs/performance.md ("Implicit solves against FiPy"). */
PetscErrorCode apply_defaults(PetscOptions o, SNES snes)
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

/* A symmetric Jacobian (jac->symmetric: by its structure, at every state) in a time step: conjugate
 * gradients with incomplete Cholesky, ICC(1), rather than GMRES with ILU(1), unless the options
 * name a linear solver or a preconditioner (keep_cg gives way to GMRES where shift I - J is not
 * positive definite). CG keeps no basis to orthogonalise against; ICC stores half of ILU's factor.
 * Measured in docs/performance.md ("Implicit solves against FiPy"). */
static PetscErrorCode symmetric_defaults(implicit_solver *q, PetscOptions o, SNES snes)
{
    KSP ksp;
    PC pc;
    PetscBool unnamed;
    if (q->direct) return 0;
    PetscCall(linear_solver_unnamed(o, snes, &ksp, &pc, &unnamed));
    if (!unnamed) return 0;
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
    PetscReal frac = LIN_TOL_FRACTION;
    PetscCall(PetscOptionsGetReal(o, NULL, "-pj_lin_fraction", &frac, NULL));
    q->lin_fraction = frac > 0 && frac <= 1 ? frac : LIN_TOL_FRACTION;
    if (!(q->ts_atol >= 0 && q->ts_rtol >= 0)) return 0;
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetTolerances(ksp, &rtol, &q->ksp_atol, &dtol, &maxit));
    PetscCall(KSPSetNormType(ksp, KSP_NORM_UNPRECONDITIONED));
    q->tol_auto = 1;
    return 0;
}

/* The solver statement, then the user's options (later ones win), into this solver's own options
 * database: two simulations in one process never see each other's options. */
static int insert_options(implicit_solver *q, PetscOptions o, const pj_program *p, const char *options, char *err,
                          size_t len)
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
        q->hide_hypre = !strcmp(pc, "hypre") && !(options && strstr(options, "-pc_hypre_type"));
        q->hide_mg = !strcmp(pc, "mg") && !(options && strstr(options, "-pc_mg_galerkin"));
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
PetscErrorCode use_options(implicit_solver *q, SNES snes)
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

implicit_solver *implicit_create(const simulation *m, const char *options, char *err, size_t len)
{
    return implicit_create_on(m, NULL, options, err, len);
}

/* imex's implicit part is 0 in every equation (no implicit(...) term: each output a constant 0). */
static int imex_all_explicit(const pj_program *p)
{
    const kir_kernel *k = p->rhs_implicit;
    if (!k) return 0;
    for (int i = 0; i < k->n_outputs; i++) {
        const kir_node *nd = &k->nodes[k->outputs[i].node];
        if (nd->op != KIR_CONST || nd->value != 0) return 0;
    }
    return 1;
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
    CHECK(direct_defaults(q, q->opts, q->snes), "the solver's defaults");
    CHECK(apply_defaults(q->opts, q->snes), "the solver's defaults");
    if (d) CHECK(parallel_defaults(q->opts, q->snes), "the solver's defaults");
    if (q->linear) CHECK(linear_defaults(q->opts, q->snes), "the solver's defaults");
    if (!d) CHECK(steady_defaults(q, q->opts, q->snes), "the solver's defaults");
    if (!d) CHECK(mg_defaults(q, q->snes), "the multigrid levels");
    CHECK(steady_setup(q), OPTIONS_REFUSED);
    CHECK(SNESSetConvergenceHistory(q->snes, q->history, NULL, 64, PETSC_TRUE), "SNESSetConvergenceHistory");
    CHECK(SNESMonitorSet(q->snes, record_norm, q, NULL), "SNESMonitorSet");
    return 0;
fail:
    return -1;
}

/* A time-stepping scheme's TS on q->da (its SNES, adaptivity and pdejit's defaults), starting from
 * slot 0 of the simulation at its time. 0, or -1 with a message. */
static int create_ts(implicit_solver *q, decomp *d, MPI_Comm comm, char *err, size_t len)
{
    const pj_program *p = q->p;
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
        if (q->n_alg) { /* the error estimate is the differential unknowns': an algebraic one has no
                           local error of its own (it follows them; its initial value need not fit) */
            Vec va, vr;
            CHECK(VecDuplicate(q->M, &va), "VecDuplicate");
            CHECK(VecDuplicate(q->M, &vr), "VecDuplicate");
            CHECK(VecSet(va, PETSC_MAX_REAL), "VecSet");
            CHECK(VecPointwiseMin(va, va, q->M), "VecPointwiseMin");   /* 0 or 1 */
            CHECK(VecShift(va, -1.0), "VecShift");                    /* -1 algebraic, 0 else */
            CHECK(VecScale(va, -1e300), "VecScale");                  /* 1e300 algebraic, 0 else */
            CHECK(VecCopy(va, vr), "VecCopy");
            CHECK(VecShift(va, p->adapt * 1e-3), "VecShift");
            CHECK(VecShift(vr, p->adapt), "VecShift");
            PetscErrorCode e_tol = TSSetTolerances(q->ts, p->adapt * 1e-3, va, p->adapt, vr);
            VecDestroy(&va);
            VecDestroy(&vr);
            CHECK(e_tol, "TSSetTolerances");
        } else {
            CHECK(TSSetTolerances(q->ts, p->adapt * 1e-3, NULL, p->adapt, NULL), "TSSetTolerances");
        }
    } else {
        CHECK(TSAdaptSetType(adapt, TSADAPTNONE), "TSAdaptSetType");
    }
    CHECK(TSSetFromOptions(q->ts), OPTIONS_REFUSED);
    CHECK(direct_defaults(q, q->opts, ts_snes), "the solver's defaults");
    CHECK(apply_defaults(q->opts, ts_snes), "the solver's defaults");
    if (d) CHECK(parallel_defaults(q->opts, ts_snes), "the solver's defaults");
    if (q->linear) CHECK(linear_defaults(q->opts, ts_snes), "the solver's defaults");
    /* over MPI the matrix is spread: PETSc's ICC factors one process's only; with an algebraic
       equation shift M - J is not definite (its rows have no shift) */
    if (q->jac->symmetric && !d && !q->n_alg) CHECK(symmetric_defaults(q, q->opts, ts_snes), "the solver's defaults");
    if (q->cg && q->linear && p->adapt > 0) CHECK(step_tolerance_defaults(q, q->opts, ts_snes), "the solver's defaults");
    CHECK(wide_defaults(q, q->opts, q->ts), "the solver's defaults");
    if (!d) CHECK(mg_defaults(q, ts_snes), "the multigrid levels");
    CHECK(conserve_setup(q, ts_snes), "the conservation check");
    PetscScalar *x;
    CHECK(VecGetArray(q->X, &x), "VecGetArray");
    slot_to_vec(q, 0, x);
    CHECK(VecRestoreArray(q->X, &x), "VecRestoreArray");
    CHECK(TSSetSolution(q->ts, q->X), "TSSetSolution");
    CHECK(TSSetTime(q->ts, q->m.st->t), "TSSetTime");
    CHECK(TSSetUp(q->ts), "TSSetUp");
    SNES snes;
    CHECK(TSGetSNES(q->ts, &snes), "TSGetSNES");
    CHECK(SNESSetConvergenceHistory(snes, q->history, NULL, 64, PETSC_TRUE), "SNESSetConvergenceHistory");
    CHECK(SNESMonitorSet(snes, record_norm, q, NULL), "SNESMonitorSet");
    return 0;
fail:
    return -1;
}

implicit_solver *implicit_create_on(const simulation *m, decomp *d, const char *options, char *err, size_t len)
{
    const pj_program *p = m->st->p;
    if (!PJ_SCHEME_IMPLICIT(p->scheme)) {
        diag_set(err, len, "internal error: implicit_create on an explicit program");
        return NULL;
    }
    if (m->ops->device || m->st->esz != sizeof(double) || !m->ops->run || !m->ops->step.fill || !m->ops->refresh) {
        diag_set(err, len, "internal error: the implicit solver needs double buffers in host memory and an "
                           "executor that runs kernels and fills ghosts");
        return NULL;
    }
    if (decomp_petsc_start(err, len) < 0) return NULL;
    implicit_solver *q = calloc(1, sizeof *q);
    if (!q) {
        diag_set(err, len, "out of memory");
        return NULL;
    }
    q->m = *m;
    q->p = p;
    if (!(q->jac = program_jacobian(p, err, len))) {
        free(q);
        return NULL;
    }
    q->nf = p->n_fields;
    q->unknown = malloc(sizeof *q->unknown * (size_t)(p->n_fields + 1));
    q->field_of = malloc(sizeof *q->field_of * (size_t)(p->n_fields + 1));
    q->alg = calloc((size_t)p->n_fields + 1, sizeof *q->alg);
    q->cols = malloc(sizeof *q->cols * (size_t)(q->jac->n + 1) * (size_t)(p->halo + 1));
    q->vals = malloc(sizeof *q->vals * (size_t)(q->jac->n + 1) * (size_t)(p->halo + 1));
    const grid_layout *g = &m->st->g;
    if (!q->unknown || !q->field_of || !q->alg || !q->cols || !q->vals) goto oom;
    for (int f = 0; f < p->n_fields; f++) {
        q->unknown[f] = p->field_has_eq[f] ? q->dof : -1;
        if (p->field_has_eq[f]) {
            q->alg[q->dof] = p->field_algebraic && p->field_algebraic[f];
            q->n_alg += q->alg[q->dof];
            q->field_of[q->dof++] = f;
        }
    }
    if (q->n_alg && (p->scheme == PJ_CN || p->scheme == PJ_IMEX)) { /* the front end refuses these */
        diag_set(err, len, "internal error: cn and imex cannot solve an algebraic equation");
        goto fail;
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
    if (d) { /* the DMDA's block must be the simulation's */
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
    if (q->n_alg) { /* the mass's diagonal: 1, 0 on the algebraic rows */
        PetscScalar *m;
        PetscInt nl;
        CHECK(VecDuplicate(q->X, &q->M), "VecDuplicate");
        CHECK(VecGetLocalSize(q->M, &nl), "VecGetLocalSize");
        CHECK(VecGetArray(q->M, &m), "VecGetArray");
        for (PetscInt i = 0; i < nl; i++) m[i] = q->alg[i % q->dof] ? 0.0 : 1.0;
        CHECK(VecRestoreArray(q->M, &m), "VecRestoreArray");
    }
    CHECK(jacobian_matrix(q, &q->J), "DMCreateMatrix");
    CHECK(MatSetOption(q->J, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE), "MatSetOption");
    CHECK(PetscOptionsCreate(&q->opts), "PetscOptionsCreate");
    if (insert_options(q, q->opts, p, options, err, len) < 0) goto fail;
    if (p->scheme == PJ_IMEX && imex_all_explicit(p))
        snprintf(q->note, sizeof q->note, "imex: the problem has no implicit(...) term: every term is taken "
                 "explicitly (ARKIMEX3's explicit half), with a linear solve of the empty implicit part at each stage; "
                 "an explicit scheme (rk3) takes the same terms without the solves");

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
    if (q->pts) TSDestroy(&q->pts);
    if (q->pda) DMDestroy(&q->pda);
    if (q->X0) VecDestroy(&q->X0);
    if (q->snes) SNESDestroy(&q->snes);
    if (q->J) MatDestroy(&q->J);
    if (q->Jc) MatDestroy(&q->Jc);
    if (q->X) VecDestroy(&q->X);
    if (q->R) VecDestroy(&q->R);
    if (q->D) VecDestroy(&q->D);
    if (q->Djc) VecDestroy(&q->Djc);
    if (q->Voff) VecDestroy(&q->Voff);
    if (q->Dneg) VecDestroy(&q->Dneg);
    if (q->M) VecDestroy(&q->M);
    if (q->da) DMDestroy(&q->da);
    if (q->opts) PetscOptionsDestroy(&q->opts);
    free(q->unknown);
    free(q->field_of);
    free(q->alg);
    free(q->alpha);
    free(q->jc_params);
    free(q->conserved);
    free(q->cons_add);
    free(q->cons_abs);
    if (q->cons_e) VecDestroy(&q->cons_e);
    if (q->cons_z) VecDestroy(&q->cons_z);
    free(q->cols);
    free(q->vals);
    for (int a = 0; a < 3; a++) free(q->start[a]);
    free(q->offset);
    free(q);
}

void count_snes(implicit_solver *q, SNES snes)
{
    PetscInt it = 0, lin = 0;
    PetscReal norm = NAN;
    SNESGetIterationNumber(snes, &it);
    SNESGetLinearSolveIterations(snes, &lin);
    if (q->fnorm_set) norm = q->fnorm; /* record_norm: what -snes_monitor prints last */
    else SNESGetFunctionNorm(snes, &norm);
    q->st.last_newton = (int)it;
    q->st.last_linear = (int)lin;
    q->st.last_residual = norm;
}

int implicit_step(implicit_solver *q, double dt, char *err, size_t len)
{
    if (q->snes) return steady_solve(q, err, len);
    double t = q->m.st->t, target = t + dt;
    SNES snes;
    CHECK(TSGetSNES(q->ts, &snes), "TSGetSNES");
    /* the state may have been changed from outside between steps (set_field, a view) */
    PetscScalar *x;
    CHECK(VecGetArray(q->X, &x), "VecGetArray");
    slot_to_vec(q, 0, x);
    CHECK(VecRestoreArray(q->X, &x), "VecRestoreArray");
    CHECK(TSSetTime(q->ts, t), "TSSetTime");
    double eps = 1e-12 * fmax(fabs(target), dt);
    int64_t accepted = 0; /* TS steps taken in this call (several under error control) */
    while (t < target - eps) {
        PetscReal h;
        CHECK(TSGetTimeStep(q->ts, &h), "TSGetTimeStep");
        if (q->p->adapt <= 0 || t + h > target - eps) CHECK(TSSetTimeStep(q->ts, target - t), "TSSetTimeStep");
        q->error[0] = 0;
        q->fnorm_set = 0;
        PetscErrorCode e = TSStep(q->ts);
        if (e) mg_forget_borrowed(snes);
        count_snes(q, snes);
        int solve_newton = q->st.last_newton; /* the last solve's own, for a failure's message */
        /* every solve of the step counted (its stages, the attempts the controller rejected): TS's
           totals, not only the last SNES solve's */
        PetscInt ts_newton = 0, ts_linear = 0;
        TSGetSNESIterations(q->ts, &ts_newton);
        TSGetKSPIterations(q->ts, &ts_linear);
        q->st.last_newton = (int)(ts_newton - q->st.newton);
        q->st.last_linear = (int)(ts_linear - q->st.linear);
        q->st.newton = ts_newton;
        q->st.linear = ts_linear;
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
                         t, q->st.last_residual, solve_newton, reason < 0 ? " (" : "",
                         reason < 0 ? TSConvergedReasons[reason] : "");
            if (!q->error[0] && reason < 0) strncat(err, ")", len - strlen(err) - 1);
            return -1;
        }
        PetscReal tn;
        CHECK(TSGetTime(q->ts, &tn), "TSGetTime");
        q->st.last_dt = tn - t;
        t = tn;
        q->st.steps++;
        accepted++;
        if (q->p->adapt <= 0) break;
    }
    CHECK(VecGetArray(q->X, &x), "VecGetArray");
    vec_to_slot(q, x, 0);
    CHECK(VecRestoreArray(q->X, &x), "VecRestoreArray");
    /* the simulation's step count is the scheme's: every accepted step (pj_sim_steps, sim.steps) */
    solver_set_clock(q, target, q->m.st->steps + (accepted > 0 ? accepted : 1));
    return 0;
fail:
    return -1;
}

/* The options of the solver's database that no solver read (PetscOptionsLeftGet): misspelt, or for an
 * object this run does not have (-ts_bdf_order on a steady solve), less those pdejit derived from
 * the solver statement itself (-pc_hypre_type boomeramg for pc = hypre). */
static void list_unused(implicit_solver *q)
{
    PetscInt n = 0;
    char **names = NULL, **values = NULL;
    q->unused[0] = 0;
    q->st.n_unused = 0;
    if (!q->opts || PetscOptionsLeftGet(q->opts, &n, &names, &values)) return;
    size_t at = 0;
    for (PetscInt i = 0; i < n; i++) {
        const char *name = names[i][0] == '-' ? names[i] + 1 : names[i];
        if ((q->hide_hypre && !strcmp(name, "pc_hypre_type")) || (q->hide_mg && !strcmp(name, "pc_mg_galerkin")))
            continue;
        q->st.n_unused++;
        int w = snprintf(q->unused + at, sizeof q->unused - at, "%s-%s", at ? " " : "", name);
        if (w > 0 && (size_t)w < sizeof q->unused - at) at += (size_t)w;
        else if (at + 4 < sizeof q->unused) { /* the list is cut: say so */
            snprintf(q->unused + at, sizeof q->unused - at, " ...");
            at = sizeof q->unused;
        }
    }
    PetscOptionsLeftRestore(q->opts, &n, &names, &values);
}

void implicit_get_stats(const implicit_solver *q, implicit_stats *stats)
{
    implicit_solver *m = (implicit_solver *)q; /* a solver is never const: the lists are refreshed */
    list_unused(m);
    m->st.steady = q->snes != NULL;
    m->st.adaptive = q->p->adapt > 0;
    m->st.unused = m->unused;
    m->st.note = m->note;
    *stats = q->st;
}

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
