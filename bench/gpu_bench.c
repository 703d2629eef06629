/* gpu_bench.c — the GPU benchmark of bench/gpu-check.sh (built by `gpu-check.sh --build`).
 *
 *   gpu_bench [--problem FILE] [--sizes 1024,4096,8192,16384] [--report FILE.md]
 *       the 2D reaction-diffusion step (FILE, default samples/gray_scott.pde: two fields, rk2,
 *       periodic) at each size in double and single precision: time per step (CUDA events, best
 *       of 3 timings of ~0.25 s each), Mcups (million cell updates per second), GB/s (the bytes a
 *       fused step must move: each loaded slot/field once, each store, per stage) and the ratio
 *       to a cuMemcpyDtoD of the same bytes (read + write) measured in the same process; then
 *       stage block shapes at the largest size; NVRTC cold compile and cache hit in this process.
 *   gpu_bench --compile-probe DIR [--problem FILE] [--single]
 *       one sim on cache folder DIR; prints how its kernels were obtained (run twice on a fresh
 *       folder: a cold compile, then a cache hit in a fresh process).
 *
 * Exit status: 0, 1 on a failure, 3 when there is no CUDA device (the reason is printed). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cuda_backend.h"
#include "cuda_driver.h"
#include "driver.h"
#include "program.h"

static pj_program *load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "gpu_bench: cannot open %s\n", path);
        return NULL;
    }
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    diag d;
    diag_init(&d, path, text, n);
    pj_program *p = compile_problem(path, text, n, &d, NULL);
    if (!p && d.log) fputs(d.log, stderr);
    diag_free(&d);
    return p;
}

#define CHECK(call)                                                                              \
    do {                                                                                         \
        if ((call) < 0) {                                                                        \
            fprintf(stderr, "gpu_bench: %s: %s\n", #call, err);                                  \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

static FILE *g_report;

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
    if (g_report) {
        va_start(ap, fmt);
        vfprintf(g_report, fmt, ap);
        va_end(ap);
        fflush(g_report);
    }
}

/* Milliseconds per step: best of `reps` timings of `steps` steps. */
static double time_steps(cuda_sim *s, double dt, int64_t steps, int reps)
{
    char err[1024];
    cuda_device *d = cuda_sim_device(s);
    cuda_event *e0 = cuda_event_create(d, err, sizeof err), *e1 = cuda_event_create(d, err, sizeof err);
    if (!e0 || !e1) {
        fprintf(stderr, "gpu_bench: events: %s\n", err);
        exit(1);
    }
    double best = INFINITY;
    for (int r = 0; r < reps; r++) {
        CHECK(cuda_event_record(e0, err, sizeof err));
        for (int64_t i = 0; i < steps; i++) CHECK(cuda_sim_step(s, dt, err, sizeof err));
        CHECK(cuda_event_record(e1, err, sizeof err));
        float ms = 0;
        CHECK(cuda_event_elapsed(e0, e1, &ms, err, sizeof err));
        best = fmin(best, ms / (double)steps);
    }
    CHECK(cuda_sim_sync(s, err, sizeof err));
    cuda_event_destroy(e0);
    cuda_event_destroy(e1);
    return best;
}

/* Steps for ~target seconds, from a short timing. */
static int64_t steps_for(cuda_sim *s, double dt, double target)
{
    double ms = time_steps(s, dt, 3, 1);
    int64_t n = (int64_t)(target * 1e3 / fmax(ms, 1e-3));
    return n < 3 ? 3 : n > 4000 ? 4000 : n;
}

/* GB/s of cuMemcpyDtoD moving `bytes` (read + write), best of 3. */
static double copy_gbs(cuda_device *d, size_t bytes)
{
    char err[1024];
    size_t half = bytes / 2 / 256 * 256;
    cuda_ptr a = 0, b = 0;
    if (cuda_mem_alloc(d, half, &a, err, sizeof err) < 0 || cuda_mem_alloc(d, half, &b, err, sizeof err) < 0) {
        fprintf(stderr, "gpu_bench: copy buffers (%zu MiB): %s\n", half >> 20, err);
        cuda_mem_free(d, a, err, sizeof err);
        return NAN;
    }
    CHECK(cuda_memset8(d, a, 1, half, err, sizeof err));
    CHECK(cuda_memset8(d, b, 2, half, err, sizeof err));
    cuda_event *e0 = cuda_event_create(d, err, sizeof err), *e1 = cuda_event_create(d, err, sizeof err);
    CHECK(cuda_memcpy_dtod(d, b, a, half, err, sizeof err)); /* warm */
    CHECK(cuda_synchronize(d, err, sizeof err));
    int reps = (int)fmax(3, fmin(200, 0.1 / ((double)half * 2 / 3e12)));
    double best = 0;
    for (int r = 0; r < 3; r++) {
        CHECK(cuda_event_record(e0, err, sizeof err));
        for (int i = 0; i < reps; i++) CHECK(cuda_memcpy_dtod(d, b, a, half, err, sizeof err));
        CHECK(cuda_event_record(e1, err, sizeof err));
        float ms = 0;
        CHECK(cuda_event_elapsed(e0, e1, &ms, err, sizeof err));
        best = fmax(best, 2.0 * (double)half * reps / (ms * 1e-3) / 1e9);
    }
    cuda_event_destroy(e0);
    cuda_event_destroy(e1);
    cuda_mem_free(d, a, err, sizeof err);
    cuda_mem_free(d, b, err, sizeof err);
    return best;
}

