/* test_tblock.c — temporal blocking (backends/host/tblock.c): several steps per sweep give the state
 * that stepping one step at a time gives, to the bit. Every explicit sample and the table's own
 * problems (solve.c: periodic and non-periodic last axes, t-dependent linear conditions, 3D,
 * halo 2, rk2/rk3/rk4/euler, a coefficient field), a problem with rand(), randn() and a
 * coefficient field, and random problems (randexpr.c), on interp and cpu, in double and single,
 * forced on with small bands so that bands, wraps and shrinking ranges are all exercised;
 * then the run loop (`pdejit run` with outputs and monitors between blocks, and where a
 * non-finite value is reported), and what `run --verbose` and pj_sim_get_info say of how the
 * steps ran. */
#if defined(__GNUC__) && !defined(__clang__) /* clang has no such warning (and warns of the name) */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
#include "testutil.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "diag.h"
#include "randexpr.h"
#include "sim_impl.h" /* sim_cache_bytes */
#include "solve.h"

/* Forced rows per launch and cells per strip of a launch for the engines made next (0: chosen). */
static int launch_rows, launch_strip;
/* Forced rows of y per tile of a 3D block (0: chosen, -1: whole planes), and cells of x (0: whole rows). */
static int launch_tile, launch_tile_x;

static engine *make_engine(const pj_program *p, const char *backend, int single, int threads, const char *sets,
                           const char *mode, int k, int rows)
{
    char err[1024], v[32];
    setenv("PDEJIT_TBLOCK", mode, 1);
    snprintf(v, sizeof v, "%d", k);
    setenv("PDEJIT_TBLOCK_K", v, 1);
    snprintf(v, sizeof v, "%d", rows);
    setenv("PDEJIT_TBLOCK_ROWS", v, 1);
    snprintf(v, sizeof v, "%d", launch_rows);
    setenv("PDEJIT_TBLOCK_LAUNCH", v, 1);
    snprintf(v, sizeof v, "%d", launch_strip);
    setenv("PDEJIT_TBLOCK_STRIP", v, 1);
    if (launch_tile < 0) setenv("PDEJIT_TBLOCK_TILE", "off", 1);
    else {
        snprintf(v, sizeof v, "%dx%d", launch_tile, launch_tile_x);
        setenv("PDEJIT_TBLOCK_TILE", v, 1);
    }
    engine_options o = {.single = single, .threads = threads, .seed = 7};
    engine *e = engine_create(engine_backend(backend), p, &o, NULL, err, sizeof err);
    unsetenv("PDEJIT_TBLOCK");
    unsetenv("PDEJIT_TBLOCK_K");
    unsetenv("PDEJIT_TBLOCK_ROWS");
    unsetenv("PDEJIT_TBLOCK_LAUNCH");
    unsetenv("PDEJIT_TBLOCK_STRIP");
    unsetenv("PDEJIT_TBLOCK_TILE");
    if (!e) fail_msg("%s back end: %s", backend, err);
    engine_set_params(e, sets);
    if (engine_init(e, err, sizeof err) < 0) fail_msg("%s: %s", backend, err);
    return e;
}

/* `steps` steps of p one at a time and with blocks of k steps in bands of `rows` rows: the
 * fields, time and step count equal to the bit. Returns 1 when the blocked engine did block. */
static int blocked_threads = 2;

static int blocked_equals_stepped(const pj_program *p, const char *label, const char *sets, const char *backend,
                                  int single, int k, int rows, int64_t steps)
{
    engine *ref = make_engine(p, backend, single, 1, sets, "off", 0, 0);
    engine *e = make_engine(p, backend, single, blocked_threads, sets, "on", k, rows);
    double dt = p->dt > 0 ? p->dt : 1e-3;
    char err[1024];
    for (int64_t i = 0; i < steps; i++)
        if (engine_step(ref, dt, err, sizeof err) < 0) fail_msg("%s", err);
    int blocked = engine_block_steps(e, steps) > 1;
    assert_int_equal(engine_block_steps(ref, steps), 1); /* off: one at a time */
    if (engine_step_n(e, dt, steps, err, sizeof err) < 0) fail_msg("%s", err);
    assert_true(engine_time(e) == engine_time(ref));
    assert_int_equal(engine_steps(e), engine_steps(ref));
    char what[512];
    snprintf(what, sizeof what, "%s (%s, %s, k %d, rows %d, launch %d, strip %d, %d threads)", label, backend,
             single ? "single" : "double", k, rows, launch_rows, launch_strip, blocked_threads);
    engines_same_bits(ref, e, what);
    engine_destroy(ref);
    engine_destroy(e);
    return blocked;
}

