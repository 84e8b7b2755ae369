"""Turns check.sh's step records into results.md (a table) and results.json.

    python3 bench/gpu/report.py STEPS_TSV OUT_DIR HEADER_TEXT

STEPS_TSV has one step a line: name, status (ran / failed / not run / timed out / cut by the budget), wall
seconds, microseconds per optimizer step, note; tab-separated, empty where not measured.
Ratios are printed only between steps that both ran.
"""
import json
import sys

# (numerator, denominator, what the ratio says), per optimizer step: a run that its time
# limit stopped early still compares.
RATIOS = [
    ("lightning_seed_probe", "ddpscope_gpu_graph", "the seed's Lightning script (with its probe) / ddpscope (graph)"),
    ("eager_torch", "ddpscope_gpu_graph", "eager PyTorch loop / ddpscope (graph)"),
    ("ddpscope_gpu_eager", "ddpscope_gpu_graph", "ddpscope eager (--no-cuda-graph) / graph"),
    ("ddpscope_gpu_tf32", "ddpscope_gpu_graph", "ddpscope TF32 / fp32 (graph)"),
    ("ddpscope_gpu_bf16", "ddpscope_gpu_graph", "ddpscope bf16-mixed / fp32 (graph)"),
    ("ddpscope_gpu_graph_probe", "ddpscope_gpu_graph", "ddpscope with the per-step probe / without"),
    ("eager_torch_probe", "eager_torch", "eager PyTorch with the per-step probe / without"),
    ("lightning_seed_probe", "lightning_seed_no_probe", "Lightning with the per-step probe / without"),
    ("ddpscope_cpu_seed", "ddpscope_gpu_graph", "ddpscope on the CPU (1 core) / on the GPU (graph)"),
    ("nvml_cycle_pynvml", "nvml_cycle_ddpscope", "pynvml's probe cycle / ddpscope's (per call)"),
]


def number(text):
    return float(text) if text else None


def read_steps(path):
    steps = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            name, status, wall, per_step, note = (line.rstrip("\n").split("\t") + [""] * 5)[:5]
            steps.append({"name": name, "status": status, "wall_s": number(wall),
                          "per_step_us": number(per_step), "note": note})
    return steps


def ratios(steps):
    by_name = {step["name"]: step for step in steps if step["status"] == "ran"}
    out = []
    for top, bottom, what in RATIOS:
        if top in by_name and bottom in by_name and by_name[top]["per_step_us"] and by_name[bottom]["per_step_us"]:
            out.append({"what": what, "ratio": by_name[top]["per_step_us"] / by_name[bottom]["per_step_us"]})
    return out


def cell(value, digits):
    return "" if value is None else f"{value:.{digits}f}"


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    steps = read_steps(argv[0])
    found = ratios(steps)
    with open(f"{argv[1]}/results.json", "w", encoding="utf-8") as out:
        json.dump({"header": argv[2], "steps": steps, "ratios": found}, out, indent=2)
    lines = [f"# GPU check (bench/gpu/check.sh)\n\n{argv[2]}\n",
             "| step | status | wall s | us per optimizer step (per call for nvml_*) | note |", "|---|---|---|---|---|"]
    for step in steps:
        note = step["note"].replace("|", "\\|")
        lines.append(f"| {step['name']} | {step['status']} | {cell(step['wall_s'], 3)} | "
                     f"{cell(step['per_step_us'], 1)} | {note} |")
    lines += ["", "| ratio | value |", "|---|---|"]
    lines += [f"| {r['what']} | {r['ratio']:.2f} |" for r in found] or ["| (no pair of steps ran) | |"]
    with open(f"{argv[1]}/results.md", "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
