/* state.c — the executors' common state and the one step protocol (see state.h). */
#include "state.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diag.h"

static void params_default(sim_state *st, const pj_program *p)
{
    for (int i = 0; i < p->n_params; i++)
        if (!st->param_set[i]) st->param[i] = p->param_values ? p->param_values[i] : 0;
    if (p->params_kernel) kir_eval_params(p->params_kernel, st->param, st->param_set);
}

int state_init(sim_state *st, const pj_program *p, const grid_layout *g, const ghost_settings *ghosts, uint64_t seed,
               const char *who, char *err, size_t len)
{
    memset(st, 0, sizeof *st);
    st->p = p;
    st->g = *g;
    st->esz = g->esz;
    st->seed = seed;
    st->nbuf = p->n_slots * p->n_fields;
    size_t np = (size_t)(p->n_params ? p->n_params : 1);
    st->mem = calloc((size_t)st->nbuf, sizeof *st->mem);
    st->buf = calloc((size_t)st->nbuf, sizeof *st->buf);
    st->param = calloc(np, sizeof *st->param);
    st->param_set = calloc(np, 1);
    if (!st->mem || !st->buf || !st->param || !st->param_set || ghost_plan_make(&st->plan, p, ghosts) < 0) {
        state_free(st);
        diag_set(err, len, "%s: out of memory", who);
        return -1;
    }
    params_default(st, p);
    return 0;
}

void state_free(sim_state *st)
{
    free(st->mem);
    free(st->buf);
    free(st->param);
    free(st->param_set);
    ghost_plan_free(&st->plan);
    st->mem = st->buf = NULL;
    st->param = NULL;
    st->param_set = NULL;
}

int state_set_param(sim_state *st, const char *name, double value)
{
    const pj_program *p = st->p;
    for (int i = 0; name && i < p->n_params; i++) {
        if (!p->param_names || !p->param_names[i] || strcmp(p->param_names[i], name)) continue;
        st->param[i] = value;
        st->param_set[i] = 1;
        if (p->params_kernel) kir_eval_params(p->params_kernel, st->param, st->param_set);
        return i;
    }
    return -1;
}

void state_set_params(sim_state *st, const double *values)
{
    const pj_program *p = st->p;
    for (int i = 0; i < p->n_params; i++) {
        st->param[i] = values[i];
        st->param_set[i] = 1;
    }
    if (p->params_kernel) kir_eval_params(p->params_kernel, st->param, st->param_set);
}

int state_check_program(const sim_state *st, const pj_program *p2, char *err, size_t len)
{
    const pj_program *p = st->p;
    if (p2->dim != p->dim) {
        diag_set(err, len, "the mesh changed from %dD to %dD", p->dim, p2->dim);
        return -1;
    }
    for (int a = 0; a < p->dim; a++)
        if (p2->n[a] != p->n[a] || p2->length[a] != p->length[a] || p2->origin[a] != p->origin[a]) {
            diag_set(err, len, "the mesh changed along %c", "xyz"[a]);
            return -1;
        }
    if (p2->n_fields != p->n_fields) {
        diag_set(err, len, "the fields changed (%d, now %d)", p->n_fields, p2->n_fields);
        return -1;
    }
    for (int f = 0; f < p->n_fields; f++)
        if (strcmp(p->field_names[f], p2->field_names[f])) {
            diag_set(err, len, "the fields changed ('%s' is now '%s')", p->field_names[f], p2->field_names[f]);
            return -1;
        }
    if (p2->n_params != p->n_params) {
        diag_set(err, len, "the params changed (%d, now %d)", p->n_params, p2->n_params);
        return -1;
    }
    for (int i = 0; i < p->n_params; i++)
        if (strcmp(p->param_names[i], p2->param_names[i])) {
            diag_set(err, len, "the params changed ('%s' is now '%s')", p->param_names[i], p2->param_names[i]);
            return -1;
        }
    if (p2->n_slots != p->n_slots || p2->swap_after_step != p->swap_after_step) {
        diag_set(err, len, "the scheme changed from %s to %s", scheme_name(p->scheme), scheme_name(p2->scheme));
        return -1;
    }
    if (p2->halo > st->g.H) {
        diag_set(err, len, "the stencil now reaches %d cells, the fields have %d ghost layers", p2->halo, st->g.H);
        return -1;
    }
    return 0;
}

