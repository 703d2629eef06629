/* run.c — `pdejit run FILE`: a problem run to its end through the public API (pj_sim_run), with
 * --set, restarts, hot swap (--watch) and SIGINT/SIGTERM at a step boundary.
 *
 *     cmd_run: the options (run_opts, one table) -> compile (and --set on consts) -> start_sim
 *              (the back end, its kernels) -> set_params -> start_state (--init, --resume)
 *              -> pj_sim_run -> report_run */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "decomp.h"
#include "driver.h"
#include "engine.h"
#include "options.h"
#include "watch.h"

enum { MAX_SETS = 256 };

typedef struct run_sets {
    const char *text[MAX_SETS]; /* NAME=VALUE, as given */
    int n;
} run_sets;

/* What the options set; run_args_default() before them. */
typedef struct run_args {
    const char *file, *backend, *out, *dump, *resume, *init_csv, *scheme, *solver_options, *ranks_layout;
    run_sets sets;
    int threads, single, fast_math, verbose, quiet, watching, no_stability_check, strict_options;
    uint64_t seed;
    double dt, until, steps, check_every, checkpoint_every; /* until, steps: -1 when not given */
} run_args;

/* ---- the options' setters: the messages of a refused value -------------------------------- */

static int set_dt(const cli_opt *o, const char *v, void *m)
{
    double *dt = m;
    if (cli_parse_double(o->name, v, dt) < 0) return -1;
    if (!(*dt > 0)) { fprintf(stderr, "pdejit: --dt must be positive\n"); return -1; }
    return 0;
}

static int set_until(const cli_opt *o, const char *v, void *m)
{
    double *until = m;
    if (cli_parse_double(o->name, v, until) < 0) return -1;
    if (!(*until >= 0)) { fprintf(stderr, "pdejit: --until must be >= 0\n"); return -1; }
    return 0;
}

static int set_steps(const cli_opt *o, const char *v, void *m)
{
    double *steps = m;
    if (cli_parse_double(o->name, v, steps) < 0) return -1;
    if (!(*steps >= 0 && *steps == floor(*steps) && *steps < 9e15)) {
        fprintf(stderr, "pdejit: --steps must be a whole number from 0 to 9e15\n");
        return -1;
    }
    return 0;
}

static int set_threads(const cli_opt *o, const char *v, void *m)
{
    double t;
    if (cli_parse_double(o->name, v, &t) < 0) return -1;
    if (!(t >= 1 && t <= 1024 && t == floor(t))) {
        fprintf(stderr, "pdejit: --threads must be 1 to 1024\n");
        return -1;
    }
    *(int *)m = (int)t;
    return 0;
}

static int set_seed(const cli_opt *o, const char *v, void *m)
{
    (void)o;
    char *end;
    errno = 0;
    int hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X'); /* decimal, or 0x hexadecimal (never octal) */
    unsigned long long sv = strtoull(v, &end, hex ? 16 : 10);
    if (!*v || *end || errno || v[0] == '-' || v[0] == ' ') {
        fprintf(stderr, "pdejit: --seed takes a whole number from 0 to 18446744073709551615, not '%s'\n", v);
        return -1;
    }
    *(uint64_t *)m = (uint64_t)sv;
    return 0;
}

static int set_check_every(const cli_opt *o, const char *v, void *m)
{
    double *every = m;
    if (cli_parse_double(o->name, v, every) < 0 || !(*every >= 1)) {
        fprintf(stderr, "pdejit: --check-every must be >= 1\n");
        return -1;
    }
    return 0;
}

static int set_checkpoint_every(const cli_opt *o, const char *v, void *m)
{
    double *every = m;
    if (cli_parse_double(o->name, v, every) < 0 || !(*every > 0) || !isfinite(*every)) {
        fprintf(stderr, "pdejit: --checkpoint-every must be a positive time\n");
        return -1;
    }
    return 0;
}

/* --solver-options as PETSc's options are written: `-NAME [VALUE] -NAME [VALUE] ...`, a NAME of
 * letters, digits and underscores, a VALUE a word that does not start with '-' and a letter (a
 * negative number does) or a "double-quoted" text. PETSc's own reader takes anything: a word
 * without its option ("ksp_type cg"), an unclosed quote, silently dropped. 0, or -1 with why. */
