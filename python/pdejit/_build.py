"""_build.py — the cffi builder (API mode, out of line) of pdejit._pdejit_cffi.

The extension is compiled against include/pdejit.h and linked with libpdejit.so, found in this
order:

1. PDEJIT_INCLUDE_DIR and PDEJIT_LIB_DIR (folders holding pdejit.h and libpdejit.so);
2. PDEJIT_BUILD_DIR: a CMake build folder of the pdejit sources (its CMakeCache.txt names the
   source tree, whose include/ holds the header);
3. pkg-config pdejit (an installed pdejit; PKG_CONFIG_PATH=PREFIX/lib/pkgconfig);
4. the build folder of the source tree this package sits in (../build, as `make build` makes
   it), when it holds the library: setup.py copies the library into the package;
5. else that source tree (../CMakeLists.txt) is built with CMake by setup.py (its build_ext, into
   python/build/cmake) and the library goes into the package.

In 1-3 the library's folder is recorded as the extension's run path; in 4 and 5 the library lies
beside the extension in the package and the run path is the extension's own folder ($ORIGIN): a
wheel that needs no pdejit installed and no source tree. No LD_LIBRARY_PATH is needed. The declarations below are the subset of
pdejit.h the package calls; in API mode the C compiler checks them against the real header (a
mismatch does not compile)."""
import glob
import os
import re
import shlex
import subprocess

from cffi import FFI

