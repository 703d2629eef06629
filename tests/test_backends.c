/* test_backends.c — the CPU back end against the interpreter (the oracle): a generated set of
 * random expressions covering every operator, math function, conditional, neighbour offset and
 * face operator in 1D, 2D and 3D agree to 1e-12 relative (NaN where both give NaN) in double
 * precision; the ghost-fill plan on both host back ends. The table of cases (the samples) runs on
 * every back end in test_cases.c. */
#if defined(__GNUC__) && !defined(__clang__) /* clang has no such warning (and warns of the name) */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "randexpr.h"
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

/* ---- random expressions (tests/randexpr.c) ------------------------------------------------ */

static void random_expressions_agree(void **state)
{
    (void)state;
    int total = 0, finite = 0;
    randexpr r = {12345};
    for (int prob = 0; prob < 63; prob++) {
        char *src = randexpr_problem(&r, prob);
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
        cmocka_unit_test(random_expressions_agree),
        cmocka_unit_test(ghost_plan_on_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
