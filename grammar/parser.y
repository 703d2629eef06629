/* parser.y — the grammar of the .pde language (LANGUAGE.md §1-5), a pure reentrant bison
 * parser with locations. It builds the AST (ast.h) and nothing else: names, contexts and
 * meaning are checked by sema.c. Errors recover at the end of the statement, so one run
 * reports every broken statement. */
%define api.pure full
%define api.prefix {pjyy}
%define parse.error verbose
%locations
%parse-param {parse_ctx *ctx} {void *scanner}
%lex-param {void *scanner}

%code requires {
#include "parse_ctx.h"
}

%code {
#include <stdio.h>
#include <string.h>
int pjyylex(PJYYSTYPE *lval, PJYYLTYPE *lloc, void *scanner);
static void pjyyerror(PJYYLTYPE *loc, parse_ctx *ctx, void *scanner, const char *msg);
#define L(loc) ((pj_loc){(loc).first_line, (loc).first_column})
#define YYMAXDEPTH 5000

static ast_expr *node(parse_ctx *c, ast_kind kind, pj_loc loc)
{
    ast_expr *e = arena_alloc(c->arena, sizeof *e);
    c->n_nodes++;
    e->kind = kind;
    e->loc = loc;
    e->depth = 1;
    return e;
}
/* Raises e's nesting to one more than child's; a statement whose expression nests deeper than
 * AST_MAX_DEPTH gets one error, at the start of the first subexpression found too deep. */
static void deepen(parse_ctx *c, ast_expr *e, ast_expr *child)
{
    if (child && child->depth + 1 > e->depth) e->depth = child->depth + 1;
    if (e->depth > AST_MAX_DEPTH && !c->depth_reported) {
        c->depth_reported = 1;
        diag_error(c->diag, e->loc, "expression is nested too deeply (more than %d levels, from here)", AST_MAX_DEPTH);
    }
}
static ast_expr *unary(parse_ctx *c, int op, pj_loc loc, ast_expr *a)
{
    ast_expr *e = node(c, AST_UNARY, loc);
    e->op = op;
    e->a = a;
    deepen(c, e, a);
    return e;
}
/* Appends `op term` to the chain e. */
static void chain_push(parse_ctx *c, ast_expr *e, int op, ast_expr *term)
{
    if (e->n_args == e->cap_args) {
        int cap = e->cap_args ? 2 * e->cap_args : 4;
        e->args = arena_grow(c->arena, e->args, sizeof *e->args * (size_t)e->cap_args, sizeof *e->args * (size_t)cap);
        e->ops = arena_grow(c->arena, e->ops, sizeof *e->ops * (size_t)e->cap_args, sizeof *e->ops * (size_t)cap);
        e->cap_args = cap;
    }
    e->args[e->n_args] = term;
    e->ops[e->n_args] = op;
    e->n_args++;
    deepen(c, e, term);
}
/* `a OP b`. Every operator has a left operand, and a left operand that is already a chain
 * (`a + b` in `a + b - c`, `(a*b)` in `(a*b)^c`) is extended in place: evaluating a chain left
 * to right is exactly the left-leaning tree bison would build, but a sum of a million terms stays
 * one level deep, so no pass after the parser recurses along its length. */
static ast_expr *binary(parse_ctx *c, int op, ast_expr *a, ast_expr *b, pj_loc oploc)
{
    ast_expr *e = a;
    if (!a || a->kind != AST_BINARY) {
        e = node(c, AST_BINARY, a ? a->loc : oploc);
        chain_push(c, e, -1, a);
    }
    chain_push(c, e, op, b);
    return e;
}
static ast_expr *call(parse_ctx *c, ast_kind kind, const char *name, pj_loc loc, expr_vec args)
{
    ast_expr *e = node(c, kind, loc);
    e->name = name;
    e->args = args.items;
    e->n_args = args.len;
    for (int i = 0; i < args.len; i++) deepen(c, e, args.items[i]);
    return e;
}
static ast_stmt *stmt(parse_ctx *c, ast_stmt_kind kind, pj_loc loc)
{
    ast_stmt *s = arena_alloc(c->arena, sizeof *s);
    s->kind = kind;
    s->loc = loc;
    c->depth_reported = 0;
    return s;
}
/* A value without a name (`at = 0, 1, 5`: the 1 and the 5) joins the setting before it, when
 * that one has a value: returns 0. A named setting returns 1 (the caller keeps it). */
static int kwarg_named(parse_ctx *c, kwarg_vec *list, ast_kwarg *kw)
{
    ast_kwarg *prev = list && list->len ? &list->items[list->len - 1] : NULL;
    /* a bare name after `at = ...` is one more time (a const), not a setting of its own */
    if (kw->name && !kw->value && !kw->n_words && prev && prev->value && !strcmp(prev->name, "at")) {
        kw->value = node(c, AST_NAME, kw->loc);
        kw->value->name = kw->name;
        kw->name = NULL;
    }
    if (kw->name) return 1;
    if (!prev || !prev->value) {
        diag_error(c->diag, kw->loc, "a value without a name: settings read NAME = VALUE");
        return 0;
    }
    prev->more = arena_grow(c->arena, prev->more, sizeof *prev->more * (size_t)prev->n_more,
                            sizeof *prev->more * (size_t)(prev->n_more + 1));
    prev->more[prev->n_more++] = kw->value;
    return 0;
}
/* `eq 0 = EXPR`: an algebraic equation; its left side must be 0. */
static ast_stmt *algebraic(parse_ctx *c, pj_loc loc, double lhs, pj_loc lhs_loc, ast_expr *rhs)
{
    ast_stmt *s = stmt(c, ST_EQ, loc);
    s->algebraic = 1;
    s->eq_op_loc = lhs_loc;
    s->rhs = rhs;
    if (lhs != 0)
        diag_error(c->diag, lhs_loc, "an equation reads eq dt(u) = ..., or eq 0 = ... for an algebraic one: "
                   "move %g to the right (eq 0 = EXPR - %g)", lhs, lhs);
    return s;
}
/* The hint for a statement that starts with `word`, no keyword: an equation without eq, a
 * misspelt keyword, or the list of keywords. */
static const char *statement_word_hint(const char *word, char *buf, size_t n)
{
    static const char *const keywords[] = {"mesh",     "param", "const",  "field",  "func",   "flux",    "eq",  "on",
                                           "periodic", "time",  "output", "steady", "solver", "monitor", "stop", "energy"};
    if (!strcmp(word, "dt")) return "an equation starts with eq: eq dt(u) = ...";
    const char *near = diag_closest(word, keywords, (int)(sizeof keywords / sizeof *keywords));
    if (!near) return "a statement starts with mesh, param, const, field, func, flux, eq, on, periodic, time, output, "
                      "steady, solver, monitor, stop or energy";
    snprintf(buf, n, "did you mean '%s'?", near);
    return buf;
}
/* `energy NAME = DENSITY` (contract section 9). `energy` is no keyword (a monitor or a param may be
 * called energy): a statement that starts with two names is one, and any other first name an error. */
static ast_stmt *energy_stmt(parse_ctx *c, const char *word, pj_loc loc, const char *name, pj_loc name_loc,
                             ast_expr *density)
{
    if (strcmp(word, "energy") || !name) {
        char buf[128];
        diag_error(c->diag, loc, "unexpected name '%s' at the start of a statement", word);
        parse_hint(c, "%s", statement_word_hint(word, buf, sizeof buf));
        return NULL;
    }
    ast_stmt *s = stmt(c, ST_ENERGY, loc);
    s->name = name;
    s->name_loc = name_loc;
    s->rhs = density;
    return s;
}
static void set_kwargs(ast_stmt *s, kwarg_vec v) { s->kwargs = v.items; s->n_kwargs = v.len; }
static void set_words(ast_stmt *s, word_vec v) { s->words = v.items; s->n_words = v.len; }
}

