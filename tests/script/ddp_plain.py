"""A plain torch DDP script (no Lightning) for ddpscope doctor -- torchrun / srun: an MLP trained
with Adam on random data through a DataLoader. Its rank comes from torchrun (RANK, WORLD_SIZE) or
Slurm (SLURM_PROCID, SLURM_NTASKS). SLOW_RANK=R SLOW_MS=M: rank R's loader takes M ms more per
batch, a straggler whose cause is its input. STEPS=N: optimizer steps (default 40)."""
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset

rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
world = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")))
if world > 1:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", os.environ.get("PLAIN_PORT", "29531"))
    dist.init_process_group("gloo", rank=rank, world_size=world)
torch.set_num_threads(1)
torch.manual_seed(0)

slow_ms = float(os.environ.get("SLOW_MS", "0")) if int(os.environ.get("SLOW_RANK", "-1")) == rank else 0.0


class Noise(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, index):
        return torch.randn(10), torch.randn(1)


def collate(samples):
    if slow_ms:
        time.sleep(slow_ms / 1000)
    return torch.stack([s[0] for s in samples]), torch.stack([s[1] for s in samples])


model = nn.Sequential(nn.Linear(10, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
if world > 1:
    model = nn.parallel.DistributedDataParallel(model)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
steps = int(os.environ.get("STEPS", "40"))
for step, (x, y) in enumerate(DataLoader(Noise(), batch_size=64, collate_fn=collate)):
    if step == steps:
        break
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
if world > 1:
    dist.destroy_process_group()
if rank == 0:
    print("done")
