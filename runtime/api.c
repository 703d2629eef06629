/* api.c — the public API (include/pdejit.h) over the compiler and the back-end interface
 * (runtime/engine.h): a pj_sim is an engine plus what the caller set. */
#include "pdejit.h"
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "engine.h"
#include "program.h"

struct pj_problem {
    pj_program *p;
    char *name, *text;     /* what it was compiled from: redefinitions are compiled after it */
    size_t len;
};

struct pj_sim {
    engine *e;
    const pj_program *p;   /* the program running */
    pj_program *owned;     /* p, when a redefinition made it */
    /* the text p was compiled from, and where the redefinitions in it begin (0: none yet) */
    char *name, *text;
    size_t len;
    int first_redefinition;
    /* hot swap while pj_sim_advance runs on another thread: posted, applied between steps */
    pthread_mutex_t lock;
    pthread_cond_t applied;
    int advancing;
    atomic_int posted;
    pj_program *next;
    void *next_kernels;
    int next_rc;
    char next_err[512];
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
    }
    return "unknown status";
}

pj_status pj_problem_compile(const char *name, const char *text, size_t len, pj_problem **problem, char **diagnostics)
{
    if (problem) *problem = NULL;
    if (diagnostics) *diagnostics = NULL;
    if (!text || !problem) return PJ_ERR_INPUT;
    diag d;
    diag_init(&d, name ? name : "<input>", text, len);
    pj_program *p = compile_problem(name, text, len, &d, NULL);
    if (diagnostics && d.log) *diagnostics = strdup(d.log);
    diag_free(&d);
    if (!p) return PJ_ERR_INPUT;
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
int pj_problem_field_count(const pj_problem *pr) { return pr->p->n_fields; }
const char *pj_problem_field_name(const pj_problem *pr, int f) { return f >= 0 && f < pr->p->n_fields ? pr->p->field_names[f] : NULL; }
int pj_problem_param_count(const pj_problem *pr) { return pr->p->n_params; }
const char *pj_problem_param_name(const pj_problem *pr, int i) { return i >= 0 && i < pr->p->n_params ? pr->p->param_names[i] : NULL; }
double pj_problem_dt(const pj_problem *pr) { return pr->p->dt; }

pj_status pj_sim_create(const pj_problem *problem, const pj_sim_options *options, pj_sim **out, char *err, size_t err_len)
{
    pj_sim_options o = options ? *options : (pj_sim_options){0};
    if (!problem || !out) return PJ_ERR_INPUT;
    *out = NULL;
    static const char *const names[] = {[PJ_BACKEND_INTERP] = "interp", [PJ_BACKEND_CPU] = "cpu",
                                        [PJ_BACKEND_CUDA] = "cuda"};
    if ((unsigned)o.backend >= sizeof names / sizeof *names) {
        diag_set(err, err_len, "pj_sim_create: no back end number %d", (int)o.backend);
        return PJ_ERR_INPUT;
    }
    pj_sim *ps = calloc(1, sizeof *ps);
    if (!ps) return PJ_ERR_MEMORY;
    ps->p = problem->p;
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
    engine_options eo = {.single = o.single, .fast_math = o.fast_math, .threads = o.threads};
    int unavailable = 0;
    ps->e = engine_create(engine_backend(names[o.backend]), problem->p, &eo, &unavailable, err, err_len);
    if (!ps->e) {
        pj_sim_free(ps);
        return unavailable ? PJ_ERR_UNAVAILABLE : PJ_ERR_BACKEND;
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
    program_free(ps->owned);
    pthread_mutex_destroy(&ps->lock);
    pthread_cond_destroy(&ps->applied);
    free(ps->name);
    free(ps->text);
    free(ps);
}

pj_status pj_sim_set_param(pj_sim *ps, const char *name, double value)
{
    return name && engine_set_param(ps->e, name, value) == 0 ? PJ_OK : PJ_ERR_INPUT;
}

/* ---- hot swap -------------------------------------------------------------------------- */

/* Runs the posted program (under the lock): the running one is released once replaced. */
static void apply_posted(pj_sim *ps)
{
    ps->next_rc = engine_swap(ps->e, ps->next, ps->next_kernels, ps->next_err, sizeof ps->next_err);
    if (ps->next_rc == 0) {
        program_free(ps->owned); /* between steps: nothing refers to it any more */
        ps->owned = ps->next;
        ps->p = ps->next;
    }
    ps->next = NULL;
    ps->next_kernels = NULL;
    atomic_store(&ps->posted, 0);
    pthread_cond_broadcast(&ps->applied);
}

static void between_steps(void *ctx)
{
    pj_sim *ps = ctx;
    if (!atomic_load(&ps->posted)) return;
    pthread_mutex_lock(&ps->lock);
    if (atomic_load(&ps->posted)) apply_posted(ps);
    pthread_mutex_unlock(&ps->lock);
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
    if (!p2) {
        st = PJ_ERR_INPUT;
    } else if (!(kernels = engine_prepare(ps->e, p2, NULL, err, sizeof err))) {
        st = PJ_ERR_BACKEND;
    } else {
        /* swap now, or post it for the stepping thread and wait for the step boundary */
        pthread_mutex_lock(&ps->lock);
        ps->next = p2;
        ps->next_kernels = kernels;
        atomic_store(&ps->posted, 1);
        if (!ps->advancing) apply_posted(ps);
        while (atomic_load(&ps->posted)) pthread_cond_wait(&ps->applied, &ps->lock);
        int rc = ps->next_rc;
        snprintf(err, sizeof err, "%s", ps->next_err);
        pthread_mutex_unlock(&ps->lock);
        if (rc < 0) {
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
    if (st != PJ_OK && diagnostics && d.log) *diagnostics = strdup(d.log);
    if (st == PJ_ERR_BACKEND) program_free(p2);
    diag_free(&d);
    free(merged);
    return st;
}

pj_status pj_sim_advance(pj_sim *ps, double dt, double t_end, char *err, size_t err_len)
{
    if (!(dt > 0) || !(t_end >= engine_time(ps->e))) {
        diag_set(err, err_len, "pj_sim_advance: need dt > 0 and t_end >= the current time");
        return PJ_ERR_INPUT;
    }
    /* the run loop's steps (the last one shortened to land on t_end), a check after each; a
       redefinition posted meanwhile is swapped in between two steps */
    pthread_mutex_lock(&ps->lock);
    ps->advancing = 1;
    pthread_mutex_unlock(&ps->lock);
    driver_options o = {.dt = dt, .until = t_end, .steps = -1, .check_every = 1, .between_steps = between_steps,
                        .between_ctx = ps};
    driver_result res;
    int rc = driver_run(ps->e, &o, &res, err, err_len);
    pthread_mutex_lock(&ps->lock);
    ps->advancing = 0;
    pthread_mutex_unlock(&ps->lock);
    between_steps(ps); /* one posted after the last step */
    return rc == 0 ? PJ_OK : PJ_ERR_RUN;
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
