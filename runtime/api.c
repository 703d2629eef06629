/* api.c — the public API (include/pdejit.h) over the compiler and the back-end interface
 * (runtime/engine.h): a pj_sim is an engine plus what the caller set. */
#include "pdejit.h"
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "checkpoint.h"
#include "decomp.h"
#include "driver.h"
#include "stability.h"
#include "engine.h"
#include "program.h"
#include "scheme.h"

struct pj_problem {
    pj_program *p;
    char *name, *text;     /* what it was compiled from: redefinitions are compiled after it */
    size_t len;
};

struct pj_sim {
    engine *e;
    decomp *d;             /* a decomposed run's blocks (pj_sim_options.decompose), or NULL */
    uint64_t seed;         /* rand()'s key, and the precision: recorded in checkpoints */
    int single;
    int resumed;           /* pj_sim_resume: the next pj_sim_run continues the checkpoint's run */
    double resume_dt;      /* ... whose dt was this (NaN: not recorded), */
    char *resume_path;     /* ... read from this file */
    const pj_program *p;   /* the program running */
    double check_dt;       /* pj_sim_run's dt, checked again at every output time (check_again) */
    stability_memo memo;   /* the last limit, while it cannot change (stability.h) */
    pj_program *owned;     /* p, when a redefinition made it */
    /* the text p was compiled from, and where the redefinitions in it begin (0: none yet) */
    char *name, *text;
    size_t len;
    int first_redefinition;
    /* hot swap while pj_sim_advance runs on another thread: posted, applied between steps */
    pthread_mutex_t lock;
    pthread_cond_t applied;
    int advancing;
    pthread_t stepper;     /* the thread in pj_sim_advance or pj_sim_run, while advancing */
    atomic_int posted;
    atomic_int preparing;  /* 1: another thread compiles a swap's kernels (swap_pause); 2: paused for it */
    pj_program *next;
    int next_owned;        /* next came from a redefinition: the sim frees it */
    void *next_kernels;
    /* the run's own hook (pj_run_options.between_steps) */
    void (*user_between)(void *ctx);
    void *user_ctx;
    int next_rc;
    char next_err[512];
    double t_swap;
    atomic_int interrupt;  /* pj_sim_interrupt: stop at the next step boundary */
};

const char *pj_strerror(pj_status status)
{
    switch (status) {
    case PJ_OK: return "success";
    case PJ_ERR_RUN: return "the run failed";
    case PJ_ERR_INPUT: return "bad input";
    case PJ_ERR_BACKEND: return "the back end failed";
    case PJ_ERR_MEMORY: return "out of memory";
    case PJ_ERR_UNAVAILABLE: return "the back end cannot run on this machine";
    case PJ_ERR_UNSUPPORTED: return "the back end cannot do this yet";
    case PJ_INTERRUPTED: return "interrupted";
    }
    return "unknown status";
}

/* The public numbers of the back ends, by name: a back end registered in engine.c without a
 * number here is not reachable from the API. */
static const struct { pj_backend id; const char *name; } backend_ids[] = {
    {PJ_BACKEND_INTERP, "interp"}, {PJ_BACKEND_CPU, "cpu"}, {PJ_BACKEND_CUDA, "cuda"}};

static const backend_ops *backend_of(pj_backend b)
{
    for (size_t i = 0; i < sizeof backend_ids / sizeof backend_ids[0]; i++)
        if (backend_ids[i].id == b) return engine_backend(backend_ids[i].name);
    return NULL;
}

int pj_backend_by_name(const char *name, pj_backend *backend)
{
    for (size_t i = 0; name && i < sizeof backend_ids / sizeof backend_ids[0]; i++)
        if (!strcmp(name, backend_ids[i].name) && engine_backend(name)) {
            *backend = backend_ids[i].id;
            return 0;
        }
    return -1;
}

const char *pj_backend_names(void) { return engine_backend_names(); }

#ifndef PJ_VERSION
#error "PJ_VERSION (the project version of CMakeLists.txt) is not defined"
#endif
const char *pj_version(void) { return PJ_VERSION; }

/* The schemes of compiler/scheme.c's table, "steady" (the statement, the last) left out */
static char scheme_list[256];
static void list_schemes(void)
{
    static const pj_scheme order[] = {PJ_EULER, PJ_RK2, PJ_RK3, PJ_RK4, PJ_RK23, PJ_RK45, PJ_BEULER, PJ_CN, PJ_BDF2, PJ_IMEX};
    for (size_t s = 0; s < sizeof order / sizeof *order; s++) {
        size_t n = strlen(scheme_list);
        snprintf(scheme_list + n, sizeof scheme_list - n, "%s%s", s ? ", " : "", scheme_name(order[s]));
    }
}

const char *pj_scheme_names(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, list_schemes);
    return scheme_list;
}

/* The diagnostics of a failed compile, with the count after them. */
static char *diagnostics_text(diag *d)
{
    if (d->errors) diag_append(d, "%d error%s\n", d->errors, d->errors == 1 ? "" : "s");
    return d->log ? strdup(d->log) : NULL;
}

