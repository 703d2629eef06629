/* pdejit.c — the `pdejit` command: run, check, emit, bench, cache (LANGUAGE.md §6).
 *
 * Exit status: 0 success; 1 a run that failed (NaN found, device error); 2 bad usage or a
 * bad problem file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "program.h"
#include "scheme.h"

static char *read_file(const char *path, size_t *len, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, r;
    char *buf = malloc(cap + 1);
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            if (cap > ((size_t)1 << 30)) {
                snprintf(err, err_len, "%s: file is larger than 1 GiB", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
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

/* Compiles FILE; prints its diagnostics to stderr. NULL on error (status 2). */
static pj_program *load_problem(const char *path, const pj_compile_options *opt)
{
    char err[512];
    size_t len;
    char *text = read_file(path, &len, err, sizeof err);
    if (!text) {
        fprintf(stderr, "pdejit: %s\n", err);
        return NULL;
    }
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
    "usage: pdejit check FILE\n"
    "Parses and checks FILE. Prints nothing and exits 0 when it is sound; otherwise prints\n"
    "every error as FILE:LINE:COL: error: MESSAGE with the line and a caret, and exits 2.\n";

static const char *usage_emit =
    "usage: pdejit emit FILE (--ir | --llvm | --cuda) [--scheme S] [--precision double|single]\n"
    "Prints what the compiler generates for every kernel of FILE:\n"
    "  --ir     the kernel IR (the typed DAG every back end consumes) with its canonical hash\n"
    "  --llvm   the optimised LLVM IR of the CPU back end\n"
    "  --cuda   the CUDA C of the GPU back end\n";

static int wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

static int cmd_check(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(usage_check, stdout); return 0; }
    if (argc != 1) { fputs(usage_check, stderr); return 2; }
    pj_program *p = load_problem(argv[0], NULL);
    if (!p) return 2;
    program_free(p);
    return 0;
}

static int cmd_emit(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(usage_emit, stdout); return 0; }
    const char *file = NULL, *what = NULL;
    pj_compile_options opt = {0};
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--ir") || !strcmp(argv[i], "--llvm") || !strcmp(argv[i], "--cuda")) what = argv[i] + 2;
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
    pj_program *p = load_problem(file, &opt);
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
        for (int s = 0; s < p->n_stages; s++) {
            printf("# stage %d reads slot %d at t + %g dt\n", s + 1, p->stages[s].read_slot, p->stages[s].t_frac);
            kir_print(p->stages[s].kernel, stdout, fn, pn);
        }
    } else {
        fprintf(stderr, "pdejit emit: --%s is not built yet\n", what);
        program_free(p);
        return 2;
    }
    program_free(p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fputs(usage_main, stderr); return 2; }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) { fputs(usage_main, stdout); return 0; }
    if (!strcmp(cmd, "check")) return cmd_check(argc - 2, argv + 2);
    if (!strcmp(cmd, "emit")) return cmd_emit(argc - 2, argv + 2);
    fprintf(stderr, "pdejit: unknown command '%s'\n%s", cmd, usage_main);
    return 2;
}