static int check_solver_options(const char *s, char *why, size_t len)
{
    int after_name = 0; /* the last word was an option's name: a value may follow */
    const char *name = NULL;
    size_t name_len = 0;
    for (const char *c = s; *c;) {
        if (*c == ' ' || *c == '\t' || *c == '\n') {
            c++;
            continue;
        }
        if ((unsigned char)*c < 0x20 || *c == 0x7f) {
            snprintf(why, len, "a control character (0x%02x) in the options", (unsigned)(unsigned char)*c);
            return -1;
        }
        const char *w = c;
        if (*c == '"') { /* a quoted value */
            const char *q = strchr(c + 1, '"');
            if (!q) {
                snprintf(why, len, "the quote opened at '%.20s' is not closed", c);
                return -1;
            }
            c = q + 1;
        } else {
            while (*c && *c != ' ' && *c != '\t' && *c != '\n') c++;
        }
        size_t n = (size_t)(c - w);
        int is_name = w[0] == '-' && n > 1 && !((w[1] >= '0' && w[1] <= '9') || w[1] == '.');
        if (is_name) {
            for (size_t i = 1; i < n; i++)
                if (!((w[i] >= 'a' && w[i] <= 'z') || (w[i] >= 'A' && w[i] <= 'Z') || (w[i] >= '0' && w[i] <= '9') ||
                      w[i] == '_') || (i == 1 && w[i] == '_' && n == 2)) {
                    snprintf(why, len, "'%.*s' is not an option's name (-NAME: letters, digits and underscores)",
                             (int)(n > 60 ? 60 : n), w);
                    return -1;
                }
            after_name = 1;
            name = w;
            name_len = n;
        } else if (after_name) {
            after_name = 0; /* NAME's value */
        } else {
            snprintf(why, len, "'%.*s' is not an option (options start with '-')%s%.*s", (int)(n > 60 ? 60 : n), w,
                     name ? ", and the option before it, " : "", name ? (int)(name_len > 60 ? 60 : name_len) : 0,
                     name ? name : "");
            if (name) snprintf(why + strlen(why), len - strlen(why), ", takes one value");
            return -1;
        }
    }
    return 0;
}

static int set_solver_options(const cli_opt *o, const char *v, void *m)
{
    char why[256];
    if (check_solver_options(v, why, sizeof why) < 0) {
        fprintf(stderr, "pdejit: %s \"%s\": %s\n", o->name, v, why);
        return -1;
    }
    *(const char **)m = v;
    return 0;
}

static int add_set(const cli_opt *o, const char *v, void *m)
{
    (void)o;
    run_sets *sets = m;
    if (sets->n == MAX_SETS) { fprintf(stderr, "pdejit run: too many --set\n"); return -1; }
    sets->text[sets->n++] = v;
    return 0;
}

