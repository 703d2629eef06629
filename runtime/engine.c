/* engine.c — the back-end registry and the engine's calls (see engine.h): each call goes to the
 * engine's table, a back end's own or, over MPI, the decomposed engine wrapping it
 * (decomp_engine.c), and the collectives to its processes' table. */
#include "engine.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "decomp_engine.h"
#include "diag.h"
#include "simulation.h"

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
    const backend_ops *be;     /* the back end asked for: its name and capabilities (engine_ops) */
    const backend_ops *ops;    /* where the calls go: be's table, or the decomposed engine wrapping it */
    const engine_procs *procs; /* the processes: one, or the decomposition's */
    void *impl;                /* ops's simulation */
    simulation sim;            /* be's state and executor for this process's block (the whole mesh on
                                  one process): the generic calls (simulation.h) */
    const pj_program *p;
    kir_launch geometry;
};

/* One process: the collectives of an engine that is not decomposed. */
static int one_rank(const void *impl)
{
    (void)impl;
    return 0;
}
static int one_process(const void *impl)
{
    (void)impl;
    return 1;
}
static const grid_block *whole_mesh(const void *impl)
{
    (void)impl;
    return NULL;
}
static int one_agree(void *impl, int failed, char *err, size_t len)
{
    (void)impl, (void)err, (void)len;
    return failed != 0;
}
static void one_bcast(void *impl, void *data, size_t n) { (void)impl, (void)data, (void)n; }
static int one_any(void *impl, int flag)
{
    (void)impl;
    return flag != 0;
}
static const engine_procs one_procs = {one_rank, one_process, whole_mesh, whole_mesh, one_agree, one_bcast, one_any};

/* What each capability lets a back end do, as the refusal says it. */
static const struct { unsigned cap; const char *what; } cap_text[] = {
    {ENGINE_CAP_SWAP, "swap kernels while it runs"},
    {ENGINE_CAP_IMPLICIT, "solve implicit schemes or steady problems"},
    {ENGINE_CAP_DECOMPOSE, "run over MPI"},
    {ENGINE_CAP_SECOND_BC, "fill a second boundary condition"},
    {ENGINE_CAP_EXPLAIN, "explain its kernel cache"},
    {ENGINE_CAP_EMIT, "print its generated code"},
    {ENGINE_CAP_MONITORS, "evaluate monitors"},
    {ENGINE_CAP_DEVICE, "hold the fields in device memory"},
};

/* The refusal of capability `cap` on `be`, with what needs it (may be "") in brackets. */
static int refuse(const backend_ops *be, unsigned cap, const char *why, char *err, size_t len)
{
    const char *what = "do this", *other = NULL;
    for (size_t i = 0; i < sizeof cap_text / sizeof cap_text[0]; i++)
        if (cap_text[i].cap == cap) what = cap_text[i].what;
    for (int i = 0; engine_backends[i] && !other; i++) /* the first that can, the interpreter last */
        if ((engine_backends[i]->caps & cap) == cap && strcmp(engine_backends[i]->name, "interp"))
            other = engine_backends[i]->name;
    diag_set(err, len, "the %s back end cannot %s yet%s%s%s%s%s", be->name, what, why && *why ? " (" : "",
             why ? why : "", why && *why ? ")" : "", other ? ": use --backend " : "", other ? other : "");
    return 0;
}

int engine_backend_can(const backend_ops *be, unsigned caps, char *err, size_t len)
{
    unsigned missing = caps & ~be->caps;
    if (!missing) return 1;
    return refuse(be, missing & -missing, NULL, err, len);
}

unsigned engine_needs(const pj_program *p)
{
    unsigned caps = PJ_SCHEME_IMPLICIT(p->scheme) ? ENGINE_CAP_IMPLICIT : 0;
    for (int f = 0; f < p->n_fields; f++)
        for (int side = 0; side < 2 * p->dim; side++)
            if (p->bc[f][side].lap) caps |= ENGINE_CAP_SECOND_BC;
    if (p->n_monitors) caps |= ENGINE_CAP_MONITORS;
    return caps;
}

