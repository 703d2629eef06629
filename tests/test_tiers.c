/* test_tiers.c — the CPU back end's two tiers (backends/cpu/cpu_tier.h): stage kernels start at
 * the quick tier (no loop strength reduction), the final tier is compiled on a background thread
 * and swapped in at a step boundary. Checked against the interpreter, to the bit, on every step
 * before and after the swap (2D two fields rk2, 3D with walls rk4, 1D with rand()); then the
 * cache: a run that never tiered up leaves the quick object, a later run starts from it and tiers
 * up (the entry replaced), a run after that loads the final tier at once, and a back end that asks
 * for the final tier never takes a quick object; a run that ends while its final tier compiles
 * leaves what was compiled to the next. Then the final tier's 2D kernels, which compute two
 * rows a pass (an odd last row by a one-row function): the interpreter's bits one step at a time
 * and blocked, over odd row counts, bands and launches, with y in coordinates, rand() and a
 * stretched y's metric. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cpu_backend.h"
#include "sim.h"
#include "solve.h"

static const char *const probs[][2] = {
    {"gray-scott rk2",
     "mesh grid(nx = 40, ny = 24, Lx = 2.5, Ly = 1.5)\nparam Du = 2e-5, Dv = 1e-5, F = 0.035, k = 0.065\n"
     "field u = 1 - 0.5*exp(-20*((x-1.2)^2 + (y-0.7)^2))\nfield v = 0.25*exp(-20*((x-1.2)^2 + (y-0.7)^2))\n"
     "eq dt(u) = Du*lap(u) - u*v^2 + F*(1 - u)\neq dt(v) = Dv*lap(v) + u*v^2 - (F + k)*v\n"
     "periodic x, y\ntime dt = 1, steps = 1, scheme = rk2\n"},
    {"3D walls rk4",
     "mesh grid(nx = 12, ny = 10, nz = 9)\nfield u = x*y + z*z\neq dt(u) = 0.01*lap(u) + 0.1*u*(1 - u)\n"
     "periodic x\non bottom: u = sin(t)\non top: dn(u) = 1\non front: u = 0\non back: u = x\n"
     "time dt = 0.01, steps = 1, scheme = rk4\n"},
    {"1D rand euler",
     "mesh grid(nx = 50)\nfield u = 0.5 + 0.1*rand()\neq dt(u) = 0.002*lap(u) + 0.01*(rand() - 0.5)*u\n"
     "periodic x\ntime dt = 0.01, steps = 1, scheme = euler\n"},
};

static int n_threads = 1; /* of the sims made next */

static sim *make_sim(const pj_program *p, cpu_backend **be, int final_tier)
{
    char err[1024];
    sim_options so = {.threads = n_threads, .seed = 3};
    sim *s = sim_create(p, &so, err, sizeof err);
    if (!s) fail_msg("%s", err);
    if (be) {
        cpu_backend_options bo = {0, 0, NULL, final_tier};
        *be = cpu_backend_create(&bo, err, sizeof err);
        if (!*be || cpu_backend_prepare(*be, p, err, sizeof err) < 0) fail_msg("cpu back end: %s", err);
        cpu_backend_install(*be, s);
    }
    sim_init(s);
    return s;
}

static int64_t cells(const pj_program *p) { return p->n[0] * p->n[1] * p->n[2]; }

/* Every field of a and b the same bits. */
static void same_bits(const pj_program *p, sim *a, sim *b, const char *what, int64_t step)
{
    int64_t n = cells(p);
    double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    assert_non_null(x);
    assert_non_null(y);
    for (int f = 0; f < p->n_fields; f++) {
        sim_get_field(a, f, x);
        sim_get_field(b, f, y);
        if (memcmp(x, y, sizeof *x * (size_t)n)) fail_msg("%s: field %d differs after step %lld", what, f, (long long)step);
    }
    free(x);
    free(y);
}

/* Steps the cpu sim and the interpreter's alike until the cpu back end has tiered up (or a
 * minute has passed), then 3 steps more; the same bits after every step. Returns the tier. */
