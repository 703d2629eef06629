/* sim_reduce.c — a sim's monitors (sim.h, sim_reduce): the program's KIR_REDUCE kernel over the
 * parts of the grid on the sim's threads, compiled or interpreted, the parts combined in order
 * (kir.h, "Reductions": the result does not depend on the threads), then scaled. */
#include <math.h>
#include <stdlib.h>
#include "interp.h"
#include "sim_impl.h"

typedef struct reduce_job {
    sim *s;
    kir_cpu_fn fn;
    const kir_launch *L;
    double *const *part;
    int failed;
} reduce_job;

static void run_reduce_range(void *ctx, int64_t begin, int64_t end)
{
    reduce_job *j = ctx;
    if (j->fn) j->fn(j->L, begin, end);
    else if (interp_reduce(j->s->st.p->reduce, j->L, j->s->single, begin, end, j->part) < 0)
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

int sim_reduce(sim *s, kir_cpu_fn fn, double *values)
{
    const pj_program *p = s->st.p;
    const kir_kernel *k = p->reduce;
    if (!k || !p->n_monitors) return 0;
    int no = k->n_outputs, nf = p->n_fields;
    int64_t parts = kir_reduce_parts(p->dim, s->st.g.n);
    double *mem = malloc(sizeof *mem * (size_t)parts * (size_t)no);
    void **bufs = malloc(sizeof *bufs * (size_t)(nf + no));
    double **part = malloc(sizeof *part * (size_t)no);
    if (!mem || !bufs || !part) {
        free(mem);
        free(bufs);
        free(part);
        for (int i = 0; i < p->n_monitors; i++) values[i] = NAN;
        return -1;
    }
    for (int f = 0; f < nf; f++) bufs[f] = s->st.buf[f];
    for (int j = 0; j < no; j++) bufs[nf + j] = part[j] = mem + (size_t)j * (size_t)parts;
    sim_fill_ghosts(s, 0, s->st.t);
    kir_launch L = s->L;
    L.buf = bufs;
    L.t = s->st.t;
    L.nonfinite = NULL;
    reduce_job job = {s, fn, &L, part, 0};
    int64_t cells = sim_cells(s);
    if (!s->pool || cells < SIM_PAR_MIN_CELLS || sim_threads_in_use(s) == 1) run_reduce_range(&job, 0, parts);
    else cpu_pool_run_range(s->pool, run_reduce_range, &job, parts, 1, cells / parts);
    double volume = program_integral_scale(p, s->st.g.h), divisor = program_mean_divisor(p);
    int plain = program_mesh_plain(p);
    for (int i = 0; i < p->n_monitors && i < no; i++) {
        double v = kir_reduce_finish(k->outputs[i].slot, part[i], parts);
        if (p->monitor_kinds[i] == PJ_MON_INTEGRAL) v *= volume;
        else if (p->monitor_kinds[i] == PJ_MON_MEAN) v /= plain ? (double)cells : divisor;
        values[i] = v;
    }
    free(mem);
    free(bufs);
    free(part);
    return job.failed ? -1 : 0;
}