#define RUN(member) offsetof(run_args, member)
static const cli_opt run_opts[] = {
    {"--backend", NULL, "interp|cpu|cuda", "where the kernels run (default cpu: LLVM JIT, all cores)", pj_backend_names,
     cli_set_text, RUN(backend)},
    {"--set", NULL, "NAME=VALUE", "change a param (repeatable; never recompiles) or a const (the kernels it changes "
     "are compiled again, and the run says so)", NULL, add_set, RUN(sets)},
    {"--dt", NULL, "DT", "time step (overrides the file)", NULL, set_dt, RUN(dt)},
    {"--steps", NULL, "N", "how far to run: N steps (overrides the file)", NULL, set_steps, RUN(steps)},
    {"--until", NULL, "T", "how far to run: to time T (overrides the file)", NULL, set_until, RUN(until)},
    {"--scheme", NULL, "S", "time-stepping scheme (overrides the file): {} (from beuler on implicit, through PETSc)",
     pj_scheme_names, cli_set_scheme, RUN(scheme)},
    {"--solver-options", NULL, "\"...\"", "implicit schemes: options passed to PETSc, after the file's solver "
     "statement (\"-ksp_type cg -pc_type gamg -snes_monitor\"; -NAME [VALUE] ..., checked before the run)", NULL,
     set_solver_options, RUN(solver_options)},
    {"--strict-options", NULL, NULL, "PETSc options (--solver-options, the solver statement) that no solver used "
     "are an error (exit 2) after the run, not a warning", NULL, cli_set_flag, RUN(strict_options)},
    {"--no-stability-check", NULL, NULL, "run an explicit scheme even when dt exceeds its estimated stability limit "
     "(refused with exit 2 otherwise)", NULL, cli_set_flag, RUN(no_stability_check)},
    {"--out", NULL, "DIR", "snapshot folder (default FILE's name + .out when the file has an output statement; "
     "`--out none` writes none)", NULL, cli_set_text, RUN(out)},
    {"--dump", NULL, "FILE.csv", "write the final state: x[,y[,z]],field... one row per cell, 17 significant "
     "digits", NULL, cli_set_text, RUN(dump)},
    {"--threads", NULL, "N", "CPU threads, forced (default: all cores, or one where the first steps measure one "
     "faster; under mpirun, shared by the processes on the machine)", NULL, set_threads, RUN(threads)},
    {"--ranks-layout", NULL, "PxQ[xR]", "under mpirun: processes along x, y, z (default: PETSc chooses)", NULL,
     cli_set_text, RUN(ranks_layout)},
    {"--seed", NULL, "N", "the key of rand() and randn() (0 to 2^64-1, default 0): the same seed gives the same "
     "numbers on every back end and thread count", NULL, set_seed, RUN(seed)},
    {"--precision", NULL, "double|single", "floating point of the kernels (default double)", NULL,
     cli_set_precision, RUN(single)},
    {"--fast-math", NULL, NULL, "let the compiler reassociate and contract (FMA); results then differ from the "
     "interpreter in the last bits", NULL, cli_set_flag, RUN(fast_math)},
    {"--check-every", NULL, "N", "steps between NaN/Inf checks (default 1)", NULL, set_check_every,
     RUN(check_every)},
    {"--checkpoint-every", NULL, "T", "write DIR/checkpoint.pjc (fields, time, step) at the first step at or after "
     "each multiple of T of simulated time, atomically", NULL, set_checkpoint_every, RUN(checkpoint_every)},
    {"--resume", NULL, "CHECKPOINT", "continue the run that wrote CHECKPOINT (same problem, grid, precision, seed): "
     "it ends with the same bits as one never stopped", NULL, cli_set_text, RUN(resume)},
    {"--init", NULL, "FILE.csv", "start from the fields of a --dump of the same grid", NULL, cli_set_text,
     RUN(init_csv)},
    {"--watch", NULL, NULL, "hot swap: when FILE changes, recompile it while the run goes on and swap the new "
     "equations, funcs, fluxes and boundary conditions in at a step boundary, the fields keeping their state (a "
     "file that does not compile is reported; the run goes on)", NULL, cli_set_flag, RUN(watching)},
    {"--verbose", "-v", NULL, "compile/cache times per kernel, Mcells/s; implicit schemes: t, dt, Newton and "
     "linear iterations and the residual per step (per span between output times under adapt), and the "
     "solver's totals", NULL, cli_set_flag, RUN(verbose)},
    {"--quiet", "-q", NULL, "no progress lines", NULL, cli_set_flag, RUN(quiet)},
    CLI_HELP_OPT,
    {0},
};
#undef RUN

static int cmd_run(int argc, char **argv);

const cli_cmd cli_run = {
    .name = "run",
    .operands = "FILE",
    .summary = "run a problem",
    .usage = "FILE [options]",
    .about = "Runs the problem in FILE.\n",
    .opts = run_opts,
    .epilogue =
        "Before the first step the run is refused (exit 2) when its fields do not fit in the memory\n"
        "available, when it would take more than 1e15 steps or stop at more than 1e7 output times,\n"
        "when its end time is not finite, or when the --dump or --out target cannot be written; a\n"
        "reused --out folder is cleaned of the previous series' files (only those names).\n"
        "SIGINT/SIGTERM stop it at a step boundary (no dump written; exit 130/143).\n"
        "--watch reads only a regular file of at most 64 MiB.\n"
        "Exit status: 0 success, 1 the run failed (NaN/Inf found: step, time, field, cell), 2 bad\n"
        "usage, a bad problem file or a refused run, 130/143 stopped by SIGINT/SIGTERM.\n",
    .main = cmd_run,
};

/* ---- the run: defaults, signals, --set on consts ----------------------------------------- */

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

/* A stop signal that came before the run began (while compiling): the exit status 128 + the
 * signal, and a line saying so; 0 when none came. */
static int stopped_before_start(void)
{
    if (!stop_signal) return 0;
    fprintf(stderr, "pdejit: %s: stopped before the first step; nothing was written\n",
            stop_signal == SIGTERM ? "SIGTERM" : "SIGINT");
    return 128 + stop_signal;
}

/* What the run loop calls between two steps: a stop signal interrupts the simulation (at this
 * boundary); --watch polls its file. */
typedef struct run_hook {
    pj_sim *sim;
    watch *w;
    int verbose;
    pj_solver_stats last;  /* the solver's totals at the last line --verbose printed */
} run_hook;

/* --verbose, implicit schemes: a line per accepted step (t, dt, the step's Newton and linear
 * iterations, the true residual norm at its end); under adapt the run loop hands over once per
 * span between output times, and the line then covers the steps of the span and says how many. */
