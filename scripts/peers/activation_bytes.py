#!/usr/bin/env python3
"""Activation bytes written by real TVM FuseOps against fuseplan's plans, on
the same ONNX file and shapes (issue 32: the `cost` plan should write no more
than TVM's fusion unless `explain` shows the measured reason).

  .venv-peers/bin/python scripts/peers/activation_bytes.py \
      --model peers-work/bert-base-b1-seq128-seed0/model.onnx:input_ids=1x128 \
      --model examples/gpt2_block.onnxtxt:S=128 --device configs/devices/host-zen4-1thread.json

--ort-basic first runs ONNX Runtime's basic graph optimizations on each
file (constant folding and redundant-node removal, no fusions) and gives
the folded file to both TVM and fuseplan: TVM's frontend refuses some
exported graphs whose shapes are computed at run time (GPT-2).

MODEL:BINDINGS: the model file (.onnx, or .onnxtxt parsed by onnx.parser) and
its dims, comma-separated: NAME=V binds a symbolic dim by name, INPUT=AxBxC
gives an input's whole shape. The batch dim is bound to 1 where symbolic.

TVM: apache-tvm from PyPI (Relax, the ONNX frontend). The model is imported
with its weights as constants and run through the passes of TVM's build
pipeline that decide what is materialised: DecomposeOpsForInference,
LegalizeOps, FoldConstant, AnnotateTIROpPattern, FuseOps, FuseTIR,
DeadCodeElimination and RewriteDataflowReshape (a reshape is a view, not a
kernel). Every remaining kernel call (call_tir) writes its output: their
sizes summed are TVM's activation bytes. fuseplan: `fuseplan search` with
each strategy on --device; the plan's groups' bytes_written summed (each
materialised tensor once, graph outputs included), the same quantity.
Not used by CI.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parent.parent.parent


def load(path: Path) -> onnx.ModelProto:
    if path.suffix == ".onnxtxt":
        return onnx.parser.parse_model(path.read_text())
    return onnx.load(str(path))


def parse_bindings(text: str):
    dims, shapes = {}, {}
    for item in filter(None, text.split(",")):
        name, value = item.split("=")
        if "x" in value:
            shapes[name] = [int(v) for v in value.split("x")]
        else:
            dims[name] = int(value)
    return dims, shapes


def input_shapes(model: onnx.ModelProto, dims: dict, shapes: dict) -> dict:
    inits = {i.name for i in model.graph.initializer}
    out = {}
    for i in model.graph.input:
        if i.name in inits:
            continue
        if i.name in shapes:
            out[i.name] = shapes[i.name]
            continue
        shape = []
        for k, d in enumerate(i.type.tensor_type.shape.dim):
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            elif d.dim_param in dims:
                shape.append(dims[d.dim_param])
            elif k == 0:
                shape.append(1)  # the batch dim
            else:
                sys.exit(f"{i.name}: bind dim '{d.dim_param}' (NAME=V)")
        out[i.name] = shape
    return out


def ort_basic(path: Path, folder: Path) -> Path:
    """The model after ONNX Runtime's basic graph optimizations, saved under folder."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    out = folder / (path.stem + ".ort-basic.onnx")
    so.optimized_model_filepath = str(out)
    source = path
    if path.suffix == ".onnxtxt":
        source = folder / (path.stem + ".onnx")
        onnx.save(load(path), str(source))
    ort.InferenceSession(str(source), so, providers=["CPUExecutionProvider"])
    return out


def tvm_bytes(model: onnx.ModelProto, shapes: dict):
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    mod = from_onnx(model, shape_dict=shapes, keep_params_in_input=False)
    mod = tvm.transform.Sequential([
        relax.transform.DecomposeOpsForInference(),
        relax.transform.LegalizeOps(),
        relax.transform.FoldConstant(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
        relax.transform.DeadCodeElimination(),
        relax.transform.RewriteDataflowReshape(),
    ])(mod)

    def size(t) -> int:
        if isinstance(t, relax.TensorType):
            n = 1
            for d in t.shape.values:
                n *= int(d)
            return n * tvm.runtime.DataType(t.dtype).bits // 8
        if isinstance(t, relax.TupleType):
            return sum(size(f) for f in t.fields)
        return 0

    total, kernels = 0, 0
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            v = b.value
            if isinstance(v, relax.Call) and isinstance(v.op, tvm.ir.Op) and v.op.name == "relax.call_tir":
                total += size(v.ty_args[0])
                kernels += 1
    return total, kernels, tvm.__version__


def fuseplan_bytes(fuseplan: str, path: Path, dims: dict, shapes: dict, device: str, strategy: str):
    with tempfile.TemporaryDirectory() as tmp:
        plan = Path(tmp) / "plan.json"
        cmd = [fuseplan, "search", str(path), "--strategy", strategy, "--device", device, "--batch", "1", "-o", str(plan)]
        for name, v in dims.items():
            cmd += ["--dim", f"{name}={v}"]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        p = json.loads(plan.read_text())
    return sum(g["cost"]["bytes_written"] for g in p["groups"]), len(p["groups"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", action="append", required=True, help="MODEL:BINDINGS (see above)")
    ap.add_argument("--device", required=True, help="fuseplan device (name or JSON path)")
    ap.add_argument("--fuseplan", default=str(ROOT / "build/cli/fuseplan"))
    ap.add_argument("--strategies", default="unfused,tvm,xla,inductor,cost")
    ap.add_argument("--ort-basic", action="store_true", help="fold constants with ONNX Runtime's basic optimizations first")
    args = ap.parse_args()
    strategies = args.strategies.split(",")
    mib = lambda b: f"{b / 2**20:.1f}"
    rows = []
    version = ""
    tmp = tempfile.TemporaryDirectory()
    for spec in args.model:
        file, _, bindings = spec.partition(":")
        path = Path(file)
        dims, shapes = parse_bindings(bindings)
        if args.ort_basic:
            path = ort_basic(path, Path(tmp.name))
        model = load(path)
        try:
            tb, tk, version = tvm_bytes(model, input_shapes(model, dims, shapes))
            cells = [f"{mib(tb)} ({tk})"]
        except Exception as e:  # the frontend refuses some exported graphs
            tb = None
            cells = ["TVM failed: " + str(e).strip().splitlines()[-1][:120].replace("|", "/")]
        ours = {}
        for s in strategies:
            b, k = fuseplan_bytes(args.fuseplan, path, dims, shapes, args.device, s)
            ours[s] = b
            cells.append(f"{mib(b)} ({k})")
        verdict = "—" if tb is None else "yes" if ours.get("cost", float("inf")) <= tb else "no"
        label = Path(file).parent.name if Path(file).name == "model.onnx" else Path(file).name
        rows.append(f"| {label} {bindings} | " + " | ".join(cells) + f" | {verdict} |")
        print(rows[-1], file=sys.stderr)
    folded = "; files folded by ONNX Runtime's basic optimizations" if args.ort_basic else ""
    print(f"Activation bytes written, MiB (kernels), batch 1; TVM {version} Relax FuseOps; fuseplan on {args.device}{folded}\n")
    print("| model | TVM FuseOps | " + " | ".join(f"fuseplan `{s}`" for s in strategies) + " | `cost` ≤ TVM |")
    print("|---|" + "---:|" * (len(strategies) + 1) + "---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
