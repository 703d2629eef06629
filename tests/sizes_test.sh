#!/bin/sh
# sizes_test.sh — rooms a newcomer can hold (issue 24 item 6): no library file over 1000 lines,
# no function over 150 lines, in compiler/ runtime/ grammar/ cli/ backends/.
#
#   sh tests/sizes_test.sh SOURCE_DIR [--list N]
#
# Fails (exit 1) naming every file over FILE_MAX lines and every function over FUNC_MAX lines,
# except what tests/sizes_allow.txt lists (files others are still cutting). --list N prints every
# function over N lines instead (allowed or not) and exits 0.
#
# Method: a file's length is its line count (wc -l). A function's length is counted by a
# brace-matching scan of each .c and .h file (awk, below): comments, string and character
# literals and preprocessor lines (with their continuations) are skipped; a '{' at nesting depth
# 0 whose preceding token is ')' opens a function body (a struct, enum or initializer's '{'
# follows a name or '='); the function runs from the first line of its declaration (the first
# line of code after the previous top-level ';' or '}') to the line of the '}' that closes the
# body, as ctags counts it (line to end); its name is the identifier before the declaration's
# first '('. Generated sources (bison, flex) are not in these folders; grammar/*.y and *.l are
# held to the file length only.
set -eu
SRC=${1:?usage: sizes_test.sh SOURCE_DIR [--list N]}
FILE_MAX=1000
FUNC_MAX=150
LIST=
if [ "${2:-}" = "--list" ]; then LIST=${3:?--list needs a line count}; fi
ALLOW="$SRC/tests/sizes_allow.txt"
cd "$SRC"

allowed() { # allowed PATH: 0 when the allow-list names the file
    [ -f "$ALLOW" ] && grep -v '^#' "$ALLOW" | grep -qx "$1"
}

files=$(ls compiler/*.[chly] runtime/*.[ch] grammar/*.[chly] cli/*.[ch] backends/*/*.[ch] 2>/dev/null | sort)

scan() { # scan FILE...: "file:line: NAME LINES" for every function
    awk '
    FNR == 1 { depth = 0; incomment = 0; start = 0; pp = 0; name = ""; sawparen = 0; last = "" }
    {
        line = $0
        # preprocessor lines and their continuations are not code
        if (pp) { pp = (line ~ /\\$/); next }
        if (!incomment && line ~ /^[ \t]*#/) { pp = (line ~ /\\$/); next }
        n = length(line)
        for (i = 1; i <= n; i++) {
            ch = substr(line, i, 1)
            if (incomment) {
                if (ch == "*" && substr(line, i + 1, 1) == "/") { incomment = 0; i++ }
                continue
            }
            if (ch == "/" && substr(line, i + 1, 1) == "*") { incomment = 1; i++; continue }
            if (ch == "/" && substr(line, i + 1, 1) == "/") break
            if (ch == "\"" || ch == "\047") { # a literal: skip to its closing quote
                q = ch
                for (i++; i <= n; i++) {
                    c2 = substr(line, i, 1)
                    if (c2 == "\\") { i++; continue }
                    if (c2 == q) break
                }
                last = q
                continue
            }
            if (ch ~ /[ \t]/) continue
            if (depth == 0 && start == 0) { start = FNR; name = ""; sawparen = 0 }
            if (depth == 0 && ch == "(" && !sawparen) {
                pre = substr(line, 1, i - 1)
                if (match(pre, /[A-Za-z_][A-Za-z_0-9]*[ \t]*$/)) {
                    name = substr(pre, RSTART, RLENGTH)
                    sub(/[ \t]+$/, "", name)
                }
                sawparen = 1
            }
            if (ch == "{") {
                if (depth == 0) { isfunc = (last == ")"); fstart = start }
                depth++
            } else if (ch == "}") {
                depth--
                if (depth == 0) {
                    if (isfunc) printf "%s:%d: %s %d\n", FILENAME, fstart, name, FNR - fstart + 1
                    start = 0
                }
            } else if (ch == ";" && depth == 0) {
                start = 0
            }
            last = ch
        }
    }' "$@"
}

if [ -n "$LIST" ]; then
    scan $(echo "$files" | grep '\.[ch]$') | awk -v min="$LIST" '$3 > min' | sort -t' ' -k3,3nr
    exit 0
fi

fail=0
for f in $files; do
    n=$(wc -l < "$f")
    if [ "$n" -gt "$FILE_MAX" ] && ! allowed "$f"; then
        echo "$f: $n lines (at most $FILE_MAX): cut it along its seams"
        fail=1
    fi
done
for hit in $(scan $(echo "$files" | grep '\.[ch]$') | awk -v max="$FUNC_MAX" '$3 > max { print $1 "|" $2 "|" $3 }'); do
    f=${hit%%:*}
    if ! allowed "$f"; then
        echo "$hit" | awk -F'|' -v max="$FUNC_MAX" '{ printf "%s function %s is %d lines (at most %d)\n", $1, $2, $3, max }'
        fail=1
    fi
done
[ "$fail" = 0 ] && echo "sizes: every file within $FILE_MAX lines, every function within $FUNC_MAX"
exit $fail
