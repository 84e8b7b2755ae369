"""A large Kineto trace made from a small one, for the trace reader's benchmarks: its events
repeated, each copy shifted in time past the one before and its ProfilerStep#N renumbered,
until the file reaches the size asked for.

Usage: repeat_trace.py SOURCE.json.gz TARGET.json MEGABYTES [--kineto-layout] [--world N]
--kineto-layout writes each event as Kineto does, one field per line, indented (users' files);
the default is one compact event per line. --world N makes the trace a rank of a job of N whose
rank its file's name says (distributedInfo's rank dropped, its world_size N).
"""
import argparse
import gzip
import json
import re

parser = argparse.ArgumentParser()
parser.add_argument("source")
parser.add_argument("target")
parser.add_argument("megabytes", type=int)
parser.add_argument("--kineto-layout", action="store_true")
parser.add_argument("--world", type=int)
args = parser.parse_args()

step = re.compile(r"ProfilerStep#(\d+)")
indent = 4 if args.kineto_layout else None
trace = json.load(gzip.open(args.source))
events = trace.pop("traceEvents")
if args.world:
    trace["distributedInfo"].pop("rank", None)
    trace["distributedInfo"]["world_size"] = args.world
timed = [e for e in events if "ts" in e]
span = max(e["ts"] + e.get("dur", 0) for e in timed) - min(e["ts"] for e in timed)
steps = len({e["name"] for e in events if step.fullmatch(e.get("name", ""))})
with open(args.target, "w") as f:
    head = json.dumps(trace)
    f.write(head[:-1] + ', "traceEvents": [\n')
    copy, first = 0, True
    while f.tell() < args.megabytes * 1_000_000:
        for e in events:
            e = dict(e)
            if "ts" in e:
                e["ts"] = e["ts"] + copy * span
            m = step.fullmatch(e.get("name", ""))
            if m:
                e["name"] = f"ProfilerStep#{int(m.group(1)) + steps * copy}"
            text = json.dumps(e, indent=indent)
            if indent:
                text = "  " + text.replace("\n", "\n  ")
            f.write(("" if first else ",\n") + text)
            first = False
        copy += 1
    f.write("\n]}\n")
