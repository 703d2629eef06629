/* test_gpu.c — the GPU back end (backends/cuda/cuda_backend.c) against the interpreter.
 *
 *   everywhere   emit prints the CUDA C of every kernel of every sample, and each compiles with
 *                NVRTC (skipped without NVRTC); with no device, cuda_sim_create says
 *                "no CUDA device: <cuda_device_open's reason>"; the cache key's components.
 *   emulated     the whole back end on the host (tests/gpu_emu/): a stand-in NVRTC compiles the generated CUDA C
 *                as C++ into a shared object, and a stand-in libcuda.so.1 (host memory, filled
 *                with NaN bytes at allocation; the "module" is that shared object) runs it thread
 *                by thread. PDEJIT_NVRTC and PDEJIT_LIBCUDA point cuda_driver.c at them. Skipped
 *                without a C and a C++ compiler.
 *   gpu          the same cases on device 0, plus a problem with more than 1 GB of fields: a
 *                ctest entry of its own (test_gpu --device: test_gpu_device), SKIPPED (exit 77)
 *                when no device opens; ctest's test_gpu is test_gpu --here (main, below).
 *   terms        pj_term_* on the device (options.on_device, runtime/term.c): cell and face terms
 *                on device arrays (and the derivative at the cell by each input, pj_term_jacobian)
 *                equal the CPU back end's term on the same values, in the
 *                emulation bit for bit (the same IEEE operations in the same order, no contraction
 *                on either side, the host's libm for both), on a GPU to 1e-12 (its libm); without
 *                a device, PJ_ERR_UNAVAILABLE with cuda_device_open's reason.
 *                Skipped, with cuda_device_open's reason, when no device opens.
 *
 * The table of cases (samples and the problems of solve.c) against the interpreter is
 * test_cases.c's, on every back end, the GPU's on a device and in the emulation. Here: a whole
 * run (snapshots, dump) matches driver_run's files; NaN/Inf reports name the same step, field and
 * cell as the interpreter's; device memory returns to its starting level; a second sim on the
 * same cache folder loads every kernel without loading NVRTC. */
#include "testutil.h"
#include "solve.h"
#include "pj_codegen_hash.h"
#include <limits.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "checkpoint.h"
#include "cache.h"
#include "cuda_backend.h"
#include "cuda_driver.h"
#include "driver.h"
#include "program.h"
#include "sim.h"

#ifndef PJ_SOURCE_DIR
#define PJ_SOURCE_DIR ".."
#endif

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- problems ---------------------------------------------------------------------------- */

static pj_program *compile_file(const char *path)
{
    size_t len = 0;
    char *src = tu_read_file(path, &len);
    assert_non_null(src);
    pj_program *p = compile_named(path, src);
    free(src);
    return p;
}

/* Blows up: the last cell first, after a number of steps that exact arithmetic fixes. */
static const char prob_blowup[] =
    "mesh grid(nx = 13, ny = 5, Lx = 1, Ly = 1)\n"
    "field u = 1 + x + 0.1*y\n"
    "field v = 0\n"
    "eq dt(u) = 40*u*u\n"
    "eq dt(v) = lap(v)\n"
    "periodic x, y\n"
    "time dt = 0.01, steps = 400, scheme = euler\n";

/* ---- where the back end runs ------------------------------------------------------------- */

typedef enum { ON_GPU, ON_EMU } where;

static char *g_emu_dir;        /* the stand-in libraries, when built */
static char g_emu_reason[512];
static int g_device_only;      /* test_gpu --device: the cases on device 0 only */
static char g_gpu_reason[512];
static cuda_device *g_gpu;     /* held open for the whole run: keeps the primary context */
static char *g_cache_dir;

/* Points cuda_driver.c at the stand-ins (ON_EMU) or at the real libraries (ON_GPU). */
static void use(where w) { tu_gpu_emulation_use(w == ON_EMU ? g_emu_dir : NULL); }

#define NEED(w)                                                                                  \
    do {                                                                                         \
        if ((w) == ON_GPU && !g_gpu) {                                                           \
            print_message("skipped: no GPU: %s\n", g_gpu_reason);                                \
            skip();                                                                              \
        }                                                                                        \
        if ((w) == ON_EMU && !g_emu_dir) {                                                       \
            print_message("skipped: %s\n", g_emu_reason);                                        \
            skip();                                                                              \
        }                                                                                        \
        use(w);                                                                                  \
    } while (0)

/* An engine of p on back end `name` (the GPU's with the test's cache folder). */
static engine *make_engine(const char *name, const pj_program *p)
{
    char err[1024];
    engine_options o = {.threads = 1, .cache_dir = g_cache_dir};
    engine *e = engine_create(engine_backend(name), p, &o, NULL, err, sizeof err);
    if (!e) print_error("engine_create(%s): %s\n", name, err);
    assert_non_null(e);
    assert_int_equal(engine_init(e, err, sizeof err), 0);
    return e;
}

static cuda_sim *make_sim(const pj_program *p, int single, const char *cache_dir)
{
    char err[1024];
    cuda_sim_options o = {.single = single, .cache_dir = cache_dir ? cache_dir : g_cache_dir};
    cuda_sim *s = cuda_sim_create(p, &o, err, sizeof err);
    if (!s) print_error("cuda_sim_create: %s\n", err);
    assert_non_null(s);
    return s;
}

#define OK(call)                                                                                 \
    do {                                                                                         \
        char err_[1024] = "";                                                                    \
        int rc_ = (call);                                                                        \
        if (rc_ < 0) print_error("%s: %s\n", #call, err_);                                      \
        assert_true(rc_ >= 0);                                                                   \
    } while (0)
#define E err_, sizeof err_

/* The largest difference between two fields: relative, or relative to the field's largest value
 * where both values are below 1e-6 of it (values that should be 0 and carry round-off). */
/* Steps p on the interpreter and on the GPU back end from the same initial state (engine.h);
 * compares every field. Returns the largest difference. */
static double agree(const pj_program *p, where w, int single, int64_t steps, const char *label, const char *sets)
{
    (void)w;
    engine_options o = {.single = single, .cache_dir = g_cache_dir};
    return program_agree(p, sets, "cuda", &o, steps, label);
}

/* ---- tests that run everywhere ----------------------------------------------------------- */

static int cmp_names(const void *a, const void *b) { return strcmp(a, b); }

static int list_samples(char names[][256], int max)
{
    DIR *d = opendir(PJ_SOURCE_DIR "/samples");
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".pde"))
            snprintf(names[n++], 256, "%s/samples/%.200s", PJ_SOURCE_DIR, e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_names);
    return n;
}

/* NVRTC compiles the first a_len bytes of a followed by the first b_len of b (a program named
 * `name` of `sample`); returns the seconds it took. */
static double nvrtc_compiles(cuda_nvrtc *nv, const char *sample, const char *name, const char *a, size_t a_len,
                             const char *b, size_t b_len)
{
    char *src = malloc(a_len + b_len + 1), err[1024];
    assert_non_null(src);
    memcpy(src, a, a_len);
    if (b_len) memcpy(src + a_len, b, b_len);
    src[a_len + b_len] = 0;
    void *img = NULL;
    size_t il = 0;
    int cub = 0;
    char *log = NULL;
    double t0 = now_s();
    int rc = cuda_nvrtc_compile(nv, src, name, 90, 0, &img, &il, &cub, &log, err, sizeof err);
    double t = now_s() - t0;
    if (rc) print_error("%s %s:\n%s\n%s\n", sample, name, err, src);
    assert_int_equal(rc, 0);
    free(img);
    free(log);
    free(src);
    return t;
}

/* emit prints every kernel in one translation unit; it compiles with NVRTC, and so does each
 * kernel after the unit's shared definitions (when NVRTC is here). */
static void emit_compiles(void **state)
{
    (void)state;
    use(ON_GPU);
    char reason[512];
    cuda_nvrtc *nv = cuda_nvrtc_open(reason, sizeof reason);
    if (!nv) print_message("NVRTC not found (%s): emitted code is not compiled\n", reason);
    char names[32][256];
    int n = list_samples(names, 32), compiled = 0;
    double t_nvrtc = 0;
    for (int i = 0; i < n; i++) {
        pj_program *p = compile_file(names[i]);
        for (int single = 0; single <= 1; single++) {
            char *text = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&text, &len);
            char err[1024];
            int rc = cuda_backend_emit(p, single, 0, f, err, sizeof err);
            fclose(f);
            if (rc) print_error("%s: %s\n", names[i], err);
            assert_int_equal(rc, 0);
            /* one kernel per stage, per side, the check and the init; the monitors: their reduction and its fold */
            int kernels = 0;
            for (const char *q = text; (q = strstr(q, "// ---- kernel ")); q++) kernels++;
            assert_int_equal(kernels, p->n_stages + 2 * p->dim + 1 + (p->init != NULL) + (p->reduce ? 2 : 0));
            assert_non_null(strstr(text, single ? "float" : "double"));
            /* one translation unit: the definitions the kernels share once, before the first kernel */
            const char *first = strstr(text, "// ---- kernel "), *args = strstr(text, "struct pj_args {");
            assert_true(first && args && args < first && !strstr(args + 1, "struct pj_args {"));
            if (nv) {
                /* the whole unit, then each kernel after those definitions (as NVRTC compiles it at run time) */
                t_nvrtc += nvrtc_compiles(nv, names[i], "pj_unit", text, strlen(text), NULL, 0);
                for (const char *q = first; q; q = strstr(q + 1, "// ---- kernel ")) {
                    char name[128];
                    assert_int_equal(sscanf(q + 15, "%127s", name), 1);
                    const char *src = strchr(q, '\n') + 1, *next = strstr(src, "// ---- kernel ");
                    if (!memcmp(src - 17, "the kernel above\n", 17)) continue; /* a second stage of one IR */
                    t_nvrtc += nvrtc_compiles(nv, names[i], name, text, (size_t)(first - text), src,
                                              next ? (size_t)(next - src) : strlen(src));
                    compiled++;
                }
            }
            free(text);
        }
        program_free(p);
    }
    if (nv) print_message("%d samples: %d kernels compile for sm_90 (%.0f ms in NVRTC)\n", n, compiled, t_nvrtc * 1e3);
    cuda_nvrtc_close(nv);
}

