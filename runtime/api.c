/* api.c — the public API (include/pdejit.h) over the compiler and the back-end interface
 * (runtime/engine.h): a pj_sim is an engine plus what the caller set. */
#include "pdejit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "engine.h"
#include "program.h"

struct pj_problem { pj_program *p; };
struct pj_sim { engine *e; const pj_program *p; };

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
    int out_of_memory = d.out_of_memory;
    diag_free(&d);
    if (!p) return out_of_memory ? PJ_ERR_MEMORY : PJ_ERR_INPUT;
    pj_problem *pr = malloc(sizeof *pr);
    if (!pr) {
        program_free(p);
        return PJ_ERR_MEMORY;
    }
    pr->p = p;
    *problem = pr;
    return PJ_OK;
}

void pj_problem_free(pj_problem *problem)
{
    if (!problem) return;
    program_free(problem->p);
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
    engine_options eo = {.single = o.single, .fast_math = o.fast_math, .threads = o.threads};
    int unavailable = 0;
    ps->e = engine_create(engine_backend(names[o.backend]), problem->p, &eo, &unavailable, err, err_len);
    if (!ps->e) {
        free(ps);
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
    free(ps);
}

pj_status pj_sim_set_param(pj_sim *ps, const char *name, double value)
{
    return name && engine_set_param(ps->e, name, value) == 0 ? PJ_OK : PJ_ERR_INPUT;
}

pj_status pj_sim_advance(pj_sim *ps, double dt, double t_end, char *err, size_t err_len)
{
    if (!(dt > 0) || !(t_end >= engine_time(ps->e))) {
        diag_set(err, err_len, "pj_sim_advance: need dt > 0 and t_end >= the current time");
        return PJ_ERR_INPUT;
    }
    /* the run loop's steps (the last one shortened to land on t_end), a check after each */
    driver_options o = {.dt = dt, .until = t_end, .steps = -1, .check_every = 1};
    driver_result res;
    if (driver_run(ps->e, &o, &res, err, err_len) == 0) return PJ_OK;
    return PJ_ERR_RUN;
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