int engine_supports(const backend_ops *be, const pj_program *p, char *err, size_t len)
{
    unsigned missing = engine_needs(p) & ~be->caps;
    if (!missing) return 1;
    char why[96] = "";
    unsigned cap = missing & -missing;
    if (cap == ENGINE_CAP_IMPLICIT) snprintf(why, sizeof why, "%s", scheme_name(p->scheme));
    for (int f = 0; cap == ENGINE_CAP_SECOND_BC && f < p->n_fields && !why[0]; f++)
        for (int side = 0; side < 2 * p->dim; side++)
            if (p->bc[f][side].lap) {
                snprintf(why, sizeof why, "lap(%s) = ...", p->field_names[f]);
                break;
            }
    return refuse(be, cap, why, err, len);
}

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
    engine_options eo = o ? *o : dflt;
    if (!engine_supports(be, p, err, len) || (eo.decomp && !engine_backend_can(be, ENGINE_CAP_DECOMPOSE, err, len))) {
        if (unavailable) *unavailable = ENGINE_UNSUPPORTED;
        return NULL;
    }
    if (eo.decomp && p->adapt_order > 0) { /* the error norm is one process's sum (state.c) */
        diag_set(err, len, "adaptive %s steps run on one process: drop adapt, or run without MPI", scheme_name(p->scheme));
        if (unavailable) *unavailable = ENGINE_UNSUPPORTED;
        return NULL;
    }
    engine *e = calloc(1, sizeof *e);
    if (!e) {
        diag_set(err, len, "out of memory");
        return NULL;
    }
    e->be = e->ops = be;
    e->procs = &one_procs;
    e->p = p;
    if (eo.decomp) { /* a table wrapping be's: a failure there is every process's, plainly */
        e->ops = &decomp_engine_ops;
        e->procs = &decomp_engine_procs;
        e->impl = decomp_engine_create(be, p, &eo, err, len);
    } else {
        e->impl = be->create(p, &eo, &na, err, len);
        /* every back end checks memory with grid_memory_check before it allocates */
        if (!e->impl && !na && err && !strncmp(err, GRID_NEEDS_PREFIX, strlen(GRID_NEEDS_PREFIX)))
            na = ENGINE_TOO_LARGE;
    }
    if (!e->impl) {
        if (unavailable) *unavailable = na;
        free(e);
        return NULL;
    }
    e->sim.ops = be->exec;
    e->sim.st = e->ops->state(e->impl, &e->sim.x); /* the wrapper's: its block's */
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

static int field_ok(const engine *e, int f, char *err, size_t len);

int engine_rank(const engine *e) { return e->procs->rank(e->impl); }
const grid_block *engine_block(const engine *e) { return e->procs->block(e->impl); }
const grid_block *engine_blocks(const engine *e) { return e->procs->blocks(e->impl); }

int engine_get_block_field(engine *e, int f, double *out, char *err, size_t len)
{
    return field_ok(e, f, err, len) < 0 ? -1 : simulation_get_field(&e->sim, f, out, err, len);
}
int engine_processes(const engine *e) { return e->procs->processes(e->impl); }

void engine_bcast(engine *e, void *data, size_t n) { e->procs->bcast(e->impl, data, n); }

int engine_any(engine *e, int flag) { return e->procs->any(e->impl, flag); }

int engine_agree(engine *e, int failed, char *err, size_t len) { return e->procs->agree(e->impl, failed, err, len); }

const backend_ops *engine_ops(const engine *e) { return e->be; }
const pj_program *engine_program(const engine *e) { return e->p; }
const kir_launch *engine_geometry(const engine *e) { return &e->geometry; }
int64_t engine_cells(const engine *e) { return e->p->n[0] * e->p->n[1] * e->p->n[2]; }

void engine_get_info(engine *e, engine_info *info)
{
    memset(info, 0, sizeof *info);
    if (e->ops->info) e->ops->info(e->impl, info);
}

int engine_init(engine *e, char *err, size_t len) { return e->ops->init(e->impl, err, len); }

int engine_step(engine *e, double dt, char *err, size_t len)
{
    return e->ops->step ? e->ops->step(e->impl, dt, err, len) : simulation_step(&e->sim, dt, err, len);
}
int engine_step_n(engine *e, double dt, int64_t n, char *err, size_t len)
{
    if (e->ops->step_n) return e->ops->step_n(e->impl, dt, n, err, len);
    if (!e->ops->step) return simulation_step_n(&e->sim, dt, n, err, len);
    for (int64_t i = 0; i < n; i++)
        if (engine_step(e, dt, err, len) < 0) return -1;
    return 0;
}
int64_t engine_block_steps(engine *e, int64_t n)
{
    if (!e->ops->step_n || !e->ops->block_steps || n < 1) return 1;
    int64_t k = e->ops->block_steps(e->impl, n);
    return k > 1 ? k : 1;
}
int engine_sync(engine *e, char *err, size_t len)
{
    return simulation_sync(&e->sim, err, len);
}
double engine_time(engine *e) { return e->sim.st->t; }
int64_t engine_steps(engine *e) { return e->sim.st->steps; }

