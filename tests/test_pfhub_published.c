/* test_pfhub_published.c — PFHub benchmarks 2a, 2b and 3 against free-energy curves published on
 * PFHub (https://pages.nist.gov/pfhub/; the records in github.com/usnistgov/pfhub
 * _data/simulations/NAME/meta.yaml, commit 2f9c54e34e8c), over the early stretch of each curve
 * that a CI run reaches; the longer comparisons are bench/pfhub_full.sh's (docs/pfhub.md).
 *
 *   pfhub2a_against_moose   samples/pfhub2.pde at the benchmark's size (200 x 200, h = 1), rk2,
 *                           to t = 8.2, against records moose_itg_2a (F less the order parameters'
 *                           gradient energy), moose_2a_ia, moose_2a_sta and fenics_2a_ivan (F)
 *   pfhub2b_against_moose   samples/pfhub2b.pde likewise against the 2b records
 *   pfhub3_against_published  samples/pfhub3.pde on an 80 x 80 corner of the benchmark's square
 *                           to t = 30 (the melt's far field not yet reached), against records
 *                           memphis_3a, moose_itg_3a, inl_moose_3a and chimad3_moose_3a
 *
 * The published numbers are extracts of the records' data files, stored with their sources in
 * tests/data/pfhub/ (and read by bench/pfhub_compare.py too). */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"

typedef struct curve {
    int n;
    double t[4096], v[4096];
} curve;

static char *sample(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/samples/%s", PJ_SOURCE_DIR, name);
    char *text = tu_read_file(path, NULL);
    assert_non_null(text);
    return text;
}

/* text with its first occurrence of `from` replaced by `to`; text is freed. */
static char *replaced(char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!at) fail_msg("the sample changed: '%s' is not in it", from);
    char *out = malloc(strlen(text) + strlen(to) + 1);
    assert_non_null(out);
    sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    free(text);
    return out;
}

static void write_file(const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Column `name` of the CSV at path (lines starting with '#' skipped, the first other line the
   header) against its first column. */
static void read_csv(const char *path, const char *name, curve *c)
{
    char *csv = tu_read_file(path, NULL);
    if (!csv) fail_msg("cannot read %s", path);
    int col = -1, header = 1;
    c->n = 0;
    for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        if (header) {
            header = 0;
            int k = 0;
            for (char *p = line; p; p = strchr(p, ','), p = p ? p + 1 : NULL, k++)
                if (!strncmp(p, name, strlen(name)) && (p[strlen(name)] == ',' || !p[strlen(name)])) col = k;
            if (col < 1) fail_msg("%s has no column %s", path, name);
            continue;
        }
        assert_true(c->n < 4096);
        char *p = line;
        c->t[c->n] = strtod(p, NULL);
        for (int k = 0; k < col; k++) {
            p = strchr(p, ',');
            assert_non_null(p);
            p++;
        }
        c->v[c->n++] = strtod(p, NULL);
    }
    free(csv);
}

static void published(const char *file, const char *column, curve *c)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/pfhub/%s", PJ_SOURCE_DIR, file);
    read_csv(path, column, c);
    assert_true(c->n > 10);
}

static void monitor(const char *dir, const char *column, curve *c)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/monitor.csv", tu_dir, dir);
    read_csv(path, column, c);
}

/* c at time t, linear between the rows around it. */
static double at(const curve *c, double t)
{
    for (int i = 0; i + 1 < c->n; i++)
        if (c->t[i] <= t && t <= c->t[i + 1])
            return c->v[i] + (c->v[i + 1] - c->v[i]) * (t - c->t[i]) / (c->t[i + 1] - c->t[i]);
    fail_msg("t = %g is outside the monitor rows", t);
    return NAN;
}