static void report_steps(run_hook *h)
{
    pj_solver_stats st;
    if (pj_sim_solver_stats(h->sim, &st) != PJ_OK || st.steady || st.steps == h->last.steps) return;
    int64_t n = st.steps - h->last.steps, rej = st.rejected - h->last.rejected;
    long long newton = (long long)(st.newton - h->last.newton), linear = (long long)(st.linear - h->last.linear);
    long long last = (long long)pj_sim_steps(h->sim); /* the simulation's count: a resume's goes on */
    if (n == 1 && !rej)
        fprintf(stderr, "pdejit: step %lld, t = %.9g, dt = %.3g: %lld Newton, %lld linear iterations, residual %.3g\n",
                last, pj_sim_time(h->sim), st.last_dt, newton, linear, st.last_residual);
    else
        fprintf(stderr, "pdejit: steps %lld-%lld (%lld accepted, %lld rejected), t = %.9g, last dt = %.3g: %lld Newton, "
                "%lld linear iterations in all, residual %.3g (the last step's)\n", last - (long long)n + 1, last,
                (long long)n, (long long)rej, pj_sim_time(h->sim), st.last_dt, newton, linear, st.last_residual);
    h->last = st;
}

static void run_between_steps(void *ctx)
{
    run_hook *h = ctx;
    if (stop_signal) pj_sim_interrupt(h->sim);
    if (h->w) watch_between_steps(h->w);
    if (h->verbose) report_steps(h);
}

/* --verbose with an adaptive rk23/rk45: a line per step the controller tried */
static void adaptive_try(void *ctx, int64_t step, double t, double dt, double error, int accepted)
{
    (void)ctx;
    if (accepted)
        fprintf(stderr, "pdejit: step %lld, t = %.9g: dt %.3g, error norm %.3g\n", (long long)step + 1, t + dt, dt,
                error);
    else
        fprintf(stderr, "pdejit: step %lld from t = %.9g rejected: dt %.3g, error norm %.3g > 1\n", (long long)step + 1,
                t, dt, error);
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
        if (!eq || eq == sets[i]) {
            fprintf(stderr, "pdejit: --set takes NAME=VALUE, not '%s'\n", sets[i]);
            return -1;
        }
        snprintf(buf[n], sizeof buf[n], "%.*s", (int)(eq - sets[i]), sets[i]);
        if (is_param(*pr, buf[n])) continue;
        if (!is_const(*pr, buf[n])) {
            const char *cand[512];
            int nc = 0;
            for (int k = 0; k < pj_problem_param_count(*pr) && nc < 256; k++)
                cand[nc++] = pj_problem_param_name(*pr, k);
            for (int k = 0; k < pj_problem_const_count(*pr) && nc < 512; k++)
                cand[nc++] = pj_problem_const_name(*pr, k);
            const char *near = diag_closest(buf[n], cand, nc);
            fprintf(stderr, "pdejit: --set: '%s' is not a param of %s%s%s%s\n", buf[n], file,
                    near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
            return -1;
        }
        if (cli_parse_double("--set", eq + 1, &values[n]) < 0) return -1;
        names[n] = buf[n];
        n++;
    }
    if (!n) return 0;
    if (watching) {
        fprintf(stderr, "pdejit run: --watch cannot keep --set on a const (%s) yet: edit the file instead\n",
                names[0]);
        return -1;
    }
    size_t len;
    char *text = cli_read_file(file, &len);
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
            snprintf(mesh, sizeof mesh, "; the mesh has %lld cells (the file's: %lld)",
                     (long long)pj_problem_cells(next), (long long)pj_problem_cells(*pr));
        if (changed > 0)
            fprintf(stderr, "pdejit: const %s (--set): %d of %d kernels differ from the file's and are compiled%s\n",
                    list, changed, total, mesh);
        else
            fprintf(stderr, "pdejit: const %s (--set): no kernel differs from the file's, none is compiled for it%s\n",
                    list, mesh);
    }
    pj_problem_free(*pr);
    *pr = next;
    return 0;
}

/* What cmd_run's parts share. */
typedef struct run_ctx {
    run_args a;
    pj_backend be;
    int processes;          /* under mpirun: how many; else 1 */
    pj_problem *pr;
    pj_sim *sim;
    watch *w;
    const char *out;        /* the output folder, or NULL */
    char *out_owned;
    char cache_warned[1024]; /* the cache's warning when the run started */
    int64_t steps0;         /* the simulation's steps when the run began (a resume's, else 0), and the
                               solver's counts then: the report counts this run's */
    int64_t solver_steps0, rejected0, newton0, linear0, jacobians0;
    double seconds_jacobian0;
    char err[1024];
} run_ctx;

/* The most monitors the cpu back end is given: it compiles them into one reduction kernel, as
 * functions of LLVM_REDUCE_GROUP monitors each, in time linear in their number (about 3 s of CPU
 * a thousand: 10 000 in 29 s of CPU, a minute on a loaded 2-core machine; 100 000 would take
 * about 5 minutes with no word); the interpreter takes them in linear time (100 000 in about a second). */
