/* pdejit.c — the `pdejit` command: run, check, emit, bench, cache (LANGUAGE.md §6).
 *
 * Exit status: 0 success; 1 a run that failed (NaN found, device error); 2 bad usage or a
 * bad problem file. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include "ast.h"
#include "cache.h"
#include "decomp.h"
#include "driver.h"
#include "engine.h"
#include "program.h"
#include "scheme.h"
#include "sim.h"
#include "cli.h"
#include "watch.h"
#include "writers.h"

static char *read_file(const char *path, size_t *len, char *err, size_t err_len)
{
    char why[256];
    FILE *f = writers_open_regular(path, why, sizeof why); /* a FIFO is refused, not waited for */
    if (!f) {
        snprintf(err, err_len, "%s: %s", path, why);
        return NULL;
    }
    /* at most one byte more than the front end accepts: enough for it to refuse the file */
    size_t cap = 1 << 16, n = 0, r, most = PJ_MAX_SOURCE_BYTES + 1;
    char *buf = malloc(cap + 1);
    while (buf && n < most && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap && n < most) {
            size_t grown = 2 * cap < most ? 2 * cap : most;
            char *nb = realloc(buf, grown + 1);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap = grown;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        snprintf(err, err_len, "%s: %s", path, bad ? strerror(errno) : "out of memory");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* The file's text, or NULL after saying why on stderr. */
static char *read_file_or_say(const char *path, size_t *len)
{
    char err[512];
    char *text = read_file(path, len, err, sizeof err);
    if (!text) fprintf(stderr, "pdejit: %s\n", err);
    return text;
}

/* Compiles FILE; prints its diagnostics to stderr. NULL on error (status 2). */
pj_program *cli_load_problem(const char *path, const pj_compile_options *opt)
{
    size_t len;
    char *text = read_file_or_say(path, &len);
    if (!text) return NULL;
    diag d;
    diag_init(&d, path, text, len);
    pj_program *p = compile_problem(path, text, len, &d, opt);
    if (d.log) fputs(d.log, stderr);
    if (!p && d.errors)
        fprintf(stderr, "%d error%s\n", d.errors, d.errors == 1 ? "" : "s");
    diag_free(&d);
    free(text);
    return p;
}

/* Compiles FILE through the public API; prints its diagnostics to stderr. NULL on error. */
pj_problem *cli_compile(const char *path, const char *scheme)
{
    size_t len;
    char *text = read_file_or_say(path, &len);
    if (!text) return NULL;
    pj_problem *pr = NULL;
    char *diagnostics = NULL;
    pj_status st = pj_problem_compile_scheme(path, text, len, scheme, &pr, &diagnostics);
    if (diagnostics) fputs(diagnostics, stderr);
    if (st == PJ_ERR_MEMORY) fprintf(stderr, "pdejit: %s: out of memory\n", path);
    free(diagnostics);
    free(text);
    return pr;
}

static const char *usage_main =
    "usage: pdejit COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  run FILE     run a problem (pdejit run --help)\n"
    "  check FILE   parse and check a problem; silent when it is sound\n"
    "  emit FILE    print the generated kernel IR, LLVM IR or CUDA C\n"
    "  bench FILE   compile and step times, back ends side by side\n"
    "  cache        the on-disk kernel cache: stats, list, clear, explain FILE\n"
    "\n"
    "exit status: 0 success, 1 a run that failed, 2 bad usage or a bad problem file\n";

static const char *usage_check =
    "usage: pdejit check FILE [--precision double|single]\n"
    "Parses and checks FILE. Prints nothing and exits 0 when it is sound; otherwise prints\n"
    "every error as FILE:LINE:COL: error: MESSAGE with the line and a caret, and exits 2.\n"
    "It also exits 2 when the fields (every slot of the scheme, in the precision given;\n"
    "default double) do not fit in the memory available, saying how much they need.\n";

static const char *usage_emit =
    "usage: pdejit emit FILE (--ir | --llvm | --cuda) [--scheme S] [--precision double|single] [--fast-math]\n"
    "Prints what the compiler generates for every kernel of FILE:\n"
    "  --ir     the kernel IR (the typed DAG every back end consumes) with its canonical hash\n"
    "  --llvm   the optimised LLVM IR of the CPU back end\n"
    "  --cuda   the CUDA C of the GPU back end\n"
    "  --fast-math  the code --fast-math runs (vector math from libmvec on the CPU)\n";

static const char *usage_run =
    "usage: pdejit run FILE [options]\n"
    "Runs the problem in FILE.\n"
    "  --backend interp|cpu|cuda  where the kernels run (default cpu: LLVM JIT, all cores)\n"
    "  --set NAME=VALUE           change a param (repeatable; never recompiles) or a const (the\n"
    "                             kernels it changes are compiled again, and the run says so)\n"
    "  --dt DT                    time step (overrides the file)\n"
    "  --steps N | --until T      how far to run (overrides the file)\n"
    "  --scheme S                 time-stepping scheme (overrides the file): euler, rk2, rk3, rk4\n"
    "                             (explicit), beuler, cn, bdf2 (implicit, through PETSc)\n"
    "  --solver-options \"...\"     implicit schemes: options passed to PETSc, after the file's\n"
    "                             solver statement (\"-ksp_type cg -pc_type gamg -snes_monitor\")\n"
    "  --no-stability-check       run an explicit scheme even when dt exceeds its estimated\n"
    "                             stability limit (refused with exit 2 otherwise)\n"
    "  --out DIR                  snapshot folder (default FILE's name + .out when the file has\n"
    "                             an output statement; `--out none` writes none)\n"
    "  --dump FILE.csv            write the final state: x[,y[,z]],field... one row per cell,\n"
    "                             17 significant digits\n"
    "  --threads N                CPU threads (default: all cores; under mpirun, shared by the\n"
    "                             processes on the machine)\n"
    "  --ranks-layout PxQ[xR]     under mpirun: processes along x, y, z (default: PETSc chooses)\n"
    "  --seed N                   the key of rand() and randn() (0 to 2^64-1, default 0): the same\n"
    "                             seed gives the same numbers on every back end and thread count\n"
    "  --precision double|single  floating point of the kernels (default double)\n"
    "  --fast-math                let the compiler reassociate and contract (FMA); results\n"
    "                             then differ from the interpreter in the last bits\n"
    "  --check-every N            steps between NaN/Inf checks (default 1)\n"
    "  --checkpoint-every T       write DIR/checkpoint.pjc (fields, time, step) at the first step\n"
    "                             at or after each multiple of T of simulated time, atomically\n"
    "  --resume CHECKPOINT        continue the run that wrote CHECKPOINT (same problem, grid,\n"
    "                             precision, seed): it ends with the same bits as one never stopped\n"
    "  --init FILE.csv            start from the fields of a --dump of the same grid\n"
    "  --watch                    hot swap: when FILE changes, recompile it while the run goes on\n"
    "                             and swap the new equations, funcs, fluxes and boundary\n"
    "                             conditions in at a step boundary, the fields keeping their state\n"
    "                             (a file that does not compile is reported; the run goes on)\n"
    "  --verbose                  compile/cache times per kernel, Mcells/s; implicit schemes:\n"
    "                             Newton and linear iterations per step\n"
    "  --quiet                    no progress lines\n"
    "Before the first step the run is refused (exit 2) when its fields do not fit in the memory\n"
    "available, when it would take more than 1e15 steps or stop at more than 1e7 output times,\n"
    "when its end time is not finite, or when the --dump or --out target cannot be written; a\n"
    "reused --out folder is cleaned of the previous series' files (only those names).\n"
    "SIGINT/SIGTERM stop it at a step boundary (no dump written; exit 130/143).\n"
    "--watch reads only a regular file of at most 64 MiB.\n"
    "Exit status: 0 success, 1 the run failed (NaN/Inf found: step, time, field, cell), 2 bad\n"
    "usage, a bad problem file or a refused run, 130/143 stopped by SIGINT/SIGTERM.\n";

static const char *usage_cache =
    "usage: pdejit cache stats|list|clear|explain FILE [--precision single] [--fast-math]\n"
    "The on-disk kernel cache ($PDEJIT_CACHE_DIR, else $XDG_CACHE_HOME/pdejit, else\n"
    "~/.cache/pdejit; size cap $PDEJIT_CACHE_MAX, default 256M):\n"
    "  stats          folder, entries, size against the cap\n"
    "  list           one line per entry, most recently used first\n"
    "  clear          removes every entry\n"
    "  explain FILE   for each kernel of FILE: hit, or miss and which key component differs\n"
    "                 from the nearest stored entry\n";

int cli_wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

static int cmd_check(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { fputs(usage_check, stdout); return 0; }
    const char *file = NULL;
    int single = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--precision") && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "single") && strcmp(v, "double")) {
                fprintf(stderr, "pdejit: --precision is double or single, not '%s'\n", v);
                return 2;
            }
            single = !strcmp(v, "single");
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "pdejit check: unknown option '%s'\n%s", argv[i], usage_check);
            return 2;
        } else if (!file) file = argv[i];
        else { fputs(usage_check, stderr); return 2; }
    }
    if (!file) { fputs(usage_check, stderr); return 2; }
    pj_program *p = cli_load_problem(file, NULL);
    if (!p) return 2;
    char err[512];
    int fits = sim_memory_check(p, single, err, sizeof err) == 0;
    if (!fits) fprintf(stderr, "pdejit: %s: %s\n", file, err);
    program_free(p);
    return fits ? 0 : 2;
}