/* Without a usable driver: "no CUDA device: <reason>", and nothing is left allocated. */
static void no_device_reason(void **state)
{
    (void)state;
    pj_program *p = compile_file(PJ_SOURCE_DIR "/samples/robin.pde");
    setenv("PDEJIT_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    char err[1024] = "", reason[512] = "";
    cuda_device *d = cuda_device_open(0, reason, sizeof reason);
    assert_null(d);
    cuda_sim_options o = {0};
    cuda_sim *s = cuda_sim_create(p, &o, err, sizeof err);
    unsetenv("PDEJIT_LIBCUDA");
    assert_null(s);
    print_message("%s\n", err);
    assert_int_equal(strncmp(err, CUDA_BACKEND_NO_DEVICE, strlen(CUDA_BACKEND_NO_DEVICE)), 0);
    assert_string_equal(err + strlen(CUDA_BACKEND_NO_DEVICE), reason);
    /* and with the real search: a reason either way (a device here makes this a plain open) */
    s = cuda_sim_create(p, &o, err, sizeof err);
    if (!s) {
        print_message("here: %s\n", err);
        assert_int_equal(strncmp(err, CUDA_BACKEND_NO_DEVICE, strlen(CUDA_BACKEND_NO_DEVICE)), 0);
        assert_true(strlen(err) > strlen(CUDA_BACKEND_NO_DEVICE));
    }
    cuda_sim_destroy(s);
    program_free(p);
}

/* The key: every component named, each one changes the entry; explain names the difference. */
static void key_composition(void **state)
{
    (void)state;
    cuda_key_buf a, b;
    cuda_backend_key(&a, "0123456789abcdef0123456789abcdef", "stage", 90, "13.0", 13000, 0, 0, "src");
    static const char *const want[] = {"ir", "kind", "backend", "target", "nvrtc", "driver", "precision",
                                       "fast_math", "codegen", "build", "source"};
    assert_int_equal(a.key.n, 11);
    for (int i = 0; i < 11; i++) {
        int found = 0;
        for (int j = 0; j < a.key.n; j++) found |= !strcmp(a.key.names[j], want[i]);
        assert_true(found);
    }
    for (int j = 0; j < a.key.n; j++) {
        if (!strcmp(a.key.names[j], "target")) assert_string_equal(a.key.values[j], "sm_90");
        if (!strcmp(a.key.names[j], "backend")) assert_string_equal(a.key.values[j], "cuda");
        if (!strcmp(a.key.names[j], "driver")) assert_string_equal(a.key.values[j], "13000");
        if (!strcmp(a.key.names[j], "codegen")) assert_string_equal(a.key.values[j], PJ_CUDA_CODEGEN_VERSION);
        if (!strcmp(a.key.names[j], "build")) assert_string_equal(a.key.values[j], PJ_BUILD_HASH);
    }
    char *dir = tu_tempdir("gpu-key");
    cache *c = cache_open(dir, 0);
    assert_int_equal(cache_put(c, &a.key, "img", 4, "// cuda c", "cu"), 0);
    char why[1024];
    assert_int_equal(cache_explain(c, &a.key, why, sizeof why), 1);
    struct { const char *what; } diffs[] = {{"target"}, {"nvrtc"}, {"driver"}, {"precision"}, {"fast_math"}, {"source"}, {"ir"}};
    for (int i = 0; i < 7; i++) {
        cuda_backend_key(&b, i == 6 ? "ffff" : "0123456789abcdef0123456789abcdef", "stage", i == 0 ? 80 : 90,
                         i == 1 ? "12.9" : "13.0", i == 2 ? 12080 : 13000, i == 3, i == 4, i == 5 ? "src2" : "src");
        assert_int_equal(cache_explain(c, &b.key, why, sizeof why), 0);
        assert_non_null(strstr(why, diffs[i].what));
    }
    /* another build of pdejit compiled it: never loaded, and explain says so */
    b = a;
    for (int j = 0; j < b.key.n; j++)
        if (!strcmp(b.key.names[j], "build")) b.key.values[j] = "another";
    void *img = NULL;
    size_t img_len = 0;
    assert_int_equal(cache_get(c, &b.key, &img, &img_len), 0);
    assert_int_equal(cache_explain(c, &b.key, why, sizeof why), 0);
    assert_non_null(strstr(why, "(10 of 11 components shared) differs in build (another vs "));
    assert_non_null(strstr(why, "compiled by another build of pdejit"));
    /* the CUDA C is kept beside the entry */
    char cmd[700], *out = NULL;
    snprintf(cmd, sizeof cmd, "ls '%s'/*/*.cu", dir);
    assert_int_equal(tu_run(cmd, &out), 0);
    free(out);
    cache_close(c);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

/* ---- cases that run on a device (real or emulated) --------------------------------------- */

/* NaN/Inf: the same report as the interpreter's run, and an injected value at a known cell. */
static void nan_reports(where w)
{
    pj_program *p = compile_named("blowup.pde", prob_blowup);
    char err_ref[1024] = "", err_gpu[1024] = "";
    engine *ref = make_engine("interp", p), *ge = make_engine("cuda", p);
    driver_options o = {.dt = p->dt, .until = -1, .steps = p->steps, .check_every = 1};
    driver_result r1, r2;
    assert_int_equal(driver_run(ref, &o, &r1, err_ref, sizeof err_ref), 1);
    assert_int_equal(driver_run(ge, &o, &r2, err_gpu, sizeof err_gpu), 1);
    print_message("interp: %s\n%s:    %s\n", err_ref, w == ON_GPU ? "gpu" : "emu", err_gpu);
    assert_string_equal(err_gpu, err_ref);
    assert_int_equal(r1.steps, r2.steps);
    engine_destroy(ref);
    engine_destroy(ge);
    cuda_sim *g = make_sim(p, 0, NULL);
    /* inject: a NaN in field v at cell (7, 3), an Inf in field u at (2, 4) */
    OK(cuda_sim_init(g, E));
    sim_nan_report rep;
    memset(&rep, 0, sizeof rep);
    int64_t n = cuda_sim_cells(g);
    double *v = malloc(sizeof *v * (size_t)n);
    OK(cuda_sim_check_finite(g, &rep, E));
    {
        char err_[256];
        assert_int_equal(cuda_sim_check_finite(g, &rep, E), 0);
        assert_int_equal(cuda_sim_take_nonfinite(g, E), 0);
    }
    OK(cuda_sim_get_field(g, 1, v, E));
    v[7 + 13 * 3] = NAN;
    OK(cuda_sim_set_field(g, 1, v, E));
    {
        char err_[256];
        assert_int_equal(cuda_sim_check_finite(g, &rep, E), 1);
        assert_int_equal(rep.field, 1);
        assert_int_equal(rep.cell[0], 7);
        assert_int_equal(rep.cell[1], 3);
        assert_true(isnan(rep.value));
        OK(cuda_sim_get_field(g, 0, v, E));
        v[2 + 13 * 4] = -INFINITY;
        v[9 + 13 * 4] = NAN;
        OK(cuda_sim_set_field(g, 0, v, E));
        assert_int_equal(cuda_sim_check_finite(g, &rep, E), 1);
        assert_int_equal(rep.field, 0);
        assert_int_equal(rep.cell[0], 2);
        assert_int_equal(rep.cell[1], 4);
        assert_true(isinf(rep.value) && rep.value < 0);
        /* values set from the host raise no flag; a stage that stores them does, once */
        assert_int_equal(cuda_sim_take_nonfinite(g, E), 0);
        OK(cuda_sim_step(g, p->dt, E));
        assert_int_equal(cuda_sim_take_nonfinite(g, E), 1);
        assert_int_equal(cuda_sim_take_nonfinite(g, E), 0);
    }
    free(v);
    cuda_sim_destroy(g);
    program_free(p);
}

/* A whole run with snapshots and a dump writes the same files as driver_run. */
static void run_matches_driver(where w)
{
    pj_program *p = compile_file(PJ_SOURCE_DIR "/samples/robin.pde");
    char *dir = tu_tempdir("gpu-run");
    char out1[700], out2[700], dump1[700], dump2[700], err[1024];
    snprintf(out1, sizeof out1, "%s/interp", dir);
    snprintf(out2, sizeof out2, "%s/cuda", dir);
    snprintf(dump1, sizeof dump1, "%s/interp.csv", dir);
    snprintf(dump2, sizeof dump2, "%s/cuda.csv", dir);
    /* until 0.0105 with outputs every 0.005: shortened last steps land on 0.005, 0.01, 0.0105 */
    driver_options o = {.dt = p->dt, .until = w == ON_GPU ? 0.0305 : 0.0015, .steps = -1,
                        .output_every = w == ON_GPU ? 0.01 : 0.0005, .out_dir = out1, .formats = PJ_FMT_CSV,
                        .fields = p->output_fields, .n_fields = p->n_output_fields, .dump_path = dump1, .check_every = 3};
    engine *ref = make_engine("interp", p), *g = make_engine("cuda", p);
    driver_result r1, r2;
    assert_int_equal(driver_run(ref, &o, &r1, err, sizeof err), 0);
    o.out_dir = out2;
    o.dump_path = dump2;
    int rc = driver_run(g, &o, &r2, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(r1.steps, r2.steps);
    assert_int_equal(r1.snapshots, r2.snapshots);
    assert_true(r1.t == r2.t);
    print_message("run: %lld steps to t = %.9g, %d snapshots\n", (long long)r2.steps, r2.t, r2.snapshots);
    char cmd[3000], *out = NULL;
    snprintf(cmd, sizeof cmd, "diff -r '%s' '%s' && cmp '%s' '%s'", out1, out2, dump1, dump2);
    rc = tu_run(cmd, &out);
    if (rc) print_error("%s\n", out);
    free(out);
    assert_int_equal(rc, 0);
    engine_destroy(ref);
    engine_destroy(g);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
    program_free(p);
}

/* Device memory after destroy is what it was before create. */
static void memory_released(where w, cuda_device *d)
{
    char err[512];
    size_t free0 = 0, total = 0, free1 = 0, free2 = 0;
    assert_int_equal(cuda_mem_info(d, &free0, &total, err, sizeof err), 0);
    pj_program *p = compile_file(PJ_SOURCE_DIR "/samples/gray_scott.pde");
    if (w == ON_GPU) p->n[0] = p->n[1] = 2048;
    cuda_sim *g = make_sim(p, 0, NULL);
    OK(cuda_sim_init(g, E));
    for (int i = 0; i < (w == ON_GPU ? 20 : 1); i++) OK(cuda_sim_step(g, p->dt, E));
    OK(cuda_sim_sync(g, E));
    int n_allocs = 0;
    size_t held = cuda_sim_device_bytes(g, &n_allocs);
    assert_int_equal(n_allocs, p->n_slots * p->n_fields);
    /* the fields, and the check kernel's n_fields results plus the stage kernels' NaN/Inf flag */
    assert_int_equal(cuda_device_live_bytes(cuda_sim_device(g), NULL), held + sizeof(int64_t) * ((size_t)p->n_fields + 1));
    assert_int_equal(cuda_mem_info(d, &free1, &total, err, sizeof err), 0);
    cuda_sim_destroy(g);
    assert_int_equal(cuda_mem_info(d, &free2, &total, err, sizeof err), 0);
    print_message("device memory free: %zu MiB before, %zu MiB with the sim (%zu MiB of fields), %zu MiB after\n",
                  free0 >> 20, free1 >> 20, held >> 20, free2 >> 20);
    assert_true(free1 + held <= free0 + (4u << 20));
    assert_true(free2 + (8u << 20) >= free0);
    program_free(p);
}

/* The second sim on the same cache folder compiles nothing and never loads NVRTC. */
static void cache_hits_without_nvrtc(void)
{
    char *dir = tu_tempdir("gpu-cache");
    pj_program *p = compile_file(PJ_SOURCE_DIR "/samples/robin.pde");
    for (int single = 0; single <= 1; single++) {
        cuda_sim *a = make_sim(p, single, dir);
        const cuda_prepare_stats *sa = cuda_sim_prepare_stats(a);
        assert_int_equal(sa->compiled, sa->kernels);
        assert_int_equal(sa->from_cache, 0);
        assert_int_equal(sa->nvrtc_loaded, 1);
        double cold = sa->ms_total, nvrtc = sa->ms_nvrtc;
        cuda_sim *b = make_sim(p, single, dir);
        const cuda_prepare_stats *sb = cuda_sim_prepare_stats(b);
        print_message("%s: %d kernels: cold %.1f ms (NVRTC %.1f ms), cache hit %.2f ms; %s\n",
                      single ? "single" : "double", sb->kernels, cold, nvrtc, sb->ms_total, cuda_sim_device_text(b));
        assert_int_equal(sb->from_cache, sb->kernels);
        assert_int_equal(sb->compiled, 0);
        assert_int_equal(sb->nvrtc_loaded, 0);
        cuda_sim_destroy(a);
        cuda_sim_destroy(b);
    }
    /* the CUDA C beside the entries */
    char cmd[700], *out = NULL;
    snprintf(cmd, sizeof cmd, "ls '%s'/*/*.cu | wc -l", dir);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_true(atoi(out) >= 2 * (p->n_stages + 2 * p->dim + 2));
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
    program_free(p);
}

static void emu_nan_reports(void **state) { (void)state; NEED(ON_EMU); nan_reports(ON_EMU); }
static void emu_run_matches_driver(void **state) { (void)state; NEED(ON_EMU); run_matches_driver(ON_EMU); }
static void emu_cache_hits_without_nvrtc(void **state) { (void)state; NEED(ON_EMU); cache_hits_without_nvrtc(); }
static void emu_memory_released(void **state)
{
    (void)state;
    NEED(ON_EMU);
    char reason[512];
    cuda_device *d = cuda_device_open(0, reason, sizeof reason);
    assert_non_null(d);
    memory_released(ON_EMU, d);
    cuda_device_close(d);
}

/* Fields that do not fit in the device's free memory are refused before anything is allocated:
 * cuda_sim_create says grid_memory_check's numbers against the free memory less the margin (the
 * emulation has 16 GiB; an H200 141 GB: 3 fields of 60000^2 in RK4 need 345.8 GB on either), and
 * `pdejit run --backend cuda` exits 2 with it. */
static const char prob_too_large[] =
    "mesh grid(nx = 60000, ny = 60000)\nfield u = 1\nfield v = 0\nfield w = 0\n"
    "eq dt(u) = lap(u)\neq dt(v) = lap(v)\neq dt(w) = lap(w)\ntime dt = 0.001, steps = 2, scheme = rk4\n";

static void refuses_what_does_not_fit(where w)
{
    NEED(w);
    char reason[512], err[1024] = "";
    cuda_device *d = cuda_device_open(0, reason, sizeof reason);
    assert_non_null(d);
    size_t free0 = 0, total = 0;
    assert_int_equal(cuda_mem_info(d, &free0, &total, err, sizeof err), 0);
    char want[256];
    snprintf(want, sizeof want, "the problem needs 345.8 GB (12 buffers of 28.8 GB); %.1f GB are available on the device",
             ((double)free0 - 64.0 * 1024 * 1024) / 1e9);
    pj_program *p = compile_named("too_large.pde", prob_too_large);
    char *fresh = tu_tempdir("gpu-too-large-cache");
    cuda_sim_options o = {.cache_dir = fresh};
    cuda_sim *s = cuda_sim_create(p, &o, err, sizeof err);
    assert_null(s);
    assert_string_equal(err, want);
    /* no kernel compiled (none in its kernel cache), nothing allocated */
    char ls[1200], *found = NULL;
    snprintf(ls, sizeof ls, "find '%s' -type f -name '*.cu'; rm -rf '%s'", fresh, fresh);
    assert_int_equal(tu_run(ls, &found), 0);
    assert_string_equal(found, "");
    free(found);
    free(fresh);
    assert_int_equal(cuda_device_live_bytes(d, NULL), 0);
    program_free(p);
    cuda_device_close(d);
    char *dir = tu_tempdir("gpu-too-large"), path[1024], cmd[3072], *out = NULL;
    snprintf(path, sizeof path, "%s/too_large.pde", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(prob_too_large, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/cache %s run too_large.pde --backend cuda --out none", dir, dir,
             PJ_BINARY);
    assert_int_equal(tu_run(cmd, &out), 2);
    assert_non_null(strstr(out, "pdejit: too_large.pde: the problem needs 345.8 GB (12 buffers of 28.8 GB); "));
    assert_non_null(strstr(out, " GB are available on the device\n"));
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}
static void emu_refuses_what_does_not_fit(void **state) { (void)state; refuses_what_does_not_fit(ON_EMU); }
static void gpu_refuses_what_does_not_fit(void **state) { (void)state; refuses_what_does_not_fit(ON_GPU); }

/* The ghost-fill plan (grid.h): homogeneous fills on the device; a hook side too in the
 * emulation, whose device memory is host memory (a hook on a real device copies itself). */
static void emu_ghost_plan(void **state)
{
    (void)state;
    NEED(ON_EMU);
    engine_options o = {.cache_dir = g_cache_dir};
    check_ghost_plan("cuda", &o, 1);
}
static void gpu_ghost_plan(void **state)
{
    (void)state;
    NEED(ON_GPU);
    engine_options o = {.cache_dir = g_cache_dir};
    check_ghost_plan("cuda", &o, 0);
}

/* rand() and randn() (compiler/noise.h): the initial values and three rk2 steps on the device
 * and on the interpreter, with the same seed. The emulation: every bit agrees. A real device:
 * rand() (integers, an exact conversion, IEEE +-* without contraction) agrees to the bit;
 * randn() is made of integer operations and IEEE +-*, fma and sqrt too, so it should, but until
 * a real GPU has shown it the bound for randn() there stays 1e-12. */
static const char prob_noise_rand[] =
    "mesh grid(nx = 45, ny = 13, Lx = 1, Ly = 1)\n"
    "field u = rand()\nfield v = 0.3*rand() - 0.1\n"
    "eq dt(u) = 0.01*lap(u) + (rand() - 0.5) + 0.2*v\n"
    "eq dt(v) = div(0.01*rand()*grad(v)) - v\n"
    "on left: u = 1\n"
    "time dt = 0.001, steps = 3, scheme = rk2\n";
static const char prob_noise_randn[] =
    "mesh grid(nx = 21, ny = 6, nz = 5)\n"
    "field u = randn()\n"
    "eq dt(u) = 0.01*lap(u) + 0.5*randn() + 0.1*lap(randn())\n"
    "time dt = 0.001, steps = 3, scheme = rk2\n";

static void noise_bits(where w)
{
    const char *texts[] = {prob_noise_rand, prob_noise_randn};
    for (int t = 0; t < 2; t++) {
        pj_program *p = compile_named(t ? "noise_randn.pde" : "noise_rand.pde", texts[t]);
        int64_t n = p->n[0] * p->n[1] * p->n[2];
        for (int single = 0; single <= 1; single++)
            for (uint64_t seed = 3; seed <= 0x300000003ull; seed += 0x300000000ull) {
                double *ref = malloc(sizeof *ref * (size_t)n), *dev = malloc(sizeof *dev * (size_t)n);
                char err[1024];
                engine_options o = {.threads = 1, .cache_dir = g_cache_dir, .single = single, .seed = seed};
                engine *a = engine_create(engine_backend("interp"), p, &o, NULL, err, sizeof err);
                engine *g = engine_create(engine_backend("cuda"), p, &o, NULL, err, sizeof err);
                if (!a || !g) fail_msg("%s", err);
                assert_int_equal(engine_init(a, err, sizeof err), 0);
                assert_int_equal(engine_init(g, err, sizeof err), 0);
                for (int step = 0; step <= 3; step++) {
                    if (step) {
                        assert_int_equal(engine_step(a, p->dt, err, sizeof err), 0);
                        assert_int_equal(engine_step(g, p->dt, err, sizeof err), 0);
                    }
                    assert_int_equal(engine_sync(g, err, sizeof err), 0);
                    for (int f = 0; f < p->n_fields; f++) {
                        assert_int_equal(engine_get_field(a, f, ref, err, sizeof err), 0);
                        assert_int_equal(engine_get_field(g, f, dev, err, sizeof err), 0);
                        double d = field_diff(ref, dev, n, NULL);
                        if (w == ON_EMU || t == 0) {
                            if (memcmp(ref, dev, sizeof *ref * (size_t)n))
                                fail_msg("%s %s seed %llu step %d field %d: not the same bits (largest difference %.3g)",
                                         t ? "randn" : "rand", single ? "single" : "double", (unsigned long long)seed,
                                         step, f, d);
                        } else {
                            assert_true(d <= (single ? 1e-3 : 1e-12));
                        }
                    }
                }
                engine_destroy(a);
                engine_destroy(g);
                free(ref);
                free(dev);
            }
        program_free(p);
    }
}
/* A checkpoint of the device's state, resumed on a new simulation: the same bits after the
 * remaining steps as a run never stopped; a device checkpoint resumes on the interpreter, and a
 * CPU back end's checkpoint on the device, to the same bits (in the emulation; 1e-12 on a GPU). */
static void checkpoint_resume(where w)
{
    pj_program *p = compile_named("noise_rand.pde", prob_noise_rand);
    int64_t n = p->n[0] * p->n[1] * p->n[2];
    char err[1024], *dir = tu_tempdir("gpu-ck"), path[700];
    snprintf(path, sizeof path, "%s/%s", dir, CHECKPOINT_NAME);
    engine_options o = {.threads = 1, .cache_dir = g_cache_dir, .seed = 11};
    engine *full = engine_create(engine_backend("cuda"), p, &o, NULL, err, sizeof err);
    engine *half = engine_create(engine_backend("cuda"), p, &o, NULL, err, sizeof err);
    engine *again = engine_create(engine_backend("cuda"), p, &o, NULL, err, sizeof err);
    engine *host = engine_create(engine_backend("interp"), p, &o, NULL, err, sizeof err);
    /* and back: a checkpoint of the CPU back end's state resumed on the device */
    engine *cpu_half = engine_create(engine_backend("cpu"), p, &o, NULL, err, sizeof err);
    engine *back = engine_create(engine_backend("cuda"), p, &o, NULL, err, sizeof err);
    if (!full || !half || !again || !host || !cpu_half || !back) fail_msg("%s", err);
    char *dir2 = tu_tempdir("gpu-ck2"), path2[700];
    snprintf(path2, sizeof path2, "%s/%s", dir2, CHECKPOINT_NAME);
    assert_int_equal(engine_init(cpu_half, err, sizeof err), 0);
    assert_int_equal(engine_init(back, err, sizeof err), 0);
    for (int s = 0; s < 3; s++) assert_int_equal(engine_step(cpu_half, p->dt, err, sizeof err), 0);
    assert_int_equal(checkpoint_write(cpu_half, dir2, 11, 0, 0.01, err, sizeof err), 0);
    if (checkpoint_read(back, path2, 11, 0, NULL, err, sizeof err) < 0) fail_msg("%s", err);
    for (int s = 0; s < 3; s++) assert_int_equal(engine_step(back, p->dt, err, sizeof err), 0);
    assert_int_equal(engine_init(full, err, sizeof err), 0);
    assert_int_equal(engine_init(half, err, sizeof err), 0);
    assert_int_equal(engine_init(again, err, sizeof err), 0);
    assert_int_equal(engine_init(host, err, sizeof err), 0);
    for (int s = 0; s < 6; s++) assert_int_equal(engine_step(full, p->dt, err, sizeof err), 0);
    for (int s = 0; s < 3; s++) assert_int_equal(engine_step(half, p->dt, err, sizeof err), 0);
    assert_int_equal(checkpoint_write(half, dir, 11, 0, 0.01, err, sizeof err), 0);
    if (checkpoint_read(again, path, 11, 0, NULL, err, sizeof err) < 0) fail_msg("%s", err);
    if (checkpoint_read(host, path, 11, 0, NULL, err, sizeof err) < 0) fail_msg("%s", err);
    assert_int_equal(engine_steps(again), 3);
    for (int s = 0; s < 3; s++) {
        assert_int_equal(engine_step(again, p->dt, err, sizeof err), 0);
        assert_int_equal(engine_step(host, p->dt, err, sizeof err), 0);
    }
    double *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n), *c = malloc(sizeof *c * (size_t)n);
    for (int f = 0; f < p->n_fields; f++) {
        assert_int_equal(engine_get_field(full, f, a, err, sizeof err), 0);
        assert_int_equal(engine_get_field(again, f, b, err, sizeof err), 0);
        assert_int_equal(engine_get_field(host, f, c, err, sizeof err), 0);
        assert_memory_equal(a, b, sizeof *a * (size_t)n);
        if (w == ON_EMU) assert_memory_equal(a, c, sizeof *a * (size_t)n);
        else assert_true(field_diff(a, c, n, NULL) <= 1e-12);
        assert_int_equal(engine_get_field(back, f, c, err, sizeof err), 0);
        if (w == ON_EMU) assert_memory_equal(a, c, sizeof *a * (size_t)n);
        else assert_true(field_diff(a, c, n, NULL) <= 1e-12);
    }
    free(a);
    free(b);
    free(c);
    engine_destroy(full);
    engine_destroy(half);
    engine_destroy(again);
    engine_destroy(host);
    engine_destroy(cpu_half);
    engine_destroy(back);
    program_free(p);
    snprintf(path, sizeof path, "rm -rf '%s' '%s'", dir, dir2);
    free(dir2);
    tu_run(path, NULL);
    free(dir);
}
static void emu_checkpoint_resume(void **state) { (void)state; NEED(ON_EMU); checkpoint_resume(ON_EMU); }

/* Every field of a and b equal: bit for bit in the emulation, to 1e-12 on a GPU (its libm). */
static void fields_agree(engine *a, engine *b, where w)
{
    const pj_program *p = engine_program(a);
    int64_t n = engine_cells(a);
    char err[1024];
    double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    for (int f = 0; f < p->n_fields; f++) {
        assert_int_equal(engine_get_field(a, f, x, err, sizeof err), 0);
        assert_int_equal(engine_get_field(b, f, y, err, sizeof err), 0);
        if (w == ON_EMU) assert_memory_equal(x, y, sizeof *x * (size_t)n);
        else assert_true(field_diff(x, y, n, NULL) <= 1e-12);
    }
    free(x);
    free(y);
}

static void swap_to(engine *e, const pj_program *p2)
{
    char err[1024];
    void *k = engine_prepare(e, p2, NULL, err, sizeof err);
    if (!k) fail_msg("engine_prepare: %s", err);
    if (engine_swap(e, p2, k, err, sizeof err) < 0) fail_msg("engine_swap: %s", err);
}

/* Hot swap on the device (engine_prepare, engine_swap): the new program runs from the next step
 * with the fields' state, its own conditions and monitors, the params the user set kept, as on
 * the interpreter; a program the device cannot run is refused and the old one goes on; 1000 swaps
 * leave the device's free memory where it was (the old kernels and buffers released). */
static const char prob_swap_a[] = "mesh grid(nx = 16, ny = 8)\nparam k = 1\nfield u = x*y\n"
                                  "eq dt(u) = 0.01*lap(u) + k*u*(1 - u)\non left: u = 0\ntime dt = 0.01, steps = 10\n";
static const char prob_swap_b[] = "mesh grid(nx = 16, ny = 8)\nparam k = 1\nfield u = x*y\n"
                                  "eq dt(u) = 0.02*lap(u) - k*u\non left: u = 1\non bottom: u = 0.5\n"
                                  "monitor total = integral(u), top = maxval(u)\ntime dt = 0.01, steps = 10\n";
static void hot_swap(where w)
{
    pj_program *pa = compile_named("a.pde", prob_swap_a), *pb = compile_named("b.pde", prob_swap_b);
    pj_program *pc = compile_named("c.pde", "mesh grid(nx = 16, ny = 8)\nparam k = 1\nfield u = x*y\n"
                                            "eq dt(u) = 0.01*lap(u)\non left: u = 0\n"
                                            "time dt = 0.01, steps = 10, scheme = beuler\n");

    engine *g = make_engine("cuda", pa), *h = make_engine("interp", pa);
    char err[1024];
    assert_true(engine_can_swap(g));
    for (int s = 0; s < 3; s++) {
        assert_int_equal(engine_step(g, pa->dt, err, sizeof err), 0);
        assert_int_equal(engine_step(h, pa->dt, err, sizeof err), 0);
    }
    assert_int_equal(engine_set_param(g, "k", 2), 0);
    assert_int_equal(engine_set_param(h, "k", 2), 0);
    swap_to(g, pb);
    swap_to(h, pb);
    assert_true(engine_params(g)[0] == 2);
    for (int s = 0; s < 4; s++) {
        assert_int_equal(engine_step(g, pb->dt, err, sizeof err), 0);
        assert_int_equal(engine_step(h, pb->dt, err, sizeof err), 0);
    }
    fields_agree(g, h, w);
    double mg[2], mh[2];
    assert_int_equal(engine_reduce(g, mg, err, sizeof err), 0);
    assert_int_equal(engine_reduce(h, mh, err, sizeof err), 0);
    for (int i = 0; i < 2; i++) assert_true(w == ON_EMU ? mg[i] == mh[i] : fabs(mg[i] - mh[i]) <= 1e-12 * fabs(mh[i]));
    /* an implicit scheme: the device cannot solve it yet; nothing changes */
    assert_null(engine_prepare(g, pc, NULL, err, sizeof err));
    assert_string_equal(err, "the cuda back end cannot solve implicit schemes or steady problems yet (beuler): use --backend cpu");
    assert_ptr_equal(engine_program(g), pb);
    /* memory: flat over 1000 swaps */
    char reason[512];
    cuda_device *d = cuda_device_open(0, reason, sizeof reason);
    assert_non_null(d);
    size_t free0 = 0, free1 = 0, total = 0;
    assert_int_equal(engine_sync(g, err, sizeof err), 0);
    assert_int_equal(cuda_mem_info(d, &free0, &total, err, sizeof err), 0);
    for (int i = 0; i < 1000; i++) {
        swap_to(g, i % 2 ? pb : pa);
        assert_int_equal(engine_step(g, pa->dt, err, sizeof err), 0);
    }
    swap_to(g, pb);
    assert_int_equal(engine_sync(g, err, sizeof err), 0);
    assert_int_equal(cuda_mem_info(d, &free1, &total, err, sizeof err), 0);
    print_message("device memory free before and after 1000 swaps: %zu, %zu bytes\n", free0, free1);
    if (w == ON_EMU) assert_true(free1 == free0);
    else assert_true(free1 + (4u << 20) >= free0);
    cuda_device_close(d);
    engine_destroy(g);
    engine_destroy(h);
    program_free(pa);
    program_free(pb);
    program_free(pc);
}
static void emu_hot_swap(void **state) { (void)state; NEED(ON_EMU); hot_swap(ON_EMU); }
static void gpu_hot_swap(void **state) { (void)state; NEED(ON_GPU); hot_swap(ON_GPU); }

/* Second boundary conditions (on left: u = 0, lap(u) = ...) on the device: the fill of ghost
 * layer 2 as the host's (sim_fill_axis), in double and single, on both axes, values in t and the
 * coordinates; then a hot swap to other values of lap(u), the fields kept. The emulation gives the
 * interpreter's bits. */
static const char prob_second_bc[] =
    "mesh grid(nx = 16, ny = 8)\nparam k = 1\nfield u = x*y + sin(5*x)\n"
    "eq dt(u) = -1e-6*lap(lap(u)) + 0.01*lap(u) - k*u\n"
    "on left: u = 0, lap(u) = 0\non right: u + 0.2*dn(u) = y, lap(u) = 3*y - t\n"
    "on top: u = 0.5*x, lap(u) = x + t\ntime dt = 0.01, steps = 10, scheme = rk2\n";
static void second_bc(where w)
{
    pj_program *p = compile_named("d.pde", prob_second_bc);
    char text[1024], err[1024];
    snprintf(text, sizeof text, "%s", prob_second_bc);
    char *at = strstr(text, "lap(u) = x + t");
    assert_non_null(at);
    memcpy(at, "lap(u) = 2 - x", 14);
    pj_program *p2 = compile_named("d2.pde", text);
    for (int single = 0; single <= 1; single++) {
        engine_options o = {.threads = 1, .cache_dir = g_cache_dir, .single = single};
        engine *g = engine_create(engine_backend("cuda"), p, &o, NULL, err, sizeof err);
        engine *h = engine_create(engine_backend("interp"), p, &o, NULL, err, sizeof err);
        if (!g || !h) fail_msg("%s", err);
        assert_int_equal(engine_init(g, err, sizeof err), 0);
        assert_int_equal(engine_init(h, err, sizeof err), 0);
        for (int round = 0; round < 2; round++) {
            if (round) {
                swap_to(g, p2);
                swap_to(h, p2);
            }
            for (int s = 0; s < 4; s++) {
                assert_int_equal(engine_step(g, p->dt, err, sizeof err), 0);
                assert_int_equal(engine_step(h, p->dt, err, sizeof err), 0);
            }
            int64_t n = engine_cells(g);
            double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
            assert_int_equal(engine_get_field(g, 0, x, err, sizeof err), 0);
            assert_int_equal(engine_get_field(h, 0, y, err, sizeof err), 0);
            double d = field_diff(x, y, n, NULL);
            print_message("second conditions, %s, %s: largest difference %.3g\n", single ? "single" : "double",
                          round ? "after a swap" : "before a swap", d);
            if (w == ON_EMU) assert_memory_equal(x, y, sizeof *x * (size_t)n);
            else assert_true(d <= (single ? 1e-5 : 1e-12));
            free(x);
            free(y);
        }
        engine_destroy(g);
        engine_destroy(h);
    }
    program_free(p);
    program_free(p2);
}
static void emu_second_bc(void **state) { (void)state; NEED(ON_EMU); second_bc(ON_EMU); }
static void gpu_second_bc(void **state) { (void)state; NEED(ON_GPU); second_bc(ON_GPU); }
static void gpu_checkpoint_resume(void **state) { (void)state; NEED(ON_GPU); checkpoint_resume(ON_GPU); }

static void emu_noise_bits(void **state) { (void)state; NEED(ON_EMU); noise_bits(ON_EMU); }
static void gpu_noise_bits(void **state) { (void)state; NEED(ON_GPU); noise_bits(ON_GPU); }

static void gpu_nan_reports(void **state) { (void)state; NEED(ON_GPU); nan_reports(ON_GPU); }
static void gpu_run_matches_driver(void **state) { (void)state; NEED(ON_GPU); run_matches_driver(ON_GPU); }
static void gpu_cache_hits_without_nvrtc(void **state) { (void)state; NEED(ON_GPU); cache_hits_without_nvrtc(); }
static void gpu_memory_released(void **state) { (void)state; NEED(ON_GPU); memory_released(ON_GPU, g_gpu); }

/* More than 1 GB of fields: a few steps, compared with the interpreter on every core. */
static void gpu_large_problem(void **state)
{
    (void)state;
    NEED(ON_GPU);
    char err[1024];
    size_t free0 = 0, total = 0;
    assert_int_equal(cuda_mem_info(g_gpu, &free0, &total, err, sizeof err), 0);
    pj_program *p = compile_file(PJ_SOURCE_DIR "/samples/gray_scott.pde");
    p->n[0] = p->n[1] = 6144; /* 2 fields x 2 slots x 8 B x 6144^2 = 1.2 GB */
    double need = 4.0 * 8.0 * 6144.0 * 6144.0;
    if ((double)free0 < 1.5 * need) {
        print_message("skipped: %.1f GiB free on the device; the case needs %.1f GiB\n", (double)free0 / 1073741824.0,
                      1.5 * need / 1073741824.0);
        program_free(p);
        skip();
    }
    double t0 = now_s();
    cuda_sim *g = make_sim(p, 0, NULL);
    size_t held = cuda_sim_device_bytes(g, NULL);
    assert_true(held > 1000000000u);
    cuda_sim_destroy(g);
    double d = agree(p, ON_GPU, 0, 3, "gray_scott 6144^2", NULL);
    print_message("gray_scott at 6144^2 (%.2f GB of fields): largest difference %.3g after 3 steps (%.1f s)\n",
                  (double)held / 1e9, d, now_s() - t0);
    assert_true(d <= 1e-12);
    size_t free1 = 0;
    assert_int_equal(cuda_mem_info(g_gpu, &free1, &total, err, sizeof err), 0);
    assert_true(free1 + (8u << 20) >= free0);
    program_free(p);
}

static int setup(void **state)
{
    (void)state;
    unsetenv("PDEJIT_LIBCUDA");
    g_gpu = cuda_device_open(0, g_gpu_reason, sizeof g_gpu_reason);
    if (g_gpu)
        print_message("GPU: %s (compute capability %d.%d)\n", cuda_device_name(g_gpu), cuda_device_cc(g_gpu) / 10,
                      cuda_device_cc(g_gpu) % 10);
    else print_message("no GPU: %s\n", g_gpu_reason);
    if (!g_device_only && !(g_emu_dir = tu_gpu_emulation_build(g_emu_reason, sizeof g_emu_reason)))
        print_message("no host emulation: %s\n", g_emu_reason);
    g_cache_dir = tu_tempdir("gpu-cache-main");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cuda_device_close(g_gpu);
    char cmd[1400];
    if (g_emu_dir) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_emu_dir);
        tu_run(cmd, NULL);
    }
    if (g_cache_dir) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_cache_dir);
        tu_run(cmd, NULL);
    }
    free(g_emu_dir);
    free(g_cache_dir);
    return 0;
}