%union {
    double num;
    char *str;
    ast_expr *expr;
    ast_stmt *stmt;
    expr_vec exprs;
    kwarg_vec kwargs;
    ast_kwarg kwarg;
    word_vec words;
}

%token END 0 "end of file"
%token NEWLINE "end of line"
%token <num> NUMBER "number"
%token <str> NAME "name"
%token MESH "mesh" PARAM "param" CONST "const" FIELD "field" FUNC "func" FLUX "flux"
%token EQ "eq" ON "on" PERIODIC "periodic" TIME "time" OUTPUT "output" STEADY "steady" SOLVER "solver"
%token MONITOR "monitor" STOP "stop"
%token FOR "for"        /* only after `eq 0 = EXPR` (the lexer's stmt_algebraic): a name elsewhere */
%token LE "<=" GE ">=" EQEQ "==" NE "!=" AND "&&" OR "||"

%type <expr> expr
%type <exprs> args args_opt
%type <kwargs> kwargs kwargs_opt
%type <kwarg> kwarg kwarg_value
%type <words> names names_opt
%type <stmt> stmt

%right '?' ':'
%left OR
%left AND
%left EQEQ NE
%left '<' LE '>' GE
%left '+' '-'
%left '*' '/'
%precedence UNARY
%right '^'

%%

