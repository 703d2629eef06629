/* test_cli.c — the `pdejit` command as a user meets it: exit statuses, --help, help COMMAND,
 * --version, every option in the help, one list of schemes, check, emit, run options, --dump's
 * exact format, --out snapshots at the output times, NaN reports. */
#include "testutil.h"
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "pdejit.h"


static char *write_file(const char *name, const char *text)
{
    char *path = malloc(strlen(tu_dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", tu_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}


/* Runs a shell command in the temporary folder, with $PJ the command and its cache folder set. */
static int sh(char **out, const char *fmt, ...)
{
    char script[3072], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(script, sizeof script, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd %s && export PDEJIT_CACHE_DIR=%s/cache PJ=%s LC_ALL=C && %s", tu_dir, tu_dir, PJ_BINARY,
             script);
    return tu_run(cmd, out);
}

static void help_and_usage(void **state)
{
    (void)state;
    const char *cmds[] = {"--help", "run --help", "check --help", "emit --help", "cache --help", "bench --help"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        char *out;
        assert_int_equal(tu_pdejit(&out, "%s", cmds[i]), 0);
        assert_non_null(strstr(out, "usage: pdejit"));
        free(out);
    }
    char *out;
    assert_int_equal(tu_pdejit(&out, "frobnicate"), 2);
    assert_non_null(strstr(out, "unknown command 'frobnicate'"));
    free(out);
    assert_int_equal(tu_pdejit(&out, ""), 2);
    free(out);
    assert_int_equal(tu_pdejit(&out, "run"), 2);
    free(out);
    assert_int_equal(tu_pdejit(&out, "run x.pde --bogus"), 2);
    assert_non_null(strstr(out, "unknown option '--bogus'"));
    free(out);
}

static const char *const commands[] = {"run", "check", "emit", "bench", "cache"};
#define N_COMMANDS (sizeof commands / sizeof *commands)

/* `pdejit ARGS` with its standard output alone (malloc'd); *status its exit status. */
static char *stdout_of(int *status, const char *args)
{
    char *out;
    *status = sh(&out, "$PJ %s 2>/dev/null", args);
    return out;
}

/* s with every run of white space made one space (the help wraps its lines). */
static char *squeezed(const char *s)
{
    char *t = malloc(strlen(s) + 1), *o = t;
    for (; *s; s++)
        if (!isspace((unsigned char)*s)) *o++ = *s;
        else if (o > t && o[-1] != ' ') *o++ = ' ';
    *o = 0;
    return t;
}

/* CMakeLists.txt's project version: "project(pdejit VERSION 0.1.0 ...)" */
static void project_version(char *version, size_t len)
{
    char *cmake = tu_read_file(PJ_SOURCE_DIR "/CMakeLists.txt", NULL);
    assert_non_null(cmake);
    const char *at = strstr(cmake, "project(pdejit VERSION ");
    assert_non_null(at);
    at += strlen("project(pdejit VERSION ");
    size_t n = strcspn(at, " )");
    assert_true(n > 0 && n < len);
    snprintf(version, len, "%.*s", (int)n, at);
    free(cmake);
}

static void version_and_help_command(void **state)
{
    (void)state;
    char version[64], expect[96];
    project_version(version, sizeof version);
    snprintf(expect, sizeof expect, "pdejit %s\n", version);
    int status;
    char *out = stdout_of(&status, "--version");
    assert_int_equal(status, 0);
    assert_string_equal(out, expect);
    free(out);
    assert_string_equal(pj_version(), version);
    /* pdejit help CMD is CMD --help, on stdout, exit 0; pdejit help is pdejit --help */
    for (size_t i = 0; i < N_COMMANDS; i++) {
        char args[64];
        snprintf(args, sizeof args, "help %s", commands[i]);
        char *help = stdout_of(&status, args);
        assert_int_equal(status, 0);
        snprintf(args, sizeof args, "%s --help", commands[i]);
        char *dashed = stdout_of(&status, args);
        assert_int_equal(status, 0);
        assert_string_equal(help, dashed);
        snprintf(args, sizeof args, "usage: pdejit %s ", commands[i]);
        assert_true(!strncmp(help, args, strlen(args)));
        free(help);
        free(dashed);
    }
    char *help = stdout_of(&status, "help"), *dashed = stdout_of(&status, "--help");
    assert_string_equal(help, dashed);
    assert_non_null(strstr(help, "--version"));
    assert_non_null(strstr(help, "help [COMMAND]"));
    for (size_t i = 0; i < N_COMMANDS; i++) {
        char line[32];
        snprintf(line, sizeof line, "\n  %s ", commands[i]);
        assert_non_null(strstr(help, line));
    }
    free(help);
    free(dashed);
    assert_int_equal(tu_pdejit(&out, "help frobnicate"), 2);
    assert_non_null(strstr(out, "pdejit: unknown command 'frobnicate'\nusage: pdejit COMMAND"));
    free(out);
    assert_int_equal(tu_pdejit(&out, "help run check"), 2);
    free(out);
    /* cache's subcommands: in its help, from the table that runs them */
    help = stdout_of(&status, "help cache");
    const char *subs[] = {"\n  stats ", "\n  list ", "\n  clear ", "\n  explain FILE "};
    for (int i = 0; i < 4; i++) assert_non_null(strstr(help, subs[i]));
    free(help);
    assert_int_equal(tu_pdejit(&out, "cache frob"), 2);
    assert_non_null(strstr(out, "pdejit cache: unknown subcommand 'frob'\nusage: pdejit cache "));
    free(out);
}

/* The options a command's help lists: the words of its option lines ("  -v, --verbose  ...",
 * "  --dt DT  ..."); values[i]: whether option i takes a value. */
static int help_options(const char *help, char names[][40], int *values, int most)
{
    int n = 0;
    const char *opts = strstr(help, "\noptions:\n");
    assert_non_null(opts);
    for (const char *l = opts + 1; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, "  -", 3)) continue;
        char left[64];
        snprintf(left, sizeof left, "%.26s", l + 2);
        char *word = strtok(left, " ,");
        int first = n;
        for (; word && word[0] == '-' && n < most; word = strtok(NULL, " ,")) snprintf(names[n++], 40, "%s", word);
        for (int i = first; i < n; i++) values[i] = word != NULL;
    }
    return n;
}

/* Every option the command's source names is in a command's help, and every option a help lists
 * is one its command's parser takes. */
static void every_option_is_in_the_help(void **state)
{
    (void)state;
    char *helps[N_COMMANDS + 1];
    size_t all_len = 0;
    int status;
    for (size_t i = 0; i < N_COMMANDS; i++) {
        char args[64];
        snprintf(args, sizeof args, "%s --help", commands[i]);
        helps[i] = stdout_of(&status, args);
        all_len += strlen(helps[i]);
        for (const char *l = helps[i]; *l; l = strchr(l, '\n') + 1) /* help fits a terminal */
            assert_true(strchr(l, '\n') - l <= 100);
    }
    helps[N_COMMANDS] = stdout_of(&status, "--help");
    char *all = calloc(1, all_len + strlen(helps[N_COMMANDS]) + 1);
    for (size_t i = 0; i <= N_COMMANDS; i++) strcat(all, helps[i]);
    /* each option's literal in cli/ ("--dt", "-v") is in a help */
    DIR *dir = opendir(PJ_SOURCE_DIR "/cli");
    assert_non_null(dir);
    int literals = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 2, ".c")) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/cli/%s", PJ_SOURCE_DIR, e->d_name);
        char *src = tu_read_file(path, NULL);
        assert_non_null(src);
        for (char *q = strstr(src, "\"-"); q; q = strstr(q + 1, "\"-")) {
            size_t len = 1 + strspn(q + 1, "-abcdefghijklmnopqrstuvwxyz");
            if (q[len] != '"' || len < 3 || !islower((unsigned char)q[len - 1])) continue;
            char word[64], spaced[70];
            snprintf(word, sizeof word, "%.*s", (int)len - 1, q + 1);
            snprintf(spaced, sizeof spaced, " %s", word);
            if (!strstr(all, spaced)) fail_msg("cli/%s names option %s, which no help lists", e->d_name, word);
            literals++;
        }
        free(src);
    }
    closedir(dir);
    assert_true(literals > 30);
    /* each option a help lists is taken by its parser (with a value where it has one) */
    for (size_t i = 0; i < N_COMMANDS; i++) {
        char names[64][40];
        int values[64];
        int n = help_options(helps[i], names, values, 64);
        assert_true(n >= 2);
        for (int k = 0; k < n; k++) {
            if (!strcmp(names[k], "--help") || !strcmp(names[k], "-h")) continue;
            char *out;
            tu_pdejit(&out, "%s %s nothere.pde %s %s", commands[i], !strcmp(commands[i], "cache") ? "explain" : "",
                      names[k], values[k] ? "1" : "");
            if (strstr(out, "unknown option") || strstr(out, "needs a value"))
                fail_msg("pdejit %s: its help lists %s, its parser refuses it: %s", commands[i], names[k], out);
            free(out);
        }
    }
    assert_non_null(strstr(helps[0], "\n  -v, --verbose "));
    assert_non_null(strstr(helps[0], "\n  -q, --quiet "));
    for (size_t i = 0; i <= N_COMMANDS; i++) free(helps[i]);
    free(all);
}

