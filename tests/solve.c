/* solve.c — see solve.h. */
#include "solve.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "engine.h"

solved *solve(const char *src, backend_kind be, int single, int threads, const char *sets)
{
    solved *r = calloc(1, sizeof *r);
    diag d;
    diag_init(&d, "t.pde", src, strlen(src));
    r->p = compile_problem("t.pde", src, strlen(src), &d, NULL);
    if (!r->p) {
        fprintf(stderr, "%s", d.log);
        diag_free(&d);
        abort();
    }
    diag_free(&d);
    pj_program *p = r->p;
    static const char *const names[] = {[BE_INTERP] = "interp", [BE_CPU] = "cpu", [BE_CPU_PREFETCH] = "cpu",
                                        [BE_CUDA] = "cuda"};
    engine_options eo = {.single = single, .threads = threads, .prefetch = be == BE_CPU_PREFETCH};
    engine *e = engine_create(engine_backend(names[be]), p, &eo, NULL, r->err, sizeof r->err);
    if (!e) {
        fprintf(stderr, "%s\n", r->err);
        abort();
    }
    if (sets) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", sets);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            char *eq = strchr(tok, '=');
            *eq = 0;
            if (engine_set_param(e, tok, atof(eq + 1)) < 0) abort();
        }
    }
    if (engine_init(e, r->err, sizeof r->err) < 0) abort();
    driver_options o = {.dt = p->dt, .until = p->until, .steps = p->steps, .check_every = 1};
    driver_result res;
    r->status = driver_run(e, &o, &res, r->err, sizeof r->err);
    r->t = engine_time(e);
    r->cells = engine_cells(e);
    r->u = calloc((size_t)p->n_fields, sizeof *r->u);
    for (int f = 0; f < p->n_fields; f++) {
        r->u[f] = malloc(sizeof(double) * (size_t)r->cells);
        if (engine_get_field(e, f, r->u[f], r->err, sizeof r->err) < 0) abort();
    }
    for (int a = 0; a < 3; a++) {
        r->x[a] = malloc(sizeof(double) * (size_t)r->cells);
        for (int64_t c = 0; c < r->cells; c++) {
            int64_t idx[3] = {c % p->n[0], (c / p->n[0]) % p->n[1], c / (p->n[0] * p->n[1])};
            double h = p->length[a] / (double)p->n[a];
            r->x[a][c] = p->origin[a] + ((double)idx[a] + 0.5) * h;
        }
    }
    engine_destroy(e);
    return r;
}

double field_sum(const solved *s, int f)
{
    double sum = 0;
    for (int64_t c = 0; c < s->cells; c++) sum += s->u[f][c];
    return sum;
}

void solved_free(solved *s)
{
    if (!s) return;
    for (int f = 0; s->u && f < s->p->n_fields; f++) free(s->u[f]);
    free(s->u);
    for (int a = 0; a < 3; a++) free(s->x[a]);
    program_free(s->p);
    free(s);
}
