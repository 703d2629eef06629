/* decomp_engine.c — the decomposed engine: a backend_ops table that wraps a back end's own over
 * the processes of an MPI run (decomp_engine.h). The back end simulates this process's block
 * (engine_options.block, with its inner sides exchanged: decomp_ghosts); this file owns what makes
 * the blocks one simulation of the whole mesh:
 *   - collective creation and hot swap: rank 0 compiles first, into the kernel cache, the others
 *     load from it (one compile per kernel per machine);
 *   - agreement: a failure on any process (create, init, a step, a swap, a field) fails the call
 *     on every one, with that process's message, so no process waits in an exchange;
 *   - fields gathered on rank 0 and scattered from it, in the mesh's order;
 *   - the non-finite flag, the first non-finite cell in the whole mesh's order, and the monitors
 *     combined over every process;
 *   - the collectives of engine.h (engine_procs: rank, blocks, agree, bcast, any).
 * The blocks, the ghost exchange and MPI itself are decomp.c's (in the PETSc module, reached
 * through decomp.h). Library code: nothing prints or exits. */
#include "decomp_engine.h"
#include <stdlib.h>
#include <string.h>
#include "decomp.h"
#include "diag.h"
#include "simulation.h"

typedef struct decomp_engine {
    const backend_ops *be; /* the wrapped back end */
    void *impl;            /* its simulation of this process's block */
    simulation sim;        /* that simulation's state and executor: the generic calls (simulation.h) */
    decomp *d;             /* the decomposition (the engine does not own it) */
    const pj_program *p;
    int64_t block_cells;
    double *scratch; /* a block's field, for gathers and scatters */
} decomp_engine;

/* Prepared kernels of a hot swap: the back end's, with the table that releases them. */
typedef struct decomp_prepared {
    const backend_ops *be;
    void *k;
} decomp_prepared;

static void dec_destroy(void *impl)
{
    decomp_engine *x = impl;
    if (!x) return;
    if (x->impl) x->be->destroy(x->impl);
    free(x->scratch);
    free(x);
}

/* The back end's simulation of the block, from this process's turn of a collective create. */
static void *create_block(decomp_engine *x, const engine_options *o, char *err, size_t len)
{
    int unavailable = 0;
    if (!x->scratch) {
        diag_set(err, len, "out of memory");
        return NULL;
    }
    return x->impl = x->be->create(x->p, o, &unavailable, err, len);
}

void *decomp_engine_create(const backend_ops *be, const pj_program *p, const engine_options *o, char *err,
                           size_t len)
{
    decomp *d = o->decomp;
    engine_options eo = *o;
    eo.block = decomp_block(d);
    decomp_ghosts(d, &eo.ghosts);
    decomp_engine *x = calloc(1, sizeof *x);
    if (!x) {
        diag_set(err, len, "out of memory");
        decomp_agree(d, 1, err, len); /* the first of the others' agreements below fails */
        return NULL;
    }
    x->be = be;
    x->d = d;
    x->p = p;
    x->block_cells = eo.block->n[0] * eo.block->n[1] * eo.block->n[2];
    x->scratch = malloc(sizeof *x->scratch * (size_t)x->block_cells);
    /* one compile per kernel: rank 0 first (into the kernel cache), then the others load */
    int root = decomp_rank(d) == 0;
    if (root) create_block(x, &eo, err, len);
    int failed = decomp_agree(d, root && !x->impl, err, len);
    if (!failed && !root) create_block(x, &eo, err, len);
    if (!failed && decomp_agree(d, !x->impl, err, len)) failed = 1;
    if (failed) {
        dec_destroy(x);
        return NULL;
    }
    x->sim.ops = be->exec;
    x->sim.st = be->state(x->impl, &x->sim.x);
    return x;
}

static int dec_init(void *impl, char *err, size_t len)
{
    decomp_engine *x = impl;
    int rc = x->be->init(x->impl, err, len);
    return -decomp_agree(x->d, rc < 0, err, len);
}

static int dec_step(void *impl, double dt, char *err, size_t len)
{
    decomp_engine *x = impl;
    int rc = x->be->step ? x->be->step(x->impl, dt, err, len) : simulation_step(&x->sim, dt, err, len);
    /* a failure on one process ends the step on every one (none waits for it in an exchange) */
    return -decomp_agree(x->d, rc < 0, err, len);
}

static int dec_get_field(void *impl, int f, double *out, char *err, size_t len)
{
    decomp_engine *x = impl;
    int rc = simulation_get_field(&x->sim, f, x->scratch, err, len);
    if (decomp_agree(x->d, rc < 0, err, len)) return -1;
    if (decomp_gather(x->d, x->scratch, out) < 0) {
        diag_set(err, len, "out of memory gathering field %s", x->p->field_names[f]);
        return -1;
    }
    return 0;
}

static int dec_set_field(void *impl, int f, const double *in, char *err, size_t len)
{
    decomp_engine *x = impl;
    if (decomp_scatter(x->d, in, x->scratch) < 0) {
        diag_set(err, len, "out of memory scattering field %s", x->p->field_names[f]);
        return -1;
    }
    int rc = simulation_set_field(&x->sim, f, x->scratch, err, len);
    return -decomp_agree(x->d, rc < 0, err, len);
}

static int dec_take_nonfinite(void *impl, char *err, size_t len)
{
    decomp_engine *x = impl;
    int rc = simulation_take_nonfinite(&x->sim, err, len);
    if (decomp_agree(x->d, rc < 0, err, len)) return -1;
    return decomp_any(x->d, rc > 0);
}