/* The schemes, as one list: in run --help, emit --help, run's and emit's refusals, the file's
 * `scheme =` diagnostic and the API's (Python's compile() shows it). */
static void one_list_of_schemes(void **state)
{
    (void)state;
    const char *list = pj_scheme_names();
    assert_string_equal(list, "euler, rk2, rk3, rk4, rk23, rk45, beuler, cn, bdf2, imex");
    char expect[256], *out;
    snprintf(expect, sizeof expect, "schemes are %s\n", list);
    int status;
    const char *helps[] = {"run --help", "emit --help"};
    for (int i = 0; i < 2; i++) {
        char *help = stdout_of(&status, helps[i]);
        char *flat = squeezed(help);
        assert_non_null(strstr(flat, list));
        free(flat);
        free(help);
    }
    char *p = write_file("ok.pde", "mesh grid(nx = 4)\nfield u = x\neq dt(u) = -u\ntime dt = 0.1, steps = 1\n");
    assert_int_equal(tu_pdejit(&out, "run ok.pde --scheme rk9"), 2);
    assert_non_null(strstr(out, "pdejit: unknown scheme 'rk9'; "));
    assert_non_null(strstr(out, expect));
    free(out);
    assert_int_equal(tu_pdejit(&out, "run ok.pde --scheme steady"), 2); /* a statement, not a scheme */
    assert_non_null(strstr(out, expect));
    free(out);
    assert_int_equal(tu_pdejit(&out, "emit ok.pde --ir --scheme rk9"), 2);
    assert_non_null(strstr(out, expect));
    free(out);
    char *bad = write_file("sch.pde", "mesh grid(nx = 4)\nfield u = x\neq dt(u) = -u\ntime dt = 0.1, steps = 1, "
                                      "scheme = rk9\n");
    assert_int_equal(tu_pdejit(&out, "check sch.pde"), 2);
    snprintf(expect, sizeof expect, "schemes are %s\n", list);
    assert_non_null(strstr(out, expect));
    free(out);
    pj_problem *pr = NULL;
    char *diagnostics = NULL;
    const char *text = "mesh grid(nx = 4)\nfield u = x\neq dt(u) = -u\ntime dt = 0.1, steps = 1\n";
    assert_int_equal(pj_problem_compile_scheme("t.pde", text, strlen(text), "rk9", &pr, &diagnostics), PJ_ERR_INPUT);
    assert_non_null(diagnostics);
    assert_non_null(strstr(diagnostics, expect));
    free(diagnostics);
    /* every scheme listed is taken by --scheme */
    char names[256];
    snprintf(names, sizeof names, "%s", list);
    for (char *name = strtok(names, ", "); name; name = strtok(NULL, ", ")) {
        assert_int_equal(tu_pdejit(&out, "emit ok.pde --ir --scheme %s", name), 0);
        free(out);
    }
    free(p);
    free(bad);
}

static void check_is_silent_or_points(void **state)
{
    (void)state;
    char *good = write_file("good.pde", "mesh grid(nx = 8)\nfield u = x\neq dt(u) = lap(u)\ntime dt = 0.001, steps = 2\n");
    char *bad = write_file("bad.pde", "mesh grid(nx = 8)\nfield u = x\neq dt(u) = lap(uu)\n");
    char *out;
    assert_int_equal(tu_pdejit(&out, "check good.pde"), 0);
    assert_string_equal(out, "");
    free(out);
    assert_int_equal(tu_pdejit(&out, "check bad.pde"), 2);
    assert_non_null(strstr(out, "bad.pde:3:16: error: undefined name 'uu'; did you mean 'u'?\n    eq dt(u) = lap(uu)\n                   ^\n"));
    free(out);
    assert_int_equal(tu_pdejit(&out, "check missing.pde"), 2);
    assert_non_null(strstr(out, "missing.pde: No such file or directory"));
    free(out);
    assert_int_equal(tu_pdejit(&out, "emit good.pde --ir"), 0);
    assert_non_null(strstr(out, "kernel stage1"));
    assert_non_null(strstr(out, "load u@0 [1]"));
    free(out);
    assert_int_equal(tu_pdejit(&out, "emit good.pde --llvm"), 0);
    assert_non_null(strstr(out, "define"));
    free(out);
    free(good);
    free(bad);
    /* a file of 2^31 - 1 bytes (sparse: no disk space) is refused, read no further than 64 MiB */
    char *huge = write_file("huge.pde", "");
    assert_int_equal(truncate(huge, 2147483647), 0);
    assert_int_equal(tu_pdejit(&out, "check huge.pde"), 2);
    assert_string_equal(out, "huge.pde: error: the problem text is larger than 64 MiB (67108864 bytes), the most a "
                             "problem may have\n1 error\n");
    free(out);
    unlink(huge);
    free(huge);
    /* a FIFO in the problem's place is refused at once, not waited for (no writer ever comes) */
    char *fifo = write_file("fifo.pde", "");
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(sh(&out, "timeout -k 5 30 $PJ check fifo.pde"), 2);
    assert_string_equal(out, "pdejit: fifo.pde: not a regular file\n");
    free(out);
    unlink(fifo);
    free(fifo);
}

