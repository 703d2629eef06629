/* simulation.c — the generic half of every back end's simulation (see simulation.h). */
#include "simulation.h"
#include "diag.h"

int simulation_step(const simulation *m, double dt, char *err, size_t len)
{
    int rc = stepper_step(m->st, &m->ops->step, m->x, dt, err, len);
    m->ops->refresh(m->x, EXEC_CLOCK);
    return rc;
}

int simulation_step_n(const simulation *m, double dt, int64_t n, char *err, size_t len)
{
    int rc = stepper_step_n(m->st, &m->ops->step, m->x, dt, n, err, len);
    m->ops->refresh(m->x, EXEC_CLOCK);
    return rc;
}

void simulation_set_clock(const simulation *m, double t, int64_t steps)
{
    m->st->t = t;
    m->st->steps = steps;
    m->ops->refresh(m->x, EXEC_CLOCK);
}

void simulation_set_params(const simulation *m, const double *values)
{
    state_set_params(m->st, values);
    m->ops->refresh(m->x, EXEC_PARAMS);
}

int simulation_set_param(const simulation *m, const char *name, double value)
{
    if (state_set_param(m->st, name, value) < 0) return -1;
    m->ops->refresh(m->x, EXEC_PARAMS); /* launch arguments, boundary coefficients that may use it */
    return 0;
}

static int buffer_ok(const simulation *m, int b, char *err, size_t len)
{
    if (b >= 0 && b < m->st->nbuf) return 0;
    diag_set(err, len, "no buffer %d (the simulation has %d)", b, m->st->nbuf);
    return -1;
}

int simulation_get_field(const simulation *m, int b, double *out, char *err, size_t len)
{
    return buffer_ok(m, b, err, len) < 0 ? -1 : m->ops->copy_out(m->x, b, out, err, len);
}

int simulation_set_field(const simulation *m, int b, const double *in, char *err, size_t len)
{
    return buffer_ok(m, b, err, len) < 0 ? -1 : m->ops->copy_in(m->x, b, in, err, len);
}

int simulation_take_nonfinite(const simulation *m, char *err, size_t len)
{
    return m->ops->take_nonfinite(m->x, err, len);
}

int simulation_check_finite(const simulation *m, sim_nan_report *r, char *err, size_t len)
{
    int64_t cell = 0;
    double v = 0;
    int f = m->ops->find_nonfinite(m->x, &cell, &v, err, len);
    if (f < -1) return -1;
    if (f < 0) return 0;
    if (r) {
        const int64_t *n = m->st->g.n;
        int64_t idx[3] = {cell % n[0], (cell / n[0]) % n[1], cell / (n[0] * n[1])};
        const kir_launch *L = m->ops->geometry(m->x);
        state_nan_report(m->st, f, idx, v, L->origin, L->h, r);
    }
    return 1;
}

int simulation_view(const simulation *m, int b, engine_view *v)
{
    if (b < 0 || b >= m->st->nbuf) return -1;
    v->data = m->st->buf[b];
    for (int a = 0; a < 3; a++) {
        v->shape[a] = m->st->g.n[a];
        v->stride[a] = m->st->g.stride[a];
    }
    v->elem_size = (int)m->st->esz;
    v->on_device = m->ops->device;
    return 0;
}

int simulation_sync(const simulation *m, char *err, size_t len)
{
    return m->ops->sync ? m->ops->sync(m->x, err, len) : 0;
}
