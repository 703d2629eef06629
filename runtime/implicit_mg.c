/* implicit_mg.c — the cell-centred multigrid hierarchy the implicit solver gives PETSc's PCMG on
 * one process, and when it is used; the direct solve of one-dimensional meshes (implicit_internal.h). */
#include "implicit_internal.h"
#include <petsc/private/pcmgimpl.h> /* mg_forget_borrowed */

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
int mg_count_levels(const implicit_solver *q, PetscInt cap)
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

/* Whether the options leave the linear solver to pdejit's defaults: they name neither a Krylov
 * method (-ksp_type) nor a preconditioner (-pc_type). Where they do, *ksp and *pc are the SNES's. */
PetscErrorCode linear_solver_unnamed(PetscOptions o, SNES snes, KSP *ksp, PC *pc, PetscBool *unnamed)
{
    PetscBool set;
    *unnamed = PETSC_FALSE;
    PetscCall(PetscOptionsHasName(o, NULL, "-ksp_type", &set));
    if (set) return 0;
    PetscCall(PetscOptionsHasName(o, NULL, "-pc_type", &set));
    if (set) return 0;
    PetscCall(SNESGetKSP(snes, ksp));
    PetscCall(KSPGetPC(*ksp, pc));
    *unnamed = PETSC_TRUE;
    return 0;
}

/* On one process, a mesh with one axis of more than one cell: a direct solve (KSPPREONLY with
 * PETSc's LU) rather than a Krylov method, unless the options (or the solver statement) name a
 * linear solver or a preconditioner. The matrix is banded (its bandwidth the stencil's times the
 * unknowns per cell), so its LU factors have no more entries than it has and cost O(cells) to
 * compute, as one matrix product does; a Krylov method's iterations grow with the mesh and the
 * problem's order instead (FiPy's tanh1D: 7246 GMRES/ILU(1) iterations, 1.0 s, against 67 solves,
 * 0.03 s; docs/solvers.md, Defaults). A direct solve is exact: nothing lags (apply_defaults). */
PetscErrorCode direct_defaults(implicit_solver *q, PetscOptions o, SNES snes)
{
    KSP ksp;
    PC pc;
    PetscBool unnamed;
    int axes = 0;
    for (int a = 0; a < 3; a++) axes += q->n[a] > 1;
    if (q->d || axes > 1) return 0;
    PetscCall(linear_solver_unnamed(o, snes, &ksp, &pc, &unnamed));
    if (!unnamed) return 0;
    PetscCall(KSPSetType(ksp, KSPPREONLY));
    PetscCall(PCSetType(pc, PCLU));
    q->direct = 1;
    return 0;
}

/* A steady problem with a symmetric Jacobian (jac->symmetric: diffusion with constant
 * coefficients, a state-dependent diagonal) on one process gets the multigrid above when the mesh
 * gives it at least three levels and the options name no linear solver and no preconditioner: its
 * iterations do not grow with the grid, ILU(1)'s do (steady Poisson at 256^2: 6 against 114;
 * docs/solvers.md, Which preconditioner wins). Time steps choose at each step (choose_pc). */
PetscErrorCode steady_defaults(implicit_solver *q, PetscOptions o, SNES snes)
{
    KSP ksp;
    PC pc;
    PetscBool unnamed;
    if (q->direct || !q->jac->symmetric || mg_count_levels(q, 0) < 3) return 0;
    PetscCall(linear_solver_unnamed(o, snes, &ksp, &pc, &unnamed));
    if (!unnamed) return 0;
    PetscCall(PCSetType(pc, PCMG));
    return 0;
}