/* The back end whose code `pdejit emit --FLAG` prints, or NULL. */
static const backend_ops *emitter(const char *flag)
{
    for (int i = 0; engine_backends[i]; i++)
        if (engine_backends[i]->emit_flag && !strcmp(engine_backends[i]->emit_flag, flag)) return engine_backends[i];
    return NULL;
}

static int cmd_emit(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { fputs(usage_emit, stdout); return 0; }
    const char *file = NULL, *what = NULL;
    int single = 0, fast_math = 0;
    pj_compile_options opt = {0};
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--ir") || (!strncmp(argv[i], "--", 2) && emitter(argv[i] + 2))) what = argv[i] + 2;
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc) single = !strcmp(argv[++i], "single");
        else if (!strcmp(argv[i], "--fast-math")) fast_math = 1;
        else if (!strcmp(argv[i], "--scheme") && i + 1 < argc) {
            int s = scheme_from_name(argv[++i]);
            if (s < 0) { fprintf(stderr, "pdejit: unknown scheme '%s'\n", argv[i]); return 2; }
            opt.scheme = (pj_scheme)s;
            opt.scheme_set = 1;
        } else if (argv[i][0] == '-') { fprintf(stderr, "pdejit emit: unknown option '%s'\n%s", argv[i], usage_emit); return 2; }
        else if (!file) file = argv[i];
        else { fputs(usage_emit, stderr); return 2; }
    }
    if (!file || !what) { fputs(usage_emit, stderr); return 2; }
    pj_program *p = cli_load_problem(file, &opt);
    if (!p) return 2;
    if (!strcmp(what, "ir")) {
        const char *const *fn = (const char *const *)p->field_names, *const *pn = (const char *const *)p->param_names;
        printf("# %s: %dD grid %lldx%lldx%lld, %d field%s, %d param%s, scheme %s, halo %d\n", p->filename, p->dim,
               (long long)p->n[0], (long long)p->n[1], (long long)p->n[2], p->n_fields, p->n_fields == 1 ? "" : "s",
               p->n_params, p->n_params == 1 ? "" : "s", scheme_name(p->scheme), p->halo);
        for (int f = 0; f < p->n_fields; f++) printf("# field %s: halo %d\n", fn[f], p->field_halo[f]);
        kir_print(p->params_kernel, stdout, fn, pn);
        kir_print(p->init, stdout, fn, pn);
        for (int s = 0; s < 6; s++)
            if (p->bc_kernel[s]) kir_print(p->bc_kernel[s], stdout, fn, pn);
        printf("# the right-hand side F(U) of every field with an eq; the stages below compose it\n");
        kir_print(p->rhs, stdout, fn, pn);
        for (int s = 0; s < p->n_stages; s++) {
            printf("# stage %d reads slot %d at t + %g dt\n", s + 1, p->stages[s].read_slot, p->stages[s].t_frac);
            kir_print(p->stages[s].kernel, stdout, fn, pn);
        }
        if (p->reduce) {
            printf("# the monitors, in order:");
            for (int i = 0; i < p->n_monitors; i++) printf(" %s", p->monitor_names[i]);
            printf("\n");
            kir_print(p->reduce, stdout, fn, pn);
        }
        if (p->stop) {
            printf("# stop when %s (params, then monitors)\n", p->stop_text);
            kir_print(p->stop, stdout, NULL, NULL);
        }
    } else {
        char err[1024];
        engine_options eo = {.single = single, .fast_math = fast_math};
        if (emitter(what)->emit(p, &eo, stdout, err, sizeof err) < 0) {
            fprintf(stderr, "pdejit: %s\n", err);
            program_free(p);
            return 2;
        }
    }
    program_free(p);
    return 0;
}