pj_status pj_problem_compile(const char *name, const char *text, size_t len, pj_problem **problem, char **diagnostics)
{
    return pj_problem_compile_scheme(name, text, len, NULL, problem, diagnostics);
}

pj_status pj_problem_compile_scheme(const char *name, const char *text, size_t len, const char *scheme,
                                    pj_problem **problem, char **diagnostics)
{
    return pj_problem_compile_consts(name, text, len, scheme, 0, NULL, NULL, problem, diagnostics);
}

pj_status pj_problem_compile_consts(const char *name, const char *text, size_t len, const char *scheme, int n_consts,
                                    const char *const *const_names, const double *const_values, pj_problem **problem,
                                    char **diagnostics)
{
    if (problem) *problem = NULL;
    if (diagnostics) *diagnostics = NULL;
    if (!text || !problem) return PJ_ERR_INPUT;
    diag d;
    diag_init(&d, name ? name : "<input>", text, len);
    pj_compile_options opt = {0};
    if (n_consts < 0 || (n_consts > 0 && (!const_names || !const_values))) {
        diag_free(&d);
        return PJ_ERR_INPUT;
    }
    opt.n_const_sets = n_consts;
    opt.const_names = const_names;
    opt.const_values = const_values;
    if (scheme) {
        int s = scheme_from_name(scheme);
        if (s < 0) {
            diag_append(&d, "%s: error: unknown scheme '%s'; schemes are %s\n", d.filename, scheme, pj_scheme_names());
            if (diagnostics) *diagnostics = strdup(d.log);
            diag_free(&d);
            return PJ_ERR_INPUT;
        }
        opt.scheme = (pj_scheme)s;
        opt.scheme_set = 1;
    }
    pj_program *p = compile_problem(name, text, len, &d, &opt);
    if (diagnostics && (d.log || d.errors)) *diagnostics = diagnostics_text(&d);
    int out_of_memory = d.out_of_memory;
    diag_free(&d);
    if (!p) return out_of_memory ? PJ_ERR_MEMORY : PJ_ERR_INPUT;
    pj_problem *pr = calloc(1, sizeof *pr);
    if (pr) {
        pr->name = strdup(name ? name : "<input>");
        pr->text = malloc(len + 1);
    }
    if (!pr || !pr->name || !pr->text) {
        if (pr) free(pr->name);
        free(pr);
        program_free(p);
        return PJ_ERR_MEMORY;
    }
    memcpy(pr->text, text, len);
    pr->text[len] = 0;
    pr->len = len;
    pr->p = p;
    *problem = pr;
    return PJ_OK;
}

void pj_problem_free(pj_problem *problem)
{
    if (!problem) return;
    program_free(problem->p);
    free(problem->name);
    free(problem->text);
    free(problem);
}

int pj_problem_dim(const pj_problem *pr) { return pr->p->dim; }
int64_t pj_problem_cells(const pj_problem *pr) { return pr->p->n[0] * pr->p->n[1] * pr->p->n[2]; }
int64_t pj_problem_n(const pj_problem *pr, int axis) { return axis >= 0 && axis < 3 ? pr->p->n[axis] : 0; }
double pj_problem_length(const pj_problem *pr, int axis)
{
    return axis >= 0 && axis < pr->p->dim ? pr->p->length[axis] : 0;
}
double pj_problem_origin(const pj_problem *pr, int axis)
{
    return axis >= 0 && axis < pr->p->dim ? pr->p->origin[axis] : 0;
}
int pj_problem_geometry(const pj_problem *pr) { return (int)pr->p->geometry; }
int pj_problem_centres(const pj_problem *pr, int axis, double *out, double *faces)
{
    const pj_program *p = pr->p;
    if (axis < 0 || axis >= p->dim) return -1;
    for (int64_t i = 0; out && i < p->n[axis]; i++) out[i] = program_cell_centre(p, axis, i);
    for (int64_t i = 0; faces && i <= p->n[axis]; i++)
        faces[i] = p->faces[axis] ? p->faces[axis][i] : p->origin[axis] + (double)i * (p->length[axis] / (double)p->n[axis]);
    return 0;
}
int pj_problem_field_count(const pj_problem *pr) { return pr->p->n_fields; }
const char *pj_problem_field_name(const pj_problem *pr, int f) { return f >= 0 && f < pr->p->n_fields ? pr->p->field_names[f] : NULL; }
int pj_problem_param_count(const pj_problem *pr) { return pr->p->n_params; }
const char *pj_problem_param_name(const pj_problem *pr, int i) { return i >= 0 && i < pr->p->n_params ? pr->p->param_names[i] : NULL; }
double pj_problem_dt(const pj_problem *pr) { return pr->p->dt; }
double pj_problem_until(const pj_problem *pr) { return pr->p->until; }
int64_t pj_problem_steps(const pj_problem *pr) { return pr->p->steps; }
int pj_problem_has_output(const pj_problem *pr) { return pr->p->has_output; }
int pj_problem_has_monitor(const pj_problem *pr) { return pr->p->has_monitor; }
int pj_problem_monitor_count(const pj_problem *pr) { return pr->p->n_monitors; }
const char *pj_problem_monitor_name(const pj_problem *pr, int i)
{
    return i >= 0 && i < pr->p->n_monitors ? pr->p->monitor_names[i] : NULL;
}
int pj_problem_array_count(const pj_problem *pr) { return pr->p->n_arrays; }
const char *pj_problem_array_name(const pj_problem *pr, int i)
{
    return i >= 0 && i < pr->p->n_arrays ? pr->p->array_names[i] : NULL;
}
int pj_problem_array_size(const pj_problem *pr, int i) { return i >= 0 && i < pr->p->n_arrays ? pr->p->array_sizes[i] : 0; }
double pj_problem_param(const pj_problem *pr, const char *name)
{
    for (int i = 0; name && i < pr->p->n_params; i++)
        if (!strcmp(pr->p->param_names[i], name)) return pr->p->param_values[i];
    return NAN;
}

