"""A Lightning script that trains on one device and fails on two (a rank raises in its step)."""
import sys

import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(10, 1)

    def training_step(self, batch, batch_idx):
        if self.trainer.world_size > 1 and batch_idx == 3:
            raise RuntimeError("this script cannot run on more than one device")
        x, y = batch
        return nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


data = TensorDataset(torch.randn(4096, 10), torch.randn(4096, 1))
trainer = pl.Trainer(accelerator="cpu", devices=1, max_epochs=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False)
trainer.fit(Model(), DataLoader(data, batch_size=64))
sys.exit(0)
