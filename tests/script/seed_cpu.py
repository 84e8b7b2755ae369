"""The seed's script (its Lightning model, data, habits and timing, as its author wrote them), for
CPU: accelerator='cpu', no W&B logger, and a stand-in for the pynvml probe, which needs a GPU.
ddpscope doctor -- python3 seed_cpu.py runs it unmodified at each device count (tests/script)."""
import pytorch_lightning as pl
from pytorch_lightning import LightningModule, LightningDataModule
from torch import nn
from torch.utils.data import Dataset, DataLoader
import torch
import time
import os

# The seed's pynvml probe (nvmlInit, read each GPU, nvmlShutdown) costs a few ms inside every
# training step; with no GPU, plain Python stands in for it for as long (ms).
PROBE_MS = float(os.environ.get("SEED_PROBE_MS", "4"))


def probe_utilization():
    end = time.perf_counter() + PROBE_MS / 1000
    while time.perf_counter() < end:
        pass
    return [0]


class SimpleDataset(Dataset):
    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, idx):
        # Generate some random data
        x = torch.randn(1, 10)
        y = torch.randn(1)
        return x, y


class SimpleDataModule(LightningDataModule):
    def __init__(self, batch_size, size):
        super().__init__()
        self.batch_size = batch_size
        self.size = size

    def setup(self, stage=None):
        self.dataset = SimpleDataset(self.size)

    def train_dataloader(self):
        return DataLoader(self.dataset, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.dataset, batch_size=self.batch_size)


class SimpleModel(LightningModule):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 256)
        self.fc2 = nn.Linear(256, 256)
        self.fc3 = nn.Linear(256, 256)
        self.fc4 = nn.Linear(256, 1)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        x = torch.relu(self.fc3(x))
        x = self.fc4(x)
        return x

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_pred = self(x)
        loss = nn.MSELoss()(y_pred, y)
        self.log('train_loss', loss)

        # Get individual GPU utilization
        utilization = probe_utilization()

        # Log individual GPU utilization
        for i, util in enumerate(utilization):
            self.log(f'gpu_{i}_utilization', util)

        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        y_pred = self(x)
        loss = nn.MSELoss()(y_pred, y)
        self.log('val_loss', loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=0.01)


data_module = SimpleDataModule(batch_size=256, size=5000)
model = SimpleModel()

start_time = time.time()

trainer = pl.Trainer(accelerator='cpu', strategy='ddp', devices=3, max_epochs=200, accumulate_grad_batches=3,
                     logger=False)

trainer.fit(model, data_module)
if trainer.is_global_zero:
    end_time = time.time()
    elapsed_time = end_time - start_time
    print(f"Training completed in {elapsed_time:.2f} seconds")