/* Noise and a coefficient field, both axes periodic: rand() must see the mesh's cells. */
static const char prob_noise[] =
    "mesh grid(nx = 19, ny = 14, Lx = 1, Ly = 0.7)\n"
    "field K = 1 + 0.5*sin(2*pi*x)*cos(2*pi*y)\n"
    "field u = 0.5 + 0.1*rand()\n"
    "eq dt(u) = div(K*grad(u))*0.001 + 0.01*(rand() - 0.5) + 0.001*randn()*u\n"
    "periodic x, y\n"
    "time dt = 0.01, until = 1, scheme = rk2\n";

static void samples_blocked_equal(void **state)
{
    (void)state;
    test_case *cases;
    int n = test_cases(&cases);
    assert_true(n >= 10);
    static const int kr[][2] = {{2, 3}, {3, 5}, {4, 1}};
    int blocked = 0, runs = 0;
    for (int i = 0; i <= n; i++) {
        const char *name = i < n ? cases[i].name : "noise", *text = i < n ? cases[i].text : prob_noise;
        pj_program *p = compile_named(name, text);
        if (PJ_SCHEME_IMPLICIT(p->scheme) || p->dim < 2) {
            program_free(p);
            continue;
        }
        for (int be = 0; be < 2; be++)
            for (int single = 0; single <= 1; single++)
                for (size_t c = 0; c < sizeof kr / sizeof *kr; c++) {
                    blocked += blocked_equals_stepped(p, name, i < n ? cases[i].sets : NULL, be ? "cpu" : "interp",
                                                      single, kr[c][0], kr[c][1], 11);
                    runs++;
                }
        print_message("%-24s %dD %s: blocked = stepped\n", name, p->dim, scheme_name(p->scheme));
        program_free(p);
    }
    test_cases_free(cases, n);
    /* every 2D/3D explicit problem of the table blocks (none has hooks or mixed periodic sides) */
    print_message("%d of %d runs blocked\n", blocked, runs);
    assert_true(runs >= 60);
    assert_int_equal(blocked, runs);
}

/* Several rows per launch: launches that end at a band's edge, at the ring's wrap and (periodic)
 * at the mesh's, odd row counts, more rows per launch than a band has, launches cut into strips
 * along x (odd widths, the last strip narrower, x-dependent terms, rand() and x boundaries inside
 * strips), on 1 and 2 threads: still the stepped state to the bit. */
static void launches_blocked_equal(void **state)
{
    (void)state;
    test_case *cases;
    int n = test_cases(&cases);
    /* {k, band rows, rows per launch, cells per strip} */
    static const int cfg[][4] = {{3, 5, 2, 0}, {4, 7, 3, 5}, {2, 3, 5, 16}, {3, 11, 4, 7}, {2, 9, 16, 3}};
    int blocked = 0, runs = 0;
    for (int i = 0; i <= n; i++) {
        const char *name = i < n ? cases[i].name : "noise", *text = i < n ? cases[i].text : prob_noise;
        pj_program *p = compile_named(name, text);
        if (PJ_SCHEME_IMPLICIT(p->scheme) || p->dim < 2) {
            program_free(p);
            continue;
        }
        for (size_t c = 0; c < sizeof cfg / sizeof *cfg; c++) {
            launch_rows = cfg[c][2];
            launch_strip = cfg[c][3];
            blocked_threads = 1 + (int)((c + (size_t)i) % 2);
            const char *backend = (c + (size_t)i / 2) % 2 ? "cpu" : "interp";
            blocked += blocked_equals_stepped(p, name, i < n ? cases[i].sets : NULL, backend, (int)(c == 4),
                                              cfg[c][0], cfg[c][1], 13);
            runs++;
        }
        program_free(p);
    }
    launch_rows = launch_strip = 0;
    blocked_threads = 2;
    test_cases_free(cases, n);
    print_message("%d of %d runs blocked\n", blocked, runs);
    assert_true(runs >= 30);
    assert_int_equal(blocked, runs);
}

