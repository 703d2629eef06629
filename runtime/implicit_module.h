/* implicit_module.h — the interface between the library and its implicit solver module.
 *
 * With PETSc (PJ_HAVE_PETSC), implicit.c is not part of the library: it is built as the module
 * libpdejit-implicit.so, which links PETSc (with Open MPI, Trilinos, MUMPS, HDF5 ... about a
 * hundred shared libraries: 55-65 ms of dynamic loading, more than everything else in the
 * library's start), and implicit_loader.c opens it with dlopen the first time an implicit
 * program needs it. A program with an explicit scheme, a pj_term and `import pdejit` never load
 * PETSc.
 *
 * The module reaches the simulation it solves only through engine.h's tables (simulation.h: the
 * state, and the executor's exec_ops for kernel runs, ghost fills and its geometry), calls back
 * into the library only through implicit_host (the library exports the public API alone) for
 * what those tables do not hold, and the library calls the module only through implicit_ops.
 * Both sides read pj_program and sim_state directly, so a module is used only with the library
 * of its own build: IMPLICIT_MODULE_ABI and PJ_BUILD_ID (a configure stamp, pj_build_id.h) must
 * match. */
#ifndef PJ_IMPLICIT_MODULE_H
#define PJ_IMPLICIT_MODULE_H
#include <stdarg.h>
#include <stdio.h>
#include "decomp.h"
#include "grid.h"
#include "implicit.h"

#define IMPLICIT_MODULE_ABI 6
#define IMPLICIT_MODULE_FILE "libpdejit-implicit.so"
#define IMPLICIT_MODULE_ENTRY "pj_implicit_module_init"

/* What the module uses of the library beyond the simulation's tables: a block's layout (decomp.c's
 * halo exchange) and the program's Jacobian (derived on demand, owned by the program). */
typedef struct implicit_host {
    int abi;
    const char *build_id;
    int (*grid_layout_block)(grid_layout *g, const pj_program *p, const grid_block *block, size_t esz,
                             int row_align, const char *who, char *err, size_t err_len);
    const pj_jacobian *(*program_jacobian)(const pj_program *p, char *err, size_t err_len);
} implicit_host;

/* decomp.h's functions that need PETSc, from the module (the library's decomp.c forwards to them;
 * decomp_launched_* read the environment and stay in the library). */
typedef struct decomp_ops {
    decomp *(*create)(const pj_program *p, const char *layout, char *err, size_t err_len);
    void (*destroy)(decomp *d);
    int (*rank)(const decomp *d);
    int (*size)(const decomp *d);
    const grid_block *(*block)(const decomp *d);
    const grid_block *(*blocks)(const decomp *d);
    void (*layout)(const decomp *d, int procs[3]);
    void (*ghosts)(decomp *d, ghost_settings *gs);
    int (*any)(decomp *d, int mine);
    int (*agree)(decomp *d, int failed, char *err, size_t err_len);
    void (*reduce)(decomp *d, double *v, int n, int op);
    int64_t (*min64)(decomp *d, int64_t v);
    void (*bcast)(decomp *d, void *data, size_t n, int from);
    void (*barrier)(decomp *d);
    int (*gather)(decomp *d, const double *block, double *mesh);
    int (*scatter)(decomp *d, const double *mesh, double *block);
    void (*get_stats)(const decomp *d, decomp_stats *st);
} decomp_ops;

/* implicit.h's functions, from the module. */
typedef struct implicit_ops {
    int abi;
    const char *build_id;
    int (*available)(char *why, size_t len);
    implicit_solver *(*create)(const simulation *m, decomp *d, const char *options, char *err, size_t len);
    void (*destroy)(implicit_solver *solver);
    int (*step)(implicit_solver *solver, double dt, char *err, size_t len);
    void (*get_stats)(const implicit_solver *solver, implicit_stats *stats);
    int (*residual_history)(implicit_solver *solver, const double **norms);
    int (*check_jacobian)(implicit_solver *solver, double t, double tol, jacobian_check *r, char *err, size_t len);
    const decomp_ops *decomp;
} implicit_ops;

/* The library's side: the module's tables, loaded on first use (NULL with the reason in why). */
const implicit_ops *implicit_module_ops(char *why, size_t len);

#ifdef PJ_IMPLICIT_MODULE
/* Inside the module: the library's table, and what the module has of its own in place of the
 * library's diag.c and driver.c helpers. */
extern const implicit_host *implicit_module_host;
extern const decomp_ops decomp_module_ops;
__attribute__((format(printf, 3, 4))) static inline void module_diag_set(char *err, size_t err_len,
                                                                          const char *fmt, ...)
{
    if (!err || !err_len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}
#endif

/* The module's one exported function (IMPLICIT_MODULE_ENTRY): keeps host (the library's, alive
 * as long as the process) and returns its ops, or NULL when host is of another ABI or build. */
typedef const implicit_ops *(*implicit_module_init_fn)(const implicit_host *host);

#endif