CDEF = r"""
typedef enum pj_status { PJ_OK = 0, PJ_ERR_RUN = 1, PJ_ERR_INPUT = 2, PJ_ERR_BACKEND = 3,
    PJ_ERR_MEMORY = 4, PJ_ERR_UNAVAILABLE = 5, PJ_INTERRUPTED = 6, PJ_ERR_UNSUPPORTED = 7 } pj_status;
const char *pj_strerror(pj_status status);
const char *pj_version(void);
typedef enum pj_backend { PJ_BACKEND_INTERP = 0, PJ_BACKEND_CPU = 1, PJ_BACKEND_CUDA = 2 } pj_backend;
int pj_backend_by_name(const char *name, pj_backend *backend);
const char *pj_backend_names(void);
const char *pj_scheme_names(void);

typedef struct pj_problem pj_problem;
typedef struct pj_sim pj_sim;
pj_status pj_problem_compile_scheme(const char *name, const char *text, size_t len, const char *scheme,
                                    pj_problem **problem, char **diagnostics);
pj_status pj_problem_compile_consts(const char *name, const char *text, size_t len, const char *scheme, int n_consts,
                                    const char *const *const_names, const double *const_values,
                                    pj_problem **problem, char **diagnostics);
void pj_problem_free(pj_problem *problem);
int pj_problem_dim(const pj_problem *problem);
int64_t pj_problem_cells(const pj_problem *problem);
int64_t pj_problem_n(const pj_problem *problem, int axis);
double pj_problem_length(const pj_problem *problem, int axis);
double pj_problem_origin(const pj_problem *problem, int axis);
int pj_problem_geometry(const pj_problem *problem);
int pj_problem_centres(const pj_problem *problem, int axis, double *out, double *faces);
int pj_problem_field_count(const pj_problem *problem);
const char *pj_problem_field_name(const pj_problem *problem, int field);
int pj_problem_param_count(const pj_problem *problem);
const char *pj_problem_param_name(const pj_problem *problem, int param);
double pj_problem_dt(const pj_problem *problem);
double pj_problem_until(const pj_problem *problem);
int64_t pj_problem_steps(const pj_problem *problem);
int pj_problem_has_output(const pj_problem *problem);
double pj_problem_param(const pj_problem *problem, const char *name);
int pj_problem_has_monitor(const pj_problem *problem);
int pj_problem_monitor_count(const pj_problem *problem);
const char *pj_problem_monitor_name(const pj_problem *problem, int monitor);
int pj_problem_array_count(const pj_problem *problem);
const char *pj_problem_array_name(const pj_problem *problem, int array);
int pj_problem_array_size(const pj_problem *problem, int array);

typedef struct pj_sim_options { pj_backend backend; int single; int threads; int fast_math;
    const char *solver_options; uint64_t seed; ...; } pj_sim_options;
pj_status pj_sim_create(const pj_problem *problem, const pj_sim_options *options, pj_sim **sim,
                        char *err, size_t err_len);
void pj_sim_free(pj_sim *sim);
pj_status pj_sim_set_param(pj_sim *sim, const char *name, double value);
double pj_sim_param(const pj_sim *sim, const char *name);
pj_status pj_sim_advance(pj_sim *sim, double dt, double t_end, char *err, size_t err_len);
pj_status pj_sim_resume(pj_sim *sim, const char *checkpoint, char *err, size_t err_len);
pj_status pj_sim_init_from_csv(pj_sim *sim, const char *csv, char *err, size_t err_len);
void pj_sim_interrupt(pj_sim *sim);
double pj_sim_time(const pj_sim *sim);
int64_t pj_sim_steps(const pj_sim *sim);
pj_status pj_sim_monitor(pj_sim *sim, const char *name, double *value, char *err, size_t err_len);
pj_status pj_sim_adaptive_stats(const pj_sim *sim, int64_t *accepted, int64_t *rejected, double *dt_last,
                                double *dt_next);
pj_status pj_sim_redefine(pj_sim *sim, const char *text, char **diagnostics);
int pj_sim_can_swap(const pj_sim *sim);

typedef struct pj_run_options { double dt; double until; int64_t steps; const char *out_dir;
    const char *dump_path; int check_every; int no_stability_check; double checkpoint_every;
    int (*on_monitor)(void *ctx, double t, int64_t step, int n, const char *const *names, const double *values);
    void *monitor_ctx; int (*on_progress)(void *ctx, double t, double t_end, int64_t steps); void *progress_ctx;
    double progress_seconds; ...; } pj_run_options;
typedef struct pj_run_result { int64_t steps; double t; double seconds; int snapshots; ...; } pj_run_result;
pj_run_options pj_run_options_default(void);
pj_status pj_sim_run(pj_sim *sim, const pj_run_options *options, pj_run_result *result, char *err, size_t err_len);

typedef struct pj_solver_stats { int64_t steps; int64_t rejected; int64_t newton, linear; int last_newton,
    last_linear; double last_residual; int64_t jacobians; double seconds_jacobian; double last_dt; int steady;
    int adaptive; int unused_options; const char *unused_option_names; const char *note;
    int64_t pseudo_steps; int64_t pseudo_newton; ...; } pj_solver_stats;
pj_status pj_sim_solver_stats(const pj_sim *sim, pj_solver_stats *stats);

typedef struct pj_sim_info { const char *backend; const char *device; const char *warning;
    int kernels, from_cache; double ms_prepare; double ms_compiler; const char *stepping; } pj_sim_info;
void pj_sim_get_info(const pj_sim *sim, pj_sim_info *info);

typedef struct pj_field_view { void *data; int64_t shape[3]; int64_t strides[3]; int elem_size;
    int on_device; } pj_field_view;
pj_status pj_sim_field_view(pj_sim *sim, const char *name, pj_field_view *view);

typedef enum pj_term_boundary { PJ_TERM_ZERO_FLUX = 0, PJ_TERM_PERIODIC = 1 } pj_term_boundary;
typedef enum pj_term_at { PJ_TERM_CELLS = 0, PJ_TERM_FACES = 1 } pj_term_at;
typedef struct pj_term pj_term;
typedef struct pj_term_options { int dim; int64_t n[3]; double h[3]; int n_fields; const char *const *fields;
    int n_params; const char *const *params; const double *param_values; pj_term_boundary boundary[3];
    int threads; const char *definitions; pj_term_at at; int on_device; int single; } pj_term_options;
pj_status pj_term_compile(const char *expr, const pj_term_options *options, pj_term **term, char **diagnostics);
void pj_term_free(pj_term *term);
pj_status pj_term_eval(pj_term *term, const double *const *inputs, double t, double *out, char *err, size_t err_len);
pj_status pj_term_eval_faces(pj_term *term, const double *const *inputs, double t, double *const *out,
                             char *err, size_t err_len);
int64_t pj_term_face_count(const pj_term *term, int axis);
pj_status pj_term_jacobian(pj_term *term, const char *field, const double *const *inputs, double t,
                           double *out, char *err, size_t err_len);
pj_status pj_term_set_param(pj_term *term, const char *name, double value);
int pj_term_from_cache(const pj_term *term);
int pj_term_on_device(const pj_term *term);
pj_status pj_term_device_alloc(pj_term *term, size_t bytes, void **ptr, char *err, size_t err_len);
void pj_term_device_free(pj_term *term, void *ptr);

void free(void *);

/* run()'s callbacks (pdejit/_run.py) */
extern "Python" int pdejit_py_on_monitor(void *, double, int64_t, int, const char *const *, const double *);
extern "Python" int pdejit_py_on_progress(void *, double, double, int64_t);

/* the extension's own: SIGINT stops a stepping call at a step boundary (see _core.py) */
int pdejit_py_sigint_begin(pj_sim *sim);
int pdejit_py_sigint_end(void);
"""


