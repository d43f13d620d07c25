#!/usr/bin/env bash
# Builds the peer benchmark drivers from checkouts of the peers that the user gives (nothing of
# the peers is in this repository, and CI neither fetches nor builds them), and bloomlanes' side
# (the `peers` example of bloomlanes-benches):
#
#   benches/peers/build.sh --pf DIR --sbf DIR [--out DIR]
#
#   --pf DIR   a checkout of https://github.com/tum-db/partitioned-filters (Schmidt, Bandle and
#              Giceva, VLDB 2021; measured at b868d10): pf_driver includes its src/ and lib/
#   --sbf DIR  a checkout of https://github.com/spatialbloomfilter/libSBF-cpp (measured at
#              6ff115c): sbf_driver links a copy of its sbf.cpp with libsbf-check-leak.patch
#              applied (upstream leaks two buffers per absent key; 10^8 lookups exhaust memory)
#   --out DIR  where the binaries go (default target/peers)
#   PF_MARCH   -march of pf_driver (default native; the peer's own CMake Release flags are
#              -O3 -DNDEBUG -fno-tree-vectorize -march=native). It needs AVX-512 (F/BW/DQ/VL).
#
# Either peer may be left out (then its driver is not built). Needs g++ (C++20), libcrypto
# (libssl-dev) for libSBF, and cargo.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
pf= sbf= out="$root/target/peers"
while [ $# -gt 0 ]; do
    case $1 in
        --pf) pf=${2:?--pf needs a directory}; shift 2 ;;
        --sbf) sbf=${2:?--sbf needs a directory}; shift 2 ;;
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        *) echo "build.sh: unknown argument $1 (--pf DIR, --sbf DIR, --out DIR)" >&2; exit 2 ;;
    esac
done
mkdir -p "$out/bin"

if [ -n "$pf" ]; then
    [ -f "$pf/src/bloom/bloom_filter.hpp" ] || {
        echo "build.sh: $pf/src/bloom/bloom_filter.hpp not found: --pf is not a partitioned-filters checkout" >&2
        exit 2
    }
    g++ -std=c++20 -O3 -DNDEBUG -fno-tree-vectorize -march="${PF_MARCH:-native}" \
        -I"$pf/src" -I"$pf/lib" -I"$pf/lib/libdivide" \
        "$here/pf_driver.cpp" -o "$out/bin/pf_driver.tmp" -pthread
    mv "$out/bin/pf_driver.tmp" "$out/bin/pf_driver"
    echo "built $out/bin/pf_driver ($(git -C "$pf" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"
fi

if [ -n "$sbf" ]; then
    [ -f "$sbf/sbf.cpp" ] || { echo "build.sh: $sbf/sbf.cpp not found: --sbf is not a libSBF-cpp checkout" >&2; exit 2; }
    src="$out/libsbf"
    rm -rf "$src" && mkdir -p "$src"
    cp -r "$sbf"/sbf.cpp "$sbf"/sbf.h "$sbf"/sbflib.h "$sbf"/base64.cpp "$sbf"/base64.h "$sbf"/end.cpp "$sbf"/end.h \
        "$sbf"/linux "$src/"
    # A checkout that already carries the fix (its marker line) is taken as it is.
    grep -q "bloomlanes peer benchmark patch" "$src/sbf.cpp" ||
        patch -s --forward --batch -d "$src" -p1 < "$here/libsbf-check-leak.patch"
    g++ -std=c++17 -O3 -DNDEBUG -I"$src" "$here/sbf_driver.cpp" "$src/sbf.cpp" "$src/base64.cpp" "$src/end.cpp" \
        -o "$out/bin/sbf_driver.tmp" -lcrypto -pthread
    mv "$out/bin/sbf_driver.tmp" "$out/bin/sbf_driver"
    echo "built $out/bin/sbf_driver ($(git -C "$sbf" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"
fi

(cd "$root" && CARGO_INCREMENTAL=0 cargo build --release -p bloomlanes-benches --example peers)
cp "$root/target/release/examples/peers" "$out/bin/peers"
echo "built $out/bin/peers"
