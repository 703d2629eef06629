/* implicit_loader.c — implicit.h (and decomp.h, through decomp.c's forwarding functions) in a
 * library built with PETSc: the solver itself is the module
 * libpdejit-implicit.so (implicit.c, implicit_module.h), opened with dlopen the first time an
 * implicit program asks for it, so that loading the library loads no PETSc.
 *
 * Where the module is looked for, first found of this build wins (implicit_module.h):
 *   $PDEJIT_IMPLICIT_MODULE (a path: then only there);
 *   the folder of the file holding this code (libpdejit.so, or a program linking the library
 *   statically), and of the running program, and its ../lib;
 *   the build folder and the install's library folder, as configured (pj_build_id.h).
 * The module is never closed (PETSc and MPI stay for the process's life). When it cannot be
 * loaded, implicit_available() says why (the dynamic loader's message: a missing PETSc library,
 * for instance) and explicit schemes work as before. */
#include "implicit_module.h"
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diag.h"
#include "knobs.h"
#include "pj_build_id.h"

static const implicit_host host = {IMPLICIT_MODULE_ABI, PJ_BUILD_ID, grid_layout_block, program_jacobian};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int tried;
static const implicit_ops *ops;
static char failure[PATH_MAX + 512]; /* why no module was loaded */

/* Tries the module at dir/IMPLICIT_MODULE_FILE (or at path itself when dir is NULL). 1 when
 * loaded; else 0, with the first real failure (a file that exists but does not load) kept. */
static int try_module(const char *dir, const char *path)
{
    char buf[PATH_MAX];
    if (dir) {
        if (snprintf(buf, sizeof buf, "%s/%s", dir, IMPLICIT_MODULE_FILE) >= (int)sizeof buf) return 0;
        path = buf;
    }
    if (access(path, F_OK) != 0) return 0;
    /* RTLD_LAZY: the module's PETSc functions are bound at their first call, not all at the load:
     * the dynamic linker's symbol lookups were half of an implicit start's CPU (perf), and binding
     * lazily saves 8-13 ms of its ~100 (docs/performance.md). A PETSc that lacks one of them (a
     * different build under the same soname) then stops the run at that call, not at the load. */
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        if (!failure[0]) snprintf(failure, sizeof failure, "%s", e ? e : path);
        return 0;
    }
    implicit_module_init_fn init;
    *(void **)&init = dlsym(h, IMPLICIT_MODULE_ENTRY);
    const implicit_ops *o = init ? init(&host) : NULL;
    if (!o) {
        if (!failure[0]) snprintf(failure, sizeof failure, "%s is of another build of pdejit", path);
        dlclose(h);
        return 0;
    }
    ops = o;
    return 1;
}

/* The folder of a path (in place), or 0 when it has none. */
static int dir_of(char *path)
{
    char *slash = strrchr(path, '/');
    if (!slash || path[0] != '/') return 0;
    *slash = 0;
    return 1;
}

static void load(void)
{
    const char *env = knob(KNOB_IMPLICIT_MODULE);
    if (env) {
        if (!try_module(NULL, env) && !failure[0]) snprintf(failure, sizeof failure, "%s: no such file", env);
        return;
    }
    char dir[PATH_MAX];
    Dl_info info;
    if (dladdr((void *)&host, &info) && info.dli_fname && snprintf(dir, sizeof dir, "%s", info.dli_fname) < (int)sizeof dir &&
        dir_of(dir) && try_module(dir, NULL))
        return;
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 8);
    if (n > 0) {
        dir[n] = 0;
        if (dir_of(dir)) {
            if (try_module(dir, NULL)) return;
            size_t len = strlen(dir);
            if (snprintf(dir + len, sizeof dir - len, "/../%s", PJ_INSTALL_LIBDIR_NAME) < (int)(sizeof dir - len) &&
                try_module(dir, NULL))
                return;
        }
    }
    if (try_module(PJ_BUILD_DIR, NULL) || try_module(PJ_INSTALL_LIBDIR, NULL)) return;
    if (!failure[0])
        snprintf(failure, sizeof failure, "%s was not found (beside the library or the program, in %s or %s; "
                 "PDEJIT_IMPLICIT_MODULE names it)", IMPLICIT_MODULE_FILE, PJ_BUILD_DIR, PJ_INSTALL_LIBDIR);
}

const implicit_ops *implicit_module_ops(char *why, size_t len)
{
    pthread_mutex_lock(&lock);
    if (!tried) {
        tried = 1;
        load();
    }
    pthread_mutex_unlock(&lock);
    if (!ops)
        diag_set(why, len, "the implicit solver (PETSc) could not be loaded: %s; explicit schemes (euler, rk2, rk3, "
                 "rk4) work", failure);
    return ops;
}

int implicit_available(char *why, size_t len)
{
    const implicit_ops *o = implicit_module_ops(why, len);
    return o && o->available(why, len);
}

implicit_solver *implicit_create(const simulation *m, const char *options, char *err, size_t len)
{
    return implicit_create_on(m, NULL, options, err, len);
}

implicit_solver *implicit_create_on(const simulation *m, struct decomp *d, const char *options, char *err, size_t len)
{
    const implicit_ops *o = implicit_module_ops(err, len);
    return o ? o->create(m, d, options, err, len) : NULL;
}

/* A solver exists only once the module was loaded: ops is set (and never changes) by then. */
void implicit_destroy(implicit_solver *solver)
{
    if (solver) ops->destroy(solver);
}

int implicit_step(implicit_solver *solver, double dt, char *err, size_t len)
{
    return ops->step(solver, dt, err, len);
}

void implicit_get_stats(const implicit_solver *solver, implicit_stats *stats)
{
    if (solver) ops->get_stats(solver, stats);
    else memset(stats, 0, sizeof *stats);
}

int implicit_residual_history(implicit_solver *solver, const double **norms)
{
    return ops->residual_history(solver, norms);
}

int implicit_check_jacobian(implicit_solver *solver, double t, double tol, jacobian_check *r, char *err, size_t len)
{
    return ops->check_jacobian(solver, t, tol, r, err, len);
}
