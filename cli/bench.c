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
#include "cpu_backend.h"
#include "cuda_backend.h"
#include "cuda_driver.h"
#include "driver.h"
#include "sim.h"

static const char *usage_bench =
    "usage: pdejit bench FILE [--backends interp,cpu,cuda] [--sizes 64,256,1024] [--steps N]\n"
    "                        [--threads N] [--precision double|single] [--plot FILE.png]\n"
    "Compiles FILE's kernels cold and from the cache, then steps it at each size (cells per\n"
    "axis) on each back end and prints one table: time per step, Mcells/s, GB/s and the\n"
    "largest relative difference from the interpreter. --steps: steps per timing (default:\n"
    "enough for ~0.2 s). --plot: Mcells/s against cells per back end, log-log (default\n"
    "bench.png; `--plot none` for none): interp grey, cpu blue, cuda green.\n";

typedef enum { B_INTERP, B_CPU, B_CUDA } bkind;
static const char *const names[3] = {"interp", "cpu", "cuda"};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Bytes a step must move per cell: per stage, each loaded (slot, field) once and each store. */
static double bytes_per_cell(const pj_program *p, int single)
{
    double total = 0;
    for (int s = 0; s < p->n_stages; s++) total += kir_values_per_cell(p->stages[s].kernel);
    return total * (single ? 4 : 8);
}

typedef struct run_result { double ms_step; double *state; int ok; char err[256]; } run_result;

