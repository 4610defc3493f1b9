"""The command-line grammar of the baselines: :mod:`routine_envs.cli` (one generator from settings
dataclasses for every entry point, ``routine_envs`` ones included), re-exported here with what
only the baselines add: the shared setting ``--env-kwargs`` checked against the env. The tree of
every ``python -m baselines`` command is :mod:`baselines.commands`, gathered from the rows each
experiment package declares.

See :mod:`routine_envs.cli` for how fields become flags.
"""

from __future__ import annotations

from routine_envs.cli import (
    Command,
    CommandFailed,
    Group,
    Interrupted,
    SettingsParser,
    add_settings_arguments,
    check_output_folder,
    check_unique,
    duplicates,
    fail,
    json_object,
    load,
    main,
    os_error_line,
    parse,
    parse_settings,
    resume_command,
    run_main,
    settings_from,
    settings_parser,
    to_argv,
)

__all__ = [
    "Command",
    "CommandFailed",
    "Group",
    "Interrupted",
    "SettingsParser",
    "add_settings_arguments",
    "check_output_folder",
    "check_unique",
    "duplicates",
    "fail",
    "json_object",
    "load",
    "main",
    "os_error_line",
    "parse",
    "parse_settings",
    "resume_command",
    "run_main",
    "settings_from",
    "settings_parser",
    "to_argv",
]
