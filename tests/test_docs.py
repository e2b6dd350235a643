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


@pytest.mark.slow
def test_readme_python_blocks_run_and_print_what_they_show(tmp_path):
    """A ``print(…)  # TEXT`` line of a block shows TEXT: the line it prints."""
    code = "\n\n".join(readme_blocks())
    # the comment after the call's closing parenthesis (the printed text may hold parentheses too)
    shown = [m.group(1).strip() for m in re.finditer(r"^print\(.*?\)\s+#(.*)$", code, re.M)]
    assert len(shown) >= 3
    printed = _run(code, tmp_path, timeout=600).splitlines()
    assert printed == shown


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs(name, tmp_path):
    out = _run(os.path.join(ROOT, "examples", name), tmp_path, timeout=600)
    assert out.strip()


def _movielens_file(path, users=300, items=120, seed=11):
    """u.data-shaped ratings: 1-based ids, tab-separated, a timestamp column, sorted by
    user, power-law user degrees and Zipf item popularity."""
    import numpy as np
    rng = np.random.default_rng(seed)
    pop = 1.0 / np.arange(1, items + 1) ** 1.4
    lines = []
    for u in range(1, users + 1):
        deg = int(min(rng.zipf(1.6) + 4, items // 2))
        for i in rng.choice(items, size=deg, replace=False, p=pop / pop.sum()):
            lines.append(f"{u}\t{i + 1}\t{rng.integers(1, 6)}\t{874965758 + int(rng.integers(0, 10**6))}\n")
    path.write_text("".join(lines))


def test_readme_checkpoint_and_resume_commands_run_as_printed(tmp_path):
    """The 'Data in, models out' block's `tux2 run mf ratings.txt …` lines, in order, on a
    ratings.txt: the second resumes the first's checkpoint and ends at epoch 40."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    block = text.split("## Data in, models out", 1)[1].split("```", 2)[1]
    commands = [line.split("#")[0].split() for line in block.splitlines() if line.startswith("tux2 run mf ratings.txt")]
    assert len(commands) == 2 and "--checkpoint-every" in commands[0] and "--resume" in commands[1]
    _movielens_file(tmp_path / "ratings.txt")
    for argv in commands:
        r = subprocess.run([sys.executable, "-m", "tux2.cli", *argv[1:], "--quiet"], capture_output=True, text=True,
                           timeout=600, cwd=tmp_path)
        assert r.returncode == 0, r.stderr[-2000:]
    import json
    assert json.loads((tmp_path / "model" / "model.json").read_text())["iteration"] == 40
    assert "Traceback" not in r.stderr
