#!/usr/bin/env python3
"""Writes the per-rank traces of the seed's Lightning script (its model, data and Adam; DDP over
gloo on CPU) through Lightning's PyTorchProfiler, with the file names and folder Lightning gives
them: per rank a training_step trace and a validation_step trace. --probe-ms stands in for the
seed's per-step pynvml probe: that many ms of plain Python inside every training_step.
Needs a current torch and lightning (PyPI); fixtures/lightning_ddp_gloo was made with it.

Usage: make_lightning_trace.py OUT_DIR [--devices 2] [--batches 8] [--batch 256] [--val-batches 2]
                               [--probe-ms 0]"""
import argparse
import time

import lightning as L
import torch
from lightning.pytorch.profilers import PyTorchProfiler
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SimpleDataset(Dataset):
    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, idx):
        return torch.randn(10), torch.randn(1)


def probe(ms):
    end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < end:
        pass


class SimpleModel(L.LightningModule):
    def __init__(self, probe_ms):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(10, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                                    nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
        self.probe_ms = probe_ms

    def forward(self, x):
        return self.layers(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss)
        if self.probe_ms:
            probe(self.probe_ms)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=0.01)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--val-batches", type=int, default=2)
    parser.add_argument("--probe-ms", type=float, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    profiler = PyTorchProfiler(dirpath=args.out, filename="seed", export_to_chrome=True,
                               schedule=torch.profiler.schedule(wait=1, warmup=1, active=args.batches - 2))
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp", max_epochs=1,
                        limit_train_batches=args.batches, limit_val_batches=args.val_batches,
                        num_sanity_val_steps=0, profiler=profiler, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False)
    data = SimpleDataset(args.batch * args.batches * args.devices)
    trainer.fit(SimpleModel(args.probe_ms), DataLoader(data, batch_size=args.batch),
                DataLoader(data, batch_size=args.batch))


if __name__ == "__main__":
    main()
