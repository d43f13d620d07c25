"""Runs the README's Python section as a new user would: a fresh virtual environment, the
README's install line (from the repository root, pip from PyPI), then the example code block in
an empty folder. Exit status 0 when the example passes; the failing output otherwise.

    python3 python/tests/readme_example.py [--readme README.md] [--venv DIR]

Run by python/ci.sh; it is not a pytest module (the install line builds the wheel itself).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import venv

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def python_section_blocks(readme: str) -> tuple[str, str]:
    """The install line (the first ``sh`` block) and the example (the first ``python`` block)
    of the README's ``## Python`` section."""
    match = re.search(r"^## Python\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
    if match is None:
        raise SystemExit("README has no '## Python' section")
    section = match.group(1)
    blocks = re.findall(r"^```(\w+)\n(.*?)^```", section, re.S | re.M)
    install = next((body for lang, body in blocks if lang == "sh"), None)
    example = next((body for lang, body in blocks if lang == "python"), None)
    if install is None or example is None:
        raise SystemExit("README's Python section lacks an sh install block or a python block")
    return install, example


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    parser.add_argument("--venv", default=None, help="where to make the environment "
                        "(default: a temporary folder, removed afterwards)")
    args = parser.parse_args()
    with open(args.readme, encoding="utf-8") as f:
        install, example = python_section_blocks(f.read())

    with tempfile.TemporaryDirectory(prefix="bloomlanes-readme-") as scratch:
        env_dir = os.path.abspath(args.venv or os.path.join(scratch, "venv"))
        start = time.monotonic()
        venv.create(env_dir, with_pip=True, clear=True)
        env = dict(os.environ, VIRTUAL_ENV=env_dir,
                   PATH=os.path.join(env_dir, "bin") + os.pathsep + os.environ["PATH"])
        env.pop("PYTHONPATH", None)
        print(f"--- README install line, in {ROOT}:\n{install}", flush=True)
        subprocess.run(["bash", "-euo", "pipefail", "-c", install], cwd=ROOT, env=env, check=True)
        installed = time.monotonic()
        workdir = os.path.join(scratch, "example")
        os.mkdir(workdir)
        script = os.path.join(workdir, "example.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write(example)
        print("--- README example", flush=True)
        done = subprocess.run([os.path.join(env_dir, "bin", "python"), script], cwd=workdir,
                              env=env)
        end = time.monotonic()
        print(f"--- install {installed - start:.1f} s, example {end - installed:.1f} s: "
              f"{'passed' if done.returncode == 0 else 'FAILED'}")
        return done.returncode


if __name__ == "__main__":
    sys.exit(main())