static void random_problems_blocked_equal(void **state)
{
    (void)state;
    randexpr r = {4242};
    int done = 0;
    for (int prob = 0; prob < 24; prob++) {
        char *src = randexpr_problem(&r, prob);
        if (prob % 3 == 0) { /* 1D: never blocked */
            free(src);
            continue;
        }
        char label[32];
        snprintf(label, sizeof label, "random problem %d", prob);
        pj_program *p = compile_named(label, src);
        int ok = blocked_equals_stepped(p, label, NULL, prob % 2 ? "cpu" : "interp", 0, 2 + prob % 3, 2 + prob % 4, 7);
        if (!ok) fprintf(stderr, "%s\n", src);
        assert_true(ok);
        program_free(p);
        free(src);
        done++;
    }
    assert_int_equal(done, 16);
}

/* 3D problems for the tiles of y: periodic sides (odd sizes, a tile's rows wrapping), Dirichlet
 * and Neumann sides with two fields (Gray-Scott-like), a Robin wall and a t-dependent condition. */
static const char *const prob_3d[][2] = {
    {"heat3d periodic", "mesh grid(nx = 11, ny = 23, nz = 9, Lx = 1, Ly = 2, Lz = 0.8)\n"
                        "field u = sin(2*pi*x)*cos(pi*y) + 0.3*sin(2*pi*z/0.8) + x\n"
                        "eq dt(u) = 0.01*lap(u) + 0.1*sin(x + y)\n"
                        "periodic x, y, z\n"
                        "time dt = 0.0005, until = 1, scheme = euler\n"},
    {"gray-scott 3d dirichlet", "mesh grid(nx = 9, ny = 17, nz = 8, Lx = 1, Ly = 1.7, Lz = 0.8)\n"
                                "param F = 0.04, k = 0.06\n"
                                "field u = 1 - 0.5*exp(-10*((x-0.5)^2 + (y-0.8)^2 + (z-0.4)^2))\n"
                                "field v = 0.25*exp(-10*((x-0.5)^2 + (y-0.8)^2 + (z-0.4)^2)) + 0.01*y\n"
                                "eq dt(u) = 0.002*lap(u) - u*v*v + F*(1 - u)\n"
                                "eq dt(v) = 0.001*lap(v) + u*v*v - (F + k)*v\n"
                                "on all: u = 1\n"
                                "on all: v = 0\n"
                                "time dt = 0.01, until = 1, scheme = euler\n"},
    {"gray-scott 3d neumann rk2", "mesh grid(nx = 8, ny = 13, nz = 10, Lx = 0.8, Ly = 1.3, Lz = 1)\n"
                                  "field u = 1 - 0.5*exp(-10*((x-0.4)^2 + (y-0.3)^2 + (z-0.5)^2))\n"
                                  "field v = 0.25*exp(-10*((x-0.4)^2 + (y-0.3)^2 + (z-0.5)^2))\n"
                                  "eq dt(u) = 0.002*lap(u) - u*v*v + 0.04*(1 - u)\n"
                                  "eq dt(v) = 0.001*lap(v) + u*v*v - 0.1*v\n"
                                  "on bottom: u + 0.2*dn(u) = x + t\n"
                                  "time dt = 0.01, until = 1, scheme = rk2\n"},
};

/* 3D blocks cut into tiles of rows of y (odd tile heights, a last tile shorter, tiles at and
 * away from the y sides, a periodic y wrapping through a tile), and into tiles of x as well
 * (odd widths, tiles at and away from the x sides, a periodic x wrapping), the table's 3D
 * problems and the ones above, on interp and cpu, 1 and 2 threads: still the stepped state to
 * the bit. */
static void tiles_blocked_equal(void **state)
{
    (void)state;
    test_case *cases;
    int n = test_cases(&cases), n3 = (int)(sizeof prob_3d / sizeof *prob_3d);
    /* {k, band rows (0: whole columns), rows of y per tile, cells of x per tile (0: whole rows)} */
    static const int cfg[][4] = {{2, 0, 1, 0}, {3, 4, 2, 0}, {2, 3, 5, 0}, {4, 0, 3, 0}, {2, 0, 3, 3}, {3, 4, 2, 1}, {2, 0, 4, 2}};
    int blocked = 0, runs = 0;
    for (int i = 0; i < n + n3; i++) {
        const char *name = i < n ? cases[i].name : prob_3d[i - n][0], *text = i < n ? cases[i].text : prob_3d[i - n][1];
        pj_program *p = compile_named(name, text);
        if (PJ_SCHEME_IMPLICIT(p->scheme) || p->dim != 3) {
            program_free(p);
            continue;
        }
        for (size_t c = 0; c < sizeof cfg / sizeof *cfg; c++) {
            launch_tile = cfg[c][2];
            launch_tile_x = cfg[c][3];
            blocked_threads = 1 + (int)((c + (size_t)i) % 2);
            const char *backend = (c + (size_t)i) % 3 ? "cpu" : "interp";
            blocked += blocked_equals_stepped(p, name, i < n ? cases[i].sets : NULL, backend, (int)(c == 3), cfg[c][0],
                                              cfg[c][1], 9);
            runs++;
        }
        print_message("%-24s 3D %s: tiles blocked = stepped\n", name, scheme_name(p->scheme));
        program_free(p);
    }
    launch_tile = launch_tile_x = 0;
    blocked_threads = 2;
    test_cases_free(cases, n);
    assert_true(runs >= 28);
    assert_int_equal(blocked, runs);
}

