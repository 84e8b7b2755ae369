#!/usr/bin/python3
"""Independent checks of ddpscope's checkpoint files, for tests/train/checkpoint_test.cpp.

Standard library and numpy only (Debian's python3-numpy); written from the documented
format (src/train/loop/checkpoint.h), not from ddpscope's code. Files are read by
tests/io/read_safetensors.py, the independent safetensors reader, through its command line.

  check_checkpoint.py write-mlp FILE 3,4,2 [--dtype F64] [--extra NAME]
      writes an MLP's parameters as PyTorch's safetensors package does for
      {"layers.<l>.weight": W_l (out, in), "layers.<l>.bias": b_l (out)}, with
      W_l[o, i] = (o * in + i) / 8 - l and b_l[o] = l - o / 4 (exact in F32), plus an
      extra F32 tensor NAME of shape [2] when asked
  check_checkpoint.py check FILE
      checks a ddpscope checkpoint's structure and prints {"widths", "optimizer", "state",
      "step", "position", "config", "params"} as JSON (params: every parameter in
      PyTorch's order, layers.0.weight, layers.0.bias, layers.1.weight, ...)
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np

READER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "io", "read_safetensors.py")
POSITION = ["epoch", "next_batch", "global_step", "world_size", "seed"]


def fail(message):
    print(f"check_checkpoint.py: {message}", file=sys.stderr)
    sys.exit(1)


def expect(condition, message):
    if not condition:
        fail(message)


def write_mlp(path, widths, dtype, extra):
    tensors = {}
    for l in range(len(widths) - 1):
        n_in, n_out = widths[l], widths[l + 1]
        tensors[f"layers.{l}.weight"] = (np.arange(n_out * n_in, dtype=np.float64).reshape(n_out, n_in) / 8 - l)
        tensors[f"layers.{l}.bias"] = l - np.arange(n_out, dtype=np.float64) / 4
    if extra:
        tensors[extra] = np.array([1.0, 2.0])
    np_dtype = {"F32": np.float32, "F64": np.float64}[dtype]
    tensors = {k: v.astype(np.dtype(np_dtype).newbyteorder("<")) for k, v in tensors.items()}
    # As safetensors' serializer: data by dtype, then by name (one dtype here, so by name);
    # the header padded with spaces to a multiple of 8; no __metadata__ when there is none.
    order = sorted(tensors)
    header, chunks, offset = {}, [], 0
    for name in order:
        raw = tensors[name].tobytes()
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def check(path):
    run = subprocess.run(["/usr/bin/python3", READER, "read", path], capture_output=True, text=True)
    expect(run.returncode == 0, f"the independent reader refused {path}: {run.stderr.strip()}")
    parsed = json.loads(run.stdout)
    metadata = parsed["metadata"]
    tensors = {t["name"]: t for t in parsed["tensors"]}

    expect(metadata.get("format") == "ddpscope.checkpoint/1", f"format is {metadata.get('format')!r}")
    for key in ["ddpscope_version", "config", "optimizer", "rng"] + POSITION:
        expect(key in metadata, f"metadata has no {key!r}")
    position = {}
    for key in POSITION:
        expect(metadata[key].lstrip("-").isdigit(), f"metadata {key!r} is {metadata[key]!r}, not an integer")
        position[key] = int(metadata[key])
    config = json.loads(metadata["config"])
    expect(isinstance(config, dict) and all(isinstance(v, (str, int, float, bool)) for v in config.values()),
           "config is not a JSON object of option values")

    # The layers chain: layers.l.weight is (out, in) with in = the previous layer's out.
    widths, params, l = [], [], 0
    while f"layers.{l}.weight" in tensors:
        weight, bias = tensors[f"layers.{l}.weight"], tensors.get(f"layers.{l}.bias")
        expect(bias is not None, f"layers.{l}.bias is missing")
        expect(weight["dtype"] == "F32" and bias["dtype"] == "F32", f"layers.{l} is not F32")
        n_out, n_in = weight["shape"]
        expect(bias["shape"] == [n_out], f"layers.{l}.bias has shape {bias['shape']}, expected [{n_out}]")
        expect(not widths or widths[-1] == n_in, f"layers.{l}.weight takes {n_in} inputs, not {widths[-1:]}")
        widths += [n_in, n_out] if not widths else [n_out]
        params += weight["values"] + bias["values"]
        l += 1
    expect(l > 0, "no layers.0.weight")

    step = tensors.get("optimizer.step")
    expect(step is not None and step["dtype"] == "I64" and step["shape"] == [], "optimizer.step is not an I64 []")
    states = sorted({name.split(".")[1] for name in tensors
                     if name.startswith("optimizer.") and name != "optimizer.step"})
    for state in states:
        for i in range(l):
            for part in ("weight", "bias"):
                mine, theirs = tensors.get(f"optimizer.{state}.layers.{i}.{part}"), tensors[f"layers.{i}.{part}"]
                expect(mine is not None, f"optimizer.{state}.layers.{i}.{part} is missing")
                expect(mine["dtype"] == "F32" and mine["shape"] == theirs["shape"],
                       f"optimizer.{state}.layers.{i}.{part} differs from its parameter in dtype or shape")
    expected_names = {f"layers.{i}.{p}" for i in range(l) for p in ("weight", "bias")}
    expected_names |= {f"optimizer.{s}.{n}" for s in states for n in expected_names} | {"optimizer.step"}
    expect(set(tensors) == expected_names, f"unexpected tensors {sorted(set(tensors) - expected_names)}")

    json.dump({"widths": widths, "optimizer": metadata["optimizer"], "state": states,
               "step": step["values"][0], "position": position, "config": config, "params": params},
              sys.stdout)
    print()


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) >= 3 and args[0] == "write-mlp":
        options = dict(zip(args[3::2], args[4::2]))
        write_mlp(args[1], [int(w) for w in args[2].split(",")], options.get("--dtype", "F32"),
                  options.get("--extra"))
    elif len(args) == 2 and args[0] == "check":
        check(args[1])
    else:
        fail("usage: check_checkpoint.py write-mlp FILE WIDTHS [--dtype F32|F64] [--extra NAME] | check FILE")
