"""Docs pages agree with the code they describe."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_environment_pages_are_generated_from_docstrings():
    for path, text in load_generator().pages().items():
        assert path.exists(), f"{path} is missing: run python docs/generate.py"
        assert path.read_text() == text, f"{path} is stale: run python docs/generate.py"


def test_docstrings_have_gymnasium_sections():
    sections = [
        "Description",
        "Action Space",
        "Observation Space",
        "Rewards",
        "Episode End",
        "Information",
        "Arguments",
        "Version History",
    ]
    for path in (ROOT / "docs" / "envs").glob("*.md"):
        text = path.read_text()
        for section in sections:
            assert f"## {section}" in text, (path.name, section)


def python_blocks(path: Path) -> list[str]:
    text = path.read_text()
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


def run_block(code: str, namespace: dict) -> None:
    """Run a docs code block as a user would: without this module's ``__future__`` flags."""
    exec(compile(code, "<docs>", "exec", dont_inherit=True), namespace)


def test_estimator_docs_worked_example_runs():
    """The docs' 'adding your own estimator' example runs as written (training shortened)."""
    from routine_envs import credit

    blocks = python_blocks(ROOT / "docs" / "estimators.md")
    context, define, train, collect = blocks[1], blocks[2], blocks[3], blocks[4]
    namespace: dict = {}
    run_block(context, namespace)
    assert namespace["oracle"].sigma == 0.1 and namespace["oracle"].policy is namespace["table"]
    namespace = {}
    try:
        run_block(define, namespace)
        run_block(train.replace("model.learn(50_000)", "model.learn(300)"), namespace)
        run_block(collect, namespace)
        assert "critical_gae" in credit.ESTIMATORS
        built = credit.build_estimator("critical_gae", credit.EstimatorContext(gamma=0.5))
        assert (built.gamma, built.gae_lambda) == (0.5, 0.95)
        assert namespace["advantages"].shape == (namespace["batch"].num_steps,)
        assert namespace["model"].num_timesteps >= 300
    finally:
        credit.ESTIMATORS.pop("critical_gae", None)


def test_readme_quickstart_runs():
    readme = ROOT / "README.md"
    quickstart = python_blocks(readme)[0]
    assert 'gym.make("DilutedDoors-v1"' in quickstart
    exec(quickstart, {})