/* Gray-Scott on 64x150x20 (planes too large for the L2's rings, and whole pages: mirrored rings)
 * with the given sides. */
#define GS3D_PERIODIC "periodic x, y, z\n"
static pj_program *compile_gs3d(const char *name, const char *sides)
{
    char src[1024];
    snprintf(src, sizeof src,
             "mesh grid(nx = 64, ny = 150, nz = 20, Lx = 64, Ly = 150, Lz = 20)\n"
             "field u = 1 - 0.5*exp(-((x - 32)^2 + (y - 75)^2 + (z - 10)^2)/50)\n"
             "field v = 0.25*exp(-((x - 32)^2 + (y - 75)^2 + (z - 10)^2)/50)\n"
             "eq dt(u) = 0.1*lap(u) - u*v*v + 0.04*(1 - u)\n"
             "eq dt(v) = 0.05*lap(v) + u*v*v - 0.1*v\n%s"
             "time dt = 1, until = 100, scheme = euler\n",
             sides);
    return compile_named(name, src);
}

/* Sizes not forced: planes too large for the L2's rings (two fields), so the blocks go in tiles,
 * their sizes measured on the first blocks (every candidate's K and tile rows in turn, then the
 * fastest): the stepped state to the bit across all of them, periodic and Dirichlet. */
static void tiles_measured_blocked_equal(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        pj_program *p = compile_gs3d(i ? "gray-scott 3d dirichlet, measured" : "gray-scott 3d periodic, measured",
                                     i ? "on all: u = 1\non all: v = 0\n" : GS3D_PERIODIC);
        blocked_threads = 1 + i;
        assert_true(blocked_equals_stepped(p, "gray-scott 3d, measured tiles", NULL, "cpu", 0, 0, 0, 160));
        program_free(p);
    }
    blocked_threads = 2;
}

/* Measuring the candidate tile sizes allocates the rings once, before the first block, for the
 * largest of the candidates at their own steps per sweep: sized for the first block's steps
 * instead (or from sizes a candidate without tiles never set), they were allocated and cleared
 * again inside a later candidate's measured block, which made it look slower than it was. The
 * blocks are taken as `pdejit run` takes them (driver.c: the last step before an output or the
 * end alone), the first one short. */
static void measuring_allocates_rings_once(void **state)
{
    (void)state;
    pj_program *p = compile_gs3d("gray-scott 3d, rings allocated once", GS3D_PERIODIC);
    for (int threads = 1; threads <= 2; threads++) {
        setenv("PDEJIT_TBLOCK", "on", 1);
        sim_options o = {.threads = threads};
        char err[256] = "";
        sim *s = sim_create(p, &o, err, sizeof err);
        unsetenv("PDEJIT_TBLOCK");
        if (!s) fail_msg("sim_create: %s", err);
        int cand = 0, tile_x = 0, blocks = 0;
        assert_true(sim_tblock_tile(s, &cand, &tile_x) > 0); /* tiles of y, their sizes to measure */
        assert_int_equal(cand, -1);
        for (int64_t left = 100; left > 0;) { /* the first block of 3 steps: an output at t = 4 */
            int64_t m = left > 1 ? sim_tblock_steps(s, left == 100 ? 3 : left - 1) : 1;
            if (m < 1) m = 1;
            assert_int_equal(m > 1 ? sim_step_n(s, 1.0, m) : sim_step(s, 1.0), 0);
            blocks += m > 1;
            left -= m;
        }
        sim_tblock_tile(s, &cand, &tile_x);
        assert_true(cand >= 0 && cand < TBLOCK_CANDS); /* measured, one kept */
        assert_true(blocks > 3);
        assert_int_equal(s->tb_allocs, 1);
        sim_destroy(s);
    }
    program_free(p);
}

