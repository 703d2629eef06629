#!/bin/sh
# exports_test.sh — libpdejit.so exports exactly the functions include/pdejit.h declares (each
# marked PJ_API) and imports no way to end the process (abort, exit and their kin): library code
# reports errors, it never ends its host.
#
#   exports_test.sh LIBPDEJIT_SO PDEJIT_H [OBJECTS]
#
# OBJECTS (';'-separated): pdejit's object files, given when LLVM is linked into the library;
# the check for abort/exit then reads them instead of the library's imports.
set -u
lib=$1 header=$2 objects=${3:-}
fail() { echo "exports_test: FAILED: $*" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pdejit-exports.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" >"$tmp/nm" || fail "nm $lib"
awk '{print $NF}' "$tmp/nm" | sed 's/@.*//' | sort -u >"$tmp/exported"
sed -n 's/^PJ_API [^(]*[ *]\(pj_[a-z_0-9]*\)(.*/\1/p' "$header" | sort -u >"$tmp/declared"
[ -s "$tmp/declared" ] || fail "no PJ_API declarations found in $header"
if ! cmp -s "$tmp/exported" "$tmp/declared"; then
    echo "exported by $lib (<) vs declared PJ_API in $header (>):" >&2
    diff "$tmp/exported" "$tmp/declared" >&2
    fail "the exported symbols differ from the public API"
fi
grep -c '^pj_[a-z_]*(' "$header" >/dev/null && fail "a declaration in $header lacks PJ_API: $(grep '^pj_[a-z_]*(' "$header")"

if [ -n "$objects" ]; then
    # LLVM is linked in (its fatal errors call abort/exit, as in libLLVM-14.so): pdejit's own objects
    : >"$tmp/imported"
    old_ifs=$IFS; IFS=';'
    for o in $objects; do
        nm --undefined-only "$o" | awk '{print $NF}' >>"$tmp/imported" || fail "nm -u $o"
    done
    IFS=$old_ifs
    what="pdejit's objects"
else
    nm -D --undefined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' >"$tmp/imported" || fail "nm -u $lib"
    what=$lib
fi
[ -s "$tmp/imported" ] || fail "no imports read from $what"
bad=$(grep -x -E 'abort|exit|_exit|_Exit|quick_exit|__assert_fail' "$tmp/imported" | sort -u)
[ -z "$bad" ] || fail "$what call $(echo $bad): library code must return errors, not end the process"
echo "exports_test: $(wc -l <"$tmp/exported") pj_ functions exported, nothing else; no abort or exit imported by $what"