void engine_set_max_step(engine *e, double h)
{
    sim_state *st = e->sim.st;
    if (st) st->h_max = h > 0 && h < INFINITY ? h : 0;
}

void engine_set_adaptive_stop(engine *e, atomic_int *flag)
{
    sim_state *st = e->sim.st;
    if (st) st->stop = flag;
}

void engine_on_adaptive_try(engine *e, void (*fn)(void *ctx, int64_t step, double t, double h, double error, int accepted),
                            void *ctx)
{
    sim_state *st = e->sim.st;
    if (!st) return;
    st->on_try = fn;
    st->on_try_ctx = ctx;
}

int engine_adaptive_stats(engine *e, int64_t *accepted, int64_t *rejected, double *h_last, double *h_next)
{
    sim_state *st = e->sim.st;
    if (!st || !(st->p->adapt_order > 0)) return -1;
    if (accepted) *accepted = st->steps;
    if (rejected) *rejected = st->rejected;
    if (h_last) *h_last = st->h_last;
    if (h_next) {
        *h_next = st->h_next > 0 ? st->h_next : st->p->dt;
        if (st->h_max > 0 && *h_next > st->h_max) *h_next = st->h_max;
    }
    return 0;
}
void engine_set_clock(engine *e, double t, int64_t steps) { simulation_set_clock(&e->sim, t, steps); }
int engine_set_param(engine *e, const char *name, double value) { return simulation_set_param(&e->sim, name, value); }
void engine_set_param_values(engine *e, const double *values) { simulation_set_params(&e->sim, values); }
const double *engine_params(engine *e) { return e->sim.st->param; }

static int field_ok(const engine *e, int f, char *err, size_t len)
{
    if (f >= 0 && f < e->p->n_fields) return 0;
    diag_set(err, len, "no field number %d (the problem has %d)", f, e->p->n_fields);
    return -1;
}

int engine_get_field(engine *e, int f, double *out, char *err, size_t len)
{
    if (field_ok(e, f, err, len) < 0) return -1;
    return e->ops->get_field ? e->ops->get_field(e->impl, f, out, err, len)
                             : simulation_get_field(&e->sim, f, out, err, len);
}

int engine_set_field(engine *e, int f, const double *in, char *err, size_t len)
{
    if (field_ok(e, f, err, len) < 0) return -1;
    return e->ops->set_field ? e->ops->set_field(e->impl, f, in, err, len)
                             : simulation_set_field(&e->sim, f, in, err, len);
}

int engine_take_nonfinite(engine *e, char *err, size_t len)
{
    return e->ops->take_nonfinite ? e->ops->take_nonfinite(e->impl, err, len)
                                  : simulation_take_nonfinite(&e->sim, err, len);
}

int engine_check_finite(engine *e, sim_nan_report *r, char *err, size_t len)
{
    return e->ops->check_finite ? e->ops->check_finite(e->impl, r, err, len)
                                : simulation_check_finite(&e->sim, r, err, len);
}

int engine_reduce(engine *e, double *values, char *err, size_t len)
{
    if (!e->p->n_monitors) return 0;
    if (!engine_backend_can(e->be, ENGINE_CAP_MONITORS, err, len)) return -1;
    return e->ops->reduce(e->impl, values, err, len);
}

int engine_view_field(engine *e, int f, engine_view *v)
{
    memset(v, 0, sizeof *v);
    if (f < 0 || f >= e->p->n_fields || e->ops != e->be) return -1; /* a block is not the field */
    return simulation_view(&e->sim, f, v);
}

const grid_layout *engine_layout(const engine *e) { return &e->sim.st->g; }

int engine_view_buffer(engine *e, int b, engine_view *v)
{
    memset(v, 0, sizeof *v);
    return simulation_view(&e->sim, b, v);
}