int cli_parse_double(const char *opt, const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno || !isfinite(v)) {
        fprintf(stderr, "pdejit: %s: '%s' is not a number\n", opt, text);
        return -1;
    }
    *out = v;
    return 0;
}

static char *default_out_dir(const char *file)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strlen(base);
    if (n > 4 && !strcmp(base + n - 4, ".pde")) n -= 4;
    char *dir = malloc(n + 8);
    snprintf(dir, n + 8, "%.*s.out", (int)n, base);
    return dir;
}

/* ---- signals: SIGINT and SIGTERM stop a run at a step boundary ---------------------------- */

static volatile sig_atomic_t stop_signal; /* the signal that asked the run to stop, 0: none */

static void on_stop_signal(int sig) { stop_signal = sig; }

/* Catches SIGINT and SIGTERM (unless they are ignored, as in a background job: then they stay
 * so) for the run: the first stops it at the next step boundary, a second one ends it at once. */
static void catch_stop_signals(void)
{
    const int sigs[] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART | SA_RESETHAND;
        sigaction(sigs[i], &sa, NULL);
    }
}

/* What the run loop calls between two steps: a stop signal interrupts the simulation (at this
 * boundary); --watch polls its file. */
typedef struct run_hook {
    pj_sim *sim;
    watch *w;
    int verbose;
    int64_t reported;      /* the last step whose iterations --verbose printed */
} run_hook;

