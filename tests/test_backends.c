/* test_backends.c — the CPU back end against the interpreter (the oracle): every sample, and
 * a generated set of random expressions covering every operator, math function,
 * conditional, neighbour offset and face operator in 1D, 2D and 3D, agree to 1e-12 relative
 * (NaN where both give NaN) in double precision; single precision agrees to float accuracy. */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "solve.h"

/* Differences beyond tol, over every field; *finite_fields (may be NULL) counts the fields in
 * which at least one cell holds a finite value on both sides, i.e. were really compared. */
static int compare(const solved *a, const solved *b, double tol, const char *what, int *finite_fields)
{
    int bad = 0;
    assert_int_equal(a->p->n_fields, b->p->n_fields);
    for (int f = 0; f < a->p->n_fields; f++) {
        int finite = 0;
        for (int64_t c = 0; c < a->cells; c++) {
            double x = a->u[f][c], y = b->u[f][c];
            finite |= isfinite(x) && isfinite(y);
            if (isnan(x) && isnan(y)) continue;
            if (isinf(x) || isinf(y) ? x != y : tu_reldiff(x, y) > tol) {
                if (bad < 5)
                    fprintf(stderr, "%s: field %s cell %lld: interp %.17g, cpu %.17g\n", what, a->p->field_names[f],
                            (long long)c, x, y);
                bad++;
            }
        }
        if (finite_fields) *finite_fields += finite;
    }
    return bad;
}

/* The table of cases (solve.h) on the CPU back end, rows in one piece and in prefetching
 * chunks, double and single precision. */
static void samples_agree(void **state)
{
    (void)state;
    test_case *cases;
    int n = test_cases(&cases);
    assert_true(n >= 10);
    for (int i = 0; i < n; i++)
        for (int single = 0; single <= 1; single++)
            for (int pf = 0; pf <= 1; pf++) {
                engine_options o = {.single = single, .threads = 2, .prefetch = pf ? 1 : -1};
                double d = case_agree(&cases[i], "cpu", &o, 60);
                print_message("%-24s %s%s: largest difference %.3g\n", cases[i].name, single ? "single" : "double",
                              pf ? ", prefetch" : "", d);
                /* the same IR, the same order of operations: double results agree to the bit in
                   practice; the contract is 1e-12 */
                assert_true(d <= (single ? 1e-5 : 1e-12));
            }
    test_cases_free(cases, n);
}

/* ---- random expressions -------------------------------------------------------------------- */

static unsigned rng = 12345;
static unsigned rnd(unsigned n)
{
    rng = rng * 1103515245u + 12345u;
    return (rng >> 8) % n;
}

static const char *fn1[] = {"exp", "log", "log10", "sqrt", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan",
                            "sinh", "cosh", "tanh", "erf", "erfc", "abs", "floor", "ceil", "sign", "heaviside"};
static const char *fn2[] = {"atan2", "min", "max", "pow"};

static void gen(char *out, size_t cap, int depth, int dim, int face);

static void leaf(char *out, size_t cap, int dim, int face)
{
    const char *coords[] = {"x", "y", "z"}, *sp[] = {"dx", "dy", "dz"};
    switch (rnd(face ? 9 : 8)) {
    case 0: snprintf(out, cap, "%g", (double)(rnd(2000)) / 100.0 - 10); break;
    case 1: snprintf(out, cap, "%s", rnd(2) ? "u" : "v"); break;
    case 2: {
        int o[3] = {(int)rnd(5) - 2, (int)rnd(5) - 2, (int)rnd(5) - 2};
        if (dim == 1) snprintf(out, cap, "%s[%d]", rnd(2) ? "u" : "v", o[0]);
        else if (dim == 2) snprintf(out, cap, "%s[%d, %d]", rnd(2) ? "u" : "v", o[0], o[1]);
        else snprintf(out, cap, "%s[%d, %d, %d]", rnd(2) ? "u" : "v", o[0], o[1], o[2]);
        break;
    }
    case 3: snprintf(out, cap, "%s", coords[rnd((unsigned)dim)]); break;
    case 4: snprintf(out, cap, "t"); break;
    case 5: snprintf(out, cap, "%s", sp[rnd((unsigned)dim)]); break;
    case 6: snprintf(out, cap, "%s", rnd(2) ? "p" : "q"); break;
    case 7: snprintf(out, cap, "%s", rnd(2) ? "pi" : "e"); break;
    default: {
        const char *ops[] = {"L", "R", "LL", "RR", "harm"};
        snprintf(out, cap, "%s(%s)", ops[rnd(5)], rnd(2) ? "u" : "v");
    }
    }
}

