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

static const char *usage_bench =
    "usage: pdejit bench FILE [--backends interp,cpu,cuda] [--sizes 64,256,1024] [--steps N]\n"
    "                        [--threads N] [--precision double|single] [--plot FILE.png]\n"
    "Compiles FILE's kernels cold and from the cache, then steps it at each size (cells per\n"
    "axis) on each back end and prints one table: time per step, Mcells/s, GB/s and the\n"
    "largest relative difference from the interpreter. --steps: steps per timing (default:\n"
    "enough for ~0.2 s). --plot: Mcells/s against cells per back end, log-log (default\n"
    "bench.png; `--plot none` for none): interp grey, cpu blue, cuda green.\n";

#define MAX_BACKENDS 8

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
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

int cmd_bench(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { fputs(usage_bench, stdout); return 0; }
    const char *file = NULL, *backends = "interp,cpu,cuda", *sizes_text = NULL, *plot_path = "bench.png";
    double px[MAX_BACKENDS][16], py[MAX_BACKENDS][16];
    int pn[MAX_BACKENDS] = {0};
    double steps_d = 0, threads_d = 0;
    int single = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--backends") && v) { backends = v; i++; }
        else if (!strcmp(a, "--sizes") && v) { sizes_text = v; i++; }
        else if (!strcmp(a, "--steps") && v) { if (cli_parse_double(a, v, &steps_d) < 0 || steps_d < 1) return 2; i++; }
        else if (!strcmp(a, "--threads") && v) { if (cli_parse_double(a, v, &threads_d) < 0 || threads_d < 1) return 2; i++; }
        else if (!strcmp(a, "--precision") && v) { single = !strcmp(v, "single"); i++; }
        else if (!strcmp(a, "--plot") && v) { plot_path = strcmp(v, "none") ? v : NULL; i++; }
        else if (a[0] == '-') { fprintf(stderr, "pdejit bench: unknown option '%s'\n%s", a, usage_bench); return 2; }
        else if (!file) file = a;
        else { fputs(usage_bench, stderr); return 2; }
    }
    if (!file) { fputs(usage_bench, stderr); return 2; }
    /* use[b]: engine_backends[b] is measured; the interpreter (the first) is the oracle */
    int use[MAX_BACKENDS] = {0}, n_be = 0;
    while (engine_backends[n_be] && n_be < MAX_BACKENDS) n_be++;
    char list[256];
    snprintf(list, sizeof list, "%s", backends);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int b = 0;
        while (b < n_be && strcmp(engine_backends[b]->name, tok)) b++;
        if (b == n_be) {
            fprintf(stderr, "pdejit bench: unknown back end '%s'; back ends are %s\n", tok, engine_backend_names());
            return 2;
        }
        use[b] = 1;
    }
    const int oracle = 0; /* engine_backends[0] is the interpreter */
    pj_program *p = cli_load_problem(file, NULL);
    if (!p) return 2;
    if (p->dt <= 0) p->dt = 1e-6;
    int64_t sizes[16];
    int n_sizes = 0;
    if (sizes_text) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", sizes_text);
        for (char *tok = strtok(buf, ","); tok && n_sizes < 16; tok = strtok(NULL, ",")) {
            double v;
            if (cli_parse_double("--sizes", tok, &v) < 0 || v < 1 || v != floor(v)) { program_free(p); return 2; }
            sizes[n_sizes++] = (int64_t)v;
        }
    } else {
        static const int64_t d1[] = {1024, 16384, 262144, 4194304}, d2[] = {64, 256, 1024, 2048}, d3[] = {16, 32, 64, 128};
        const int64_t *d = p->dim == 1 ? d1 : p->dim == 2 ? d2 : d3;
        for (int i = 0; i < 4; i++) sizes[n_sizes++] = d[i];
    }
    int status = 0;
    char err[1024];
    engine_options eo = {.single = single, .threads = (int)threads_d};
    pj_kernel_id step_ids[PJ_KERNEL_IDS_MAX]; /* the kernels a step runs: an implicit scheme's F, J (and G) */
    int n_step = p->n_stages + 4 <= PJ_KERNEL_IDS_MAX ? program_step_kernels(p, step_ids) : 1;
    printf("pdejit bench %s: %dD, %d field%s, %s (%d %s%s), %s precision\n", file, p->dim, p->n_fields,
           p->n_fields == 1 ? "" : "s", scheme_name(p->scheme), n_step, p->n_stages ? "stage" : "kernel",
           n_step == 1 ? "" : "s",
           single ? "single" : "double");
    for (int b = 0; b < n_be; b++) {
        if (!use[b]) continue;
        /* cold: a private empty cache folder; hit: a second engine on the same folder */
        char tmpl[] = "/tmp/pdejit-bench-XXXXXX";
        char *dir = mkdtemp(tmpl);
        engine_options co = eo;
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
            program_free(p);
            return 1;
        } else {
            engine_get_info(first, &cold);
            engine_get_info(second, &hit);
            if (cold.n_kernels)
                printf("compile (%s): cold %.1f ms, cache hit %.2f ms%s (%d kernel%s, %s)\n", engine_backends[b]->name,
                       kernels_ms(&cold), kernels_ms(&hit), hit.from_cache == hit.n_kernels ? "" : " (not all from the cache)",
                       cold.n_kernels, cold.n_kernels == 1 ? "" : "s", cold.device ? cold.device : cold.compiler);
        }
        engine_destroy(first);
        engine_destroy(second);
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) { /* a leftover temporary folder is harmless */ }
    }
    int64_t device_from = -1; /* the smallest size from which a device wins, transfers included */
    double bpc = bytes_per_cell(p, single);
    printf("%10s %12s  %-7s %12s %10s %9s %14s\n", "size", "cells", "backend", "ms/step", "Mcells/s", "GB/s",
           "max rel diff");
    for (int si = 0; si < n_sizes; si++) {
        int64_t cells = 1;
        for (int a = 0; a < p->dim; a++) {
            p->n[a] = sizes[si];
            cells *= sizes[si];
        }
        char label[32];
        snprintf(label, sizeof label, "%lld%s", (long long)sizes[si], p->dim == 1 ? "" : p->dim == 2 ? "^2" : "^3");
        run_result res[MAX_BACKENDS];
        memset(res, 0, sizeof res);
        double best_host_ms = -1;
        for (int b = 0; b < n_be; b++) {
            if (!use[b]) continue;
            const char *name = engine_backends[b]->name;
            /* steps: ~0.2 s at a guessed speed, at least 2 */
            int64_t steps = steps_d > 0 ? (int64_t)steps_d : 0;
            if (!steps) {
                double guess = (b == oracle ? 5e7 : 1e9) / (double)n_step;
                steps = (int64_t)(0.2 * guess / (double)cells / 5);
                if (steps < 2) steps = 2;
                if (steps > 2000) steps = 2000;
            }
            if (b == oracle && !steps_d && cells > (1 << 22)) steps = 1;
            run_backend(p, engine_backends[b], &eo, steps, 5, &res[b]);
            if (!res[b].ok) {
                printf("%10s %12lld  %-7s  failed: %s\n", label, (long long)cells, name, res[b].err);
                status = 1;
                continue;
            }
            double ms = res[b].ms_step;
            px[b][pn[b]] = (double)cells;
            py[b][pn[b]++] = (double)cells / ms * 1e-3;
            char diff[32] = "0 (oracle)";
            if (b != oracle)
                snprintf(diff, sizeof diff, "%.3g", use[oracle] && res[oracle].ok
                                                        ? max_rel_diff(res[oracle].state, res[b].state, cells * p->n_fields)
                                                        : NAN);
            printf("%10s %12lld  %-7s %12.4f %10.1f %9.2f %14s\n", label, (long long)cells, name, ms,
                   (double)cells / ms * 1e-3, bpc * (double)cells / ms * 1e-6, use[oracle] ? diff : "");
            if (!res[b].on_device) {
                if (b != oracle && (best_host_ms < 0 || ms < best_host_ms)) best_host_ms = ms;
                continue;
            }
            printf("%10s %12s  %-7s %43s %10.3f ms\n", "", "", name, "upload + download of every field:", res[b].transfer_ms);
            /* a run of `steps` steps, transfers included, against the fastest compiled host back end */
            if (best_host_ms > 0 && device_from < 0 && ms + res[b].transfer_ms / (double)steps < best_host_ms)
                device_from = sizes[si];
        }
        for (int b = 0; b < n_be; b++) free(res[b].state);
    }
    int device_used = 0, host_used = 0;
    for (int b = 0; b < n_be; b++) {
        if (!use[b] || b == oracle) continue;
        device_used |= (engine_backends[b]->caps & ENGINE_CAP_DEVICE) != 0;
        host_used |= !(engine_backends[b]->caps & ENGINE_CAP_DEVICE);
    }
    if (device_used && host_used)
        printf(device_from > 0 ? "the GPU is faster than the CPU from %lld cells per axis on, transfers included\n"
                               : "the GPU was not faster than the CPU at any size measured, transfers included\n",
               (long long)device_from);
    if (plot_path) {
        /* colours follow the back end: series b is back end b (empty ones draw nothing) */
        plot_series all[MAX_BACKENDS];
        for (int b = 0; b < n_be; b++) all[b] = (plot_series){engine_backends[b]->name, px[b], py[b], pn[b]};
        if (plot_png(plot_path, all, n_be, err, sizeof err) < 0) fprintf(stderr, "pdejit bench: plot: %s\n", err);
        else printf("plot: %s (Mcells/s against cells, log-log; interp grey, cpu blue, cuda green)\n", plot_path);
    }
    program_free(p);
    return status;
}
