/* sim_exec.c — the host sim as an executor (engine.h's exec_ops, sim_exec_ops): the step's
 * operations (sim.c's fill and stage, tblock.c's sweep), the refresh of what mirrors the state's
 * clock and params, copies of a buffer in and out, the NaN record and search, a kernel run once
 * (sim_eval) or shaped by the caller's rows (sim_run_kernel: terms), the fills a term skips, and
 * whether a 2D stage runs in x strips (sim_x_strip). */
#include <math.h>
#include "diag.h"
#include "interp.h"
#include "sim_impl.h"
#include "simulation.h"

/* x strips: the tables' part and the rows shared with the next row stay in the L1 (32 KiB here;
   docs/performance.md, "Non-uniform x at 1024²") */
#define X_STRIP 512

/* sim_impl.h. X_STRIP for a 2D stage that reads two metric tables or more along x (kir_metric;
 * lap's laphi and laplo; with one, r-z's invvol, strips were slower) on rows over 1.5 X_STRIP
 * cells while the state fits in the last-level cache (beyond it, whole rows keep the memory
 * streams: 2048² went from 0.85x uniform to 0.69x in strips); else 0. */
int64_t sim_x_strip(const sim *s)
{
    const pj_program *p = s->st.p;
    unsigned seen = 0;
    if (p->dim != 2 || s->st.g.n[0] <= X_STRIP * 3 / 2 ||
        (double)s->st.g.elems * (double)s->st.esz * s->st.nbuf > (double)sim_cache_bytes(0))
        return 0;
    for (int i = 0; i < p->n_stages; i++)
        for (const kir_node *n = p->stages[i].kernel ? p->stages[i].kernel->nodes : NULL;
             n && n < p->stages[i].kernel->nodes + p->stages[i].kernel->n_nodes; n++)
            seen |= n->op == KIR_METRIC && n->axis == 0 ? 1u << n->index : 0;
    return __builtin_popcount(seen) >= 2 ? X_STRIP : 0;
}

/* The first field of slot 0 with a non-finite value, that cell (x fastest) and value; -1 none. */
static int find_nonfinite(const sim *s, int64_t *cell, double *value)
{
    const pj_program *p = s->st.p;
    const int64_t *n = s->st.g.n;
    for (int f = 0; f < p->n_fields; f++) {
        const void *b = s->st.buf[f];
        for (int64_t k = 0; k < n[2]; k++)
            for (int64_t j = 0; j < n[1]; j++) {
                int64_t row = j * s->L.stride[1] + k * s->L.stride[2];
                for (int64_t i = 0; i < n[0]; i++) {
                    double v = s->single ? (double)((const float *)b)[row + i] : ((const double *)b)[row + i];
                    if (isfinite(v)) continue;
                    *cell = i + n[0] * (j + n[1] * k);
                    *value = v;
                    return f;
                }
            }
    }
    return -1;
}

static void exec_refresh(void *x, unsigned what)
{
    sim *s = x;
    if (what & EXEC_CLOCK) s->L.t = s->st.t;
    if (what & EXEC_PARAMS)
        for (int side = 0; side < 6; side++) s->coef_valid[side] = 0; /* boundary coefficients may use them */
}

static int exec_copy_out(void *x, int b, double *out, char *err, size_t len)
{
    (void)err;
    (void)len;
    sim_get_field(x, b, out);
    return 0;
}

static int exec_copy_in(void *x, int b, const double *in, char *err, size_t len)
{
    (void)err;
    (void)len;
    sim_set_field(x, b, in);
    return 0;
}

static int exec_take_nonfinite(void *x, char *err, size_t len)
{
    (void)err;
    (void)len;
    return sim_take_nonfinite(x);
}

static int exec_find_nonfinite(void *x, int64_t *cell, double *value, char *err, size_t len)
{
    (void)err;
    (void)len;
    return find_nonfinite(x, cell, value);
}

static int exec_run(void *x, pj_kernel_id id, double t, double dt, char *err, size_t len)
{
    if (sim_eval(x, id, t, dt) == 0) return 0;
    diag_set(err, len, "%s", sim_error(x));
    return -1;
}

static const kir_launch *exec_geometry(void *x) { return &((sim *)x)->L; }

static void exec_skip_fill(void *x, int f, int skip) { sim_skip_fill(x, f, skip); }

/* exec_ops.eval: a kernel shaped by the caller's rows (exec_rows_fn) on the sim's threads. */
typedef struct rows_job {
    sim *s;
    exec_rows_fn rows;
    void *ctx;
    pj_kernel_id id;
    const kir_kernel *k;
} rows_job;

static void rows_kernel(void *x, const kir_launch *L, int64_t begin, int64_t end)
{
    const rows_job *j = x;
    if (j->s->runner) j->s->runner(j->s->runner_ctx, j->id, L, begin, end);
    else interp_stage(j->k, L, j->s->single, begin, end);
}

static void rows_range(void *x, pj_kernel_id stage, const kir_launch *L, int64_t begin, int64_t end)
{
    rows_job *j = x;
    (void)stage;
    j->rows(j->ctx, rows_kernel, j, L, begin, end);
}

static int exec_eval(void *x, pj_kernel_id id, double t, double dt, exec_rows_fn rows, void *ctx, char *err, size_t len)
{
    sim *s = x;
    const kir_kernel *k = program_kernel(s->st.p, id);
    if (!k) {
        diag_set(err, len, "the program has no kernel %d", id);
        return -1;
    }
    rows_job j = {s, rows, ctx, id, k};
    if (sim_run_kernel(s, 0, t, dt, rows ? rows_range : NULL, rows ? &j : NULL, id, k, NULL) == 0) return 0;
    diag_set(err, len, "%s", sim_error(s));
    return -1;
}

const exec_ops sim_exec_ops = {
    .device = 0,
    .step = {.fill = sim_fill_slot, .stage = sim_stage, .sweep = tblock_sweep},
    .refresh = exec_refresh,
    .copy_out = exec_copy_out,
    .copy_in = exec_copy_in,
    .take_nonfinite = exec_take_nonfinite,
    .find_nonfinite = exec_find_nonfinite,
    .run = exec_run,
    .skip_fill = exec_skip_fill,
    .eval = exec_eval,
    .geometry = exec_geometry,
};