#define CPU_MAX_MONITORS 10000

/* 0, or 2 with a message when the problem has more monitors than its back end takes. */
static int monitors_within_limit(const run_ctx *c)
{
    int n = pj_problem_monitor_count(c->pr);
    if (c->be != PJ_BACKEND_CPU || n <= CPU_MAX_MONITORS) return 0;
    fprintf(stderr, "pdejit: %s: %d monitors, more than the %d the cpu back end compiles (about 3 s a thousand); "
            "take fewer, or run them with --backend interp\n", c->a.file, n, CPU_MAX_MONITORS);
    return 2;
}

static int parse_run_args(int argc, char **argv, run_args *a)
{
    *a = (run_args){.backend = "cpu", .until = -1, .steps = -1, .check_every = 1};
    if (cli_parse(&cli_run, argc, argv, a, &a->file, 1) < 0) return 2;
    if (!a->file) {
        cli_help(&cli_run, stderr);
        return 2;
    }
    if (a->resume && a->init_csv) {
        fprintf(stderr, "pdejit run: --resume and --init both set the fields: give one\n");
        return 2;
    }
    return 0;
}

/* The simulation on its back end, its kernels ready (listed with --verbose). 0, or the exit status. */
static int start_sim(run_ctx *c)
{
    run_args *a = &c->a;
    if (a->dt <= 0) a->dt = pj_problem_dt(c->pr);
    if (a->dt <= 0) {
        fprintf(stderr, "pdejit: %s: no time step: add `time dt = ...` to the file or give --dt\n", a->file);
        return 2;
    }
    if (a->steps < 0 && a->until < 0 && pj_problem_steps(c->pr) < 0 && pj_problem_until(c->pr) < 0) {
        fprintf(stderr, "pdejit: %s: how far to run? add `until = ` or `steps = ` to the time statement, or give "
                "--until/--steps\n", a->file);
        return 2;
    }
    if (c->processes > 1 && !a->threads) { /* the machine's cores shared by the processes on it */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        a->threads = (int)(cores / decomp_launched_local_size());
        if (a->threads < 1) a->threads = 1;
    }
    pj_sim_options so = {.backend = c->be, .single = a->single, .threads = a->threads, .fast_math = a->fast_math,
                         .solver_options = a->solver_options, .seed = a->seed,
                         .decompose = c->processes > 1 || a->ranks_layout, .ranks_layout = a->ranks_layout};
    pj_status st = pj_sim_create(c->pr, &so, &c->sim, c->err, sizeof c->err);
    if (st != PJ_OK) {
        /* PETSc refused the options (the solver statement's or --solver-options': implicit.c's
           messages name --solver-options): the user's input, as the docs say (exit 2) */
        if (st == PJ_ERR_BACKEND && strstr(c->err, "--solver-options")) st = PJ_ERR_INPUT;
        if (st == PJ_ERR_UNAVAILABLE || st == PJ_ERR_UNSUPPORTED) fprintf(stderr, "pdejit: %s\n", c->err);
        else if (st == PJ_ERR_INPUT || st == PJ_ERR_MEMORY) fprintf(stderr, "pdejit: %s: %s\n", a->file, c->err);
        else fprintf(stderr, "pdejit: %s back end: %s\n", a->backend, c->err);
        /* refused (exit 2): no device, a capability the back end lacks, no memory, a bad input */
        return st == PJ_ERR_UNAVAILABLE || st == PJ_ERR_UNSUPPORTED || st == PJ_ERR_MEMORY || st == PJ_ERR_INPUT
                   ? 2
                   : 1;
    }
    pj_sim_info info;
    pj_sim_get_info(c->sim, &info);
    if (info.warning) fprintf(stderr, "pdejit: warning: %s\n", info.warning);
    pj_solver_stats sst;
    if (pj_sim_solver_stats(c->sim, &sst) == PJ_OK) {
        if (sst.note[0]) fprintf(stderr, "pdejit: note: %s: %s\n", a->file, sst.note);
    } else if (a->solver_options) { /* an explicit scheme: no solver */
        fprintf(stderr, "pdejit: warning: %s: --solver-options are not used: the scheme is explicit (no PETSc solver)\n",
                a->file);
    }
    snprintf(c->cache_warned, sizeof c->cache_warned, "%s", info.warning ? info.warning : "");
    const char *kname;
    int kcached;
    double kms;
    if (a->verbose && pj_sim_kernel(c->sim, 0, NULL, NULL, NULL) == 0) {
        for (int i = 0; pj_sim_kernel(c->sim, i, &kname, &kcached, &kms) == 0; i++)
            fprintf(stderr, "pdejit: kernel %s: %s in %.2f ms\n", kname,
                    kcached ? "loaded from the cache" : "compiled", kms);
        cli_print_compile_times(c->sim);
    } else if (a->verbose && info.kernels)
        fprintf(stderr,
                "pdejit: %s: %d kernels, %d loaded from the cache, %d compiled (NVRTC %.2f ms), %.2f ms in all\n",
                info.device ? info.device : a->backend, info.kernels, info.from_cache, info.kernels - info.from_cache,
                info.ms_compiler, info.ms_prepare);
    return 0;
}

