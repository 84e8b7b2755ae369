"""The seed's training as a plain eager PyTorch loop on one GPU: no Lightning, no DataLoader.

The same 10-256-256-256-1 MLP, Adam lr 0.01, batch 256 over 5000 samples, gradients
accumulated over 3 micro-batches (the loss divided by 3, and a step at each epoch's end as
Lightning does), validation over the 5000 samples each epoch, 200 epochs. The samples are
fresh noise as in the seed, drawn on the GPU per batch (x [B,10], y [B,1]: the per-sample
loss the seed meant). With --probe, the seed's nvmlInit / read every GPU / nvmlShutdown in
every training micro-batch. One warm-up micro-batch before the clock (cuBLAS's start);
torch.cuda.synchronize only at the end. Prints one JSON line (with the epochs run: fewer
than asked when --max-seconds stopped it).

    python3 bench/gpu/eager_torch.py [--max-epochs 200] [--probe] [--max-seconds S]

Exit 0; 3 when torch (or, with --probe, nvidia-ml-py) or a GPU is missing (the reason on
stderr); 2 for bad arguments.
"""
import argparse
import json
import math
import sys
import time

SIZE, BATCH, ACCUMULATE = 5000, 256, 3


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-epochs", type=int, default=200)
    parser.add_argument("--probe", action="store_true", help="the seed's per-step NVML probe")
    parser.add_argument("--max-seconds", type=float, default=0, help="stop after the epoch that passes this (0: never)")
    args = parser.parse_args(argv)
    if args.max_epochs < 1 or args.max_seconds < 0:
        parser.error("--max-epochs must be at least 1 and --max-seconds at least 0")
    return args


def unavailable(why):
    print(f"eager_torch.py: not run: {why}", file=sys.stderr)
    sys.exit(3)


def main(argv):
    args = parse_args(argv)
    try:
        import torch
        from torch import nn
    except ImportError:
        unavailable("torch is not installed here")
    pynvml = None
    if args.probe:
        try:
            import pynvml
        except ImportError:
            unavailable("pynvml (nvidia-ml-py) is not installed here")
    if not torch.cuda.is_available():
        unavailable("torch sees no CUDA GPU")

    device = torch.device("cuda")
    model = nn.Sequential(nn.Linear(10, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.MSELoss()
    sizes = [min(BATCH, SIZE - start) for start in range(0, SIZE, BATCH)]  # 19 x 256 + 136

    def probe():  # the seed's training_step habit
        pynvml.nvmlInit()
        utilization = [pynvml.nvmlDeviceGetUtilizationRates(pynvml.nvmlDeviceGetHandleByIndex(i)).gpu
                       for i in range(pynvml.nvmlDeviceGetCount())]
        pynvml.nvmlShutdown()
        return utilization

    def micro_batch(size):
        x = torch.randn(size, 10, device=device)
        y = torch.randn(size, 1, device=device)
        (loss_fn(model(x), y) / ACCUMULATE).backward()

    micro_batch(BATCH)  # warm-up: cuBLAS handles and kernels load outside the clock
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()

    steps = epochs = 0
    start = time.perf_counter()
    while epochs < args.max_epochs and not (args.max_seconds and time.perf_counter() - start > args.max_seconds):
        epochs += 1
        model.train()
        for index, size in enumerate(sizes):
            micro_batch(size)
            if pynvml is not None:
                probe()
            if (index + 1) % ACCUMULATE == 0 or index + 1 == len(sizes):
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                steps += 1
        model.eval()
        with torch.no_grad():
            for size in sizes:
                loss_fn(model(torch.randn(size, 10, device=device)), torch.randn(size, 1, device=device))
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    assert steps == epochs * math.ceil(len(sizes) / ACCUMULATE)
    print(json.dumps({"script": "eager_torch", "probe": args.probe, "epochs": epochs, "wall_s": wall,
                      "optimizer_steps": steps, "per_step_us": 1e6 * wall / steps,
                      "micro_batches": epochs * len(sizes)}))


if __name__ == "__main__":
    main(sys.argv[1:])