int state_adopt(sim_state *st, const pj_program *p2)
{
    ghost_plan plan;
    if (ghost_plan_make(&plan, p2, &st->plan.set) < 0) return -1;
    ghost_plan_free(&st->plan);
    st->plan = plan;
    st->p = p2;
    params_default(st, p2); /* params the user set keep their values */
    return 0;
}

stage_clock state_stage_clock(const pj_program *p, int i, double t, int64_t step, double dt)
{
    stage_clock c = {t + p->stages[i].t_frac * dt, dt, step, i + 1};
    return c;
}

void state_swap_slots(sim_state *st, int *map)
{
    const pj_program *p = st->p;
    if (!p->swap_after_step) return;
    for (int f = 0; f < p->n_fields; f++) {
        if (!p->field_has_eq[f]) continue; /* a coefficient lives in slot 0 */
        int a = f, b = p->n_fields + f;
        if (map) {
            int x = map[a];
            map[a] = map[b];
            map[b] = x;
            continue;
        }
        void *m = st->mem[a];
        st->mem[a] = st->mem[b];
        st->mem[b] = m;
        m = st->buf[a];
        st->buf[a] = st->buf[b];
        st->buf[b] = m;
    }
}

void state_nan_report(const sim_state *st, int f, const int64_t idx[3], double value, const double origin[3],
                      const double h[3], sim_nan_report *report)
{
    report->step = st->steps;
    report->t = st->t;
    report->field = f;
    report->value = value;
    for (int a = 0; a < 3; a++) {
        report->cell[a] = idx[a] + st->g.first[a]; /* in the mesh */
        report->x[a] = origin[a] + ((double)report->cell[a] + 0.5) * h[a];
    }
}

/* ---- adaptive explicit steps (see state.h) ---------------------------------------------- */

/* PETSc 3.18's TSADAPTBASIC defaults (TSAdaptCreate_Basic, TSSetMaxStepRejections) */
#define ADAPT_SAFETY 0.9
#define ADAPT_REJECT_SAFETY 0.5
#define ADAPT_CLIP_LO 0.1
#define ADAPT_CLIP_HI 10.0
#define ADAPT_DT_MIN 1e-20
#define ADAPT_MAX_REJECT 10
#define ADAPT_MATCH_GROW 1.01 /* TSAdapt's matchstepfac: a last step may grow 1 % to land; one less
                                 than 2 steps from the landing is halved */

/* The weighted RMS norm of the error of the try just run: the mean of the error buffer (the sum
   over the fields of each cell's weighted squares, program.h) over cells and fields, summed in
   the cells' order (x fastest) on every back end, so that every back end takes the same steps. */
static int error_norm(sim_state *st, const stepper_ops *ops, void *x, double *norm, char *err, size_t len)
{
    const pj_program *p = st->p;
    const grid_layout *g = &st->g;
    const int b = p->adapt_error_buf;
    const int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
    double sum = 0;
    if (!p->adapt_eq_fields) { /* nothing evolves: nothing to err */
        *norm = 0;
        return 0;
    }
    if (ops->fetch) {
        double *v = malloc(sizeof *v * (size_t)(n0 * n1 * n2));
        if (!v) {
            diag_set(err, len, "out of memory");
            return -1;
        }
        if (ops->fetch(x, b, v, err, len) < 0) {
            free(v);
            return -1;
        }
        for (int64_t i = 0; i < n0 * n1 * n2; i++) sum += v[i];
        free(v);
    } else {
        for (int64_t k = 0; k < n2; k++)
            for (int64_t j = 0; j < n1; j++) {
                int64_t at = j * g->stride[1] + k * g->stride[2];
                if (st->esz == sizeof(float)) {
                    const float *row = (const float *)st->buf[b] + at;
                    for (int64_t i = 0; i < n0; i++) sum += (double)row[i];
                } else {
                    const double *row = (const double *)st->buf[b] + at;
                    for (int64_t i = 0; i < n0; i++) sum += row[i];
                }
            }
    }
    double entries = (double)(n0 * n1 * n2) * (double)(p->adapt_eq_fields > 0 ? p->adapt_eq_fields : 1);
    *norm = sqrt(sum / entries);
    return 0;
}