/* --set on params (those on consts were compiled in by set_consts). 0, or the exit status. */
static int set_params(run_ctx *c)
{
    for (int i = 0; i < c->a.sets.n; i++) {
        const char *set = c->a.sets.text[i], *eq = strchr(set, '=');
        double v;
        if (!eq || eq == set) { fprintf(stderr, "pdejit: --set takes NAME=VALUE, not '%s'\n", set); return 2; }
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(eq - set), set);
        if (cli_parse_double("--set", eq + 1, &v) < 0) return 2;
        if (is_const(c->pr, name)) continue; /* compiled in (set_consts) */
        if (pj_sim_set_param(c->sim, name, v) != PJ_OK) {
            const char *names[256];
            int n = pj_problem_param_count(c->pr) < 256 ? pj_problem_param_count(c->pr) : 256;
            for (int k = 0; k < n; k++) names[k] = pj_problem_param_name(c->pr, k);
            const char *near = diag_closest(name, names, n);
            fprintf(stderr, "pdejit: --set: '%s' is not a param of %s%s%s%s\n", name, c->a.file,
                    near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
            return 2;
        }
    }
    return 0;
}

/* The fields from --init or --resume, else the file's initial values. 0, or the exit status. */
static int start_state(run_ctx *c)
{
    if (c->a.init_csv && pj_sim_init_from_csv(c->sim, c->a.init_csv, c->err, sizeof c->err) != PJ_OK) {
        fprintf(stderr, "pdejit: %s\n", c->err);
        return 2;
    }
    if (c->a.resume) {
        if (pj_sim_resume(c->sim, c->a.resume, c->err, sizeof c->err) != PJ_OK) {
            fprintf(stderr, "pdejit: %s\n", c->err);
            return 2;
        }
        if (!c->a.quiet)
            fprintf(stderr, "pdejit: resuming from %s at t = %.9g, step %lld\n", c->a.resume, pj_sim_time(c->sim),
                    (long long)pj_sim_steps(c->sim));
    }
    return 0;
}