/* The command on the device (or the stand-in): `pdejit run --backend cuda` dumps what the
 * interpreter dumps; `pdejit bench` prints the cuda rows; without a device it exits 2 and says why. */
static void command_line(where w)
{
    NEED(w);
    use(w);
    char bin[PATH_MAX], src[PATH_MAX];
    if (!realpath(PJ_BINARY, bin) || !realpath(PJ_SOURCE_DIR, src)) {
        print_message("skipped: the pdejit command (%s) is not here\n", PJ_BINARY);
        skip();
    }
    char dir[] = "/tmp/pdejit-gpu-cli-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cmd[6 * PATH_MAX + 1024], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "cd %s && PDEJIT_CACHE_DIR=%s/cache %s run %s/samples/gray_scott.pde --steps 50 --out none --backend interp "
             "--dump interp.csv && PDEJIT_CACHE_DIR=%s/cache %s run %s/samples/gray_scott.pde --steps 50 --out none "
             "--backend cuda --verbose --dump cuda.csv && cmp interp.csv cuda.csv && echo SAME",
             dir, dir, bin, src, dir, bin, src);
    int rc = tu_run(cmd, &out);
    if (rc != 0 || !strstr(out, "SAME")) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "SAME"));
    free(out);
    /* cache explain on the device: every kernel the run loaded hits; another key says what differs */
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/cache %s cache explain %s/samples/gray_scott.pde --backend cuda",
             dir, dir, bin, src);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_null(strstr(out, "miss"));
    assert_non_null(strstr(out, "stage "));
    assert_non_null(strstr(out, "fill "));
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/cache %s cache explain %s/samples/gray_scott.pde --backend cuda "
             "--fast-math", dir, dir, bin, src);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_non_null(strstr(out, "differs in fast_math (1 vs 0)"));
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/cache %s bench %s/samples/gray_scott.pde --backends interp,cpu,cuda "
             "--sizes 16,32 --steps 3 --plot none", dir, dir, bin, src);
    rc = tu_run(cmd, &out);
    if (rc != 0) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, " cuda "));
    assert_non_null(strstr(out, "upload + download of every field"));
    free(out);
    /* --watch on the device: an edit is swapped in while the run goes on (then SIGTERM) */
    snprintf(cmd, sizeof cmd,
             "cd %s && printf 'mesh grid(nx = 32)\\nfield u = x\\neq dt(u) = 0.1*lap(u)\\ntime dt = 1e-4, steps = 100000000\\n' "
             "> w.pde && (PDEJIT_CACHE_DIR=%s/cache %s run w.pde --backend cuda --watch --out none 2> w.log & pid=$!; "
             "i=0; until grep -q watching w.log || ! kill -0 $pid 2>/dev/null || [ $i -gt 900 ]; do sleep 0.1; i=$((i+1)); done; "
             "sed -i 's/0.1[*]lap/0.2*lap/' w.pde; "
             "i=0; until grep -q 'changed: swapped in' w.log || ! kill -0 $pid 2>/dev/null || [ $i -gt 900 ]; do sleep 0.1; "
             "i=$((i+1)); done; "
             "kill -TERM $pid; wait $pid; cat w.log)", dir, dir, bin);
    rc = tu_run(cmd, &out);
    if (!strstr(out, "w.pde changed: swapped in the new definition")) fprintf(stderr, "%s\n", out);
    assert_non_null(strstr(out, "w.pde changed: swapped in the new definition"));
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    tu_run(cmd, NULL);
}
static void emu_command_line(void **state) { (void)state; command_line(ON_EMU); }
static void gpu_command_line(void **state) { (void)state; command_line(ON_GPU); }