static int run_stages(sim_state *st, const stepper_ops *ops, void *x, double dt, char *err, size_t len)
{
    const pj_program *p = st->p;
    for (int i = 0; i < p->n_stages; i++) {
        stage_clock c = state_stage_clock(p, i, st->t, st->steps, dt);
        if (ops->fill(x, p->stages[i].read_slot, c.t, err, len) < 0 || ops->stage(x, i, &c, err, len) < 0) return -1;
    }
    return 0;
}

static int adapt_fail(sim_state *st, char *err, size_t len)
{
    st->failed = 1;
    diag_set(err, len, "%s", st->error);
    return -1;
}

static int adaptive_step(sim_state *st, const stepper_ops *ops, void *x, double span, char *err, size_t len)
{
    const pj_program *p = st->p;
    const double target = st->t + span, eps = 1e-12 * fmax(fabs(target), span);
    double h = st->h_next > 0 ? st->h_next : p->dt > 0 ? p->dt : span;
    int rejections = 0, last_rejected = 0;
    while (st->t < target - eps) {
        if (st->h_max > 0 && h > st->h_max) h = st->h_max;
        double left = target - st->t, try = h;
        int lands = 0;
        if (try * ADAPT_MATCH_GROW >= left - eps) { /* within 1 % of the landing: land */
            try = left;
            lands = 1;
        } else if (2 * try > left) {
            try = left / 2; /* no sliver before the landing */
        }
        double enorm;
        if (run_stages(st, ops, x, try, err, len) < 0 || error_norm(st, ops, x, &enorm, err, len) < 0) return -1;
        if (!(enorm == enorm)) enorm = INFINITY; /* a try that overflowed is rejected */
        int accept = enorm <= 1;
        double safety = ADAPT_SAFETY * (!accept && last_rejected ? ADAPT_REJECT_SAFETY : 1);
        double fac = enorm > 0 ? safety * pow(enorm, -1.0 / p->adapt_order) : ADAPT_CLIP_HI;
        fac = fac < ADAPT_CLIP_LO ? ADAPT_CLIP_LO : fac > ADAPT_CLIP_HI ? ADAPT_CLIP_HI : fac;
        double next = try * fac;
        if (next < ADAPT_DT_MIN) next = ADAPT_DT_MIN;
        if (st->on_try) st->on_try(st->on_try_ctx, st->steps, st->t, try, enorm, accept);
        if (accept) {
            if (p->swap_after_step) {
                state_swap_slots(st, NULL);
                if (ops->swapped) ops->swapped(x);
            }
            st->steps++;
            st->t = lands ? target : st->t + try;
            st->h_last = try;
            rejections = last_rejected = 0;
            /* a step cut short to land keeps the controller's step for the next */
            h = try < h && next >= try ? fmax(next, h) : next;
            if (!lands && st->stop && atomic_load(st->stop)) { /* interrupted: short of the span */
                st->h_next = h;
                return 0;
            }
        } else {
            st->rejected++;
            last_rejected = 1;
            if (++rejections > ADAPT_MAX_REJECT || try <= ADAPT_DT_MIN) {
                snprintf(st->error, sizeof st->error, "the adaptive %s step from t = %.9g was rejected %d times in a row "
                         "(error norm %.3g at dt = %.3g)", scheme_name(p->scheme), st->t, rejections, enorm, try);
                return adapt_fail(st, err, len);
            }
            h = next;
        }
    }
    st->t = target;
    st->h_next = h;
    return 0;
}

int stepper_step(sim_state *st, const stepper_ops *ops, void *x, double dt, char *err, size_t len)
{
    const pj_program *p = st->p;
    if (st->failed) {
        diag_set(err, len, "%s", st->error);
        return -1;
    }
    if (p->adapt_order > 0) return adaptive_step(st, ops, x, dt, err, len);
    if (run_stages(st, ops, x, dt, err, len) < 0) return -1;
    if (p->swap_after_step) {
        state_swap_slots(st, NULL);
        if (ops->swapped) ops->swapped(x);
    }
    st->steps++;
    st->t += dt;
    return 0;
}

int stepper_step_n(sim_state *st, const stepper_ops *ops, void *x, double dt, int64_t n, char *err, size_t len)
{
    while (n > 0) {
        int64_t k = ops->sweep && !st->failed && !(st->p->adapt_order > 0) ? ops->sweep(x, dt, n, err, len) : 0;
        if (k < 0) return -1;
        if (k == 0) {
            if (stepper_step(st, ops, x, dt, err, len) < 0) return -1;
            k = 1;
        }
        n -= k;
    }
    return 0;
}
