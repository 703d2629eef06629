/* cli.h — what the files of the `pdejit` command share. */
#ifndef PJ_CLI_H
#define PJ_CLI_H
#include "pdejit.h"
#include "program.h"

/* Reads and compiles FILE, printing its diagnostics to stderr; NULL on error (exit 2). */
pj_program *cli_load_problem(const char *path, const pj_compile_options *opt);
/* --verbose: where the time of making sim's kernels went (pj_sim_compile_times), one line to stderr. */
void cli_print_compile_times(const pj_sim *sim);
/* The same through the public API (`pdejit run`), with the scheme of that name when not NULL. */
pj_problem *cli_compile(const char *path, const char *scheme);
/* FILE's text (NUL-terminated, *len bytes; free it), or NULL after saying why on stderr. */
char *cli_read_file(const char *path, size_t *len);
/* Whether an argument is --help or -h. */
int cli_wants_help(int argc, char **argv);
/* A finite number, or -1 after printing what is wrong with it. */
int cli_parse_double(const char *opt, const char *text, double *out);

#endif
