/* bench.c — `pdejit bench FILE`: back ends side by side per grid size.
 *
 * For every size (cells per axis; the problem's mesh is resized, its lengths kept) and back
 * end: time per step (median of repeated runs), million cell updates per second, memory
 * traffic in GB/s (the minimum a fused stage must move: every field slot it loads and every
 * value it stores, once per cell), and the largest relative difference from the interpreter
 * after the same steps. Compile times are per problem: cold (empty cache) and cache hit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "plot.h"
#include "driver.h"
#include "engine.h"
#include "options.h"
#include "writers.h"

#define MAX_BACKENDS 8

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The kernels a step runs: the stages, or an implicit scheme's F, J (and G). */
static int step_kernels(const pj_program *p)
{
    pj_kernel_id ids[PJ_KERNEL_IDS_MAX];
    return p->n_stages + 4 <= PJ_KERNEL_IDS_MAX ? program_step_kernels(p, ids) : 1;
}

/* Bytes a step must move per cell: per stage, each loaded (slot, field) once and each store. */
static double bytes_per_cell(const pj_program *p, int single)
{
    double total = 0;
    pj_kernel_id ids[PJ_KERNEL_IDS_MAX];
    int n = p->n_stages + 4 <= PJ_KERNEL_IDS_MAX ? program_step_kernels(p, ids) : 0;
    for (int s = 0; s < n; s++) total += kir_values_per_cell(program_kernel(p, ids[s]));
    return total * (single ? 4 : 8);
}

/* The time spent compiling or loading kernels: their own times where the back end lists them. */
static double kernels_ms(const engine_info *info)
{
    if (!info->kernels) return info->ms_prepare;
    double ms = 0;
    for (int i = 0; i < info->n_kernels; i++) ms += info->kernels[i].ms;
    return ms;
}

typedef struct run_result {
    double ms_step;        /* median over the reps */
    double transfer_ms;    /* the initial values in, every field out */
    double *state;         /* every field after 3 steps from the initial values */
    int ok, on_device;
    char err[256];
} run_result;

/* Steps p on back end `be`: time per step (synchronised), the transfers a run pays, and the state
 * after 3 steps from the start for the comparison with the interpreter. */
static void run_backend(const pj_program *p, const backend_ops *be, const engine_options *eo, int64_t steps, int reps,
                        run_result *r)
{
    memset(r, 0, sizeof *r);
    engine *e = engine_create(be, p, eo, NULL, r->err, sizeof r->err);
    if (!e) return;
    engine_info info;
    engine_get_info(e, &info);
    r->on_device = info.device != NULL;
    double t[16];
    double t0 = driver_now();
    if (engine_init(e, r->err, sizeof r->err) < 0 || engine_sync(e, r->err, sizeof r->err) < 0) goto out;
    double up = driver_now() - t0;
    for (int rep = 0; rep < reps; rep++) {
        t0 = driver_now();
        for (int64_t i = 0; i < steps; i++)
            if (engine_step(e, p->dt, r->err, sizeof r->err) < 0) goto out;
        if (engine_sync(e, r->err, sizeof r->err) < 0) goto out;
        t[rep] = (driver_now() - t0) / (double)steps * 1e3;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    r->ms_step = t[reps / 2];
    if (engine_init(e, r->err, sizeof r->err) < 0) goto out;
    for (int64_t i = 0; i < 3; i++)
        if (engine_step(e, p->dt, r->err, sizeof r->err) < 0) goto out;
    int64_t cells = engine_cells(e);
    r->state = malloc(sizeof(double) * (size_t)(cells * p->n_fields));
    t0 = driver_now();
    for (int f = 0; r->state && f < p->n_fields; f++)
        if (engine_get_field(e, f, r->state + f * cells, r->err, sizeof r->err) < 0) goto out;
    r->transfer_ms = (up + driver_now() - t0) * 1e3;
    r->ok = r->state != NULL;
out:
    engine_destroy(e);
}

static double max_rel_diff(const double *a, const double *b, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) && isnan(b[i])) continue;
        if (a[i] == b[i]) continue;
        double d = fabs(a[i] - b[i]) / fmax(fmax(fabs(a[i]), fabs(b[i])), 1e-300);
        if (!(d <= m)) m = d;
    }
    return m;
}

/* ---- the options ---------------------------------------------------------------------------- */

typedef struct bench_args {
    const char *backends, *sizes, *plot; /* sizes: NULL for the defaults; plot: NULL for none */
    double steps, threads;               /* 0: chosen */
    int single;
} bench_args;

static int set_at_least_1(const cli_opt *o, const char *value, void *member)
{
    if (cli_parse_double(o->name, value, member) < 0) return -1;
    if (!(*(double *)member >= 1)) { fprintf(stderr, "pdejit: %s must be >= 1\n", o->name); return -1; }
    return 0;
}