/* What the run says when it has ended, and its exit status. */
static int report_run(run_ctx *c, pj_status st, const pj_run_result *res)
{
    const run_args *a = &c->a;
    /* the cache's warning when it changed while running (a swap's kernels could not be stored) */
    pj_sim_info info;
    pj_sim_get_info(c->sim, &info);
    if (info.warning && strncmp(info.warning, c->cache_warned, sizeof c->cache_warned - 1))
        fprintf(stderr, "pdejit: warning: %s\n", info.warning);
    int status = st == PJ_OK ? 0
                 : st == PJ_ERR_INPUT ? 2
                 : st == PJ_INTERRUPTED ? 128 + (stop_signal ? stop_signal : SIGINT)
                 : 1;
    if (st == PJ_INTERRUPTED)
        fprintf(stderr, "pdejit: %s: %s%s\n", stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", c->err,
                a->dump ? "; the final state was not dumped" : "");
    else if (st == PJ_ERR_INPUT) fprintf(stderr, "pdejit: %s: %s\n", a->file, c->err);
    else if (status) fprintf(stderr, "pdejit: run failed: %s\n", c->err);
    else if (res->stopped[0] && !a->quiet) fprintf(stderr, "pdejit: stopped: %s\n", res->stopped);
    double cells = (double)pj_problem_cells(c->pr);
    pj_solver_stats sst;
    int implicit = pj_sim_solver_stats(c->sim, &sst) == PJ_OK;
    /* the solver's options that nothing read: after every run, a failed one too (a misspelt option
       may be why it failed); read only now, since some are read at the first solve */
    if (implicit && sst.unused_options > 0) {
        if (a->strict_options) {
            fprintf(stderr, "pdejit: %s: PETSc option%s that no solver used (--strict-options): %s\n", a->file,
                    sst.unused_options == 1 ? "" : "s", sst.unused_option_names);
            if (!status) status = 2;
        } else {
            fprintf(stderr, "pdejit: warning: %s: PETSc option%s that no solver used: %s (misspelt, or for a solver "
                    "this run does not have)\n", a->file, sst.unused_options == 1 ? "" : "s",
                    sst.unused_option_names);
        }
    }
    if (status) return status; /* refused or failed: no statistics of a success */
    int summary = a->verbose || (!a->quiet && res->seconds > 3);
    char where[64 + 4096];
    snprintf(where, sizeof where, "(%s%s)%s%s", a->backend, a->single ? ", single" : "", c->out ? ", output in " : "",
             c->out ? c->out : "");
    if (implicit && sst.steady) {
        char pseudo[256] = ""; /* the continuation, where Newton alone failed (docs/solvers.md) */
        if (sst.pseudo_steps)
            snprintf(pseudo, sizeof pseudo, " (Newton from the initial fields failed after %lld; pseudo-transient "
                     "continuation: %lld pseudo-time steps, %lld Newton iterations)",
                     (long long)(sst.newton - sst.pseudo_newton), (long long)sst.pseudo_steps,
                     (long long)sst.pseudo_newton);
        if (summary)
            fprintf(stderr, "pdejit: steady solve: %lld Newton iterations, %lld linear iterations, final residual norm "
                    "%.3g%s; Jacobian assembly: %lld in %.3g s; %.3g s in all %s\n", (long long)sst.newton,
                    (long long)sst.linear, sst.last_residual, pseudo, (long long)sst.jacobians, sst.seconds_jacobian,
                    res->seconds, where);
        return status;
    }
    if (a->verbose && implicit)
        fprintf(stderr, "pdejit: implicit solver: %lld steps accepted, %lld rejected; %lld Newton iterations, %lld "
                "linear iterations; Jacobian assembly: %lld in %.3g s\n", (long long)(sst.steps - c->solver_steps0),
                (long long)(sst.rejected - c->rejected0), (long long)(sst.newton - c->newton0),
                (long long)(sst.linear - c->linear0), (long long)(sst.jacobians - c->jacobians0),
                sst.seconds_jacobian - c->seconds_jacobian0);
    int64_t ex_rejected = 0;
    double dt_last = 0, dt_next = 0;
    int explicit_adaptive = pj_sim_adaptive_stats(c->sim, NULL, &ex_rejected, &dt_last, &dt_next) == PJ_OK;
    if (a->verbose && explicit_adaptive)
        fprintf(stderr, "pdejit: adaptive steps: %lld accepted, %lld rejected; last dt %.3g, next %.3g\n",
                (long long)(res->steps - c->steps0), (long long)ex_rejected, dt_last, dt_next);
    if (summary) {
        /* the steps of this run (a resumed one counts from its checkpoint): the scheme's accepted
           steps; Mcells/s = cells x accepted steps / wall seconds of the stepping */
        long long steps = (long long)(res->steps - c->steps0);
        char rejected[64] = "", rate[64] = "", digits[32];
        if (implicit && sst.adaptive)
            snprintf(rejected, sizeof rejected, " accepted (%lld rejected)", (long long)(sst.rejected - c->rejected0));
        else if (explicit_adaptive)
            snprintf(rejected, sizeof rejected, " accepted (%lld rejected)", (long long)ex_rejected);
        if (res->seconds > 0 && steps > 0)
            snprintf(rate, sizeof rate, ": %s Mcells/s",
                     driver_format_rate(digits, sizeof digits, (double)steps * cells * 1e-6 / res->seconds));
        fprintf(stderr, "pdejit: %lld step%s%s to t = %.9g in %.3g s%s %s\n", steps, steps == 1 ? "" : "s", rejected,
                res->t, res->seconds, rate, where);
    }
    if (a->verbose && info.stepping) fprintf(stderr, "pdejit: stepping: %s\n", info.stepping);
    if (a->verbose && pj_sim_processes(c->sim) > 1) {
        int64_t exchanges;
        double xs, xb;
        pj_sim_exchange_stats(c->sim, &exchanges, &xs, &xb);
        fprintf(stderr, "pdejit: %d processes; rank 0's ghost exchanges: %lld in %.3g s (%.1f%% of the stepping), "
                "%.3g kB received each\n", pj_sim_processes(c->sim), (long long)exchanges, xs,
                res->seconds > 0 ? 100 * xs / res->seconds : 0.0, exchanges ? xb / (double)exchanges / 1e3 : 0.0);
    }
    return status;
}

