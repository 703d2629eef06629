/* test_exec.c — the engine's executor calls (engine.h's second section, runtime/simulation.c) on
 * both host back ends: a typed kernel run once (engine_run; engine_eval with and without a rows
 * function, as terms use it) writes the right-hand side F(u) = 3 - a*u into slot 1, with every
 * outer row run exactly once and the same bits either way; a buffer viewed in place and copied out
 * agree; a kernel the CPU back end was not asked for is refused; params, the clock and a field in
 * and out through the generic half. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "solve.h"

#define NX 37
#define NY 5

static const char *src = "mesh grid(nx = 37, ny = 5, Lx = 1, Ly = 1)\nparam a = 2\nfield u = x + 10*y\n"
                         "eq dt(u) = 3 - a*u\ntime dt = 1e-3, steps = 1, scheme = euler\n";

typedef struct rows_seen { int count[NY]; } rows_seen;

/* A caller's shaping of the launch: one row at a time, each row counted. */
static void one_row_at_a_time(void *ctx, exec_kernel_fn run, void *run_ctx, const kir_launch *L, int64_t begin,
                              int64_t end)
{
    rows_seen *r = ctx;
    for (int64_t y = begin; y < end; y++) {
        __atomic_add_fetch(&r->count[y], 1, __ATOMIC_RELAXED);
        run(run_ctx, L, y, y + 1);
    }
}

/* F = 3 - a*u at every cell, to rounding (the CPU back end may fuse the product). */
static void assert_rhs(const double *u, const double *f, double a)
{
    for (int c = 0; c < NX * NY; c++) {
        double want = 3 - a * u[c];
        assert_true(fabs(f[c] - want) <= 1e-14 * (1 + fabs(want)));
    }
}

static void typed_kernels_once(void **state)
{
    (void)state;
    pj_program *p = compile_text(src);
    static const char *const backends[] = {"interp", "cpu"};
    for (int i = 0; i < 2; i++) {
        char err[512] = "";
        static const pj_kernel_id rhs = PJ_KERNEL_RHS; /* what the CPU back end compiles */
        engine_options o = {.threads = 2, .kernels = &rhs, .n_kernels = 1};
        engine *e = engine_create(engine_backend(backends[i]), p, &o, NULL, err, sizeof err);
        if (!e) fail_msg("%s: %s", backends[i], err);
        assert_int_equal(engine_init(e, err, sizeof err), 0);
        double u[NX * NY], f[NX * NY], g[NX * NY];
        assert_int_equal(engine_get_field(e, 0, u, err, sizeof err), 0);
        assert_true(fabs(u[0] - (0.5 / NX + 10 * 0.5 / NY)) <= 1e-15);

        /* F into slot 1's buffer (n_fields + 0) */
        assert_int_equal(engine_run(e, PJ_KERNEL_RHS, 0, 1, err, sizeof err), 0);
        assert_int_equal(engine_get_buffer(e, p->n_fields, f, err, sizeof err), 0);
        assert_rhs(u, f, 2);

        /* a param set through the generic half, the kernel shaped row by row */
        assert_int_equal(engine_set_param(e, "a", 5), 0);
        assert_true(engine_params(e)[0] == 5);
        rows_seen seen = {{0}};
        assert_int_equal(engine_eval(e, PJ_KERNEL_RHS, 0, 1, one_row_at_a_time, &seen, err, sizeof err), 0);
        for (int y = 0; y < NY; y++) assert_int_equal(seen.count[y], 1);
        assert_int_equal(engine_get_buffer(e, p->n_fields, f, err, sizeof err), 0);
        assert_rhs(u, f, 5);
        assert_int_equal(engine_eval(e, PJ_KERNEL_RHS, 0, 1, NULL, NULL, err, sizeof err), 0);
        assert_int_equal(engine_get_buffer(e, p->n_fields, g, err, sizeof err), 0);
        assert_memory_equal(f, g, sizeof f);

        /* the same buffer where it lives */
        engine_view v;
        assert_int_equal(engine_view_buffer(e, p->n_fields, &v), 0);
        assert_int_equal(v.on_device, 0);
        assert_int_equal(v.elem_size, 8);
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++) assert_memory_equal(&((double *)v.data)[y * v.stride[1] + x], &f[y * NX + x], 8);
        assert_int_equal(engine_view_buffer(e, p->n_slots * p->n_fields, &v), -1);

        /* a kernel the CPU back end did not prepare is refused, not run */
        if (i == 1) assert_int_equal(engine_run(e, PJ_KERNEL_JACOBIAN, 0, 1, err, sizeof err), -1);

        /* the clock and a field in and out */
        engine_set_clock(e, 2.5, 7);
        assert_true(engine_time(e) == 2.5);
        assert_int_equal(engine_steps(e), 7);
        for (int c = 0; c < NX * NY; c++) g[c] = c;
        assert_int_equal(engine_set_field(e, 0, g, err, sizeof err), 0);
        assert_int_equal(engine_get_field(e, 0, f, err, sizeof err), 0);
        assert_memory_equal(f, g, sizeof f);
        engine_destroy(e);
    }
    program_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(typed_kernels_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
