/* test_stability.c — the explicit stability check (runtime/stability.c) on large meshes and many
 * fields: it takes the mesh in bands and the Jacobian's rows in groups to keep its scratch
 * buffers small, and every split must give the limit of the whole mesh at once, to 1e-12 (the
 * spectral estimate, runtime/spectral.c, sees every entry, and a group's kernel may round an
 * entry one unit in the last place otherwise than the whole Jacobian's; the
 * case table, random problems, a 3D problem with periodic, Robin and time-dependent sides and a
 * coefficient field, a diagonal stencil, 40 coupled fields); an analytic limit (2D diffusion:
 * dt = 2 / (4 D (1/hx^2 + 1/hy^2)) for euler); a mesh that once needed gigabytes; and the bound on
 * the entries per cell beyond which the check is not made. */
#if defined(__GNUC__) && !defined(__clang__) /* clang has no such warning (and warns of the name) */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "randexpr.h"
#include "solve.h"
#include "stability.h"

/* An engine on the interpreter at the problem's initial state (`sets`: "name=value,..."). */
static engine *start(const pj_program *p, const char *sets)
{
    char err[1024] = "";
    engine_options o = {.threads = 1};
    engine *e = engine_create(engine_backend("interp"), p, &o, NULL, err, sizeof err);
    if (!e) fprintf(stderr, "%s\n", err);
    assert_non_null(e);
    engine_set_params(e, sets);
    assert_int_equal(engine_init(e, err, sizeof err), 0);
    return e;
}

/* The limit with scratch budgets from one byte (bands of one row, the Jacobian's entries a cell
 * at a time) through lines and rows at a time to unlimited (the whole mesh at once): all the
 * same, to 1e-12 relative. */
static void same_limit_in_any_split(const char *name, const char *src, const char *sets)
{
    pj_program *p = compile_text(src);
    if (PJ_SCHEME_IMPLICIT(p->scheme)) {
        program_free(p);
        return;
    }
    engine *e = start(p, sets);
    const double budgets[] = {1e18, 1, 4e3, 3e4, 4e4, 4e5, 64.0 * (1 << 20)};
    double whole[2] = {0, 0};
    char err[1024] = "";
    /* the limit, and Gershgorin's alone (a mesh beyond the spectral estimate: the box's cells
       summed an entry at a time, in chunks narrower than the box at the small budgets) */
    for (int gersh = 0; gersh < 2; gersh++)
        for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b++) {
            double limit = -1;
            if ((gersh ? stability_gershgorin_within(e, budgets[b], &limit, err, sizeof err)
                       : stability_limit_within(e, budgets[b], &limit, err, sizeof err)) < 0)
                fail_msg("%s: %s", name, err);
            if (b == 0) whole[gersh] = limit;
            else if (!(fabs(limit - whole[gersh]) <= 1e-12 * fabs(whole[gersh])) && memcmp(&limit, &whole[gersh], sizeof limit))
                fail_msg("%s: budget %g gives %.17g, the whole mesh %.17g%s", name, budgets[b], limit, whole[gersh],
                         gersh ? " (Gershgorin's)" : "");
        }
    print_message("%-28s limit %.17g, Gershgorin's %.17g\n", name, whole[0], whole[1]);
    engine_destroy(e);
    program_free(p);
}

static void splits_agree_on_the_case_table(void **state)
{
    (void)state;
    test_case *cases;
    int n = test_cases(&cases);
    assert_true(n >= 10);
    for (int i = 0; i < n; i++) same_limit_in_any_split(cases[i].name, cases[i].text, cases[i].sets);
    test_cases_free(cases, n);
}

static void splits_agree_on_random_problems(void **state)
{
    (void)state;
    randexpr r = {20261203u};
    for (int prob = 0; prob < 12; prob++) {
        char *src = randexpr_problem(&r, prob), name[32];
        snprintf(name, sizeof name, "random problem %d", prob);
        same_limit_in_any_split(name, src, NULL);
        free(src);
    }
}

/* n fields on an nx x ny periodic grid, each coupled to every other through one sum (multi-phase-
 * field grain growth, as bench/many_fields.py), rk4 (malloc'd). */
