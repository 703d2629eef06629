/* state.c — the executors' common state and the one step protocol (see state.h). */
#include "state.h"
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

int stepper_step(sim_state *st, const stepper_ops *ops, void *x, double dt, char *err, size_t len)
{
    const pj_program *p = st->p;
    if (st->failed) {
        diag_set(err, len, "%s", st->error);
        return -1;
    }
    for (int i = 0; i < p->n_stages; i++) {
        stage_clock c = state_stage_clock(p, i, st->t, st->steps, dt);
        if (ops->fill(x, p->stages[i].read_slot, c.t, err, len) < 0 || ops->stage(x, i, &c, err, len) < 0) return -1;
    }
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
        int64_t k = ops->sweep && !st->failed ? ops->sweep(x, dt, n, err, len) : 0;
        if (k < 0) return -1;
        if (k == 0) {
            if (stepper_step(st, ops, x, dt, err, len) < 0) return -1;
            k = 1;
        }
        n -= k;
    }
    return 0;
}
