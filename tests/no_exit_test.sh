#!/bin/sh
# no_exit_test.sh — no abort(), exit() or assert() in the library's sources (compiler/, runtime/,
# grammar/): out of memory and every other failure is an error the caller sees (see "Errors" in
# docs/architecture.md). The command (cli/) and the tests may exit.
#
#   no_exit_test.sh SOURCE_DIR
set -u
src=$1
cd "$src" || exit 1
[ -d compiler ] && [ -d runtime ] && [ -d grammar ] || { echo "no_exit_test: $src is not the source tree" >&2; exit 1; }
# a call: the name not glued to a longer identifier (writers.c's af_abort is fine), then '('
hits=$(grep -n -E '(^|[^A-Za-z0-9_])(abort|exit|_exit|_Exit|quick_exit|assert)[[:space:]]*\(' \
       compiler/*.c compiler/*.h runtime/*.c runtime/*.h grammar/*.l grammar/*.y grammar/*.c grammar/*.h 2>/dev/null |
       grep -v -E '^[^:]*:[0-9]+:#define (abort|exit)\(')  # a macro that routes exit away (lexer.l) is no call
if [ -n "$hits" ]; then
    echo "no_exit_test: FAILED: the library may end its host process here:" >&2
    echo "$hits" >&2
    exit 1
fi
grep -q 'define YY_FATAL_ERROR' grammar/lexer.l || { echo "no_exit_test: FAILED: lexer.l must define YY_FATAL_ERROR (flex's default exits)" >&2; exit 1; }
echo "no_exit_test: no abort, exit or assert in compiler/, runtime/, grammar/"
