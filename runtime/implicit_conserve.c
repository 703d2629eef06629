/* implicit_conserve.c — conservation by default in implicit time steps (implicit_internal.h;
 * docs/solvers.md, "Conservation").
 *
 * A field whose equation is in divergence form with no-flux or periodic sides has sum_cells F_f(U) = 0
 * at every state and time: e_f^T dF/dU = 0 (e_f: 1 at field f's unknowns). The operator of a time
 * step's linear solve is A = shift M - dF/dU, so e_f^T A = shift e_f^T on such a field, and Newton's
 * update Y (A Y = b, b the implicit form's residual) moves the field's sum by exactly
 * e_f^T b / shift when the linear solve is exact. An iterative solve stopped at its tolerance is
 * not; its residual's sum over the field is what the integral drifts by (2.9e-12 over 1000 steps
 * of Cahn-Hilliard at the defaults). The projection: after every linear solve (KSPSetPostSolve)
 * the update of each such field gets a constant, c_f = e_f^T b / (shift N_f) - mean_f(Y), which
 * makes e_f^T (b - A Y) = 0, that is, the sum of the field after the step equal to its sum before
 * (to rounding), whatever the Krylov tolerance and whichever Newton iteration or line search
 * follows. It costs two reductions per field per linear solve.
 *
 * Which fields: detected when the solver is made, by F at two pseudo-random states at two odd
 * times and at the initial state: |sum F_f| <= 1e-10 sum |F_f| at all three (a Dirichlet side, a
 * source, a flux through a side or a non-conservative term gives a sum of the size of the terms
 * there). Algebraic equations (eq 0 = ...) are never projected. `-pj_conserve false` in the
 * solver options turns it off. */
#include "implicit_internal.h"

#define CONSERVE_TOL 1e-10

/* F_f's sum and the sum of |F_f| at the state in U (time t), per unknown, into sum, abs; where F
 * cannot be evaluated there (a ghost fill that fails), NaN: no field is taken as conserved. */
static PetscErrorCode sums_at(implicit_solver *q, double t, Vec U, Vec F, PetscScalar *sum, PetscReal *abs)
{
    if (eval_rhs(q, t, U, F)) {
        q->error[0] = 0;
        for (int c = 0; c < q->dof; c++) sum[c] = abs[c] = NAN;
        return 0;
    }
    for (int c = 0; c < q->dof; c++) {
        PetscCall(VecStrideSum(F, c, &sum[c]));
        PetscCall(VecStrideNorm(F, c, NORM_1, &abs[c]));
    }
    return 0;
}

/* q->conserved[c] for every unknown, from F at two scrambled states and at the initial one; the
 * state in slot 0 is put back (and its ghosts filled again by the last evaluation). */
static PetscErrorCode detect(implicit_solver *q, double t0)
{
    Vec U0, U, F;
    PetscScalar *sum = q->cons_add, *u;
    PetscReal *abs = q->cons_abs;
    PetscInt n, lo;
    PetscCall(VecDuplicate(q->X, &U0));
    PetscCall(VecDuplicate(q->X, &U));
    PetscCall(VecDuplicate(q->X, &F));
    PetscCall(VecGetArray(U0, &u));
    slot_to_vec(q, 0, u);
    PetscCall(VecRestoreArray(U0, &u));
    for (int c = 0; c < q->dof; c++) q->conserved[c] = !q->alg[c];
    PetscCall(VecGetOwnershipRange(U, &lo, NULL));
    PetscCall(VecGetLocalSize(U, &n));
    for (int trial = 0; trial < 3; trial++) {
        if (trial < 2) { /* values 0.2 .. 0.8, different in every cell and field */
            PetscCall(VecGetArray(U, &u));
            for (PetscInt i = 0; i < n; i++) u[i] = 0.5 + 0.3 * sin(1.7 * (double)(lo + i) + 2.3 * trial + 0.77);
            PetscCall(VecRestoreArray(U, &u));
        }
        double t = trial == 0 ? t0 + 0.3719 : trial == 1 ? t0 + 1.6183 : t0;
        PetscCall(sums_at(q, t, trial < 2 ? U : U0, F, sum, abs));
        for (int c = 0; c < q->dof; c++)
            if (!(fabs(sum[c]) <= CONSERVE_TOL * abs[c])) q->conserved[c] = 0;
    }
    PetscCall(VecDestroy(&U));
    PetscCall(VecDestroy(&F));
    PetscCall(VecDestroy(&U0));
    return 0;
}