static int dec_check_finite(void *impl, sim_nan_report *r, char *err, size_t len)
{
    decomp_engine *x = impl;
    int rc = simulation_check_finite(&x->sim, r, err, len);
    if (decomp_agree(x->d, rc < 0, err, len)) return -1;
    /* the first in the whole mesh's order (fields in turn, cells x fastest), as on one process */
    const int64_t *n = x->p->n;
    int64_t key = INT64_MAX;
    if (rc > 0) key = r->field * n[0] * n[1] * n[2] + r->cell[0] + n[0] * (r->cell[1] + n[1] * r->cell[2]);
    int64_t first = decomp_min64(x->d, key);
    if (first == INT64_MAX) return 0;
    int from = decomp_size(x->d);
    int mine = rc > 0 && key == first ? decomp_rank(x->d) : from;
    from = (int)decomp_min64(x->d, mine);
    decomp_bcast(x->d, r, sizeof *r, from);
    return 1;
}

static int dec_reduce(void *impl, double *values, char *err, size_t len)
{
    decomp_engine *x = impl;
    int rc = x->be->reduce(x->impl, values, err, len);
    if (decomp_agree(x->d, rc < 0, err, len)) return -1;
    /* each process's values over its block, combined: sums add (a mean weighted by the block's
       cells), extremes take the extreme */
    const pj_program *p = x->p;
    double cells = (double)(p->n[0] * p->n[1] * p->n[2]);
    /* a mesh with a metric: each block's mean is already its share of the whole mesh's (its
       volumes over the mesh's volume, program_mean_divisor) */
    int plain = program_mesh_plain(p);
    for (int i = 0; i < p->n_monitors; i++) {
        pj_monitor_kind k = p->monitor_kinds[i];
        double v = k == PJ_MON_MEAN && plain ? values[i] * (double)x->block_cells / cells : values[i];
        decomp_reduce(x->d, &v, 1, k == PJ_MON_MAXVAL ? 1 : k == PJ_MON_MINVAL ? 2 : 0);
        values[i] = v;
    }
    return 0;
}

static void dec_info(void *impl, engine_info *info)
{
    decomp_engine *x = impl;
    if (x->be->info) x->be->info(x->impl, info);
}

static void dec_release(void *prepared)
{
    decomp_prepared *dp = prepared;
    if (!dp) return;
    if (dp->k) dp->be->release(dp->k);
    free(dp);
}

static void *dec_prepare(void *impl, const pj_program *p2, engine_info *info, char *err, size_t len)
{
    decomp_engine *x = impl;
    decomp_prepared *dp = malloc(sizeof *dp);
    if (!dp) diag_set(err, len, "out of memory");
    if (dp) *dp = (decomp_prepared){x->be, NULL};
    /* collective, as create: rank 0 compiles into the kernel cache, the others load */
    int root = decomp_rank(x->d) == 0;
    if (root && dp) dp->k = x->be->prepare(x->impl, p2, info, err, len);
    int failed = decomp_agree(x->d, root && !(dp && dp->k), err, len);
    if (!failed && !root && dp) dp->k = x->be->prepare(x->impl, p2, info, err, len);
    if (!failed && decomp_agree(x->d, !(dp && dp->k), err, len)) failed = 1;
    if (failed) {
        dec_release(dp);
        return NULL;
    }
    return dp;
}

static int dec_swap(void *impl, const pj_program *p2, void *prepared, char *err, size_t len)
{
    decomp_engine *x = impl;
    decomp_prepared *dp = prepared;
    void *k = dp ? dp->k : NULL;
    free(dp);
    /* every process swaps at the same step (collective); what a running simulation cannot take is
       refused on all alike (the same programs) */
    int rc = x->be->swap(x->impl, p2, k, err, len);
    if (decomp_agree(x->d, rc < 0, err, len)) return -1;
    x->p = p2;
    return 0;
}

static int dec_solver_stats(void *impl, implicit_stats *stats)
{
    decomp_engine *x = impl;
    return x->be->solver_stats ? x->be->solver_stats(x->impl, stats) : -1;
}

static sim_state *dec_state(void *impl, void **exec)
{
    decomp_engine *x = impl;
    *exec = x->sim.x;
    return x->sim.st;
}

/* No step_n (the engine steps one step at a time, each agreed) and no view (engine_view_field
 * refuses a wrapped table's: a block is not the field); the clock, params and sync are the
 * block's, through the generic calls. */
const backend_ops decomp_engine_ops = {
    .destroy = dec_destroy,
    .state = dec_state,
    .init = dec_init,
    .step = dec_step,
    .get_field = dec_get_field,
    .set_field = dec_set_field,
    .take_nonfinite = dec_take_nonfinite,
    .check_finite = dec_check_finite,
    .reduce = dec_reduce,
    .info = dec_info,
    .prepare = dec_prepare,
    .swap = dec_swap,
    .release = dec_release,
    .solver_stats = dec_solver_stats,
};

static int dec_rank(const void *impl) { return decomp_rank(((const decomp_engine *)impl)->d); }
static int dec_processes(const void *impl) { return decomp_size(((const decomp_engine *)impl)->d); }
static const grid_block *dec_block(const void *impl) { return decomp_block(((const decomp_engine *)impl)->d); }
static const grid_block *dec_blocks(const void *impl) { return decomp_blocks(((const decomp_engine *)impl)->d); }
static int dec_agree(void *impl, int failed, char *err, size_t len)
{
    return decomp_agree(((decomp_engine *)impl)->d, failed, err, len);
}
static void dec_bcast(void *impl, void *data, size_t n) { decomp_bcast(((decomp_engine *)impl)->d, data, n, 0); }
static int dec_any(void *impl, int flag) { return decomp_any(((decomp_engine *)impl)->d, flag); }

const engine_procs decomp_engine_procs = {dec_rank,  dec_processes, dec_block, dec_blocks,
                                          dec_agree, dec_bcast,     dec_any};
