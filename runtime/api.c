/* api.c — the public API (include/pdejit.h) over the compiler and the runtime. */
#include "pdejit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_backend.h"
#include "driver.h"
#include "program.h"
#include "sim.h"

struct pj_problem { pj_program *p; };
struct pj_sim { sim *s; cpu_backend *cpu; const pj_program *p; };

pj_status pj_problem_compile(const char *name, const char *text, size_t len, pj_problem **problem, char **diagnostics)
{
    if (!text || !problem) return PJ_ERR_INPUT;
    *problem = NULL;
    if (diagnostics) *diagnostics = NULL;
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
    pj_sim *ps = calloc(1, sizeof *ps);
    if (!ps) return PJ_ERR_MEMORY;
    ps->p = problem->p;
    sim_options so = {o.single, o.threads};
    ps->s = sim_create(problem->p, &so, err, err_len);
    if (!ps->s) {
        free(ps);
        return PJ_ERR_MEMORY;
    }
    if (o.backend == PJ_BACKEND_CPU) {
        cpu_backend_options bo = {o.single, o.fast_math, NULL};
        ps->cpu = cpu_backend_create(&bo, err, err_len);
        if (!ps->cpu || cpu_backend_prepare(ps->cpu, problem->p, NULL, err, err_len) < 0) {
            pj_sim_free(ps);
            return PJ_ERR_BACKEND;
        }
        cpu_backend_install(ps->cpu, ps->s);
    } else if (o.backend != PJ_BACKEND_INTERP) {
        pj_sim_free(ps);
        return PJ_ERR_INPUT;
    }
    sim_init(ps->s);
    *out = ps;
    return PJ_OK;
}

void pj_sim_free(pj_sim *ps)
{
    if (!ps) return;
    sim_destroy(ps->s);
    cpu_backend_destroy(ps->cpu);
    free(ps);
}

pj_status pj_sim_set_param(pj_sim *ps, const char *name, double value)
{
    return name && sim_set_param(ps->s, name, value) == 0 ? PJ_OK : PJ_ERR_INPUT;
}

pj_status pj_sim_advance(pj_sim *ps, double dt, double t_end, char *err, size_t err_len)
{
    if (!(dt > 0) || !(t_end >= sim_time(ps->s))) {
        if (err) snprintf(err, err_len, "pj_sim_advance: need dt > 0 and t_end >= the current time");
        return PJ_ERR_INPUT;
    }
    /* as the run loop: whole steps of dt, the last one shortened to land on t_end (a remainder
       within 1e-9 dt of a whole number of steps is that many steps) */
    int64_t n = (int64_t)ceil((t_end - sim_time(ps->s)) / dt - 1e-9);
    for (int64_t i = 0; i < n; i++) {
        double h = i == n - 1 ? t_end - sim_time(ps->s) : dt;
        if (h <= 0) break;
        sim_step(ps->s, h);
        sim_nan_report r;
        if (sim_take_nonfinite(ps->s) && sim_check_finite(ps->s, &r)) {
            if (err) driver_describe_nan(ps->p, &r, err, err_len);
            return PJ_ERR_RUN;
        }
    }
    return PJ_OK;
}

double pj_sim_time(const pj_sim *ps) { return sim_time(ps->s); }
int64_t pj_sim_steps(const pj_sim *ps) { return sim_steps(ps->s); }

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
    sim_get_field(ps->s, f, out);
    return PJ_OK;
}

pj_status pj_sim_set_field(pj_sim *ps, const char *name, const double *values)
{
    int f = field_index(ps->p, name);
    if (f < 0 || !values) return PJ_ERR_INPUT;
    sim_set_field(ps->s, f, values);
    return PJ_OK;
}
