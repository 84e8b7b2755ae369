"""The seed's own PyTorch Lightning script (see the seed in README.md), on one GPU.

As the seed wrote it: a dataset of fresh torch.randn samples, batch 256, the 10-256-256-256-1
MLP, MSELoss on [B,1,1] against [B,1] (the broadcast the seed has), self.log every step,
nvmlInit / read every GPU / nvmlShutdown in every training_step, Adam lr 0.01, 200 epochs,
accumulate_grad_batches=3, timed from before the Trainer to the end of fit. Changed: W&B's
logger is Lightning's CSVLogger (no network there), and devices=1 (the seed's 3-GPU DDP
needs 3 GPUs). Prints the seed's "Training completed in N seconds" and one JSON line (with
the epochs run: fewer than asked when --max-seconds, Lightning's max_time, stopped it).

    python3 bench/gpu/seed_lightning.py [--max-epochs 200] [--no-probe] [--devices 1] [--max-seconds S]
                                        [--trace-dir DIR]

With --trace-dir, Lightning's PyTorchProfiler writes the per-rank Kineto traces of steps 3 to 10
there (what `ddpscope analyze` reads), as a user of the seed would make them.

Exit 0; 3 when torch, Lightning or a GPU is missing here (the reason on stderr); 2 for bad
arguments.
"""
import argparse
import datetime
import json
import sys
import time


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-epochs", type=int, default=200)
    parser.add_argument("--devices", type=int, default=1, help="GPUs (the seed used 3, with DDP)")
    parser.add_argument("--strategy", default="auto", help="auto (one device) or ddp (the seed's)")
    parser.add_argument("--no-probe", action="store_true", help="leave out the per-step NVML probe")
    parser.add_argument("--log-dir", default="lightning_logs_seed")
    parser.add_argument("--max-seconds", type=int, default=0, help="Lightning's max_time in seconds (0: none)")
    parser.add_argument("--trace-dir", default="", help="write torch.profiler traces here (PyTorchProfiler)")
    args = parser.parse_args(argv)
    if args.max_epochs < 1 or args.devices < 1 or args.max_seconds < 0:
        parser.error("--max-epochs and --devices must be at least 1, --max-seconds at least 0")
    return args


def unavailable(why):
    print(f"seed_lightning.py: not run: {why}", file=sys.stderr)
    sys.exit(3)


def main(argv):
    args = parse_args(argv)
    try:
        import pynvml
        import pytorch_lightning as pl
        import torch
        from pytorch_lightning.loggers import CSVLogger
        from torch import nn
        from torch.utils.data import DataLoader, Dataset
    except ImportError as error:
        unavailable(f"{error.name} is not installed here (torch, pytorch_lightning and nvidia-ml-py are needed)")
    if torch.cuda.device_count() < args.devices:
        unavailable(f"{args.devices} GPU(s) asked for, {torch.cuda.device_count()} visible")

    class SimpleDataset(Dataset):
        def __init__(self, size):
            self.size = size

        def __len__(self):
            return self.size

        def __getitem__(self, idx):
            x = torch.randn(1, 10)
            y = torch.randn(1)
            return x, y

    class SimpleDataModule(pl.LightningDataModule):
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

    class SimpleModel(pl.LightningModule):
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
            return self.fc4(x)

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = nn.MSELoss()(self(x), y)
            self.log("train_loss", loss)
            if not args.no_probe:  # the seed's habit: a whole NVML session every step
                pynvml.nvmlInit()
                utilization = []
                for i in range(pynvml.nvmlDeviceGetCount()):
                    handle = pynvml.nvmlDeviceGetHandleByIndex(i)
                    utilization.append(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                pynvml.nvmlShutdown()
                for i, util in enumerate(utilization):
                    self.log(f"gpu_{i}_utilization", util)
            return loss

        def validation_step(self, batch, batch_idx):
            x, y = batch
            loss = nn.MSELoss()(self(x), y)
            self.log("val_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=0.01)

    data_module = SimpleDataModule(batch_size=256, size=5000)
    model = SimpleModel()
    profiler = None
    if args.trace_dir:
        from pytorch_lightning.profilers import PyTorchProfiler
        profiler = PyTorchProfiler(dirpath=args.trace_dir, filename="seed", export_to_chrome=True,
                                   schedule=torch.profiler.schedule(wait=1, warmup=1, active=8))
    start_time = time.time()
    trainer = pl.Trainer(accelerator="gpu", strategy=args.strategy, devices=args.devices,
                         max_epochs=args.max_epochs, accumulate_grad_batches=3,
                         logger=CSVLogger(args.log_dir), profiler=profiler,
                         max_time=datetime.timedelta(seconds=args.max_seconds) if args.max_seconds else None)
    trainer.fit(model, data_module)
    if trainer.is_global_zero:
        elapsed = time.time() - start_time
        print(f"Training completed in {elapsed:.2f} seconds")
        steps = trainer.global_step
        print(json.dumps({"script": "seed_lightning", "probe": not args.no_probe, "epochs": trainer.current_epoch,
                          "wall_s": elapsed, "optimizer_steps": steps,
                          "per_step_us": 1e6 * elapsed / steps if steps else None}))


if __name__ == "__main__":
    main(sys.argv[1:])
