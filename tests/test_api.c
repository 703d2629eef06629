/* test_api.c — the public API (include/pdejit.h) alone: compile, run on both back ends, params,
 * fields, errors as status codes with messages. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"

static const char *decay =
    "mesh grid(nx = 16)\nparam k = 1\nfield u = 1 + x\neq dt(u) = -k*u\ntime dt = 0.001, until = 1, scheme = rk4\n";

static void run_both_backends(void **state)
{
    (void)state;
    pj_problem *pr;
    char *diag = NULL;
    assert_int_equal(pj_problem_compile("decay.pde", decay, strlen(decay), &pr, &diag), PJ_OK);
    assert_null(diag);
    assert_int_equal(pj_problem_dim(pr), 1);
    assert_int_equal(pj_problem_cells(pr), 16);
    assert_string_equal(pj_problem_field_name(pr, 0), "u");
    assert_string_equal(pj_problem_param_name(pr, 0), "k");
    double out[2][16];
    for (int be = 0; be < 2; be++) {
        pj_sim_options o = {be ? PJ_BACKEND_CPU : PJ_BACKEND_INTERP, 0, 2, 0};
        pj_sim *s;
        char err[256];
        assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_OK);
        assert_int_equal(pj_sim_set_param(s, "k", 2), PJ_OK);
        assert_int_equal(pj_sim_set_param(s, "nope", 2), PJ_ERR_INPUT);
        assert_int_equal(pj_sim_advance(s, pj_problem_dt(pr), 0.5, err, sizeof err), PJ_OK);
        assert_true(pj_sim_time(s) == 0.5);
        assert_int_equal(pj_sim_get_field(s, "u", out[be]), PJ_OK);
        for (int i = 0; i < 16; i++) {
            double x = (i + 0.5) / 16;
            assert_true(fabs(out[be][i] - (1 + x) * exp(-1.0)) < 1e-12);
        }
        assert_int_equal(pj_sim_get_field(s, "v", out[be]), PJ_ERR_INPUT);
        pj_sim_free(s);
    }
    assert_memory_equal(out[0], out[1], sizeof out[0]);
    pj_problem_free(pr);
}

static void errors_are_statuses(void **state)
{
    (void)state;
    pj_problem *pr;
    char *diag = NULL;
    const char *bad = "mesh grid(nx = 4)\nfield u = q\n";
    assert_int_equal(pj_problem_compile("bad.pde", bad, strlen(bad), &pr, &diag), PJ_ERR_INPUT);
    assert_null(pr);
    assert_non_null(strstr(diag, "bad.pde:2:11: error: undefined name 'q'"));
    free(diag);
    const char *blow = "mesh grid(nx = 4)\nfield u = 1\neq dt(u) = u^2\n";
    assert_int_equal(pj_problem_compile("blow.pde", blow, strlen(blow), &pr, NULL), PJ_OK);
    pj_sim *s;
    char err[256];
    assert_int_equal(pj_sim_create(pr, NULL, &s, err, sizeof err), PJ_OK);
    assert_int_equal(pj_sim_advance(s, 0, 1, err, sizeof err), PJ_ERR_INPUT);
    assert_int_equal(pj_sim_advance(s, 0.5, 100, err, sizeof err), PJ_ERR_RUN);
    assert_non_null(strstr(err, "non-finite value"));
    assert_non_null(strstr(err, "field u at cell (0)"));
    pj_sim_free(s);
    pj_problem_free(pr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_both_backends),
        cmocka_unit_test(errors_are_statuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
