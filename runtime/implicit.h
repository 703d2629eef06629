/* implicit.h — implicit time steps and steady solves of a program through PETSc.
 *
 * An implicit program (PJ_SCHEME_IMPLICIT: beuler, cn, bdf2, imex, steady) has two stage kernels
 * (scheme.c): F(U), the right-hand side, and its Jacobian, the stencil coefficients dF/dU per
 * (field, offset) from the symbolic derivative of F (derive.h). Both run on a simulation
 * (simulation.h: a state and an executor's operations, engine.h's exec_ops): its executor runs
 * the kernels (exec_ops.run) and fills the ghosts (exec_ops.step.fill) on the state's buffers,
 * which must be host memory (an executor without `device`); this module
 * owns the PETSc side: a DMDA over the fields that have an equation (dof = their number), the
 * state vector, the Jacobian matrix (the coefficients inserted with MatSetValuesStencil, a ghost
 * cell's coefficient moved onto the interior cell its boundary rule reads, scaled by the rule's
 * derivative), and a TS (TSBEULER, TSCN, TSBDF order 2) or, for `steady`, a SNES. The options of
 * the problem's `solver` statement and the user's --solver-options go to PETSc's options
 * database before the solver reads it.
 *
 * A build without PETSc (PJ_HAVE_PETSC undefined) compiles a stub: implicit_available() says why
 * and implicit_create() fails with that message. Library code: nothing prints or exits; PETSc's
 * errors come back as return codes (its error handler is set to return). */
#ifndef PJ_IMPLICIT_H
#define PJ_IMPLICIT_H
#include <stddef.h>
#include <stdint.h>
#include "simulation.h"
#include "state.h"

typedef struct implicit_solver implicit_solver;


/* 1 when this build has the implicit solver; else 0 with the reason in why. */
int implicit_available(char *why, size_t len);

/* The solver of m's program (implicit; double precision), on m's buffers (host memory): the state
 * starts from slot 0 at the first step. m is copied (its executor's handle and state must outlive
 * the solver). `options` is passed to PETSc's options database ("-ksp_type cg -pc_type gamg"), may
 * be NULL. NULL with a message on failure. */
implicit_solver *implicit_create(const simulation *m, const char *options, char *err, size_t len);
/* The same for a simulation that holds one block of a mesh decomposed over MPI (d, decomp.h;
 * NULL: as implicit_create): the solver's objects are then on every process of d (collective:
 * every process calls it, and every step), the unknowns in d's blocks. */
struct decomp;
implicit_solver *implicit_create_on(const simulation *m, struct decomp *d, const char *options, char *err,
                                    size_t len);
void implicit_destroy(implicit_solver *solver);

/* Advances the simulation by dt (or, for steady, solves F(U) = 0 and leaves the time as it was):
 * the state in slot 0 is updated, with its clock (t, steps; the executor refreshed). Under adaptive error control the solver takes
 * as many steps as it needs to land on t + dt. 0, or -1 with a message naming the time and the
 * residual when Newton did not converge (the state is then the last accepted one). */
int implicit_step(implicit_solver *solver, double dt, char *err, size_t len);

void implicit_get_stats(const implicit_solver *solver, implicit_stats *stats);

/* The Newton residual norms of the last solve (the initial one first), as PETSc recorded them:
 * their number, *norms pointing into the solver. */
int implicit_residual_history(implicit_solver *solver, const double **norms);

/* The Jacobian assembled from the derived kernel against PETSc's finite-difference one
 * (SNESComputeJacobianDefault: dense differencing, for small grids in tests) at the current state
 * and time t, row by row: a row is compared when all its entries are finite in both and none of
 * its columns reaches a non-finite F or entry (differencing drops such a column whole); entries
 * below 1e-12 of their column's largest are left out (differencing drops those below 1e-14); it
 * agrees when max_j |J_ij - Jfd_ij| <= tol * max_j |Jfd_ij| + 1e-6 * max(1, |F_i|) (the second
 * term: the differences' own error, F's rounding over the step). */
typedef struct jacobian_check {
    int64_t rows, compared, disagree, entries;
    double worst;          /* max_j |J_ij - Jfd_ij| / max_j |Jfd_ij| over the rows within tol of it */
    int64_t first_bad;     /* the first row that disagrees, or -1 */
} jacobian_check;
int implicit_check_jacobian(implicit_solver *solver, double t, double tol, jacobian_check *r, char *err, size_t len);

#endif