program
    : %empty
    | program line
    ;

line
    : NEWLINE
    | stmt NEWLINE          { if ($1) vec_push(ctx->arena, &ctx->stmts, $1); }
    | error NEWLINE         { yyerrok; }
    ;

stmt
    : MESH NAME '(' kwargs_opt ')'  { $$ = stmt(ctx, ST_MESH, L(@1)); $$->name = $2; $$->name_loc = L(@2); set_kwargs($$, $4); }
    | PARAM kwargs          { $$ = stmt(ctx, ST_PARAM, L(@1)); set_kwargs($$, $2); }
    | CONST kwargs          { $$ = stmt(ctx, ST_CONST, L(@1)); set_kwargs($$, $2); }
    | FIELD kwargs          { $$ = stmt(ctx, ST_FIELD, L(@1)); set_kwargs($$, $2); }
    | FUNC NAME '(' names_opt ')' '=' expr
                            { $$ = stmt(ctx, ST_FUNC, L(@1)); $$->name = $2; $$->name_loc = L(@2); set_words($$, $4); $$->rhs = $7; }
    | FLUX NAME '(' names_opt ')' '=' expr
                            { $$ = stmt(ctx, ST_FLUX, L(@1)); $$->name = $2; $$->name_loc = L(@2); set_words($$, $4); $$->rhs = $7; }
    | EQ NAME '(' NAME ')' '=' expr
                            { $$ = stmt(ctx, ST_EQ, L(@1)); $$->eq_op = $2; $$->eq_op_loc = L(@2); $$->name = $4; $$->name_loc = L(@4); $$->rhs = $7; }
    | EQ NUMBER '=' expr    { $$ = algebraic(ctx, L(@1), $2, L(@2), $4); }
    | EQ NUMBER '=' expr FOR NAME
                            { $$ = algebraic(ctx, L(@1), $2, L(@2), $4); $$->name = $6; $$->name_loc = L(@6); }
    | EQ NAME '(' NAME '[' args ']' ')' '=' expr
                            { /* eq dt(eta[i]) = ...: one equation per member (compiler/arrays.c) */
                              $$ = stmt(ctx, ST_EQ, L(@1)); $$->eq_op = $2; $$->eq_op_loc = L(@2); $$->name = $4; $$->name_loc = L(@4);
                              $$->member = call(ctx, AST_INDEX, $4, L(@4), $6); $$->rhs = $10; }
    | ON names ':' expr '=' expr
                            { $$ = stmt(ctx, ST_ON, L(@1)); set_words($$, $2); $$->lhs = $4; $$->rhs = $6; }
    | ON names ':' expr '=' expr ',' expr '=' expr
                            { $$ = stmt(ctx, ST_ON, L(@1)); set_words($$, $2); $$->lhs = $4; $$->rhs = $6;
                              $$->lhs2 = $8; $$->rhs2 = $10; }
    | PERIODIC names        { $$ = stmt(ctx, ST_PERIODIC, L(@1)); set_words($$, $2); }
    | TIME kwargs           { $$ = stmt(ctx, ST_TIME, L(@1)); set_kwargs($$, $2); }
    | OUTPUT kwargs         { $$ = stmt(ctx, ST_OUTPUT, L(@1)); set_kwargs($$, $2); }
    | STEADY                { $$ = stmt(ctx, ST_STEADY, L(@1)); }
    | SOLVER kwargs         { $$ = stmt(ctx, ST_SOLVER, L(@1)); set_kwargs($$, $2); }
    | MONITOR kwargs        { $$ = stmt(ctx, ST_MONITOR, L(@1)); set_kwargs($$, $2); }
    | STOP NAME expr        { $$ = stmt(ctx, ST_STOP, L(@1)); $$->name = $2; $$->name_loc = L(@2); $$->rhs = $3; }
    | NAME NAME '=' expr    { $$ = energy_stmt(ctx, $1, L(@1), $2, L(@2), $4); }
    | NAME '=' expr         { $$ = energy_stmt(ctx, $1, L(@1), NULL, L(@1), $3); }
    ;