pj_status pj_sim_create(const pj_problem *problem, const pj_sim_options *options, pj_sim **out, char *err, size_t err_len)
{
    pj_sim_options o = options ? *options : (pj_sim_options){0};
    if (!problem || !out) return PJ_ERR_INPUT;
    *out = NULL;
    const backend_ops *be = backend_of(o.backend);
    if (!be) {
        diag_set(err, err_len, "pj_sim_create: no back end number %d", (int)o.backend);
        return PJ_ERR_INPUT;
    }
    pj_sim *ps = calloc(1, sizeof *ps);
    if (!ps) return PJ_ERR_MEMORY;
    ps->p = problem->p;
    ps->seed = o.seed;
    ps->single = o.single;
    ps->name = strdup(problem->name);
    ps->text = malloc(problem->len + 1);
    if (!ps->name || !ps->text) {
        free(ps->name);
        free(ps->text);
        free(ps);
        return PJ_ERR_MEMORY;
    }
    memcpy(ps->text, problem->text, problem->len + 1);
    ps->len = problem->len;
    pthread_mutex_init(&ps->lock, NULL);
    pthread_cond_init(&ps->applied, NULL);
    engine_options eo = {.single = o.single, .fast_math = o.fast_math, .threads = o.threads,
                         .solver_options = o.solver_options, .seed = o.seed};
    if (o.decompose) {
        if (!engine_backend_can(be, ENGINE_CAP_DECOMPOSE, err, err_len)) {
            pj_sim_free(ps);
            return PJ_ERR_UNSUPPORTED;
        }
        ps->d = decomp_create(problem->p, o.ranks_layout, err, err_len);
        if (!ps->d) {
            pj_sim_free(ps);
            return PJ_ERR_INPUT;
        }
        eo.decomp = ps->d;
    }
    int unavailable = 0;
    ps->e = engine_create(be, problem->p, &eo, &unavailable, err, err_len);
    if (!ps->e) {
        pj_sim_free(ps);
        return unavailable == ENGINE_TOO_LARGE    ? PJ_ERR_MEMORY
               : unavailable == ENGINE_UNSUPPORTED ? PJ_ERR_UNSUPPORTED
               : unavailable                       ? PJ_ERR_UNAVAILABLE
                                                   : PJ_ERR_BACKEND;
    }
    if (engine_init(ps->e, err, err_len) < 0) {
        pj_sim_free(ps);
        return PJ_ERR_BACKEND;
    }
    *out = ps;
    return PJ_OK;
}

void pj_sim_free(pj_sim *ps)
{
    if (!ps) return;
    engine_destroy(ps->e);
    decomp_destroy(ps->d);
    program_free(ps->owned);
    pthread_mutex_destroy(&ps->lock);
    pthread_cond_destroy(&ps->applied);
    free(ps->name);
    free(ps->text);
    free(ps->resume_path);
    stability_memo_free(&ps->memo);
    free(ps);
}

int pj_sim_rank(const pj_sim *ps) { return ps ? engine_rank(ps->e) : 0; }
int pj_sim_processes(const pj_sim *ps) { return ps ? engine_processes(ps->e) : 1; }

void pj_sim_broadcast(pj_sim *ps, void *data, size_t n)
{
    if (ps && data && n) engine_bcast(ps->e, data, n);
}

int pj_sim_any(pj_sim *ps, int flag) { return ps ? engine_any(ps->e, flag != 0) : flag != 0; }

void pj_sim_exchange_stats(const pj_sim *ps, int64_t *exchanges, double *seconds, double *bytes)
{
    decomp_stats st = {0, 0, 0};
    if (ps && ps->d) decomp_get_stats(ps->d, &st);
    if (exchanges) *exchanges = st.exchanges;
    if (seconds) *seconds = st.seconds;
    if (bytes) *bytes = st.bytes;
}

pj_status pj_sim_set_param(pj_sim *ps, const char *name, double value)
{
    return name && engine_set_param(ps->e, name, value) == 0 ? PJ_OK : PJ_ERR_INPUT;
}

double pj_sim_param(const pj_sim *ps, const char *name)
{
    const double *values = ps && name ? engine_params(ps->e) : NULL;
    for (int i = 0; values && i < ps->p->n_params; i++)
        if (!strcmp(ps->p->param_names[i], name)) return values[i];
    return NAN;
}