static void dump_format(void **state)
{
    (void)state;
    char *p = write_file("d.pde", "mesh grid(nx = 5, ny = 3, Lx = 1, Ly = 3)\nfield u = x + 10*y, v = 1/3\n"
                                  "eq dt(u) = 0\ntime dt = 1, steps = 1\n");
    char *out;
    assert_int_equal(tu_pdejit(&out, "run d.pde --dump d.csv --backend interp"), 0);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/d.csv", tu_dir);
    char *csv = tu_read_file(path, NULL);
    assert_non_null(csv);
    /* header, then x fastest, cell centres, 17 significant digits */
    assert_true(!strncmp(csv, "x,y,u,v\n0.10000000000000001,0.5,5.0999999999999996,0.33333333333333331\n"
                              "0.30000000000000004,0.5,5.2999999999999998,0.33333333333333331\n", 128));
    int rows = 0;
    for (char *c = csv; *c; c++) rows += *c == '\n';
    assert_int_equal(rows, 1 + 15);
    assert_non_null(strstr(csv, "\n0.90000000000000002,2.5,25.899999999999999,0.33333333333333331\n"));
    free(csv);
    free(p);
}

static double dumped_u(const char *csv_name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tu_dir, csv_name);
    char *csv = tu_read_file(path, NULL);
    assert_non_null(csv);
    double x, u;
    assert_int_equal(sscanf(strchr(csv, '\n') + 1, "%lf,%lf", &x, &u), 2);
    free(csv);
    return u;
}

static void time_options(void **state)
{
    (void)state;
    /* du/dt = r: u(t) = r t exactly, on every scheme */
    char *p = write_file("ode.pde", "mesh grid(nx = 2)\nparam r = 1\nfield u\neq dt(u) = r\ntime dt = 1, until = 3\n");
    char *out;
    assert_int_equal(tu_pdejit(&out, "run ode.pde --dump a.csv"), 0);
    free(out);
    assert_true(dumped_u("a.csv") == 3);
    assert_int_equal(tu_pdejit(&out, "run ode.pde --until 2.5 --dump a.csv"), 0); /* the last step lands on 2.5 */
    free(out);
    assert_true(dumped_u("a.csv") == 2.5);
    assert_int_equal(tu_pdejit(&out, "run ode.pde --steps 4 --dt 0.25 --scheme rk4 --dump a.csv"), 0);
    free(out);
    assert_true(dumped_u("a.csv") == 1);
    assert_int_equal(tu_pdejit(&out, "run ode.pde --set r=-2 --dump a.csv --backend interp"), 0);
    free(out);
    assert_true(dumped_u("a.csv") == -6);
    assert_int_equal(tu_pdejit(&out, "run ode.pde --set rr=1"), 2);
    assert_non_null(strstr(out, "'rr' is not a param of ode.pde (did you mean 'r'?)"));
    free(out);
    assert_int_equal(tu_pdejit(&out, "run ode.pde --steps 1e19"), 2);
    assert_non_null(strstr(out, "--steps must be a whole number from 0 to 9e15"));
    free(out);
    assert_int_equal(tu_pdejit(&out, "run ode.pde --dt 0"), 2);
    free(out);
    assert_int_equal(tu_pdejit(&out, "run ode.pde --scheme rk9"), 2);
    assert_non_null(strstr(out, "unknown scheme 'rk9'"));
    free(out);
    /* a run given in steps ends at steps*dt even when output times split steps */
    char *q = write_file("odeout.pde", "mesh grid(nx = 2)\nfield u\neq dt(u) = 1\ntime dt = 0.3, steps = 10\n"
                                       "output every = 1\n");
    assert_int_equal(tu_pdejit(&out, "run odeout.pde --dump a.csv"), 0);
    free(out);
    assert_true(fabs(dumped_u("a.csv") - 3.0) < 1e-12);
    free(q);
    assert_int_equal(tu_pdejit(&out, "run ode.pde --precision single --threads 2 --dump a.csv"), 0);
    free(out);
    assert_true(dumped_u("a.csv") == 3);
    free(p);
}

