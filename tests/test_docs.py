"""Docs that run: every ```python block of the README runs (the blocks in order, in one
namespace, as a reader pastes them) and every file in examples/ runs to the end."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = sorted(f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".py"))


def readme_blocks():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_the_readme_has_python_blocks():
    assert len(readme_blocks()) >= 3


def _run(code_or_path, tmp_path, timeout):
    args = [code_or_path] if os.path.exists(code_or_path) else ["-c", code_or_path]
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r.stdout


def test_readme_python_blocks_run_and_print_what_they_show(tmp_path):
    """A ``print(…)  # TEXT`` line of a block shows TEXT: the line it prints."""
    code = "\n\n".join(readme_blocks())
    shown = [line.split("#", 1)[1].strip() for line in code.splitlines()
             if line.startswith("print(") and "#" in line.split(")")[-1]]
    assert len(shown) >= 3
    printed = _run(code, tmp_path, timeout=600).splitlines()
    assert printed == shown


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs(name, tmp_path):
    out = _run(os.path.join(ROOT, "examples", name), tmp_path, timeout=600)
    assert out.strip()