/* Benchmark 2 (Jokisaari et al., Comput. Mater. Sci. 126 (2017) 139) against two kinds of PFHub
 * record (data files in tests/data/pfhub/, their sources in their headers).
 *
 * 1. moose_itg_2a and moose_itg_2b (I. Greenquist, 2018). Their total_energy is the benchmark's
 *    F without the order parameters' gradient energy G = kappa_eta/2 sum |grad eta_i|^2: F - G
 *    agrees to 0.11 % (2a) and 0.5 % (2b) at t = 0.5 to 5, the full F is 4 % (t = 0.5) to 19 %
 *    (t = 8) above it. (The record's input, github.com/itgreenquist/moose
 *    modules/phase_field/pfhub_prob2/part_a.i at dd69f8cf6582, is the run that made it: its
 *    bdf2 steps from dt = 0.01 growing 1.4x are the record's first times 0.01, 0.024, 0.0436;
 *    the version stored there names all five gradient terms in TotalFreeEnergy, the numbers
 *    say the upload left G out, as the other MOOSE 2a inputs on PFHub do, xiaoyuguan/ostwald_sqrpbc
 *    and xueyang94/chimad2_Oswald_Ripening_a.) So the compared number is F - G, G the monitor
 *    integral(kappa_eta/2 sum |grad eta_i|^2). From t = 0.49, the record's first point after the
 *    initial relaxation (F falls from 9064 to 3600 in t = 0.5, where MOOSE's first implicit steps
 *    decide), to t = 8.2 (8200 rk2 steps of 40 000 cells, about 6 s of CPU). Measured: within
 *    0.43 % on 2a and 0.82 % on 2b; 1 % allowed.
 * 2. The whole F against the three records that report it: moose_2X_ia and moose_2X_sta
 *    (A. M. Jokisaari, an author of the benchmark, MOOSE with two time steppers) and
 *    fenics_2X_ivan (I. Yashchuk, FEniCS). These agree with each other to 1 % only up to t = 1.9
 *    (both 2a and 2b; computed here from the data): to there each is compared with 1 % allowed
 *    (measured: within 0.72 % on 2a, 0.59 % on 2b). Later they part, the MOOSE pair from FEniCS by
 *    3.7 % at t = 4 and 6 % at t = 8 (2a), so the published F is not known to 1 % there; to t = 8
 *    the run's F is checked to lie between them (the lowest less 1 %, the highest plus 1 %):
 *    measured, 0.4 % to 1.3 % above the lowest and 0.8 % to 4.6 % below the highest on 2a (2b:
 *    0.6 % to 1.6 % and 0.4 % to 2.8 %).
 * The run itself is converged on this stretch (2a, measured once, too long for a test): at
 * h = 0.5 (dt = 1e-4) F - G is within 0.15 % of h = 1 to t = 8 and F within 0.65 %; rk2 at
 * dt = 0.0005 equals dt = 0.001 to 1.4e-5. Later the records part from it and from each other
 * more, while refining the run moves it away from moose_itg (docs/pfhub.md). */
static void check_benchmark2(const char *dir, const char *energy, const char *record, double until)
{
    static curve ours, g, ref;
    monitor(dir, energy, &ours);
    monitor(dir, "G", &g);
    assert_int_equal(ours.n, g.n);
    for (int i = 0; i < ours.n; i++) ours.v[i] -= g.v[i];
    published(record, "total_energy", &ref);
    int compared = 0;
    for (int k = 0; k < ref.n && ref.t[k] <= until; k++) {
        double t = ref.t[k], v = at(&ours, t), rel = (v - ref.v[k]) / ref.v[k];
        print_message("%s t = %7.4f: F - G = %9.3f (G = %7.3f), %s %9.3f: %+.3f %%\n", dir, t, v, at(&g, t), record,
                      ref.v[k], 100 * rel);
        if (!(fabs(rel) <= 0.01)) fail_msg("%s at t = %g: %.6g is %.2f %% from %s's %.6g", dir, t, v, 100 * rel, record, ref.v[k]);
        compared++;
    }
    assert_true(compared >= 10);
}

/* Item 2 above: the whole F (monitor `energy` of run `dir`) against moose_W_ia, moose_W_sta and
 * fenics_W_ivan, W = 2a or 2b. */