static int set_plot(const cli_opt *o, const char *value, void *member)
{
    (void)o;
    *(const char **)member = strcmp(value, "none") ? value : NULL;
    return 0;
}

#define BENCH(member) offsetof(bench_args, member)
static const cli_opt bench_opts[] = {
    {"--backends", NULL, "B,B...", "the back ends measured (default: all): {}", pj_backend_names, cli_set_text,
     BENCH(backends)},
    {"--sizes", NULL, "N,N...", "cells per axis (default: 4 sizes for the problem's dimension, 64 to 2048 in 2D)",
     NULL, cli_set_text, BENCH(sizes)},
    {"--steps", NULL, "N", "steps per timing (default: enough for ~0.2 s)", NULL, set_at_least_1, BENCH(steps)},
    {"--threads", NULL, "N", "CPU threads (default: all cores)", NULL, set_at_least_1, BENCH(threads)},
    {"--precision", NULL, "double|single", "floating point of the kernels (default double)", NULL,
     cli_set_precision, BENCH(single)},
    {"--plot", NULL, "FILE.png", "also write FILE.png: Mcells/s against cells per back end, log-log, with a title, "
     "axis labels and a legend (interp grey, cpu blue, cuda green); none without it", NULL, set_plot, BENCH(plot)},
    CLI_HELP_OPT,
    {0},
};
#undef BENCH

/* use[b]: engine_backends[b] is in the comma-separated `list`. 0, or -1 after saying why. */
static int choose_backends(const char *list, int *use, int n_be)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int b = 0;
        while (b < n_be && strcmp(engine_backends[b]->name, tok)) b++;
        if (b == n_be) {
            fprintf(stderr, "pdejit bench: unknown back end '%s'; back ends are %s\n", tok, engine_backend_names());
            return -1;
        }
        use[b] = 1;
    }
    return 0;
}

/* The most cells one size may have (size^dim): far beyond any memory, and within int64_t and the
 * doubles the table prints, so that no product of sizes overflows (UBSan found size^3 and
 * cells * fields overflowing for --sizes 1e7 in 3D). */
#define BENCH_MAX_CELLS 1e15

/* The sizes (cells per axis) of --sizes, else 4 for the problem's dimension; their count, or -1
 * after saying why. */
static int choose_sizes(const pj_program *p, const char *text, int64_t sizes[16])
{
    int n = 0;
    if (text) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", text);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            double v;
            if (cli_parse_double("--sizes", tok, &v) < 0) return -1;
            if (!(v >= 1 && v == floor(v) && pow(v, p->dim) * (p->n_fields > 0 ? p->n_fields : 1) <= BENCH_MAX_CELLS)) {
                fprintf(stderr, "pdejit bench: --sizes takes whole numbers of cells per axis from 1 on, at most "
                        "%.0e values (cells times fields) per size, not '%s'\n", BENCH_MAX_CELLS, tok);
                return -1;
            }
            if (n == 16) {
                fprintf(stderr, "pdejit bench: --sizes takes at most 16 sizes\n");
                return -1;
            }
            sizes[n++] = (int64_t)v;
        }
        if (!n) fprintf(stderr, "pdejit bench: --sizes names no size\n");
        return n ? n : -1;
    }
    static const int64_t d1[] = {1024, 16384, 262144, 4194304}, d2[] = {64, 256, 1024, 2048},
                         d3[] = {16, 32, 64, 128};
    const int64_t *d = p->dim == 1 ? d1 : p->dim == 2 ? d2 : d3;
    for (int i = 0; i < 4; i++) sizes[n++] = d[i];
    return n;
}

/* Compile times, cold (a private empty cache folder) and from the cache (a second engine on the
 * same folder), of every back end in use; one that cannot run here is dropped from use[]. 0, or
 * 1 when a back end failed. */