/* ---- hot swap -------------------------------------------------------------------------- */

/* Runs the posted program (under the lock): the running one is released once replaced. */
static void apply_posted(pj_sim *ps)
{
    ps->next_rc = engine_swap(ps->e, ps->next, ps->next_kernels, ps->next_err, sizeof ps->next_err);
    if (ps->next_rc == 0) {
        program_free(ps->owned); /* between steps: nothing refers to it any more */
        ps->owned = ps->next_owned ? ps->next : NULL;
        ps->p = ps->next;
        ps->t_swap = engine_time(ps->e);
        stability_memo_clear(&ps->memo); /* the old program's address may come back */
    }
    ps->next = NULL;
    ps->next_kernels = NULL;
    atomic_store(&ps->posted, 0);
    pthread_cond_broadcast(&ps->applied);
}

/* The steps wait this long at most for the kernels of a swap being compiled on another thread
   (pj_sim_swap, pj_sim_redefine): a quick compile then has every core instead of racing the
   run's threads, and the new definition takes over at the step the change was seen at. */
#define SWAP_PAUSE_NS 100000000L

static void set_preparing(pj_sim *ps, int on)
{
    pthread_mutex_lock(&ps->lock);
    atomic_store(&ps->preparing, on);
    if (!on) pthread_cond_broadcast(&ps->applied);
    pthread_mutex_unlock(&ps->lock);
}

/* On the stepping thread: wait for the swap's kernels (posted), at most SWAP_PAUSE_NS, once a swap. */
static void swap_pause(pj_sim *ps)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += SWAP_PAUSE_NS;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&ps->lock);
    while (atomic_load(&ps->preparing) == 1 && !atomic_load(&ps->posted))
        if (pthread_cond_timedwait(&ps->applied, &ps->lock, &until) == ETIMEDOUT) break;
    if (atomic_load(&ps->preparing) == 1) atomic_store(&ps->preparing, 2);
    pthread_mutex_unlock(&ps->lock);
}

static void between_steps(void *ctx)
{
    pj_sim *ps = ctx;
    if (ps->user_between) ps->user_between(ps->user_ctx);
    if (atomic_load(&ps->preparing) == 1) swap_pause(ps);
    if (!atomic_load(&ps->posted)) return;
    pthread_mutex_lock(&ps->lock);
    if (atomic_load(&ps->posted)) apply_posted(ps);
    pthread_mutex_unlock(&ps->lock);
}

/* Swaps p2 in: at once when nothing steps (or when called from the stepping thread itself,
 * between two steps), else posted for the stepping thread and waited for. 0, or -1 with the
 * reason in err (the kernels released, p2 not taken). */
static int swap_in(pj_sim *ps, pj_program *p2, int owned, void *kernels, char *err, size_t err_len)
{
    pthread_mutex_lock(&ps->lock);
    ps->next = p2;
    ps->next_owned = owned;
    ps->next_kernels = kernels;
    atomic_store(&ps->posted, 1);
    atomic_store(&ps->preparing, 0);
    pthread_cond_broadcast(&ps->applied); /* a step boundary waiting for it (swap_pause) */
    if (!ps->advancing || pthread_equal(pthread_self(), ps->stepper)) apply_posted(ps);
    while (atomic_load(&ps->posted)) pthread_cond_wait(&ps->applied, &ps->lock);
    int rc = ps->next_rc;
    diag_set(err, err_len, "%s", ps->next_err);
    pthread_mutex_unlock(&ps->lock);
    return rc;
}

static void stepping(pj_sim *ps, int on)
{
    pthread_mutex_lock(&ps->lock);
    ps->advancing = on;
    if (on) ps->stepper = pthread_self();
    pthread_mutex_unlock(&ps->lock);
    if (!on) between_steps(ps); /* one posted after the last step */
}

static int count_lines(const char *text, size_t len)
{
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    return lines;
}