static void run_between_steps(void *ctx)
{
    run_hook *h = ctx;
    if (stop_signal) pj_sim_interrupt(h->sim);
    if (h->w) watch_between_steps(h->w);
    pj_solver_stats st;
    if (h->verbose && pj_sim_steps(h->sim) != h->reported && pj_sim_solver_stats(h->sim, &st) == PJ_OK &&
        (h->reported = pj_sim_steps(h->sim)) >= 0)
        fprintf(stderr, "pdejit: step %lld, t = %.9g: %d Newton, %d linear iterations, residual %.3g\n",
                (long long)pj_sim_steps(h->sim), pj_sim_time(h->sim), st.last_newton, st.last_linear, st.last_residual);
}

static int is_const(const pj_problem *pr, const char *name)
{
    for (int i = 0; i < pj_problem_const_count(pr); i++)
        if (!strcmp(pj_problem_const_name(pr, i), name)) return 1;
    return 0;
}

static int is_param(const pj_problem *pr, const char *name)
{
    for (int i = 0; i < pj_problem_param_count(pr); i++)
        if (!strcmp(pj_problem_param_name(pr, i), name)) return 1;
    return 0;
}

/* --set on consts: the problem compiled again with their values (the mesh, the kernels), and a
 * line saying what that changed. Names that are neither params nor consts are refused here. */