kwargs_opt
    : %empty                { $$ = (kwarg_vec){0}; }
    | kwargs
    ;

kwargs
    : kwarg                 { $$ = (kwarg_vec){0}; if (kwarg_named(ctx, NULL, &$1)) vec_push(ctx->arena, &$$, $1); }
    | kwargs ',' kwarg      { $$ = $1; if (kwarg_named(ctx, &$$, &$3)) vec_push(ctx->arena, &$$, $3); }
    ;

kwarg
    : expr                  {
                              $$ = (ast_kwarg){0};
                              if ($1->kind == AST_NAME) { $$.name = $1->name; $$.loc = $1->loc; }
                              else if ($1->kind == AST_INDEX) { $$.name = $1->name; $$.loc = $1->loc; $$.array = $1; } /* field eta[N] */
                              else { $$.value = $1; $$.loc = $1->loc; } /* a value without a name */
                            }
    | kwarg_value
    ;

kwarg_value
    : NAME '=' expr         { $$ = (ast_kwarg){0}; $$.name = $1; $$.loc = L(@1); $$.value = $3; }
    | NAME '[' args ']' '=' expr
                            { /* field eta[N] = init: an array of fields (compiler/arrays.c) */
                              $$ = (ast_kwarg){0}; $$.name = $1; $$.loc = L(@1); $$.value = $6;
                              $$.array = call(ctx, AST_INDEX, $1, L(@1), $3); }
    | kwarg_value NAME      {
                              $$ = $1;
                              word_vec w = {$$.words, $$.n_words, $$.n_words};
                              vec_push(ctx->arena, &w, ((ast_word){$2, L(@2)}));
                              $$.words = w.items;
                              $$.n_words = w.len;
                            }
    ;

names_opt
    : %empty                { $$ = (word_vec){0}; }
    | names
    ;

names
    : NAME                  { $$ = (word_vec){0}; vec_push(ctx->arena, &$$, ((ast_word){$1, L(@1)})); }
    | names ',' NAME        { $$ = $1; vec_push(ctx->arena, &$$, ((ast_word){$3, L(@3)})); }
    ;

args_opt
    : %empty                { $$ = (expr_vec){0}; }
    | args
    ;

args
    : expr                  { $$ = (expr_vec){0}; vec_push(ctx->arena, &$$, $1); }
    | args ',' expr         { $$ = $1; vec_push(ctx->arena, &$$, $3); }
    ;