static void check_whole_energy(const char *dir, const char *energy, const char *w, double until)
{
    static curve ours, rec[3];
    char file[3][64];
    const char *column[3] = {"TotalEnergy", "TotalEnergy", "total_free_energy"};
    snprintf(file[0], sizeof file[0], "moose_%s_ia.csv", w);
    snprintf(file[1], sizeof file[1], "moose_%s_sta.csv", w);
    snprintf(file[2], sizeof file[2], "fenics_%s_ivan.csv", w);
    monitor(dir, energy, &ours);
    for (int r = 0; r < 3; r++) published(file[r], column[r], &rec[r]);
    /* where the three agree to 1 %: from t = 0.4 to the first of fenics' (dense) rows where they
       do not */
    double agree = 0;
    for (int k = 0; k < rec[2].n; k++) {
        double t = rec[2].t[k], lo = INFINITY, hi = -INFINITY;
        if (t < 0.4) continue;
        for (int r = 0; r < 3; r++) lo = fmin(lo, at(&rec[r], t)), hi = fmax(hi, at(&rec[r], t));
        agree = t;
        if (hi - lo > 0.01 * lo) break;
    }
    print_message("%s: the published F agree to 1 %% up to t = %g\n", dir, agree);
    assert_true(agree > 1 && agree < until);
    for (int r = 0; r < 3; r++) {
        int compared = 0;
        for (int k = 0; k < rec[r].n && rec[r].t[k] < agree; k++) {
            double t = rec[r].t[k], v = at(&ours, t), rel = (v - rec[r].v[k]) / rec[r].v[k];
            if (t < 0.4) continue;
            print_message("%s t = %7.4f: F = %9.3f, %s %9.3f: %+.3f %%\n", dir, t, v, file[r], rec[r].v[k], 100 * rel);
            if (!(fabs(rel) <= 0.01)) fail_msg("%s at t = %g: F = %.6g is %.2f %% from %s's %.6g", dir, t, v, 100 * rel, file[r], rec[r].v[k]);
            compared++;
        }
        assert_true(compared >= 3);
    }
    int between = 0;
    for (int k = 0; k < rec[2].n && rec[2].t[k] <= until; k++) {
        double t = rec[2].t[k], v = at(&ours, t), lo = INFINITY, hi = -INFINITY;
        if (t < agree) continue;
        for (int r = 0; r < 3; r++) lo = fmin(lo, at(&rec[r], t)), hi = fmax(hi, at(&rec[r], t));
        print_message("%s t = %7.4f: F = %9.3f, the published %9.3f to %9.3f\n", dir, t, v, lo, hi);
        if (!(v >= 0.99 * lo && v <= 1.01 * hi))
            fail_msg("%s at t = %g: F = %.6g is outside the published %.6g to %.6g (1 %% either side)", dir, t, v, lo, hi);
        between++;
    }
    assert_true(between >= 10);
}

static void pfhub2a_against_moose(void **state)
{
    (void)state;
    char *s = sample("pfhub2.pde"), *out; /* its monitor F is the whole of F */
    s = replaced(s, "mesh grid(nx = 100, ny = 100", "mesh grid(nx = 200, ny = 200");
    s = replaced(s, "time dt = 0.005, until = 50", "time dt = 0.001, until = 8.2");
    s = replaced(s, "output every = 50, format = png", "");
    s = replaced(s, "monitor every = 10, F = integral(", "monitor every = 0.05, G = integral(ke/2*sum(j, g2(eta[j]))), F = integral(");
    write_file("2a.pde", s);
    free(s);
    assert_int_equal(tu_pdejit(&out, "run 2a.pde --out 2a --quiet"), 0);
    free(out);
    check_benchmark2("2a", "F", "moose_itg_2a.csv", 8.2);
    check_whole_energy("2a", "F", "2a", 8.1);
}

static void pfhub2b_against_moose(void **state)
{
    (void)state;
    char *s = sample("pfhub2b.pde"), *out;
    s = replaced(s, "mesh grid(nx = 100, ny = 100", "mesh grid(nx = 200, ny = 200");
    s = replaced(s, "time dt = 0.005, until = 50", "time dt = 0.001, until = 8.2");
    s = replaced(s, "output every = 50, format = png", "");
    s = replaced(s, "eq dt(c) =", "energy Gn = ke/2*sum(j, grad2(eta[j]))\neq dt(c) =");
    s = replaced(s, "monitor every = 10, energy = integral(F)",
                 "monitor every = 0.05, G = integral(Gn), energy = integral(F)");
    write_file("2b.pde", s);
    free(s);
    assert_int_equal(tu_pdejit(&out, "run 2b.pde --out 2b --quiet"), 0);
    free(out);
    check_benchmark2("2b", "energy", "moose_itg_2b.csv", 8.2);
    check_whole_energy("2b", "energy", "2b", 8.1);
}

