#!/usr/bin/env python3
"""Writes per-rank torch.profiler traces of the seed's model trained with DDP over gloo on CPU.

Usage: make_ddp_trace.py OUT_DIR --ranks N [--steps S] [--batch B] [cause options]
Causes are injected for real, each on one rank or on all:
  --slow-forward-rank R --slow-forward-ms X   rank R sleeps X ms inside its forward
  --slow-loader-rank R --slow-loader-ms X     rank R's dataset sleeps X ms per batch
  --python-ms X                               every rank runs X ms of plain Python per step
  --extra-collective                          one more allreduce per step (a logged metric)
  --accumulate K                              K micro-batches per step, without no_sync
  --no-sync                                   with --accumulate: all but the last inside no_sync()
  --pin K                                     rank R runs on core (R + K) mod N of the N cores this
                                              process may use
  --cycles C                                  C profiling cycles of --steps steps, each written by
                                              torch's tensorboard_trace_handler under its own name
                                              (<host>_<pid>.<time ns>.pt.trace.json)
Writes OUT_DIR/rank<R>.pt.trace.json per rank, with shapes recorded (the collectives' sizes):
torch 1.13 without Kineto writes the legacy bare array (no rank inside), so the rank is in the
file's name."""
import argparse
import contextlib
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class RandomRows(Dataset):
    def __init__(self, size, rank, slow_rank, slow_ms):
        self.size = size
        self.delay = slow_ms / 1000.0 if rank == slow_rank else 0.0

    def __len__(self):
        return self.size

    def __getitem__(self, idx):
        return torch.randn(10), torch.randn(1)


class SlowCollate:
    def __init__(self, delay):
        self.delay = delay

    def __call__(self, rows):
        if self.delay:
            time.sleep(self.delay)
        return torch.stack([r[0] for r in rows]), torch.stack([r[1] for r in rows])


class Mlp(nn.Module):
    def __init__(self, slow_s):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(10, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                                    nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
        self.slow_s = slow_s

    def forward(self, x):
        if self.slow_s:
            time.sleep(self.slow_s)
        return self.layers(x)


def plain_python(ms):
    end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < end:
        pass


def run(rank, args):
    if args.pin is not None:
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[(rank + args.pin) % len(cores)]})
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(0)
    slow_s = args.slow_forward_ms / 1000.0 if rank == args.slow_forward_rank else 0.0
    model = DistributedDataParallel(Mlp(slow_s))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    data = RandomRows(args.batch * args.ranks * args.accumulate * ((args.steps + 1) * max(1, args.cycles) + 1), rank,
                      args.slow_loader_rank, args.slow_loader_ms)
    sampler = DistributedSampler(data, num_replicas=args.ranks, rank=rank)
    loader = DataLoader(data, batch_size=args.batch, sampler=sampler,
                        collate_fn=SlowCollate(data.delay))
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=args.steps, repeat=args.cycles or 1)
    path = os.path.join(args.out, f"rank{rank}.pt.trace.json")
    done = []
    handler = torch.profiler.tensorboard_trace_handler(args.out) if args.cycles else None

    def save(prof):
        if handler:
            handler(prof)
        else:
            prof.export_chrome_trace(path)
        done.append(path)

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                on_trace_ready=save, record_shapes=True) as prof:
        batches = iter(loader)
        for _ in range((args.steps + 1) * (args.cycles or 1)):
            for micro in range(args.accumulate):
                x, y = next(batches)
                last = micro == args.accumulate - 1
                with model.no_sync() if args.no_sync and not last else contextlib.nullcontext():
                    loss = nn.functional.mse_loss(model(x), y)
                    loss.backward()
            if args.extra_collective:
                metric = loss.detach().clone()
                dist.all_reduce(metric)
            if args.python_ms:
                plain_python(args.python_ms)
            optimizer.step()
            optimizer.zero_grad()
            prof.step()
    dist.destroy_process_group()
    if not done:
        sys.exit(f"rank {rank}: no trace written")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--port", type=int, default=29500)
    parser.add_argument("--slow-forward-rank", type=int, default=-1)
    parser.add_argument("--slow-forward-ms", type=float, default=0)
    parser.add_argument("--slow-loader-rank", type=int, default=-1)
    parser.add_argument("--slow-loader-ms", type=float, default=0)
    parser.add_argument("--python-ms", type=float, default=0)
    parser.add_argument("--extra-collective", action="store_true")
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--no-sync", action="store_true")
    parser.add_argument("--pin", type=int)
    parser.add_argument("--cycles", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.environ["MASTER_PORT"] = str(args.port)
    mp.spawn(run, args=(args,), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
