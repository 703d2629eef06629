/* pj_bench.c — the pdejit side of the benchmark (bench/run.sh builds and runs it).
 *
 *   pj_bench step N THREADS STEPS_PER_REP REPS cpu|cpu-fast|cpu-run|cpu-tblock|interp
 *       The 2D reaction-diffusion step u + dt*(D*lap(u) + k*u*(1-u)) on an N x N periodic
 *       square, explicit Euler, through the real pipeline: problem text -> compile_problem ->
 *       sim_create (THREADS) -> cpu_backend (kernel cache: $PDEJIT_CACHE_DIR) -> sim_step, i.e.
 *       ghost fill + the stage kernel over the sim's threads + slot swap, as `pdejit run` steps.
 *       D = 10/N^2 (D*dt/h^2 = 0.1: stable at every size, as in ref_rd). cpu-fast is the
 *       same with --fast-math; cpu-run steps through driver_run() (no output, a NaN/Inf check
 *       after every step: `pdejit run`'s defaults) instead of calling sim_step(), one call per
 *       rep, timed by driver_result.seconds (the stepping, without the one full check before
 *       each call). cpu-tblock calls sim_step_n (backends/host/tblock.c) for the rep's steps in batches of
 *       32: several steps per sweep where temporal blocking pays (the state beyond the last-level
 *       cache; $PDEJIT_TBLOCK=on forces it, $PDEJIT_TBLOCK_K / _ROWS its sizes); cpu steps one at
 *       a time. $PJ_BENCH_PREFETCH as for step3d.
 *       Prints seconds per step for every rep (one rep of warm-up first; a rep stops early
 *       after REP_BUDGET_S), the median, the time of one ghost fill (serial, paid inside every
 *       step), and the field's checksum (sum of all cells, to compare with ref_rd after the
 *       same steps).
 *
 *   pj_bench step3d NX NY NZ THREADS STEPS_PER_REP REPS cpu|cpu-tblock|interp
 *       The 3D heat step u + dt*D*lap(u) of `ref_rd --3d` (same problem, same steps: see there)
 *       through the same pipeline as `step`: a periodic NX x NY x NZ box, h = 1/NX on every axis
 *       (Lx = 1, Ly = NY*h, Lz = NZ*h), dt = 0.01, D = 10*h^2, u0 = 0.5 + 0.25*sin(2 pi x)*
 *       cos(2 pi y)*cos(2 pi z/Lz). Exactly STEPS_PER_REP steps in every rep (no time budget):
 *       one warm-up rep, then REPS timed reps, (REPS + 1) * STEPS_PER_REP steps in all; cpu and
 *       interp step one at a time, cpu-tblock in sim_step_n batches of 32 (its blocks' tile sizes
 *       measured before the warm-up, then the initial state again). Prints
 *       "pdejit n=NXxNYxNZ threads=T variant=V sec_per_step=... median=M checksum=C steps=K
 *       ghost_fill=G block=B sumsq=Q tile_rows=R" (C: the sum of the interior cells, Q: of their
 *       squares; R: the rows of the sim's y tiles, 0: whole planes; $PDEJIT_TILE_Y forces them;
 *       then prefetch=0|1 tuned=C: the row prefetch in effect and sim_tuned_choice's answer).
 *       $PJ_BENCH_PREFETCH=0|1 forces the kernels' row prefetch off or on (default: the sim's
 *       choice, on when the state exceeds the last-level cache).
 *
 *   pj_bench compile FILE
 *       What a run pays before its first step, in this process: the front end (parse, check,
 *       lower), the JIT's creation, and per stage kernel the compile or cache load (the figure
 *       `pdejit run --verbose` prints), then the total. Run it twice on an empty
 *       PDEJIT_CACHE_DIR: the first is the cold compile, the second the cache hit.
 *
 *   $PJ_BENCH_SOURCE=FILE (step, step3d): the problem's text is also written to FILE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_backend.h"
#include "driver.h"
#include "program.h"
#include "sim.h"

/* A rep ends after this long even when its steps are not all done (a busy machine can make a
 * two-thread step on a small grid take a scheduler time slice): the time per step is then over
 * the steps done. */
