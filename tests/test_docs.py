"""Docs pages agree with the code they describe."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from baselines.commands import settings_of
from tests.utils import has_pettingzoo

ROOT = Path(__file__).resolve().parents[1]


def load_generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_environment_pages_are_generated_from_docstrings():
    """Every environment class of the package has its page, as ``docs/generate.py`` writes it
    now, and no page is left that none has; a failure names the command that fixes it."""
    generator = load_generator()
    pages = generator.pages()
    for path, text in pages.items():
        assert path.exists(), f"{path} is missing: run {generator.COMMAND}"
        assert path.read_text() == text, f"{path} is stale: run {generator.COMMAND}"
    left = sorted(set((ROOT / "docs" / "envs").glob("*.md")) - set(pages))
    assert not left, (
        f"no environment has the pages {left}: delete them, then run {generator.COMMAND}"
    )


def test_a_stale_page_names_the_command_that_fixes_it(tmp_path, monkeypatch):
    """The check above fails with the command to run when a page differs from its docstring."""
    generator = load_generator()
    path, text = next(iter(generator.pages().items()))
    stale = tmp_path / path.name
    stale.write_text(text.replace("## Description", "## Old description", 1))
    monkeypatch.setattr(generator, "pages", lambda: {stale: text})
    monkeypatch.setattr("tests.test_docs.load_generator", lambda: generator)
    with pytest.raises(AssertionError, match=r"is stale: run python docs/generate\.py"):
        test_environment_pages_are_generated_from_docstrings()


def test_the_contributing_example_has_its_checklists_sections():
    """The worked example of docs/contributing-an-env.md has every docstring section its own
    checklist asks for and registers with one call."""
    page = (ROOT / "docs" / "contributing-an-env.md").read_text()
    checklist = " ".join(page.split("- **Docstring sections**", 1)[1].split("\n- ", 1)[0].split())
    code = python_blocks(ROOT / "docs" / "contributing-an-env.md")[0]
    for section in SECTIONS:
        assert section in checklist, section
        assert f"## {section}" in code, section
    assert code.count("register_dynamics(") == 1 and "gym.register(" not in code


#: the docstring sections of an environment (Gymnasium's toy-text envs)
SECTIONS = (
    "Description",
    "Action Space",
    "Observation Space",
    "Rewards",
    "Starting State",
    "Episode End",
    "Information",
    "Arguments",
    "Version History",
)


def test_docstrings_have_gymnasium_sections():
    for path in (ROOT / "docs" / "envs").glob("*.md"):
        text = path.read_text()
        for section in SECTIONS:
            assert f"## {section}" in text, (path.name, section)


def test_every_env_page_says_what_the_observation_reveals():
    """Every environment class's page (the team envs' too) carries its docstring's "What the
    observation reveals" paragraph, and the v0s that leak say so and name the v1 that does not
    (the contract suite's leak probes check the claims: tests/test_contract_leaks.py)."""
    generator = load_generator()
    pages = {path.name: text for path, text in generator.pages().items()}
    env_pages = {name: text for name, text in pages.items() if name != "cli.md"}
    assert {"routine_grid_v1.md", "diluted_doors_v1.md", "code_fix.md"} <= set(env_pages)
    if has_pettingzoo():
        assert {"team_doors_v1.md", "team_grid_v1.md", "team_doors.md"} <= set(env_pages)
    for name, text in env_pages.items():
        assert "**What the observation reveals.**" in text, name
    for name, v1 in (("routine_grid.md", "RoutineGrid-v1"), ("diluted_doors.md", "-v1")):
        reveals = env_pages[name].split("**What the observation reveals.**", 1)[1]
        paragraph = reveals.split("\n\n", 1)[0]
        assert "leaks" in paragraph and v1 in paragraph, name


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


# ------------------------------------------------------------------ the command-line reference
def test_cli_reference_is_generated_from_the_parsers():
    """docs/cli.md is what docs/generate.py writes from the entry points' parsers: a flag added,
    removed or re-described in a settings dataclass makes it stale."""
    generator = load_generator()
    page = generator.cli_page()
    assert generator.CLI_PAGE.read_text() == page, (
        "docs/cli.md is stale: run python docs/generate.py"
    )


def test_cli_reference_covers_every_entry_point_and_every_flag_once():
    generator = load_generator()
    page = generator.cli_page()
    commands = [c for c, *_ in generator.entry_points()]
    assert "python -m baselines diagnose" in commands
    assert "python -m baselines bench" in commands
    for command in commands:
        assert page.count(f"\n## `{command}`\n") == 1, command
    # within a section each flag has one row; the real parsers accept every flag listed
    for section in page.split("\n## ")[1:]:
        flags = [line.split("`")[1] for line in section.splitlines() if line.startswith("| `")]
        assert len(flags) == len(set(flags)), section.splitlines()[0]
    compare_section = page.split("## `python -m baselines compare`")[1].split("\n## ")[0]
    assert "| `--sweep` | `demo` \\| `rho` |" in compare_section
    assert settings_of("compare", ["--sweep", "demo", "--seeds", "5"]).seeds == [5]
    demo_section = page.split("## `python -m baselines demo`")[1].split("\n## ")[0]
    assert "| `--workers` | int >= 1 |" in demo_section
    assert settings_of("demo", ["--workers", "1"]).workers == 1
    assert "(default: )" not in page  # empty defaults are not shown as blanks
    assert "(default: all) (default" not in page  # a default is said once


def test_other_pages_link_to_the_cli_reference_instead_of_listing_flags():
    """One description per flag: no page but docs/cli.md has a flag table, and the pages that
    sent the lab's flags to each other (estimators.md <-> reproducing.md) link to cli.md."""
    for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        if path.name == "cli.md":
            continue
        headers = [line for line in path.read_text().splitlines() if line.startswith("| flag |")]
        assert not headers, f"{path.name} lists flags: link to docs/cli.md instead"
    estimators = (ROOT / "docs" / "estimators.md").read_text()
    reproducing = (ROOT / "docs" / "reproducing.md").read_text()
    assert "cli.md#python--m-baselines-snr_lab-measure" in estimators
    assert "cli.md#python--m-baselines-snr_lab-measure" in reproducing
    assert "are listed in docs/reproducing.md" not in estimators
    assert "every flag: docs/estimators.md" not in reproducing
    assert "(docs/cli.md)" in (ROOT / "README.md").read_text()


def test_cli_reference_anchors_resolve():
    """Every link into docs/cli.md from a page names a heading of it (GitHub's anchor rule)."""
    import re

    generator = load_generator()
    anchors = {generator.anchor(c) for c, *_ in generator.entry_points()}
    for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"cli\.md#([\w-]+)", path.read_text()):
            assert target in anchors, (path.name, target)