static void no_device_command_line(void **state)
{
    (void)state;
    if (g_gpu) skip();
    use(ON_GPU); /* the real libraries: here, none */
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s run %s/samples/fisher.pde --backend cuda --out none", PJ_BINARY, PJ_SOURCE_DIR);
    assert_int_equal(tu_run(cmd, &out), 2);
    assert_non_null(strstr(out, "pdejit: no CUDA device: "));
    free(out);
    snprintf(cmd, sizeof cmd, "%s emit %s/samples/gray_scott.pde --cuda", PJ_BINARY, PJ_SOURCE_DIR);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_non_null(strstr(out, "extern \"C\" __global__ void"));
    free(out);
}

/* ---- terms on the device (pj_term_*, options.on_device) ---------------------------------- */

typedef struct term_case {
    const char *expr;
    int dim;
    int64_t n[3];
    pj_term_boundary b[3];
    pj_term_at at;
} term_case;

static pj_term *term_make_prec(const term_case *c, int on_device, int single, pj_status *st, char **diag)
{
    static const char *const fields[] = {"u", "v"};
    static const char *const params[] = {"D", "k"};
    static const double values[] = {0.7, 3.0};
    pj_term_options o = {.dim = c->dim, .n = {c->n[0], c->n[1], c->n[2]}, .h = {0.1, 0.25, 0.5}, .n_fields = 2,
                         .fields = fields, .n_params = 2, .params = params, .param_values = values, .threads = 1,
                         .definitions = "func f(s) = s*(1 - s)", .at = c->at, .on_device = on_device,
                         .single = single};
    for (int a = 0; a < 3; a++) o.boundary[a] = c->b[a];
    pj_term *t = NULL;
    *diag = NULL;
    *st = pj_term_compile(c->expr, &o, &t, diag);
    return t;
}

