/* host_engine.c — the two host back ends behind engine.h: "interp" (the reference interpreter)
 * and "cpu" (LLVM-compiled kernels from cpu_backend.c). Both hold their fields in a sim (sim.c:
 * buffers with ghost layers, boundary fill, the steppers, the thread pool); the CPU back end
 * installs its compiled stage kernels as the sim's stage runner, the interpreter leaves the
 * sim's own. Hot swap replaces the sim's program (sim_replace_program) and the kernels. */
#include <stdlib.h>
#include <string.h>
#include "cpu_backend.h"
#include "diag.h"
#include "driver.h"
#include "engine.h"
#include "implicit.h"

/* A kernel added after create (exec_ops.add_kernel): the program's kernel `id`, compiled alone
 * by its own CPU back end (NULL: the interpreter runs it). */
typedef struct host_added { pj_kernel_id id; cpu_backend *cpu; } host_added;
#define HOST_ADDED_MAX 8

typedef struct host_engine {
    sim *s;
    cpu_backend *cpu;      /* NULL: the interpreter runs the stages */
    host_added added[HOST_ADDED_MAX];
    int n_added;
    implicit_solver *imp;  /* an implicit program's solver (implicit.h), else NULL */
    engine_options opt;
    double ms_prepare;
    cpu_backend *retired;  /* swapped out while its final tier still compiled: destroyed once done */
    char stepping[192];    /* engine_info.stepping (host_stepping) */
} host_engine;

static implicit_solver *host_solver(host_engine *h, struct decomp *d, char *err, size_t len);

/* The kernels of a program about to be swapped in: a prepared CPU back end, or none. */
typedef struct host_prepared { cpu_backend *cpu; } host_prepared;

static cpu_backend *prepare_cpu(const pj_program *p, const engine_options *o, double *ms, char *err, size_t len)
{
    double t0 = driver_now();
    cpu_backend_options bo = {o->single, o->fast_math, o->cache_dir, 0};
    cpu_backend *cpu = cpu_backend_create(&bo, err, len);
    if (cpu && (o->kernels ? cpu_backend_prepare_kernels(cpu, p, o->kernels, o->n_kernels, err, len)
                           : cpu_backend_prepare(cpu, p, err, len)) < 0) {
        cpu_backend_destroy(cpu);
        cpu = NULL;
    }
    if (ms) *ms = (driver_now() - t0) * 1e3;
    return cpu;
}

static void *host_create(const pj_program *p, const engine_options *o, int with_cpu, int *unavailable, char *err,
                         size_t len)
{
    host_engine *h = calloc(1, sizeof *h);
    if (!h) {
        diag_set(err, len, "out of memory");
        return NULL;
    }
    h->opt = *o;
    if (PJ_SCHEME_IMPLICIT(p->scheme)) {
        if (!implicit_available(err, len)) {
            if (unavailable) *unavailable = ENGINE_UNAVAILABLE;
            free(h);
            return NULL;
        }
        if (o->single) {
            diag_set(err, len, "implicit schemes run in double precision (the solver library's): drop --precision single");
            free(h);
            return NULL;
        }
    }
    sim_options so = {o->single, o->threads, &o->ghosts, o->seed, o->block};
    h->s = sim_create(p, &so, err, len);
    if (!h->s) {
        free(h);
        return NULL;
    }
    if (o->prefetch) sim_set_prefetch(h->s, o->prefetch > 0);
    if (o->spacing) sim_set_spacing(h->s, o->spacing);
    if (with_cpu) {
        h->cpu = prepare_cpu(p, o, &h->ms_prepare, err, len);
        if (!h->cpu) {
            sim_destroy(h->s);
            free(h);
            return NULL;
        }
        cpu_backend_install(h->cpu, h->s);
    }
    h->opt.kernels = NULL; /* the caller's arrays need not outlive create (a swap prepares a run's) */
    h->opt.spacing = NULL;
    /* over MPI the solver is made by host_init, on every process at once (its objects are
       collective; engine_create makes rank 0's engine before the others', for the kernel cache) */
    if (PJ_SCHEME_IMPLICIT(p->scheme) && !o->decomp && !(h->imp = host_solver(h, NULL, err, len))) {
        cpu_backend_destroy(h->cpu);
        sim_destroy(h->s);
        free(h);
        return NULL;
    }
    return h;
}

