"""Can the built-in loop's model learn ClueDoors' reading at all? A diagnostic, not RL.

Full-batch supervised steps (Adam) on every door context of ClueDoors-v0 with one floor and
``--doors`` doors (no corridor), the target reply chosen by ``--target``: ``right`` (the door the
note names: the task), ``clue`` (the index of the note's colour: readable from the bag of words)
or ``paint`` (the index of door 0's colour: needs the word order). Prints every 100 steps the
mean loss per reply token (nats) and the canonical table's exact success probability on the
task. ``--init-std`` re-draws the weights of every linear layer from N(0, std^2) (the model's
own initialisation is 0.02). ``--warm-start-steps`` first takes the loop's warm start
(``--warm-start-target`` as ``lm train``'s). ``--note door`` plays ClueDoors' ``note="door"``
(the note names the right door's number, the word the reply opens it by) instead of the default
``"colour"``.

    python computing/lm-clue/supervised_probe.py --target right
"""

from __future__ import annotations

import argparse
import time

import torch

from baselines.lib.lm import build_policy, warm_start
from baselines.lib.lm.tokenizer import observation_texts
from routine_envs.text import make_text_env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=("right", "clue", "paint"), default="right")
    parser.add_argument("--doors", type=int, default=2)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--init-std", type=float, default=0.0, help="0: the model's own")
    parser.add_argument("--note", choices=("colour", "door"), default="colour")
    parser.add_argument(
        "--warm-start-steps", type=int, default=0, help="the loop's warm start first (0: none)"
    )
    parser.add_argument(
        "--warm-start-target", choices=("every_reply", "canonical_mass"), default="every_reply"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    env = make_text_env(
        "ClueDoors-v0", num_floors=1, num_doors=args.doors, routine_length=0, note=args.note
    )
    base = env.unwrapped
    policy = build_policy(env, dim=args.dim, num_layers=args.layers, seed=0)
    if args.init_std:
        for module in policy.model.modules():
            if isinstance(module, torch.nn.Linear):
                torch.nn.init.normal_(module.weight, std=args.init_std)
    if args.warm_start_steps:
        warm_start(
            policy,
            lambda: make_text_env(
                "ClueDoors-v0", num_floors=1, num_doors=args.doors, routine_length=0, note=args.note
            ),
            args.warm_start_steps,
            seed=0,
            target=args.warm_start_target,
        )
    texts = observation_texts(env)
    data = []
    for sid, text in texts.items():
        state = base.state_from_id(sid)
        answer = {"right": base.right_door(state), "clue": state.clue, "paint": state.paint}
        reply = policy.reply_tokens(env.action_text(int(answer[args.target])))
        data.append((policy.observation_prompt(text) + reply, len(reply)))
    optimizer = torch.optim.Adam(policy.model.parameters(), lr=args.lr)
    start = time.process_time()
    for step in range(args.steps + 1):
        logp, _ = policy.token_log_probs([d[0] for d in data])
        width = logp.shape[1]
        spans = torch.as_tensor([d[1] for d in data])
        keep = torch.arange(width)[None, :] >= width - spans[:, None]
        loss = -(logp * keep).sum() / keep.sum()
        if step % 100 == 0:
            success = base.success_probability(policy.policy_table(env, texts))
            print(
                f"step {step}: loss {float(loss.detach()):.3f} nats/token, exact success "
                f"{success:.3f}, {time.process_time() - start:.1f} CPU s",
                flush=True,
            )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
