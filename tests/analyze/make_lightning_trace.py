#!/usr/bin/env python3
"""Writes the per-rank traces of the seed's Lightning script (its model, data and Adam; DDP over
gloo on CPU) through Lightning's PyTorchProfiler, with the file names Lightning gives them.
Needs a current torch and lightning (PyPI); fixtures/lightning_ddp_gloo was made with it.

Usage: make_lightning_trace.py OUT_DIR [--devices 2] [--batches 6] [--batch 256]"""
import argparse

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


class SimpleModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(10, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                                    nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, x):
        return self.layers(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=0.01)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    torch.set_num_threads(1)
    profiler = PyTorchProfiler(dirpath=args.out, filename="seed", export_to_chrome=True,
                               schedule=torch.profiler.schedule(wait=1, warmup=1, active=args.batches - 2))
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp", max_epochs=1,
                        limit_train_batches=args.batches, limit_val_batches=0, profiler=profiler,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False)
    trainer.fit(SimpleModel(), DataLoader(SimpleDataset(args.batch * args.batches * args.devices), batch_size=args.batch))


if __name__ == "__main__":
    main()