static void *interp_create(const pj_program *p, const engine_options *o, int *unavailable, char *err, size_t len)
{
    return host_create(p, o, 0, unavailable, err, len);
}

static void *cpu_create(const pj_program *p, const engine_options *o, int *unavailable, char *err, size_t len)
{
    return host_create(p, o, 1, unavailable, err, len);
}

static void host_destroy(void *impl)
{
    host_engine *h = impl;
    if (!h) return;
    implicit_destroy(h->imp);
    sim_destroy(h->s);
    cpu_backend_destroy(h->cpu);
    cpu_backend_destroy(h->retired);
    for (int i = 0; i < h->n_added; i++) cpu_backend_destroy(h->added[i].cpu);
    free(h);
}

static int host_init(void *impl, char *err, size_t len)
{
    host_engine *h = impl;
    if (h->opt.decomp && !h->imp && PJ_SCHEME_IMPLICIT(sim_program(h->s)->scheme) &&
        !(h->imp = host_solver(h, h->opt.decomp, err, len)))
        return -1;
    sim_init(h->s);
    return 0;
}

/* Its kernels ran and returned (none crashed: cpu_backend_ran); a back end swapped out is
   destroyed once its final tier's compile (stopped after its current kernel) is done. */
static void host_ran(host_engine *h)
{
    if (h->cpu) cpu_backend_ran(h->cpu);
    if (h->retired && !cpu_backend_busy(h->retired)) {
        cpu_backend_destroy(h->retired);
        h->retired = NULL;
    }
}

static int host_step(void *impl, double dt, char *err, size_t len)
{
    host_engine *h = impl;
    if (h->imp) {
        int r = implicit_step(h->imp, dt, err, len);
        host_ran(h);
        return r;
    }
    int rc = sim_step(h->s, dt);
    host_ran(h);
    if (rc == 0) return 0;
    diag_set(err, len, "%s", sim_error(h->s));
    return -1;
}

static int host_step_n(void *impl, double dt, int64_t n, char *err, size_t len)
{
    host_engine *h = impl;
    if (h->imp) {
        for (int64_t i = 0; i < n; i++)
            if (host_step(impl, dt, err, len) < 0) return -1;
        return 0;
    }
    int rc = sim_step_n(h->s, dt, n);
    host_ran(h);
    if (rc == 0) return 0;
    diag_set(err, len, "%s", sim_error(h->s));
    return -1;
}

static int64_t host_block_steps(void *impl, int64_t n)
{
    host_engine *h = impl;
    return h->imp ? 1 : sim_tblock_steps(h->s, n);
}


static int host_solver_stats(void *impl, implicit_stats *st)
{
    host_engine *h = impl;
    if (!h->imp) return -1;
    implicit_get_stats(h->imp, st);
    return 0;
}

static sim_state *host_state(void *impl, void **x)
{
    host_engine *h = impl;
    *x = h; /* host_exec_ops: the sim's operations, and kernels added later */
    return sim_get_state(h->s);
}

static int host_reduce(void *impl, double *values, char *err, size_t len)
{
    host_engine *h = impl;
    kir_cpu_fn fn = h->cpu ? cpu_backend_reduce_fn(h->cpu, sim_program(h->s)) : NULL;
    if (sim_reduce(h->s, fn, values) == 0) return 0;
    diag_set(err, len, "monitors: out of memory");
    return -1;
}

/* How the explicit steps ran, in h->stepping (NULL for an implicit program: the solver's report
 * says how it stepped): "temporal blocking, 5 steps a sweep in tiles of 43 rows of y (120 steps
 * blocked); 2 threads", or "one step a sweep, y tiles of 24 rows; 1 thread (2 measured slower)". */
