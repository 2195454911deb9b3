"""torch training throughput: stacked against one at a time, and torch against Keras.

Side by side in one run on this machine: every way trains the same healthy digits_cnn
population (bundled digits, 3 epochs, batch 32, Adam; the same seed) in two worker
processes of one thread each (what ``--jobs 2`` does on 2 cores), kept for the whole run
and warmed up first (untimed). The ways take turns, chunk by chunk: each cycle every way
trains its next ``2 x --stack`` instances (a stack per worker; Keras one at a time its
share of ``--keras-instances``), the order of the ways reversed every cycle, so that a
change of machine load (the machine may be shared) falls on every way alike; a way's
rate is its instances over its summed wall times (from both workers' start to the last
one's end), over ``--rounds`` passes of its instances. The ways:

* ``torch-alone``: one instance at a time (:func:`probmut.train.torch.instance.train_unit`);
* ``torch-stacked``: stacks of ``--stack`` members (default 50) as probmut trains them:
  grouped convolutions and batched matrix products, Keras' Adam through torch's fused
  kernel (:mod:`probmut.train.torch.stack`);
* ``torch-vmap``: the same stacks through PyTorch's documented ensembling, ``vmap`` of
  ``functional_call`` over ``stack_module_state``-like stacked weights;
* ``torch-foreach-adam``: the grouped stacks with Keras' Adam as ``torch._foreach_*``
  updates instead of the fused kernel;
* ``torch-compiled`` (with ``--compile``): the grouped model's loss compiled by
  ``torch.compile`` once per worker process and batch shape (its compile time included;
  inductor's on-disk caches, ``TORCHINDUCTOR_CACHE_DIR``, make a later run's cheaper);
* ``keras-alone`` and ``keras-stacked``: probmut's Keras trainer on the same
  architecture and epochs (:func:`probmut.train.instance.train_instance`, and
  :func:`probmut.train.stack.training.train_stack` in stacks of 20, ``--stack auto``'s
  size), Keras one at a time on ``--keras-instances`` (default 40: its rate).

The load average is printed before and after. Run from the repository root::

    python scripts/benchmarks/bench_torch.py
    python scripts/benchmarks/bench_torch.py --instances 40 --rounds 1 \
        --ways torch-alone,torch-stacked
    python scripts/benchmarks/bench_torch.py --compile --json
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import signal
import sys
import time
from pathlib import Path
from queue import Empty

REPO = Path(__file__).resolve().parents[2]
WAYS = ("torch-alone", "torch-stacked", "torch-vmap", "torch-foreach-adam", "keras-alone",
        "keras-stacked")
KERAS_STACK = 20


def _settings(args, stack: int):
    from probmut.train.models import MODELS
    from probmut.train.work import RunSettings

    config = MODELS["digits_cnn"].config.replace(epochs=args.epochs)
    return RunSettings("digits", "digits_cnn", config, seed=42, stack=stack)


def _foreach_adam(opt, w, g, m, v):
    """Keras' Adam as five ``torch._foreach_*`` updates (the fused kernel's alternative)."""
    import torch

    t = opt.iterations
    torch._foreach_lerp_(m, g, 1 - opt.beta_1)
    torch._foreach_mul_(v, opt.beta_2)
    torch._foreach_addcmul_(v, g, g, value=1 - opt.beta_2)
    alpha = opt.learning_rate * math.sqrt(1 - opt.beta_2 ** t) / (1 - opt.beta_1 ** t)
    denominator = torch._foreach_sqrt(v)
    torch._foreach_add_(denominator, opt.epsilon)
    torch._foreach_addcdiv_(w, m, denominator, value=-alpha)


def _compile_grouped():
    """Make every grouped stack compute its members' losses through ``torch.compile``,
    compiled once per worker process and batch shape: the first stack's grouped model
    (the later stacks' are the same: one architecture and settings) with the weights,
    inputs, targets and dropout masks as the compiled function's inputs, ``dynamic=False``."""
    import torch

    from probmut.train.torch import stack as stacking
    from probmut.train.torch.losses import Outputs, batch_loss

    compiled = []

    def step(self, x, target):
        if not compiled:
            grouped, loss, logits_of = self.grouped, self.config.loss, self.template.logits_of

            def losses(weights, x, target, masks):
                return batch_loss(loss, target, Outputs(grouped(weights, x, masks), logits_of))
            compiled.append(torch.compile(losses, dynamic=False))
        values = compiled[0](self.weights, x, target, self.masks(x.shape[1]))
        self.optimizer.step(torch.autograd.grad(values.sum(), [self.weights[n]
                                                               for n in self.names]))
        return values.detach()

    stacking.Stack.step = step


def _runner(way: str, args):
    """``run(instances, population)``: the instances' accuracies, trained the way named."""
    if way.startswith("keras"):
        from probmut.train.instance import train_instance
        from probmut.train.stack.training import train_stack
        from probmut.train.tf_setup import configure_tensorflow

        configure_tensorflow(1)
        stack = lambda a, dataset: train_stack(a, dataset=dataset)  # noqa: E731
        alone = lambda a, dataset: [train_instance(a, dataset=dataset)]  # noqa: E731
        size = KERAS_STACK
    else:
        from probmut.train.torch.instance import train_unit
        from probmut.train.torch.process import configure_torch
        from probmut.train.torch.stack import train_stack

        configure_torch(1)
        formulation = "vmap" if way == "torch-vmap" else "grouped"
        stack = lambda a, dataset: train_stack(a, dataset=dataset, formulation=formulation)  # noqa: E731
        alone = lambda a, dataset: train_unit([a], False, dataset=dataset)  # noqa: E731
        size = args.stack
        if way == "torch-foreach-adam":
            from probmut.train.torch import optimizers

            optimizers._RULES["adam"] = _foreach_adam
        if way == "torch-compiled":
            _compile_grouped()
    from probmut.train.datasets import load_dataset
    from probmut.train.work import Assignment

    data = load_dataset("digits")

    def run(instances, population="healthy"):
        settings = _settings(args, size)
        assignments = [Assignment(settings, population, i) for i in instances]
        if way.endswith("alone"):
            results = [r for a in assignments for r in alone(a, data)]
        else:
            results = [r for start in range(0, len(assignments), size)
                       for r in stack(assignments[start:start + size], data)]
        return [r.accuracy for r in results]
    return run


def _serve(way, args, commands, results):
    """A worker: set up, warm up (untimed: kernels chosen, libraries read from disk), then
    train the instances each command names and report when it started and ended."""
    sys.path.insert(0, str(REPO))
    run = _runner(way, args)
    run([0, 1], population="warm-up")
    results.put("ready")
    while (instances := commands.get()) is not None:
        start = time.time()
        accuracies = run(instances)
        results.put((start, time.time(), accuracies))


class Workers:
    """Two worker processes of one way, kept for the whole benchmark."""

    def __init__(self, way: str, args):
        context = multiprocessing.get_context("spawn")
        self.way, self.results = way, context.Queue()
        self.commands = [context.Queue() for _ in range(2)]
        self.processes = [context.Process(target=_serve, args=(way, args, c, self.results),
                                          daemon=True) for c in self.commands]
        for process in self.processes:
            process.start()
        self._collect()

    def _collect(self) -> list:
        found = []
        while len(found) < len(self.processes):
            try:
                found.append(self.results.get(timeout=5))
            except Empty:
                dead = [p.exitcode for p in self.processes if p.exitcode not in (None, 0)]
                if dead:
                    self.close()
                    raise RuntimeError(f"{self.way}: a worker failed (exit code {dead[0]})") \
                        from None
        return found

    def measure(self, instances: list[int]) -> tuple[float, list[float]]:
        """Wall time and accuracies of ``instances``, half to each worker (stacks of
        consecutive instances)."""
        half = len(instances) // 2
        for commands, share in zip(self.commands, (instances[:half], instances[half:]),
                                   strict=True):
            commands.put(share)
        finished = self._collect()
        seconds = max(end for _, end, _ in finished) - min(start for start, _, _ in finished)
        return seconds, [a for _, _, found in finished for a in found]

    def close(self) -> None:
        for commands in self.commands:
            commands.put(None)
        for process in self.processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()


def bench(args) -> dict:
    """Every way's rate, measured in cycles: each cycle every way trains its next chunk
    (``2 x --stack`` instances; Keras one at a time its share of ``--keras-instances``),
    the ways' order reversed every cycle, so that a change of load falls on all ways."""
    ways = args.ways.split(",") + (["torch-compiled"] if args.compile else [])
    cycles = args.rounds * args.instances // (2 * args.stack)
    result = {"cpus": os.cpu_count(), "load_average_start": os.getloadavg(),
              "instances": args.instances, "epochs": args.epochs, "stack": args.stack,
              "cycles": cycles}
    workers = {way: Workers(way, args) for way in ways}
    totals = {way: [0.0, 0, []] for way in ways}  # seconds, instances, accuracies
    try:
        for cycle in range(cycles):
            for way in (ways if cycle % 2 == 0 else ways[::-1]):
                count = args.keras_instances if way == "keras-alone" else args.instances
                chunk = count * args.rounds // cycles
                first = (cycle * chunk) % count
                seconds, accuracies = workers[way].measure(list(range(first, first + chunk)))
                totals[way][0] += seconds
                totals[way][1] += chunk
                totals[way][2] += accuracies
                print(f"cycle {cycle + 1}/{cycles} {way}: {chunk} in {seconds:.1f} s "
                      f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    finally:
        for pool in workers.values():
            pool.close()
    result["load_average_end"] = os.getloadavg()
    rate = {way: n / seconds * 60 for way, (seconds, n, _) in totals.items()}
    result["instances_per_min"] = {way: round(value, 1) for way, value in rate.items()}
    result["mean_accuracy"] = {way: round(sum(a) / len(a), 4) for way, (_, _, a) in totals.items()}
    ratios = {}
    for way in ways:
        if way != "torch-alone" and "torch-alone" in rate:
            ratios[f"{way} / torch-alone"] = round(rate[way] / rate["torch-alone"], 2)
    for torch_way, keras_way in (("torch-alone", "keras-alone"),
                                 ("torch-stacked", "keras-stacked"),
                                 ("torch-stacked", "keras-alone")):
        if torch_way in rate and keras_way in rate:
            ratios[f"{torch_way} / {keras_way}"] = round(rate[torch_way] / rate[keras_way], 2)
    result["ratios"] = ratios
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--keras-instances", type=int, default=40)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--stack", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ways", default=",".join(WAYS))
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # a stopped run stops its workers
    result = bench(args)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"load average {result['load_average_start']} -> {result['load_average_end']}")
    for way, value in result["instances_per_min"].items():
        print(f"  {way:20s} {value:8.1f} instances/min")
    for name, value in result["ratios"].items():
        print(f"  {name:36s} {value:6.2f}x")


if __name__ == "__main__":
    main()