static int set_consts(pj_problem **pr, const char *file, const char *scheme, const char *const *sets, int n_sets,
                      int watching, int quiet)
{
    const char *names[256];
    double values[256];
    char buf[256][128];
    int n = 0;
    for (int i = 0; i < n_sets; i++) {
        const char *eq = strchr(sets[i], '=');
        if (!eq || eq == sets[i]) { fprintf(stderr, "pdejit: --set takes NAME=VALUE, not '%s'\n", sets[i]); return -1; }
        snprintf(buf[n], sizeof buf[n], "%.*s", (int)(eq - sets[i]), sets[i]);
        if (is_param(*pr, buf[n])) continue;
        if (!is_const(*pr, buf[n])) {
            const char *cand[512];
            int nc = 0;
            for (int k = 0; k < pj_problem_param_count(*pr) && nc < 256; k++) cand[nc++] = pj_problem_param_name(*pr, k);
            for (int k = 0; k < pj_problem_const_count(*pr) && nc < 512; k++) cand[nc++] = pj_problem_const_name(*pr, k);
            const char *near = diag_closest(buf[n], cand, nc);
            fprintf(stderr, "pdejit: --set: '%s' is not a param of %s%s%s%s\n", buf[n], file, near ? " (did you mean '" : "",
                    near ? near : "", near ? "'?)" : "");
            return -1;
        }
        if (cli_parse_double("--set", eq + 1, &values[n]) < 0) return -1;
        names[n] = buf[n];
        n++;
    }
    if (!n) return 0;
    if (watching) {
        fprintf(stderr, "pdejit run: --watch cannot keep --set on a const (%s) yet: edit the file instead\n", names[0]);
        return -1;
    }
    size_t len;
    char *text = read_file_or_say(file, &len);
    if (!text) return -1;
    pj_problem *next = NULL;
    char *diagnostics = NULL;
    pj_status st = pj_problem_compile_consts(file, text, len, scheme, n, names, values, &next, &diagnostics);
    free(text);
    if (diagnostics) fputs(diagnostics, stderr);
    free(diagnostics);
    if (st != PJ_OK) return -1;
    int total = 0, changed = pj_problem_kernels_changed(*pr, next, &total);
    if (!quiet) {
        char list[1024] = "";
        for (int i = 0; i < n; i++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s = %.17g", i ? ", " : "", names[i], values[i]);
        }
        char mesh[160] = "";
        if (pj_problem_cells(next) != pj_problem_cells(*pr))
            snprintf(mesh, sizeof mesh, "; the mesh has %lld cells (the file's: %lld)", (long long)pj_problem_cells(next),
                     (long long)pj_problem_cells(*pr));
        if (changed > 0)
            fprintf(stderr, "pdejit: const %s (--set): %d of %d kernels differ from the file's and are compiled%s\n", list,
                    changed, total, mesh);
        else
            fprintf(stderr, "pdejit: const %s (--set): no kernel differs from the file's, none is compiled for it%s\n",
                    list, mesh);
    }
    pj_problem_free(*pr);
    *pr = next;
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { fputs(usage_run, stdout); return 0; }
    const char *file = NULL, *backend = "cpu", *out = NULL, *dump = NULL;
    const char *sets[256];
    int n_sets = 0, threads = 0, single = 0, fast_math = 0, verbose = 0, quiet = 0, watching = 0;
    uint64_t seed = 0;
    double dt = 0, until = -1, steps_d = -1, check_every = 1, checkpoint_every = 0;
    const char *resume = NULL, *init_csv = NULL;
    const char *scheme = NULL, *solver_options = NULL;
    int no_stability_check = 0;
    const char *ranks_layout = NULL;
    /* over MPI (mpirun -np N): rank 0 alone speaks; every failure is agreed by all processes, so
       its message reaches rank 0 */
    const int processes = decomp_launched_size();
    if (processes > 1 && decomp_launched_rank() != 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) return 2;
    }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE() do { if (!v) { fprintf(stderr, "pdejit run: %s needs a value\n%s", a, usage_run); return 2; } i++; } while (0)
        if (!strcmp(a, "--backend")) { NEED_VALUE(); backend = v; }
        else if (!strcmp(a, "--solver-options")) { NEED_VALUE(); solver_options = v; }
        else if (!strcmp(a, "--no-stability-check")) no_stability_check = 1;
        else if (!strcmp(a, "--set")) {
            NEED_VALUE();
            if (n_sets == 256) { fprintf(stderr, "pdejit run: too many --set\n"); return 2; }
            sets[n_sets++] = v;
        }
        else if (!strcmp(a, "--dt")) { NEED_VALUE(); if (cli_parse_double(a, v, &dt) < 0) return 2; if (!(dt > 0)) { fprintf(stderr, "pdejit: --dt must be positive\n"); return 2; } }
        else if (!strcmp(a, "--until")) { NEED_VALUE(); if (cli_parse_double(a, v, &until) < 0) return 2; if (!(until >= 0)) { fprintf(stderr, "pdejit: --until must be >= 0\n"); return 2; } }
        else if (!strcmp(a, "--steps")) { NEED_VALUE(); if (cli_parse_double(a, v, &steps_d) < 0) return 2; if (!(steps_d >= 0 && steps_d == floor(steps_d) && steps_d < 9e15)) { fprintf(stderr, "pdejit: --steps must be a whole number from 0 to 9e15\n"); return 2; } }
        else if (!strcmp(a, "--scheme")) {
            NEED_VALUE();
            if (scheme_from_name(v) < 0 || !strcmp(v, "steady")) { fprintf(stderr, "pdejit: unknown scheme '%s'; schemes are euler, rk2, rk3, rk4, beuler, cn, bdf2\n", v); return 2; }
            scheme = v;
        }
        else if (!strcmp(a, "--out")) { NEED_VALUE(); out = v; }
        else if (!strcmp(a, "--dump")) { NEED_VALUE(); dump = v; }
        else if (!strcmp(a, "--threads")) {
            NEED_VALUE();
            double t;
            if (cli_parse_double(a, v, &t) < 0) return 2;
            if (!(t >= 1 && t <= 1024 && t == floor(t))) { fprintf(stderr, "pdejit: --threads must be 1 to 1024\n"); return 2; }
            threads = (int)t;
        }
        else if (!strcmp(a, "--seed")) {
            NEED_VALUE();
            char *end;
            errno = 0;
            int hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X'); /* decimal, or 0x hexadecimal (never octal) */
            unsigned long long sv = strtoull(v, &end, hex ? 16 : 10);
            if (!*v || *end || errno || v[0] == '-' || v[0] == ' ') {
                fprintf(stderr, "pdejit: --seed takes a whole number from 0 to 18446744073709551615, not '%s'\n", v);
                return 2;
            }
            seed = (uint64_t)sv;
        }
        else if (!strcmp(a, "--precision")) {
            NEED_VALUE();
            if (!strcmp(v, "single")) single = 1;
            else if (!strcmp(v, "double")) single = 0;
            else { fprintf(stderr, "pdejit: --precision is double or single, not '%s'\n", v); return 2; }
        }
        else if (!strcmp(a, "--check-every")) { NEED_VALUE(); if (cli_parse_double(a, v, &check_every) < 0 || !(check_every >= 1)) { fprintf(stderr, "pdejit: --check-every must be >= 1\n"); return 2; } }
        else if (!strcmp(a, "--checkpoint-every")) { NEED_VALUE(); if (cli_parse_double(a, v, &checkpoint_every) < 0 || !(checkpoint_every > 0) || !isfinite(checkpoint_every)) { fprintf(stderr, "pdejit: --checkpoint-every must be a positive time\n"); return 2; } }
        else if (!strcmp(a, "--resume")) { NEED_VALUE(); resume = v; }
        else if (!strcmp(a, "--init")) { NEED_VALUE(); init_csv = v; }
        else if (!strcmp(a, "--fast-math")) fast_math = 1;
        else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) verbose = 1;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) quiet = 1;
        else if (!strcmp(a, "--watch")) watching = 1;
        else if (!strcmp(a, "--ranks-layout")) { NEED_VALUE(); ranks_layout = v; }
        else if (a[0] == '-' && a[1]) { fprintf(stderr, "pdejit run: unknown option '%s'\n%s", a, usage_run); return 2; }
        else if (!file) file = a;
        else { fprintf(stderr, "pdejit run: more than one FILE ('%s', '%s')\n", file, a); return 2; }
