"""Installed as users install benchmarks (issue 24): the wheel carries the baselines, their
configs, the protocol and the verified references, and the ``routine-envs`` console script; run
from a folder outside the checkout, in a fresh virtual environment, it scores an outside method
on the smoke tier and trains a few hundred steps.

Nothing is downloaded: the wheel is built without build isolation (this interpreter's
setuptools), the virtual environment has no pip of its own, and its heavy dependencies (torch,
SB3, ...) are this interpreter's site-packages, reached through a ``.pth`` file (their own
``.pth`` files, the checkout's editable install among them, are not read from there), so the
project itself can only come from the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests import children

pytestmark = pytest.mark.wheel
ROOT = Path(__file__).resolve().parents[1]
SKIP = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "results", "__pycache__", ".*_cache",
    ".hypothesis",
)  # fmt: skip

METHOD = '''
from dataclasses import dataclass
from typing import ClassVar

from routine_envs import credit


@dataclass
class HalfMC:
    """The trajectory advantage, halved (an outside method for the test)."""

    scale: float = 0.5
    name: ClassVar[str] = "half_mc"
    requires: ClassVar[frozenset[str]] = frozenset()
    trains_critic: ClassVar[bool] = False

    def __call__(self, batch):
        credit.check_batch(self, batch)
        return credit.Advantages(self.scale * credit.TrajectoryMC()(batch).advantages)
'''


def run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    return children.run(argv, cwd=cwd, env=env, timeout=timeout, check=True).stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fresh virtual environment outside the checkout with the built wheel installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=SKIP)  # the build writes into its source folder
    wheels = tmp / "wheels"
    run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
         "--no-index", "-q", "-w", str(wheels)],
        tmp, dict(os.environ),
    )  # fmt: skip
    (wheel,) = wheels.glob("routine_envs-*.whl")
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp, dict(os.environ))
    python = venv / "bin" / "python"
    purelib = Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            tmp, dict(os.environ)).strip()
    )  # fmt: skip
    heavy = [p for p in {*site.getsitepackages(), sysconfig.get_paths()["purelib"]}]
    (purelib / "heavy_dependencies.pth").write_text("\n".join(sorted(heavy)) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed",
         "-q", str(wheel)],
        tmp, env,
    )  # fmt: skip
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "my_method_h24.py").write_text(METHOD)
    return {"wheel": wheel, "venv": venv, "python": python, "outside": outside, "env": env}


def test_the_wheel_ships_the_baselines_their_data_and_the_console_script(installed):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    assert "baselines/commands.py" in names and "baselines/lib/runner.py" in names
    assert "baselines/protocols/rb1.yaml" in names and "baselines/protocols/rb2.yaml" in names
    assert "baselines/protocols/rb1-batched-costs.json" in names  # benchmark plan reads it
    assert "baselines/configs/DilutedDoors-v1.yml" in names
    folder = ROOT / "baselines" / "references"
    shipped = sorted(p.relative_to(ROOT).as_posix() for p in folder.rglob("*") if p.is_file())
    assert shipped and set(shipped) <= set(names)
    entry = zipfile.ZipFile(installed["wheel"]).read(
        next(n for n in names if n.endswith("entry_points.txt"))
    )
    assert b"routine-envs = baselines.commands:console" in entry
    for name in shipped:  # byte-identical: the manifest verifies them where they are installed
        assert zipfile.ZipFile(installed["wheel"]).read(name) == (ROOT / name).read_bytes()


def test_installed_console_script_runs_the_benchmark_and_training_outside_the_checkout(
    installed,
):
    outside, env = (
        installed["outside"],
        {**installed["env"], "PYTHONPATH": str(installed["outside"])},
    )
    script = str(installed["venv"] / "bin" / "routine-envs")
    where = run(
        [str(installed["python"]), "-c",
         "import baselines, routine_envs; print(baselines.__file__); print(routine_envs.__file__)"],
        outside, env,
    ).split()  # fmt: skip
    assert all(Path(w).is_relative_to(installed["venv"]) for w in where), where
    listing = run([script, "--help"], outside, env)
    assert "benchmark" in listing and "train" in listing and "diagnose" in listing
    # the verified references are found in the installed package, not in a checkout
    refs = run([script, "benchmark", "references", "--tier", "lite"], outside, env)
    assert "verified: 10 files match MANIFEST.sha256" in refs  # rb2: 9 methods and LAB.json
    out = outside / "results"
    run(
        [script, "benchmark", "run", "--method", 'my_method_h24:HalfMC{"scale": 0.5}', "--tier",
         "smoke", "--workers", "1", "--no-progress", "--out", str(out)],
        outside, env,
    )  # fmt: skip
    (folder,) = (out / "rb2" / "smoke").iterdir()  # the default protocol, rb2
    records = [json.loads(x) for x in (folder / "results.jsonl").read_text().splitlines()]
    assert len(records) == 8 and {r["density_kwarg"] for r in records} == {"routine_length"}
    assert sorted(r["density_value"] for r in records) == [0] * 4 + [3] * 4
    assert {r["env_kwargs"]["num_floors"] for r in records} == {1, 2}
    assert all(r["estimator"]["name"] == "my_method_h24:HalfMC" for r in records)
    report = (folder / "report" / "report.md").read_text()
    assert 'my_method_h24:HalfMC{"scale": 0.5}' in report
    train = outside / "train"
    printed = run(
        [script, "train", "--total-timesteps", "320", "--eval-every", "160", "--no-progress",
         "--out", str(train)],
        outside, env,
    )  # fmt: skip
    assert "final success" in printed
    assert len((train / "success.csv").read_text().splitlines()) == 1 + 3  # 0, 160, 320
    assert not (outside / "baselines").exists()  # nothing was run from a source tree