/* 3D planes of 64 KiB or more are whole pages apart (grid.h), and their rings are mapped twice
 * in a row (tblock.c: no copies of the planes kept twice); smaller planes keep their size and
 * the copies. Both give the stepped bits (tiles_blocked_equal: small planes;
 * tiles_measured_blocked_equal: large ones). */
static void rings_mirrored_where_planes_are_pages(void **state)
{
    (void)state;
    static const char *const mesh[] = {"nx = 64, ny = 150, nz = 20", "nx = 11, ny = 23, nz = 9"};
    for (int i = 0; i < 2; i++) {
        char src[512];
        snprintf(src, sizeof src,
                 "mesh grid(%s, Lx = 1, Ly = 2, Lz = 1)\nfield u = x*y + z\neq dt(u) = 0.01*lap(u)\nperiodic x, y, z\n"
                 "time dt = 1, steps = 8, scheme = euler\n",
                 mesh[i]);
        pj_program *p = compile_named(mesh[i], src);
        setenv("PDEJIT_TBLOCK", "on", 1);
        setenv("PDEJIT_TBLOCK_K", "4", 1);
        setenv("PDEJIT_TBLOCK_TILE", "8", 1);
        sim_options o = {.threads = 1};
        char err[256] = "";
        sim *s = sim_create(p, &o, err, sizeof err);
        unsetenv("PDEJIT_TBLOCK");
        unsetenv("PDEJIT_TBLOCK_K");
        unsetenv("PDEJIT_TBLOCK_TILE");
        if (!s) fail_msg("sim_create: %s", err);
        const int64_t plane = s->L.stride[2] * (int64_t)sizeof(double), rows = s->L.stride[1] * s->st.g.ext[1];
        assert_int_equal(sim_step_n(s, 1.0, 4), 0);
        print_message("%s: planes of %lld bytes, rings %s\n", mesh[i], (long long)plane,
                      tblock_mirrored(s) ? "mirrored" : "copied");
        if (i == 0) {
            assert_int_equal(plane % 4096, 0);
            assert_true(s->L.stride[2] >= rows && s->L.stride[2] - rows < 4096 / (int64_t)sizeof(double));
        } else
            assert_int_equal(s->L.stride[2], rows);
        assert_int_equal(tblock_mirrored(s), i == 0);
        sim_destroy(s);
        program_free(p);
    }
}

/* Mirrored rings are shared memory, which fork() does not copy: a forked child stepping the same
 * engine while its parent steps allocates rings of its own, so neither writes into the other's
 * blocks (with the parent's rings kept, the child's blocks overwrote the parent's rows between
 * its stages). The parent's state equals the stepped one to the bit. */
static void forked_child_gets_its_own_rings(void **state)
{
    (void)state;
    pj_program *p = compile_gs3d("gray-scott 3d, forked", GS3D_PERIODIC);
    launch_tile = 8;
    engine *ref = make_engine(p, "cpu", 0, 1, NULL, "off", 0, 0), *e = make_engine(p, "cpu", 0, 1, NULL, "on", 4, 0);
    launch_tile = 0;
    char err[1024];
    const int64_t blocks = 150;
    if (engine_step_n(e, 1.0, 4, err, sizeof err) < 0) fail_msg("%s", err); /* the rings mapped */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) { /* the child steps the same engine meanwhile; its state is its own */
        int rc = 0;
        for (int64_t i = 0; i < blocks && rc == 0; i++) rc = engine_step_n(e, 1.0, 4, err, sizeof err);
        _exit(rc == 0 ? 0 : 1);
    }
    for (int64_t i = 1; i < blocks; i++)
        if (engine_step_n(e, 1.0, 4, err, sizeof err) < 0) fail_msg("%s", err);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int64_t i = 0; i < 4 * blocks; i++)
        if (engine_step(ref, 1.0, err, sizeof err) < 0) fail_msg("%s", err);
    engines_same_bits(ref, e, "forked");
    engine_destroy(ref);
    engine_destroy(e);
    program_free(p);
}

/* Without blocking forced, a small state (in the cache) steps one at a time; off is off. */
static void auto_keeps_small_states(void **state)
{
    (void)state;
    pj_program *p = compile_named("noise", prob_noise);
    engine *e = make_engine(p, "cpu", 0, 2, NULL, "auto", 0, 0);
    assert_int_equal(engine_block_steps(e, 100), 1);
    engine_destroy(e);
    e = make_engine(p, "cpu", 0, 2, NULL, "off", 3, 4);
    assert_int_equal(engine_block_steps(e, 100), 1);
    engine_destroy(e);
    e = make_engine(p, "cpu", 0, 2, NULL, "on", 3, 4);
    assert_int_equal(engine_block_steps(e, 100), 3);
    assert_int_equal(engine_block_steps(e, 2), 2);
    assert_int_equal(engine_block_steps(e, 1), 1);
    engine_destroy(e);
    program_free(p);
}