static char *coupled_fields(int n, int nx, int ny)
{
    size_t cap = 256 + (size_t)n * 160;
    char *src = malloc(cap);
    assert_non_null(src);
    int at = snprintf(src, cap, "mesh grid(nx = %d, ny = %d)\nperiodic x, y\nfield ", nx, ny);
    for (int i = 0; i < n; i++)
        at += snprintf(src + at, cap - (size_t)at, "%sp%d = 0.5 + 0.4*sin(6.28*(x + %d*y))", i ? ", " : "", i, i % 5);
    at += snprintf(src + at, cap - (size_t)at, "\nfunc S() = ");
    for (int i = 0; i < n; i++) at += snprintf(src + at, cap - (size_t)at, "%sp%d^2", i ? " + " : "", i);
    for (int i = 0; i < n; i++)
        at += snprintf(src + at, cap - (size_t)at, "\neq dt(p%d) = 0.5*lap(p%d) - p%d^3 + p%d - 3*p%d*(S() - p%d^2)", i, i,
                       i, i, i, i);
    snprintf(src + at, cap - (size_t)at, "\ntime dt = 1e-4, steps = 1, scheme = rk4\n");
    return src;
}

static void splits_agree_on_hard_sides(void **state)
{
    (void)state;
    /* 3D: Dirichlet in x, Robin in y with a time-dependent value, periodic z; a coefficient
       field; the largest disc lies in the last band (D grows with z) */
    same_limit_in_any_split("3d sides", "mesh grid(nx = 9, ny = 7, nz = 11, Lx = 1, Ly = 2, Lz = 3)\n"
                            "periodic z\nfield u = sin(3*x) + y*z, D = 1 + x + z^2\n"
                            "eq dt(u) = div(D*grad(u)) - u^3\n"
                            "on left, right: u = 0\non bottom, top: 2*u + dn(u) = sin(t)\n"
                            "time dt = 1e-4, steps = 1, scheme = rk3\n", NULL);
    /* a corner-reading stencil and zero flux: ghost entries fold onto cells other entries hold */
    same_limit_in_any_split("diagonal stencil", "mesh grid(nx = 6, ny = 13)\nfield u = x + 2*y^2\n"
                            "eq dt(u) = u[1, 1] + u[-1, -1] - 2*u + 0.3*u[2, 0] - u[0, -2]*u\n"
                            "on all: dn(u) = 0\ntime dt = 1e-3, steps = 1, scheme = euler\n", NULL);
    /* a right-hand side that reads no field: no Jacobian entry, no limit */
    same_limit_in_any_split("no entries", "mesh grid(nx = 5, ny = 4)\nfield u = x\neq dt(u) = sin(t) + 1\n"
                            "time dt = 10, steps = 1, scheme = rk4\n", NULL);
    /* 40 fields each coupled to all: 1760 Jacobian entries per cell */
    char *src = coupled_fields(40, 12, 10);
    same_limit_in_any_split("40 coupled fields", src, NULL);
    free(src);
}

/* Beyond 200 000 Jacobian entries per cell the check is not made, and says so: 460 fields all
 * coupled (460 * (460 + 4) = 213 440 entries: each field's own 5-point Laplacian and every other
 * field at the cell); 440 fields (195 360) are still checked. */
static void too_many_entries_to_check(void **state)
{
    (void)state;
    char err[512] = "";
    for (int n = 440; n <= 460; n += 20) {
        char *src = coupled_fields(n, 4, 4);
        pj_program *p = compile_text(src);
        engine *e = start(p, NULL);
        double limit = 0;
        int made = stability_limit(e, &limit, err, sizeof err);
        print_message("%d fields: %d, limit %g\n", n, made, limit);
        if (n == 440) {
            assert_int_equal(made, 0);
            assert_true(limit > 0 && isfinite(limit));
        } else {
            assert_int_equal(made, 1);
            assert_true(isinf(limit));
            assert_int_equal(stability_check(e, 1e300, err, sizeof err), 2);
            assert_string_equal(err, "the stability check was not made: the Jacobian has up to 213440 entries per cell "
                                     "(the check takes 200000 at most); make sure dt is stable, or pass "
                                     "--no-stability-check");
        }
        engine_destroy(e);
        program_free(p);
        free(src);
    }
}

/* 2D diffusion with walls: every disc's leftmost point is -4 D (1/hx^2 + 1/hy^2) (a Dirichlet
 * ghost folds onto its cell and keeps it), so euler's limit is 2 / that. */
