/* fuzz_frontend.c — libFuzzer target: the bytes are a problem text.
 *
 *   compile_problem (diagnostics ignored)  ->  when it compiles and its grid is tiny: the
 *   "interp" back end through engine.h (one thread), initial values and a few steps  ->  free all
 *
 * Any input must end without a crash, undefined behaviour or a leak, and a compile that fails
 * must say why (at least one error). Grids over FUZZ_MAX_VALUES
 * values (every slot of every field, ghost layers included) are compiled but not run, so one
 * input never takes long. Built with -fsanitize=fuzzer for fuzzing, and without it (with
 * fuzz_replay.c's main) for the regression inputs of tests/fuzz/regressions/frontend/. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "program.h"

enum { FUZZ_MAX_CELLS = 4096, FUZZ_MAX_VALUES = 1 << 16, FUZZ_STEPS = 3 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Interior cells, and the values every buffer holds with its ghost layers; -1 when over the caps
 * (checked axis by axis, so nothing overflows). */
static int64_t values_to_allocate(const pj_program *p, int64_t *cells)
{
    int64_t interior = 1, padded = 1;
    for (int a = 0; a < p->dim; a++) {
        int64_t ext = p->n[a] + 2 * (int64_t)p->halo;
        if (p->n[a] > FUZZ_MAX_CELLS || ext > FUZZ_MAX_VALUES) return -1;
        interior *= p->n[a];
        padded *= ext;
        if (interior > FUZZ_MAX_CELLS || padded > FUZZ_MAX_VALUES) return -1;
    }
    int64_t buffers = (int64_t)p->n_fields * p->n_slots;
    if (buffers > FUZZ_MAX_VALUES || padded * buffers > FUZZ_MAX_VALUES) return -1;
    *cells = interior;
    return padded * buffers;
}

/* A few steps of p on the interpreter. Errors are answers, not findings: they are ignored. */
static void run_a_few_steps(const pj_program *p)
{
    int64_t cells;
    if (values_to_allocate(p, &cells) < 0) return;
    char err[512];
    engine_options options = {.threads = 1};
    engine *e = engine_create(engine_backend("interp"), p, &options, NULL, err, sizeof err);
    if (!e) return;
    double dt = isfinite(p->dt) && p->dt > 0 ? p->dt : 1e-3;
    if (engine_init(e, err, sizeof err) == 0) {
        for (int s = 0; s < FUZZ_STEPS; s++)
            if (engine_step(e, dt, err, sizeof err) < 0) break;
        sim_nan_report report;
        (void)engine_take_nonfinite(e, err, sizeof err);
        (void)engine_check_finite(e, &report, err, sizeof err);
        double *field = malloc(sizeof *field * (size_t)cells);
        if (field && p->n_fields > 0) (void)engine_get_field(e, 0, field, err, sizeof err);
        free(field);
    }
    engine_destroy(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1); /* the compiler's source is NUL-terminated */
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    text[size] = 0;
    diag d;
    diag_init(&d, "fuzz.pde", text, size);
    pj_program *p = compile_problem("fuzz.pde", text, size, &d, NULL);
    if (!p && d.errors == 0) { /* program.h: NULL only with an error said */
        fprintf(stderr, "fuzz_frontend: compile_problem returned NULL without an error\n");
        abort();
    }
    diag_free(&d);
    if (p) run_a_few_steps(p);
    program_free(p);
    free(text);
    return 0;
}