# While advance() or run() steps on the main thread, SIGINT (Ctrl-C, a notebook's interrupt) calls
# pj_sim_interrupt (async-signal-safe) so the call returns at the next step boundary; Python's
# handler is put back afterwards and the package raises KeyboardInterrupt. Python's own handler
# cannot run meanwhile: the main thread is inside C.
SIGINT_C = r"""
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"

static pj_sim *volatile pdejit_py_stepping;
static volatile sig_atomic_t pdejit_py_caught;
static struct sigaction pdejit_py_old;

static void pdejit_py_on_sigint(int sig)
{
    (void)sig;
    pdejit_py_caught = 1;
    if (pdejit_py_stepping) pj_sim_interrupt(pdejit_py_stepping);
}

/* 0 when installed (call pdejit_py_sigint_end after), -1 when SIGINT is not Python's to take */
static int pdejit_py_sigint_begin(pj_sim *sim)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = pdejit_py_on_sigint;
    sigemptyset(&sa.sa_mask);
    pdejit_py_caught = 0;
    pdejit_py_stepping = sim;
    if (sigaction(SIGINT, &sa, &pdejit_py_old) < 0) {
        pdejit_py_stepping = NULL;
        return -1;
    }
    return 0;
}

/* restores the handler; 1 when a SIGINT came meanwhile */
static int pdejit_py_sigint_end(void)
{
    sigaction(SIGINT, &pdejit_py_old, NULL);
    pdejit_py_stepping = NULL;
    return pdejit_py_caught;
}
"""


def _cmake_source_dir(build_dir):
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            m = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", f.read(), re.M)
            return m.group(1) if m else None
    except OSError:
        return None


def source_tree():
    """The pdejit source tree this package sits in (python/..), or None."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return root if os.path.isfile(os.path.join(root, "CMakeLists.txt")) and \
        os.path.isfile(os.path.join(root, "include", "pdejit.h")) else None


def cmake_build_dir():
    """Where setup.py builds the library from the source tree (rule 4)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "cmake")


def _has_library(build_dir, src):
    made_from = _cmake_source_dir(build_dir)
    return bool(made_from and os.path.realpath(made_from) == os.path.realpath(src) and
                glob.glob(os.path.join(build_dir, "libpdejit.so.*")))


def locate():
    """(include folder, library folder, bundled) of pdejit, by the rules of this module's comment;
    bundled is None (rules 1-3), "copy" (rule 4: setup.py copies the library into the package) or
    "cmake" (rule 5: setup.py first builds it into the library folder)."""
    inc, lib = os.environ.get("PDEJIT_INCLUDE_DIR"), os.environ.get("PDEJIT_LIB_DIR")
    if inc and lib:
        return inc, lib, None
    build = os.environ.get("PDEJIT_BUILD_DIR")
    if build:
        src = _cmake_source_dir(build)
        if not src:
            raise RuntimeError("PDEJIT_BUILD_DIR=%s is not a CMake build of pdejit" % build)
        return os.path.join(src, "include"), os.path.abspath(build), None
    try:
        cflags = subprocess.run(["pkg-config", "--cflags-only-I", "pdejit"], capture_output=True, text=True,
                                check=True).stdout
        libs = subprocess.run(["pkg-config", "--libs-only-L", "pdejit"], capture_output=True, text=True,
                              check=True).stdout
        incs = [a[2:] for a in shlex.split(cflags) if a.startswith("-I")]
        libdirs = [a[2:] for a in shlex.split(libs) if a.startswith("-L")]
        if incs and libdirs:
            return os.path.normpath(incs[0]), os.path.normpath(libdirs[0]), None
    except (OSError, subprocess.CalledProcessError):
        pass
    root = source_tree()
    if root and _has_library(os.path.join(root, "build"), root):
        return os.path.join(root, "include"), os.path.join(root, "build"), "copy"
    if root:
        return os.path.join(root, "include"), cmake_build_dir(), "cmake"
    raise RuntimeError("pdejit not found: set PDEJIT_BUILD_DIR (a build folder of pdejit), "
                       "PDEJIT_INCLUDE_DIR and PDEJIT_LIB_DIR, install it where pkg-config finds it, "
                       "or build from the pdejit source tree (python/ inside it)")


ffibuilder = FFI()
ffibuilder.cdef(CDEF)
_inc, _lib, BUNDLED = locate()
ffibuilder.set_source(
    "pdejit._pdejit_cffi",
    SIGINT_C,
    include_dirs=[_inc],
    library_dirs=[_lib],
    libraries=["pdejit"],
    extra_link_args=["-Wl,-rpath," + ("$ORIGIN" if BUNDLED else _lib)],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
