/* solve.c — see solve.h. */
#include "solve.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_backend.h"
#include "driver.h"

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
    sim_options so = {single, threads};
    sim *s = sim_create(p, &so, r->err, sizeof r->err);
    if (!s) abort();
    if (sets) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", sets);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            char *eq = strchr(tok, '=');
            *eq = 0;
            if (sim_set_param(s, tok, atof(eq + 1)) < 0) abort();
        }
    }
    cpu_backend *cb = NULL;
    if (be == BE_CPU_PREFETCH) sim_set_prefetch(s, 1);
    if (be != BE_INTERP) {
        cpu_backend_options bo = {single, 0, NULL};
        cb = cpu_backend_create(&bo, r->err, sizeof r->err);
        if (!cb || cpu_backend_prepare(cb, p, r->err, sizeof r->err) < 0) {
            fprintf(stderr, "%s\n", r->err);
            abort();
        }
        cpu_backend_install(cb, s);
    }
    sim_init(s);
    driver_options o = {.dt = p->dt, .until = p->until, .steps = p->steps, .check_every = 1};
    driver_result res;
    r->status = driver_run(s, &o, &res, r->err, sizeof r->err);
    r->t = sim_time(s);
    r->cells = sim_cells(s);
    r->u = calloc((size_t)p->n_fields, sizeof *r->u);
    for (int f = 0; f < p->n_fields; f++) {
        r->u[f] = malloc(sizeof(double) * (size_t)r->cells);
        sim_get_field(s, f, r->u[f]);
    }
    for (int a = 0; a < 3; a++) {
        r->x[a] = malloc(sizeof(double) * (size_t)r->cells);
        for (int64_t c = 0; c < r->cells; c++) {
            int64_t idx[3] = {c % p->n[0], (c / p->n[0]) % p->n[1], c / (p->n[0] * p->n[1])};
            double h = p->length[a] / (double)p->n[a];
            r->x[a][c] = p->origin[a] + ((double)idx[a] + 0.5) * h;
        }
    }
    sim_destroy(s);
    cpu_backend_destroy(cb);
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