static void snapshots_at_output_times(void **state)
{
    (void)state;
    char *p = write_file("o.pde", "mesh grid(nx = 4, ny = 4)\nfield u = x\neq dt(u) = 1\n"
                                  "time dt = 0.3, until = 2\noutput every = 0.5, format = csv vtk png\n");
    char *out;
    assert_int_equal(tu_pdejit(&out, "run o.pde --out snaps"), 0);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/snaps/snapshots.csv", tu_dir);
    char *index = tu_read_file(path, NULL);
    assert_non_null(index);
    /* t = 0, 0.5, 1, 1.5, 2 exactly, although 0.5 is not a multiple of dt */
    double t[5];
    int n = sscanf(strchr(index, '\n') + 1, "%*d,%lf\n%*d,%lf\n%*d,%lf\n%*d,%lf\n%*d,%lf", &t[0], &t[1], &t[2], &t[3], &t[4]);
    assert_int_equal(n, 5);
    for (int i = 0; i < 5; i++) assert_true(fabs(t[i] - 0.5 * i) < 1e-12);
    free(index);
    const char *files[] = {"snapshot_000004.csv", "snapshot_000004.vti", "snapshots.pvd", "u_000004.png"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/snaps/%s", tu_dir, files[i]);
        assert_int_equal(access(path, R_OK), 0);
    }
    /* the value at the last snapshot: u = x + 2 */
    snprintf(path, sizeof path, "%s/snaps/snapshot_000004.csv", tu_dir);
    char *csv = tu_read_file(path, NULL);
    double x, y, u;
    assert_int_equal(sscanf(strchr(csv, '\n') + 1, "%lf,%lf,%lf", &x, &y, &u), 3);
    assert_true(fabs(u - (x + 2)) < 1e-12);
    free(csv);
    /* no --out: the file's own output goes to o.out */
    assert_int_equal(tu_pdejit(&out, "run o.pde"), 0);
    free(out);
    snprintf(path, sizeof path, "%s/o.out/snapshots.csv", tu_dir);
    assert_int_equal(access(path, R_OK), 0);
    /* an output statement without `every`: the start and the end, in the default folder */
    char *q = write_file("f.pde", "mesh grid(nx = 4)\nfield u = x\neq dt(u) = 1\ntime dt = 0.5, until = 1\noutput format = csv\n");
    assert_int_equal(tu_pdejit(&out, "run f.pde"), 0);
    free(out);
    snprintf(path, sizeof path, "%s/f.out/snapshot_000001.csv", tu_dir);
    assert_int_equal(access(path, R_OK), 0);
    free(q);
    /* nothing to step: one snapshot */
    assert_int_equal(tu_pdejit(&out, "run f.pde --until 0 --out zero"), 0);
    free(out);
    snprintf(path, sizeof path, "%s/zero/snapshot_000001.csv", tu_dir);
    assert_int_equal(access(path, F_OK), -1);
    /* through a link, or a redirected /dev/stdout: written through, the link stays a link */
    assert_int_equal(tu_pdejit(&out, "run f.pde --out none --dump /dev/stdout > redirected.csv && test -L /dev/stdout && "
                              "ln -sf real.csv link.csv && PDEJIT_CACHE_DIR=cache %s run f.pde --out none --dump link.csv && test -L link.csv && "
                              "cmp real.csv redirected.csv && echo THROUGH", PJ_BINARY), 0);
    assert_non_null(strstr(out, "THROUGH"));
    free(out);
    /* --dump to a device writes to it (not over it) */
    assert_int_equal(tu_pdejit(&out, "run f.pde --out none --dump /dev/stdout"), 0);
    assert_non_null(strstr(out, "x,u\n0.125,"));
    free(out);
    free(p);
    /* output times closer than the tolerance the run lands with (1e-12 of its length) would be one
       snapshot (they were merged without a word): refused at the file's text, and before a run whose
       --until makes the tolerance wider */
    p = write_file("close.pde", "mesh grid(nx = 4)\nfield u = x\neq dt(u) = 1\ntime dt = 0.1, until = 1\n"
                                "output at = 0.5, 0.5000000000001, 0.7\n");
    assert_int_equal(tu_pdejit(&out, "check close.pde"), 2);
    assert_string_equal(out, "close.pde:5:18: error: output time 0.5000000000001 is within 1e-12 of 0.5, the tolerance a "
                             "run lands on a time with: the two would be one snapshot\n"
                             "    output at = 0.5, 0.5000000000001, 0.7\n                     ^\n1 error\n");
    free(out);
    free(p);
    p = write_file("tiny.pde", "mesh grid(nx = 4)\nfield u = x\neq dt(u) = 1\ntime dt = 0.1, until = 1\n"
                               "output at = 1e-300\n");
    assert_int_equal(tu_pdejit(&out, "check tiny.pde"), 2);
    assert_non_null(strstr(out, "tiny.pde:5:13: error: output time 1e-300 is within 1e-12 of the start t = 0, the "
                                "tolerance a run lands on a time with: the two would be one snapshot\n"));
    free(out);
    free(p);
    p = write_file("near.pde", "mesh grid(nx = 4)\nfield u = x\neq dt(u) = 1\ntime dt = 0.1, until = 1\n"
                               "output at = 0.5, 0.50000000001\n");
    assert_int_equal(tu_pdejit(&out, "run near.pde --out snaps_near --until 1000"), 2);
    assert_string_equal(out, "pdejit: near.pde: output time 0.50000000001 is within 1e-09 of 0.5, the tolerance a run to "
                             "t = 1000 lands on a time with: the two would be one snapshot\n");
    free(out);
    /* to t = 1 they are two snapshots 1e-11 apart (less than 1e-9 dt): the second is one short step
       after the first (no step was taken and the run stopped at 0.5 again for ever) */
    assert_int_equal(sh(&out, "timeout -k 5 60 $PJ run near.pde --out snaps_near --quiet && cat snaps_near/snapshots.csv"), 0);
    assert_string_equal(out, "snapshot,t\n0,0.5\n1,0.50000000001\n");
    free(out);
    free(p);
}

/* --watch: a broken edit is reported and the run goes on, once; a save that changes nothing is
 * no edit; a good edit is swapped in at a step boundary, the field keeping its value: du/dt = 1 then 2 from the swap time ts gives
 * u(T) = ts + 2 (T - ts) exactly (every step adds dt*rate). */
static void watch_swaps_at_a_step(void **state)
{
    (void)state;
    char *p = write_file("w.pde", "mesh grid(nx = 1000000)\nfield u\neq dt(u) = 1\ntime dt = 0.001, until = 40\n");
    char *out;
    /* each edit waits for the run to be ready for it (a loaded machine may start slowly) */
    int rc = tu_pdejit(&out, "run w.pde --watch --out none --dump w.csv 2> w.log & pid=$!; cd %s && "
                      "until grep -q watching w.log || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done; "
                      "sed -i 's/= 1$/= 2 + qq/' w.pde; "
                      "until grep -q 'not compile' w.log || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done; "
                      "sed -i 's/= 2 + qq$/= 2/' w.pde; "
                      "until grep -q 'swapped in' w.log || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done; "
                      "touch w.pde; sleep 0.6; wait $pid; rc=$?; cat w.log; exit $rc", tu_dir);
    assert_int_equal(rc, 0);
    /* one report per edit: the save without an edit (touch) is none */
    int reports = 0;
    for (const char *at = out; (at = strstr(at, "w.pde changed")); at++) reports++;
    if (reports != 2) fprintf(stderr, "%s\n", out);
    assert_int_equal(reports, 2);
    assert_non_null(strstr(out, "w.pde changed but it does not compile; still running the previous definition\n"
                                "w.pde:3:16: error: undefined name 'qq'\n    eq dt(u) = 2 + qq\n                   ^\n"));
    const char *sw = strstr(out, ": w.pde changed: swapped in the new definition");
    assert_non_null(sw);
    while (sw > out && strncmp(sw, "t = ", 4)) sw--;
    double ts = 0;
    assert_int_equal(sscanf(sw, "t = %lf", &ts), 1);
    assert_true(ts > 0 && ts < 40);
    double u = dumped_u("w.csv");
    if (fabs(u - (ts + 2 * (40 - ts))) > 1e-6) fprintf(stderr, "%s\nu = %.17g, ts = %.17g\n", out, u, ts);
    assert_true(fabs(u - (ts + 2 * (40 - ts))) < 1e-6);
    free(out);
    /* what a running simulation cannot change is refused, and the run goes on (a fresh log: the
       wait must not see the first run's lines) */
    free(write_file("w.pde", "mesh grid(nx = 1000000)\nfield u\neq dt(u) = 1\ntime dt = 0.001, until = 20\n"));
    rc = tu_pdejit(&out, "run w.pde --watch --out none --backend cpu 2> w2.log & pid=$!; cd %s && "
                  "until grep -q watching w2.log || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done; "
                  "sed -i 's/nx = 1000000/nx = 999/' w.pde; wait $pid; rc=$?; cat w2.log; exit $rc", tu_dir);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "w.pde changed, but the mesh changed along x: restart the run for that"));
    free(out);
    free(p);
}

/* --watch: an edit whose new definition ends the run a step after it is swapped in (here at once:
 * a stop condition on what the new equation makes) is still reported, before the run says why
 * it stopped (the report used to wait for the next poll, which never came). */
