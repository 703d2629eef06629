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

/* A view aliases the field: shape and strides describe the state, a write through it is what
 * the next step starts from (du/dt = 0 keeps it; du/dt = 1 adds dt). */
static void field_views_alias(void **state)
{
    (void)state;
    const char *src = "mesh grid(nx = 5, ny = 3)\nfield u = x + 10*y\nfield c = 2\neq dt(u) = 1\n"
                      "time dt = 0.25, steps = 1, scheme = euler\n";
    pj_problem *pr;
    assert_int_equal(pj_problem_compile("view.pde", src, strlen(src), &pr, NULL), PJ_OK);
    for (int be = 0; be < 2; be++) {
        for (int single = 0; single <= 1; single++) {
            pj_sim_options o = {be ? PJ_BACKEND_CPU : PJ_BACKEND_INTERP, single, 1, 0};
            pj_sim *s;
            char err[256];
            assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_OK);
            pj_field_view v;
            assert_int_equal(pj_sim_field_view(s, "nope", &v), PJ_ERR_INPUT);
            assert_int_equal(pj_sim_field_view(s, "u", &v), PJ_OK);
            assert_int_equal(v.shape[0], 5);
            assert_int_equal(v.shape[1], 3);
            assert_int_equal(v.shape[2], 1);
            assert_int_equal(v.strides[0], 1);
            assert_true(v.strides[1] >= 5);
            assert_int_equal(v.elem_size, single ? 4 : 8);
            assert_int_equal(v.on_device, 0);
            double hx = 1.0 / 5, hy = 1.0 / 3;
            for (int j = 0; j < 3; j++)
                for (int i = 0; i < 5; i++) {
                    char *at = (char *)v.data + (i * v.strides[0] + j * v.strides[1]) * v.elem_size;
                    double want = (i + 0.5) * hx + 10 * (j + 0.5) * hy;
                    double got = single ? *(float *)at : *(double *)at;
                    assert_true(fabs(got - want) < (single ? 1e-5 : 1e-14));
                    /* write 100*i + j through the view */
                    if (single) *(float *)at = (float)(100 * i + j);
                    else *(double *)at = 100 * i + j;
                }
            assert_int_equal(pj_sim_advance(s, 0.25, 0.25, err, sizeof err), PJ_OK);
            double u[15];
            assert_int_equal(pj_sim_get_field(s, "u", u), PJ_OK);
            for (int j = 0; j < 3; j++)
                for (int i = 0; i < 5; i++) assert_true(u[i + 5 * j] == 100 * i + j + 0.25);
            /* after the step (euler swaps buffers) a new view sees the new state */
            assert_int_equal(pj_sim_field_view(s, "u", &v), PJ_OK);
            double first = single ? *(float *)v.data : *(double *)v.data;
            assert_true(first == 0.25);
            pj_sim_free(s);
        }
    }
    pj_problem_free(pr);
}

/* Statuses have texts; the GPU back end without a GPU is "unavailable", not a crash. */
static void statuses_and_unavailable_backends(void **state)
{
    (void)state;
    for (int st = PJ_OK; st <= PJ_ERR_UNAVAILABLE; st++) {
        assert_non_null(pj_strerror((pj_status)st));
        assert_string_not_equal(pj_strerror((pj_status)st), "unknown status");
    }
    assert_string_equal(pj_strerror((pj_status)99), "unknown status");
    pj_problem *pr;
    assert_int_equal(pj_problem_compile("decay.pde", decay, strlen(decay), &pr, NULL), PJ_OK);
    pj_sim *s = NULL;
    char err[256] = "";
    pj_sim_options o = {(pj_backend)7, 0, 1, 0};
    assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_ERR_INPUT);
    assert_null(s);
    o.backend = PJ_BACKEND_CUDA;
    setenv("PDEJIT_LIBCUDA", "/nonexistent/libcuda.so.1", 1); /* as on a machine without a GPU */
    assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_ERR_UNAVAILABLE);
    unsetenv("PDEJIT_LIBCUDA");
    assert_null(s);
    assert_non_null(strstr(err, "no CUDA device"));
    pj_problem_free(pr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_both_backends),
        cmocka_unit_test(errors_are_statuses),
        cmocka_unit_test(field_views_alias),
        cmocka_unit_test(statuses_and_unavailable_backends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