#define WIDE_KSP_RTOL 1e-2
#define WIDE_KSP_MAX_IT 100
/* The linear solve of a wide system: GMRES(30) preconditioned by one symmetric SOR sweep (forward
 * and back, PETSc's local_symmetric) of the lagged Jacobian rather than ILU(1), each linear solve
 * to 1e-2 of its residual rather than 1e-5, unless -ksp_rtol is named: Newton's tolerance (1e-4)
 * is the accuracy. 2b at 256^2 to t = 10: 435 Newton, 2622 linear iterations (ILU(1) to 1e-5: 296,
 * 2354), 42 s of CPU against 55 (rk4: 44), the energy at t = 10 within 0.12 of ILU(1)'s (bdf2's
 * own error there: 2.7); point-block Jacobi's iterations grow 3x from 128^2 to 256^2 where SOR's
 * double. Under adapt, a linear solve stops at 100 iterations (unless -ksp_max_it is named): a GMRES that stalls on a Jacobian lagged across steps then fails fast and
 * the step is retried smaller (2b with -ts_bdf_order 3: 5590 linear iterations between t = 3 and
 * 4 without the cap, 1025 with it; the bdf2 runs never reach it). docs/performance.md, "PFHub 2b
 * implicit, round two". */
static PetscErrorCode wide_linear_defaults(implicit_solver *q, PetscOptions o, SNES snes)
{
    KSP ksp;
    PC pc;
    PetscBool set_rtol, set_maxit;
    PetscReal rtol, atol, dtol;
    PetscInt maxit;
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCSOR));
    PetscCall(PCSetFromOptions(pc)); /* -pc_sor_omega and the like, where named */
    PetscCall(PetscOptionsHasName(o, NULL, "-ksp_rtol", &set_rtol));
    PetscCall(PetscOptionsHasName(o, NULL, "-ksp_max_it", &set_maxit));
    PetscCall(KSPGetTolerances(ksp, &rtol, &atol, &dtol, &maxit));
    if (!set_rtol) rtol = WIDE_KSP_RTOL;
    if (!set_maxit && q->p->adapt > 0) maxit = WIDE_KSP_MAX_IT;
    PetscCall(KSPSetTolerances(ksp, rtol, atol, dtol, maxit));
    return 0;
}

/* A wide system in a time step (the matrix has the Jacobian's own pattern, jacobian_matrix: several
 * fields coupled over a wide stencil, PFHub 2b's c and four order parameters), nonlinear, not solved
 * by CG or directly, on one process, the options naming no linear solver, preconditioner, operator
 * or Jacobian lag: Newton's operator is matrix-free (-snes_mf_operator: F differenced along the
 * Krylov vector, one F a linear iteration, at 256^2 a third of a product with the assembled
 * matrix), and the assembled Jacobian, the preconditioner's matrix, is assembled at every 10th Newton
 * iteration, across steps, like the preconditioner (-snes_lag_jacobian 10, persisting). Newton's
 * steps are the exact Jacobian's still (the operator is the current state's), so it converges as
 * before: 2b at 128^2, the same 351 Newton and 1935 linear iterations, 36 assemblies instead of
 * 351, 11.3 s of CPU instead of 20.5. Newton stops at 1e-4 of the step's first residual (not 1e-8)
 * unless the options say (-snes_rtol, the solver statement's rtol): a differenced operator is good to
 * ~1e-8 of F, and Newton's last iterations to 1e-8 took GMRES 10x the iterations (256^2: 13 321
 * linear iterations, 241 s, against 2354 and 53 s; the energy at t = 10 within 0.12 of 2155, the
 * steps' own error ~2.6; at 128^2 the same to 7 digits). Under adapt, a step whose Newton solve fails is retried
 * smaller (-ts_max_snes_failures -1) instead of ending the run (2b at 256^2: one GMRES failure at
 * t = 9.4), and Newton takes full steps (-snes_linesearch_type basic): the step's error estimate
 * rejects a bad result, where the backtracking search failed to descend, step after smaller step, as a
 * small grain vanished (2b at 64^2, t = 9.935: dt down to 1e-21 and the run ended; with full steps
 * it goes on, and at 128^2 no step backtracked, the same iterations), at most 10 of them unless
 * -snes_max_it is named (PETSc's 50: with full steps and the linear solves below, one step of 2b at
 * 256^2 took about 70 Newton iterations near t = 4.5; capped, it fails and is retried smaller,
 * 451 Newton iterations for the run against 501, and 435 with the backtracking search; 64^2
 * still reaches t = 10). The linear solve: wide_linear_defaults above. docs/solvers.md, Defaults;
 * docs/performance.md, "PFHub 2b implicit". */