static void watch_reports_a_swap_the_run_ends_after(void **state)
{
    (void)state;
    char *p = write_file("s.pde", "mesh grid(nx = 10)\nfunc r(s) = 0\nfield u = 0\neq dt(u) = r(u)\n"
                                  "monitor every = 0.001, m = maxval(u)\nstop when m > 0\n"
                                  "time dt = 0.001, until = 5000\n");
    char *out;
    int rc = tu_pdejit(&out, "run s.pde --watch --out none 2> s.log & pid=$!; cd %s && "
                      "until grep -q watching s.log || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done; "
                      "sed -i 's/r(s) = 0/r(s) = 1/' s.pde; wait $pid; rc=$?; cat s.log; exit $rc", tu_dir);
    assert_int_equal(rc, 0);
    const char *swapped = strstr(out, ": s.pde changed: swapped in the new definition (");
    const char *stopped = strstr(out, "pdejit: stopped: m > 0 at t = ");
    if (!swapped || !stopped || swapped > stopped) fprintf(stderr, "%s\n", out);
    assert_non_null(swapped);
    assert_non_null(stopped);
    assert_true(swapped < stopped);
    free(out);
    free(p);
}

/* ---- refused before the first step (issue 15) ---------------------------------------------- */

static int exists(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    return access(path, F_OK) == 0;
}

/* A 20000^2 RK4 problem of three fields needs 12 buffers (4 slots) of 3.2 GB: refused at once,
 * before any allocation, against the memory available ($PDEJIT_MEMORY_AVAILABLE stands in for
 * MemAvailable and the cgroup), by run on both host back ends and by check; in single precision
 * it needs half, which check takes when it fits. */
static void memory_is_checked_before_allocating(void **state)
{
    (void)state;
    char *p = write_file("big.pde", "mesh grid(nx = 20000, ny = 20000)\nfield u = 1\nfield v = 0\nfield w = 0\n"
                                    "eq dt(u) = lap(u)\neq dt(v) = lap(v)\neq dt(w) = lap(w)\n"
                                    "time dt = 0.001, steps = 2, scheme = rk4\n");
    const char *want = "pdejit: big.pde: the problem needs 38.4 GB (12 buffers of 3.2 GB); 22.9 GB are available\n";
    char *out;
    for (int be = 0; be < 2; be++) {
        /* nothing allocated: no process of the run reached 1 GB resident (one buffer is 3.2 GB;
           before, 3 GB were allocated and filled). ru_maxrss of the children is the largest of
           any child waited for so far: one above the earlier largest is a child of this run. */
        struct rusage r0, r1;
        assert_int_equal(getrusage(RUSAGE_CHILDREN, &r0), 0);
        assert_int_equal(sh(&out, "PDEJIT_MEMORY_AVAILABLE=22.9e9 $PJ run big.pde --backend %s --out none --dump big.csv",
                            be ? "cpu" : "interp"), 2);
        assert_int_equal(getrusage(RUSAGE_CHILDREN, &r1), 0);
        print_message("%s: largest resident set of a child %ld kB (before the run %ld kB)\n", be ? "cpu" : "interp",
                      r1.ru_maxrss, r0.ru_maxrss);
        assert_true(r1.ru_maxrss == r0.ru_maxrss || r1.ru_maxrss < 1024 * 1024);
        assert_string_equal(out, want);
        free(out);
    }
    assert_false(exists("big.csv"));
    assert_int_equal(sh(&out, "PDEJIT_MEMORY_AVAILABLE=22.9e9 $PJ check big.pde"), 2);
    assert_string_equal(out, want);
    free(out);
    assert_int_equal(sh(&out, "PDEJIT_MEMORY_AVAILABLE=8e9 $PJ check big.pde --precision single"), 2);
    assert_string_equal(out, "pdejit: big.pde: the problem needs 19.2 GB (12 buffers of 1.6 GB); 8.0 GB are available\n");
    free(out);
    assert_int_equal(sh(&out, "PDEJIT_MEMORY_AVAILABLE=20e9 $PJ check big.pde --precision single"), 0);
    assert_string_equal(out, "");
    free(out);
    free(p);
}

/* A step count or an output count that overflows (or a dt that underflows) is refused with the
 * numbers, exit 2, nothing stepped and nothing written; before, these runs took 0 steps and
 * exited 0 with the initial state, or wrote t = 0 snapshots forever. */
