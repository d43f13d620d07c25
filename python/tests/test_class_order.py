"""One class order in the CLI and in Python: a list of class names numbers them from 1 in the
order given (the first is class 1, the lowest priority; the higher number wins a shared cell),
so `build --kind spatial --classes allow,mirror,deny` and `SpatialFilter(["allow", "mirror",
"deny"], ...)` give the same class numbers, the same priorities and the same file bytes.
Skipped (with a visible SKIP line) when the CLI is not built."""

import json
import subprocess

import numpy as np

import bloomlanes

CLASSES = ["allow", "mirror", "deny"]


def run(cli, *args):
    return subprocess.run([cli, *map(str, args)], check=True, capture_output=True, text=True)


def rules(tmp_path, n=3000):
    """key,action rows: key i in class CLASSES[i % 3]; written deny first, so that the order
    of first appearance is not the listed order."""
    keys = np.arange(n, dtype=np.uint64)
    rows = sorted(range(n), key=lambda i: (-(i % 3), i))
    text = "key,action\n" + "".join(f"{keys[i]},{CLASSES[i % 3]}\n" for i in rows)
    (tmp_path / "rules.csv").write_text(text)
    return keys, (keys % 3 + 1).astype(np.uint16)


def test_cli_and_python_number_a_class_list_alike_and_write_the_same_bytes(cli, tmp_path):
    keys, classes = rules(tmp_path)
    out = run(cli, "--json", "build", tmp_path / "rules.csv", "-o", tmp_path / "cli.blf",
              "--kind", "spatial", "--csv-column", "key", "--class-column", "action",
              "--key-type", "u64", "--classes", ",".join(CLASSES), "--layout", "8x32",
              "--seed", 5)
    table = json.loads(out.stdout)["labels"]["classes"]
    assert [(c["class"], c["name"]) for c in table] == [(1, "allow"), (2, "mirror"), (3, "deny")]
    cli_filter = bloomlanes.SpatialFilter.load(tmp_path / "cli.blf")
    assert cli_filter.class_names == CLASSES
    p = cli_filter.params
    ours = bloomlanes.SpatialFilter(CLASSES, blocks=p["blocks"], layout="8x32", seed=5,
                                    key_type="u64")
    for number, name in enumerate(CLASSES, start=1):
        ours.insert(keys[classes == number], name)
    assert ours.to_bytes() == cli_filter.to_bytes()
    # Same priority: deny (3) wins where it shares cells, in both.
    got = ours.classify(keys)
    assert (got >= classes).all()
    assert (got[classes == 3] == 3).all()


def test_cli_class_files_number_in_the_order_given(cli, tmp_path):
    keys, classes = rules(tmp_path)
    args = []
    for number, name in enumerate(CLASSES, start=1):
        path = tmp_path / f"{name}.txt"
        path.write_text("".join(f"{k}\n" for k in keys[classes == number]))
        args += ["--class", f"{name}={path}"]
    run(cli, "build", "-o", tmp_path / "files.blf", "--kind", "spatial", "--key-type", "u64",
        "--layout", "8x32", *args)
    f = bloomlanes.SpatialFilter.load(tmp_path / "files.blf")
    assert f.class_names == CLASSES
    ours = bloomlanes.SpatialFilter(CLASSES, blocks=f.params["blocks"], layout="8x32",
                                    key_type="u64")
    ours.insert(keys, classes)
    assert ours.to_bytes() == f.to_bytes()