static int step_until_final(const pj_program *p, const char *what, int expect_start)
{
    cpu_backend *be;
    sim *c = make_sim(p, &be, 0), *r = make_sim(p, NULL, 0);
    assert_int_equal(cpu_backend_tier(be), expect_start);
    int after = -1;
    time_t t0 = time(NULL);
    for (int64_t step = 1; after < 3 && time(NULL) - t0 < 60; step++) {
        assert_int_equal(sim_step(c, p->dt), 0);
        assert_int_equal(sim_step(r, p->dt), 0);
        cpu_backend_ran(be);
        same_bits(p, c, r, what, step);
        if (cpu_backend_tier(be) != 1) after++;
        else {
            struct timespec ts = {0, 200000}; /* let the background compile have the core */
            nanosleep(&ts, NULL);
        }
    }
    int tier = cpu_backend_tier(be);
    sim_destroy(c);
    sim_destroy(r);
    cpu_backend_destroy(be);
    return tier;
}

static void set_cache(const char *name)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", tu_dir, name);
    setenv("PDEJIT_CACHE_DIR", dir, 1);
}

/* Quick tier, swap, final tier: the interpreter's bits throughout. */
static void swap_keeps_bits(void **state)
{
    (void)state;
    set_cache("swap");
    setenv("PDEJIT_TIER_UP_MS", "0", 1);
    for (size_t i = 0; i < sizeof probs / sizeof probs[0]; i++) {
        pj_program *p = compile_named(probs[i][0], probs[i][1]);
        assert_int_equal(step_until_final(p, probs[i][0], 1), 2);
        program_free(p);
    }
    unsetenv("PDEJIT_TIER_UP_MS");
}

/* What the cache holds after each kind of run, and where the next run starts. */
static void cache_tiers(void **state)
{
    (void)state;
    set_cache("tiers");
    pj_program *p = compile_named(probs[0][0], probs[0][1]);
    setenv("PDEJIT_TIER_UP_MS", "-1", 1); /* never: a short run */
    cpu_backend *be;
    sim *s = make_sim(p, &be, 0);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(sim_step(s, p->dt), 0);
        cpu_backend_ran(be);
    }
    assert_int_equal(cpu_backend_tier(be), 1);
    sim_destroy(s);
    cpu_backend_destroy(be);
    /* the next run: the quick objects from the cache, then the final tier */
    setenv("PDEJIT_TIER_UP_MS", "0", 1);
    assert_int_equal(step_until_final(p, "from the cached quick tier", 1), 2);
    /* and the one after: the final tier's objects at once */
    assert_int_equal(step_until_final(p, "from the cached final tier", 0), 0);
    unsetenv("PDEJIT_TIER_UP_MS");
    /* a quick object in the cache, final tier asked for: compiled again at the final tier */
    set_cache("final");
    setenv("PDEJIT_TIER_UP_MS", "-1", 1);
    s = make_sim(p, &be, 0);
    assert_int_equal(cpu_backend_tier(be), 1);
    sim_destroy(s);
    cpu_backend_destroy(be);
    unsetenv("PDEJIT_TIER_UP_MS");
    s = make_sim(p, &be, 1);
    int n;
    const kernel_timing *tm = cpu_backend_timings(be, &n);
    assert_int_equal(n, 2);
    assert_false(tm[0].from_cache || tm[1].from_cache);
    assert_int_equal(cpu_backend_tier(be), 0);
    sim_destroy(s);
    cpu_backend_destroy(be);
    program_free(p);
}

/* Kernels about to be swapped out (cpu_backend_stop_tier, as a hot swap's prepare does): their
 * final tier never starts, the quick tier keeps stepping with the interpreter's bits, and the
 * back end is destroyed without a compile to wait for. */
static void stopped_tier_stays_quick(void **state)
{
    (void)state;
    set_cache("stopped");
    setenv("PDEJIT_TIER_UP_MS", "0", 1);
    pj_program *p = compile_named(probs[0][0], probs[0][1]);
    cpu_backend *be;
    sim *c = make_sim(p, &be, 0), *r = make_sim(p, NULL, 0);
    assert_int_equal(cpu_backend_tier(be), 1);
    cpu_backend_stop_tier(be);
    for (int64_t step = 1; step <= 50; step++) {
        assert_int_equal(sim_step(c, p->dt), 0);
        assert_int_equal(sim_step(r, p->dt), 0);
        cpu_backend_ran(be);
        same_bits(p, c, r, "stopped tier", step);
        assert_false(cpu_backend_busy(be));
    }
    assert_int_equal(cpu_backend_tier(be), 1);
    sim_destroy(c);
    sim_destroy(r);
    cpu_backend_destroy(be);
    program_free(p);
    unsetenv("PDEJIT_TIER_UP_MS");
}

