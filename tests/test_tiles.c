/* test_tiles.c — y tiles of a 3D stage (backends/host/sim.c, sim_set_tiles): a thread's planes walked
 * in tiles of rows give the state that whole planes give, to the bit, and what the interpreter
 * gives. Every 3D problem of the table (solve.c: walls, halo 2, rk schemes) and a problem with
 * rand(), coordinates, a coefficient field, mixed sides and y/z extents that the tiles do not
 * divide, on the cpu back end with 1 and 2 threads, double and single, tiles forced to a few
 * rows; then when the automatic choice tiles and what it chooses, and the first steps' measured
 * choice between tiles and none; then the ghost fill of a large 3D mesh split over the threads. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_backend.h"
#include "sim.h"
#include "sim_impl.h" /* sim_cache_bytes */
#include "solve.h"

/* rand() must see the mesh's cells, coordinates the mesh's, walls on y (the tiled axis). */
static const char prob_mixed[] =
    "mesh grid(nx = 13, ny = 11, nz = 9, Lx = 1, Ly = 0.8, Lz = 0.7)\n"
    "field K = 1 + 0.5*sin(2*pi*x)*cos(2*pi*y)*z\n"
    "field u = 0.5 + 0.1*rand() + 0.2*y*z\n"
    "eq dt(u) = 0.002*div(K*grad(u)) + 0.01*(rand() - 0.5) + 0.001*randn()*u + 0.01*x*y\n"
    "periodic x, z\n"
    "on bottom: u = sin(3*t) + x\n"
    "on top: u + 0.1*dn(u) = t*z\n"
    "time dt = 0.01, until = 1, scheme = rk2\n";

static engine *make_engine(const pj_program *p, const char *backend, int single, int threads, const char *sets,
                           const char *tiles)
{
    char err[1024];
    setenv("PDEJIT_TILE_Y", tiles, 1);
    engine_options o = {.single = single, .threads = threads, .seed = 11};
    engine *e = engine_create(engine_backend(backend), p, &o, NULL, err, sizeof err);
    unsetenv("PDEJIT_TILE_Y");
    if (!e) fail_msg("%s back end: %s", backend, err);
    engine_set_params(e, sets);
    if (engine_init(e, err, sizeof err) < 0) fail_msg("%s: %s", backend, err);
    return e;
}

/* `steps` steps of p on `backend` with whole planes on ref_threads threads and with tiles of
 * `tiles` rows on `threads`: every field equal to the bit. */
static void runs_equal(const pj_program *p, const char *label, const char *sets, const char *backend, int single,
                       int ref_threads, int threads, const char *tiles, int64_t steps)
{
    engine *ref = make_engine(p, backend, single, ref_threads, sets, "off");
    engine *e = make_engine(p, backend, single, threads, sets, tiles);
    double dt = p->dt > 0 ? p->dt : 1e-3;
    char err[1024];
    for (int64_t i = 0; i < steps; i++)
        if (engine_step(ref, dt, err, sizeof err) < 0 || engine_step(e, dt, err, sizeof err) < 0) fail_msg("%s", err);
    char what[256];
    snprintf(what, sizeof what, "%s (%s, %s, %d/%d threads, tiles of %s rows)", label, backend, single ? "single" : "double",
             ref_threads, threads, tiles);
    engines_same_bits(ref, e, what);
    engine_destroy(ref);
    engine_destroy(e);
}

static void problems_tiled_equal(void **state)
{
    (void)state;
    test_case *cases;
    int n = test_cases(&cases), done = 0;
    static const char *const tiles[] = {"1", "3", "5"};
    for (int i = 0; i <= n; i++) {
        const char *name = i < n ? cases[i].name : "mixed", *text = i < n ? cases[i].text : prob_mixed;
        const char *sets = i < n ? cases[i].sets : NULL;
        pj_program *p = compile_named(name, text);
        if (p->dim != 3) {
            program_free(p);
            continue;
        }
        for (int single = 0; single <= 1; single++)
            for (int threads = 1; threads <= 2; threads++)
                for (size_t t = 0; t < sizeof tiles / sizeof *tiles; t++)
                    runs_equal(p, name, sets, "cpu", single, threads, threads, tiles[t], 5);
        /* the interpreter as the oracle of the tiled kernels */
        setenv("PDEJIT_TILE_Y", "3", 1);
        engine_options o = {.threads = 2, .seed = 11};
        double d = program_agree(p, sets, "cpu", &o, 5, name);
        unsetenv("PDEJIT_TILE_Y");
        if (!(d <= 1e-12)) fail_msg("%s: tiled cpu against the interpreter: %g", name, d);
        print_message("%-24s 3D %s: tiled = whole planes, = interp (%.1e)\n", name, scheme_name(p->scheme), d);
        program_free(p);
        done++;
    }
    test_cases_free(cases, n);
    assert_true(done >= 3); /* heat3d, the table's 3D cases, mixed */
}