static const char *host_stepping(host_engine *h)
{
    if (h->imp || !h->s) return NULL;
    const sim *s = h->s;
    char *b = h->stepping;
    const size_t len = sizeof h->stepping;
    size_t n = 0;
#define ADD(...) (n += (size_t)snprintf(b + n, n < len ? len - n : 0, __VA_ARGS__), n = n < len ? n : len - 1)
    int used = sim_threads_in_use(s), all = sim_threads(s), k;
    int64_t ty, tx, swept = sim_tblock_done(s, &k, &ty, &tx);
    if (swept > 0) {
        ADD("temporal blocking, %d steps a sweep", k);
        if (ty > 0) ADD(" in tiles of %lld rows of y", (long long)ty);
        if (tx > 0) ADD(" and %lld cells of x", (long long)tx);
        ADD(" (%lld steps blocked)", (long long)swept);
    } else {
        ADD("one step a sweep");
        if (sim_tile_rows(s) > 0) ADD(", y tiles of %lld rows", (long long)sim_tile_rows(s));
    }
    ADD("; %d thread%s", used, used == 1 ? "" : "s");
    if (used < all) ADD(sim_threads_measured_slower(s) ? " (%d measured slower)" : " (too few cells for %d)", all);
#undef ADD
    return b;
}

static void host_info(void *impl, engine_info *info)
{
    host_engine *h = impl;
    info->stepping = host_stepping(h);
    const pj_program *p = sim_program(h->s);
    pj_kernel_id ids[PJ_KERNEL_IDS_MAX];
    int n = p->n_stages + 4 <= PJ_KERNEL_IDS_MAX ? program_step_kernels(p, ids) : 0;
    for (int i = 0; i < n; i++) info->bytes_per_cell += kir_values_per_cell(program_kernel(p, ids[i]));
    info->bytes_per_cell *= h->opt.single ? 4 : 8;
    if (!h->cpu) return;
    info->compiler = "LLVM " PJ_LLVM_VERSION;
    info->warning = cpu_backend_warning(h->cpu);
    info->kernels = cpu_backend_timings(h->cpu, &info->n_kernels);
    for (int i = 0; i < info->n_kernels; i++) info->from_cache += info->kernels[i].from_cache;
    info->ms_prepare = h->ms_prepare;
}

static void *host_prepare(void *impl, const pj_program *p2, engine_info *info, char *err, size_t len)
{
    host_engine *h = impl;
    host_prepared *hp = calloc(1, sizeof *hp);
    if (!hp) {
        diag_set(err, len, "out of memory");
        return NULL;
    }
    if (h->cpu) {
        double ms = 0;
        cpu_backend_stop_tier(h->cpu); /* its kernels are to be replaced: no final tier for them */
        hp->cpu = prepare_cpu(p2, &h->opt, &ms, err, len);
        if (!hp->cpu) {
            free(hp);
            return NULL;
        }
        if (info) {
            info->kernels = cpu_backend_timings(hp->cpu, &info->n_kernels);
            for (int i = 0; i < info->n_kernels; i++) info->from_cache += info->kernels[i].from_cache;
            info->ms_prepare = ms;
        }
    }
    return hp;
}

static void host_release(void *prepared)
{
    host_prepared *hp = prepared;
    if (!hp) return;
    cpu_backend_destroy(hp->cpu);
    free(hp);
}

static int host_swap(void *impl, const pj_program *p2, void *prepared, char *err, size_t len)
{
    host_engine *h = impl;
    host_prepared *hp = prepared;
    if (PJ_SCHEME_IMPLICIT(p2->scheme) || h->imp) {
        diag_set(err, len, "hot swap of an implicitly solved problem is not available yet");
        host_release(hp);
        return -1;
    }
    if (sim_replace_program(h->s, p2, err, len) < 0) {
        host_release(hp);
        return -1;
    }
    if (hp->cpu) {
        cpu_backend_install(hp->cpu, h->s);
        /* between steps: none of its code is running; its final tier's compile, told to stop at
           the prepare, is not waited for here (host_ran) */
        cpu_backend_destroy(h->retired);
        h->retired = NULL;
        if (cpu_backend_busy(h->cpu)) h->retired = h->cpu;
        else cpu_backend_destroy(h->cpu);
        h->cpu = hp->cpu;
    }
    free(hp);
    return 0;
}

static int cpu_emit(const pj_program *p, const engine_options *o, FILE *out, char *err, size_t len)
{
    cpu_backend_options bo = {o->single, o->fast_math, o->cache_dir, 0};
    cpu_backend *cpu = cpu_backend_create(&bo, err, len);
    int r = cpu ? cpu_backend_emit(cpu, p, out, err, len) : -1;
    cpu_backend_destroy(cpu);
    return r;
}

