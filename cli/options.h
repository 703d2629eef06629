/* options.h — the commands of `pdejit` and their options as tables.
 *
 * Each command is a cli_cmd: its name, what `pdejit --help` says of it, its usage line, and a
 * table of options (name, alias, value, help text, what it sets). One loop, cli_parse(), reads
 * every command's arguments from its table, and cli_help() prints the command's help from the
 * same table, so an option the parser accepts is always in the help. */
#ifndef PJ_CLI_OPTIONS_H
#define PJ_CLI_OPTIONS_H
#include <stddef.h>
#include <stdio.h>

typedef struct cli_opt cli_opt;

/* Sets what `o` controls from `value` (NULL for a flag) into `member`, the member of the
 * command's argument struct at o->member. 0, or -1 after saying why on stderr (exit 2). */
typedef int (*cli_setter)(const cli_opt *o, const char *value, void *member);

struct cli_opt {
    const char *name;   /* "--backend" */
    const char *alias;  /* "-v"; NULL: none */
    const char *arg;    /* the value's name in the help ("N", "interp|cpu|cuda"); NULL: a flag */
    const char *help;   /* wrapped at the help's width; a '\n' starts a new line; "{}" stands for
                           values() */
    const char *(*values)(void); /* the values it takes, from their table ("euler, rk2, ..."); or NULL */
    cli_setter set;
    size_t member;      /* offsetof(the command's argument struct, what it sets) */
};

/* A subcommand (`pdejit cache list`): what its command's help says of it, and what runs it. */
typedef struct cli_sub {
    const char *name;       /* "explain" */
    const char *operands;   /* "FILE"; "": none */
    const char *help;
    int (*main)(int argc, char **argv); /* argv[0]: the subcommand's name */
} cli_sub;

typedef struct cli_cmd {
    const char *name;       /* "run" */
    const char *operands;   /* after the name in `pdejit --help`: "FILE" */
    const char *summary;    /* one line of `pdejit --help` */
    const char *usage;      /* after "usage: pdejit NAME " */
    const char *about;      /* the lines after the usage line, before the options */
    const cli_sub *subs;    /* its subcommands, listed before the options; ends with {0}; NULL: none */
    const cli_opt *opts;    /* ends with {0}; NULL: none */
    const char *epilogue;   /* the lines after the options; NULL: none */
    int (*main)(int argc, char **argv);
} cli_cmd;

/* The commands, in the order `pdejit --help` lists them (NULL-terminated). */
extern const cli_cmd *const cli_commands[];
extern const cli_cmd cli_run, cli_check, cli_emit, cli_bench, cli_cache;

/* Prints cmd's help (usage line, about, every subcommand and option of its tables, epilogue). */
void cli_help(const cli_cmd *cmd, FILE *out);
/* o's help text with "{}" replaced by o->values() (in buf when replaced). */
const char *cli_option_help(const cli_opt *o, char *buf, size_t len);
/* `pdejit help --man`: the manual page pdejit(1) in roff, from the same tables as the help. */
void cli_print_man(FILE *out);
/* `pdejit help --bash-completion`: a bash completion script for pdejit, from the same tables:
 * the commands, subcommands, options, and the values of those whose values are a list. */
void cli_print_bash_completion(FILE *out);
/* Parses argv[0..argc) against cmd's options into args (the options' members). The operands (the
 * words not options, "-" among them) go to files[0..max_files); one more is an error. Returns the
 * number of operands, or -1 after saying why on stderr: an unknown option or one without its value
 * (then with the usage), a value its setter refused, too many operands. */
int cli_parse(const cli_cmd *cmd, int argc, char **argv, void *args, const char **files, int max_files);
/* Runs the subcommand argv[0] of cmd; without one, or with an unknown one, says so (with the usage)
 * and returns 2. */
int cli_run_sub(const cli_cmd *cmd, int argc, char **argv);

/* The row of -h, --help in every command's table (main answers it before the parser runs). */
#define CLI_HELP_OPT {"--help", "-h", NULL, "print this help and exit", NULL, cli_set_none, 0}

/* Setters shared by the commands: */
int cli_set_none(const cli_opt *o, const char *value, void *member);      /* nothing */
int cli_set_flag(const cli_opt *o, const char *value, void *member);      /* int = 1 */
int cli_set_text(const cli_opt *o, const char *value, void *member);      /* const char * = value */
int cli_set_precision(const cli_opt *o, const char *value, void *member); /* int single: double|single */
/* int: the scheme's number (pj_scheme), "steady" included; an unknown name lists the schemes. */
int cli_set_scheme(const cli_opt *o, const char *value, void *member);

#endif