pj_status pj_sim_redefine(pj_sim *ps, const char *text, char **diagnostics)
{
    if (diagnostics) *diagnostics = NULL;
    if (!ps || !text) return PJ_ERR_INPUT;
    /* the running text, then the new one on the lines after it */
    size_t add = strlen(text), len = ps->len + 1 + add;
    char *merged = malloc(len + 1);
    if (!merged) return PJ_ERR_MEMORY;
    memcpy(merged, ps->text, ps->len);
    size_t at = ps->len;
    if (at && merged[at - 1] != '\n') merged[at++] = '\n';
    memcpy(merged + at, text, add);
    len = at + add;
    merged[len] = 0;
    int first_line = count_lines(merged, at) + 1;
    /* the running scheme, whatever the text says: a simulation keeps its slots */
    pj_compile_options opt = {.scheme = ps->p->scheme, .scheme_set = 1,
                              .redefine_line = ps->first_redefinition ? ps->first_redefinition : first_line};
    diag d;
    diag_init(&d, ps->name, merged, len);
    diag_set_part(&d, first_line, "<redefine>");
    pj_program *p2 = compile_problem(ps->name, merged, len, &d, &opt);
    pj_status st = PJ_OK;
    char err[512] = "";
    void *kernels = NULL;
    if (p2) set_preparing(ps, 1);
    if (!p2) {
        st = PJ_ERR_INPUT;
    } else if (!(kernels = engine_prepare(ps->e, p2, NULL, err, sizeof err))) {
        set_preparing(ps, 0);
        st = engine_can_swap(ps->e) ? PJ_ERR_BACKEND : PJ_ERR_UNSUPPORTED;
    } else {
        /* swap now, or post it for the stepping thread and wait for the step boundary */
        if (swap_in(ps, p2, 1, kernels, err, sizeof err) < 0) {
            program_free(p2);
            st = PJ_ERR_INPUT;
        } else {
            free(ps->text);
            ps->text = merged;
            ps->len = len;
            ps->first_redefinition = opt.redefine_line;
            merged = NULL;
        }
    }
    if (st != PJ_OK && err[0]) diag_append(&d, "<redefine>: error: %s\n", err); /* compile errors are there already */
    if (st != PJ_OK && diagnostics && (d.log || d.errors)) *diagnostics = diagnostics_text(&d);
    if (st == PJ_ERR_BACKEND || st == PJ_ERR_UNSUPPORTED) program_free(p2);
    diag_free(&d);
    free(merged);
    return st;
}

/* An embedded pair with adapt (rk23, rk45): its steps bounded by the explicit stability limit
 * estimated at the current state (stability.h). stability_check's codes: 0, 2 (not estimated:
 * the note in err), -1. */
static int adaptive_limit(pj_sim *ps, char *err, size_t err_len)
{
    double limit = INFINITY;
    int r = stability_limit_memo(ps->e, &ps->memo, &limit, err, err_len);
    if (r < 0) return -1;
    engine_set_max_step(ps->e, r == 0 ? limit : 0);
    return r == 1 ? 2 : 0;
}

/* The explicit stability check again at an output time (driver_options.at_output): the state may
 * have moved far from the one the run was checked at (a nonlinear coefficient grown, a front
 * arrived). An adaptive pair's step bound is renewed; a fixed dt beyond the new limit ends the run
 * ("at t = T: dt = X exceeds ..."); a check that cannot be made says nothing. */
static int check_again(void *ctx, char *err, size_t err_len)
{
    pj_sim *ps = ctx;
    if (engine_program(ps->e)->adapt_order > 0) return adaptive_limit(ps, err, err_len) < 0;
    int r = stability_check_memo(ps->e, &ps->memo, ps->check_dt, err, err_len);
    if (r == 1 && err && err_len) {
        char why[768];
        snprintf(why, sizeof why, "%s", err);
        diag_set(err, err_len, "at t = %.9g: %s", engine_time(ps->e), why);
    }
    if (r == 2 && err && err_len) err[0] = 0;
    return r == 1 || r < 0;
}

pj_status pj_sim_advance(pj_sim *ps, double dt, double t_end, char *err, size_t err_len)
{
    if (!(dt > 0) || !(t_end >= engine_time(ps->e))) {
        diag_set(err, err_len, "pj_sim_advance: need dt > 0 and t_end >= the current time");
        return PJ_ERR_INPUT;
    }
    /* the run loop's steps (the last one shortened to land on t_end), a check after each; a
       redefinition posted meanwhile is swapped in between two steps */
    driver_options o = {.dt = dt, .until = t_end, .steps = -1, .check_every = 1, .between_steps = between_steps,
                        .between_ctx = ps, .interrupt = &ps->interrupt, .adaptive = ps->p->adapt > 0,
                        .no_monitors = 1};
    if (driver_check_counts(&o, engine_time(ps->e), err, err_len) < 0) return PJ_ERR_INPUT;
    if (ps->p->adapt_order > 0 && adaptive_limit(ps, err, err_len) < 0) return PJ_ERR_RUN;
    if (err && err_len) err[0] = 0;
    driver_result res;
    stepping(ps, 1);
    int rc = driver_run(ps->e, &o, &res, err, err_len);
    stepping(ps, 0);
    return rc == 0 ? PJ_OK : rc == 2 ? PJ_INTERRUPTED : PJ_ERR_RUN;
}

void pj_sim_interrupt(pj_sim *ps)
{
    if (ps) atomic_store(&ps->interrupt, 1); /* lock-free: safe in a signal handler */
}

pj_status pj_sim_swap(pj_sim *ps, const pj_problem *next, double *t_swap, char *err, size_t err_len)
{
    if (!ps || !next) return PJ_ERR_INPUT;
    char *text = malloc(next->len + 1);
    if (engine_any(ps->e, !text)) { /* over MPI every process swaps, or none */
        free(text);
        return PJ_ERR_MEMORY;
    }
    memcpy(text, next->text, next->len + 1);
    set_preparing(ps, 1);
    void *kernels = engine_prepare(ps->e, next->p, NULL, err, err_len);
    if (!kernels) {
        set_preparing(ps, 0);
        free(text);
        return engine_can_swap(ps->e) ? PJ_ERR_BACKEND : PJ_ERR_UNSUPPORTED;
    }
    if (swap_in(ps, next->p, 0, kernels, err, err_len) < 0) {
        free(text);
        return PJ_ERR_INPUT;
    }
    free(ps->text);
    ps->text = text;
    ps->len = next->len;
    ps->first_redefinition = 0;
    if (t_swap) *t_swap = ps->t_swap;
    return PJ_OK;
}