/* Benchmark 3 (dendritic growth) against the four PFHub records whose data could be read (their
 * sources in their headers): memphis_3a (MEMPHIS, explicit Euler on 960 x 960 cells of 1),
 * moose_itg_3a (MOOSE, adaptive mesh), inl_moose_3a (MOOSE, adaptive mesh, finest 2.6) and
 * chimad3_moose_3a (MOOSE, adaptive mesh, finest 0.4). The sample (dx = 0.4, the benchmark's seed,
 * melt and parameters) runs on an 80 x 80 corner of the benchmark's 960 x 960 square to t = 30 with
 * the benchmark's free energy F = integral(W(theta)^2/2 |grad phi|^2 + f(phi, u)),
 * f = -phi^2/2 + phi^4/4 + lambda u phi (1 - 2 phi^2/3 + phi^4/5), as a monitor (gradients by
 * central differences in the cells). By t = 30 the temperature field has spread about
 * 2 sqrt(D t) = 35 from a tip at x = 20: the rest of the square is still the uniform melt, whose
 * energy density is f(-1, -0.3) = -1/4 + 0.3 lambda (8/15). So
 * - the whole square's F is the run's plus that density times (960^2 - 80^2): within 1 % of every
 *   record (measured: 3e-5 at most). That is no test of the dendrite: the melt's 2.1e6 is in every
 *   run;
 * - what the dendrite does is F's change, about -1000 from t = 15 to 30 (the solid's bulk energy
 *   and the melt it warms; the interface's gradient energy is under 3 of it). F(0) differs more
 *   between runs (the seed's discrete form), so the change is taken from t = 15 (memphis's first
 *   row after 0), compared at moose_itg's rows 18.1 to 28.6 and at t = 30. memphis is compared only
 *   at t = 30: its rows are 15 apart and the chord between them is 1 % off the curve.
 * The records do not agree to 1 % on that change (printed here from the data): inl_moose and
 * moose_itg, both MOOSE, agree to 0.2 % to 0.8 % at moose_itg's rows (1.2 % at t = 30), memphis's is
 * 1.2 % smaller than inl_moose's at t = 30, chimad3_moose's 3 % to 4 % larger than its nearest (t = 30:
 * memphis -951.7, inl_moose -962.8, moose_itg -974.2, chimad3_moose -1008.9). The run's change is
 * the smallest: 1.1 % smaller than memphis's at t = 30, 2.1 % to 3.4 % than the MOOSE pair's, 5.7 %
 * to 6.7 % than chimad3_moose's. So it is not within 1 % of any record (nor of the pair that agree); its
 * solid area grows by 111.1 from t = 15 to 30, between the records that report it (inl_moose
 * 113.2, chimad3_moose 108.8), and its change in F per unit of solid gained is inl_moose's to
 * 0.5 % (docs/pfhub.md). What is checked is what the records support: at each compared time the
 * run is no further from its nearest record than the record furthest from the others is from its
 * nearest (measured at t = 30: 1.1 % against 3.4 %; at the moose_itg rows 2.1 % to 2.3 % against
 * 3.1 % to 3.9 %), and within 2 % of memphis, the one record made as the sample is (explicit Euler on a
 * uniform grid; measured 1.1 %). */
#define NREC 4
static const char *const rec_name[NREC] = {"memphis_3a", "moose_itg_3a", "inl_moose_3a", "chimad3_moose_3a"};

/* F(t) - F(15) of record r, or NAN where the record cannot give it (t past its rows; memphis off
   its own rows). */
static double rec_change(const curve *rec, int r, double t)
{
    if (t > rec[r].t[rec[r].n - 1]) return NAN;
    if (r == 0 && t != 30) return NAN;
    return at(&rec[r], t) - at(&rec[r], 15);
}

/* The records at time t against each other and the run's change `d` against them: fails where
   the run is further from its nearest record than the records are from theirs. */
