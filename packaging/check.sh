#!/usr/bin/env bash
# Packaging check (issue #27): every publishable crate packages and builds from its package
# (`cargo publish --workspace --dry-run`: nothing is uploaded), and the Python package's sdist
# builds with maturin and a wheel builds from that sdist alone (so the sdist holds every path
# dependency). Slow (every crate and the wheel are compiled once more from their packages: the
# publish dry run alone took 35 min on the shared 2-core VM under load 16-27, 2026-11-29), so it
# is not part of .ci/run; run it before a release: `bash packaging/check.sh`. Extra arguments
# go to cargo publish (e.g. --allow-dirty for a tree with uncommitted changes).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
target="${CARGO_TARGET_DIR:-$root/target}"
out="$target/packaging"
step() { printf '\n--- packaging: %s (%ss)\n' "$1" "$SECONDS"; }

step "cargo publish --workspace --dry-run (package, then build each crate from its .crate)"
cargo publish --workspace --dry-run "$@"
ls -l "$target/package"/*.crate
for crate in "$target/package"/*.crate; do
  for license in LICENSE-MIT LICENSE-APACHE; do
    tar -tzf "$crate" | grep -q "/$license\$" || { echo "packaging: $crate lacks $license" >&2; exit 1; }
  done
done

step "maturin in a fresh virtual environment"
rm -rf "$out"
python3 -m venv "$out/venv"
"$out/venv/bin/pip" install -q --disable-pip-version-check maturin

step "maturin sdist (python/)"
(cd python && "$out/venv/bin/maturin" sdist --out "$out/dist")
tar -tzf "$out"/dist/bloomlanes-*.tar.gz | sed -n '1,5p;/pyproject.toml$/p;/core\/Cargo.toml$/p'

step "wheel from the sdist alone (pip wheel: unpacked, built by maturin in isolation)"
CARGO_TARGET_DIR="$target" "$out/venv/bin/pip" wheel -q --disable-pip-version-check --no-deps -w "$out/dist" \
  "$out"/dist/bloomlanes-*.tar.gz
ls -l "$out/dist"

step "packaging done"
