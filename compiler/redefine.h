/* redefine.h — later definitions replace earlier ones (see redefine.c). */
#ifndef PJ_REDEFINE_H
#define PJ_REDEFINE_H
#include "ast.h"

/* Drops from ast what its statements from first_line on define again; reports (and returns -1
 * for) statements there that cannot be redefined in a running simulation. */
int redefine_apply(arena *a, ast_program *ast, int first_line, diag *d);

#endif
