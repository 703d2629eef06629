/* test_cases.c — one table of cases × every back end. Each case of the table (solve.h:
 * the files of samples/, the problems of solve.c, samples/implicit/) runs on every back end that
 * engine_backends[] (runtime/engine.c) registers, against the interpreter (the oracle) from the
 * same initial state: the monitors (five reductions over the fields, solve.c's
 * case_with_monitors) after a few steps, then every field after more, in double and in single
 * precision (implicit cases in double: the solver library's). A new back end joins by being
 * registered, held to the default tolerances of the table below until a row names it.
 *
 * The GPU back end runs here without a GPU too, through its host emulation (tests/gpu_emu/, as in
 * test_gpu.c): a target of its own, "cuda (emulated)", on a fresh kernel cache.
 *
 * What cannot run is reported, never passed: a back end that cannot run on this machine
 * (engine_create: ENGINE_UNAVAILABLE, e.g. no device) skips its whole target with the reason; a
 * case that needs a capability the back end does not declare (engine_supports: today the cuda
 * back end and implicit schemes or steady problems) is skipped on that back end, the
 * reason printed, as are the monitors on a back end without ENGINE_CAP_MONITORS and the implicit
 * cases in a build without the implicit solver (PETSc). Exit 77 (ctest: SKIPPED) when no target
 * could run a case. */
#if defined(__GNUC__) && !defined(__clang__) /* clang has no such warning (and warns of the name) */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "implicit.h"
#include "solve.h"

/* What a back end is held to. The first row that names the back end (and its emulation) applies;
 * the last row is every other back end's. */
typedef struct tolerances {
    const char *backend;  /* NULL: any */
    int emulated;
    int threads;          /* engine_options.threads */
    int prefetch;         /* also with row prefetching forced on (host back ends) */
    int64_t steps, monitor_steps; /* explicit cases: the monitors after monitor_steps, fields after steps */
    int64_t implicit_steps;
    double fields[2];     /* the largest field_diff allowed: double, single */
    double monitors[2];
    double implicit;      /* implicit cases (double): fields and monitors */
} tolerances;

static const tolerances g_tolerances[] = {
    /* the same IR in the same order of operations: double results agree to the bit in practice,
       the contract is 1e-12 (monitors: kir.h's order, test_reduce); the implicit solver runs the
       same kernels under the same solver: bit for bit (test_implicit) */
    {"cpu", 0, 2, 1, 60, 20, 3, {1e-12, 1e-5}, {1e-12, 1e-5}, 0},
    /* the emulation computes in the host's arithmetic, thread by thread: a few steps; single
       precision and the monitors to the bit */
    {"cuda", 1, 0, 0, 6, 3, 3, {1e-12, 0}, {0, 0}, 1e-8},
    /* a device: its own libm; a few hundred steps */
    {"cuda", 0, 0, 0, 300, 50, 3, {1e-12, 1e-3}, {1e-12, 1e-5}, 1e-8},
    /* any other back end */
    {NULL, 0, 2, 0, 60, 20, 3, {1e-12, 1e-3}, {1e-12, 1e-5}, 1e-8},
};

/* A back end as this test runs it: natively, or through an emulation. */
typedef struct target {
    char label[64];
    const backend_ops *be;
    char *emulation;         /* the stand-ins' folder (cuda through tests/gpu_emu/), or NULL */
    char *cache_dir;         /* a fresh kernel cache (emulated targets), or NULL: the test's */
    char unavailable[512];   /* why the target cannot run here ("" when it can) */
    const tolerances *tol;
    int ran, skipped;        /* cases run, and cases declined */
} target;

static target *g_targets;
static int g_n_targets;
static test_case *g_cases;
static int g_n_cases;

static const tolerances *tolerances_of(const char *name, int emulated)
{
    size_t n = sizeof g_tolerances / sizeof *g_tolerances;
    for (size_t i = 0; i + 1 < n; i++)
        if (!strcmp(g_tolerances[i].backend, name) && g_tolerances[i].emulated == emulated) return &g_tolerances[i];
    return &g_tolerances[n - 1];
}

/* The one place that decides whether back end `be` declines case p for a capability it lacks
 * (0, the reason in why): engine.h's declared capabilities (an implicit scheme, a second
 * boundary condition, monitors ...). */