static pj_term *term_make(const term_case *c, int on_device, pj_status *st, char **diag)
{
    return term_make_prec(c, on_device, 0, st, diag);
}

/* n doubles to a fresh device allocation */
static cuda_ptr dev_upload(cuda_device *d, const double *x, int64_t n)
{
    cuda_ptr p = 0;
    OK(cuda_mem_alloc(d, sizeof(double) * (size_t)n, &p, E));
    OK(cuda_memcpy_htod(d, p, x, sizeof(double) * (size_t)n, E));
    return p;
}

/* the largest difference, relative to max(1, |expected|); -1 when the bits differ nowhere */
static double compare(const double *got, const double *want, int64_t n, int64_t *where_)
{
    if (!memcmp(got, want, sizeof(double) * (size_t)n)) return -1;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double m = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
        double d = got[i] == want[i] ? 0 : isnan(got[i]) || isnan(want[i]) ? INFINITY : fabs(got[i] - want[i]) / m;
        if (d > worst || (d == 0 && worst == 0 && memcmp(&got[i], &want[i], 8))) {
            worst = d;
            *where_ = i;
        }
    }
    return worst;
}

static void terms_agree(where w)
{
    NEED(w);
    setenv("PDEJIT_CACHE_DIR", g_cache_dir, 1);
    char reason[512];
    cuda_device *d = cuda_device_open(0, reason, sizeof reason);
    if (!d) print_error("cuda_device_open: %s\n", reason);
    assert_non_null(d);
    size_t free0 = 0, total = 0;
    OK(cuda_mem_info(d, &free0, &total, E));
    static const term_case cases[] = {
        /* lap and a conditional, zero-flux walls */
        {"D*lap(u) + (u > 0.5 ? k*f(u) : -v)", 2, {37, 23, 1}, {PJ_TERM_ZERO_FLUX, PJ_TERM_ZERO_FLUX}, PJ_TERM_CELLS},
        /* neighbour offsets, coordinates, t; periodic along x, zero flux along y */
        {"u[1, 0] - 2*u[-1, 1] + v[0, -1]*x + y*t", 2, {40, 9, 1}, {PJ_TERM_PERIODIC, PJ_TERM_ZERO_FLUX}, PJ_TERM_CELLS},
        /* halo 2, periodic, 1D; a libm function */
        {"lap(u) + u[2]*u[-2] + exp(-v*v)", 1, {50, 1, 1}, {PJ_TERM_PERIODIC}, PJ_TERM_CELLS},
        /* 3D: every axis, both treatments */
        {"div(D*grad(u)) * v + u[0, 0, 1] - (v < 0.3 ? u[0, -1, 0] : 0)", 3, {9, 7, 5},
         {PJ_TERM_ZERO_FLUX, PJ_TERM_PERIODIC, PJ_TERM_ZERO_FLUX}, PJ_TERM_CELLS},
        /* face terms: every axis's faces, boundary faces included */
        {"harm(v)*grad(u) + u - L(u)*R(v) + 10*boundary", 2, {12, 7, 1}, {PJ_TERM_ZERO_FLUX, PJ_TERM_PERIODIC},
         PJ_TERM_FACES},
        {"D*grad(u) + (u > 0.5 ? L(v) : R(v)) + x - 2*z", 3, {6, 5, 4}, {PJ_TERM_PERIODIC, PJ_TERM_ZERO_FLUX,
         PJ_TERM_ZERO_FLUX}, PJ_TERM_FACES},
        {"upwind(u, v) + grad(v)", 1, {17, 1, 1}, {PJ_TERM_ZERO_FLUX}, PJ_TERM_FACES},
    };
    double worst_all = 0;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const term_case *tc = &cases[c];
        pj_status st;
        char *diag = NULL;
        pj_term *host = term_make(tc, 0, &st, &diag);
        if (st != PJ_OK) print_error("case %zu (cpu): %s\n", c, diag ? diag : "");
        assert_int_equal(st, PJ_OK);
        free(diag);
        pj_term *dev = term_make(tc, 1, &st, &diag);
        if (st != PJ_OK) print_error("case %zu (cuda): %s\n", c, diag ? diag : "");
        assert_int_equal(st, PJ_OK);
        free(diag);
        int64_t cells = tc->n[0] * tc->n[1] * tc->n[2];
        double *u = malloc(sizeof(double) * (size_t)cells), *v = malloc(sizeof(double) * (size_t)cells);
        assert_true(u && v);
        for (int64_t i = 0; i < cells; i++) {
            u[i] = 0.5 + 0.45 * sin(0.37 * (double)i + 0.1 * (double)c);
            v[i] = 0.5 + 0.4 * cos(0.91 * (double)i);
        }
        cuda_ptr du = dev_upload(d, u, cells), dv = dev_upload(d, v, cells);
        const double *hin[2] = {u, v};
        const double *din[2] = {(const double *)(uintptr_t)du, (const double *)(uintptr_t)dv};
        char err[1024] = "";
        for (int round = 0; round < 2; round++) {
            double time = 0.25 + round;
            if (round == 1) { /* a param changed: no recompile, the new value on both */
                assert_int_equal(pj_term_set_param(host, "D", 1.9), PJ_OK);
                assert_int_equal(pj_term_set_param(dev, "D", 1.9), PJ_OK);
            }
            int n_out = tc->at == PJ_TERM_FACES ? tc->dim : 1;
            for (int a = 0; a < n_out; a++) {
                int64_t count = tc->at == PJ_TERM_FACES ? pj_term_face_count(host, a) : cells;
                assert_int_equal(count, tc->at == PJ_TERM_FACES ? pj_term_face_count(dev, a) : cells);
            }
            double *want[3] = {0}, *got = NULL;
            cuda_ptr dout[3] = {0};
            for (int a = 0; a < n_out; a++) {
                int64_t count = tc->at == PJ_TERM_FACES ? pj_term_face_count(host, a) : cells;
                want[a] = malloc(sizeof(double) * (size_t)count);
                double *nan_fill = malloc(sizeof(double) * (size_t)count);
                for (int64_t i = 0; i < count; i++) nan_fill[i] = NAN;
                dout[a] = dev_upload(d, nan_fill, count); /* every value must be written */
                free(nan_fill);
            }
            double *dptr_out[3] = {(double *)(uintptr_t)dout[0], (double *)(uintptr_t)dout[1], (double *)(uintptr_t)dout[2]};
            if (tc->at == PJ_TERM_FACES) {
                assert_int_equal(pj_term_eval_faces(host, hin, time, want, err, sizeof err), PJ_OK);
                st = pj_term_eval_faces(dev, din, time, dptr_out, err, sizeof err);
            } else {
                assert_int_equal(pj_term_eval(host, hin, time, want[0], err, sizeof err), PJ_OK);
                st = pj_term_eval(dev, din, time, dptr_out[0], err, sizeof err);
            }
            if (st != PJ_OK) print_error("case %zu: %s\n", c, err);
            assert_int_equal(st, PJ_OK);
            for (int a = 0; a < n_out; a++) {
                int64_t count = tc->at == PJ_TERM_FACES ? pj_term_face_count(host, a) : cells, at = 0;
                got = malloc(sizeof(double) * (size_t)count);
                OK(cuda_memcpy_dtoh(d, got, dout[a], sizeof(double) * (size_t)count, E));
                double diff = compare(got, want[a], count, &at);
                if (diff >= 0)
                    print_message("case %zu (%s) round %d axis %d: largest difference %.3g at %lld: %.17g vs %.17g\n",
                                  c, tc->expr, round, a, diff, (long long)at, got[at], want[a][at]);
                if (w == ON_EMU) assert_true(diff < 0); /* the same bits */
                else assert_true(diff <= 1e-12);
                if (diff > worst_all) worst_all = diff;
                free(got);
                free(want[a]);
                OK(cuda_mem_free(d, dout[a], E));
            }
        }
        if (tc->at == PJ_TERM_CELLS) {
            /* the derivative at the cell by each input: derive.c's kernel on the device */
            for (int f = 0; f < 2; f++) {
                double *want = malloc(sizeof(double) * (size_t)cells), *got = malloc(sizeof(double) * (size_t)cells);
                for (int64_t i = 0; i < cells; i++) got[i] = NAN;
                cuda_ptr dj = dev_upload(d, got, cells);
                const char *name = f ? "v" : "u";
                assert_int_equal(pj_term_jacobian(host, name, hin, 0.5, want, err, sizeof err), PJ_OK);
                st = pj_term_jacobian(dev, name, din, 0.5, (double *)(uintptr_t)dj, err, sizeof err);
                if (st != PJ_OK) print_error("case %zu jacobian %s: %s\n", c, name, err);
                assert_int_equal(st, PJ_OK);
                OK(cuda_memcpy_dtoh(d, got, dj, sizeof(double) * (size_t)cells, E));
                int64_t at = 0;
                double diff = compare(got, want, cells, &at);
                if (diff >= 0)
                    print_message("case %zu jacobian by %s: largest difference %.3g at %lld: %.17g vs %.17g\n", c, name,
                                  diff, (long long)at, got[at], want[at]);
                assert_true(w == ON_EMU ? diff < 0 : diff <= 1e-12);
                OK(cuda_mem_free(d, dj, E));
                free(want);
                free(got);
            }
            /* in place: out is input u */
            double *want = malloc(sizeof(double) * (size_t)cells), *got = malloc(sizeof(double) * (size_t)cells);
            assert_int_equal(pj_term_eval(host, hin, 0.5, want, err, sizeof err), PJ_OK);
            assert_int_equal(pj_term_eval(dev, din, 0.5, (double *)(uintptr_t)du, err, sizeof err), PJ_OK);
            OK(cuda_memcpy_dtoh(d, got, du, sizeof(double) * (size_t)cells, E));
            int64_t at = 0;
            double diff = compare(got, want, cells, &at);
            assert_true(w == ON_EMU ? diff < 0 : diff <= 1e-12);
            free(want);
            free(got);
            assert_int_equal(pj_term_jacobian(dev, "w", din, 0, (double *)(uintptr_t)dv, err, sizeof err), PJ_ERR_INPUT);
            assert_non_null(strstr(err, "no input 'w'"));
            /* NULL arrays */
            const double *bad[2] = {din[0], NULL};
            assert_int_equal(pj_term_eval(dev, bad, 0, (double *)(uintptr_t)dv, err, sizeof err), PJ_ERR_INPUT);
            assert_non_null(strstr(err, "input v is NULL"));
            assert_int_equal(pj_term_eval(dev, din, 0, NULL, err, sizeof err), PJ_ERR_INPUT);
            if (w == ON_EMU) { /* an address that is no device allocation: the driver's error (a real
                                  device may not check every address) */
                const double *host_in[2] = {u, din[1]};
                assert_int_equal(pj_term_eval(dev, host_in, 0, (double *)(uintptr_t)dv, err, sizeof err), PJ_ERR_RUN);
                assert_non_null(strstr(err, "pj_term on the device: cuMemcpy"));
            }
        }
        OK(cuda_mem_free(d, du, E));
        OK(cuda_mem_free(d, dv, E));
        free(u);
        free(v);
        pj_term_free(host);
        pj_term_free(dev);
    }
    print_message("terms on the %s: largest difference %s%.3g\n", w == ON_EMU ? "emulation" : "GPU",
                  worst_all == 0 ? "(bits equal where not listed) " : "", worst_all);
    /* single precision on the device: float arrays, float arithmetic; against the double CPU term
       to 2e-5 of the largest value (inputs rounded to float, then lap's 1/h^2 amplifies that) */
    double worst_single = 0;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const term_case *tc = &cases[c];
        pj_status st;
        char *diag = NULL, err[1024] = "";
        pj_term *host = term_make(tc, 0, &st, &diag);
        free(diag);
        pj_term *dev = term_make_prec(tc, 1, 1, &st, &diag);
        if (st != PJ_OK) print_error("case %zu (cuda, single): %s\n", c, diag ? diag : "");
        assert_int_equal(st, PJ_OK);
        free(diag);
        int64_t cells = tc->n[0] * tc->n[1] * tc->n[2];
        double *u = malloc(sizeof(double) * (size_t)cells), *v = malloc(sizeof(double) * (size_t)cells);
        float *uf = malloc(sizeof(float) * (size_t)cells), *vf = malloc(sizeof(float) * (size_t)cells);
        for (int64_t i = 0; i < cells; i++) {
            uf[i] = (float)(0.5 + 0.45 * sin(0.37 * (double)i));
            vf[i] = (float)(0.5 + 0.4 * cos(0.91 * (double)i));
            u[i] = uf[i]; /* the same values in both precisions */
            v[i] = vf[i];
        }
        cuda_ptr du = 0, dv = 0;
        OK(cuda_mem_alloc(d, sizeof(float) * (size_t)cells, &du, E));
        OK(cuda_mem_alloc(d, sizeof(float) * (size_t)cells, &dv, E));
        OK(cuda_memcpy_htod(d, du, uf, sizeof(float) * (size_t)cells, E));
        OK(cuda_memcpy_htod(d, dv, vf, sizeof(float) * (size_t)cells, E));
        const double *hin[2] = {u, v};
        const double *din[2] = {(const double *)(uintptr_t)du, (const double *)(uintptr_t)dv};
        int n_out = tc->at == PJ_TERM_FACES ? tc->dim : 1;
        double *want[3] = {0}, *dout[3] = {0};
        cuda_ptr dp[3] = {0};
        int64_t count[3] = {cells, 0, 0};
        for (int a = 0; a < n_out; a++) {
            if (tc->at == PJ_TERM_FACES) count[a] = pj_term_face_count(host, a);
            want[a] = malloc(sizeof(double) * (size_t)count[a]);
            OK(cuda_mem_alloc(d, sizeof(float) * (size_t)count[a], &dp[a], E));
            dout[a] = (double *)(uintptr_t)dp[a];
        }
        if (tc->at == PJ_TERM_FACES) {
            assert_int_equal(pj_term_eval_faces(host, hin, 0.25, want, err, sizeof err), PJ_OK);
            st = pj_term_eval_faces(dev, din, 0.25, dout, err, sizeof err);
        } else {
            assert_int_equal(pj_term_eval(host, hin, 0.25, want[0], err, sizeof err), PJ_OK);
            st = pj_term_eval(dev, din, 0.25, dout[0], err, sizeof err);
        }
        if (st != PJ_OK) print_error("case %zu (single): %s\n", c, err);
        assert_int_equal(st, PJ_OK);
        for (int a = 0; a < n_out; a++) {
            float *got = malloc(sizeof(float) * (size_t)count[a]);
            OK(cuda_memcpy_dtoh(d, got, dp[a], sizeof(float) * (size_t)count[a], E));
            double big = 1, worst = 0;
            for (int64_t i = 0; i < count[a]; i++) big = fmax(big, fabs(want[a][i]));
            for (int64_t i = 0; i < count[a]; i++) worst = fmax(worst, fabs((double)got[i] - want[a][i]) / big);
            if (!(worst <= 2e-5)) print_message("case %zu single axis %d: %.3g\n", c, a, worst);
            assert_true(worst <= 2e-5);
            worst_single = fmax(worst_single, worst);
            free(got);
            free(want[a]);
            OK(cuda_mem_free(d, dp[a], E));
        }
        OK(cuda_mem_free(d, du, E));
        OK(cuda_mem_free(d, dv, E));
        free(u);
        free(v);
        free(uf);
        free(vf);
        pj_term_free(host);
        pj_term_free(dev);
    }
    print_message("terms in single precision on the %s: largest difference %.3g of the largest value\n",
                  w == ON_EMU ? "emulation" : "GPU", worst_single);
    assert_true(worst_single > 0); /* float arithmetic indeed */
    /* single precision needs the device */
    {
        pj_status st;
        char *diag = NULL;
        assert_null(term_make_prec(&cases[0], 0, 1, &st, &diag));
        assert_int_equal(st, PJ_ERR_INPUT);
        assert_non_null(strstr(diag, "single precision is for terms on the device"));
        free(diag);
    }
    /* a second term of a case: its kernels from the cache */
    pj_status st;
    char *diag = NULL;
    pj_term *again = term_make(&cases[0], 1, &st, &diag);
    assert_int_equal(st, PJ_OK);
    assert_int_equal(pj_term_from_cache(again), 1);
    pj_term_free(again);
    free(diag);
    /* every device allocation returned */
    size_t free1 = 0;
    OK(cuda_mem_info(d, &free1, &total, E));
    assert_true(free1 == free0 || (w == ON_GPU && free1 + (8u << 20) >= free0));
    cuda_device_close(d);
    unsetenv("PDEJIT_CACHE_DIR");
}
static void emu_terms_agree(void **state) { (void)state; terms_agree(ON_EMU); }
static void gpu_terms_agree(void **state) { (void)state; terms_agree(ON_GPU); }

