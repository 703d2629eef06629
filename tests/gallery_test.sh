#!/bin/sh
# gallery_test.sh — docs/gallery.md lists every sample: each samples/*.pde and samples/*/*.pde has
# a section "## `samples/NAME.pde`" whose command runs or copies that sample, and no section names a sample
# that is not there. Usage: gallery_test.sh SOURCE_DIR
root=${1:?usage: gallery_test.sh SOURCE_DIR}
page="$root/docs/gallery.md"
status=0
cd "$root" || exit 1
for f in samples/*.pde samples/*/*.pde; do
    [ -f "$f" ] || continue
    if ! grep -qxF "## \`$f\`" "$page"; then
        echo "docs/gallery.md: no section for $f"
        status=1
        continue
    fi
    # the section's command (the lines up to the next heading) names the sample
    if ! awk -v h="## \`$f\`" '$0 == h { on = 1; next } /^## / { on = 0 } on' "$page" | grep -q "$f[ ;]"; then
        echo "docs/gallery.md: the section of $f has no command that runs it"
        status=1
    fi
done
for f in $(sed -n 's/^## `\(samples\/[^`]*\)`$/\1/p' "$page"); do
    [ -f "$f" ] || { echo "docs/gallery.md: $f is no sample"; status=1; }
done
[ $status = 0 ] && echo "gallery: every sample is listed"
exit $status