static void run_backend(pj_program *p, bkind b, int single, int threads, int64_t steps, int reps, cpu_backend *cb,
                        run_result *r)
{
    memset(r, 0, sizeof *r);
    sim_options so = {single, threads};
    sim *s = sim_create(p, &so, r->err, sizeof r->err);
    if (!s) return;
    if (b == B_CPU) cpu_backend_install(cb, s);
    double t[16];
    sim_init(s);
    for (int rep = 0; rep < reps; rep++) {
        double t0 = driver_now();
        for (int64_t i = 0; i < steps; i++) sim_step(s, p->dt);
        t[rep] = (driver_now() - t0) / (double)steps * 1e3;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    r->ms_step = t[reps / 2];
    /* the state after `steps` steps from the start, for the comparison */
    sim_init(s);
    for (int64_t i = 0; i < steps; i++) sim_step(s, p->dt);
    int64_t cells = sim_cells(s);
    r->state = malloc(sizeof(double) * (size_t)(cells * p->n_fields));
    for (int f = 0; f < p->n_fields; f++) sim_get_field(s, f, r->state + f * cells);
    sim_destroy(s);
    r->ok = 1;
}

/* The GPU: time per step (synchronised), plus what a run pays to move the fields: the upload
 * at the start (init) and one download of every field at the end, spread over `steps`. */
static void run_cuda(pj_program *p, int single, int64_t steps, int reps, run_result *r, double *transfer_ms)
{
    memset(r, 0, sizeof *r);
    cuda_sim_options co = {.single = single};
    cuda_sim *g = cuda_sim_create(p, &co, r->err, sizeof r->err);
    if (!g) return;
    double t[16];
    double t0 = driver_now();
    if (cuda_sim_init(g, r->err, sizeof r->err) < 0 || cuda_sim_sync(g, r->err, sizeof r->err) < 0) goto out;
    double up = driver_now() - t0;
    for (int rep = 0; rep < reps; rep++) {
        t0 = driver_now();
        for (int64_t i = 0; i < steps; i++)
            if (cuda_sim_step(g, p->dt, r->err, sizeof r->err) < 0) goto out;
        if (cuda_sim_sync(g, r->err, sizeof r->err) < 0) goto out;
        t[rep] = (driver_now() - t0) / (double)steps * 1e3;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    r->ms_step = t[reps / 2];
    if (cuda_sim_init(g, r->err, sizeof r->err) < 0) goto out;
    for (int64_t i = 0; i < 3; i++)
        if (cuda_sim_step(g, p->dt, r->err, sizeof r->err) < 0) goto out;
    int64_t cells = cuda_sim_cells(g);
    r->state = malloc(sizeof(double) * (size_t)(cells * p->n_fields));
    t0 = driver_now();
    for (int f = 0; f < p->n_fields; f++)
        if (cuda_sim_get_field(g, f, r->state + f * cells, r->err, sizeof r->err) < 0) goto out;
    *transfer_ms = (up + driver_now() - t0) * 1e3;
    r->ok = 1;
out:
    cuda_sim_destroy(g);
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
    double px[3][16], py[3][16];
    int pn[3] = {0, 0, 0};
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
    int use[3] = {0, 0, 0};
    char list[256];
    snprintf(list, sizeof list, "%s", backends);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        if (!strcmp(tok, "interp")) use[B_INTERP] = 1;
        else if (!strcmp(tok, "cpu")) use[B_CPU] = 1;
        else if (!strcmp(tok, "cuda")) use[B_CUDA] = 1;
        else { fprintf(stderr, "pdejit bench: unknown back end '%s'; back ends are interp, cpu, cuda\n", tok); return 2; }
    }
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
    cpu_backend *cb = NULL;
    printf("pdejit bench %s: %dD, %d field%s, %s (%d stage%s), %s precision\n", file, p->dim, p->n_fields,
           p->n_fields == 1 ? "" : "s", scheme_name(p->scheme), p->n_stages, p->n_stages == 1 ? "" : "s",
           single ? "single" : "double");
    if (use[B_CPU]) {
        /* cold: a private empty cache folder; hit: a second back end on the same folder */
        char tmpl[] = "/tmp/pdejit-bench-XXXXXX";
        char *dir = mkdtemp(tmpl);
        cpu_backend_options bo = {single, 0, dir};
        double cold = 0, hit = 0;
        int n_tm = 0;
        const kernel_timing *tm;
        cpu_backend *first = cpu_backend_create(&bo, err, sizeof err);
        if (!first || cpu_backend_prepare(first, p, err, sizeof err) < 0) {
            fprintf(stderr, "pdejit bench: cpu back end: %s\n", err);
            cpu_backend_destroy(first);
            program_free(p);
            return 1;
        }
        tm = cpu_backend_timings(first, &n_tm);
        for (int s = 0; s < n_tm; s++) cold += tm[s].ms;
        cb = cpu_backend_create(&bo, err, sizeof err);
        if (!cb || cpu_backend_prepare(cb, p, err, sizeof err) < 0) {
            fprintf(stderr, "pdejit bench: cpu back end: %s\n", err);
            cpu_backend_destroy(first);
            cpu_backend_destroy(cb);
            program_free(p);
            return 1;
        }
        int all_hit = 1;
        tm = cpu_backend_timings(cb, &n_tm);
        for (int s = 0; s < n_tm; s++) {
            hit += tm[s].ms;
            all_hit &= tm[s].from_cache;
        }
        cpu_backend_destroy(first);
        printf("compile (cpu): cold %.1f ms, cache hit %.2f ms%s (%d kernel%s, LLVM %s)\n", cold, hit,
               all_hit ? "" : " (not all from the cache)", p->n_stages, p->n_stages == 1 ? "" : "s", PJ_LLVM_VERSION);
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) { /* a leftover temporary folder is harmless */ }
    }
    if (use[B_CUDA]) {
        char reason[256];
        cuda_device *dev = cuda_device_open(0, reason, sizeof reason);
        if (!dev) {
            printf("cuda: not measured: no CUDA device: %s\n", reason);
            use[B_CUDA] = 0;
        } else {
            cuda_device_close(dev);
        }
    }
    int64_t gpu_from = -1; /* the smallest size from which the GPU wins, transfers included */
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
        run_result res[3];
        memset(res, 0, sizeof res);
        for (int b = 0; b < 3; b++) {
            if (!use[b]) continue;
            /* steps: ~0.2 s at a guessed speed, at least 2 */
            int64_t steps = steps_d > 0 ? (int64_t)steps_d : 0;
            if (!steps) {
                double guess = (b == B_INTERP ? 5e7 : 1e9) / (double)p->n_stages;
                steps = (int64_t)(0.2 * guess / (double)cells / 5);
                if (steps < 2) steps = 2;
                if (steps > 2000) steps = 2000;
            }
            if (b == B_INTERP && !steps_d && cells > (1 << 22)) steps = 1;
            double transfer_ms = 0;
            if (b == B_CUDA) run_cuda(p, single, steps, 5, &res[b], &transfer_ms);
            else run_backend(p, (bkind)b, single, (int)threads_d, steps, 5, cb, &res[b]);
            if (!res[b].ok) {
                printf("%10s %12lld  %-7s  failed: %s\n", label, (long long)cells, names[b], res[b].err);
                status = 1;
                continue;
            }
            double ms = res[b].ms_step;
            px[b][pn[b]] = (double)cells;
            py[b][pn[b]++] = (double)cells / ms * 1e-3;
            printf("%10s %12lld  %-7s %12.4f %10.1f %9.2f %14s\n", label, (long long)cells, names[b], ms,
                   (double)cells / ms * 1e-3, bpc * (double)cells / ms * 1e-6, b == B_INTERP ? "0 (oracle)" : "");
            if (b == B_CUDA) {
                printf("%10s %12s  %-7s %43s %10.3f ms\n", "", "", "cuda", "upload + download of every field:", transfer_ms);
                /* a run of `steps` steps, transfers included, against the CPU's */
                if (res[B_CPU].ok && gpu_from < 0 &&
                    ms + transfer_ms / (double)steps < res[B_CPU].ms_step)
                    gpu_from = sizes[si];
            }
        }
        if (use[B_INTERP] && use[B_CPU] && res[B_INTERP].ok && res[B_CPU].ok) {
            /* the largest difference after the same 3 steps from the initial state */
            run_result a, b;
            run_backend(p, B_INTERP, single, (int)threads_d, 3, 1, NULL, &a);
            run_backend(p, B_CPU, single, (int)threads_d, 3, 1, cb, &b);
            if (a.ok && b.ok)
                printf("%10s %12s  %-7s %43s %14.3g\n", "", "", "cpu", "largest relative difference from interp:",
                       max_rel_diff(a.state, b.state, cells * p->n_fields));
            free(a.state);
            free(b.state);
        }
        if (use[B_INTERP] && use[B_CUDA] && res[B_INTERP].ok && res[B_CUDA].ok) {
            run_result a;
            run_backend(p, B_INTERP, single, (int)threads_d, 3, 1, NULL, &a);
            if (a.ok)
                printf("%10s %12s  %-7s %43s %14.3g\n", "", "", "cuda", "largest relative difference from interp:",
                       max_rel_diff(a.state, res[B_CUDA].state, cells * p->n_fields));
            free(a.state);
        }
        for (int b = 0; b < 3; b++) free(res[b].state);
    }
    if (use[B_CUDA] && use[B_CPU])
        printf(gpu_from > 0 ? "the GPU is faster than the CPU from %lld cells per axis on, transfers included\n"
                            : "the GPU was not faster than the CPU at any size measured, transfers included\n",
               (long long)gpu_from);
    if (plot_path) {
        /* colours follow the back end: series b is back end b (empty ones draw nothing) */
        plot_series all[3] = {{"interp", px[0], py[0], pn[0]}, {"cpu", px[1], py[1], pn[1]}, {"cuda", px[2], py[2], pn[2]}};
        if (plot_png(plot_path, all, 3, err, sizeof err) < 0) fprintf(stderr, "pdejit bench: plot: %s\n", err);
        else printf("plot: %s (Mcells/s against cells, log-log; interp grey, cpu blue, cuda green)\n", plot_path);
    }
    cpu_backend_destroy(cb);
    program_free(p);
    return status;
}