static int takes(const backend_ops *be, const pj_program *p, char *why, size_t len)
{
    return engine_supports(be, p, why, len);
}

static pj_program *compile_case(const test_case *c, const char *text)
{
    diag d;
    diag_init(&d, c->name, text, strlen(text));
    pj_program *p = compile_problem(c->name, text, strlen(text), &d, NULL);
    if (!p) fail_msg("%s:\n%s", c->name, d.log);
    diag_free(&d);
    return p;
}

static engine *start(const backend_ops *be, const pj_program *p, const engine_options *o, const char *sets,
                     int *unavailable, char *err, size_t len)
{
    engine *e = engine_create(be, p, o, unavailable, err, len);
    if (!e) return NULL;
    engine_set_params(e, sets);
    if (engine_init(e, err, len) < 0) fail_msg("%s: %s", be->name, err);
    return e;
}

typedef enum { RAN, DECLINED, UNAVAILABLE } outcome;

/* Case c (compiled as p, which back end t->be takes) on target t with options o against the
 * interpreter: the monitors after ms steps (when p has monitors), every field after fs steps in
 * all, each within its tolerance. UNAVAILABLE when the back end cannot run here. */
static outcome run_case(target *t, const test_case *c, const pj_program *p, const engine_options *o, int64_t ms,
                        int64_t fs, double tol_fields, double tol_monitors, const char *what)
{
    char err[1024] = "";
    int una = 0;
    engine *e = start(t->be, p, o, c->sets, &una, err, sizeof err);
    if (!e && una == ENGINE_UNAVAILABLE) {
        snprintf(t->unavailable, sizeof t->unavailable, "%s", err);
        return UNAVAILABLE;
    }
    if (!e) fail_msg("%s on %s (%s): %s", c->name, t->label, what, err);
    engine *ref = start(engine_backend("interp"), p, o, c->sets, NULL, err, sizeof err);
    if (!ref) fail_msg("%s on interp (%s): %s", c->name, what, err);
    int bit = 0;
    double dm = p->n_monitors ? engines_monitors_agree(ref, e, ms, &bit) : 0;
    double df = engines_agree(ref, e, p->n_monitors ? fs - ms : fs, c->name);
    print_message("%-28s %-18s %s: fields %.3g after %lld steps, monitors %.3g (%d of %d to the bit) after %lld\n",
                  c->name, t->label, what, df, (long long)fs, dm, bit, p->n_monitors, (long long)ms);
    if (!(df <= tol_fields))
        fail_msg("%s on %s (%s): fields differ by %.3g > %.3g", c->name, t->label, what, df, tol_fields);
    if (!(dm <= tol_monitors))
        fail_msg("%s on %s (%s): monitors differ by %.3g > %.3g", c->name, t->label, what, dm, tol_monitors);
    engine_destroy(ref);
    engine_destroy(e);
    return RAN;
}

/* Every case of the table on one target. */
static void cases_on(void **state)
{
    target *t = *state;
    if (t->unavailable[0]) {
        print_message("SKIPPED every case on %s: %s\n", t->label, t->unavailable);
        skip();
    }
    tu_gpu_emulation_use(t->emulation);
    const tolerances *tol = t->tol;
    char why[1024];
    /* the cases with five monitors over their fields, where the back end has monitors */
    int monitors = engine_backend_can(t->be, ENGINE_CAP_MONITORS, why, sizeof why);
    if (!monitors) print_message("SKIPPED the monitors on %s: %s\n", t->label, why);
    for (int i = 0; i < g_n_cases; i++) {
        const test_case *c = &g_cases[i];
        char *text = monitors ? case_with_monitors(c) : strdup(c->text);
        pj_program *p = compile_case(c, text);
        int implicit = PJ_SCHEME_IMPLICIT(p->scheme);
        outcome r = RAN;
        /* declined: a capability the back end lacks, or the implicit solver this build lacks (not
           even the oracle can run the case then) */
        if (!takes(t->be, p, why, sizeof why) || (implicit && !implicit_available(why, sizeof why))) {
            print_message("SKIPPED %s on %s: %s\n", c->name, t->label, why);
            r = DECLINED;
        }
        for (int single = 0; single <= !implicit && r == RAN; single++)
            for (int pf = 0; pf <= tol->prefetch && r == RAN; pf++) {
                engine_options o = {.single = single, .threads = tol->threads, .cache_dir = t->cache_dir};
                if (tol->prefetch) o.prefetch = pf ? 1 : -1;
                char what[64];
                snprintf(what, sizeof what, "%s%s", single ? "single" : "double", pf ? ", prefetch" : "");
                if (implicit)
                    r = run_case(t, c, p, &o, 1, tol->implicit_steps, tol->implicit, tol->implicit, what);
                else
                    r = run_case(t, c, p, &o, tol->monitor_steps, tol->steps, tol->fields[single],
                                 tol->monitors[single], what);
            }
        program_free(p);
        free(text);
        if (r == UNAVAILABLE) {
            tu_gpu_emulation_use(NULL);
            print_message("SKIPPED every case on %s: %s\n", t->label, t->unavailable);
            skip();
        }
        t->ran += r == RAN;
        t->skipped += r == DECLINED;
    }
    tu_gpu_emulation_use(NULL);
    print_message("%s: %d cases agree with the interpreter, %d skipped (declined)\n", t->label, t->ran, t->skipped);
    if (!t->ran) skip(); /* every case declined: nothing ran on this back end */
}