static int cpu_explain(const pj_program *p, const engine_options *o, FILE *out, char *err, size_t len)
{
    cpu_backend_options bo = {o->single, o->fast_math, o->cache_dir, 0};
    cpu_backend *cpu = cpu_backend_create(&bo, err, len);
    if (!cpu) return -1;
    int r = cpu_backend_explain(cpu, p, out);
    if (r == 0 && cpu_backend_warning(cpu)) { /* the cache's warning, for the caller to show */
        diag_set(err, len, "%s", cpu_backend_warning(cpu));
        r = 1;
    }
    cpu_backend_destroy(cpu);
    return r;
}

/* ---- the host executor (engine.h's exec_ops): the sim's operations on its handle, and the
   kernels a client adds after create (a term's Jacobian) with their launches ---- */

#define SIM_OF(x) (((host_engine *)(x))->s)

static int hx_fill(void *x, int slot, double t, char *err, size_t len)
{
    return sim_exec_ops.step.fill(SIM_OF(x), slot, t, err, len);
}
static int hx_stage(void *x, int i, const stage_clock *c, char *err, size_t len)
{
    return sim_exec_ops.step.stage(SIM_OF(x), i, c, err, len);
}
static int64_t hx_sweep(void *x, double dt, int64_t n, char *err, size_t len)
{
    return sim_exec_ops.step.sweep(SIM_OF(x), dt, n, err, len);
}
static void hx_refresh(void *x, unsigned what) { sim_exec_ops.refresh(SIM_OF(x), what); }
static int hx_copy_out(void *x, int b, double *out, char *err, size_t len)
{
    return sim_exec_ops.copy_out(SIM_OF(x), b, out, err, len);
}
static int hx_copy_in(void *x, int b, const double *in, char *err, size_t len)
{
    return sim_exec_ops.copy_in(SIM_OF(x), b, in, err, len);
}
static int hx_take(void *x, char *err, size_t len) { return sim_exec_ops.take_nonfinite(SIM_OF(x), err, len); }
static int hx_find(void *x, int64_t *cell, double *value, char *err, size_t len)
{
    return sim_exec_ops.find_nonfinite(SIM_OF(x), cell, value, err, len);
}
/* Kernel id is one the CPU back end prepared (the interpreter runs any): 0, or -1 with a message. */
static int hx_prepared(const host_engine *h, pj_kernel_id id, char *err, size_t len)
{
    if (!h->cpu || cpu_backend_has(h->cpu, id)) return 0;
    diag_set(err, len, "the cpu back end did not prepare kernel %d (engine_options.kernels)", id);
    return -1;
}

static int hx_run(void *x, pj_kernel_id id, double t, double dt, char *err, size_t len)
{
    return hx_prepared(x, id, err, len) < 0 ? -1 : sim_exec_ops.run(SIM_OF(x), id, t, dt, err, len);
}
static void hx_skip_fill(void *x, int f, int skip) { sim_exec_ops.skip_fill(SIM_OF(x), f, skip); }
static const kir_launch *hx_geometry(void *x) { return sim_exec_ops.geometry(SIM_OF(x)); }

static int hx_eval(void *x, pj_kernel_id id, double t, double dt, exec_rows_fn rows, void *ctx, char *err, size_t len)
{
    host_engine *h = x;
    if (hx_prepared(h, id, err, len) < 0) return -1;
    int rc = sim_exec_ops.eval(h->s, id, t, dt, rows, ctx, err, len);
    if (rc == 0 && h->cpu) cpu_backend_ran(h->cpu); /* its kernel ran and returned: none crashed */
    return rc;
}

static int hx_add_kernel(void *x, pj_kernel_id id, char *err, size_t len)
{
    host_engine *h = x;
    if (h->n_added == HOST_ADDED_MAX || !program_kernel(sim_program(h->s), id)) {
        diag_set(err, len, h->n_added == HOST_ADDED_MAX ? "more than %d kernels added" : "the program has no kernel %d",
                 h->n_added == HOST_ADDED_MAX ? HOST_ADDED_MAX : id);
        return -1;
    }
    host_added *a = &h->added[h->n_added];
    a->id = id;
    a->cpu = NULL;
    if (h->cpu) {
        engine_options o = h->opt;
        o.kernels = &id;
        o.n_kernels = 1;
        if (!(a->cpu = prepare_cpu(sim_program(h->s), &o, NULL, err, len))) return -1;
    }
    return h->n_added++;
}

