#!/bin/sh
# manual_test.sh — the manual page and the bash completion script the build generates from the
# command's tables (build/pdejit.1, build/pdejit.bash; cli/manpage.c):
#  - they are what `pdejit help --man` and `help --bash-completion` print now (not stale);
#  - every command and every option of every `pdejit help CMD` is in both;
#  - bash completes the commands, a command's options, cache's subcommands, and the back ends,
#    schemes and precisions after --backend, --scheme and --precision;
#  - the page renders: `man -l` (else groff) without a warning, every option in the text.
#
#   manual_test.sh PDEJIT MANPAGE COMPLETION
#
# Exit 0 passed, 1 failed, 77 skipped (everything checked but the rendering: no man nor groff).
set -u
pj=$1 page=$2 comp=$3
fail() { echo "manual_test: FAILED: $*" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pdejit-manual.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT

"$pj" help --man >"$tmp/page" || fail "pdejit help --man"
"$pj" help --bash-completion >"$tmp/comp" || fail "pdejit help --bash-completion"
cmp -s "$tmp/page" "$page" || fail "$page is not what pdejit help --man prints"
cmp -s "$tmp/comp" "$comp" || fail "$comp is not what pdejit help --bash-completion prints"

# the commands (`pdejit --help`'s list), and each one's options (`pdejit help CMD`)
commands=$("$pj" --help | sed -n '/^commands:/,/^$/p' | grep '^  [a-z]' | awk '$1 != "help" {print $1}')
[ "$(echo $commands)" = "run check emit bench cache" ] || fail "the commands are '$(echo $commands)'"
# the man page's text with roff's \- as '-'
sed 's/\\-/-/g' "$page" >"$tmp/page.txt"
n=0
for c in $commands; do
    grep -q "^\.SS \"pdejit $c\"" "$page" || fail "the man page has no section for $c"
    "$pj" help "$c" >"$tmp/help" || fail "pdejit help $c"
    opts=$(sed -n '/^options:/,$p' "$tmp/help" | grep -oE '^  (-[a-z], )?--[a-z-]+' | tr ',' ' ')
    [ -n "$opts" ] || fail "pdejit help $c lists no option"
    for o in $opts; do
        grep -qF -- "\\fB$o\\fR" "$tmp/page.txt" || fail "the man page lacks $c's option $o"
        # the completion's branch of c lists o
        sed -n "/^    $c)\$/,/esac;;\$/p" "$comp" | grep -qE -- "[' ]$o[' ]" || fail "the completion lacks $c's option $o"
        n=$((n + 1))
    done
done
[ $n -gt 30 ] || fail "only $n options checked"

# what bash completes (COMP_WORDS as bash sets them when TAB is pressed after them)
complete_words() {
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _pdejit; echo "${COMPREPLY[*]}"' \
        sh "$tmp/comp" "$@"
}
if command -v bash >/dev/null 2>&1; then
    bash -c ". '$tmp/comp'; complete -p pdejit" | grep -q -- '-F _pdejit pdejit' || fail "the script registers no completion"
    [ "$(complete_words pdejit '')" = "run check emit bench cache help --help -h --version" ] ||
        fail "pdejit TAB: '$(complete_words pdejit '')'"
    [ "$(complete_words pdejit ch)" = "check" ] || fail "pdejit ch TAB: '$(complete_words pdejit ch)'"
    [ "$(complete_words pdejit run f.pde --ba)" = "--backend" ] || fail "run --ba TAB"
    [ "$(complete_words pdejit run f.pde --backend '')" = "$("$pj" help run | sed -n 's/.*--backend \([a-z|]*\).*/\1/p' | tr '|' ' ')" ] ||
        fail "run --backend TAB: '$(complete_words pdejit run f.pde --backend '')'"
    [ "$(complete_words pdejit run f.pde --scheme '')" = "$(echo $("$pj" help run | tr -d '\n' | sed 's/.*overrides the file): \([a-z0-9, ]*\) (from.*/\1/' | tr -d ','))" ] ||
        fail "run --scheme TAB: '$(complete_words pdejit run f.pde --scheme '')'"
    [ "$(complete_words pdejit emit f.pde --precision s)" = "single" ] || fail "emit --precision s TAB"
    [ "$(complete_words pdejit cache '')" = "stats list clear explain" ] || fail "cache TAB: '$(complete_words pdejit cache '')'"
    [ "$(complete_words pdejit help e)" = "emit" ] || fail "help e TAB"
    mkdir "$tmp/files" && touch "$tmp/files/a.pde" "$tmp/files/b.txt" && mkdir "$tmp/files/d"
    r=$(cd "$tmp/files" && complete_words pdejit run '')
    [ "$r" = "a.pde d" ] || fail "run TAB in a folder of a.pde, b.txt, d/: '$r'"
fi

# the page renders, without a warning from groff, and the rendered text names every option
if command -v man >/dev/null 2>&1; then
    LC_ALL=C MANWIDTH=100 man -l "$page" 2>"$tmp/warn" | col -b >"$tmp/rendered" || fail "man -l $page"
elif command -v groff >/dev/null 2>&1; then
    LC_ALL=C groff -man -Tascii -rLL=100n "$page" 2>"$tmp/warn" | col -b >"$tmp/rendered" || fail "groff $page"
else
    echo "manual_test: the page's rendering skipped: neither man nor groff is installed"
    exit 77
fi
[ -s "$tmp/warn" ] && { cat "$tmp/warn"; fail "rendering $page warns"; }
if command -v groff >/dev/null 2>&1; then
    groff -man -ww -z "$page" 2>"$tmp/warn"
    [ -s "$tmp/warn" ] && { cat "$tmp/warn"; fail "groff -ww warns on $page"; }
fi
grep -q '^PDEJIT(1)' "$tmp/rendered" || fail "the rendered page has no PDEJIT(1) header"
for c in $commands; do
    for o in $("$pj" help "$c" | sed -n '/^options:/,$p' | grep -oE -- '--[a-z-]+' | sort -u); do
        grep -qF -- "$o" "$tmp/rendered" || fail "the rendered page lacks $o"
    done
done
echo "manual_test: $n options in the page and the completion; the page renders"