static void analytic_limit(void **state)
{
    (void)state;
    pj_program *p = compile_text("mesh grid(nx = 40, ny = 30, Lx = 2, Ly = 0.5)\nparam D = 0.7\nfield u = x*y\n"
                            "eq dt(u) = D*lap(u)\non all: u = 0\ntime dt = 1e-6, steps = 1, scheme = euler\n");
    engine *e = start(p, NULL);
    double hx = 2.0 / 40, hy = 0.5 / 30, exact = 2 / (4 * 0.7 * (1 / (hx * hx) + 1 / (hy * hy))), limit = 0;
    char err[256];
    for (double budget = 1; budget < 1e19; budget *= 1e6) {
        assert_int_equal(stability_limit_within(e, budget, &limit, err, sizeof err), 0);
        print_message("budget %g: limit %.17g, exact %.17g\n", budget, limit, exact);
        assert_true(fabs(limit - exact) <= 1e-12 * exact);
    }
    engine_destroy(e);
    program_free(p);
}

/* 2048^2 Gray-Scott: the Jacobian's 10 entries per cell took 10 full-mesh buffers (630 MB) when
 * the check held the whole mesh at once; in bands the limit is Gershgorin's (the mesh is beyond
 * the spectral estimate's memory, SPECTRAL_BYTES), which the spectral estimate on a 64^2 mesh of
 * the same spacing and uniform state (the same spectrum's extent: real, the discs exact up to the
 * reaction's coupling) matches within its margin: the big mesh's limit at most the small one's
 * and within 3% of it. */
static void large_mesh(void **state)
{
    (void)state;
    const char *fmt = "mesh grid(nx = %d, ny = %d, Lx = %g, Ly = %g)\nparam Du = 2e-5, Dv = 1e-5, F = 0.04, k = 0.06\n"
                      "field u = 1, v = 0.25\neq dt(u) = Du*lap(u) - u*v^2 + F*(1 - u)\n"
                      "eq dt(v) = Dv*lap(v) + u*v^2 - (F + k)*v\nperiodic x, y\n"
                      "time dt = 1, steps = 1, scheme = rk4\n";
    char src[1024];
    double limit[2];
    char err[256];
    for (int big = 0; big <= 1; big++) {
        int n = big ? 2048 : 64;
        snprintf(src, sizeof src, fmt, n, n, n / 256.0, n / 256.0);
        pj_program *p = compile_text(src);
        engine *e = start(p, NULL);
        assert_int_equal(stability_limit(e, &limit[big], err, sizeof err), 0);
        engine_destroy(e);
        program_free(p);
    }
    print_message("64^2: %.17g, 2048^2: %.17g\n", limit[0], limit[1]);
    assert_true(limit[1] <= limit[0] && limit[1] >= 0.97 * limit[0]);
}

/* The limit at a state far from e's (every field scaled and shifted cell by cell). */
static double limit_elsewhere(engine *e)
{
    const pj_program *p = engine_program(e);
    int64_t n = engine_cells(e);
    double *u = malloc(sizeof *u * (size_t)n), limit = -1;
    char err[1024] = "";
    for (int f = 0; f < p->n_fields; f++) {
        assert_int_equal(engine_get_field(e, f, u, err, sizeof err), 0);
        for (int64_t i = 0; i < n; i++) u[i] = 0.3 + u[i] * (1.5 + sin(0.37 * (double)i + f));
        assert_int_equal(engine_set_field(e, f, u, err, sizeof err), 0);
    }
    free(u);
    if (stability_limit(e, &limit, err, sizeof err) != 0) fail_msg("%s", err);
    return limit;
}

/* stability_state_free against the check itself: on every problem of the case table and a few
 * made here, a problem said to be free of the state has the same limit, to the bit, at a state
 * far from the first; a memo answers its checks again (and finds anew when a param changes),
 * and answers none of the others. Gray-Scott and nonlinear diffusion are not free (their limit
 * moves with the state: checked), nor are t in a coefficient or in a side's value (refused
 * without a look: t is not watched). */