expr
    : NUMBER                { $$ = node(ctx, AST_NUM, L(@1)); $$->value = $1; }
    | NAME                  { $$ = node(ctx, AST_NAME, L(@1)); $$->name = $1; }
    | NAME '(' args_opt ')' { $$ = call(ctx, AST_CALL, $1, L(@1), $3); }
    | NAME '[' args ']'     { $$ = call(ctx, AST_INDEX, $1, L(@1), $3); }
    | NAME '[' args ']' '[' args ']'
                            { /* eta[k][1, 0]: a neighbour of an array's member (compiler/arrays.c) */
                              $$ = call(ctx, AST_INDEX, $1, L(@1), $6);
                              $$->a = $3.items[0];
                              deepen(ctx, $$, $$->a);
                              if ($3.len != 1)
                                  diag_error(ctx->diag, L(@1), "%s[k][...]: one member k, not %d indices", $1, $3.len); }
    | '[' args ']'          { $$ = call(ctx, AST_CALL, "[]", L(@1), $2); } /* mesh widths (compiler/mesh.c) */
    | '(' expr ')'          { $$ = $2; }
    | '-' expr %prec UNARY  { $$ = unary(ctx, '-', L(@1), $2); }
    | '+' expr %prec UNARY  { $$ = unary(ctx, '+', L(@1), $2); }
    | '!' expr %prec UNARY  { $$ = unary(ctx, '!', L(@1), $2); }
    | expr '^' expr         { $$ = binary(ctx, OP_POW, $1, $3, L(@2)); }
    | expr '*' expr         { $$ = binary(ctx, OP_MUL, $1, $3, L(@2)); }
    | expr '/' expr         { $$ = binary(ctx, OP_DIV, $1, $3, L(@2)); }
    | expr '+' expr         { $$ = binary(ctx, OP_ADD, $1, $3, L(@2)); }
    | expr '-' expr         { $$ = binary(ctx, OP_SUB, $1, $3, L(@2)); }
    | expr '<' expr         { $$ = binary(ctx, OP_LT, $1, $3, L(@2)); }
    | expr LE expr          { $$ = binary(ctx, OP_LE, $1, $3, L(@2)); }
    | expr '>' expr         { $$ = binary(ctx, OP_GT, $1, $3, L(@2)); }
    | expr GE expr          { $$ = binary(ctx, OP_GE, $1, $3, L(@2)); }
    | expr EQEQ expr        { $$ = binary(ctx, OP_EQ, $1, $3, L(@2)); }
    | expr NE expr          { $$ = binary(ctx, OP_NE, $1, $3, L(@2)); }
    | expr AND expr         { $$ = binary(ctx, OP_AND, $1, $3, L(@2)); }
    | expr OR expr          { $$ = binary(ctx, OP_OR, $1, $3, L(@2)); }
    | expr '?' expr ':' expr {
                              $$ = node(ctx, AST_COND, $1->loc);
                              $$->a = $1; $$->b = $3; $$->c = $5;
                              deepen(ctx, $$, $1); deepen(ctx, $$, $3); deepen(ctx, $$, $5);
                            }
    ;

%%

/* The first character of the next line that is not blank or a comment after byte `from`, or 0;
 * *line its line (`line` counts the line of `from`). */
static char next_line_start(const parse_ctx *c, size_t from, int line, int *next)
{
    int in_comment = 0;
    for (size_t i = from; i < c->len; i++) {
        char ch = c->source[i];
        if (ch == '\n') { line++; in_comment = 0; continue; }
        if (in_comment || ch == ' ' || ch == '\t' || ch == '\r') continue;
        if (ch == '#') { in_comment = 1; continue; }
        *next = line;
        return ch;
    }
    return 0;
}

static int is_operand_end(int kind) { return kind == NUMBER || kind == NAME || kind == ')' || kind == ']'; }

/* A hint for the syntax error at the token ctx->tok[1] (the one bison did not expect), for the
 * mistakes a newcomer makes most (a FiPy user especially: Python's **, and, if/else; a product
 * without '*'; an equation without eq; a line broken before its operator), or NULL. Sets
 * ctx->explained_line when the next line's leading operator is explained here. */