def test_pages_with_training_code_say_to_use_one_torch_thread():
    """Every page whose code trains (``.learn(``) says ``torch.set_num_threads(1)``: with the
    default threads a small policy trains many times slower on a busy machine."""
    pages = []
    for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        if any(".learn(" in block for block in python_blocks(path)):
            pages.append(path.name)
            assert "torch.set_num_threads(1)" in path.read_text(), path.name
    assert {"estimators.md", "integrations.md"} <= set(pages)


def test_every_keyword_of_every_env_is_documented():
    """The Arguments section of every registered environment's docstring names every keyword
    argument its env class takes (its ``inspect.signature``: the dynamics' fields, then its
    options), so the docs pages show the real parameters."""
    import inspect

    from routine_envs import registration
    from routine_envs.envs.base import env_class

    for row in registration.entries():
        if row.dynamics is None:  # (a team adapter: its team env's docs, docs/multiagent.md)
            continue
        cls = env_class(row.dynamics)
        arguments = inspect.getdoc(cls).split("## Arguments", 1)[1].split("## ", 1)[0]
        for name in inspect.signature(cls).parameters:
            assert f"``{name}``" in arguments, (row.id, name)


def test_the_citation_file_and_the_readme_cite_the_package_as_it_is():
    """CITATION.cff (CFF 1.2.0, read by GitHub) and the README's BibTeX name this version of
    the package: a release that bumps the version without them fails here."""
    import tomllib
    import yaml

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert str(cff["version"]) == project["version"] and cff["license"] == project["license"]
    assert [a["name"] for a in cff["authors"]] == [a["name"] for a in project["authors"]]
    readme = (ROOT / "README.md").read_text()
    bibtex = readme.split("```bibtex", 1)[1].split("```", 1)[0]
    assert f"title   = {{{cff['title']}}}" in bibtex
    assert f"version = {{{cff['version']}}}" in bibtex
