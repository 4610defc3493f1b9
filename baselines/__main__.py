"""``python -m baselines COMMAND ...``: every command of the project (``--help`` lists them, one
line each; :mod:`baselines.commands`)."""

from baselines.commands import console

if __name__ == "__main__":
    console()