/* The shift of a matrix-free operator A (a wide system's -snes_mf_operator: the assembled J is
 * lagged, and q->shift with it): e_f^T A e_f / N_f for the first conserved field f, one product,
 * i.e. one F, made again only when the step's try changes (its time, dt or number). */
static PetscErrorCode mf_shift(implicit_solver *q, Mat A, Vec like, PetscReal *shift)
{
    PetscReal t, dt;
    PetscInt step;
    PetscCall(TSGetTime(q->ts, &t));
    PetscCall(TSGetTimeStep(q->ts, &dt));
    PetscCall(TSGetStepNumber(q->ts, &step));
    if (q->cons_e && t == q->mf_t && dt == q->mf_dt && step == q->mf_step) {
        *shift = q->mf_shift;
        return 0;
    }
    int f = 0;
    while (!q->conserved[f]) f++;
    if (!q->cons_e) {
        PetscCall(VecDuplicate(like, &q->cons_e));
        PetscCall(VecDuplicate(like, &q->cons_z));
    }
    PetscCall(VecSet(q->cons_e, 0));
    PetscCall(VecStrideSet(q->cons_e, f, 1));
    PetscCall(MatMult(A, q->cons_e, q->cons_z));
    PetscScalar s;
    PetscInt N;
    PetscCall(VecStrideSum(q->cons_z, f, &s));
    PetscCall(VecGetSize(like, &N));
    q->mf_shift = s / (double)(N / q->dof);
    q->mf_t = t;
    q->mf_dt = dt;
    q->mf_step = step;
    *shift = q->mf_shift;
    return 0;
}

/* After a step's linear solve A Y = b: each conserved field's update shifted by the constant that
 * makes its residual's sum 0 (e_f^T A = shift e_f^T), the shift q->shift where A is the assembled
 * Jacobian, measured (mf_shift) where A is a wide system's matrix-free operator. */
static PetscErrorCode project(KSP ksp, Vec b, Vec y, void *ctx)
{
    implicit_solver *q = ctx;
    Mat A;
    PetscReal shift = q->shift;
    PetscCall(KSPGetOperators(ksp, &A, NULL));
    if (A != q->J) {
        if (!q->wide) return 0;
        PetscCall(mf_shift(q, A, y, &shift));
    }
    if (!(shift > 0)) return 0;
    PetscInt n, N;
    PetscCall(VecGetSize(y, &N));
    PetscCall(VecGetLocalSize(y, &n));
    double cells = (double)(N / q->dof);
    PetscScalar *add = q->cons_add;
    for (int c = 0; c < q->dof; c++) {
        add[c] = 0;
        if (!q->conserved[c]) continue;
        PetscScalar sb, sy;
        PetscCall(VecStrideSum(b, c, &sb));
        PetscCall(VecStrideSum(y, c, &sy));
        add[c] = (sb / shift - sy) / cells;
    }
    PetscScalar *v;
    PetscCall(VecGetArray(y, &v));
    for (PetscInt i = 0; i < n; i++) v[i] += add[i % q->dof];
    PetscCall(VecRestoreArray(y, &v));
    return 0;
}

PetscErrorCode conserve_setup(implicit_solver *q, SNES snes)
{
    PetscBool on = PETSC_TRUE, set;
    PetscCall(PetscOptionsGetBool(q->opts, NULL, "-pj_conserve", &on, &set));
    q->n_conserved = 0;
    if (!on) return 0;
    if (!(q->conserved = calloc((size_t)q->dof, sizeof *q->conserved)) ||
        !(q->cons_add = calloc((size_t)q->dof, sizeof *q->cons_add)) ||
        !(q->cons_abs = calloc((size_t)q->dof, sizeof *q->cons_abs)))
        SETERRQ(PETSC_COMM_SELF, PETSC_ERR_MEM, "out of memory");
    PetscCall(detect(q, q->m.st->t));
    for (int c = 0; c < q->dof; c++) q->n_conserved += q->conserved[c];
    if (!q->n_conserved) return 0;
    KSP ksp;
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPSetPostSolve(ksp, project, q));
    return 0;
}
