/* fuzz_frontend.c — libFuzzer target: the bytes are a problem text.
 *
 *   compile_problem (diagnostics ignored)  ->  when it compiles and its grid is tiny: the
 *   "interp" back end through engine.h (one thread), initial values and a few steps  ->  free all
 *
 * A line "#redefine" (a comment to the language) splits the text as hot swap does: the part
 * before it is the running problem, the lines after it a redefinition (pj_sim_redefine in
 * api.c). When both compile, the redefined program is prepared and swapped in at a step
 * boundary (engine_prepare, engine_swap) and a few more steps run.
 *
 * Any input must end without a crash, undefined behaviour or a leak, and a compile that fails
 * must say why (at least one error). Grids over FUZZ_MAX_VALUES values (every slot of every
 * field, ghost layers included) are compiled but not run, so one input never takes long. Built
 * with -fsanitize=fuzzer for fuzzing, and without it (with fuzz_replay.c's main) for the
 * regression inputs of tests/fuzz/regressions/frontend/. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "program.h"

enum { FUZZ_MAX_CELLS = 4096, FUZZ_MAX_VALUES = 1 << 16, FUZZ_STEPS = 3 };
static const char redefine_marker[] = "\n#redefine\n";

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

static void a_few_steps(engine *e, double dt)
{
    char err[512];
    for (int s = 0; s < FUZZ_STEPS; s++)
        if (engine_step(e, dt, err, sizeof err) < 0) break;
}

/* An adaptive scheme's step advances by the span it is given, in as many steps as its error
 * control needs (rk45 at dt = 1 on a stiff diffusion: tens of thousands), so it gets a short span:
 * a few tries each, as for the fixed-step schemes. */
static double step_size(const pj_program *p)
{
    double dt = isfinite(p->dt) && p->dt > 0 ? p->dt : 1e-3;
    return p->adapt_order > 0 ? fmin(dt, 1e-6) : dt;
}

/* A few steps of p on the interpreter; then, when p2 is given, p2 swapped in and a few more.
 * Errors are answers, not findings: they are ignored. */
static void run(const pj_program *p, const pj_program *p2)
{
    int64_t cells;
    if (values_to_allocate(p, &cells) < 0) return;
    char err[512];
    engine_options options = {.threads = 1};
    engine *e = engine_create(engine_backend("interp"), p, &options, NULL, err, sizeof err);
    if (!e) return;
    if (engine_init(e, err, sizeof err) == 0) {
        a_few_steps(e, step_size(p));
        if (p2) {
            void *prepared = engine_prepare(e, p2, NULL, err, sizeof err);
            /* a failed swap releases what was prepared and leaves the simulation on p */
            if (prepared && engine_swap(e, p2, prepared, err, sizeof err) == 0) a_few_steps(e, step_size(p2));
        }
        sim_nan_report report;
        (void)engine_take_nonfinite(e, err, sizeof err);
        (void)engine_check_finite(e, &report, err, sizeof err);
        double *field = malloc(sizeof *field * (size_t)cells);
        if (field && engine_program(e)->n_fields > 0) (void)engine_get_field(e, 0, field, err, sizeof err);
        free(field);
    }
    engine_destroy(e);
}

/* text[0..len) compiled; the redefinition starts at line redefine_line (0: none). Aborts when a
 * compile fails without an error. */
static pj_program *compile(const char *text, size_t len, int redefine_line, pj_scheme scheme)
{
    diag d;
    diag_init(&d, "fuzz.pde", text, len);
    pj_compile_options opt = {.scheme = scheme, .scheme_set = redefine_line > 0, .redefine_line = redefine_line};
    if (redefine_line > 0) diag_set_part(&d, redefine_line, "<redefine>");
    pj_program *p = compile_problem("fuzz.pde", text, len, &d, redefine_line > 0 ? &opt : NULL);
    if (!p && d.errors == 0) { /* program.h: NULL only with an error said */
        fprintf(stderr, "fuzz_frontend: compile_problem returned NULL without an error\n");
        abort();
    }
    diag_free(&d);
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1); /* the compiler's source is NUL-terminated */
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    text[size] = 0;
    /* "#redefine" on a line of its own (the first one, if several) */
    const char *marker = strlen(text) == size ? strstr(text, redefine_marker) : NULL;
    pj_program *p = NULL, *p2 = NULL;
    if (!marker) {
        p = compile(text, size, 0, PJ_EULER);
    } else {
        size_t base_len = (size_t)(marker - text) + 1; /* through the newline before the marker */
        char *base = strndup(text, base_len);
        if (base) p = compile(base, base_len, 0, PJ_EULER);
        free(base);
        int redefine_line = 1;
        for (const char *c = text; c < marker + sizeof redefine_marker - 1; c++) redefine_line += *c == '\n';
        if (p) p2 = compile(text, size, redefine_line, p->scheme);
    }
    if (p) run(p, p2);
    program_free(p2);
    program_free(p);
    free(text);
    return 0;
}