/* Auto blocks where a thread's share of the state exceeds 8 second-level caches (or the whole state
 * the last-level cache): a mesh of 1.5 times that on one thread is blocked there, and on two
 * threads (each with half of it) only when it exceeds the last-level cache. */
static void auto_blocks_beyond_the_l2(void **state)
{
    (void)state;
    double l2 = (double)sim_cache_bytes(2), llc = (double)sim_cache_bytes(0);
    const int nx = 256;
    int ny = (int)(1.5 * 8 * l2 / (2.0 * 8 * (nx + 2))); /* two buffers of doubles, rows with ghosts */
    char text[512];
    snprintf(text, sizeof text,
             "mesh grid(nx = %d, ny = %d)\nfield u = x*y\neq dt(u) = 0.1*lap(u)\nperiodic x, y\n"
             "time dt = 0.001, steps = 4, scheme = euler\n",
             nx, ny);
    pj_program *p = compile_named("auto", text);
    engine *e = make_engine(p, "interp", 0, 1, NULL, "auto", 0, 0);
    assert_true(engine_block_steps(e, 100) > 1);
    engine_destroy(e);
    e = make_engine(p, "interp", 0, 2, NULL, "auto", 0, 0);
    int64_t k = engine_block_steps(e, 100);
    print_message("L2 %.0f KiB, LLC %.0f MiB, %d rows: 1 thread blocked, 2 threads %lld steps per sweep\n", l2 / 1024,
                  llc / 1048576, ny, (long long)k);
    if (2.0 * 8 * (nx + 2) * (ny + 2) <= llc) assert_int_equal(k, 1);
    engine_destroy(e);
    program_free(p);
}

/* Rows too wide for 8 steps in the L2's rings (2D): the rings are sized from a quarter of the
 * last-level cache's share per thread instead, so a sweep still takes 16 steps or more where
 * that share holds them (8192² here: 32 instead of 4); a cache too small for that keeps the
 * L2's few. */
static void wide_rows_ring_in_the_llc(void **state)
{
    (void)state;
    double l2 = (double)sim_cache_bytes(2), llc = (double)sim_cache_bytes(0);
    int nx = (int)(0.75 * l2 / (2.0 * 8 * 12)) - 2; /* 12 rows of two buffers fill 3/4 of the L2 */
    double row = 2.0 * 8 * (nx + 2);
    char text[512];
    snprintf(text, sizeof text,
             "mesh grid(nx = %d, ny = 512)\nfield u = x*y\neq dt(u) = 0.1*lap(u)\nperiodic x, y\n"
             "time dt = 0.001, steps = 4, scheme = euler\n",
             nx);
    pj_program *p = compile_named("wide", text);
    engine *e = make_engine(p, "interp", 0, 1, NULL, "on", 0, 0);
    int64_t k = engine_block_steps(e, 100);
    print_message("L2 %.0f KiB, LLC %.0f MiB, rows of %d cells: %lld steps per sweep\n", l2 / 1024, llc / 1048576, nx,
                  (long long)k);
    /* the L2 alone would give 12 planes less 4H + 2 + r - 1 (r = 3 rows per launch here): 5 */
    if (llc / 4 >= row * (16 + 4 + 2 + 16)) assert_true(k >= 16); /* r is at most 16 */
    assert_true(k >= 2 && k <= 32);
    engine_destroy(e);
    program_free(p);
}

/* The run loop: outputs and monitors at times that fall inside blocks, and the end, are the same
 * files to the byte with blocking forced on as with it off. */
