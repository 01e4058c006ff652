"""How often the RS circuit breaker holds calls back from an RS that flaps.

Drives one ``CircuitBreaker`` with a simulated clock: calls arrive at ``--rate`` a second
(exponential gaps) for ``--seconds``; the RS is down and up by turns, each turn lasting
0.5 to 1.5 times ``--turn`` seconds, the first one down. Every call in an up turn
succeeds, every call in a down turn fails. Prints, for the breaker as built and for the
baseline that judges without ``min_span`` (the rule before it, in the same run), the
open spells, the share of calls held back and the share answered, over a few seeds.

    .venv/bin/python benchmarks/flapping_breaker.py [--rate 20] [--turn 0.5] [--seconds 300]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pdpp_gateway.rs.resilience import CircuitBreaker, CircuitOpen, CircuitState


class SimulatedClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def flap(args: argparse.Namespace, seed: int, **judgement: float) -> tuple[int, float, float]:
    """(open spells, share held back, share answered) over one simulated run."""
    draw = random.Random(seed)
    clock = SimulatedClock()
    spells: list[CircuitState] = []
    breaker = CircuitBreaker(clock=clock, on_change=lambda state, _: spells.append(state), **judgement)
    down, flips_at = True, draw.uniform(0.5, 1.5) * args.turn
    held = answered = calls = 0
    while clock.now < args.seconds:
        clock.now += draw.expovariate(args.rate)
        calls += 1
        while clock.now >= flips_at:
            down, flips_at = not down, flips_at + draw.uniform(0.5, 1.5) * args.turn
        try:
            breaker.admit()
        except CircuitOpen:
            held += 1
            continue
        if down:
            breaker.failed()
        else:
            breaker.succeeded()
            answered += 1
    return spells.count(CircuitState.OPEN), held / calls, answered / calls


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=20.0, help="calls a second")
    parser.add_argument("--turn", type=float, default=0.5, help="mean seconds of each down or up turn")
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{args.rate:g} calls/s, turns of {args.turn:g} s (first down), {args.seconds:g} s, {args.seeds} seeds"
    )
    for name, judgement in (("this breaker", {}), ("baseline (min_span 0)", {"min_span": 0.0})):
        runs = [flap(args, seed, **judgement) for seed in range(args.seeds)]
        spells = sum(run[0] for run in runs) / len(runs)
        held = sum(run[1] for run in runs) / len(runs)
        answered = sum(run[2] for run in runs) / len(runs)
        print(
            f"{name}: {spells:.1f} open spells a run, {held:.1%} of calls held back, {answered:.1%} answered"
        )


if __name__ == "__main__":
    main()
