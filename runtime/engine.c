/* engine.c — the back-end registry and the engine's calls (see engine.h). */
#include "engine.h"
#include <stdlib.h>
#include <string.h>
#include "decomp.h"
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
    const backend_ops *ops;
    void *impl;
    simulation sim;        /* the back end's state and executor: the generic calls (simulation.h) */
    const pj_program *p;
    kir_launch geometry;
    decomp *d;             /* a decomposed run: this process's block (the engine does not own it) */
    int64_t block_cells;
    double *scratch;       /* a block's field, for gathers and scatters */
};

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
    if (!engine_supports(be, p, err, len)) {
        if (unavailable) *unavailable = ENGINE_UNSUPPORTED;
        return NULL;
    }
    engine *e = calloc(1, sizeof *e);
    if (!e) {
        diag_set(err, len, "out of memory");
        return NULL;
    }
    e->ops = be;
    e->p = p;
    engine_options eo = o ? *o : dflt;
    if (eo.decomp) {
        e->d = eo.decomp;
        if (!engine_backend_can(be, ENGINE_CAP_DECOMPOSE, err, len)) {
            if (unavailable) *unavailable = ENGINE_UNSUPPORTED;
            free(e);
            return NULL;
        }
        eo.block = decomp_block(e->d);
        decomp_ghosts(e->d, &eo.ghosts);
        const grid_block *b = eo.block;
        e->block_cells = b->n[0] * b->n[1] * b->n[2];
        e->scratch = malloc(sizeof *e->scratch * (size_t)e->block_cells);
        /* one compile per kernel: rank 0 first (into the kernel cache), then the others load */
        if (decomp_rank(e->d) == 0) e->impl = e->scratch ? be->create(p, &eo, &na, err, len) : NULL;
        int failed = decomp_agree(e->d, decomp_rank(e->d) == 0 && !e->impl, err, len);
        if (!failed && decomp_rank(e->d) != 0) e->impl = e->scratch ? be->create(p, &eo, &na, err, len) : NULL;
        if (!failed && decomp_agree(e->d, !e->impl, err, len)) failed = 1;
        if (failed) {
            if (e->impl) be->destroy(e->impl);
            free(e->scratch);
            free(e);
            return NULL;
        }
    } else {
        e->impl = be->create(p, &eo, &na, err, len);
    }
    if (!e->impl) {
        /* every back end checks memory with grid_memory_check before it allocates */
        if (!na && err && !strncmp(err, GRID_NEEDS_PREFIX, strlen(GRID_NEEDS_PREFIX))) na = ENGINE_TOO_LARGE;
        if (unavailable) *unavailable = na;
        free(e);
        return NULL;
    }
    e->sim.ops = be->exec;
    e->sim.st = be->state(e->impl, &e->sim.x);
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
    free(e->scratch);
    free(e);
}

static int field_ok(const engine *e, int f, char *err, size_t len);

int engine_rank(const engine *e) { return e->d ? decomp_rank(e->d) : 0; }
const grid_block *engine_block(const engine *e) { return e->d ? decomp_block(e->d) : NULL; }
const grid_block *engine_blocks(const engine *e) { return e->d ? decomp_blocks(e->d) : NULL; }

int engine_get_block_field(engine *e, int f, double *out, char *err, size_t len)
{
    return field_ok(e, f, err, len) < 0 ? -1 : simulation_get_field(&e->sim, f, out, err, len);
}
int engine_processes(const engine *e) { return e->d ? decomp_size(e->d) : 1; }

void engine_bcast(engine *e, void *data, size_t n)
{
    if (e->d) decomp_bcast(e->d, data, n, 0);
}

int engine_any(engine *e, int flag) { return e->d ? decomp_any(e->d, flag) : flag != 0; }

int engine_agree(engine *e, int failed, char *err, size_t len)
{
    return e->d ? decomp_agree(e->d, failed, err, len) : failed != 0;
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

int engine_init(engine *e, char *err, size_t len)
{
    int rc = e->ops->init(e->impl, err, len);
    return e->d ? -decomp_agree(e->d, rc < 0, err, len) : rc;
}

int engine_step(engine *e, double dt, char *err, size_t len)
{
    int rc = e->ops->step ? e->ops->step(e->impl, dt, err, len) : simulation_step(&e->sim, dt, err, len);
    /* a failure on one process ends the step on every one (none waits for it in an exchange) */
    return e->d ? -decomp_agree(e->d, rc < 0, err, len) : rc;
}
int engine_step_n(engine *e, double dt, int64_t n, char *err, size_t len)
{
    if (!e->d) return e->ops->step_n ? e->ops->step_n(e->impl, dt, n, err, len)
                                     : simulation_step_n(&e->sim, dt, n, err, len);
    for (int64_t i = 0; i < n; i++)
        if (engine_step(e, dt, err, len) < 0) return -1;
    return 0;
}
int64_t engine_block_steps(engine *e, int64_t n)
{
    if (e->d || !e->ops->block_steps || n < 1) return 1;
    int64_t k = e->ops->block_steps(e->impl, n);
    return k > 1 ? k : 1;
}
int engine_sync(engine *e, char *err, size_t len)
{
    return simulation_sync(&e->sim, err, len);
}
double engine_time(engine *e) { return e->sim.st->t; }
int64_t engine_steps(engine *e) { return e->sim.st->steps; }
void engine_set_clock(engine *e, double t, int64_t steps) { simulation_set_clock(&e->sim, t, steps); }
int engine_set_param(engine *e, const char *name, double value) { return simulation_set_param(&e->sim, name, value); }
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
    if (!e->d) return simulation_get_field(&e->sim, f, out, err, len);
    int rc = simulation_get_field(&e->sim, f, e->scratch, err, len);
    if (decomp_agree(e->d, rc < 0, err, len)) return -1;
    if (decomp_gather(e->d, e->scratch, out) < 0) {
        diag_set(err, len, "out of memory gathering field %s", e->p->field_names[f]);
        return -1;
    }
    return 0;
}

