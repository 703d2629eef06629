#!/bin/sh
# doors_test.sh — the architecture's nevers that an include shows (docs/architecture.md, "What
# calls what"; issue 24 item 2):
#   1. compiler/ and grammar/ include only their own headers, include/ and the generated parser
#      and lexer headers: the front end calls nothing of the runtime or the back ends;
#   2. nothing outside backends/ (runtime/, cli/, compiler/, grammar/) includes a back end's own
#      header (every .h under backends/): clients reach a back end through runtime/engine.h.
# Exceptions, one "FILE HEADER" a line, are in tests/doors_allow.txt (a door still to close).
#
#   sh tests/doors_test.sh SOURCE_DIR
#
# Method: the quoted #include lines of every .c, .h, .y and .l file (angle-bracket includes are
# system headers), matched by the header's base name.
set -eu
SRC=${1:?usage: doors_test.sh SOURCE_DIR}
cd "$SRC"
ALLOW=tests/doors_allow.txt
failed=0
includes() { # includes DIR...: "FILE HEADER" for every quoted include
    find "$@" -type f \( -name '*.c' -o -name '*.h' -o -name '*.y' -o -name '*.l' \) | sort | while read -r f; do
        sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r h; do
            echo "$f ${h##*/}"
        done
    done
}
allowed() { [ -f "$ALLOW" ] && grep -v '^#' "$ALLOW" | grep -qx "$1"; }

front=$( (ls compiler grammar include; echo lexer.yy.h; echo parser.tab.h) | grep '\.h$' | sort -u)
for line in $(includes compiler grammar | tr ' ' ':'); do
    f=${line%%:*} h=${line#*:}
    if ! echo "$front" | grep -qx "$h"; then
        echo "doors: $f includes $h: the front end calls nothing outside compiler/, grammar/ and include/"
        failed=1
    fi
done

backend=$(find backends -name '*.h' | sed 's|.*/||' | sort -u)
for line in $(includes runtime cli compiler grammar | tr ' ' ':'); do
    f=${line%%:*} h=${line#*:}
    if echo "$backend" | grep -qx "$h" && ! allowed "$f $h"; then
        echo "doors: $f includes $h, a back end's own header: reach back ends through runtime/engine.h"
        failed=1
    fi
done
[ "$failed" = 0 ] && echo "doors: every include keeps to the architecture"
exit "$failed"
