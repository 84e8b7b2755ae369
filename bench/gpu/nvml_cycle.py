"""The seed's per-step probe through Python's pynvml, per call: nvmlInit, read every GPU's
utilization, nvmlShutdown (bench/nvml_cycle_bench.cpp measures ddpscope's own).

    python3 bench/gpu/nvml_cycle.py [--calls 200]

Prints one JSON line. Exit 0; 3 when pynvml or the NVIDIA driver is missing; 2 for bad
arguments.
"""
import argparse
import json
import statistics
import sys
import time


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    if args.calls < 1:
        parser.error("--calls must be at least 1")
    try:
        import pynvml
    except ImportError:
        print("nvml_cycle.py: not run: pynvml (nvidia-ml-py) is not installed here", file=sys.stderr)
        sys.exit(3)
    microseconds = []
    for _ in range(args.calls):
        start = time.perf_counter()
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as error:
            print(f"nvml_cycle.py: not run: nvmlInit failed: {error}", file=sys.stderr)
            sys.exit(3)
        for i in range(pynvml.nvmlDeviceGetCount()):
            pynvml.nvmlDeviceGetUtilizationRates(pynvml.nvmlDeviceGetHandleByIndex(i))
        pynvml.nvmlShutdown()
        microseconds.append(1e6 * (time.perf_counter() - start))
    print(json.dumps({"calls": args.calls, "cycle_us_median": statistics.median(microseconds),
                      "cycle_us_min": min(microseconds)}))


if __name__ == "__main__":
    main(sys.argv[1:])