int engine_set_field(engine *e, int f, const double *in, char *err, size_t len)
{
    if (field_ok(e, f, err, len) < 0) return -1;
    if (!e->d) return simulation_set_field(&e->sim, f, in, err, len);
    if (decomp_scatter(e->d, in, e->scratch) < 0) {
        diag_set(err, len, "out of memory scattering field %s", e->p->field_names[f]);
        return -1;
    }
    int rc = simulation_set_field(&e->sim, f, e->scratch, err, len);
    return -decomp_agree(e->d, rc < 0, err, len);
}

int engine_take_nonfinite(engine *e, char *err, size_t len)
{
    int rc = simulation_take_nonfinite(&e->sim, err, len);
    if (!e->d) return rc;
    if (decomp_agree(e->d, rc < 0, err, len)) return -1;
    return decomp_any(e->d, rc > 0);
}

int engine_check_finite(engine *e, sim_nan_report *r, char *err, size_t len)
{
    int rc = simulation_check_finite(&e->sim, r, err, len);
    if (!e->d) return rc;
    if (decomp_agree(e->d, rc < 0, err, len)) return -1;
    /* the first in the whole mesh's order (fields in turn, cells x fastest), as on one process */
    const int64_t *n = e->p->n;
    int64_t key = INT64_MAX;
    if (rc > 0) key = r->field * n[0] * n[1] * n[2] + r->cell[0] + n[0] * (r->cell[1] + n[1] * r->cell[2]);
    int64_t first = decomp_min64(e->d, key);
    if (first == INT64_MAX) return 0;
    int from = decomp_size(e->d);
    int mine = rc > 0 && key == first ? decomp_rank(e->d) : from;
    from = (int)decomp_min64(e->d, mine);
    decomp_bcast(e->d, r, sizeof *r, from);
    return 1;
}

int engine_reduce(engine *e, double *values, char *err, size_t len)
{
    if (!e->p->n_monitors) return 0;
    if (!engine_backend_can(e->ops, ENGINE_CAP_MONITORS, err, len)) return -1;
    int rc = e->ops->reduce(e->impl, values, err, len);
    if (!e->d) return rc;
    if (decomp_agree(e->d, rc < 0, err, len)) return -1;
    /* each process's values over its block, combined: sums add (a mean weighted by the block's
       cells), extremes take the extreme */
    const pj_program *p = e->p;
    double cells = (double)engine_cells(e);
    for (int i = 0; i < p->n_monitors; i++) {
        pj_monitor_kind k = p->monitor_kinds[i];
        double v = k == PJ_MON_MEAN ? values[i] * (double)e->block_cells / cells : values[i];
        decomp_reduce(e->d, &v, 1, k == PJ_MON_MAXVAL ? 1 : k == PJ_MON_MINVAL ? 2 : 0);
        values[i] = v;
    }
    return 0;
}

int engine_view_field(engine *e, int f, engine_view *v)
{
    memset(v, 0, sizeof *v);
    if (f < 0 || f >= e->p->n_fields || e->d) return -1; /* a block is not the field */
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
    ((e)->sim.ops->m ? 0 : (diag_set(err, len, "the %s back end has no %s", (e)->ops->name, #m), -1))

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

int engine_can_swap(const engine *e) { return (e->ops->caps & ENGINE_CAP_SWAP) != 0; }

void *engine_prepare(engine *e, const pj_program *p2, engine_info *info, char *err, size_t len)
{
    if (info) memset(info, 0, sizeof *info);
    if (!engine_backend_can(e->ops, ENGINE_CAP_SWAP, err, len) || !engine_supports(e->ops, p2, err, len)) return NULL;
    if (!e->d) return e->ops->prepare(e->impl, p2, info, err, len);
    /* collective, as engine_create: rank 0 compiles into the kernel cache, the others load */
    void *k = NULL;
    int root = decomp_rank(e->d) == 0;
    if (root) k = e->ops->prepare(e->impl, p2, info, err, len);
    int failed = decomp_agree(e->d, root && !k, err, len);
    if (!failed && !root) k = e->ops->prepare(e->impl, p2, info, err, len);
    if (!failed && decomp_agree(e->d, !k, err, len)) failed = 1;
    if (failed) {
        engine_release(e, k);
        return NULL;
    }
    return k;
}

int engine_swap(engine *e, const pj_program *p2, void *prepared, char *err, size_t len)
{
    if (!engine_backend_can(e->ops, ENGINE_CAP_SWAP, err, len)) return -1;
    /* over MPI every process swaps at the same step (collective); what a running simulation
       cannot take is refused on all alike (the same programs) */
    int rc = state_check_program(e->sim.st, p2, err, len);
    if (rc == 0) rc = e->ops->swap(e->impl, p2, prepared, err, len);
    else engine_release(e, prepared);
    if (e->d ? decomp_agree(e->d, rc < 0, err, len) : rc < 0) return -1;
    e->p = p2;
    return 0;
}

void engine_release(engine *e, void *prepared)
{
    if (prepared && (e->ops->caps & ENGINE_CAP_SWAP)) e->ops->release(prepared);
}

int engine_solver_stats(engine *e, implicit_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    return e->ops->solver_stats ? e->ops->solver_stats(e->impl, stats) : -1;
}
