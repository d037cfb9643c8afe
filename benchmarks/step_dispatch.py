"""What a training step asks of the device, counted on a CPU: operators dispatched and module calls per step.

    .venv/bin/python benchmarks/step_dispatch.py                       # this checkout's steps
    PYTHONPATH=OTHER/src .venv/bin/python benchmarks/step_dispatch.py --benchmarks OTHER/benchmarks   # another's

On a GPU a step whose kernels are small waits on the host: every ATen operator is at least one kernel launch, and a
step that runs its batch in many small passes launches the same operators many times. Those counts do not depend on
the device, so a CPU measures them: for each workload of ``benchmarks/gpu_throughput.py`` (the checkout's own, or
another checkout's with ``--benchmarks``: before and after a change), one training step after a warm-up is run
under torch's profiler, in fp32, and the script prints the ATen operators it dispatched (every ``aten::`` event,
nested ones included), the operators per trained token, the encoder's forward calls and all module calls, and the
step's wall time here. Fewer layers than the paper's (``--layers``, 2 by default) keep it short: the operators of a
step grow with the layers in the same proportion before and after. ``--passes N`` fixes this checkout's rows per pass
(``auto`` sizes them to this CPU's memory, which splits the larger batches a GPU takes whole; an older checkout
has its own fixed chunks). Results go to ``results/benchmarks/step_dispatch.json``.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

OUTPUT = Path("results/benchmarks/step_dispatch.json")


def load_benchmark(directory: Path):
    """The ``gpu_throughput`` module of the checkout whose benchmarks are in ``directory``."""
    spec = importlib.util.spec_from_file_location("gpu_throughput", directory / "gpu_throughput.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_throughput"] = module
    spec.loader.exec_module(module)
    return module


def counted(step, encoder: torch.nn.Module) -> dict:
    """One call of ``step`` profiled: ATen operators, encoder calls, all module calls, seconds, tokens."""
    encoder_calls, module_calls = [], []
    hooks = [encoder.register_forward_hook(lambda *_: encoder_calls.append(1)),
             torch.nn.modules.module.register_module_forward_hook(lambda *_: module_calls.append(1))]
    try:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            started = time.perf_counter()
            tokens = step()
            seconds = time.perf_counter() - started
    finally:
        for hook in hooks:
            hook.remove()
    operators = sum(1 for event in prof.events() if event.name.startswith("aten::"))
    return {"aten_ops": operators, "aten_ops_per_1k_tokens": round(1000 * operators / tokens, 2),
            "encoder_calls": len(encoder_calls), "module_calls": len(module_calls), "tokens": tokens,
            "profiled_seconds": round(seconds, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmarks", type=Path, default=Path(__file__).resolve().parent,
                        help="the benchmarks/ directory whose gpu_throughput.py builds the steps")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--only", nargs="+", help="workloads (monobert-full, ..., splade, dpt, condenser)")
    parser.add_argument("--passes", type=int, help="rows per pass of this checkout's steps (default: auto)")
    args = parser.parse_args()
    benchmark = load_benchmark(args.benchmarks)
    from peftir.execution.seam import Execution

    execution = Execution(torch.device("cpu"))
    passes = {"passes": args.passes} if args.passes else {}        # an older benchmark takes no passes
    builders = {name: (lambda name=name: benchmark.rankers(execution, args.layers, name, **passes))
                for name in benchmark.RANKER_WORKLOADS}
    builders.update({name: (lambda build=build: build(execution, args.layers, **passes))
                     for name, (_, _, build) in benchmark.FAMILIES.items()})
    results = []
    for name, build in builders.items():
        if args.only and name not in args.only:
            continue
        torch.manual_seed(0)
        encoder, train, _ = build()
        train()                                       # warm-up: first-call allocations and lazy state
        row = {"workload": name, "layers": args.layers, "benchmarks": str(args.benchmarks), **counted(train, encoder)}
        print(json.dumps(row), flush=True)
        results.append(row)
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
