%define api.pure full
%code { int yylex(void *l); void yyerror(const char *m); }
%token END 0
%%
start: %empty ;
%%