int engine_fill(engine *e, int slot, double t, char *err, size_t len)
{
    if (slot >= 0 && slot < e->p->n_slots) return e->sim.ops->step.fill(e->sim.x, slot, t, err, len);
    diag_set(err, len, "no slot %d (the program has %d)", slot, e->p->n_slots);
    return -1;
}

int engine_run(engine *e, pj_kernel_id id, double t, double dt, char *err, size_t len)
{
    return e->sim.ops->run(e->sim.x, id, t, dt, err, len);
}

/* The executor's optional member `m` present, or -1 with a message. */
#define EXEC_HAS(e, m, err, len)                                                                            \
    ((e)->sim.ops->m ? 0 : (diag_set(err, len, "the %s back end has no %s", (e)->be->name, #m), -1))

void *engine_alloc(engine *e, size_t bytes, char *err, size_t len)
{
    return EXEC_HAS(e, alloc, err, len) < 0 ? NULL : e->sim.ops->alloc(e->sim.x, bytes, err, len);
}

void engine_free(engine *e, void *p)
{
    if (p && e->sim.ops->free) e->sim.ops->free(e->sim.x, p);
}

int engine_zero(engine *e, void *p, size_t bytes, char *err, size_t len)
{
    return EXEC_HAS(e, zero, err, len) < 0 ? -1 : e->sim.ops->zero(e->sim.x, p, bytes, err, len);
}

int engine_copy_rows(engine *e, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows,
                     char *err, size_t len)
{
    if (EXEC_HAS(e, copy_rows, err, len) < 0) return -1;
    return e->sim.ops->copy_rows(e->sim.x, dst, dpitch, src, spitch, width, rows, err, len);
}

int engine_add_kernel(engine *e, pj_kernel_id id, char *err, size_t len)
{
    return EXEC_HAS(e, add_kernel, err, len) < 0 ? -1 : e->sim.ops->add_kernel(e->sim.x, id, err, len);
}

void engine_skip_fill(engine *e, int f, int skip)
{
    if (e->sim.ops->skip_fill) e->sim.ops->skip_fill(e->sim.x, f, skip);
}

int engine_eval(engine *e, pj_kernel_id id, double t, double dt, exec_rows_fn rows, void *ctx, char *err, size_t len)
{
    return EXEC_HAS(e, eval, err, len) < 0 ? -1 : e->sim.ops->eval(e->sim.x, id, t, dt, rows, ctx, err, len);
}

int engine_get_buffer(engine *e, int b, double *out, char *err, size_t len)
{
    return simulation_get_field(&e->sim, b, out, err, len);
}

int engine_launch(engine *e, int kernel, double t, double dt, int first_extra, void *const *extra, int n_extra,
                  char *err, size_t len)
{
    if (EXEC_HAS(e, launch, err, len) < 0) return -1;
    return e->sim.ops->launch(e->sim.x, kernel, t, dt, first_extra, extra, n_extra, err, len);
}

int engine_can_swap(const engine *e) { return (e->be->caps & ENGINE_CAP_SWAP) != 0; }

void *engine_prepare(engine *e, const pj_program *p2, engine_info *info, char *err, size_t len)
{
    if (info) memset(info, 0, sizeof *info);
    if (!engine_backend_can(e->be, ENGINE_CAP_SWAP, err, len) || !engine_supports(e->be, p2, err, len)) return NULL;
    return e->ops->prepare(e->impl, p2, info, err, len);
}

int engine_swap(engine *e, const pj_program *p2, void *prepared, char *err, size_t len)
{
    if (!engine_backend_can(e->be, ENGINE_CAP_SWAP, err, len)) return -1;
    /* what a running simulation cannot take is refused before the back end sees it; over MPI
       every process refuses alike (the same programs), and the wrapper's swap is collective */
    if (state_check_program(e->sim.st, p2, err, len) < 0) {
        engine_release(e, prepared);
        return -1;
    }
    if (e->ops->swap(e->impl, p2, prepared, err, len) < 0) return -1;
    e->p = p2;
    return 0;
}

void engine_release(engine *e, void *prepared)
{
    if (prepared && (e->be->caps & ENGINE_CAP_SWAP)) e->ops->release(prepared);
}

int engine_solver_stats(engine *e, implicit_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    return e->ops->solver_stats ? e->ops->solver_stats(e->impl, stats) : -1;
}
