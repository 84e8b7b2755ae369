"""A plain torch script that profiles itself with torch.profiler and exports its trace: the hook
stays out of its way, and ddpscope reads the trace it exports (OUT: where; default own.pt.trace.json)."""
import os

import torch
from torch import nn

model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
schedule = torch.profiler.schedule(wait=1, warmup=1, active=6, repeat=1)


def export(profiler):
    profiler.export_chrome_trace(os.environ.get("OUT", "own.pt.trace.json"))


with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                            on_trace_ready=export) as profiler:
    for _ in range(10):
        loss = nn.functional.mse_loss(model(torch.randn(64, 10)), torch.randn(64, 1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        profiler.step()