#define REP_BUDGET_S 0.5

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Compiles the benchmark's problem text; with $PJ_BENCH_SOURCE set, also writes the text there
 * (the harness counts the kernel's operations from `pdejit emit --ir` of it). */
static pj_program *compile_text(const char *name, const char *src)
{
    const char *save = getenv("PJ_BENCH_SOURCE");
    FILE *f = save ? fopen(save, "w") : NULL;
    if (f) {
        fputs(src, f);
        fclose(f);
    }
    diag d;
    diag_init(&d, name, src, strlen(src));
    pj_program *p = compile_problem(name, src, strlen(src), &d, NULL);
    if (!p) fprintf(stderr, "%s", d.log ? d.log : "compile_problem failed\n");
    diag_free(&d);
    return p;
}

static int cmd_step(int argc, char **argv)
{
    if (argc < 5) return 2;
    long long n = atoll(argv[0]);
    int threads = atoi(argv[1]), steps = atoi(argv[2]), reps = atoi(argv[3]);
    const char *backend = argv[4];
    int use_cpu = strncmp(backend, "cpu", 3) == 0, fast = !strcmp(backend, "cpu-fast");
    int via_driver = !strcmp(backend, "cpu-run"), tblock = !strcmp(backend, "cpu-tblock");
    char src[1024];
    snprintf(src, sizeof src,
             "# 2D reaction-diffusion (Fisher-KPP), periodic square, explicit Euler\n"
             "mesh grid(nx = %lld, ny = %lld, Lx = 1, Ly = 1)\n"
             "param D = %.17g, k = 0.01\n"
             "field u = 0.5 + 0.25*(sin(6.283185307179586*x)*cos(6.283185307179586*y))\n"
             "eq dt(u) = D*lap(u) + k*u*(1 - u)\n"
             "periodic x, y\n"
             "time dt = 0.01, steps = 1, scheme = euler\n",
             n, n, 10.0 / ((double)n * (double)n));
    pj_program *p = compile_text("rd.pde", src);
    if (!p) return 1;
    char err[1024];
    sim_options so = {.threads = threads};
    sim *s = sim_create(p, &so, err, sizeof err);
    if (!s) { fprintf(stderr, "pj_bench: %s\n", err); return 1; }
    cpu_backend *be = NULL;
    if (use_cpu) {
        cpu_backend_options bo = {0, fast, NULL, 1}; /* the steady state: the final tier */
        be = cpu_backend_create(&bo, err, sizeof err);
        if (!be || cpu_backend_prepare(be, p, err, sizeof err) < 0) {
            fprintf(stderr, "pj_bench: cpu back end: %s\n", err);
            return 1;
        }
        cpu_backend_install(be, s);
    }
    const char *pf = getenv("PJ_BENCH_PREFETCH"); /* 0 or 1: the kernels' row prefetch forced off/on */
    if (pf && *pf) sim_set_prefetch(s, atoi(pf) != 0);
    sim_init(s);
    /* a large run's first steps measure the sim's choices (sim_tuned_choice): taken here before
       the timed steps, then the initial state again (the checksum is C's after the same steps) */
    while (sim_tuned_choice(s) == -2) sim_step(s, p->dt);
    sim_init(s);
    /* the driver's runs go through the engine, as `pdejit run`'s do */
    engine *e = NULL;
    if (via_driver) {
        engine_options eo = {.fast_math = fast, .threads = threads};
        e = engine_create(engine_backend(use_cpu ? "cpu" : "interp"), p, &eo, NULL, err, sizeof err);
        if (!e || engine_init(e, err, sizeof err) < 0) {
            fprintf(stderr, "pj_bench: %s\n", err);
            return 1;
        }
    }
    double dt = p->dt;
    double *per = malloc(sizeof(double) * (size_t)reps);
    for (int r = -1; r < reps; r++) { /* rep -1: warm-up */
        double t0 = driver_now(), stepping = 0;
        int done = 0;
        while (done < steps) {
            /* sim_step in batches of 16 (then the rep budget is checked); driver_run for all
               of a rep's steps in one call, as `pdejit run` makes one call for a whole run */
            int batch = tblock ? 32 : 16;
            int chunk = via_driver ? steps - done : steps - done < batch ? steps - done : batch;
            if (via_driver) {
                /* driver_run runs to an absolute end time: on from where the last call stopped */
                int64_t before = engine_steps(e);
                driver_options o = {.dt = dt, .until = engine_time(e) + chunk * dt, .steps = -1, .check_every = 1};
                driver_result res;
                if (driver_run(e, &o, &res, err, sizeof err)) {
                    fprintf(stderr, "pj_bench: %s\n", err);
                    return 1;
                }
                stepping += res.seconds; /* the stepping loop, not the full check before it */
                chunk = (int)(engine_steps(e) - before);
            } else if (tblock) {
                sim_step_n(s, dt, chunk);
            } else {
                for (int k = 0; k < chunk; k++) sim_step(s, dt);
            }
            done += chunk;
            if (driver_now() - t0 > REP_BUDGET_S) break; /* a busy machine: fewer steps */
        }
        double t = (via_driver ? stepping : driver_now() - t0) / done;
        if (r >= 0) per[r] = t;
    }
    /* the ghost fill alone (serial, inside every sim_step): its share of the step */
    int fills = steps < 20 ? 20 : steps;
    double t0 = driver_now();
    for (int k = 0; k < fills; k++) sim_fill_ghosts(s, 0, sim_time(s));
    double fill = (driver_now() - t0) / fills;

    int64_t cells = sim_cells(s);
    double *u = malloc(sizeof(double) * (size_t)cells), sum = 0;
    if (e) engine_get_field(e, 0, u, err, sizeof err);
    else sim_get_field(s, 0, u);
    for (int64_t c = 0; c < cells; c++) sum += u[c];
    printf("pdejit n=%lld threads=%d variant=%s sec_per_step=", n, sim_threads(s), backend);
    for (int r = 0; r < reps; r++) printf("%s%.6e", r ? "," : "", per[r]);
    qsort(per, (size_t)reps, sizeof *per, cmp_double);
    /* steps per sweep: what temporal blocking takes of a batch (1: one at a time) */
    long long block = e ? (long long)engine_block_steps(e, 32) : tblock ? sim_tblock_steps(s, 32) : 1;
    printf(" median=%.6e checksum=%.15e steps=%lld ghost_fill=%.6e block=%lld\n", per[reps / 2], sum,
           (long long)(e ? engine_steps(e) : sim_steps(s)), fill, block > 1 ? block : 1);
    free(u);
    free(per);
    sim_destroy(s);
    engine_destroy(e);
    cpu_backend_destroy(be);
    program_free(p);
    return 0;
}

static int cmd_step3d(int argc, char **argv)
{
    if (argc < 7) return 2;
    long long nx = atoll(argv[0]), ny = atoll(argv[1]), nz = atoll(argv[2]);
    int threads = atoi(argv[3]), steps = atoi(argv[4]), reps = atoi(argv[5]);
    const char *backend = argv[6];
    if (nx < 1 || ny < 1 || nz < 1 || threads < 1 || steps < 1 || reps < 1 ||
        (strcmp(backend, "cpu") && strcmp(backend, "cpu-tblock") && strcmp(backend, "interp")))
        return 2;
    int use_cpu = strncmp(backend, "cpu", 3) == 0, tblock = !strcmp(backend, "cpu-tblock");
    double h = 1.0 / (double)nx;
    char src[1024];
    snprintf(src, sizeof src,
             "# 3D heat, periodic box, explicit Euler (ref_rd --3d)\n"
             "mesh grid(nx = %lld, ny = %lld, nz = %lld, Lx = 1, Ly = %.17g, Lz = %.17g)\n"
             "param D = %.17g\n"
             "field u = 0.5 + 0.25*sin(6.283185307179586*x)*cos(6.283185307179586*y)*"
             "cos(6.283185307179586*z/%.17g)\n"
             "eq dt(u) = D*lap(u)\n"
             "periodic x, y, z\n"
             "time dt = 0.01, steps = 1, scheme = euler\n",
             nx, ny, nz, (double)ny * h, (double)nz * h, 10.0 * h * h, (double)nz * h);
    pj_program *p = compile_text("heat3d.pde", src);
    if (!p) return 1;
    char err[1024];
    sim_options so = {.threads = threads};
    sim *s = sim_create(p, &so, err, sizeof err);
    if (!s) { fprintf(stderr, "pj_bench: %s\n", err); return 1; }
    cpu_backend *be = NULL;
    if (use_cpu) {
        cpu_backend_options bo = {0, 0, NULL, 1}; /* the steady state: the final tier */
        be = cpu_backend_create(&bo, err, sizeof err);
        if (!be || cpu_backend_prepare(be, p, err, sizeof err) < 0) {
            fprintf(stderr, "pj_bench: cpu back end: %s\n", err);
            return 1;
        }
        cpu_backend_install(be, s);
    }
    const char *pf = getenv("PJ_BENCH_PREFETCH"); /* 0 or 1: the kernels' row prefetch forced off/on */
    if (pf && *pf) sim_set_prefetch(s, atoi(pf) != 0);
    sim_init(s);
    /* a large run's first steps measure the sim's choices (sim_tuned_choice): taken here before
       the timed steps, then the initial state again (the checksum is C's after the same steps) */
    while (sim_tuned_choice(s) == -2) sim_step(s, p->dt);
    /* and the tile sizes of the blocks (tblock.c measures its candidates on the first blocks) */
    for (int w = 0, c = -1, tx; tblock && w < 64 && (sim_tblock_tile(s, &c, &tx), c < 0); w++) sim_step_n(s, p->dt, 32);
    sim_init(s);
    double dt = p->dt;
    double *per = malloc(sizeof(double) * (size_t)reps);
    for (int r = -1; r < reps; r++) { /* rep -1: warm-up */
        double t0 = driver_now();
        for (int done = 0; done < steps;) {
            int chunk = steps - done < 32 ? steps - done : 32;
            if (tblock) sim_step_n(s, dt, chunk);
            else
                for (int k = 0; k < chunk; k++) sim_step(s, dt);
            done += chunk;
        }
        double t = (driver_now() - t0) / steps;
        if (r >= 0) per[r] = t;
    }
    int fills = 20;
    double t0 = driver_now();
    for (int k = 0; k < fills; k++) sim_fill_ghosts(s, 0, sim_time(s));
    double fill = (driver_now() - t0) / fills;
    int64_t cells = sim_cells(s);
    double *u = malloc(sizeof(double) * (size_t)cells), sum = 0, sumsq = 0;
    sim_get_field(s, 0, u);
    for (int64_t c = 0; c < cells; c++) {
        sum += u[c];
        sumsq += u[c] * u[c];
    }
    printf("pdejit n=%lldx%lldx%lld threads=%d variant=%s sec_per_step=", nx, ny, nz, sim_threads(s), backend);
    for (int r = 0; r < reps; r++) printf("%s%.6e", r ? "," : "", per[r]);
    qsort(per, (size_t)reps, sizeof *per, cmp_double);
    long long block = tblock ? sim_tblock_steps(s, 32) : 1;
    int cand = 0, tile_x = 0, tile = tblock ? sim_tblock_tile(s, &cand, &tile_x) : 0;
    printf(" median=%.6e checksum=%.15e steps=%lld ghost_fill=%.6e block=%lld sumsq=%.15e tile_rows=%lld prefetch=%d"
           " tuned=%d tile=%d tile_x=%d cand=%d\n",
           per[reps / 2], sum, (long long)sim_steps(s), fill, block > 1 ? block : 1, sumsq,
           (long long)sim_tile_rows(s), sim_launch(s)->prefetch, sim_tuned_choice(s), tile, tile_x, cand);
    free(u);
    free(per);
    sim_destroy(s);
    cpu_backend_destroy(be);
    program_free(p);
    return 0;
}

static int cmd_compile(const char *file)
{
    FILE *f = fopen(file, "rb");
    if (!f) { perror(file); return 1; }
    static char src[1 << 20];
    size_t len = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    src[len] = 0;
    double t0 = driver_now();
    pj_program *p = compile_text(file, src);
    if (!p) return 1;
    double t1 = driver_now();
    char err[1024];
    cpu_backend_options bo = {0, 0, NULL, 0}; /* what a run pays before its first step */
    cpu_backend *be = cpu_backend_create(&bo, err, sizeof err);
    if (!be) { fprintf(stderr, "pj_bench: %s\n", err); return 1; }
    double t2 = driver_now();
    if (cpu_backend_prepare(be, p, err, sizeof err) < 0) { fprintf(stderr, "pj_bench: %s\n", err); return 1; }
    double t3 = driver_now();
    printf("compile file=%s scheme=%s frontend_ms=%.3f jit_create_ms=%.3f prepare_ms=%.3f total_ms=%.3f kernels=",
           file, scheme_name(p->scheme), (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, (t3 - t0) * 1e3);
    int n_tm;
    const kernel_timing *tm = cpu_backend_timings(be, &n_tm);
    for (int i = 0; i < n_tm; i++)
        printf("%s%s:%s:%.3f", i ? "," : "", tm[i].name, tm[i].from_cache ? "hit" : "compiled", tm[i].ms);
    printf("\n");
    cpu_backend_destroy(be);
    program_free(p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "step")) {
        int r = cmd_step(argc - 2, argv + 2);
        if (r != 2) return r;
    } else if (argc >= 2 && !strcmp(argv[1], "step3d")) {
        int r = cmd_step3d(argc - 2, argv + 2);
        if (r != 2) return r;
    } else if (argc == 3 && !strcmp(argv[1], "compile")) {
        return cmd_compile(argv[2]);
    }
    fprintf(stderr, "usage: pj_bench step N THREADS STEPS_PER_REP REPS cpu|cpu-fast|cpu-run|cpu-tblock|interp\n"
                    "       pj_bench step3d NX NY NZ THREADS STEPS_PER_REP REPS cpu|cpu-tblock|interp\n"
                    "       pj_bench compile FILE\n");
    return 2;
}