static int compile_probe(const char *problem, const char *dir, int single)
{
    pj_program *p = load(problem);
    if (!p) return 1;
    char err[2048];
    cuda_sim_options o = {.single = single, .cache_dir = dir};
    double t0 = driver_now();
    cuda_sim *s = cuda_sim_create(p, &o, err, sizeof err);
    double ms = (driver_now() - t0) * 1e3;
    if (!s) {
        printf("gpu_bench: %s\n", err);
        program_free(p);
        return strncmp(err, CUDA_BACKEND_NO_DEVICE, strlen(CUDA_BACKEND_NO_DEVICE)) ? 1 : 3;
    }
    const cuda_prepare_stats *st = cuda_sim_prepare_stats(s);
    printf("compile-probe %s %s: %d kernels, %d from the cache, %d compiled, NVRTC %s, kernels ready in %.2f ms "
           "(NVRTC %.1f ms), whole create %.1f ms\n",
           problem, single ? "single" : "double", st->kernels, st->from_cache, st->compiled,
           st->nvrtc_loaded ? "loaded" : "not loaded", st->ms_total, st->ms_nvrtc, ms);
    cuda_sim_destroy(s);
    program_free(p);
    return 0;
}

int main(int argc, char **argv)
{
    const char *problem = "samples/gray_scott.pde", *report = NULL, *probe = NULL, *sizes_text = "1024,4096,8192,16384";
    int single_probe = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--problem") && i + 1 < argc) problem = argv[++i];
        else if (!strcmp(argv[i], "--report") && i + 1 < argc) report = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes_text = argv[++i];
        else if (!strcmp(argv[i], "--compile-probe") && i + 1 < argc) probe = argv[++i];
        else if (!strcmp(argv[i], "--single")) single_probe = 1;
        else {
            fprintf(stderr, "usage: gpu_bench [--problem FILE] [--sizes N,N...] [--report FILE]\n"
                            "       gpu_bench --compile-probe DIR [--problem FILE] [--single]\n");
            return 2;
        }
    }
    if (probe) return compile_probe(problem, probe, single_probe);
    if (report) g_report = fopen(report, "a");
    /* held for the whole run: the primary context then lives across the sims below */
    char hold_reason[512];
    cuda_device *hold = cuda_device_open(0, hold_reason, sizeof hold_reason);
    pj_program *p = load(problem);
    if (!p) return 1;
    if (p->dim != 2) fprintf(stderr, "gpu_bench: %s is %dD; sizes are per axis\n", problem, p->dim);
    int64_t sizes[8];
    int n_sizes = 0;
    {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", sizes_text);
        for (char *t = strtok(buf, ","); t && n_sizes < 8; t = strtok(NULL, ",")) sizes[n_sizes++] = atoll(t);
    }
    char err[2048], tmpl[] = "/tmp/pdejit-gpubench-XXXXXX";
    char *cache_dir = mkdtemp(tmpl);
    double dt = p->dt > 0 ? p->dt : 1e-3;

    /* compile: cold (empty folder) and cache hit, both precisions, at the smallest size */
    p->n[0] = p->n[1] = sizes[0];
    out("\n### NVRTC compile and cache (in process; kernels = init + stages + fills + check)\n\n");
    out("| precision | kernels | cold: ready in | of which NVRTC | cache hit: ready in | NVRTC loaded on hit |\n");
    out("|---|---|---|---|---|---|\n");
    for (int single = 0; single <= 1; single++) {
        cuda_sim_options o = {.single = single, .cache_dir = cache_dir};
        cuda_sim *a = cuda_sim_create(p, &o, err, sizeof err);
        if (!a) {
            out("cuda: not measured: %s\n", err);
            program_free(p);
            rmdir(cache_dir);
            cuda_device_close(hold);
            return strncmp(err, CUDA_BACKEND_NO_DEVICE, strlen(CUDA_BACKEND_NO_DEVICE)) ? 1 : 3;
        }
        if (!single) out("<!-- device: %s -->\n", cuda_sim_device_text(a));
        cuda_prepare_stats cold = *cuda_sim_prepare_stats(a);
        cuda_sim_destroy(a);
        cuda_sim *b = cuda_sim_create(p, &o, err, sizeof err);
        if (!b) {
            fprintf(stderr, "gpu_bench: %s\n", err);
            return 1;
        }
        const cuda_prepare_stats *hit = cuda_sim_prepare_stats(b);
        out("| %s | %d | %.1f ms | %.1f ms | %.2f ms (%d of %d from the cache) | %s |\n", single ? "single" : "double",
            cold.kernels, cold.ms_total, cold.ms_nvrtc, hit->ms_total, hit->from_cache, hit->kernels,
            hit->nvrtc_loaded ? "yes" : "no");
        cuda_sim_destroy(b);
    }

    out("\n### 2D reaction-diffusion step (%s, %s, %d stages), best of 3 timings\n\n", problem, scheme_name(p->scheme),
        p->n_stages);
    out("| size | precision | block | steps timed | ms/step | Mcups | GB/s | DtoD copy GB/s | ratio |\n");
    out("|---|---|---|---|---|---|---|---|---|\n");
    double last_ratio[2] = {NAN, NAN};
    for (int si = 0; si < n_sizes; si++) {
        p->n[0] = p->n[1] = sizes[si];
        for (int single = 0; single <= 1; single++) {
            cuda_sim_options o = {.single = single, .cache_dir = cache_dir};
            cuda_sim *s = cuda_sim_create(p, &o, err, sizeof err);
            if (!s) {
                out("| %lld^2 | %s | failed: %s |\n", (long long)sizes[si], single ? "single" : "double", err);
                continue;
            }
            CHECK(cuda_sim_init(s, err, sizeof err));
            int64_t cells = cuda_sim_cells(s);
            double bpc = cuda_sim_bytes_per_cell(s);
            int64_t steps = steps_for(s, dt, 0.25);
            double ms = time_steps(s, dt, steps, 3);
            sim_nan_report rep;
            int bad = cuda_sim_check_finite(s, &rep, err, sizeof err);
            double gbs = bpc * (double)cells / (ms * 1e-3) / 1e9;
            double cgbs = copy_gbs(cuda_sim_device(s), (size_t)(bpc * (double)cells));
            unsigned blk[3];
            cuda_sim_block(s, blk);
            out("| %lld^2 | %s | %ux%u | %lld | %.4f | %.0f | %.0f | %.0f | %.2f |%s\n", (long long)sizes[si],
                single ? "single" : "double", blk[0], blk[1], (long long)steps, ms, (double)cells / (ms * 1e-3) / 1e6, gbs,
                cgbs, gbs / cgbs, bad ? " (state not finite!)" : "");
            if (si == n_sizes - 1) last_ratio[single] = gbs / cgbs;
            if (si == n_sizes - 1) {
                /* block shapes at the largest size */
                static const unsigned shapes[][2] = {{32, 8}, {64, 4}, {128, 2}, {256, 1}, {32, 16}, {64, 8}, {128, 4}, {32, 4}};
                out("\n| %lld^2 %s: block | ms/step | GB/s | ratio to copy |\n|---|---|---|---|\n", (long long)sizes[si],
                    single ? "single" : "double");
                for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
                    unsigned b3[3] = {shapes[k][0], shapes[k][1], 1};
                    if (cuda_sim_set_block(s, b3, err, sizeof err) < 0) continue;
                    double m = time_steps(s, dt, steps / 2 > 3 ? steps / 2 : 3, 2);
                    double g = bpc * (double)cells / (m * 1e-3) / 1e9;
                    out("| %ux%u | %.4f | %.0f | %.2f |\n", b3[0], b3[1], m, g, g / cgbs);
                }
                out("\n");
            }
            cuda_sim_destroy(s);
        }
    }
    out("\nTarget: >= 0.85 of the copy bandwidth at the largest size: double %.2f, single %.2f: %s\n",
        last_ratio[0], last_ratio[1],
        last_ratio[0] >= 0.85 && last_ratio[1] >= 0.85 ? "met" : "NOT met (see the block shapes above)");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
    if (system(cmd) != 0) { /* a leftover temporary folder is harmless */ }
    program_free(p);
    cuda_device_close(hold);
    if (g_report) fclose(g_report);
    return 0;
}