/* A 3D mesh of 2^20 cells or more fills its x and y ghosts over the threads (sim.c): with walls
 * (a linear condition, a value), periodic sides and a coefficient field, 2 threads fill what one
 * fills, to the bit (interp: nothing but the fill is split differently; cpu: tiled too). */
static void large_fill_split(void **state)
{
    (void)state;
    static const char prob[] =
        "mesh grid(nx = 128, ny = 130, nz = 65, Lx = 1, Ly = 1, Lz = 1)\n"
        "field K = 1 + 0.5*sin(2*pi*x)*cos(2*pi*y)*z\n"
        "field u = 0.5 + 0.1*rand() + 0.2*y*z\n"
        "eq dt(u) = 0.00002*div(K*grad(u)) + 0.01*x*y\n"
        "periodic z\n"
        "on left: dn(u) = 0\n"
        "on right: u = x + t\n"
        "on bottom: u = sin(3*t) + x\n"
        "on top: u + 0.1*dn(u) = t*z\n"
        "time dt = 0.01, until = 1, scheme = rk2\n";
    pj_program *p = compile_named("large", prob);
    runs_equal(p, "large", NULL, "interp", 0, 1, 2, "off", 1);
    runs_equal(p, "large", NULL, "cpu", 0, 1, 2, "16", 3);
    program_free(p);
    p = compile_named("large periodic", "mesh grid(nx = 128, ny = 128, nz = 64)\nfield u = x*y + z\n"
                                        "eq dt(u) = 0.0001*lap(u)\nperiodic x, y, z\n"
                                        "time dt = 0.01, steps = 1, scheme = euler\n");
    runs_equal(p, "large periodic", NULL, "cpu", 0, 1, 2, "auto", 3);
    runs_equal(p, "large periodic", NULL, "cpu", 1, 1, 2, "auto", 3);
    program_free(p);
}

static sim *make_sim(const pj_program *p, int threads, cpu_backend **be)
{
    char err[1024];
    sim_options so = {.threads = threads};
    sim *s = sim_create(p, &so, err, sizeof err);
    if (!s) fail_msg("%s", err);
    cpu_backend_options bo = {0, 0, NULL, 1};
    *be = cpu_backend_create(&bo, err, sizeof err);
    if (!*be || cpu_backend_prepare(*be, p, err, sizeof err) < 0) fail_msg("cpu back end: %s", err);
    cpu_backend_install(*be, s);
    return s;
}

/* Auto: whole planes while the planes a stencil reads fit in half of L2; beyond, tiles of a
 * multiple of 8 rows taking about a third of it. Forced and off as asked; never 1D/2D. */
static void auto_choice(void **state)
{
    (void)state;
    size_t l2 = sim_cache_bytes(2);
    /* 2 buffers (euler), 3 planes: a plane of nx*ny doubles beyond L2/12 tiles */
    int64_t side = 16;
    while ((double)side * (double)side * 8 * 6 <= (double)l2 * 0.75) side *= 2;
    char src[512];
    snprintf(src, sizeof src,
             "mesh grid(nx = %lld, ny = %lld, nz = 4)\nfield u = x\neq dt(u) = lap(u)\nperiodic x, y, z\n"
             "time dt = 1e-9, steps = 1, scheme = euler\n",
             (long long)side, (long long)side);
    pj_program *p = compile_named("big", src);
    cpu_backend *be;
    sim *s = make_sim(p, 2, &be);
    int64_t rows = sim_tile_rows(s);
    double row_bytes = (double)(side + 16) * 8 * 6;
    print_message("L2 %zu bytes: %lld x %lld planes in tiles of %lld rows\n", l2, (long long)side, (long long)side,
                  (long long)rows);
    assert_true(rows >= 8 && rows % 8 == 0 && rows < side);
    assert_true(rows * row_bytes <= (double)l2 / 3 || rows == 8);
    sim_set_tiles(s, -1);
    assert_int_equal(sim_tile_rows(s), 0);
    sim_set_tiles(s, 7);
    assert_int_equal(sim_tile_rows(s), 7);
    sim_set_tiles(s, side); /* a tile of every row: whole planes */
    assert_int_equal(sim_tile_rows(s), 0);
    sim_destroy(s);
    cpu_backend_destroy(be);
    program_free(p);

    /* small planes: whole */
    p = compile_named("small", "mesh grid(nx = 16, ny = 16, nz = 16)\nfield u = x\neq dt(u) = lap(u)\n"
                               "periodic x, y, z\ntime dt = 1e-9, steps = 1, scheme = euler\n");
    s = make_sim(p, 2, &be);
    assert_int_equal(sim_tile_rows(s), 0);
    sim_destroy(s);
    cpu_backend_destroy(be);
    program_free(p);

    /* 2D: never, even forced */
    p = compile_named("flat", "mesh grid(nx = 64, ny = 64)\nfield u = x\neq dt(u) = lap(u)\n"
                              "periodic x, y\ntime dt = 1e-9, steps = 1, scheme = euler\n");
    s = make_sim(p, 2, &be);
    sim_set_tiles(s, 8);
    assert_int_equal(sim_tile_rows(s), 0);
    sim_destroy(s);
    cpu_backend_destroy(be);
    program_free(p);
}