static void step_counts_that_overflow_are_refused(void **state)
{
    (void)state;
    char *a = write_file("ode.pde", "mesh grid(nx = 2)\nfield u\neq dt(u) = 1\ntime dt = 1, until = 3\n");
    char *b = write_file("inf.pde", "mesh grid(nx = 2)\nfield u\neq dt(u) = 1\ntime dt = 1e308, steps = 10\n");
    char *c = write_file("snap.pde", "mesh grid(nx = 2)\nfield u\neq dt(u) = 1\ntime dt = 0.1, until = 1\n"
                                     "output every = 1e-300\n");
    struct { const char *args, *want; } cases[] = {
        {"run ode.pde --dt 1e-300 --dump c.csv",
         "pdejit: ode.pde: dt = 1e-300 to t = 3 makes 3e+300 steps, more than the 1e+15 a run may take\n"},
        {"run ode.pde --until 1e30 --dump c.csv",
         "pdejit: ode.pde: dt = 1 to t = 1e+30 makes 1e+30 steps, more than the 1e+15 a run may take\n"},
        {"run inf.pde --dump c.csv",
         "pdejit: inf.pde: 10 steps of dt = 1e+308 end at t = inf: the end time must be finite\n"},
        {"run snap.pde --out refused --dump c.csv",
         "pdejit: snap.pde: output every = 1e-300 to t = 1 makes 1e+300 output times, more than the 1e+07 a run "
         "may have\n"},
        {"run snap.pde --out none --dump c.csv",
         "pdejit: snap.pde: output every = 1e-300 to t = 1 makes 1e+300 output times, more than the 1e+07 a run "
         "may have\n"},
        {"run ode.pde --steps 2e15 --dump c.csv",
         "pdejit: ode.pde: dt = 1 to t = 2e+15 makes 2e+15 steps, more than the 1e+15 a run may take\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *out;
        assert_int_equal(tu_pdejit(&out, "%s", cases[i].args), 2);
        assert_string_equal(out, cases[i].want);
        free(out);
        assert_false(exists("c.csv"));
        assert_false(exists("refused"));
    }
    free(a);
    free(b);
    free(c);
}

/* The dump's folder and the output folder are checked before the first step (this problem blows
 * up at step 7: exit 1 would mean it stepped); a reused --out loses the previous series' files,
 * and only those, saying so. */
static void outputs_checked_before_stepping(void **state)
{
    (void)state;
    char *p = write_file("blow.pde", "mesh grid(nx = 10)\nfield u = 2\neq dt(u) = u^2\n"
                                     "time dt = 0.1, until = 100, scheme = euler\noutput every = 10\n");
    char *f = write_file("plain", "not a folder\n");
    char *out;
    assert_int_equal(tu_pdejit(&out, "run blow.pde --out none --dump missing/x.csv"), 2);
    assert_string_equal(out, "pdejit: blow.pde: cannot write the dump missing/x.csv: No such file or directory\n");
    free(out);
    assert_int_equal(tu_pdejit(&out, "run blow.pde --out none --dump plain/x.csv"), 2);
    assert_string_equal(out, "pdejit: blow.pde: cannot write the dump plain/x.csv: Not a directory\n");
    free(out);
    assert_int_equal(tu_pdejit(&out, "run blow.pde --out plain/snaps"), 2);
    assert_string_equal(out, "pdejit: blow.pde: cannot create the output folder plain/snaps: Not a directory\n");
    free(out);
    if (geteuid() != 0) { /* root writes anywhere */
        assert_int_equal(sh(&out, "mkdir -p ro && chmod 555 ro && $PJ run blow.pde --out none --dump ro/x.csv; rc=$?; "
                                  "chmod 755 ro; exit $rc"), 2);
        assert_string_equal(out, "pdejit: blow.pde: cannot write the dump ro/x.csv: Permission denied\n");
        free(out);
    }
    assert_false(exists("plain/snaps"));
    /* a reused folder: the first series has 3 snapshots (csv, vti, png), the second 2 */
    char *o = write_file("o.pde", "mesh grid(nx = 4)\nfield u = x\neq dt(u) = 1\ntime dt = 0.25, until = 1\n"
                                  "output every = 0.5, format = csv vtk png\n");
    assert_int_equal(tu_pdejit(&out, "run o.pde --out s"), 0);
    free(out);
    assert_true(exists("s/snapshot_000002.vti") && exists("s/u_000002.png"));
    /* and what an MPI run or a mesh with listed faces writes (.pvti/.pvtr, pieces _pR.vti/.vtr, .vtr) */
    assert_int_equal(sh(&out, "touch s/notes.txt s/u_12.png s/snapshot_000001.csv.bak s/snapshot_000007.pvtr "
                              "s/snapshot_000007_p12.vtr s/snapshot_000007.vtr s/snapshot_000007.pvti s/snapshot_000007_p0.vti "
                              "s/snapshot_000007_q1.vtr s/snapshot_000007_p.vtr s/snapshot_000007.pvtr.bak s/snapshot_07.pvtr && "
                              "mkdir s/snapshot_000009.csv && $PJ run o.pde --out s --until 0.5"), 0);
    assert_string_equal(out, "pdejit: s: removed the 16 files of a previous series before writing this one\n");
    free(out);
    assert_false(exists("s/snapshot_000007.pvtr") || exists("s/snapshot_000007_p12.vtr") || exists("s/snapshot_000007.vtr") ||
                 exists("s/snapshot_000007.pvti") || exists("s/snapshot_000007_p0.vti"));
    assert_true(exists("s/snapshot_000007_q1.vtr") && exists("s/snapshot_000007_p.vtr") &&
                exists("s/snapshot_000007.pvtr.bak") && exists("s/snapshot_07.pvtr"));
    assert_false(exists("s/snapshot_000002.csv") || exists("s/snapshot_000002.vti") || exists("s/u_000002.png"));
    assert_true(exists("s/snapshot_000001.csv") && exists("s/u_000001.png") && exists("s/snapshots.pvd"));
    assert_true(exists("s/notes.txt") && exists("s/u_12.png") && exists("s/snapshot_000001.csv.bak") &&
                exists("s/snapshot_000009.csv"));
    char path[1024];
    snprintf(path, sizeof path, "%s/s/snapshots.csv", tu_dir);
    char *index = tu_read_file(path, NULL);
    assert_string_equal(index, "snapshot,t\n0,0\n1,0.5\n");
    free(index);
    free(o);
    free(f);
    free(p);
}

/* SIGINT and SIGTERM stop the run at a step boundary: a line says where, the status is 128 +
 * the signal, the snapshots written are whole, no temporary file is left and no dump is written
 * (the state is not the end's). The shell starts a background job with SIGINT ignored, so the
 * SIGINT case resets it (env --default-signal). */
static void signals_stop_at_a_step_boundary(void **state)
{
    (void)state;
    char *p = write_file("long.pde", "mesh grid(nx = 100000)\nfield u\neq dt(u) = 1\ntime dt = 0.001, until = 100000\n"
                                     "output every = 50000, format = csv vtk png\nmonitor every = 0.1, m = mean(u)\n");
    const char *sigs[] = {"INT", "TERM"};
    for (int i = 0; i < 2; i++) {
        char *out;
        /* the monitor line of a step after the first (--verbose, flushed) says the run is inside
           its loop, past the handlers and the first snapshot: no clock decides when to signal */
        int rc = sh(&out, "rm -rf sn sig.log; env --default-signal=INT $PJ run long.pde --out sn --dump end.csv "
                          "--verbose 2> sig.log & pid=$!; "
                          "until grep -q 'monitor t = .*, step [1-9]' sig.log || ! kill -0 $pid 2>/dev/null; do "
                          "sleep 0.05; done; kill -%s $pid; wait $pid; rc=$?; cat sig.log; ls -a sn; exit $rc", sigs[i]);
        if (rc != 130 + 13 * i) fprintf(stderr, "%s\n", out);
        assert_int_equal(rc, i ? 143 : 130);
        char want[64];
        snprintf(want, sizeof want, "pdejit: SIG%s: interrupted at step ", sigs[i]);
        const char *line = strstr(out, want);
        assert_non_null(line);
        long long step = 0;
        double t = 0;
        assert_int_equal(sscanf(line + strlen(want), "%lld, t = %lf", &step, &t), 2);
        assert_true(step > 0 && fabs(t - 0.001 * (double)step) < 1e-6);
        assert_non_null(strstr(line, "; the final state was not dumped\n"));
        assert_null(strstr(out, ".tmp."));
        assert_non_null(strstr(out, "snapshot_000000.vti\nsnapshots.csv\nsnapshots.pvd\nu_000000.png\n"));
        assert_false(exists("end.csv"));
        free(out);
    }
    free(p);
}

/* SIGTERM while the kernels are being compiled: the handler is in place from the start, so the
 * compilation finishes, the run ends before its first step with exit 143 and a line saying so,
 * nothing is written (no output folder), and the kernel that was loaded from the cache and on
 * trial (its marker ID.run, cache.h) is not taken for one that crashed the process: the next run
 * loads it without a warning. The handler used to be installed only after the compilation, so the
 * signal killed the process there and the next run set the healthy entry aside as crashed. The
 * marker says that the compilation is under way: no clock decides when to signal. */
static void signal_while_compiling_stops_cleanly(void **state)
{
    (void)state;
    char *w = write_file("warm.pde", "mesh grid(nx = 8)\nfield u = x\neq dt(u) = 0.01*lap(u)\ntime dt = 0.01, steps = 2\n");
    /* the same stage kernel, and a reduce kernel of 600 monitors: seconds of LLVM */
    size_t cap = 64 * 1024, k = 0;
    char *text = malloc(cap);
    k += (size_t)snprintf(text + k, cap - k, "mesh grid(nx = 8)\nfield u = x\neq dt(u) = 0.01*lap(u)\n"
                                             "time dt = 0.01, steps = 2\nmonitor every = 0.01");
    for (int i = 0; i < 600; i++) k += (size_t)snprintf(text + k, cap - k, ", m%d = integral(u*u + %d)", i, i);
    snprintf(text + k, cap - k, "\n");
    char *p = write_file("slowcompile.pde", text);
    free(text);
    char *out;
    assert_int_equal(sh(&out, "rm -rf cache && $PJ run warm.pde --out none"), 0);
    free(out);
    int rc = sh(&out, "rm -rf sc; $PJ run slowcompile.pde --out sc 2> sc.log & pid=$!; "
                      "until ls cache/*/*.run >/dev/null 2>&1 || ! kill -0 $pid 2>/dev/null; do sleep 0.01; done; "
                      "kill -TERM $pid; wait $pid; rc=$?; cat sc.log; ls -d sc 2>&1; exit $rc");
    if (rc != 143) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 143);
    assert_string_equal(out, "pdejit: SIGTERM: stopped before the first step; nothing was written\n"
                             "ls: cannot access 'sc': No such file or directory\n");
    free(out);
    assert_int_equal(sh(&out, "ls cache/*/ | grep -c '[.]run$\\|[.]crash$'"), 1); /* grep -c 0: status 1 */
    assert_string_equal(out, "0\n");
    free(out);
    assert_int_equal(sh(&out, "$PJ run warm.pde --out none --verbose 2>&1 | grep -v ' steps to \\|^pdejit: compile: \\|^pdejit: stepping: ' | "
                              "sed 's/ in [0-9.]* ms$//'"), 0);
    assert_string_equal(out, "pdejit: kernel stage1: loaded from the cache\n");
    free(out);
    free(p);
    free(w);
}

