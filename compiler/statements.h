/* statements.h — the settings statements' readers (statements.c), for frontend.c. */
#ifndef PJ_STATEMENTS_H
#define PJ_STATEMENTS_H
#include "sema.h"
#include "mesh.h"

const ast_kwarg *stmt_kwarg_named(const ast_stmt *st, const char *name);
int stmt_check_kwargs(compiler *C, const ast_stmt *st, const char *what, const char *const *keys, int n);
int stmt_const_setting(compiler *C, const ast_kwarg *kw, double *out);
void read_time(compiler *C, pj_program *p, const pj_compile_options *opt);
void read_solver(compiler *C, pj_program *p);
void read_output(compiler *C, pj_program *p);

#endif