#undef NEED_VALUE
    }
    if (!file) { fputs(usage_run, stderr); return 2; }
    if (resume && init_csv) { fprintf(stderr, "pdejit run: --resume and --init both set the fields: give one\n"); return 2; }
    pj_backend be;
    if (pj_backend_by_name(backend, &be) < 0) {
        fprintf(stderr, "pdejit: unknown back end '%s'; back ends are %s\n", backend, pj_backend_names());
        return 2;
    }
    watch_baseline base = watch_baseline_of(file); /* before reading: edits from now on count */
    pj_problem *pr = cli_compile(file, scheme);
    if (!pr) return 2;
    if (n_sets && set_consts(&pr, file, scheme, sets, n_sets, watching, quiet) < 0) {
        pj_problem_free(pr);
        return 2;
    }
    int status = 2;
    pj_sim *sim = NULL;
    watch *w = NULL;
    char *out_owned = NULL;
    char err[1024];
    if (dt <= 0) dt = pj_problem_dt(pr);
    if (dt <= 0) {
        fprintf(stderr, "pdejit: %s: no time step: add `time dt = ...` to the file or give --dt\n", file);
        goto done;
    }
    if (steps_d < 0 && until < 0 && pj_problem_steps(pr) < 0 && pj_problem_until(pr) < 0) {
        fprintf(stderr, "pdejit: %s: how far to run? add `until = ` or `steps = ` to the time statement, or give --until/--steps\n", file);
        goto done;
    }
    if (processes > 1 && !threads) { /* the machine's cores shared by the processes on it */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = (int)(cores / decomp_launched_local_size());
        if (threads < 1) threads = 1;
    }
    pj_sim_options so = {.backend = be, .single = single, .threads = threads, .fast_math = fast_math,
                         .solver_options = solver_options, .seed = seed,
                         .decompose = processes > 1 || ranks_layout, .ranks_layout = ranks_layout};
    pj_status st = pj_sim_create(pr, &so, &sim, err, sizeof err);
    if (st != PJ_OK) {
        if (st == PJ_ERR_UNAVAILABLE) fprintf(stderr, "pdejit: %s\n", err);
        else if (st == PJ_ERR_INPUT) fprintf(stderr, "pdejit: %s: %s\n", file, err);
        else if (st == PJ_ERR_MEMORY) fprintf(stderr, "pdejit: %s: %s\n", file, err);
        else fprintf(stderr, "pdejit: %s back end: %s\n", backend, err);
        status = st == PJ_ERR_UNAVAILABLE || st == PJ_ERR_MEMORY || st == PJ_ERR_INPUT ? 2 : 1;
        goto done;
    }
    if (watching && !pj_sim_can_swap(sim)) {
        fprintf(stderr, "pdejit run: --watch cannot swap kernels on the %s back end yet\n", backend);
        goto done;
    }
    pj_sim_info info;
    pj_sim_get_info(sim, &info);
    if (info.warning) fprintf(stderr, "pdejit: warning: %s\n", info.warning);
    char cache_warned[1024];
    snprintf(cache_warned, sizeof cache_warned, "%s", info.warning ? info.warning : "");
    const char *kname;
    int kcached;
    double kms;
    if (verbose && pj_sim_kernel(sim, 0, NULL, NULL, NULL) == 0)
        for (int i = 0; pj_sim_kernel(sim, i, &kname, &kcached, &kms) == 0; i++)
            fprintf(stderr, "pdejit: kernel %s: %s in %.2f ms\n", kname, kcached ? "loaded from the cache" : "compiled", kms);
    else if (verbose && info.kernels)
        fprintf(stderr, "pdejit: %s: %d kernels, %d loaded from the cache, %d compiled (NVRTC %.2f ms), %.2f ms in all\n",
                info.device ? info.device : backend, info.kernels, info.from_cache, info.kernels - info.from_cache,
                info.ms_compiler, info.ms_prepare);
    for (int i = 0; i < n_sets; i++) {
        const char *eq = strchr(sets[i], '=');
        double v;
        if (!eq || eq == sets[i]) { fprintf(stderr, "pdejit: --set takes NAME=VALUE, not '%s'\n", sets[i]); goto done; }
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(eq - sets[i]), sets[i]);
        if (cli_parse_double("--set", eq + 1, &v) < 0) goto done;
        if (is_const(pr, name)) continue; /* compiled in (set_consts) */
        if (pj_sim_set_param(sim, name, v) != PJ_OK) {
            const char *names[256];
            int n = pj_problem_param_count(pr) < 256 ? pj_problem_param_count(pr) : 256;
            for (int k = 0; k < n; k++) names[k] = pj_problem_param_name(pr, k);
            const char *near = diag_closest(name, names, n);
            fprintf(stderr, "pdejit: --set: '%s' is not a param of %s%s%s%s\n", name, file, near ? " (did you mean '" : "",
                    near ? near : "", near ? "'?)" : "");
            goto done;
        }
    }
    if (init_csv && pj_sim_init_from_csv(sim, init_csv, err, sizeof err) != PJ_OK) {
        fprintf(stderr, "pdejit: %s\n", err);
        goto done;
    }
    if (resume) {
        if (pj_sim_resume(sim, resume, err, sizeof err) != PJ_OK) {
            fprintf(stderr, "pdejit: %s\n", err);
            goto done;
        }
        if (!quiet)
            fprintf(stderr, "pdejit: resuming from %s at t = %.9g, step %lld\n", resume, pj_sim_time(sim),
                    (long long)pj_sim_steps(sim));
    }
    if (!out) {
        /* the file asked for output or monitors, or checkpoints: write them next to where we run */
        if (pj_problem_has_output(pr) || pj_problem_has_monitor(pr) || checkpoint_every > 0)
            out = out_owned = default_out_dir(file);
    } else if (!strcmp(out, "none")) {
        out = NULL;
    }
    pj_run_options ro = pj_run_options_default();
    ro.dt = dt;
    ro.until = until;
    ro.steps = steps_d >= 0 ? (int64_t)steps_d : -1;
    ro.out_dir = out;
    ro.dump_path = dump;
    ro.check_every = (int)check_every;
    ro.checkpoint_every = checkpoint_every;
    ro.progress = quiet ? NULL : stderr;
    ro.no_stability_check = no_stability_check;
    ro.monitors = verbose ? stderr : NULL;
    if (watching) {
        w = watch_create(file, &base, sim, scheme);
        if (!w) {
            fprintf(stderr, "pdejit: --watch: out of memory\n");
            status = 1;
            goto done;
        }
        fprintf(stderr, "pdejit: watching %s: edits are swapped in while the run goes on\n", file);
    }
    run_hook hook = {sim, w, verbose, 0};
    ro.between_steps = run_between_steps;
    ro.between_ctx = &hook;
    catch_stop_signals();
    if (stop_signal) pj_sim_interrupt(sim);
    pj_run_result res;
    st = pj_sim_run(sim, &ro, &res, err, sizeof err);
    /* the cache's warning when it changed while running (a swap's kernels could not be stored) */
    pj_sim_get_info(sim, &info);
    if (info.warning && strncmp(info.warning, cache_warned, sizeof cache_warned - 1))
        fprintf(stderr, "pdejit: warning: %s\n", info.warning);
    status = st == PJ_OK ? 0 : st == PJ_ERR_INPUT ? 2 : st == PJ_INTERRUPTED ? 128 + (stop_signal ? stop_signal : SIGINT) : 1;
    if (st == PJ_INTERRUPTED)
        fprintf(stderr, "pdejit: %s: %s%s\n", stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", err,
                dump ? "; the final state was not dumped" : "");
    else if (st == PJ_ERR_INPUT) fprintf(stderr, "pdejit: %s: %s\n", file, err);
    else if (status) fprintf(stderr, "pdejit: run failed: %s\n", err);
    else if (res.stopped[0] && !quiet) fprintf(stderr, "pdejit: stopped: %s\n", res.stopped);
    double cells = (double)pj_problem_cells(pr);
    pj_solver_stats sst;
    if (verbose && pj_sim_solver_stats(sim, &sst) == PJ_OK)
        fprintf(stderr, "pdejit: implicit solver: %lld steps (%lld rejected), %lld Newton and %lld linear iterations, "
                "%lld Jacobians (%.3g s)\n", (long long)sst.steps, (long long)sst.rejected, (long long)sst.newton,
                (long long)sst.linear, (long long)sst.jacobians, sst.seconds_jacobian);
    if (verbose || (!quiet && res.seconds > 3))
        fprintf(stderr, "pdejit: %lld steps to t = %.9g in %.3g s: %.1f Mcells/s (%s%s)%s%s\n", (long long)res.steps, res.t,
                res.seconds, res.seconds > 0 ? (double)res.steps * cells * 1e-6 / res.seconds : 0.0, backend,
                single ? ", single" : "", out ? ", output in " : "", out ? out : "");
    if (verbose && sim && pj_sim_processes(sim) > 1) {
        int64_t exchanges;
        double xs, xb;
        pj_sim_exchange_stats(sim, &exchanges, &xs, &xb);
        fprintf(stderr, "pdejit: %d processes; rank 0's ghost exchanges: %lld in %.3g s (%.1f%% of the stepping), "
                "%.3g kB received each\n", pj_sim_processes(sim), (long long)exchanges, xs,
                res.seconds > 0 ? 100 * xs / res.seconds : 0.0, exchanges ? xb / (double)exchanges / 1e3 : 0.0);
    }
