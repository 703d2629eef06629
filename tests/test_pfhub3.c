/* test_pfhub3.c — PFHub benchmark 3 (dendritic growth with fourfold anisotropy,
 * https://pages.nist.gov/pfhub/benchmarks/benchmark3.ipynb), samples/pfhub3.pde, against an
 * independent reference: the same sample at half the spacing (dx = 0.2, the time step a quarter),
 * which must agree in the quantities the benchmark reports, the solid area (its monitor) and the
 * tip position along x (where phi crosses 0 on the row nearest the axis), within 1 % at t = 1 and
 * t = 2. The benchmark's own resolution is dx = 0.4, the sample's. (The explicit and bdf2 runs and
 * the symmetry about the diagonal are test_facegrad's.) */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"

/* Runs the sample with n x n cells and step dt; at t = 1 and 2 the solid area and the tip's x. */
static void run(const char *sample, int n, double dt, double solid[2], double tip[2])
{
    char mesh[128], time[128];
    snprintf(mesh, sizeof mesh, "mesh grid(nx = %d, ny = %d, Lx = 24, Ly = 24)", n, n);
    snprintf(time, sizeof time, "time dt = %g, until = 8", dt);
    char *a = tu_replaced(sample, "mesh grid(nx = 60, ny = 60, Lx = 24, Ly = 24)", mesh);
    char *text = tu_replaced(a, "time dt = 0.003, until = 8", time);
    pj_problem *pr = NULL;
    char *diags = NULL, err[512] = "";
    if (pj_problem_compile("pfhub3.pde", text, strlen(text), &pr, &diags) != PJ_OK) fail_msg("%s", diags);
    free(diags);
    pj_sim_options o = {0};
    assert_int_equal(pj_backend_by_name("cpu", &o.backend), 0);
    pj_sim *s = NULL;
    if (pj_sim_create(pr, &o, &s, err, sizeof err) != PJ_OK) fail_msg("%s", err);
    double *phi = malloc(sizeof *phi * (size_t)n * (size_t)n), h = 24.0 / n;
    assert_non_null(phi);
    for (int k = 0; k < 2; k++) {
        if (pj_sim_advance(s, dt, k + 1.0, err, sizeof err) != PJ_OK) fail_msg("%s", err);
        assert_int_equal(pj_sim_monitor(s, "solid", &solid[k], err, sizeof err), PJ_OK);
        assert_int_equal(pj_sim_get_field(s, "phi", phi), PJ_OK);
        tip[k] = NAN;
        for (int i = 0; i + 1 < n; i++) /* row 0: phi falls through 0 once, solid to melt */
            if (phi[i] >= 0 && phi[i + 1] < 0) tip[k] = (i + 0.5 + phi[i] / (phi[i] - phi[i + 1])) * h;
        assert_false(isnan(tip[k]));
    }
    free(phi);
    pj_sim_free(s);
    pj_problem_free(pr);
    free(a);
    free(text);
}

static void pfhub3_two_resolutions(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/samples/pfhub3.pde", PJ_SOURCE_DIR);
    char *sample = tu_read_file(path, NULL);
    assert_non_null(sample);
    double s1[2], t1[2], s2[2], t2[2];
    run(sample, 60, 0.003, s1, t1);
    run(sample, 120, 0.00075, s2, t2);
    for (int k = 0; k < 2; k++) {
        double ds = (s1[k] - s2[k]) / s2[k], dtip = (t1[k] - t2[k]) / t2[k];
        print_message("t = %d: solid %.4f (dx 0.4), %.4f (dx 0.2): %+.2f %%; tip %.4f, %.4f: %+.2f %%\n", k + 1, s1[k],
                      s2[k], 100 * ds, t1[k], t2[k], 100 * dtip);
        assert_true(fabs(ds) <= 0.01);
        assert_true(fabs(dtip) <= 0.01);
        assert_true(t2[k] > 8.5); /* the tip has moved from the seed's radius, 8 */
    }
    assert_true(s1[1] > 1.5 * 51.56 && s2[1] > 1.5 * 51.56); /* it grew: the seed's area is 51.56 */
    free(sample);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pfhub3_two_resolutions),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