int pj_sim_can_swap(const pj_sim *ps) { return engine_can_swap(ps->e); }

/* A checkpoint holds the fields, the time and the step: enough for the explicit schemes and for
 * the one-step implicit ones at fixed steps (beuler, cn, imex), not for bdf2's history or the error
 * controller's next step. */
static int restart_refused(const pj_program *p, char *err, size_t err_len)
{
    if (p->scheme != PJ_BDF2 && !(p->adapt > 0)) return 0;
    diag_set(err, err_len, "checkpoints of %s runs are not available yet (the solver's %s is not in a checkpoint)",
             p->adapt > 0 ? "adaptive" : "bdf2", p->adapt > 0 ? "next step size" : "previous step");
    return 1;
}

pj_run_options pj_run_options_default(void)
{
    return (pj_run_options){.dt = 0, .until = -1, .steps = -1, .check_every = 1};
}

pj_status pj_sim_run(pj_sim *ps, const pj_run_options *options, pj_run_result *result, char *err, size_t err_len)
{
    pj_run_options o = options ? *options : pj_run_options_default();
    const pj_program *p = ps->p;
    double dt = o.dt > 0 ? o.dt : p->dt;
    if (!(dt > 0)) {
        diag_set(err, err_len, "no time step: add `time dt = ...` to the problem");
        return PJ_ERR_INPUT;
    }
    int64_t steps = o.steps >= 0 ? o.steps : o.until >= 0 ? -1 : p->steps;
    double until = o.until >= 0 ? o.until : p->until;
    if (steps < 0 && until < 0) {
        diag_set(err, err_len, "how far to run? add `until = ` or `steps = ` to the time statement");
        return PJ_ERR_INPUT;
    }
    driver_options dopt = {
        .dt = dt, .until = until, .steps = steps, .output_every = p->output_every, .output_at = p->output_at,
        .n_output_at = p->n_output_at, .no_snapshots = p->has_monitor && !p->has_output, .monitor_out = o.monitors,
        .monitor_every = p->has_monitor ? p->monitor_every : 0, .out_dir = o.out_dir,
        .formats = p->output_formats,
        .png = {p->output_colormap, p->has_output_range, p->output_range[0], p->output_range[1], p->output_slice,
                p->output_slice_index},
        .fields = p->output_fields, .n_fields = p->n_output_fields,
        .dump_path = o.dump_path, .check_every = o.check_every > 0 ? o.check_every : 1, .progress = o.progress,
        .between_steps = between_steps, .between_ctx = ps, .interrupt = &ps->interrupt, .adaptive = p->adapt > 0,
        .checkpoint_every = o.checkpoint_every, .checkpoint_dir = o.checkpoint_every > 0 ? o.out_dir : NULL,
        .seed = ps->seed, .single = ps->single, .resumed = ps->resumed,
        .on_monitor = o.on_monitor, .monitor_ctx = o.monitor_ctx, .on_progress = o.on_progress,
        .progress_ctx = o.progress_ctx, .progress_seconds = o.progress_seconds > 0 ? o.progress_seconds : 0.1,
    };
    if (o.checkpoint_every > 0 && restart_refused(p, err, err_len)) return PJ_ERR_INPUT;
    /* a resumed run takes the steps of the run that wrote the checkpoint: with its dt */
    if (ps->resumed && !isnan(ps->resume_dt) && dt != ps->resume_dt) {
        char theirs[32], ours[32];
        diag_set(err, err_len, "the checkpoint %s was written by a run with dt = %s, this run has dt = %s: a run "
                 "resumes with the dt it was written with", ps->resume_path,
                 diag_number(theirs, sizeof theirs, ps->resume_dt), diag_number(ours, sizeof ours, dt));
        return PJ_ERR_INPUT;
    }
    if (o.checkpoint_every > 0 && !o.out_dir) {
        diag_set(err, err_len, "checkpoints are written into the output folder: give one (out_dir, --out)");
        return PJ_ERR_INPUT;
    }
    if (!o.no_stability_check && !PJ_SCHEME_IMPLICIT(p->scheme)) dopt.at_output = check_again;
    ps->check_dt = dt;
    if (result) *result = (pj_run_result){0, engine_time(ps->e), 0, 0, ""};
    if (driver_check_counts(&dopt, engine_time(ps->e), err, err_len) < 0) return PJ_ERR_INPUT;
    /* an adaptive explicit run chooses its steps: the limit bounds them instead of refusing dt */
    int stable = o.no_stability_check ? 0 : p->adapt_order > 0 ? adaptive_limit(ps, err, err_len)
                                                                : stability_check_memo(ps->e, &ps->memo, dt, err, err_len);
    if (stable == 1) return PJ_ERR_INPUT;
    if ((stable == 2 || stable < 0) && o.progress && engine_rank(ps->e) == 0) { /* -1: it failed (memory) */
        fprintf(o.progress, "pdejit: note: %s%s\n", stable < 0 ? "the stability check was not made: " : "", err);
        fflush(o.progress);
    }
    if (err && err_len) err[0] = 0; /* a check that could not be made says nothing */
    int cleaned = 0, root = engine_rank(ps->e) == 0; /* over MPI rank 0 writes every output */
    int unwritable = root && driver_prepare_outputs(&dopt, &cleaned, err, err_len) < 0;
    if (engine_agree(ps->e, unwritable, err, err_len)) return PJ_ERR_INPUT;
    if (cleaned && o.progress) {
        fprintf(o.progress, "pdejit: %s: removed the %d file%s of a previous series before writing this one\n",
                o.out_dir, cleaned, cleaned == 1 ? "" : "s");
        fflush(o.progress);
    }
    ps->user_between = o.between_steps;
    ps->user_ctx = o.between_ctx;
    driver_result res;
    stepping(ps, 1);
    int rc = driver_run(ps->e, &dopt, &res, err, err_len);
    stepping(ps, 0);
    ps->resumed = 0;
    ps->user_between = NULL;
    if (result) {
        *result = (pj_run_result){res.steps, res.t, res.seconds, res.snapshots, ""};
        snprintf(result->stopped, sizeof result->stopped, "%s", res.stopped);
    }
    return rc == 0 ? PJ_OK : rc == 2 ? PJ_INTERRUPTED : PJ_ERR_RUN;
}