static int measure_compiles(const pj_program *p, const engine_options *eo, int *use, int n_be)
{
    char err[1024];
    for (int b = 0; b < n_be; b++) {
        if (!use[b]) continue;
        char tmpl[] = "/tmp/pdejit-bench-XXXXXX";
        char *dir = mkdtemp(tmpl);
        engine_options co = *eo;
        co.cache_dir = dir;
        int unavailable = 0;
        engine_info cold, hit;
        engine *first = engine_create(engine_backends[b], p, &co, &unavailable, err, sizeof err);
        engine *second = first ? engine_create(engine_backends[b], p, &co, NULL, err, sizeof err) : NULL;
        if (!second && unavailable) {
            printf("%s: not measured: %s\n", engine_backends[b]->name, err);
            use[b] = 0;
        } else if (!second) {
            fprintf(stderr, "pdejit bench: %s back end: %s\n", engine_backends[b]->name, err);
            engine_destroy(first);
            return 1;
        } else {
            engine_get_info(first, &cold);
            engine_get_info(second, &hit);
            if (cold.n_kernels)
                printf("compile (%s): cold %.1f ms, cache hit %.2f ms%s (%d kernel%s, %s)\n", engine_backends[b]->name,
                       kernels_ms(&cold), kernels_ms(&hit),
                       hit.from_cache == hit.n_kernels ? "" : " (not all from the cache)", cold.n_kernels,
                       cold.n_kernels == 1 ? "" : "s", cold.device ? cold.device : cold.compiler);
        }
        engine_destroy(first);
        engine_destroy(second);
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) { /* a leftover temporary folder is harmless */ }
    }
    return 0;
}

/* What the sizes' measurements gather: the plot's points per back end, and the smallest size from
 * which a device wins, transfers included (-1: none). */
typedef struct bench_state {
    const pj_program *p;
    const engine_options *eo;
    const int *use;
    int n_be;
    double steps;            /* --steps, 0: chosen per size */
    double bpc;              /* bytes a step moves per cell */
    double px[MAX_BACKENDS][16], py[MAX_BACKENDS][16];
    int pn[MAX_BACKENDS];
    int64_t device_from;
} bench_state;

/* Steps for about 0.2 s at a guessed speed, at least 2, at most 2000 (the oracle: 1 on big meshes). */
static int64_t steps_for(const bench_state *s, int b, int64_t cells)
{
    if (s->steps > 0) return (int64_t)s->steps;
    const int oracle = 0;
    double guess = (b == oracle ? 5e7 : 1e9) / (double)step_kernels(s->p);
    int64_t steps = (int64_t)(0.2 * guess / (double)cells / 5);
    if (steps < 2) steps = 2;
    if (steps > 2000) steps = 2000;
    if (b == oracle && cells > (1 << 22)) steps = 1;
    return steps;
}

/* One size: each back end in use, one row of the table. 0, or 1 when a back end failed. */
static int bench_size(bench_state *s, pj_program *p, int64_t size)
{
    const int oracle = 0; /* engine_backends[0] is the interpreter */
    int status = 0;
    int64_t cells = 1;
    for (int a = 0; a < p->dim; a++) {
        p->n[a] = size;
        cells *= size;
    }
    char label[32];
    snprintf(label, sizeof label, "%lld%s", (long long)size, p->dim == 1 ? "" : p->dim == 2 ? "^2" : "^3");
    run_result res[MAX_BACKENDS];
    memset(res, 0, sizeof res);
    double best_host_ms = -1;
    for (int b = 0; b < s->n_be; b++) {
        if (!s->use[b]) continue;
        const char *name = engine_backends[b]->name;
        int64_t steps = steps_for(s, b, cells);
        run_backend(p, engine_backends[b], s->eo, steps, 5, &res[b]);
        if (!res[b].ok) {
            printf("%10s %12lld  %-7s  failed: %s\n", label, (long long)cells, name, res[b].err);
            status = 1;
            continue;
        }
        double ms = res[b].ms_step;
        s->px[b][s->pn[b]] = (double)cells;
        s->py[b][s->pn[b]++] = (double)cells / ms * 1e-3;
        char diff[32] = "0 (oracle)";
        if (b != oracle)
            snprintf(diff, sizeof diff, "%.3g",
                     s->use[oracle] && res[oracle].ok
                         ? max_rel_diff(res[oracle].state, res[b].state, cells * p->n_fields)
                         : NAN);
        printf("%10s %12lld  %-7s %12.4f %10.1f %9.2f %14s\n", label, (long long)cells, name, ms,
               (double)cells / ms * 1e-3, s->bpc * (double)cells / ms * 1e-6, s->use[oracle] ? diff : "");
        if (!res[b].on_device) {
            if (b != oracle && (best_host_ms < 0 || ms < best_host_ms)) best_host_ms = ms;
            continue;
        }
        printf("%10s %12s  %-7s %43s %10.3f ms\n", "", "", name, "upload + download of every field:",
               res[b].transfer_ms);
        /* a run of `steps` steps, transfers included, against the fastest compiled host back end */
        if (best_host_ms > 0 && s->device_from < 0 && ms + res[b].transfer_ms / (double)steps < best_host_ms)
            s->device_from = size;
    }
    for (int b = 0; b < s->n_be; b++) free(res[b].state);
    return status;
}

