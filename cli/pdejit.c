/* pdejit.c — the `pdejit` command (LANGUAGE.md §6, §11): main, `help`, `--version`, and the
 * commands check, emit and cache; run is in run.c, bench in bench.c. Every command and its options
 * are tables (options.h): the parser and the help read the same rows.
 *
 * Exit status: 0 success; 1 a run that failed (NaN found, device error); 2 bad usage or a
 * bad problem file. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "ast.h"
#include "cache.h"
#include "engine.h"
#include "program.h"
#include "scheme.h"
#include "options.h"
#include "cli.h"
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

char *cli_read_file(const char *path, size_t *len)
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
    char *text = cli_read_file(path, &len);
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

void cli_print_compile_times(const pj_sim *sim)
{
    pj_compile_times t;
    pj_sim_compile_times(sim, &t);
    fprintf(stderr,
            "pdejit: compile: front end %.2f ms, kernel IR %.2f ms, LLVM IR %.2f ms, optimisation %.2f ms, "
            "code generation %.2f ms, ORC load %.2f ms, cache %.2f ms; %d kernel%s (%d compiled) in %.2f ms\n",
            t.front, t.kir, t.ir, t.opt, t.codegen, t.load, t.cache, t.kernels, t.kernels == 1 ? "" : "s", t.compiled,
            t.wall);
}

/* Compiles FILE through the public API; prints its diagnostics to stderr. NULL on error. */
pj_problem *cli_compile(const char *path, const char *scheme)
{
    size_t len;
    char *text = cli_read_file(path, &len);
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

int cli_wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
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

/* ---- check ---------------------------------------------------------------------------------- */

typedef struct check_args {
    int single;
} check_args;

static const cli_opt check_opts[] = {
    {"--precision", NULL, "double|single", "the precision whose fields must fit in memory (default double)", NULL,
     cli_set_precision, offsetof(check_args, single)},
    CLI_HELP_OPT,
    {0},
};

static int cmd_check(int argc, char **argv)
{
    check_args a = {0};
    const char *file = NULL;
    if (cli_parse(&cli_check, argc, argv, &a, &file, 1) < 0) return 2;
    if (!file) {
        cli_help(&cli_check, stderr);
        return 2;
    }
    pj_program *p = cli_load_problem(file, NULL);
    if (!p) return 2;
    char err[512];
    int fits = engine_memory_check(p, a.single, err, sizeof err) == 0;
    if (!fits) fprintf(stderr, "pdejit: %s: %s\n", file, err);
    program_free(p);
    return fits ? 0 : 2;
}

const cli_cmd cli_check = {
    .name = "check",
    .operands = "FILE",
    .summary = "parse and check a problem; silent when it is sound",
    .usage = "FILE [--precision double|single]",
    .about = "Parses and checks FILE. Prints nothing and exits 0 when it is sound; otherwise prints\n"
             "every error as FILE:LINE:COL: error: MESSAGE with the line and a caret, and exits 2.\n"
             "It also exits 2 when the fields (every slot of the scheme, in the precision given;\n"
             "default double) do not fit in the memory available, saying how much they need.\n",
    .opts = check_opts,
    .main = cmd_check,
};

/* ---- emit ----------------------------------------------------------------------------------- */

/* The back end whose code `pdejit emit --FLAG` prints, or NULL. */
static const backend_ops *emitter(const char *flag)
{
    for (int i = 0; engine_backends[i]; i++)
        if ((engine_backends[i]->caps & ENGINE_CAP_EMIT) && !strcmp(engine_backends[i]->emit_flag, flag))
            return engine_backends[i];
    return NULL;
}

typedef struct emit_args {
    const char *what, *scheme; /* what: "ir", or a back end's emit_flag */
    int single, fast_math;
} emit_args;

static int set_emitted(const cli_opt *o, const char *value, void *member)
{
    (void)value;
    const char *what = o->name + 2;
    if (strcmp(what, "ir") && !emitter(what)) {
        fprintf(stderr, "pdejit emit: no back end of this build prints %s\n", o->name);
        return -1;
    }
    *(const char **)member = what;
    return 0;
}

#define EMIT(member) offsetof(emit_args, member)
static const cli_opt emit_opts[] = {
    {"--ir", NULL, NULL, "the kernel IR (the typed DAG every back end consumes) with its canonical hash", NULL,
     set_emitted, EMIT(what)},
    {"--llvm", NULL, NULL, "the optimised LLVM IR of the CPU back end", NULL, set_emitted, EMIT(what)},
    {"--cuda", NULL, NULL, "the CUDA C of the GPU back end", NULL, set_emitted, EMIT(what)},
    {"--scheme", NULL, "S", "the kernels of scheme S instead of the file's: {}", pj_scheme_names, cli_set_scheme,
     EMIT(scheme)},
    {"--precision", NULL, "double|single", "the kernels' floating point (default double)", NULL, cli_set_precision,
     EMIT(single)},
    {"--fast-math", NULL, NULL, "the code --fast-math runs (vector math from libmvec on the CPU)", NULL, cli_set_flag,
     EMIT(fast_math)},
    CLI_HELP_OPT,
    {0},
};
#undef EMIT

static void print_ir(const pj_program *p)
{
    const char *const *fn = (const char *const *)p->field_names, *const *pn = (const char *const *)p->param_names;
    printf("# %s: %dD grid %lldx%lldx%lld, %d field%s, %d param%s, scheme %s, halo %d\n", p->filename, p->dim,
           (long long)p->n[0], (long long)p->n[1], (long long)p->n[2], p->n_fields, p->n_fields == 1 ? "" : "s",
           p->n_params, p->n_params == 1 ? "" : "s", scheme_name(p->scheme), p->halo);
    for (int f = 0; f < p->n_fields; f++) printf("# field %s: halo %d\n", fn[f], p->field_halo[f]);
    kir_print(p->params_kernel, stdout, fn, pn);
    kir_print(p->init, stdout, fn, pn);
    for (int s = 0; s < 6; s++)
        if (p->bc_kernel[s]) kir_print(p->bc_kernel[s], stdout, fn, pn);
    printf("# the right-hand side F(U) of every field with an eq; %s\n",
           p->n_stages ? "the stages below compose it" : "the implicit solver takes it");
    kir_print(p->rhs, stdout, fn, pn);
    for (int s = 0; s < p->n_stages; s++) {
        printf("# stage %d reads slot %d at t + %g dt\n", s + 1, p->stages[s].read_slot, p->stages[s].t_frac);
        kir_print(p->stages[s].kernel, stdout, fn, pn);
    }
    if (PJ_SCHEME_IMPLICIT(p->scheme)) {
        const kir_kernel *ex = program_kernel(p, PJ_KERNEL_RHS_EXPLICIT);
        if (ex) {
            printf("# imex: the implicit part of F, then the explicit part\n");
            kir_print(program_kernel(p, PJ_KERNEL_RHS_IMPLICIT), stdout, fn, pn);
            kir_print(ex, stdout, fn, pn);
        }
        printf("# the Jacobian of the implicit part: output j into buffer %d + j\n", 2 * p->n_fields);
        kir_print(program_kernel(p, PJ_KERNEL_JACOBIAN), stdout, fn, pn);
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
}

static int cmd_emit(int argc, char **argv)
{
    emit_args a = {0};
    const char *file = NULL;
    if (cli_parse(&cli_emit, argc, argv, &a, &file, 1) < 0) return 2;
    if (!file || !a.what) {
        cli_help(&cli_emit, stderr);
        return 2;
    }
    pj_compile_options opt = {0};
    if (a.scheme) {
        opt.scheme = (pj_scheme)scheme_from_name(a.scheme);
        opt.scheme_set = 1;
    }
    pj_program *p = cli_load_problem(file, &opt);
    if (!p) return 2;
    if (!strcmp(a.what, "ir")) {
        print_ir(p);
    } else {
        char err[1024];
        engine_options eo = {.single = a.single, .fast_math = a.fast_math};
        if (emitter(a.what)->emit(p, &eo, stdout, err, sizeof err) < 0) {
            fprintf(stderr, "pdejit: %s\n", err);
            program_free(p);
            return 2;
        }
    }
    program_free(p);
    return 0;
}

const cli_cmd cli_emit = {
    .name = "emit",
    .operands = "FILE",
    .summary = "print the generated kernel IR, LLVM IR or CUDA C",
    .usage = "FILE --ir|--llvm|--cuda [--scheme S] [--precision double|single] [--fast-math]",
    .about = "Prints what the compiler generates for every kernel of FILE:\n",
    .opts = emit_opts,
    .main = cmd_emit,
};

/* ---- cache ---------------------------------------------------------------------------------- */

typedef struct explain_args {
    engine_options eo;
    const char *backend;
    int verbose;
} explain_args;

static const cli_opt cache_opts[] = {
    {"--backend", NULL, "cpu|cuda", "explain: the kernels of that back end (default cpu)", NULL, cli_set_text,
     offsetof(explain_args, backend)},
    {"--precision", NULL, "double|single", "explain: the kernels of that precision (default double)", NULL,
     cli_set_precision, offsetof(explain_args, eo.single)},
    {"--fast-math", NULL, NULL, "explain: the kernels of --fast-math", NULL, cli_set_flag,
     offsetof(explain_args, eo.fast_math)},
    {"--verbose", "-v", NULL, "list: each entry's whole key (target CPU and its features, versions), one line each",
     NULL, cli_set_flag, offsetof(explain_args, verbose)},
    CLI_HELP_OPT,
    {0},
};

/* `pdejit cache explain FILE [options]` */
static int explain_file(int argc, char **argv)
{
    const char *file = NULL;
    explain_args a = {.backend = "cpu"};
    if (cli_parse(&cli_cache, argc - 1, argv + 1, &a, &file, 1) < 0) return 2;
    if (a.verbose) {
        fprintf(stderr, "pdejit cache explain: --verbose is an option of cache list\n");
        return 2;
    }
    if (!file) {
        cli_help(&cli_cache, stderr);
        return 2;
    }
    char err[512] = "";
    const backend_ops *be = engine_backend(a.backend);
    if (!be) {
        fprintf(stderr, "pdejit: unknown back end '%s'; back ends are %s\n", a.backend, engine_backend_names());
        return 2;
    }
    if (!engine_backend_can(be, ENGINE_CAP_EXPLAIN, err, sizeof err)) {
        fprintf(stderr, "pdejit cache explain: %s\n", err);
        return 2;
    }
    pj_program *p = cli_load_problem(file, NULL);
    if (!p) return 2;
    int r = be->explain(p, &a.eo, stdout, err, sizeof err);
    if (r < 0) fprintf(stderr, "pdejit: %s\n", err);
    if (r > 0) fprintf(stderr, "pdejit: warning: %s\n", err);
    program_free(p);
    return r < 0 ? 1 : 0;
}

enum { LIST_WIDTH = 120 }; /* no line of `cache list` is longer */

/* The value of `name` in a key printed on one line ("backend=cpu codegen=cpu-9 ..."), up to the
 * next space, or NULL: n its length. */
static const char *key_value(const char *key, const char *name, int *n)
{
    size_t len = strlen(name);
    for (const char *p = key; (p = strstr(p, name)); p++)
        if ((p == key || p[-1] == ' ') && p[len] == '=') {
            *n = (int)strcspn(p + len + 1, " ");
            return p + len + 1;
        }
    return NULL;
}

/* One line of cache_list ("ID  SIZE  DATE TIME  KEY" or "... (refused: why)") as `cache list`
 * prints it: the key cut to what tells entries apart to a user (back end, kind, precision,
 * fast-math, the kernel IR's hash), the whole line at most LIST_WIDTH columns. */
static void list_line(const char *line, FILE *out)
{
    /* ID, size, date and time: four words */
    const char *rest = line;
    for (int w = 0; w < 4 && *rest; w++) {
        rest += strspn(rest, " ");
        rest += strcspn(rest, " ");
    }
    rest += strspn(rest, " ");
    int head = (int)(rest - line);
    char summary[LIST_WIDTH + 1] = "";
    if (*rest == '(') {
        snprintf(summary, sizeof summary, "%s", rest);
    } else {
        static const char *const names[] = {"backend", "kind", "precision", "target", "ir"};
        size_t at = 0;
        for (size_t i = 0; i < sizeof names / sizeof *names && at < sizeof summary; i++) {
            int n;
            const char *v = key_value(rest, names[i], &n);
            if (!v) continue;
            if (!strcmp(names[i], "ir") && n > 12) n = 12;            /* a prefix tells hashes apart */
            if (!strcmp(names[i], "target") && strncmp(rest, "backend=cuda", 12)) continue; /* sm_XY */
            at += (size_t)snprintf(summary + at, sizeof summary - at, "%s%s%.*s", at ? " " : "",
                                   !strcmp(names[i], "ir") ? "ir=" : "", n, v);
        }
        int n;
        const char *fm = key_value(rest, "fast_math", &n);
        if (fm && n == 1 && *fm == '1' && at < sizeof summary)
            snprintf(summary + at, sizeof summary - at, " fast-math");
    }
    int room = LIST_WIDTH - head;
    if ((int)strlen(summary) > room) /* cut, and say so */
        snprintf(summary + (room > 3 ? room - 3 : 0), 4, "...");
    fprintf(out, "%.*s%s\n", head, line, summary);
}

/* `pdejit cache list [--verbose]`: cache_list's lines, each cut to LIST_WIDTH columns unless
 * --verbose. */
static int list_cache(cache *c, int verbose)
{
    if (verbose) return cache_list(c, stdout);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) { fprintf(stderr, "pdejit: out of memory\n"); return -1; }
    int r = cache_list(c, mem);
    fclose(mem);
    for (char *line = text; line && *line;) {
        char *end = strchr(line, '\n');
        if (end) *end = 0;
        list_line(line, stdout);
        line = end ? end + 1 : line + strlen(line);
    }
    free(text);
    return r;
}

/* `pdejit cache stats`, `list [--verbose]` or `clear` (argv[0]) */
static int manage_cache(int argc, char **argv)
{
    const char *what = argv[0];
    explain_args a = {0};
    const char *operand = NULL;
    int n = cli_parse(&cli_cache, argc - 1, argv + 1, &a, &operand, 1);
    if (n < 0) return 2;
    int explain_only = a.backend || a.eo.single || a.eo.fast_math;
    if (n > 0 || explain_only || (a.verbose && strcmp(what, "list"))) {
        if (n > 0) fprintf(stderr, "pdejit cache %s: takes no FILE ('%s')\n", what, operand);
        else if (explain_only)
            fprintf(stderr, "pdejit cache %s: --backend, --precision and --fast-math are options of cache explain\n",
                    what);
        else fprintf(stderr, "pdejit cache %s: --verbose is an option of cache list\n", what);
        cli_help(&cli_cache, stderr);
        return 2;
    }
    cache *c = cache_open(NULL, 0);
    if (!c) { fprintf(stderr, "pdejit: out of memory\n"); return 1; }
    if (cache_warning(c)) fprintf(stderr, "pdejit: warning: %s\n", cache_warning(c));
    char *warned = cache_warning(c) ? strdup(cache_warning(c)) : NULL;
    int r;
    if (!strcmp(what, "stats")) r = cache_stats(c, stdout);
    else if (!strcmp(what, "list")) r = list_cache(c, a.verbose);
    else {
        r = cache_clear(c);
        if (r >= 0) printf("removed %d entr%s from %s\n", r, r == 1 ? "y" : "ies", cache_dir(c));
        else if (cache_on_disk(c)) fprintf(stderr, "pdejit cache clear: some of %s was not removed\n", cache_dir(c));
    }
    /* a warning that appeared on the way (a file or folder refused) */
    const char *w = cache_warning(c);
    if (w && (!warned || strcmp(w, warned))) fprintf(stderr, "pdejit: warning: %s\n", w);
    free(warned);
    cache_close(c);
    return r < 0 ? 1 : 0;
}

static const cli_sub cache_subs[] = {
    {"stats", "", "folder, entries, size against the cap", manage_cache},
    {"list", "", "one line per entry, most recently used first: id, size, last use, back end, kind, precision, "
     "the kernel IR's hash (the whole key with --verbose)", manage_cache},
    {"clear", "", "removes every entry", manage_cache},
    {"explain", "FILE", "for each kernel of FILE: hit, or miss and which key component differs from the nearest "
     "stored entry", explain_file},
    {0},
};

static int cmd_cache(int argc, char **argv) { return cli_run_sub(&cli_cache, argc, argv); }

const cli_cmd cli_cache = {
    .name = "cache",
    .operands = "",
    .summary = "the on-disk kernel cache: stats, list, clear, explain FILE",
    .usage = "stats|list [-v]|clear|explain FILE [--backend B] [--precision P] [--fast-math]",
    .about = "The on-disk kernel cache ($PDEJIT_CACHE_DIR, else $XDG_CACHE_HOME/pdejit, else\n"
             "~/.cache/pdejit; size cap $PDEJIT_CACHE_MAX, default 256M).\n",
    .subs = cache_subs,
    .opts = cache_opts,
    .main = cmd_cache,
};

/* ---- main: the commands, help, --version ---------------------------------------------------- */

const cli_cmd *const cli_commands[] = {&cli_run, &cli_check, &cli_emit, &cli_bench, &cli_cache, NULL};

static void main_help(FILE *out)
{
    fputs("usage: pdejit COMMAND [ARGS]\n"
          "       pdejit help [COMMAND]\n"
          "       pdejit --version\n"
          "\n"
          "commands:\n", out);
    for (int i = 0; cli_commands[i]; i++) {
        char left[64];
        snprintf(left, sizeof left, "%s %s", cli_commands[i]->name, cli_commands[i]->operands);
        fprintf(out, "  %-12s %s\n", left, cli_commands[i]->summary);
    }
    fputs("  help [CMD]   this help, or CMD's (the same as pdejit CMD --help)\n"
          "  help --man   the manual page pdejit(1), in roff (installed with the command)\n"
          "  help --bash-completion\n"
          "               a bash completion script for pdejit (installed with the command)\n"
          "\n"
          "options:\n"
          "  -h, --help   this help\n"
          "  --version    print pdejit's version\n"
          "\n"
          "exit status: 0 success, 1 a run that failed, 2 bad usage or a bad problem file\n", out);
}

static const cli_cmd *find_command(const char *name)
{
    for (int i = 0; cli_commands[i]; i++)
        if (!strcmp(name, cli_commands[i]->name)) return cli_commands[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    fprintf(stderr, "pdejit: unknown command '%s'\n", name);
    main_help(stderr);
    return 2;
}

/* `pdejit help [COMMAND]`, `pdejit help --man`, `pdejit help --bash-completion` */
static int cmd_help(int argc, char **argv)
{
    if (argc == 0 || (argc == 1 && !strcmp(argv[0], "help"))) {
        main_help(stdout);
        return 0;
    }
    if (argc == 1 && !strcmp(argv[0], "--man")) {
        cli_print_man(stdout);
        return 0;
    }
    if (argc == 1 && !strcmp(argv[0], "--bash-completion")) {
        cli_print_bash_completion(stdout);
        return 0;
    }
    const cli_cmd *cmd = find_command(argv[0]);
    if (!cmd) return unknown_command(argv[0]);
    if (argc > 1) {
        fprintf(stderr, "pdejit help: one COMMAND at most ('%s', '%s')\n", argv[0], argv[1]);
        return 2;
    }
    cli_help(cmd, stdout);
    return 0;
}

int main(int argc, char **argv)
{
    /* a file that outgrows `ulimit -f` fails its write with EFBIG, reported with the file's name
       (the previous checkpoint, snapshot or cache entry kept), instead of SIGXFSZ killing the
       command without a word and leaving its temporary file */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        main_help(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        main_help(stdout);
        return 0;
    }
    if (!strcmp(name, "--version")) {
        printf("pdejit %s\n", pj_version());
        return 0;
    }
    if (!strcmp(name, "help")) return cmd_help(argc - 2, argv + 2);
    const cli_cmd *cmd = find_command(name);
    if (!cmd) return unknown_command(name);
    if (cli_wants_help(argc - 2, argv + 2)) {
        cli_help(cmd, stdout);
        return 0;
    }
    return cmd->main(argc - 2, argv + 2);
}