/* Without a device: pj_term_compile says so with PJ_ERR_UNAVAILABLE, never a crash. */
static void no_device_term(void **state)
{
    (void)state;
    if (g_gpu) skip();
    use(ON_GPU); /* the real libraries: here, none */
    static const term_case c = {"lap(u)", 2, {8, 8, 1}, {PJ_TERM_ZERO_FLUX, PJ_TERM_ZERO_FLUX}, PJ_TERM_CELLS};
    pj_status st;
    char *diag = NULL;
    pj_term *t = term_make(&c, 1, &st, &diag);
    assert_null(t);
    assert_int_equal(st, PJ_ERR_UNAVAILABLE);
    assert_non_null(diag);
    assert_non_null(strstr(diag, "<term>: error: no CUDA device: "));
    free(diag);
    setenv("PDEJIT_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    t = term_make(&c, 1, &st, &diag);
    assert_int_equal(st, PJ_ERR_UNAVAILABLE);
    assert_non_null(strstr(diag, "/nonexistent/libcuda.so.1 not found"));
    free(diag);
    unsetenv("PDEJIT_LIBCUDA");
}

/* test_gpu --here (ctest: test_gpu): what runs everywhere and in the emulation. test_gpu --device
 * (ctest: test_gpu_device): the same on device 0, or exit 77 (ctest: SKIPPED) when no device
 * opens. Without an argument (bench/gpu-check.sh): both, the device part said to be skipped
 * when no device opens. */
int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int run_here = strcmp(mode, "--device") != 0, run_device = strcmp(mode, "--here") != 0;
    const struct CMUnitTest here[] = {
        cmocka_unit_test(emit_compiles),
        cmocka_unit_test(no_device_reason),
        cmocka_unit_test(key_composition),
        cmocka_unit_test(emu_nan_reports),
        cmocka_unit_test(emu_run_matches_driver),
        cmocka_unit_test(emu_cache_hits_without_nvrtc),
        cmocka_unit_test(emu_memory_released),
        cmocka_unit_test(emu_ghost_plan),
        cmocka_unit_test(emu_refuses_what_does_not_fit),
        cmocka_unit_test(emu_command_line),
        cmocka_unit_test(emu_noise_bits),
        cmocka_unit_test(emu_checkpoint_resume),
        cmocka_unit_test(emu_hot_swap),
        cmocka_unit_test(emu_second_bc),
        cmocka_unit_test(no_device_command_line),
        cmocka_unit_test(emu_terms_agree),
        cmocka_unit_test(no_device_term),
    };
    const struct CMUnitTest device[] = {
        cmocka_unit_test(gpu_nan_reports),
        cmocka_unit_test(gpu_run_matches_driver),
        cmocka_unit_test(gpu_cache_hits_without_nvrtc),
        cmocka_unit_test(gpu_memory_released),
        cmocka_unit_test(gpu_ghost_plan),
        cmocka_unit_test(gpu_refuses_what_does_not_fit),
        cmocka_unit_test(gpu_large_problem),
        cmocka_unit_test(gpu_command_line),
        cmocka_unit_test(gpu_noise_bits),
        cmocka_unit_test(gpu_checkpoint_resume),
        cmocka_unit_test(gpu_hot_swap),
        cmocka_unit_test(gpu_second_bc),
        cmocka_unit_test(gpu_terms_agree),
    };
    int failed = 0;
    if (run_here) failed += cmocka_run_group_tests_name("test_gpu", here, setup, teardown);
    if (!run_device) return failed;
    char reason[512];
    tu_gpu_emulation_use(NULL);
    cuda_device *d = cuda_device_open(0, reason, sizeof reason);
    if (!d) {
        printf("SKIPPED: the cases on a GPU: no GPU: %s\n", reason);
        return run_here ? failed : 77;
    }
    cuda_device_close(d);
    g_device_only = 1;
    return failed + cmocka_run_group_tests_name("test_gpu --device", device, setup, teardown);
}
