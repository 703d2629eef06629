/* embed.c — pdejit embedded in a C program through its public API alone (include/pdejit.h):
 * compile a problem, run it on the CPU JIT, read a field back and check it.
 *
 * The problem is a sine wave diffusing on a periodic line: u(x, t) = exp(-D k^2 t) sin(k x)
 * with k = 2 pi / L. The program prints the worst error against that solution and exits 1 when
 * it exceeds the tolerance (the scheme is second order in space: about 1e-4 here), 2 when
 * pdejit reports an error. With an argument it runs that .pde file instead (to its `until`,
 * else 1) and prints the mean of its first field. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <pdejit.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static const char problem_text[] =
    "# a sine wave diffusing on a periodic line\n"
    "mesh grid(nx = 100, Lx = 1)\n"
    "param D = 0.1\n"
    "field u = sin(2*pi*x)\n"
    "eq dt(u) = D*lap(u)\n"
    "periodic x\n"
    "time dt = 0.0002, until = 0.5, scheme = rk4\n";

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)size + 1))) {
            *len = fread(text, 1, (size_t)size, f);
            text[*len] = 0;
        }
    }
    fclose(f);
    return text;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "sine.pde";
    size_t len = sizeof problem_text - 1;
    char *file_text = argc > 1 ? read_file(argv[1], &len) : NULL;
    if (argc > 1 && !file_text) {
        fprintf(stderr, "embed: cannot read %s\n", argv[1]);
        return 2;
    }
    pj_problem *problem;
    char *diagnostics = NULL;
    pj_status status = pj_problem_compile(name, file_text ? file_text : problem_text, len, &problem, &diagnostics);
    free(file_text);
    if (status != PJ_OK) {
        fprintf(stderr, "%s", diagnostics ? diagnostics : "embed: the problem does not compile\n");
        free(diagnostics);
        return 2;
    }

    pj_sim_options options = {.backend = PJ_BACKEND_CPU};
    pj_sim *sim;
    char err[512];
    if (pj_sim_create(problem, &options, &sim, err, sizeof err) != PJ_OK) {
        fprintf(stderr, "embed: %s\n", err);
        pj_problem_free(problem);
        return 2;
    }
    double t_end = argc > 1 ? 1.0 : 0.5;
    double dt = pj_problem_dt(problem) > 0 ? pj_problem_dt(problem) : 1e-3;
    if (pj_sim_advance(sim, dt, t_end, err, sizeof err) != PJ_OK) {
        fprintf(stderr, "embed: %s\n", err);
        pj_sim_free(sim);
        pj_problem_free(problem);
        return 2;
    }

    int64_t cells = pj_problem_cells(problem);
    double *u = malloc(sizeof *u * (size_t)cells);
    const char *field = pj_problem_field_name(problem, 0);
    int failed = !u || pj_sim_get_field(sim, field, u) != PJ_OK;
    if (!failed && argc > 1) {
        double sum = 0;
        for (int64_t i = 0; i < cells; i++) sum += u[i];
        printf("embed: %s: mean of %s at t = %g after %lld steps: %.9g\n", name, field, pj_sim_time(sim),
               (long long)pj_sim_steps(sim), sum / (double)cells);
    } else if (!failed) {
        const double D = 0.1, k = 2 * M_PI, tolerance = 5e-4;
        double worst = 0;
        for (int64_t i = 0; i < cells; i++) {
            double x = (i + 0.5) / (double)cells;
            double exact = exp(-D * k * k * pj_sim_time(sim)) * sin(k * x);
            if (fabs(u[i] - exact) > worst || isnan(u[i])) worst = isnan(u[i]) ? INFINITY : fabs(u[i] - exact);
        }
        printf("embed: u at t = %g after %lld steps: u(0.255) = %.6f, exact %.6f, max error %.2e (tolerance %.0e)\n",
               pj_sim_time(sim), (long long)pj_sim_steps(sim), u[25],
               exp(-D * k * k * pj_sim_time(sim)) * sin(k * 0.255), worst, tolerance);
        failed = !(worst <= tolerance);
    }
    free(u);
    pj_sim_free(sim);
    pj_problem_free(problem);
    return failed ? 1 : 0;
}