pj_status pj_sim_adaptive_stats(const pj_sim *ps, int64_t *accepted, int64_t *rejected, double *dt_last,
                                double *dt_next)
{
    if (!ps || engine_adaptive_stats(ps->e, accepted, rejected, dt_last, dt_next) < 0) return PJ_ERR_INPUT;
    return PJ_OK;
}

pj_status pj_sim_on_adaptive_step(pj_sim *ps,
                                  void (*fn)(void *ctx, int64_t step, double t, double dt, double error, int accepted),
                                  void *ctx)
{
    if (!ps || engine_adaptive_stats(ps->e, NULL, NULL, NULL, NULL) < 0) return PJ_ERR_INPUT;
    engine_on_adaptive_try(ps->e, fn, ctx);
    return PJ_OK;
}

pj_status pj_sim_solver_stats(const pj_sim *ps, pj_solver_stats *stats)
{
    implicit_stats st;
    if (!ps || !stats || engine_solver_stats(ps->e, &st) < 0) return PJ_ERR_INPUT;
    *stats = (pj_solver_stats){st.steps, st.rejected, st.newton, st.linear, st.last_newton, st.last_linear,
                               st.last_residual, st.jacobians, st.seconds_jacobian, st.last_dt, st.steady,
                               st.adaptive, st.n_unused, st.unused ? st.unused : "", st.note ? st.note : "",
                               st.pseudo_steps, st.pseudo_newton};
    return PJ_OK;
}

void pj_sim_get_info(const pj_sim *ps, pj_sim_info *info)
{
    engine_info ei;
    engine_get_info(ps->e, &ei);
    *info = (pj_sim_info){engine_ops(ps->e)->name, ei.device, ei.warning, ei.n_kernels, ei.from_cache, ei.ms_prepare,
                          ei.ms_compiler, ei.stepping};
}

int pj_sim_kernel(const pj_sim *ps, int i, const char **name, int *from_cache, double *ms)
{
    engine_info ei;
    engine_get_info(ps->e, &ei);
    if (!ei.kernels || i < 0 || i >= ei.n_kernels) return -1;
    if (name) *name = ei.kernels[i].name;
    if (from_cache) *from_cache = ei.kernels[i].from_cache;
    if (ms) *ms = ei.kernels[i].ms;
    return 0;
}

void pj_sim_compile_times(const pj_sim *ps, pj_compile_times *t)
{
    engine_info ei;
    engine_get_info(ps->e, &ei);
    *t = (pj_compile_times){.front = ps->p->ms_front, .kir = ps->p->ms_kir, .wall = ei.ms_prepare,
                            .kernels = ei.n_kernels, .compiled = ei.n_kernels - ei.from_cache};
    for (int i = 0; ei.kernels && i < ei.n_kernels; i++) {
        const engine_kernel_info *k = &ei.kernels[i];
        t->ir += k->ms_ir;
        t->opt += k->ms_opt;
        t->codegen += k->ms_codegen;
        t->load += k->ms_load;
        t->cache += k->ms_cache;
    }
}

/* The canonical hashes of p's kernels (a step's, initial values, boundary conditions, params). */
static int kernel_hashes(const pj_program *p, const uint8_t **out)
{
    pj_kernel_id ids[PJ_KERNEL_IDS_MAX];
    int n = 0, n_ids = p->n_stages + 4 <= PJ_KERNEL_IDS_MAX ? program_step_kernels(p, ids) : 0;
    for (int s = 0; s < n_ids; s++) {
        const kir_kernel *k = program_kernel(p, ids[s]);
        if (k) out[n++] = k->hash;
    }
    if (p->init) out[n++] = p->init->hash;
    if (p->params_kernel) out[n++] = p->params_kernel->hash;
    for (int side = 0; side < 6; side++)
        if (p->bc_kernel[side]) out[n++] = p->bc_kernel[side]->hash;
    return n;
}

