/* implicit_steady.c — steady solves, F(U) = 0 (implicit_internal.h; docs/solvers.md, "Steady solves").
 *
 * Newton first (q->snes: PETSc's newtonls with its backtracking line search, or one linear solve for
 * a linear problem), from the initial fields: most problems converge there in a few iterations.
 * Where it fails (a diverged line search, the iteration limit, a failed linear solve), pseudo-transient
 * continuation from the initial fields again: PETSc's TSPSEUDO on dt(U) = F(U), backward Euler
 * steps solved by Newton, whose step grows as the residual falls (switched evolution relaxation,
 * PETSc's rule: dt_{k+1} = 1.1 dt_k ||F_{k-1}|| / ||F_k||) until the steps are Newton's own, and
 * stopped when ||F|| has fallen by Newton's rtol from ||F(U0)|| or below its atol: the answer
 * Newton would have given, reached along the problem's own evolution (the state the time-dependent
 * problem settles to, not any root of F). The first step is 1/max|J_ii| at the initial fields (the
 * stiffest rate of the problem: an explicit step), unless -ts_dt says otherwise; a Newton failure
 * inside a step halves it (TSAdapt). Pseudo-time is not the problem's time: F is evaluated at the
 * simulation's time throughout. `-pj_pseudo false` in the solver options keeps Newton alone. */
#include "implicit_internal.h"

#define PSEUDO_MAX_STEPS 10000

/* F and its Jacobian of a pseudo-time step: the time steps' implicit form, at the simulation's time */
static PetscErrorCode pseudo_ifunction(TS ts, PetscReal t, Vec U, Vec Udot, Vec F, void *ctx)
{
    (void)t;
    implicit_solver *q = ctx;
    return ts_ifunction(ts, q->m.st->t, U, Udot, F, ctx);
}

static PetscErrorCode pseudo_ijacobian(TS ts, PetscReal t, Vec U, Vec Udot, PetscReal shift, Mat A, Mat B, void *ctx)
{
    (void)t;
    implicit_solver *q = ctx;
    return ts_ijacobian(ts, q->m.st->t, U, Udot, shift, A, B, ctx);
}

/* An option pdejit sets on the continuation where the options do not name it. */
static PetscErrorCode default_option(PetscOptions o, const char *name, double value)
{
    PetscBool set;
    char buf[64];
    PetscCall(PetscOptionsHasName(o, NULL, name, &set));
    if (set) return 0;
    snprintf(buf, sizeof buf, "%.17g", value);
    PetscCall(PetscOptionsSetValue(o, name, buf));
    return 0;
}

/* The continuation's TS, made at its first use: on a clone of the DMDA, Newton's tolerances as its
 * stopping rule, the first step from the Jacobian at the initial fields. */
static PetscErrorCode pseudo_create(implicit_solver *q)
{
    MPI_Comm comm;
    SNES snes;
    TSAdapt adapt;
    PetscReal atol, rtol, stol, dmax;
    PetscInt maxit, maxf;
    PetscCall(PetscObjectGetComm((PetscObject)q->da, &comm));
    PetscCall(DMClone(q->da, &q->pda));
    PetscCall(TSCreate(comm, &q->pts));
    PetscCall(PetscObjectSetOptions((PetscObject)q->pts, q->opts));
    PetscCall(TSGetSNES(q->pts, &snes));
    PetscCall(use_options(q, snes));
    PetscCall(TSGetAdapt(q->pts, &adapt));
    PetscCall(PetscObjectSetOptions((PetscObject)adapt, q->opts));
    PetscCall(TSSetDM(q->pts, q->pda));
    PetscCall(TSSetProblemType(q->pts, TS_NONLINEAR));
    PetscCall(TSSetType(q->pts, TSPSEUDO));
    PetscCall(TSSetIFunction(q->pts, NULL, pseudo_ifunction, q));
    PetscCall(TSSetIJacobian(q->pts, q->J, q->J, pseudo_ijacobian, q));
    PetscCall(TSSetMaxSteps(q->pts, PSEUDO_MAX_STEPS));
    PetscCall(TSSetMaxTime(q->pts, PETSC_MAX_REAL));
    PetscCall(TSSetExactFinalTime(q->pts, TS_EXACTFINALTIME_STEPOVER));
    PetscCall(TSSetErrorIfStepFails(q->pts, PETSC_FALSE));
    PetscCall(TSSetMaxSNESFailures(q->pts, -1));
    PetscCall(SNESGetTolerances(q->snes, &atol, &rtol, &stol, &maxit, &maxf));
    PetscCall(default_option(q->opts, "-ts_pseudo_frtol", rtol));
    PetscCall(default_option(q->opts, "-ts_pseudo_fatol", atol));
    PetscCall(jacobian_into(q, q->m.st->t, q->X0, q->J));
    PetscCall(MatGetDiagonal(q->J, q->D));
    PetscCall(VecNorm(q->D, NORM_INFINITY, &dmax));
    q->b_shifted = 0;
    PetscCall(TSSetTimeStep(q->pts, dmax > 0 && isfinite(1.0 / dmax) ? 1.0 / dmax : 1.0));
    PetscCall(TSSetFromOptions(q->pts));
    PetscCall(direct_defaults(q, q->opts, snes));
    PetscCall(apply_defaults(q->opts, snes));
    if (!q->d) PetscCall(mg_defaults(q, snes));
    PetscCall(SNESMonitorSet(snes, record_norm, q, NULL));
    return 0;
}

