"""CPU time of the text reply parser on adversarial replies (repeated tags), per size.

Run from the root of the code to time (``routine_envs`` is imported from ``PYTHONPATH``)::

    PYTHONPATH=. python tests/bench_text_parsing.py                  # 1 kB, 64 kB, 1 MB, 16 MB
    PYTHONPATH=. python tests/bench_text_parsing.py --cpu-limit 120 --sizes 1k,64k,1M

Each (shape, size) is parsed in a child process limited to ``--cpu-limit`` CPU seconds
(``RLIMIT_CPU``), so a quadratic parser is stopped and reported as ``> limit`` instead of
running for hours. The figure is the CPU time (``time.process_time``) of one
``ActionParser.parse`` call on a ``DilutedDoors-v1`` view: the mean over as many calls as take
``--min-cpu`` seconds (the process clock ticks every few milliseconds on some machines).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

#: the adversarial shapes: a unit repeated up to the size (characters).
SHAPES: dict[str, str] = {
    "tool_call": "<tool_call>",
    "action": "<action>",
    "tool_call_lines": "<tool_call>\n",
    "fence_lines": "```json {\n",
}
SIZES: dict[str, int] = {"1k": 1 << 10, "64k": 1 << 16, "1M": 1 << 20, "16M": 1 << 24}


def adversarial_reply(shape: str, size: int) -> str:
    """``SHAPES[shape]`` repeated to exactly ``size`` characters."""
    unit = SHAPES[shape]
    return (unit * (size // len(unit) + 1))[:size]


def time_parse(shape: str, size: int, min_cpu: float) -> float:
    """The mean CPU time (seconds) of one parse of ``adversarial_reply(shape, size)``, over as
    many parses as take ``min_cpu`` seconds (at least one): the process clock may tick only
    every few milliseconds."""
    import gymnasium as gym

    import routine_envs  # noqa: F401  (registers the ids)
    from routine_envs.text import ActionParser, view_for

    parser = ActionParser(view_for(gym.make("DilutedDoors-v1")))
    reply = adversarial_reply(shape, size)
    parses = 0
    start = time.process_time()
    while True:
        parsed = parser.parse(reply)
        parses += 1
        elapsed = time.process_time() - start
        if elapsed >= min_cpu:
            break
    assert not parsed.valid
    return elapsed / parses


def _limit_cpu(seconds: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1k,64k,1M,16M", help="comma-separated: 1k,64k,1M,16M")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated shape names")
    parser.add_argument("--cpu-limit", type=int, default=120, help="CPU seconds per case")
    parser.add_argument(
        "--min-cpu", type=float, default=0.25, help="CPU seconds of parses per case (the mean)"
    )
    parser.add_argument("--case", nargs=2, metavar=("SHAPE", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:  # the child: time one case
        print(time_parse(args.case[0], SIZES[args.case[1]], args.min_cpu))
        return
    import routine_envs

    print(f"routine_envs from {routine_envs.__file__}")
    print(f"{'shape':<16} {'size':>5} {'CPU s':>10}")
    for shape in args.shapes.split(","):
        for size in args.sizes.split(","):
            child = subprocess.run(
                [sys.executable, __file__, "--case", shape, size, "--min-cpu", str(args.min_cpu)],
                capture_output=True,
                text=True,
                preexec_fn=lambda: _limit_cpu(args.cpu_limit),
                check=False,
            )
            if child.returncode == 0:
                shown = f"{float(child.stdout):10.2e}"
            elif child.returncode < 0:  # SIGXCPU / SIGKILL at the CPU limit
                shown = f"> {args.cpu_limit:>7}"
            else:
                shown = "error: " + child.stderr.strip().splitlines()[-1]
            print(f"{shape:<16} {size:>5} {shown}", flush=True)


if __name__ == "__main__":
    main()
