#!/usr/bin/python3
"""An independent safetensors reader and writer for ddpscope's tests.

Standard library and numpy only (Debian's python3-numpy), written from the format's
description, not from ddpscope's code, so that a shared misunderstanding cannot hide.

  read_safetensors.py read FILE    prints {"metadata": {...}, "tensors": [{"name", "dtype",
                                   "shape", "values"}, ...]} as JSON (tensors by offset)
  read_safetensors.py write FILE   writes the fixed sample below as PyTorch's safetensors
                                   package lays files out, with the header's keys sorted
"""
import json
import struct
import sys

import numpy as np

DTYPES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
    "F16": np.float16, "I32": np.int32, "U32": np.uint32, "F32": np.float32,
    "F64": np.float64, "I64": np.int64, "U64": np.uint64,
}

RANK = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32",
        "F32", "F64", "I64", "U64"]


def dtype_name(array):
    return {np.dtype(v): k for k, v in DTYPES.items()}[array.dtype]


def fail(message):
    print(f"read_safetensors.py: {message}", file=sys.stderr)
    sys.exit(1)


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        fail("shorter than 8 bytes")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        fail("header length beyond the file")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    metadata = header.pop("__metadata__", {})
    if not all(isinstance(v, str) for v in metadata.values()):
        fail("metadata values must be strings")
    tensors = []
    end_of_previous = 0
    for name, info in sorted(header.items(), key=lambda item: tuple(item[1]["data_offsets"])):
        begin, end = info["data_offsets"]
        if begin != end_of_previous:
            fail(f"{name}: data does not start where the previous tensor ends")
        end_of_previous = end
        dtype = np.dtype(DTYPES[info["dtype"]]).newbyteorder("<")
        shape = tuple(info["shape"])
        array = np.frombuffer(data[begin:end], dtype=dtype)
        if array.size != int(np.prod(shape, dtype=np.int64)):
            fail(f"{name}: {array.size} values for shape {shape}")
        tensors.append({"name": name, "dtype": info["dtype"], "shape": list(shape),
                        "values": array.reshape(shape).flatten().tolist()})
    if end_of_previous != len(data):
        fail("the tensors do not cover the data section")
    json.dump({"metadata": metadata, "tensors": tensors}, sys.stdout, ensure_ascii=False)
    print()


# The sample the C++ test expects, value for value (keep the two in step).
def sample():
    return {
        "layers.0.weight": np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5,
        "layers.0.bias": np.array([1.5, -2.25], dtype=np.float32),
        "adam.exp_avg": np.array([0.1, 1e-300, -3.0], dtype=np.float64),
        "step": np.array(1234567890123, dtype=np.int64),
        "counts": np.array([[-1], [7]], dtype=np.int32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }, {"format": "pt", "note": "ünïcode ✓"}


def write(path):
    tensors, metadata = sample()
    # Data by dtype, in the reverse of the order of safetensors' Dtype enum (its order of
    # alignment), then by name, as safetensors' serializer does.
    order = sorted(tensors, key=lambda name: (-RANK.index(dtype_name(tensors[name])), name))
    header = {"__metadata__": metadata}
    chunks = []
    offset = 0
    for name in order:
        raw = tensors[name].astype(tensors[name].dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype_name(tensors[name]),
                        "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("read", "write"):
        fail("usage: read_safetensors.py read|write FILE")
    (read if sys.argv[1] == "read" else write)(sys.argv[2])