/* An added kernel once after the fill of slot 0, with the sim's buffers and extra[i] as buffer
 * first_extra + i (the sim's launch otherwise; a NaN it stores is not recorded). */
static int hx_launch(void *x, int kernel, double t, double dt, int first_extra, void *const *extra, int n_extra,
                     char *err, size_t len)
{
    host_engine *h = x;
    if (kernel < 0 || kernel >= h->n_added || first_extra < 0 || n_extra < 0) {
        diag_set(err, len, "no kernel %d added, or no room for %d more buffers", kernel, n_extra);
        return -1;
    }
    const host_added *a = &h->added[kernel];
    kir_launch L = *sim_launch(h->s);
    int nbuf = sim_get_state(h->s)->nbuf, n = first_extra + n_extra > nbuf ? first_extra + n_extra : nbuf;
    void **buf = malloc(sizeof *buf * (size_t)n);
    if (!buf) {
        diag_set(err, len, "out of memory");
        return -1;
    }
    memcpy(buf, L.buf, sizeof *buf * (size_t)nbuf);
    for (int i = 0; i < n_extra; i++) buf[first_extra + i] = extra[i];
    int32_t nonfinite = 0;
    L.buf = buf;
    L.nonfinite = &nonfinite;
    const kir_kernel *k = program_kernel(sim_program(h->s), a->id);
    int rc = sim_run_kernel(h->s, 0, t, dt, a->cpu ? cpu_backend_run : NULL, a->cpu, a->id, k, &L);
    free(buf);
    if (rc < 0) {
        diag_set(err, len, "%s", sim_error(h->s));
        return -1;
    }
    if (a->cpu) cpu_backend_ran(a->cpu);
    return 0;
}

static const exec_ops host_exec_ops = {
    .device = 0,
    .step = {.fill = hx_fill, .stage = hx_stage, .sweep = hx_sweep},
    .refresh = hx_refresh,
    .copy_out = hx_copy_out,
    .copy_in = hx_copy_in,
    .take_nonfinite = hx_take,
    .find_nonfinite = hx_find,
    .run = hx_run,
    .add_kernel = hx_add_kernel,
    .launch = hx_launch,
    .skip_fill = hx_skip_fill,
    .eval = hx_eval,
    .geometry = hx_geometry,
};

/* An implicit program's solver on this engine's simulation: its state and executor (implicit.h),
 * over the whole mesh (d NULL) or this process's block of d. */
static implicit_solver *host_solver(host_engine *h, struct decomp *d, char *err, size_t len)
{
    simulation m = {&host_exec_ops, h, sim_get_state(h->s)};
    return implicit_create_on(&m, d, h->opt.solver_options, err, len);
}

/* engine.h: the fields in host memory, as the host sim lays them out */
int engine_memory_check(const pj_program *p, int single, char *err, size_t len)
{
    return sim_memory_check(p, single, err, len);
}

#define HOST_OPS                                                                                         \
    .exec = &host_exec_ops, .destroy = host_destroy, .state = host_state, .init = host_init, .step = host_step, \
    .step_n = host_step_n, .reduce = host_reduce, .info = host_info, .prepare = host_prepare, .swap = host_swap, \
    .release = host_release, .solver_stats = host_solver_stats, .block_steps = host_block_steps

#define HOST_CAPS ENGINE_CAP_SWAP | ENGINE_CAP_IMPLICIT | ENGINE_CAP_DECOMPOSE | ENGINE_CAP_SECOND_BC | ENGINE_CAP_MONITORS

const backend_ops interp_backend_ops = {.name = "interp", .caps = HOST_CAPS, .create = interp_create, HOST_OPS};
const backend_ops cpu_backend_ops = {.name = "cpu", .caps = HOST_CAPS | ENGINE_CAP_EXPLAIN | ENGINE_CAP_EMIT,
                                     .emit_flag = "llvm", .create = cpu_create, HOST_OPS, .emit = cpu_emit,
                                     .explain = cpu_explain};