/* --verbose says where the time of making the kernels went (pj_sim_compile_times): one line after
 * the kernels' with the front end, the kernel IR passes, LLVM IR emission, the optimisation
 * pipeline, code generation, loading into ORC and the cache, and the kernels and wall time. Its
 * format, not its values: a cold run (both kernels of rk2 compiled, every figure a number), then
 * the same problem from the cache (0 compiled). */
static void verbose_says_where_compile_time_goes(void **state)
{
    (void)state;
    char *p = write_file("split.pde", "mesh grid(nx = 8, ny = 8)\nfield u = x*y\neq dt(u) = 0.01*lap(u) - u^3\n"
                                      "periodic x, y\ntime dt = 0.01, steps = 2, scheme = rk2\n");
    const char *cmd = "$PJ run split.pde --out none --verbose 2>&1 | grep -v ' steps to \\|^pdejit: stepping: ' | "
                      "sed 's/[0-9][0-9]*[.][0-9][0-9]* ms/N ms/g'";
#define COMPILE_LINE(n) "pdejit: compile: front end N ms, kernel IR N ms, LLVM IR N ms, optimisation N ms, " \
                             "code generation N ms, ORC load N ms, cache N ms; 2 kernels (" n " compiled) in N ms\n"
    char *out;
    assert_int_equal(sh(&out, "rm -rf cache && %s", cmd), 0);
    assert_string_equal(out, "pdejit: kernel stage1: compiled in N ms\npdejit: kernel stage2: compiled in N ms\n"
                             COMPILE_LINE("2"));
    free(out);
    assert_int_equal(sh(&out, "%s", cmd), 0);
    assert_string_equal(out, "pdejit: kernel stage1: loaded from the cache in N ms\n"
                             "pdejit: kernel stage2: loaded from the cache in N ms\n" COMPILE_LINE("0"));
    free(out);
#undef COMPILE_LINE
    free(p);
}

/* 100 000 monitors or fields in a problem file: a clear refusal or a run, never a crash or a
 * compile for hours. Monitors: the interpreter takes them (a monitor.csv of 100 002 columns); the
 * cpu back end, whose reduction kernel compiles in time growing as their square (1000: 10 s,
 * 2000: 42 s, 100 000: hours with no word), refuses more than 1000 before compiling anything.
 * Fields: 100 000 compile and check. (100 000 params still take 25 s in the front end, whose param
 * evaluation is quadratic: left to compiler/kir.c, see issue 25.) */
static void limits_by_the_hundred_thousand(void **state)
{
    (void)state;
    const int n = 100000;
    size_t cap = (size_t)n * 40 + 256, k = 0;
    char *text = malloc(cap);
    k += (size_t)snprintf(text + k, cap - k, "mesh grid(nx = 8)\nfield u = x\neq dt(u) = 0.01*lap(u)\n"
                                             "time dt = 0.01, steps = 2\nmonitor every = 0.01");
    for (int i = 0; i < n; i++) k += (size_t)snprintf(text + k, cap - k, ", m%d = integral(u)", i);
    snprintf(text + k, cap - k, "\n");
    char *p = write_file("mons.pde", text);
    char *out;
    assert_int_equal(sh(&out, "$PJ run mons.pde --quiet --out mons_cpu 2>&1; rc=$?; ls -d mons_cpu 2>/dev/null; exit $rc"), 2);
    assert_string_equal(out, "pdejit: mons.pde: 100000 monitors, more than the 10000 the cpu back end compiles (about "
                             "3 s a thousand); take fewer, or run them with --backend interp\n");
    free(out);
    assert_int_equal(sh(&out, "$PJ run mons.pde --quiet --backend interp --out mons_interp 2>&1 && "
                              "head -1 mons_interp/monitor.csv | tr ',' '\\n' | wc -l && grep -c . mons_interp/monitor.csv && "
                              "head -1 mons_interp/monitor.csv | cut -d, -f1-4 && tail -1 mons_interp/monitor.csv | cut -d, -f1-2"), 0);
    assert_string_equal(out, "100002\n4\nt,step,m0,m1\n0.02,2\n");
    free(out);
    free(p);
    k = (size_t)snprintf(text, cap, "mesh grid(nx = 8)\n");
    for (int i = 0; i < n; i++) k += (size_t)snprintf(text + k, cap - k, "field u%d = x + %d\n", i, i);
    snprintf(text + k, cap - k, "eq dt(u0) = 0.01*lap(u0)\ntime dt = 0.01, steps = 2\n");
    p = write_file("fields.pde", text);
    assert_int_equal(sh(&out, "$PJ check fields.pde 2>&1"), 0);
    assert_string_equal(out, "");
    free(out);
    free(p);
    free(text);
}

/* pdejit bench refuses, before measuring anything, with a message and exit 2: a plot it cannot
 * write (it measured for minutes, then said so and exited 0), sizes that are not whole numbers
 * from 1 (exit 2 without a word), whose cells overflow (UBSan: signed overflow in the size
 * arithmetic), more than 16 (silently dropped) or none. */