#define WIDE_SNES_RTOL 1e-4
#define WIDE_SNES_MAX_IT 10
PetscErrorCode wide_defaults(implicit_solver *q, PetscOptions o, TS ts)
{
    const char *names[] = {"-ksp_type", "-pc_type", "-snes_mf_operator", "-snes_mf", "-snes_lag_jacobian", "-snes_type"};
    PetscBool set;
    SNES snes;
    if (!q->exact_pattern || q->linear || q->cg || q->direct || q->d) return 0;
    for (int i = 0; i < 6; i++) {
        PetscCall(PetscOptionsHasName(o, NULL, names[i], &set));
        if (set) return 0;
    }
    PetscCall(TSGetSNES(ts, &snes));
    PetscCall(SNESSetUseMatrixFree(snes, PETSC_TRUE, PETSC_FALSE));
    PetscCall(SNESSetLagJacobian(snes, 10));
    PetscCall(PetscOptionsHasName(o, NULL, "-snes_lag_jacobian_persists", &set));
    if (!set) PetscCall(SNESSetLagJacobianPersists(snes, PETSC_TRUE));
    PetscReal atol, rtol, stol;
    PetscInt maxit, maxf;
    PetscCall(SNESGetTolerances(snes, &atol, &rtol, &stol, &maxit, &maxf));
    PetscCall(PetscOptionsHasName(o, NULL, "-snes_rtol", &set));
    if (!set) rtol = WIDE_SNES_RTOL; /* the differenced operator is good to ~1e-8 of F: Newton to 1e-4 */
    PetscCall(PetscOptionsHasName(o, NULL, "-snes_max_it", &set));
    if (!set && q->p->adapt > 0) maxit = WIDE_SNES_MAX_IT; /* full steps that wander fail, and are retried */
    PetscCall(SNESSetTolerances(snes, atol, rtol, stol, maxit, maxf));
    PetscCall(PetscOptionsHasName(o, NULL, "-ts_max_snes_failures", &set));
    if (!set && q->p->adapt > 0) PetscCall(TSSetMaxSNESFailures(ts, -1));
    PetscCall(PetscOptionsHasName(o, NULL, "-snes_linesearch_type", &set));
    if (!set && q->p->adapt > 0) { /* full Newton steps: the error control judges the result (below) */
        SNESLineSearch ls;
        PetscCall(SNESGetLineSearch(snes, &ls));
        PetscCall(SNESLineSearchSetType(ls, SNESLINESEARCHBASIC));
    }
    PetscCall(wide_linear_defaults(q, o, snes));
    q->wide = 1;
    return 0;
}

/* PCMG's levels, interpolations and smoothers for this mesh (nothing where it has one level only). */
PetscErrorCode mg_setup_pc(implicit_solver *q, PC pc)
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
PetscErrorCode mg_defaults(implicit_solver *q, SNES snes)
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

/* PETSc 3.18's PCMG borrows the vector it is applied to as its finest level's right-hand side
 * (levels[finest]->b = b, no reference taken) and sets it back to NULL when the cycle returns. A
 * cycle that fails (a smoother's "Zero diagonal on row 0" on an all-zero Jacobian row) leaves it
 * set, and PCReset_MG later destroys it as its own: the SNES's function vector lost a reference it
 * never gave, and implicit_destroy crashed freeing it a second time. After a failed solve the
 * borrowed pointer is dropped as a successful cycle drops it. */
void mg_forget_borrowed(SNES snes)
{
    KSP ksp;
    PC pc;
    PetscBool mg = PETSC_FALSE;
    if (SNESGetKSP(snes, &ksp) || KSPGetPC(ksp, &pc) || PetscObjectTypeCompare((PetscObject)pc, PCMG, &mg) || !mg)
        return;
    PC_MG *m = (PC_MG *)pc->data;
    if (m && m->levels && m->nlevels > 0) m->levels[m->nlevels - 1]->b = NULL;
}