done:
    watch_stop(w); /* its thread may be handing the simulation a new problem */
    pj_sim_free(sim);
    watch_free(w); /* after the simulation that ran its problems */
    pj_problem_free(pr);
    free(out_owned);
    return status;
}

static int cmd_cache(int argc, char **argv)
{
    if (cli_wants_help(argc, argv) || argc < 1) { fputs(usage_cache, argc < 1 ? stderr : stdout); return argc < 1 ? 2 : 0; }
    const char *what = argv[0];
    if (!strcmp(what, "explain")) {
        const char *file = NULL;
        engine_options eo = {0};
        for (int i = 1; i < argc; i++) {
            if (!strcmp(argv[i], "--fast-math")) eo.fast_math = 1;
            else if (!strcmp(argv[i], "--precision") && i + 1 < argc) eo.single = !strcmp(argv[++i], "single");
            else if (!file && argv[i][0] != '-') file = argv[i];
            else { fputs(usage_cache, stderr); return 2; }
        }
        if (!file) { fputs(usage_cache, stderr); return 2; }
        pj_program *p = cli_load_problem(file, NULL);
        if (!p) return 2;
        char err[512] = "";
        const backend_ops *cpu = engine_backend("cpu");
        int r = cpu->explain(p, &eo, stdout, err, sizeof err);
        if (r < 0) { fprintf(stderr, "pdejit: %s\n", err); program_free(p); return 1; }
        if (r > 0) fprintf(stderr, "pdejit: warning: %s\n", err);
        program_free(p);
        return 0;
    }
    if (argc != 1) { fputs(usage_cache, stderr); return 2; }
    cache *c = cache_open(NULL, 0);
    if (!c) { fprintf(stderr, "pdejit: out of memory\n"); return 1; }
    if (cache_warning(c)) fprintf(stderr, "pdejit: warning: %s\n", cache_warning(c));
    char *warned = cache_warning(c) ? strdup(cache_warning(c)) : NULL;
    int r;
    if (!strcmp(what, "stats")) r = cache_stats(c, stdout);
    else if (!strcmp(what, "list")) r = cache_list(c, stdout);
    else if (!strcmp(what, "clear")) {
        r = cache_clear(c);
        if (r >= 0) printf("removed %d entr%s from %s\n", r, r == 1 ? "y" : "ies", cache_dir(c));
        else if (cache_on_disk(c)) fprintf(stderr, "pdejit cache clear: some of %s was not removed\n", cache_dir(c));
    } else {
        fprintf(stderr, "pdejit cache: unknown subcommand '%s'\n%s", what, usage_cache);
        free(warned);
        cache_close(c);
        return 2;
    }
    /* a warning that appeared on the way (a file or folder refused) */
    const char *w = cache_warning(c);
    if (w && (!warned || strcmp(w, warned))) fprintf(stderr, "pdejit: warning: %s\n", w);
    free(warned);
    cache_close(c);
    return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fputs(usage_main, stderr); return 2; }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) { fputs(usage_main, stdout); return 0; }
    if (!strcmp(cmd, "check")) return cmd_check(argc - 2, argv + 2);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "cache")) return cmd_cache(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "emit")) return cmd_emit(argc - 2, argv + 2);
    fprintf(stderr, "pdejit: unknown command '%s'\n%s", cmd, usage_main);
    return 2;
}