int pj_problem_const_count(const pj_problem *pr) { return pr->p->n_consts; }
const char *pj_problem_const_name(const pj_problem *pr, int i)
{
    return i >= 0 && i < pr->p->n_consts ? pr->p->const_names[i] : NULL;
}

int pj_problem_kernels_changed(const pj_problem *a, const pj_problem *b, int *total)
{
    const uint8_t **ha = malloc(sizeof *ha * (size_t)(a->p->n_stages + 12));
    const uint8_t **hb = malloc(sizeof *hb * (size_t)(b->p->n_stages + 12));
    if (!ha || !hb) {
        free(ha);
        free(hb);
        if (total) *total = 0;
        return -1;
    }
    int na = kernel_hashes(a->p, ha), nb = kernel_hashes(b->p, hb), changed = 0;
    for (int j = 0; j < nb; j++) {
        int found = 0;
        for (int i = 0; i < na && !found; i++) found = !memcmp(ha[i], hb[j], 16);
        changed += !found;
    }
    free(ha);
    free(hb);
    if (total) *total = nb;
    return changed;
}

pj_status pj_sim_resume(pj_sim *ps, const char *checkpoint, char *err, size_t err_len)
{
    if (!ps || !checkpoint) return PJ_ERR_INPUT;
    if (restart_refused(ps->p, err, err_len)) return PJ_ERR_INPUT;
    double dt = NAN;
    char *path = strdup(checkpoint);
    if (!path) {
        diag_set(err, err_len, "out of memory");
        return PJ_ERR_MEMORY;
    }
    if (checkpoint_read(ps->e, checkpoint, ps->seed, ps->single, &dt, err, err_len) < 0) {
        free(path);
        return PJ_ERR_INPUT;
    }
    free(ps->resume_path);
    ps->resume_path = path;
    ps->resume_dt = dt;
    ps->resumed = 1;
    return PJ_OK;
}

pj_status pj_sim_init_from_csv(pj_sim *ps, const char *csv, char *err, size_t err_len)
{
    if (!ps || !csv) return PJ_ERR_INPUT;
    return checkpoint_init_from_csv(ps->e, csv, err, err_len) < 0 ? PJ_ERR_INPUT : PJ_OK;
}

double pj_sim_time(const pj_sim *ps) { return engine_time(ps->e); }
int64_t pj_sim_steps(const pj_sim *ps) { return engine_steps(ps->e); }

static int field_index(const pj_program *p, const char *name)
{
    for (int f = 0; name && f < p->n_fields; f++)
        if (!strcmp(p->field_names[f], name)) return f;
    return -1;
}

pj_status pj_sim_get_field(const pj_sim *ps, const char *name, double *out)
{
    int f = field_index(ps->p, name);
    if (f < 0 || !out) return PJ_ERR_INPUT;
    return engine_get_field(ps->e, f, out, NULL, 0) == 0 ? PJ_OK : PJ_ERR_BACKEND;
}

pj_status pj_sim_set_field(pj_sim *ps, const char *name, const double *values)
{
    int f = field_index(ps->p, name);
    if (f < 0 || !values) return PJ_ERR_INPUT;
    return engine_set_field(ps->e, f, values, NULL, 0) == 0 ? PJ_OK : PJ_ERR_BACKEND;
}

pj_status pj_sim_monitor(pj_sim *ps, const char *name, double *value, char *err, size_t err_len)
{
    const pj_program *p = engine_program(ps->e);
    int m = -1;
    for (int i = 0; name && i < p->n_monitors; i++)
        if (!strcmp(p->monitor_names[i], name)) m = i;
    if (m < 0 || !value) {
        diag_set(err, err_len, "pj_sim_monitor: %s%s%s", name ? "no monitor called " : "no name", name ? name : "",
                 value ? "" : " (or no value pointer)");
        return PJ_ERR_INPUT;
    }
    double *v = malloc(sizeof *v * (size_t)p->n_monitors);
    if (!v) return PJ_ERR_MEMORY;
    int r = engine_reduce(ps->e, v, err, err_len);
    if (r == 0) *value = v[m];
    free(v);
    return r == 0 ? PJ_OK : PJ_ERR_BACKEND;
}

pj_status pj_sim_field_view(pj_sim *ps, const char *name, pj_field_view *view)
{
    int f = field_index(ps->p, name);
    if (f < 0 || !view) return PJ_ERR_INPUT;
    engine_view v;
    if (engine_view_field(ps->e, f, &v) < 0) return PJ_ERR_BACKEND;
    view->data = v.data;
    for (int a = 0; a < 3; a++) {
        view->shape[a] = v.shape[a];
        view->strides[a] = v.stride[a];
    }
    view->elem_size = v.elem_size;
    view->on_device = v.on_device;
    return PJ_OK;
}
