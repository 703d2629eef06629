/* parse.c — parse_program(): runs the scanner and parser of one file (see ast.h). */
#include "parse_ctx.h"
#include "parser.tab.h"
#define YYSTYPE PJYYSTYPE
#define YYLTYPE PJYYLTYPE
#include "lexer.yy.h"

ast_program *parse_program(arena *a, diag *d, const char *source, size_t len)
{
    parse_ctx ctx = {0};
    ctx.arena = a;
    ctx.diag = d;
    ctx.source = source;
    ctx.len = len;
    ctx.line = 1;
    ctx.col = 1;
    yyscan_t scanner;
    if (pjyylex_init_extra(&ctx, &scanner)) return NULL;
    YY_BUFFER_STATE buf = pjyy_scan_bytes(source, (int)len, scanner);
    pjyyparse(&ctx, scanner);
    pjyy_delete_buffer(buf, scanner);
    pjyylex_destroy(scanner);
    ast_program *p = arena_alloc(a, sizeof *p);
    p->stmts = ctx.stmts.items;
    p->n_stmts = ctx.stmts.len;
    return p;
}