static void run_outputs_equal(void **state)
{
    (void)state;
    static const char prob[] =
        "mesh grid(nx = 16, ny = 12)\n"
        "field u = exp(-20*((x-0.4)^2 + (y-0.5)^2))\n"
        "field v = 0.3*y\n"
        "eq dt(u) = 0.01*lap(u) + u*v - u^3\n"
        "eq dt(v) = 0.02*lap(v) - 0.1*u\n"
        "periodic x\n"
        "on bottom: v = sin(3*t)\n"
        "on top: u + 0.1*dn(u) = t\n"
        "time dt = 0.001, until = 0.037, scheme = rk3\n"
        "output every = 0.0105, format = csv\n"
        "monitor every = 0.007, mass = integral(u), peak = maxval(v)\n";
    char path[512];
    snprintf(path, sizeof path, "%s/tb.pde", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(prob, f);
    fclose(f);
    char *out = NULL;
    const char *modes[] = {"off", "on"};
    for (int m = 0; m < 2; m++) {
        setenv("PDEJIT_TBLOCK", modes[m], 1);
        setenv("PDEJIT_TBLOCK_K", "4", 1);
        setenv("PDEJIT_TBLOCK_ROWS", "3", 1);
        int rc = tu_pdejit(&out, "run tb.pde --threads 2 --out out_%s --dump final_%s.csv --quiet", modes[m],
                           modes[m]);
        unsetenv("PDEJIT_TBLOCK");
        unsetenv("PDEJIT_TBLOCK_K");
        unsetenv("PDEJIT_TBLOCK_ROWS");
        if (rc != 0) fail_msg("pdejit run (%s): %s", modes[m], out);
        free(out);
    }
    snprintf(path, sizeof path, "%s/out_off", tu_dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    int files = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.') continue;
        char pa[768], pb[768];
        snprintf(pa, sizeof pa, "%s/out_off/%s", tu_dir, de->d_name);
        snprintf(pb, sizeof pb, "%s/out_on/%s", tu_dir, de->d_name);
        size_t la = 0, lb = 0;
        char *a = tu_read_file(pa, &la), *b = tu_read_file(pb, &lb);
        assert_non_null(a);
        if (!b || la != lb || memcmp(a, b, la)) fail_msg("%s differs with blocking on", de->d_name);
        free(a);
        free(b);
        files++;
    }
    closedir(d);
    /* snapshots at 0, 0.0105, 0.021, 0.0315, 0.037 and monitor.csv */
    assert_true(files >= 6);
    char pa[768], pb[768];
    snprintf(pa, sizeof pa, "%s/final_off.csv", tu_dir);
    snprintf(pb, sizeof pb, "%s/final_on.csv", tu_dir);
    size_t la = 0, lb = 0;
    char *a = tu_read_file(pa, &la), *b = tu_read_file(pb, &lb);
    assert_true(a && b && la == lb && !memcmp(a, b, la));
    free(a);
    free(b);
}

/* A blow-up: step by step the check names the first step with a non-finite value; blocked (4 steps
 * per sweep) it is found at the end of the block that holds that step, as documented. */
static int nan_step(const char *mode)
{
    static const char prob[] = "mesh grid(nx = 12, ny = 10)\n"
                               "field u = 1 + x\n"
                               "eq dt(u) = 10*u*u + 0.01*lap(u)\n"
                               "periodic x, y\n"
                               "time dt = 0.01, steps = 60, scheme = euler\n";
    char path[512], *out = NULL;
    snprintf(path, sizeof path, "%s/nan.pde", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(prob, f);
    fclose(f);
    setenv("PDEJIT_TBLOCK", mode, 1);
    setenv("PDEJIT_TBLOCK_K", "4", 1);
    setenv("PDEJIT_TBLOCK_ROWS", "3", 1);
    int rc = tu_pdejit(&out, "run nan.pde --threads 2 --out none --quiet");
    unsetenv("PDEJIT_TBLOCK");
    unsetenv("PDEJIT_TBLOCK_K");
    unsetenv("PDEJIT_TBLOCK_ROWS");
    assert_int_equal(rc, 1);
    const char *at = strstr(out, "non-finite value");
    assert_non_null(at);
    at = strstr(at, "at step ");
    assert_non_null(at);
    int step = atoi(at + 8);
    free(out);
    return step;
}

static void nonfinite_found_after_the_block(void **state)
{
    (void)state;
    int s0 = nan_step("off"), s1 = nan_step("on");
    print_message("non-finite: step %d one at a time, step %d blocked\n", s0, s1);
    assert_true(s0 > 4);
    assert_true(s1 >= s0 && s1 < s0 + 4);
    assert_int_equal(s1 % 4, 0);
}

/* pj_sim_get_info's stepping for src advanced to `until` in steps of 0.001 (api_sim_start: the
 * cpu back end, one thread), with $PDEJIT_TBLOCK, _K and _TILE set to tblock, k and tile (NULL:
 * unset) when it is created; into buf ("(null)" for none). */
static const char *stepping_of(const char *src, const char *tblock, const char *k, const char *tile, double until,
                               char *buf, size_t len)
{
    const char *names[] = {"PDEJIT_TBLOCK", "PDEJIT_TBLOCK_K", "PDEJIT_TBLOCK_TILE"}, *values[] = {tblock, k, tile};
    for (int i = 0; i < 3; i++)
        if (values[i]) setenv(names[i], values[i], 1);
    api_sim a = api_sim_start("s.pde", src, NULL);
    for (int i = 0; i < 3; i++) unsetenv(names[i]);
    char err[512];
    if (pj_sim_advance(a.sim, 0.001, until, err, sizeof err) != PJ_OK) fail_msg("%s", err);
    pj_sim_info info;
    pj_sim_get_info(a.sim, &info);
    snprintf(buf, len, "%s", info.stepping ? info.stepping : "(null)");
    api_sim_end(&a, NULL, NULL);
    return buf;
}

/* How the steps ran, as pj_sim_get_info and `pdejit run --verbose` say: the threads, the steps a
 * sweep of the blocked sweeps, their 3D tiles and how many steps they took, else one step a
 * sweep; nothing for an implicit scheme (the solver's report says how it stepped). */
static void stepping_reported(void **state)
{
    (void)state;
    char got[256];
    const char *p2 = "mesh grid(nx = 80, ny = 64)\nfield u = x*y\neq dt(u) = 0.01*lap(u)\nperiodic x, y\n"
                     "time dt = 0.001, steps = 12\n";
    const char *p3 = "mesh grid(nx = 12, ny = 20, nz = 10)\nfield u = x*y + z\neq dt(u) = 0.01*lap(u)\n"
                     "periodic x, y, z\ntime dt = 0.001, steps = 12\n";
    /* the run's last step lands on its end alone: 11 steps in sweeps of 3, 3, 3 and 2 */
    assert_string_equal(stepping_of(p2, "on", "3", NULL, 0.012, got, sizeof got),
                        "temporal blocking, 3 steps a sweep (11 steps blocked); 1 thread");
    assert_string_equal(stepping_of(p2, "off", NULL, NULL, 0.012, got, sizeof got), "one step a sweep; 1 thread");
    assert_string_equal(stepping_of(p3, "on", "2", "5", 0.012, got, sizeof got),
                        "temporal blocking, 2 steps a sweep in tiles of 5 rows of y (10 steps blocked); 1 thread");
    /* sweeps of 4, 4 and 2 (cut short by the end): the 4 is what it says */
    assert_string_equal(stepping_of(p2, "on", "4", NULL, 0.011, got, sizeof got),
                        "temporal blocking, 4 steps a sweep (10 steps blocked); 1 thread");
    const char *imp = "mesh grid(nx = 20, ny = 20)\nfield u = x*y\neq dt(u) = lap(u)\non all: u = 0\n"
                      "time dt = 0.001, steps = 2, scheme = beuler\n";
    assert_string_equal(stepping_of(imp, "on", "3", NULL, 0.002, got, sizeof got), "(null)");
    /* the command's --verbose line */
    tu_write_file("st.pde", p2);
    char *out = NULL;
    setenv("PDEJIT_TBLOCK", "on", 1);
    setenv("PDEJIT_TBLOCK_K", "3", 1);
    int rc = tu_pdejit(&out, "run st.pde --threads 2 --out none --verbose");
    unsetenv("PDEJIT_TBLOCK");
    unsetenv("PDEJIT_TBLOCK_K");
    assert_int_equal(rc, 0);
    if (!strstr(out, "\npdejit: stepping: temporal blocking, 3 steps a sweep (11 steps blocked); 2 threads\n"))
        fail_msg("no stepping line in:\n%s", out);
    free(out);
    assert_int_equal(tu_pdejit(&out, "run st.pde --threads 1 --out none"), 0);
    assert_null(strstr(out, "stepping"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(samples_blocked_equal),
        cmocka_unit_test(launches_blocked_equal),
        cmocka_unit_test(random_problems_blocked_equal),
        cmocka_unit_test(tiles_blocked_equal),
        cmocka_unit_test(tiles_measured_blocked_equal),
        cmocka_unit_test(measuring_allocates_rings_once),
        cmocka_unit_test(rings_mirrored_where_planes_are_pages),
        cmocka_unit_test(forked_child_gets_its_own_rings),
        cmocka_unit_test(auto_keeps_small_states),
        cmocka_unit_test(auto_blocks_beyond_the_l2),
        cmocka_unit_test(wide_rows_ring_in_the_llc),
        cmocka_unit_test(run_outputs_equal),
        cmocka_unit_test(nonfinite_found_after_the_block),
        cmocka_unit_test(stepping_reported),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