static void gen(char *out, size_t cap, int depth, int dim, int face)
{
    char a[4096], b[4096], c[4096];
    if (depth <= 0 || rnd(5) == 0) {
        leaf(out, cap, dim, face);
        return;
    }
    unsigned kind = rnd(face ? 12 : 11);
    static const char *bin[] = {"+", "-", "*", "/", "^", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
    switch (kind) {
    case 0: case 1: case 2:
        gen(a, sizeof a, depth - 1, dim, face);
        gen(b, sizeof b, depth - 1, dim, face);
        snprintf(out, cap, "(%s %s %s)", a, bin[rnd(13)], b);
        break;
    case 3:
        gen(a, sizeof a, depth - 1, dim, face);
        snprintf(out, cap, "%s(%s)", fn1[rnd(sizeof fn1 / sizeof *fn1)], a);
        break;
    case 4:
        gen(a, sizeof a, depth - 1, dim, face);
        gen(b, sizeof b, depth - 1, dim, face);
        snprintf(out, cap, "%s(%s, %s)", fn2[rnd(4)], a, b);
        break;
    case 5:
        gen(a, sizeof a, depth - 1, dim, face);
        gen(b, sizeof b, depth - 1, dim, face);
        gen(c, sizeof c, depth - 1, dim, face);
        snprintf(out, cap, "(%s ? %s : %s)", a, b, c);
        break;
    case 6:
        gen(a, sizeof a, depth - 1, dim, face);
        snprintf(out, cap, "%s(%s)", rnd(3) ? "-" : "!", a);
        break;
    case 7:
        if (face) { gen(out, cap, depth - 1, dim, face); break; }
        gen(a, sizeof a, depth - 1, dim, 1);
        snprintf(out, cap, "div(%s)", a);
        break;
    case 8:
        if (face) {
            gen(a, sizeof a, depth - 1, dim, 0);
            snprintf(out, cap, "grad(%s)", a);
        } else {
            snprintf(out, cap, "lap(%s)", rnd(2) ? "u" : "v");
        }
        break;
    case 9:
        gen(a, sizeof a, depth - 1, dim, face);
        snprintf(out, cap, "f(%s)", a);
        break;
    case 10:
        snprintf(out, cap, face ? "F(u)" : "div(F(v))");
        break;
    default: /* face only */
        gen(a, sizeof a, depth - 1, dim, face);
        if (rnd(2)) snprintf(out, cap, "upwind(u, %s)", a);
        else if (dim == 1) snprintf(out, cap, "normal(%s)", a);
        else if (dim == 2) snprintf(out, cap, "normal(%s, -u)", a);
        else snprintf(out, cap, "normal(%s, v, 2)", a);
    }
}

static void random_expressions_agree(void **state)
{
    (void)state;
    int total = 0, finite = 0;
    for (int prob = 0; prob < 63; prob++) {
        int dim = 1 + prob % 3;
        const char *mesh = dim == 1 ? "mesh grid(nx = 37, Lx = 3)" : dim == 2 ? "mesh grid(nx = 13, ny = 9, Lx = 2, Ly = 1.5)"
                                                                              : "mesh grid(nx = 7, ny = 6, nz = 5)";
        size_t cap = 1 << 16;
        char *src = malloc(cap);
        int n = snprintf(src, cap, "%s\nparam p = 0.7, q = -1.3\nfunc f(a) = a*a - p\nflux F(w) = R(w) - 0.5*L(w)\n"
                         "field u = 0.3 + 0.5*sin(3*x + 1)\nfield v = 1.2 - 0.4*cos(2*x)%s\n",
                         mesh, dim > 1 ? " + 0.3*y" : "");
        /* eight more fields, each with a random right-hand side */
        for (int f = 0; f < 8; f++) n += snprintf(src + n, cap - (size_t)n, "field w%d = %g + x\n", f, 0.1 * f);
        char e1[4096], e2[4096];
        gen(e1, sizeof e1, 4, dim, 0);
        gen(e2, sizeof e2, 4, dim, 0);
        n += snprintf(src + n, cap - (size_t)n, "eq dt(u) = %s\neq dt(v) = %s\n", e1, e2);
        for (int f = 0; f < 8; f++) {
            gen(e1, sizeof e1, 4, dim, 0);
            n += snprintf(src + n, cap - (size_t)n, "eq dt(w%d) = %s\n", f, e1);
        }
        static const char *bcs[] = {"on left: u = 1 + t\non right: dn(v) = x\n", "periodic x\n"};
        n += snprintf(src + n, cap - (size_t)n, "%s%stime dt = 0.001, steps = 2, scheme = %s\n", bcs[prob % 2],
                      dim > 1 ? "periodic y\n" : "", (const char *[]){"euler", "rk2", "rk3", "rk4"}[prob % 4]);
        if (dim == 3) n += snprintf(src + n, cap - (size_t)n, "on back, front: u = z\n");
        solved *a = solve(src, BE_INTERP, 0, 1, NULL);
        solved *b = solve(src, prob % 5 == 2 ? BE_CPU_PREFETCH : BE_CPU, 0, 2, NULL);
        char what[32];
        snprintf(what, sizeof what, "random problem %d", prob);
        assert_int_equal(a->p->n_fields, 10);
        total += a->p->n_fields;
        int bad = compare(a, b, 1e-12, what, &finite);
        if (bad) fprintf(stderr, "%s\n", src);
        assert_int_equal(bad, 0);
        solved_free(a);
        solved_free(b);
        free(src);
    }
    /* every right-hand side is compared; most of them must give finite values somewhere (a
       NaN on both sides agrees, but says nothing) */
    printf("%d random right-hand sides agree, %d of them with finite values\n", total, finite);
    assert_int_equal(total, 630);
    assert_true(finite >= total * 3 / 4);
}

/* The ghost-fill plan: homogeneous fills and a hook side, on both host back ends. */
static void ghost_plan_on_host(void **state)
{
    (void)state;
    engine_options o = {.threads = 2};
    check_ghost_plan("interp", &o, 1);
    check_ghost_plan("cpu", &o, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(samples_agree),
        cmocka_unit_test(random_expressions_agree),
        cmocka_unit_test(ghost_plan_on_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