static void check_change_at(const curve *rec, double t, double d)
{
    double v[NREC], spread = 0, ours = INFINITY;
    int m = 0;
    for (int r = 0; r < NREC; r++) {
        v[r] = rec_change(rec, r, t);
        if (isnan(v[r])) continue;
        m++;
        ours = fmin(ours, fabs(d - v[r]) / fabs(v[r]));
        print_message("3 t = %7.3f: F(t) - F(15) = %.2f, %s %.2f: %+.2f %%\n", t, d, rec_name[r], v[r], 100 * (d - v[r]) / fabs(v[r]));
    }
    assert_true(m >= 3);
    for (int r = 0; r < NREC; r++) {
        double nearest = INFINITY;
        for (int q = 0; q < NREC && !isnan(v[r]); q++)
            if (q != r && !isnan(v[q])) nearest = fmin(nearest, fabs(v[q] - v[r]) / fabs(v[r]));
        if (!isnan(v[r])) spread = fmax(spread, nearest);
    }
    print_message("3 t = %7.3f: the run %.2f %% from its nearest record, the records up to %.2f %% from theirs\n", t, 100 * ours, 100 * spread);
    if (!(ours <= spread)) fail_msg("t = %g: F's change from t = 15 is %.2f %% from the nearest record, the records %.2f %% from theirs", t, 100 * ours, 100 * spread);
}

static void pfhub3_against_published(void **state)
{
    (void)state;
    char *s = sample("pfhub3.pde"), *out;
    s = replaced(s, "mesh grid(nx = 60, ny = 60, Lx = 24, Ly = 24)", "mesh grid(nx = 200, ny = 200, Lx = 80, Ly = 80)");
    s = replaced(s, "until = 8", "until = 30");
    s = replaced(s, "output every = 2, format = png", "");
    s = replaced(s, "monitor every = 1, solid = integral((1 + phi)/2)",
                 "func gx(p) = (p[1, 0] - p[-1, 0])/(2*dx)\nfunc gy(p) = (p[0, 1] - p[0, -1])/(2*dy)\n"
                 "monitor every = 1, F = integral((W0*a(gx(phi), gy(phi)))^2/2*(gx(phi)^2 + gy(phi)^2) - phi^2/2 + "
                 "phi^4/4 + lambda*u*phi*(1 - 2*phi^2/3 + phi^4/5))");
    write_file("3.pde", s);
    free(s);
    assert_int_equal(tu_pdejit(&out, "run 3.pde --out 3 --quiet"), 0);
    free(out);
    static curve ours, rec[NREC];
    monitor("3", "F", &ours);
    char file[64];
    for (int r = 0; r < NREC; r++) {
        snprintf(file, sizeof file, "%s.csv", rec_name[r]);
        published(file, "free_energy", &rec[r]);
    }
    const double lambda = 10 / 0.6267, melt = -0.25 + 0.3 * lambda * 8 / 15, rest = melt * (960.0 * 960 - 80.0 * 80);
    for (int r = 0; r < NREC; r++) {
        double worst = 0;
        int compared = 0;
        for (int k = 0; k < rec[r].n && rec[r].t[k] <= 30; k++) {
            double t = rec[r].t[k], whole = at(&ours, t) + rest, rel = (whole - rec[r].v[k]) / rec[r].v[k];
            if (!(fabs(rel) <= 0.01)) fail_msg("t = %g: F = %.8g is %.3f %% from %s's %.8g", t, whole, 100 * rel, rec_name[r], rec[r].v[k]);
            worst = fmax(worst, fabs(rel));
            compared++;
        }
        print_message("3: F (the square) within %.2e of %s at its %d rows to t = 30\n", worst, rec_name[r], compared);
        assert_true(compared >= 3);
    }
    double ours15 = at(&ours, 15);
    for (int k = 0; k < rec[1].n && rec[1].t[k] <= 30; k++)
        if (rec[1].t[k] > 16) check_change_at(rec, rec[1].t[k], at(&ours, rec[1].t[k]) - ours15);
    double d30 = at(&ours, 30) - ours15, m30 = rec_change(rec, 0, 30), rel = (d30 - m30) / fabs(m30);
    check_change_at(rec, 30, d30);
    if (!(fabs(rel) <= 0.02)) fail_msg("t = 30: F's change from t = 15, %.6g, is %.2f %% from memphis_3a's %.6g", d30, 100 * rel, m30);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pfhub2a_against_moose),
        cmocka_unit_test(pfhub2b_against_moose),
        cmocka_unit_test(pfhub3_against_published),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
