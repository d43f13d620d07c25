"""The same files as the bloomlanes CLI: filters built by the CLI load here and equal the
package's, the CLI reads the package's files, and both answer lookups alike. Skipped (with a
visible SKIP line) when the CLI is not built; python/ci.sh runs after `cargo test --workspace`,
which builds it."""

import subprocess

import numpy as np

import bloomlanes


def run(cli, *args):
    return subprocess.run([cli, *map(str, args)], check=True, capture_output=True, text=True)


def test_cli_text_keys_same_file(cli, tmp_path):
    keys = [f"line-{i}" for i in range(5000)] + ["ünïcödé", "x" * 100]
    (tmp_path / "keys.txt").write_text("\n".join(keys) + "\n")
    run(cli, "build", tmp_path / "keys.txt", "-o", tmp_path / "cli.blf", "--format", "lines",
        "--capacity", 5002, "--fpp", 0.01, "--layout", "8x32")
    cli_filter = bloomlanes.Filter.load(tmp_path / "cli.blf")
    ours = bloomlanes.Filter.with_params("8x32", cli_filter.blocks, key_type=cli_filter.key_type)
    ours.insert(keys)
    assert cli_filter.to_bytes()[64:] == ours.to_bytes()[64:]
    assert cli_filter.key_count == ours.key_count == len(keys)
    assert cli_filter.contains(keys).all()
    # The CLI reads our file and answers as we do, bit for bit (its --bitmap format).
    ours.save(tmp_path / "ours.blf")
    queries = keys[:100] + [f"absent-{i}" for i in range(3000)]
    (tmp_path / "q.txt").write_text("\n".join(queries) + "\n")
    run(cli, "query", tmp_path / "ours.blf", tmp_path / "q.txt", "--format", "lines",
        "--bitmap", tmp_path / "bits")
    assert (tmp_path / "bits").read_bytes() == ours.contains(queries, bitmap=True).tobytes()


def test_cli_u64_keys_same_bits(cli, tmp_path):
    keys = np.arange(0, 30_000, 3, dtype=np.uint64)
    keys.astype("<u8").tofile(tmp_path / "keys.u64")
    run(cli, "build", tmp_path / "keys.u64", "-o", tmp_path / "cli.blf", "--format", "u64",
        "--fpp", 0.001, "--layout", "16x64", "--seed", 7)
    cli_filter = bloomlanes.Filter.load(tmp_path / "cli.blf")
    assert (cli_filter.layout, cli_filter.seed) == ("16x64", 7)
    ours = bloomlanes.Filter.with_params("16x64", cli_filter.blocks, seed=7,
                                         key_type=cli_filter.key_type or "u64")
    ours.insert(keys)
    assert cli_filter.to_bytes()[64:] == ours.to_bytes()[64:]
    assert cli_filter.contains(keys).all()
    stats = run(cli, "--json", "stats", tmp_path / "cli.blf").stdout
    assert f'"set_bits":{cli_filter.stats()["set_bits"]}' in stats.replace(" ", "")


def test_constructors_size_as_the_cli(cli, tmp_path):
    # Sized by a rate, the CLI rounds the block count onto the grid that folds; the Python
    # constructors must do the same, or a filter made here and one built by the CLI for the
    # same capacity and rate do not merge.
    (tmp_path / "keys.txt").write_text("".join(f"k{i}\n" for i in range(100)))
    for capacity, fpr in [(10_000, 0.01), (123_457, 0.001), (3_000, 0.05)]:
        run(cli, "build", tmp_path / "keys.txt", "-o", tmp_path / "cli.blf", "--format", "lines",
            "--capacity", capacity, "--fpp", fpr, "--layout", "8x32")
        cli_filter = bloomlanes.Filter.load(tmp_path / "cli.blf")
        ours = bloomlanes.Filter(capacity, fpr, layout="8x32")
        spatial = bloomlanes.SpatialFilter(["a", "b"], capacity=capacity, fpr=fpr, layout="8x32")
        counting = bloomlanes.CountingFilter(capacity, fpr, layout="8x32")
        assert ours.blocks == cli_filter.blocks == spatial.params["blocks"], (capacity, fpr)
        assert counting.params["blocks"] == cli_filter.blocks, (capacity, fpr)
