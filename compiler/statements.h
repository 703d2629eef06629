/* statements.h — the settings statements' readers (statements.c), for frontend.c. */
#ifndef PJ_STATEMENTS_H
#define PJ_STATEMENTS_H
#include "sema.h"
#include "mesh.h"

/* A statement that a problem has at most once (mesh, time, solver, stop), read in a loop over the
 * statements: 1 when st is the first of its kind (now *first), 0 when st is of another kind or a
 * second one, refused as `a second WHAT (the first is at line N)`. */
int stmt_single(compiler *C, const ast_stmt *st, ast_stmt_kind kind, const char *what, const ast_stmt **first);
const ast_kwarg *stmt_kwarg_named(const ast_stmt *st, const char *name);
int stmt_check_kwargs(compiler *C, const ast_stmt *st, const char *what, const char *const *keys, int n);
int stmt_const_setting(compiler *C, const ast_kwarg *kw, double *out);
void read_time(compiler *C, pj_program *p, const pj_compile_options *opt);
void read_solver(compiler *C, pj_program *p);
void read_output(compiler *C, pj_program *p);

#endif