static void add_target(const backend_ops *be, int emulated)
{
    target *t = &g_targets[g_n_targets++];
    memset(t, 0, sizeof *t);
    t->be = be;
    t->tol = tolerances_of(be->name, emulated);
    snprintf(t->label, sizeof t->label, "%s%s", be->name, emulated ? " (emulated)" : "");
    if (!emulated) return;
    t->emulation = tu_gpu_emulation_build(t->unavailable, sizeof t->unavailable);
    if (t->emulation) t->cache_dir = tu_tempdir("cases-emu-cache");
}

/* test_cases [BACKEND...]: every registered back end but the interpreter, or those named
 * (bench/gpu-check.sh: cuda). */
int main(int argc, char **argv)
{
    int n_be = 0;
    while (engine_backends[n_be]) n_be++;
    for (int a = 1; a < argc; a++)
        if (!engine_backend(argv[a]) || !strcmp(argv[a], "interp")) {
            fprintf(stderr, "test_cases: '%s' is not a back end to test (%s, but not the oracle interp)\n", argv[a],
                    engine_backend_names());
            return 2;
        }
    g_targets = calloc((size_t)2 * (size_t)n_be, sizeof *g_targets);
    struct CMUnitTest *tests = calloc((size_t)2 * (size_t)n_be, sizeof *tests);
    if (!g_targets || !tests) return 1;
    tu_gpu_emulation_use(NULL);
    for (int i = 0; i < n_be; i++) {
        const backend_ops *be = engine_backends[i];
        if (!strcmp(be->name, "interp")) continue; /* the oracle */
        int named = argc == 1;
        for (int a = 1; a < argc; a++) named |= !strcmp(argv[a], be->name);
        if (!named) continue;
        add_target(be, 0);
        /* the one back end with an emulation here: the GPU's through tests/gpu_emu/ */
        if (!strcmp(be->name, "cuda")) add_target(be, 1);
    }
    for (int i = 0; i < g_n_targets; i++)
        tests[i] = (struct CMUnitTest){.name = g_targets[i].label, .test_func = cases_on,
                                       .initial_state = &g_targets[i]};
    g_n_cases = test_cases_all(&g_cases);
    int failed = _cmocka_run_group_tests("test_cases", tests, (size_t)g_n_targets, NULL, NULL);
    int ran = 0;
    print_message("\n");
    for (int i = 0; i < g_n_targets; i++) {
        target *t = &g_targets[i];
        ran += t->ran;
        if (t->unavailable[0]) print_message("%-18s SKIPPED: %s\n", t->label, t->unavailable);
        else print_message("%-18s %d of %d cases run, %d declined\n", t->label, t->ran, g_n_cases, t->skipped);
        if (t->emulation) {
            char cmd[2048];
            snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", t->emulation, t->cache_dir ? t->cache_dir : "");
            tu_run(cmd, NULL);
        }
        free(t->emulation);
        free(t->cache_dir);
    }
    test_cases_free(g_cases, g_n_cases);
    free(tests);
    free(g_targets);
    if (failed) return failed;
    return ran ? 0 : 77; /* nothing could run here: ctest's SKIPPED (SKIP_RETURN_CODE) */
}