/* Continuation from q->X0 into q->X (*ran 0 where the options turned it off), how it stopped into *why. */
static PetscErrorCode pseudo_solve(implicit_solver *q, int *ran, TSConvergedReason *why)
{
    *ran = !q->pseudo_off;
    if (q->pseudo_off) return 0;
    if (q->pts) { /* a solve before: a fresh continuation (TSPSEUDO keeps its first norm and step) */
        PetscCall(TSDestroy(&q->pts));
        PetscCall(DMDestroy(&q->pda));
    }
    PetscCall(pseudo_create(q));
    PetscCall(VecCopy(q->X0, q->X));
    PetscCall(TSSolve(q->pts, q->X));
    PetscInt steps, newton, linear;
    PetscCall(TSGetStepNumber(q->pts, &steps));
    PetscCall(TSGetSNESIterations(q->pts, &newton));
    PetscCall(TSGetKSPIterations(q->pts, &linear));
    q->st.pseudo_steps += steps;
    q->st.pseudo_newton += newton;
    q->st.newton += newton;
    q->st.linear += linear;
    q->st.last_newton = (int)newton;
    q->st.last_linear = (int)linear;
    PetscReal norm; /* the true final residual: ||F(U)|| (the last step's own SNES solved another F) */
    PetscCall(eval_rhs(q, q->m.st->t, q->X, q->R));
    PetscCall(VecNorm(q->R, NORM_2, &norm));
    q->st.last_residual = norm;
    PetscCall(TSGetConvergedReason(q->pts, why));
    return 0;
}

/* Newton's convergence test with continuation to fall back on: PETSc's, and Newton has stalled
 * (SNES_DIVERGED_LOCAL_MIN: a local minimum of ||F||, not a root) when the residual fell by less
 * than STALL_FACTOR over the last STALL_ITS iterations. Newton converging, even damped by the line
 * search, falls faster; continuation then starts at once rather than after the iteration limit
 * (FiPy's tanh1D: ||F|| 0.1567 at iteration 15, 0.1549 at 50; Newton stopped after 20 of 50). */
#define STALL_ITS 5
#define STALL_FACTOR 0.9
static PetscErrorCode newton_stall_test(SNES snes, PetscInt it, PetscReal xnorm, PetscReal snorm, PetscReal fnorm,
                                        SNESConvergedReason *reason, void *ctx)
{
    implicit_solver *q = ctx;
    PetscCall(SNESConvergedDefault(snes, it, xnorm, snorm, fnorm, reason, NULL));
    q->stall[it % (STALL_ITS + 1)] = fnorm;
    if (*reason == SNES_CONVERGED_ITERATING && it >= STALL_ITS &&
        fnorm > STALL_FACTOR * q->stall[(it - STALL_ITS) % (STALL_ITS + 1)])
        *reason = SNES_DIVERGED_LOCAL_MIN;
    return 0;
}

PetscErrorCode steady_setup(implicit_solver *q)
{
    PetscBool on = PETSC_TRUE, set;
    PetscCall(PetscOptionsGetBool(q->opts, NULL, "-pj_pseudo", &on, &set));
    q->pseudo_off = !on;
    if (on) PetscCall(SNESSetConvergenceTest(q->snes, newton_stall_test, q, NULL));
    return 0;
}

int steady_solve(implicit_solver *q, char *err, size_t len)
{
    PetscScalar *x;
    if (!q->X0) CHECK(VecDuplicate(q->X, &q->X0), "VecDuplicate");
    CHECK(VecGetArray(q->X, &x), "VecGetArray");
    slot_to_vec(q, 0, x);
    CHECK(VecRestoreArray(q->X, &x), "VecRestoreArray");
    CHECK(VecCopy(q->X, q->X0), "VecCopy");
    q->error[0] = 0;
    q->fnorm_set = 0;
    PetscErrorCode e = SNESSolve(q->snes, NULL, q->X);
    if (e) mg_forget_borrowed(q->snes);
    count_snes(q, q->snes);
    q->st.newton += q->st.last_newton;
    q->st.linear += q->st.last_linear;
    SNESConvergedReason reason = SNES_CONVERGED_ITERATING;
    TSConvergedReason why = TS_CONVERGED_ITERATING;
    int newton_alone = q->st.last_newton, pseudo = 0;
    if (!e) SNESGetConvergedReason(q->snes, &reason);
    if (!e && reason < 0) {
        e = pseudo_solve(q, &pseudo, &why);
        if (e && q->pts) {
            SNES ps;
            TSGetSNES(q->pts, &ps);
            mg_forget_borrowed(ps);
        }
    }
    if (e) {
        if (q->error[0]) diag_set(err, len, "%s", q->error);
        else petsc_message(e, "the steady solve failed", err, len);
        return -1;
    }
    CHECK(VecGetArray(q->X, &x), "VecGetArray");
    vec_to_slot(q, x, 0);
    CHECK(VecRestoreArray(q->X, &x), "VecRestoreArray");
    if (reason < 0 && !pseudo) {
        diag_set(err, len, "the steady solve did not converge: Newton stopped after %d iterations with residual %.3g (%s)",
                 q->st.last_newton, q->st.last_residual, SNESConvergedReasons[reason]);
        return -1;
    }
    if (reason < 0 && why != TS_CONVERGED_PSEUDO_FATOL && why != TS_CONVERGED_PSEUDO_FRTOL) {
        diag_set(err, len, "the steady solve did not converge: Newton from the initial fields stopped after %d "
                 "iterations (%s); pseudo-transient continuation from them stopped after %lld pseudo-time steps "
                 "(%d Newton iterations) with residual %.3g (%s)", newton_alone, SNESConvergedReasons[reason],
                 (long long)q->st.pseudo_steps, q->st.last_newton, q->st.last_residual, TSConvergedReasons[why]);
        return -1;
    }
    q->st.steps++;
    solver_set_clock(q, q->m.st->t, q->m.st->steps + 1);
    return 0;
fail:
    return -1;
}