/* The line on where the GPU wins, and the plot. */
static int bench_summary(const bench_state *s, const char *plot_path, const char *title)
{
    const int oracle = 0;
    int device_used = 0, host_used = 0;
    for (int b = 0; b < s->n_be; b++) {
        if (!s->use[b] || b == oracle) continue;
        device_used |= (engine_backends[b]->caps & ENGINE_CAP_DEVICE) != 0;
        host_used |= !(engine_backends[b]->caps & ENGINE_CAP_DEVICE);
    }
    if (device_used && host_used)
        printf(s->device_from > 0 ? "the GPU is faster than the CPU from %lld cells per axis on, transfers included\n"
                                  : "the GPU was not faster than the CPU at any size measured, transfers included\n",
               (long long)s->device_from);
    if (plot_path) {
        /* colours follow the back end: series b is back end b (empty ones draw nothing) */
        char err[1024];
        plot_series all[MAX_BACKENDS];
        for (int b = 0; b < s->n_be; b++)
            all[b] = (plot_series){engine_backends[b]->name, s->px[b], s->py[b], s->pn[b]};
        if (plot_png(plot_path, title, "cells (log scale)", "Mcells/s (million cell updates a second)", all, s->n_be,
                     err, sizeof err) < 0) {
            fprintf(stderr, "pdejit bench: plot: %s\n", err);
            return 1;
        }
        printf("plot: %s (Mcells/s against cells, log-log; interp grey, cpu blue, cuda green)\n", plot_path);
    }
    return 0;
}

static int cmd_bench(int argc, char **argv)
{
    bench_args a = {.backends = "interp,cpu,cuda"}; /* no plot unless --plot names one */
    const char *file = NULL;
    if (cli_parse(&cli_bench, argc, argv, &a, &file, 1) < 0) return 2;
    if (!file) {
        cli_help(&cli_bench, stderr);
        return 2;
    }
    /* use[b]: engine_backends[b] is measured; the interpreter (the first) is the oracle */
    int use[MAX_BACKENDS] = {0}, n_be = 0;
    while (engine_backends[n_be] && n_be < MAX_BACKENDS) n_be++;
    if (choose_backends(a.backends, use, n_be) < 0) return 2;
    char why[512];
    if (a.plot && writers_check_writable(a.plot, why, sizeof why) < 0) { /* before minutes of measuring */
        fprintf(stderr, "pdejit bench: cannot write the plot %s: %s\n", a.plot, why);
        return 2;
    }
    pj_program *p = cli_load_problem(file, NULL);
    if (!p) return 2;
    if (p->dt <= 0) p->dt = 1e-6;
    int64_t sizes[16];
    int n_sizes = choose_sizes(p, a.sizes, sizes);
    if (n_sizes < 0) {
        program_free(p);
        return 2;
    }
    engine_options eo = {.single = a.single, .threads = (int)a.threads};
    int n_step = step_kernels(p);
    printf("pdejit bench %s: %dD, %d field%s, %s (%d %s%s), %s precision\n", file, p->dim, p->n_fields,
           p->n_fields == 1 ? "" : "s", scheme_name(p->scheme), n_step, p->n_stages ? "stage" : "kernel",
           n_step == 1 ? "" : "s", a.single ? "single" : "double");
    if (measure_compiles(p, &eo, use, n_be)) {
        program_free(p);
        return 1;
    }
    bench_state s = {.p = p, .eo = &eo, .use = use, .n_be = n_be, .steps = a.steps,
                     .bpc = bytes_per_cell(p, a.single), .device_from = -1};
    printf("%10s %12s  %-7s %12s %10s %9s %14s\n", "size", "cells", "backend", "ms/step", "Mcells/s", "GB/s",
           "max rel diff");
    int status = 0;
    for (int si = 0; si < n_sizes; si++) status |= bench_size(&s, p, sizes[si]);
    char title[96];
    const char *base = strrchr(file, '/');
    snprintf(title, sizeof title, "pdejit bench %.40s: %dD, %s precision", base ? base + 1 : file, p->dim,
             a.single ? "single" : "double");
    status |= bench_summary(&s, a.plot, title);
    program_free(p);
    return status;
}

const cli_cmd cli_bench = {
    .name = "bench",
    .operands = "FILE",
    .summary = "compile and step times, back ends side by side",
    .usage = "FILE [--backends interp,cpu,cuda] [--sizes 64,256,1024] [--steps N]\n"
             "                        [--threads N] [--precision double|single] [--plot FILE.png]",
    .about = "Compiles FILE's kernels cold and from the cache, then steps it at each size (cells per\n"
             "axis) on each back end and prints one table: time per step, Mcells/s, GB/s and the\n"
             "largest relative difference from the interpreter.\n",
    .opts = bench_opts,
    .main = cmd_bench,
};