static const char *syntax_hint(parse_ctx *c, char *buf, size_t n)
{
    int kind = c->tok[1].kind, prev = c->tok[0].kind, first = prev == NEWLINE || prev == 0;
    const char *text = c->tok[1].text, *prev_text = c->tok[0].text;
    int expression = c->stmt_first == EQ || c->stmt_first == FUNC || c->stmt_first == FLUX || c->stmt_first == ON ||
                     c->stmt_first == STOP;
    if (kind == NAME && (!strcmp(text, "and") || !strcmp(text, "or")))
        return !strcmp(text, "and") ? "'and' is written &&: a > 0 && b > 0" : "'or' is written ||: a > 0 || b > 0";
    if (kind == NAME && (!strcmp(text, "if") || !strcmp(text, "else")))
        return "a conditional is written COND ? A : B: x < 5 ? 1 : 0";
    if (prev == NAME && !strcmp(prev_text, "not")) return "'not' is written !: !(a > 0)";
    if (kind == '*' && prev == '*') return "a power is written with ^: u^2, not u**2";
    if (c->stmt_first == EQ && !c->seen_assign && kind == '/')
        return "a time derivative is written dt(u): eq dt(u) = ...";
    if (c->stmt_first == EQ && kind == EQEQ) return "an equation has one '=': eq dt(u) = ...";
    if (kind == '=' && (c->stmt_first == STOP || (expression && c->tok[0].kind != NAME && c->seen_assign)))
        return "a comparison is written ==, !=, <, <=, > or >=: stop when m >= 1";
    if (kind == NAME && first) return statement_word_hint(text, buf, n);
    /* a statement that starts with a name (an energy's form: NAME NAME = ...) broken at its second token */
    if (c->stmt_first == NAME && c->stmt_tokens == 2 && prev == NAME) return statement_word_hint(prev_text, buf, n);
    if (kind == NEWLINE && c->tok[1].pos < c->len) {
        int next = 0;
        char ch = next_line_start(c, c->tok[1].pos + 1, c->tok[1].line + 1, &next);
        if (ch && strchr(":?+-*/^<>=!&|", ch)) {
            c->explained_line = next;
            if (ch == ':' && c->open_cond > 0)
                return "a line goes on only after an operator or a comma, or inside ( ): end this line with the "
                       "':' of its COND ? A : B (x < 5 ? 1 :), or put the conditional in ( )";
            snprintf(buf, n, "a line goes on only after an operator or a comma, or inside ( ): end this line with "
                     "the '%c' that starts the next one", ch);
            return buf;
        }
    }
    if (prev == NEWLINE && kind != NAME && kind != NUMBER && kind != '(' && kind != NEWLINE && kind != END &&
        text[0] && strchr(":?+-*/^<>=&|", text[0])) {
        snprintf(buf, n, "a line goes on only after an operator or a comma, or inside ( ): move the '%s' to the end "
                 "of the line before", text);
        return buf;
    }
    if (is_operand_end(prev) && (kind == NAME || kind == NUMBER || kind == '(') && !(prev == NAME && kind == '(')) {
        char what[64];
        snprintf(what, sizeof what, "%s*%s", prev == ')' || prev == ']' ? "(...)" : prev_text,
                 kind == '(' ? "(...)" : text);
        if (expression) snprintf(buf, n, "a product needs '*': %s", what);
        else snprintf(buf, n, "a product needs '*' (%s); settings are separated by ','", what);
        return buf;
    }
    return NULL;
}

static void pjyyerror(PJYYLTYPE *loc, parse_ctx *ctx, void *scanner, const char *msg)
{
    (void)scanner;
    if (ctx->fatal) return;
    /* the leading operator of a line whose break the hint on the line before explained */
    if (ctx->explained_line && ctx->explained_line == loc->first_line &&
        (ctx->tok[0].kind == NEWLINE || ctx->tok[0].kind == 0)) {
        ctx->explained_line = 0;
        return;
    }
    if (!strcmp(msg, "memory exhausted")) { /* the parser's stack (YYMAXDEPTH) is full: only nesting fills it */
        diag_error(ctx->diag, L(*loc), "expression is nested too deeply (more than %d levels)", AST_MAX_DEPTH);
        return;
    }
    /* bison: "syntax error, unexpected X, expecting Y or Z" -> "unexpected X, expecting ..." */
    const char *m = msg;
    if (!strncmp(m, "syntax error, ", 14)) m += 14;
    if (ctx->paren_depth > 0 && !strncmp(m, "unexpected end of file", 22)) {
        diag_error(ctx->diag, L(*loc), "unexpected end of file: a '(' or '[' is still open");
        return;
    }
    diag_error(ctx->diag, L(*loc), "%s", m);
    char buf[512];
    const char *hint = syntax_hint(ctx, buf, sizeof buf);
    if (hint) parse_hint(ctx, "%s", hint);
}