/* A run that ends while its final tier is compiled in the background, never swapped in: the
 * objects compiled go into the cache (cpu_backend_destroy), so the next run starts at the final
 * tier rather than compiling it again. */
static void ended_run_keeps_final_tier(void **state)
{
    (void)state;
    set_cache("ended");
    setenv("PDEJIT_TIER_UP_MS", "0", 1);
    pj_program *p = compile_named(probs[0][0], probs[0][1]);
    cpu_backend *be;
    sim *s = make_sim(p, &be, 0);
    assert_int_equal(cpu_backend_tier(be), 1);
    assert_int_equal(sim_step(s, p->dt), 0);
    cpu_backend_ran(be); /* starts the background compile */
    assert_true(cpu_backend_busy(be));
    time_t t0 = time(NULL);
    while (cpu_backend_busy(be) && time(NULL) - t0 < 60) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(cpu_backend_tier(be), 1); /* compiled, not swapped in: no step polled it */
    sim_destroy(s);
    cpu_backend_destroy(be);
    assert_int_equal(step_until_final(p, "after an ended run", 0), 0);
    program_free(p);
    unsetenv("PDEJIT_TIER_UP_MS");
}

/* The final tier's two rows a pass: on 1 and 3 threads (bands of odd rows), one step at a time
 * and blocked (3 steps a sweep, launches of 3 rows), the interpreter's bits after every batch. */
static void two_rows_keep_bits(void **state)
{
    (void)state;
    set_cache("rows");
    static const char *const two[][2] = {
        {"odd rows, walls, stretched y, rand()",
         "mesh grid(nx = 37, ny = 23, Lx = 1, Ly = 0.7, y = stretch(1.03))\nfield u = x*y + 0.1*rand()\n"
         "eq dt(u) = 0.01*lap(u) + 0.1*y*u*(1 - u) + 0.01*(rand() - 0.5)\nperiodic x\n"
         "on bottom: u = sin(t)\non top: dn(u) = 1\ntime dt = 0.001, steps = 1, scheme = rk2\n"},
        {probs[0][0], probs[0][1]},
    };
    for (size_t i = 0; i < sizeof two / sizeof two[0]; i++) {
        pj_program *p = compile_named(two[i][0], two[i][1]);
        for (n_threads = 1; n_threads <= 3; n_threads += 2)
            for (int blocked = 0; blocked < 2; blocked++) {
                setenv("PDEJIT_TBLOCK_LAUNCH", "3", 1);
                cpu_backend *be;
                sim *c = make_sim(p, &be, 1), *r = make_sim(p, NULL, 0);
                unsetenv("PDEJIT_TBLOCK_LAUNCH");
                assert_int_equal(cpu_backend_tier(be), 0);
                if (blocked) {
                    sim_set_tblock(c, 1, 3, 0);
                    assert_int_equal(sim_tblock_steps(c, 6), 3);
                }
                for (int64_t step = 6; step <= 18; step += 6) {
                    if (blocked) assert_int_equal(sim_step_n(c, p->dt, 6), 0);
                    for (int j = 0; j < 6; j++) {
                        if (!blocked) assert_int_equal(sim_step(c, p->dt), 0);
                        assert_int_equal(sim_step(r, p->dt), 0);
                    }
                    same_bits(p, c, r, two[i][0], step);
                }
                sim_destroy(c);
                sim_destroy(r);
                cpu_backend_destroy(be);
            }
        program_free(p);
    }
    n_threads = 1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(swap_keeps_bits),
        cmocka_unit_test(cache_tiers),
        cmocka_unit_test(stopped_tier_stays_quick),
        cmocka_unit_test(ended_run_keeps_final_tier),
        cmocka_unit_test(two_rows_keep_bits),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