/* Measured choices (sim.c): where sim_create tiled by itself, the first 1 + 3n steps try the n
 * candidates (tiles on/off; the prefetch too when the state exceeds the last-level cache) and keep
 * one, the state equal to the bit to an untiled sim's; a forced prefetch is never measured; the
 * interpreter (no stage runner) measures nothing. */
static void measured_choice(void **state)
{
    (void)state;
    size_t l2 = sim_cache_bytes(2);
    int64_t side = 16;
    while ((double)side * (double)side * 8 * 6 <= (double)l2 * 0.75) side *= 2;
    char src[512];
    snprintf(src, sizeof src,
             "mesh grid(nx = %lld, ny = %lld, nz = 4)\nfield u = x*x + y*z\neq dt(u) = 0.001*lap(u) - u*u\n"
             "periodic x, y, z\ntime dt = 1e-6, steps = 1, scheme = euler\n",
             (long long)side, (long long)side);
    pj_program *p = compile_named("measured", src);
    cpu_backend *be, *be_ref;
    sim *s = make_sim(p, 2, &be), *ref = make_sim(p, 2, &be_ref);
    sim_set_tiles(ref, -1);
    sim_set_prefetch(ref, 0);
    assert_int_equal(sim_tuned_choice(ref), -1);
    sim_init(s);
    sim_init(ref);
    assert_true(sim_tile_rows(s) > 0);
    int n = sim_launch(s)->prefetch ? 4 : 2; /* the prefetch is measured too only for a large state */
    int64_t steps = 1 + 3 * n;
    for (int64_t k = 0; k < steps; k++) {
        assert_int_equal(sim_tuned_choice(s), -2);
        assert_int_equal(sim_step(s, 1e-6), 0);
        assert_int_equal(sim_step(ref, 1e-6), 0);
    }
    int c = sim_tuned_choice(s);
    print_message("%lld x %lld x 4: %d candidates, kept %d (tiles %s, prefetch %s)\n", (long long)side,
                  (long long)side, n, c, c & 1 ? "off" : "on", c & 2 ? "off" : "on");
    assert_true(c >= 0 && c < n);
    assert_int_equal(sim_tile_rows(s) == 0, c & 1);
    assert_int_equal(sim_step(s, 1e-6), 0); /* the kept choice */
    assert_int_equal(sim_step(ref, 1e-6), 0);
    int64_t cells = sim_cells(s);
    double *a = malloc(sizeof *a * (size_t)cells), *b = malloc(sizeof *b * (size_t)cells);
    sim_get_field(s, 0, a);
    sim_get_field(ref, 0, b);
    assert_memory_equal(a, b, sizeof *a * (size_t)cells);
    free(a);
    free(b);
    /* a forced prefetch stays as forced */
    sim_set_prefetch(s, 1);
    assert_int_equal(sim_tuned_choice(s), -2);
    for (int k = 0; k < 7; k++) assert_int_equal(sim_step(s, 1e-6), 0);
    c = sim_tuned_choice(s);
    assert_true(c == 0 || c == 1);
    assert_int_equal(sim_launch(s)->prefetch, 1);
    sim_destroy(s);
    sim_destroy(ref);
    cpu_backend_destroy(be);
    cpu_backend_destroy(be_ref);
    /* the interpreter: nothing to measure */
    sim_options so = {.threads = 2};
    char err[256];
    s = sim_create(p, &so, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(sim_tuned_choice(s), -1);
    sim_destroy(s);
    program_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(problems_tiled_equal),
        cmocka_unit_test(auto_choice),
        cmocka_unit_test(measured_choice),
        cmocka_unit_test(large_fill_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
