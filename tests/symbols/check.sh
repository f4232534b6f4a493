#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What libacp exports (issue 19, items 2-4):
# - libacp.so's dynamic symbols and libacp.a's global symbols are exactly the functions that
#   include/acp/*.h declares: no internal name, no libcurl/libpq name (the lazy shims);
# - its SONAME is libacp.so.<major>;
# - acp and acp-agent run on libacp.so (they need it and carry no copy of it).
# The declarations come from the compiler itself (gcc -aux-info on every public header), so
# macros, line breaks and comments in the headers cannot fool it.
# Usage: check.sh BUILD_DIR SOVERSION GCC TOOL...
set -eu
build=$1 soversion=$2 cc=$3
shift 3
src=${ACP_SOURCE:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
say() { echo "symbols: $*" >&2; bad=1; }

so=$build/libacp.so a=$build/libacp.a
nm -D --defined-only "$so" | awk '{print $NF}' | sort -u >"$tmp/so"
nm -g --defined-only "$a" | awk 'NF == 3 {print $3}' | sort -u >"$tmp/a"

for f in so a; do
    if grep -v '^acp_' "$tmp/$f" >"$tmp/foreign"; then
        say "libacp.$f defines names outside acp_:"
        sed 's/^/    /' "$tmp/foreign" >&2
    fi
done

for h in "$src"/include/acp/*.h "$build"/include/acp/*.h; do echo "#include \"$h\""; done >"$tmp/all.c"
"$cc" -std=c17 -D_GNU_SOURCE -I"$src/include" -I"$build/include" -fsyntax-only \
    -aux-info "$tmp/aux" "$tmp/all.c"
grep -E '^/\* [^ ]*include/acp/[a-z0-9_]+\.h:' "$tmp/aux" | grep -oE '\<acp_[a-z0-9_]+ \(' |
    tr -d ' (' | sort -u >"$tmp/declared"
# Declared and not exported: hidden by mistake (no ACP_BEGIN_DECLS), or never defined.
for f in so a; do
    if comm -23 "$tmp/declared" "$tmp/$f" | grep . >"$tmp/missing"; then
        say "declared in include/acp/ but not exported by libacp.$f:"
        sed 's/^/    /' "$tmp/missing" >&2
    fi
    if comm -13 "$tmp/declared" "$tmp/$f" | grep . >"$tmp/extra"; then
        say "exported by libacp.$f but declared in no public header:"
        sed 's/^/    /' "$tmp/extra" >&2
    fi
done

soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libacp.so.$soversion" ] || say "SONAME is '$soname', not libacp.so.$soversion"

for tool in "$@"; do
    readelf -d "$tool" | grep -q "(NEEDED).*\[libacp.so.$soversion\]" ||
        say "$tool does not link libacp.so.$soversion"
    nm --defined-only "$tool" | awk '{print $3}' | sort -u >"$tmp/tool"
    if comm -12 "$tmp/so" "$tmp/tool" | grep . >"$tmp/copy"; then
        say "$tool carries its own copy of libacp: $(head -3 "$tmp/copy" | tr '\n' ' ')..."
    fi
done

[ "$bad" = 0 ] && echo "symbols: libacp.so and libacp.a export exactly the $(wc -l <"$tmp/declared") public functions; SONAME $soname; $# tools on libacp.so"
exit "$bad"