/* Runs the simulation to its end (watching FILE with --watch, from `base` on); the exit status. */
static int run_to_end(run_ctx *c, const watch_baseline *base)
{
    const run_args *a = &c->a;
    c->out = a->out;
    if (!c->out) {
        /* the file asked for output or monitors, or checkpoints: write them next to where we run */
        if (pj_problem_has_output(c->pr) || pj_problem_has_monitor(c->pr) || a->checkpoint_every > 0)
            c->out = c->out_owned = default_out_dir(a->file);
    } else if (!strcmp(c->out, "none")) {
        c->out = NULL;
    }
    pj_run_options ro = pj_run_options_default();
    ro.dt = a->dt;
    ro.until = a->until;
    ro.steps = a->steps >= 0 ? (int64_t)a->steps : -1;
    ro.out_dir = c->out;
    ro.dump_path = a->dump;
    ro.check_every = (int)a->check_every;
    ro.checkpoint_every = a->checkpoint_every;
    ro.progress = a->quiet ? NULL : stderr;
    ro.no_stability_check = a->no_stability_check;
    ro.monitors = a->verbose ? stderr : NULL;
    if (a->watching) {
        c->w = watch_create(a->file, base, c->sim, a->scheme);
        if (!c->w) {
            fprintf(stderr, "pdejit: --watch: out of memory\n");
            return 1;
        }
        fprintf(stderr, "pdejit: watching %s: edits are swapped in while the run goes on\n", a->file);
    }
    run_hook hook = {c->sim, c->w, a->verbose, {0}};
    c->steps0 = pj_sim_steps(c->sim);
    if (pj_sim_solver_stats(c->sim, &hook.last) == PJ_OK) {
        c->solver_steps0 = hook.last.steps;
        c->rejected0 = hook.last.rejected;
        c->newton0 = hook.last.newton;
        c->linear0 = hook.last.linear;
        c->jacobians0 = hook.last.jacobians;
        c->seconds_jacobian0 = hook.last.seconds_jacobian;
    }
    if (a->verbose) pj_sim_on_adaptive_step(c->sim, adaptive_try, NULL); /* PJ_ERR_INPUT: not adaptive */
    ro.between_steps = run_between_steps;
    ro.between_ctx = &hook;
    if (stop_signal) pj_sim_interrupt(c->sim); /* caught since cmd_run began: the run stops at once */
    pj_run_result res;
    pj_status st = pj_sim_run(c->sim, &ro, &res, c->err, sizeof c->err);
    watch_finish(c->w); /* an edit swapped in just before the end is said before the end is */
    return report_run(c, st, &res);
}

static int cmd_run(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        cli_help(&cli_run, stdout);
        return 0;
    }
    run_ctx c = {.processes = decomp_launched_size()};
    /* over MPI (mpirun -np N): rank 0 alone speaks; every failure is agreed by all processes, so
       its message reaches rank 0 */
    if (c.processes > 1 && decomp_launched_rank() != 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) return 2;
    }
    int status = parse_run_args(argc, argv, &c.a);
    if (status) return status;
    /* from here on a SIGINT or SIGTERM stops the run cleanly: while the file compiles and the kernels
       are compiled or loaded (a kill there left a kernel on trial marked as crashed, cache.h), the
       parts below finish and the run ends before its first step, having written nothing */
    catch_stop_signals();
    if (pj_backend_by_name(c.a.backend, &c.be) < 0) {
        fprintf(stderr, "pdejit: unknown back end '%s'; back ends are %s\n", c.a.backend, pj_backend_names());
        return 2;
    }
    const backend_ops *be = engine_backend(c.a.backend);
    if (c.a.watching && !engine_backend_can(be, ENGINE_CAP_SWAP, c.err, sizeof c.err)) {
        fprintf(stderr, "pdejit run: --watch: %s\n", c.err);
        return 2;
    }
    watch_baseline base = watch_baseline_of(c.a.file); /* before reading: edits from now on count */
    c.pr = cli_compile(c.a.file, c.a.scheme);
    if (!c.pr) return 2;
    if (c.a.sets.n &&
        set_consts(&c.pr, c.a.file, c.a.scheme, c.a.sets.text, c.a.sets.n, c.a.watching, c.a.quiet) < 0) {
        pj_problem_free(c.pr);
        return 2;
    }
    status = monitors_within_limit(&c);
    if (!status) status = stopped_before_start();
    if (!status) status = start_sim(&c);
    if (!status) status = stopped_before_start();
    if (!status) status = set_params(&c);
    if (!status) status = start_state(&c);
    if (!status) status = stopped_before_start();
    if (!status) status = run_to_end(&c, &base);
    watch_stop(c.w); /* its thread may be handing the simulation a new problem */
    pj_sim_free(c.sim);
    watch_free(c.w); /* after the simulation that ran its problems */
    pj_problem_free(c.pr);
    free(c.out_owned);
    return status;
}