static void bench_refusals(void **state)
{
    (void)state;
    char *p = write_file("b.pde", "mesh grid(nx = 8, ny = 8)\nfield u = x\neq dt(u) = 0.01*lap(u)\ntime dt = 0.01\n");
    const char *args[] = {"--plot /nonexistent-pdejit/x.png", "--sizes 0", "--sizes 2.5", "--sizes 4e7",
                          "--sizes ,", "--sizes 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"};
    const char *want[] = {
        "pdejit bench: cannot write the plot /nonexistent-pdejit/x.png: No such file or directory\n",
        "pdejit bench: --sizes takes whole numbers of cells per axis from 1 on, at most 1e+15 values (cells times "
        "fields) per size, not '0'\n",
        "pdejit bench: --sizes takes whole numbers of cells per axis from 1 on, at most 1e+15 values (cells times "
        "fields) per size, not '2.5'\n",
        "pdejit bench: --sizes takes whole numbers of cells per axis from 1 on, at most 1e+15 values (cells times "
        "fields) per size, not '4e7'\n",
        "pdejit bench: --sizes names no size\n",
        "pdejit bench: --sizes takes at most 16 sizes\n",
    };
    for (int i = 0; i < 6; i++) {
        char *out;
        assert_int_equal(sh(&out, "$PJ bench b.pde %s >/dev/null 2>bench.err; rc=$?; cat bench.err; exit $rc", args[i]), 2);
        assert_string_equal(out, want[i]);
        free(out);
    }
    free(p);
}

/* --watch reads only regular files of at most 64 MiB, without blocking: a named pipe, a link to
 * /dev/zero and a 65 MiB file in place of the watched file are each reported once and the run goes
 * on; an edit that keeps the size and the mtime is seen (content hash) and swapped in; and the
 * run still ends (here on SIGTERM). */
static void watch_reads_only_regular_files(void **state)
{
    (void)state;
    char *p = write_file("wr.pde", "mesh grid(nx = 100000)\nfield u\neq dt(u) = 1\ntime dt = 0.001, until = 100000\n");
    char *out;
    int rc = sh(&out, "cp -p wr.pde wr.keep; $PJ run wr.pde --watch --out none --dump wr.csv 2> wr.log & pid=$!; "
                      "waitfor() { n=0; until [ $(grep -c \"$1\" wr.log) -ge $2 ] || [ $n -ge 1200 ]; do sleep 0.05; "
                      "n=$((n+1)); done; }; "
                      "waitfor watching 1; rm wr.pde; mkfifo wr.pde; waitfor 'not a regular file' 1; "
                      "rm wr.pde; ln -s /dev/zero wr.pde; waitfor 'not a regular file' 2; "
                      "rm wr.pde; truncate -s 65M wr.pde; waitfor 'more than the' 1; "
                      "rm wr.pde; cp -p wr.keep wr.pde; waitfor 'swapped in the new' 1; "
                      "sed 's/= 1$/= 3/' wr.keep > wr.new; touch -r wr.keep wr.new; mv wr.new wr.pde; "
                      "waitfor 'swapped in the new' 2; kill -TERM $pid; wait $pid; rc=$?; cat wr.log; exit $rc");
    if (rc != 143) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 143);
    assert_non_null(strstr(out, ": wr.pde changed but it is not a regular file; still running the previous definition\n"));
    assert_non_null(strstr(out, ": wr.pde changed but it is 68157440 bytes, more than the 67108864 (64 MiB) --watch reads; "
                                "still running the previous definition\n"));
    const char *first = strstr(out, ": wr.pde changed: swapped in the new definition");
    assert_non_null(first);
    assert_non_null(strstr(first + 1, ": wr.pde changed: swapped in the new definition"));
    assert_non_null(strstr(out, "pdejit: SIGTERM: interrupted at step "));
    int said = 0;
    for (const char *c = out; (c = strstr(c, "not a regular file")); c++) said++;
    assert_int_equal(said, 2); /* once per change, not once per look */
    free(out);
    free(p);
}

static void nan_stops_the_run(void **state)
{
    (void)state;
    char *p = write_file("blow.pde", "mesh grid(nx = 10)\nfield u = x > 0.5 ? 2 : 1\neq dt(u) = u^2\n"
                                     "time dt = 0.1, until = 100, scheme = euler\n");
    for (int be = 0; be < 2; be++) {
        char *out;
        assert_int_equal(tu_pdejit(&out, "run blow.pde --backend %s", be ? "cpu" : "interp"), 1);
        /* u' = u^2 from u = 2 blows up first in cells 5..9: the report names the first, x = 0.55 */
        assert_non_null(strstr(out, "pdejit: run failed: non-finite value (inf) in field u at cell (5), x = 0.55, at step "));
        int step;
        double t;
        const char *at = strstr(out, "at step ");
        assert_int_equal(sscanf(at, "at step %d, t = %lf", &step, &t), 2);
        assert_true(step > 5 && step < 100);
        assert_true(fabs(t - 0.1 * step) < 1e-9);
        free(out);
    }
    free(p);
}

/* Finite values at the top of the range are not mistaken for infinities by the kernels'
 * non-finite test (a row of them sums to infinity: a test by sums would stop here), and the run
 * goes on to its end. */
static void huge_finite_values_run_on(void **state)
{
    (void)state;
    for (int dim = 1; dim <= 2; dim++) {
        char *p = write_file("huge.pde", dim == 1 ? "mesh grid(nx = 300)\nfield u = 1e308\neq dt(u) = 0*u\n"
                                                   "time dt = 0.1, steps = 4\n"
                                                 : "mesh grid(nx = 300, ny = 3)\nfield u = 1e308\neq dt(u) = 0*u\n"
                                                   "time dt = 0.1, steps = 4\n");
        for (int be = 0; be < 2; be++) {
            char *out;
            assert_int_equal(tu_pdejit(&out, "run huge.pde --backend %s --quiet --out none --dump /dev/stdout", be ? "cpu" : "interp"), 0);
            assert_non_null(strstr(out, "1e+308"));
            assert_null(strstr(out, "non-finite"));
            free(out);
        }
        free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(help_and_usage),
        cmocka_unit_test(version_and_help_command),
        cmocka_unit_test(every_option_is_in_the_help),
        cmocka_unit_test(one_list_of_schemes),
        cmocka_unit_test(check_is_silent_or_points),
        cmocka_unit_test(dump_format),
        cmocka_unit_test(time_options),
        cmocka_unit_test(snapshots_at_output_times),
        cmocka_unit_test(nan_stops_the_run),
        cmocka_unit_test(huge_finite_values_run_on),
        cmocka_unit_test(watch_swaps_at_a_step),
        cmocka_unit_test(watch_reports_a_swap_the_run_ends_after),
        cmocka_unit_test(memory_is_checked_before_allocating),
        cmocka_unit_test(step_counts_that_overflow_are_refused),
        cmocka_unit_test(outputs_checked_before_stepping),
        cmocka_unit_test(signals_stop_at_a_step_boundary),
        cmocka_unit_test(signal_while_compiling_stops_cleanly),
        cmocka_unit_test(verbose_says_where_compile_time_goes),
        cmocka_unit_test(limits_by_the_hundred_thousand),
        cmocka_unit_test(bench_refusals),
        cmocka_unit_test(watch_reads_only_regular_files),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
