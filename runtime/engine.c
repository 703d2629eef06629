/* engine.c — the back-end registry and the engine's calls (see engine.h). */
#include "engine.h"
#include <stdlib.h>
#include <string.h>
#include "diag.h"

extern const backend_ops interp_backend_ops, cpu_backend_ops, cuda_backend_ops;

const backend_ops *const engine_backends[] = {&interp_backend_ops, &cpu_backend_ops, &cuda_backend_ops, NULL};

const backend_ops *engine_backend(const char *name)
{
    for (int i = 0; name && engine_backends[i]; i++)
        if (!strcmp(engine_backends[i]->name, name)) return engine_backends[i];
    return NULL;
}

const char *engine_backend_names(void)
{
    static char names[128];
    if (!names[0])
        for (int i = 0; engine_backends[i]; i++) {
            size_t n = strlen(names);
            snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", engine_backends[i]->name);
        }
    return names;
}

struct engine {
    const backend_ops *ops;
    void *impl;
    const pj_program *p;
    kir_launch geometry;
};

engine *engine_create(const backend_ops *be, const pj_program *p, const engine_options *o, int *unavailable,
                      char *err, size_t len)
{
    engine_options dflt = {0};
    int na = 0;
    if (unavailable) *unavailable = 0;
    if (!be || !p) {
        diag_set(err, len, "engine: no back end or no program");
        return NULL;
    }
    engine *e = calloc(1, sizeof *e);
    if (!e) {
        diag_set(err, len, "out of memory");
        return NULL;
    }
    e->ops = be;
    e->p = p;
    e->impl = be->create(p, o ? o : &dflt, &na, err, len);
    if (!e->impl) {
        /* every back end checks memory with grid_memory_check before it allocates */
        if (!na && err && !strncmp(err, GRID_NEEDS_PREFIX, strlen(GRID_NEEDS_PREFIX))) na = ENGINE_TOO_LARGE;
        if (unavailable) *unavailable = na;
        free(e);
        return NULL;
    }
    int64_t row = 1;
    for (int a = 0; a < 3; a++) {
        e->geometry.n[a] = p->n[a];
        e->geometry.h[a] = p->length[a] / (double)p->n[a];
        e->geometry.origin[a] = p->origin[a];
        e->geometry.stride[a] = row;
        row *= p->n[a];
    }
    return e;
}

void engine_destroy(engine *e)
{
    if (!e) return;
    e->ops->destroy(e->impl);
    free(e);
}

const backend_ops *engine_ops(const engine *e) { return e->ops; }
const pj_program *engine_program(const engine *e) { return e->p; }
const kir_launch *engine_geometry(const engine *e) { return &e->geometry; }
int64_t engine_cells(const engine *e) { return e->p->n[0] * e->p->n[1] * e->p->n[2]; }

void engine_get_info(engine *e, engine_info *info)
{
    memset(info, 0, sizeof *info);
    if (e->ops->info) e->ops->info(e->impl, info);
}

int engine_init(engine *e, char *err, size_t len) { return e->ops->init(e->impl, err, len); }
int engine_step(engine *e, double dt, char *err, size_t len) { return e->ops->step(e->impl, dt, err, len); }
int engine_sync(engine *e, char *err, size_t len) { return e->ops->sync ? e->ops->sync(e->impl, err, len) : 0; }
double engine_time(engine *e) { return e->ops->time(e->impl); }
int64_t engine_steps(engine *e) { return e->ops->steps(e->impl); }
int engine_set_param(engine *e, const char *name, double value) { return e->ops->set_param(e->impl, name, value); }
const double *engine_params(engine *e) { return e->ops->params(e->impl); }

static int field_ok(const engine *e, int f, char *err, size_t len)
{
    if (f >= 0 && f < e->p->n_fields) return 0;
    diag_set(err, len, "no field number %d (the problem has %d)", f, e->p->n_fields);
    return -1;
}

int engine_get_field(engine *e, int f, double *out, char *err, size_t len)
{
    return field_ok(e, f, err, len) < 0 ? -1 : e->ops->get_field(e->impl, f, out, err, len);
}

int engine_set_field(engine *e, int f, const double *in, char *err, size_t len)
{
    return field_ok(e, f, err, len) < 0 ? -1 : e->ops->set_field(e->impl, f, in, err, len);
}

int engine_take_nonfinite(engine *e, char *err, size_t len) { return e->ops->take_nonfinite(e->impl, err, len); }
int engine_check_finite(engine *e, sim_nan_report *r, char *err, size_t len)
{
    return e->ops->check_finite(e->impl, r, err, len);
}

int engine_view_field(engine *e, int f, engine_view *v)
{
    memset(v, 0, sizeof *v);
    if (f < 0 || f >= e->p->n_fields || !e->ops->view) return -1;
    return e->ops->view(e->impl, f, v);
}

int engine_can_swap(const engine *e) { return e->ops->prepare && e->ops->swap; }

void *engine_prepare(engine *e, const pj_program *p2, engine_info *info, char *err, size_t len)
{
    if (info) memset(info, 0, sizeof *info);
    if (!engine_can_swap(e)) {
        diag_set(err, len, "the %s back end cannot swap kernels while it runs", e->ops->name);
        return NULL;
    }
    return e->ops->prepare(e->impl, p2, info, err, len);
}

int engine_swap(engine *e, const pj_program *p2, void *prepared, char *err, size_t len)
{
    if (!engine_can_swap(e)) {
        diag_set(err, len, "the %s back end cannot swap kernels while it runs", e->ops->name);
        return -1;
    }
    if (e->ops->swap(e->impl, p2, prepared, err, len) < 0) return -1;
    e->p = p2;
    return 0;
}

void engine_release(engine *e, void *prepared)
{
    if (prepared && e->ops->release) e->ops->release(prepared);
}