static void memo_where_the_limit_cannot_change(void **state)
{
    (void)state;
    test_case *cases = NULL;
    int n = test_cases(&cases), n_free = 0, n_moved = 0;
    for (int c = 0; c < n; c++) {
        pj_program *p = compile_named(cases[c].name, cases[c].text);
        if (PJ_SCHEME_IMPLICIT(p->scheme) || !p->rhs || !p->rhs->n_outputs || p->n_algebraic) {
            program_free(p);
            continue;
        }
        engine *e = start(p, cases[c].sets);
        char err[1024] = "";
        double first = -1, again = -1;
        stability_memo m = {0};
        int made = stability_limit_memo(e, &m, &first, err, sizeof err);
        if (made == 0) {
            double other = limit_elsewhere(e);
            assert_int_equal(stability_limit_memo(e, &m, &again, err, sizeof err), 0);
            if (stability_state_free(p)) {
                n_free++;
                print_message("free of the state: %s\n", cases[c].name);
                if (memcmp(&other, &first, sizeof other))
                    fail_msg("%s: said free of the state, but its limit moved from %.17g to %.17g", cases[c].name,
                             first, other);
                assert_int_equal(m.reused, 1);
                assert_true(again == first);
            } else {
                n_moved += other != first;
                assert_int_equal(m.reused, 0);
                assert_true(again == other);
            }
        }
        stability_memo_free(&m);
        engine_destroy(e);
        program_free(p);
    }
    test_cases_free(cases, n);
    print_message("%d of %d cases free of the state, %d others' limits moved\n", n_free, n, n_moved);
    assert_true(n_free >= 3 && n_moved >= 3);
    const char *moves[] = { /* free of the state or not, as the check finds */
        "mesh grid(nx = 24, ny = 20)\nparam Du = 2e-5, Dv = 1e-5, F = 0.04, k = 0.06\nfield u = 1 - 0.3*x, v = 0.25*y\n"
        "eq dt(u) = Du*lap(u) - u*v^2 + F*(1 - u)\neq dt(v) = Dv*lap(v) + u*v^2 - (F + k)*v\nperiodic x, y\n"
        "time dt = 1, steps = 1, scheme = rk4\n",
        "mesh grid(nx = 20)\nfield u = 0.1*x^2\neq dt(u) = div((1 + u^2)*grad(u)) + 4\non all: dn(u) = 0\n"
        "time dt = 0.001, until = 1, scheme = euler\n",
        "mesh grid(nx = 20)\nfield u = x\neq dt(u) = (1 + t)*lap(u)\non all: u = 0\ntime dt = 1e-4, until = 1, scheme = rk2\n",
        "mesh grid(nx = 20)\nfield u = x\neq dt(u) = lap(u)\non left: u = sin(t)\non right: u = 0\n"
        "time dt = 1e-4, until = 1, scheme = rk2\n",
    };
    for (int i = 0; i < 4; i++) {
        pj_program *p = compile_text(moves[i]);
        assert_false(stability_state_free(p));
        program_free(p);
    }
    /* a param changed: found anew */
    pj_program *p = compile_text("mesh grid(nx = 30, ny = 20)\nparam D = 1\nfield u = x*y\neq dt(u) = D*lap(u)\n"
                                 "on left: u = 1\non right: dn(u) = 0\nperiodic y\ntime dt = 1e-5, until = 1, scheme = rk4\n");
    assert_true(stability_state_free(p));
    engine *e = start(p, NULL);
    stability_memo m = {0};
    char err[256];
    double one = -1, half = -1;
    assert_int_equal(stability_limit_memo(e, &m, &one, err, sizeof err), 0);
    engine_set_params(e, "D=2");
    assert_int_equal(stability_limit_memo(e, &m, &half, err, sizeof err), 0);
    assert_int_equal(m.reused, 0);
    assert_true(fabs(half - one / 2) <= 1e-12 * one);
    assert_int_equal(stability_check_memo(e, &m, 0.9 * half, err, sizeof err), 0);
    assert_int_equal(stability_check_memo(e, &m, 1.1 * half, err, sizeof err), 1);
    assert_int_equal(m.reused, 2);
    stability_memo_free(&m);
    engine_destroy(e);
    program_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(analytic_limit),
        cmocka_unit_test(splits_agree_on_hard_sides),
        cmocka_unit_test(splits_agree_on_the_case_table),
        cmocka_unit_test(splits_agree_on_random_problems),
        cmocka_unit_test(large_mesh),
        cmocka_unit_test(too_many_entries_to_check),
        cmocka_unit_test(memo_where_the_limit_cannot_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
