#!/usr/bin/env python3
"""fuseplan peer harness: fuseplan's emitted CPU kernels against ONNX Runtime
and PyTorch on the same ONNX model, inputs, weights, threads and cores.

  .venv-peers/bin/python scripts/peers/peers.py run resnet50_bottleneck bert_base_layer,batch=8,S=512 --reps 15
  .venv-peers/bin/python scripts/peers/peers.py run --suite trial
  .venv-peers/bin/python scripts/peers/peers.py list

A case is MODEL[,batch=B][,NAME=V...]: MODEL is a zoo name (resnet50,
mobilenetv2, bert-base, gpt2-small), an example (examples/NAME.onnxtxt) or a
path to an .onnx/.onnxtxt file; NAME=V binds a symbolic dim (seq for the
transformer zoo entries). docs/peers.md says what is compared and how.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

EXAMPLES = ["resnet50_bottleneck", "mobilenetv2_inverted_residual", "bert_base_layer", "gpt2_block", "vit_block"]
ZOO_NAMES = ["resnet50", "mobilenetv2", "bert-base", "gpt2-small"]
EXAMPLE_DEFAULT_DIMS = {"S": 128}  # bound only where the example has an S dim
STRATEGIES_ALL = ["unfused", "elementwise", "tvm", "xla", "inductor", "optimal", "cost"]
PEERS = ["ort-all", "ort-none", "torch-eager", "torch-compile"]
SUITES = {
    # the development trial (docs/peers.md): small, a few minutes at --reps 3
    "trial": ["resnet50_bottleneck", "bert_base_layer,S=128", "resnet50"],
    "examples": ["resnet50_bottleneck", "mobilenetv2_inverted_residual", "bert_base_layer,S=128",
                 "gpt2_block,S=128", "vit_block"],
    # the lead's quiet-machine run: real models, and a transformer at batch 8, sequence 512
    "full": ["resnet50_bottleneck", "resnet50_bottleneck,batch=8", "mobilenetv2_inverted_residual",
             "bert_base_layer,S=128", "bert_base_layer,batch=8,S=512", "gpt2_block,S=128", "vit_block",
             "resnet50", "mobilenetv2", "bert-base,seq=128", "gpt2-small,seq=128"],
}
LABELS = {"ort-all": "ORT all opts", "ort-none": "ORT no opts", "torch-eager": "torch eager",
          "torch-compile": "torch.compile"}


def log(*a):
    print("peers:", *a, file=sys.stderr, flush=True)


def label(system: str) -> str:
    if system.startswith("fuseplan-"):
        return "fuseplan " + system[len("fuseplan-"):]
    return LABELS.get(system, system)


# ------------------------------------------------------------------ cases

class Case:
    """One model at one binding: the files every system reads (work dir)."""

    def __init__(self, spec: str, args):
        parts = spec.split(",")
        self.spec = spec
        self.model = parts[0]
        self.batch = args.batch
        self.dims = dict(args.dim)
        for p in parts[1:]:
            if "=" not in p:
                raise SystemExit(f"peers: case '{spec}': '{p}' is not KEY=VALUE")
            k, v = p.split("=", 1)
            if k == "batch":
                self.batch = int(v)
            else:
                self.dims[k] = int(v)
        if self.model in ZOO_NAMES:
            self.kind = "zoo"
            self.name = self.model
        elif self.model in EXAMPLES:
            self.kind = "example"
            self.name = self.model
            self.path = ROOT / "examples" / (self.model + ".onnxtxt")
        else:
            self.kind = "file"
            self.path = Path(self.model).resolve()
            if not self.path.exists():
                raise SystemExit(f"peers: no model '{self.model}' (not a zoo name, example or file; see `peers.py list`)")
            self.name = self.path.name.split(".")[0]
        self.seed = args.seed
        tag = "-".join([self.name, f"b{self.batch}"] + [f"{k}{v}" for k, v in sorted(self.dims.items())] +
                       [f"seed{self.seed}"])
        self.dir = Path(args.work).resolve() / tag
        self.title = self.name + f", batch {self.batch}" + "".join(f", {k}={v}" for k, v in sorted(self.dims.items()))


def _np_dtype(elem_type: int):
    import onnx
    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))


def _seeded(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _consumers(graph) -> dict:
    uses = {}
    for node in graph.node:
        for i, name in enumerate(node.input):
            uses.setdefault(name, []).append((node, i))
    return uses


def _attr(node, name, default=0):
    for a in node.attribute:
        if a.name == name:
            return a.i
    return default


def placeholder_value(name: str, shape: list, dtype, uses: list, seed: int) -> np.ndarray:
    """A seeded constant for a weight placeholder, scaled by the role its
    consumers give it (so that a deep network's activations stay finite and
    BatchNorm variances are positive)."""
    rng = _seeded(seed, name)
    if dtype.kind in "iu":
        bound = 10
        for node, i in uses:
            if node.op_type in ("Gather", "GatherElements") and i == 1:
                bound = 2  # an index table: stay inside any axis
        return rng.integers(0, bound, size=shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(size=shape) < 0.5

    def u(lo, hi):
        return rng.uniform(lo, hi, size=shape).astype(dtype)

    fan_in = float(np.prod(shape[1:])) if len(shape) > 1 else 1.0
    for node, i in uses:
        op = node.op_type
        if op == "BatchNormalization":
            return u(0.5, 1.5) if i in (1, 4) else u(-0.1, 0.1)
        if op in ("LayerNormalization", "InstanceNormalization", "GroupNormalization", "SkipLayerNormalization"):
            return u(0.5, 1.5) if i == 1 else u(-0.1, 0.1)
        if op in ("Conv", "ConvTranspose"):
            if i == 1:
                b = np.sqrt(6.0 / max(fan_in, 1.0))  # He uniform: keeps ReLU nets' activations O(1)
                return u(-b, b)
            return u(-0.1, 0.1)
        if op in ("MatMul", "Gemm"):
            if i == 2:
                return u(-0.1, 0.1)
            if len(shape) >= 2:
                if op == "Gemm":
                    k = shape[1] if (_attr(node, "transB") if i == 1 else not _attr(node, "transA")) else shape[0]
                else:
                    k = shape[-2] if i == 1 else shape[-1]
                b = np.sqrt(3.0 / max(k, 1))  # variance 1/K: output variance ~ input variance
                return u(-b, b)
        if op == "Gather" and i == 0:
            return u(-0.05, 0.05)
        if op in ("Mul", "Div"):
            return u(0.5, 1.5)
        if op in ("Add", "Sub"):
            return u(-0.1, 0.1)
    b = 1.0 / np.sqrt(max(fan_in, 1.0))
    return u(-b, b)


def input_value(name: str, shape: list, dtype, uses: list, seed: int, vocab: int | None, inits: dict) -> np.ndarray:
    """Seeded data input: floats U[-1,1]; an additive float mask 0 / -10000
    (padding at the end of each row); a square bool mask lower-triangular
    (causal); integer ids within the table a Gather indexes."""
    rng = _seeded(seed, name)
    low = name.lower()
    if dtype.kind == "f":
        if "mask" in low and shape:
            m = np.zeros(shape, dtype=dtype)
            s = shape[-1]
            rows = m.reshape(-1, s)
            for r in range(rows.shape[0]):
                keep = int(rng.integers(max(1, s // 2), s + 1))
                rows[r, keep:] = -10000.0
            return m
        return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
    if dtype.kind == "b":
        if len(shape) >= 2 and shape[-1] == shape[-2]:
            return np.broadcast_to(np.tril(np.ones(shape[-2:], dtype=bool)), shape).copy()
        return rng.random(size=shape) < 0.5
    bound = vocab or 10
    if vocab is None:
        for node, i in uses:
            if node.op_type in ("Gather", "GatherElements") and i == 1 and node.input[0] in inits:
                bound = inits[node.input[0]][_attr(node, "axis")]
    return rng.integers(0, bound, size=shape).astype(dtype)


def _shape_of(vi) -> list:
    out = []
    for d in vi.type.tensor_type.shape.dim:
        out.append(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or None))
    return out


def _data_inputs_from_manifest(path: Path):
    man = path.parent / "manifest.json"
    if not man.exists():
        return None
    try:
        for e in json.loads(man.read_text()):
            if e.get("file") == path.name and e.get("data_inputs"):
                return [d[0] for d in e["data_inputs"]]
    except (ValueError, KeyError, TypeError):
        return None
    return None


def prepare_case(case: Case, args) -> dict:
    """Writes CASE/model.onnx (weights as initializers), CASE/inputs/*.npy
    and CASE/case.json; a zoo entry also CASE/module.pt. Reused when the
    same case was prepared before."""
    import onnx
    from onnx import numpy_helper
    meta_path = case.dir / "case.json"
    if meta_path.exists() and not args.fresh:
        meta = json.loads(meta_path.read_text())
        if meta.get("spec_key") == [case.model, case.batch, case.dims, case.seed]:
            return meta
    case.dir.mkdir(parents=True, exist_ok=True)
    (case.dir / "inputs").mkdir(exist_ok=True)
    meta = {"spec_key": [case.model, case.batch, case.dims, case.seed], "title": case.title, "kind": case.kind,
            "name": case.name, "batch": case.batch, "dims": case.dims, "seed": case.seed}
    model_path = case.dir / "model.onnx"
    if case.kind == "zoo":
        import torch
        import modules
        desc, data_in, outs = modules.ZOO[case.name]
        dims = dict(modules.ZOO_DEFAULT_DIMS.get(case.name, {}))
        dims.update(case.dims)
        dims["batch"] = case.batch
        unknown = set(case.dims) - set(modules.ZOO_DEFAULT_DIMS.get(case.name, {}))
        if unknown:
            raise SystemExit(f"peers: {case.name} has no dim {sorted(unknown)} (its dims: batch"
                             + "".join(", " + k for k in modules.ZOO_DEFAULT_DIMS.get(case.name, {})) + ")")
        log(f"{case.title}: building {desc}")
        module = modules.build_zoo(case.name, case.seed)
        feeds = {}
        for name, dt, tmpl in data_in:
            shape = [dims[d] if isinstance(d, str) else d for d in tmpl]
            feeds[name] = input_value(name, shape, np.dtype(dt), [], case.seed, modules.ZOO_VOCAB.get(case.name), {})
        log(f"{case.title}: exporting to ONNX (opset 17, static shapes)")
        modules.export_onnx(module, tuple(torch.from_numpy(feeds[n]) for n, _, _ in data_in),
                            [n for n, _, _ in data_in], outs, str(model_path))
        torch.save(module.state_dict(), case.dir / "module.pt")
        meta.update(torch_module={"kind": "zoo", "name": case.name, "state": "module.pt"}, description=desc,
                    fuseplan_bind=[], materialised=[])
        shapes = {n: list(feeds[n].shape) for n in feeds}
        meta["dims"] = {k: v for k, v in dims.items() if k != "batch"}
        meta["title"] = case.name + f", batch {case.batch}" + "".join(f", {k}={v}" for k, v in sorted(meta["dims"].items()))
        dtypes = {n: str(feeds[n].dtype) for n in feeds}
        out_names = outs
    else:
        if case.path.suffix == ".onnxtxt":
            model = onnx.parser.parse_model(case.path.read_text())
        else:
            model = onnx.load(str(case.path))
        g = model.graph
        inits = {t.name: list(t.dims) for t in g.initializer}
        ins = [i for i in g.input if i.name not in inits]
        data = args.data_inputs.split(",") if args.data_inputs else _data_inputs_from_manifest(case.path)
        if data is None:  # fuseplan's rule of thumb: the first input and every input with a symbolic dim
            data = [ins[0].name] + [i.name for i in ins[1:] if any(not isinstance(d, int) for d in _shape_of(i))]
        uses = _consumers(g)
        # bind symbolic dims: --dim / case dims by name, the first data input's leading dim to the batch
        dims = dict(case.dims)
        if case.kind == "example":
            model_dims = {d for i in ins if i.name in data for d in _shape_of(i) if isinstance(d, str)}
            for k, v in EXAMPLE_DEFAULT_DIMS.items():
                if k in model_dims:
                    dims.setdefault(k, v)
        batch_name = None
        first = next(i for i in ins if i.name in data)
        lead = _shape_of(first)[0] if _shape_of(first) else 1
        if not isinstance(lead, int):
            batch_name = lead  # None for an unnamed dim
        symbolic = set()
        shapes, dtypes, feeds = {}, {}, {}
        for i in ins:
            if i.name not in data:
                continue
            shape = []
            for ax, d in enumerate(_shape_of(i)):
                if isinstance(d, int):
                    shape.append(d)
                    continue
                if d is not None:
                    symbolic.add(d)
                if d is not None and d in dims:
                    shape.append(dims[d])
                elif (d is not None and d == batch_name) or (i is first and ax == 0):
                    shape.append(case.batch)
                else:
                    raise SystemExit(f"peers: {case.title}: input '{i.name}' dim {ax} ('{d}') is unbound: "
                                     f"add {d or 'NAME'}=V to the case")
            dt = _np_dtype(i.type.tensor_type.elem_type)
            init_shapes = {n: s for n, s in inits.items()}
            for p in ins:
                if p.name not in data:
                    init_shapes[p.name] = _shape_of(p)
            feeds[i.name] = input_value(i.name, shape, dt, uses.get(i.name, []), case.seed, None, init_shapes)
            shapes[i.name], dtypes[i.name] = shape, str(dt)
        extra = set(case.dims) - symbolic
        if extra:
            raise SystemExit(f"peers: {case.title}: the model has no symbolic dim {sorted(extra)} "
                             f"(its dims: {sorted(symbolic) or 'none'})")
        # weight placeholders -> seeded initializers, removed from graph.input
        materialised = []
        keep = []
        for i in list(g.input):
            if i.name in inits or i.name in data:
                keep.append(i)
                continue
            shape = _shape_of(i)
            if any(not isinstance(d, int) for d in shape):
                raise SystemExit(f"peers: {case.title}: input '{i.name}' has a symbolic shape {shape}; "
                                 "name the data inputs with --data-inputs")
            arr = placeholder_value(i.name, shape, _np_dtype(i.type.tensor_type.elem_type), uses.get(i.name, []),
                                    case.seed)
            g.initializer.append(numpy_helper.from_array(arr, i.name))
            materialised.append(i.name)
        del g.input[:]
        g.input.extend(keep)
        onnx.save(model, str(model_path))
        bind = []
        if batch_name is not None or (lead is None):
            bind += ["--batch", str(case.batch)]
        for k, v in sorted(dims.items()):
            if k in symbolic and k != batch_name:
                bind += ["--dim", f"{k}={v}"]
        meta.update(torch_module={"kind": "example", "name": case.name} if case.kind == "example" else None,
                    description=f"{case.path.name}", fuseplan_bind=bind, materialised=materialised)
        out_names = [o.name for o in g.output]
        case.dims = dims
        meta["dims"] = dims
        meta["title"] = case.name + f", batch {case.batch}" + "".join(f", {k}={v}" for k, v in sorted(dims.items()))
    input_args = []
    for n, arr in feeds.items():
        f = case.dir / "inputs" / f"{len(input_args)}.npy"
        np.save(f, arr)
        input_args.append(f"{n}={f}")
    meta.update(inputs=list(feeds), shapes=shapes, dtypes=dtypes, outputs=out_names,
                fuseplan_inputs=",".join(input_args), model="model.onnx")
    meta_path.write_text(json.dumps(meta, indent=1))
    return meta


# ------------------------------------------------------------------ workers

class Worker:
    """A peer system in its own process (its own thread pool), driven by JSON
    lines on stdin/stdout: warmup, time, outputs, quit."""

    def __init__(self, system: str, case_dir: Path, threads: int, env: dict):
        self.system = system
        self.log_path = case_dir / f"{system}.log"
        self.p = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "worker", "--system", system,
                                   "--case-dir", str(case_dir), "--threads", str(threads)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(self.log_path, "w"),
                                  env=env, text=True, bufsize=1)
        self.ready = self._recv()

    def _recv(self) -> dict:
        line = self.p.stdout.readline()
        if not line:
            self.p.wait()
            tail = self.log_path.read_text()[-600:].strip().splitlines()
            raise RuntimeError(f"{self.system} worker exited ({self.p.returncode}): " + (tail[-1] if tail else ""))
        msg = json.loads(line)
        if "error" in msg:
            raise RuntimeError(f"{self.system}: {msg['error']}")
        return msg

    def call(self, **msg) -> dict:
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()
        return self._recv()

    def close(self):
        try:
            if self.p.poll() is None:
                self.p.stdin.write('{"cmd": "quit"}\n')
                self.p.stdin.flush()
                self.p.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


def worker_main(args) -> None:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything a library prints goes to the log, not into the protocol
    sys.stdout = sys.stderr

    def send(**m):
        proto.write(json.dumps(m) + "\n")
        proto.flush()

    try:
        case_dir = Path(args.case_dir)
        meta = json.loads((case_dir / "case.json").read_text())
        feeds = {n: np.load(case_dir / "inputs" / f"{k}.npy") for k, n in enumerate(meta["inputs"])}
        model_path = str(case_dir / meta["model"])
        t0 = time.perf_counter()
        if args.system.startswith("ort-"):
            import onnxruntime as ort
            so = ort.SessionOptions()
            so.intra_op_num_threads = args.threads
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if args.system == "ort-all"
                                           else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
            if args.system == "ort-all":  # what ORT's optimizer made of the graph, for the report
                so.optimized_model_filepath = str(case_dir / "ort-all-optimized.onnx")
            sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
            names = [o.name for o in sess.get_outputs()]
            ops = {}
            if args.system == "ort-all":
                import onnx
                try:
                    def key(n):
                        return n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
                    before = {key(n) for n in onnx.load(model_path, load_external_data=False).graph.node}
                    after = onnx.load(so.optimized_model_filepath, load_external_data=False).graph.node
                    for n in after:
                        if key(n) not in before:
                            ops[key(n)] = ops.get(key(n), 0) + 1
                    os.remove(so.optimized_model_filepath)
                except Exception as e:  # the note is optional
                    ops = {"(could not read the optimized graph: " + type(e).__name__ + ")": 0}

            def infer():
                return sess.run(names, feeds)
            info = {"version": ort.__version__, "new_ops": ops}
        else:
            import torch
            torch.set_num_threads(args.threads)
            try:
                torch.set_num_interop_threads(1)
            except RuntimeError:
                pass
            import modules
            tm = meta.get("torch_module")
            if not tm:
                raise RuntimeError("no PyTorch module for this model")
            if tm["kind"] == "zoo":
                module = modules.build_zoo(tm["name"], meta["seed"])
                module.load_state_dict(torch.load(case_dir / tm["state"]))
            else:
                import onnx
                from onnx import numpy_helper
                m = onnx.load(model_path)
                module = modules.build_example(tm["name"], {t.name: numpy_helper.to_array(t)
                                                            for t in m.graph.initializer})
            module.eval()
            if args.system == "torch-compile":
                module = torch.compile(module)
            targs = [torch.from_numpy(feeds[n]) for n in meta["inputs"]]

            def infer():
                with torch.inference_mode():
                    return [t.numpy() for t in module(*targs)]
            info = {"version": torch.__version__}
        info["load_s"] = time.perf_counter() - t0
        send(ok=True, **info)
    except Exception as e:  # reported to the harness, which drops the system
        send(error=f"{type(e).__name__}: {e}")
        return

    for line in sys.stdin:
        msg = json.loads(line)
        cmd = msg["cmd"]
        try:
            if cmd == "quit":
                break
            if cmd == "warmup":
                ms = []
                for _ in range(msg["n"]):
                    a = time.perf_counter_ns()
                    infer()
                    ms.append((time.perf_counter_ns() - a) / 1e6)
                send(ms=ms)
            elif cmd == "time":
                infer()  # untimed: the same re-warm fuseplan's own warm-up run gives it
                a = time.perf_counter_ns()
                infer()
                send(ms=(time.perf_counter_ns() - a) / 1e6)
            elif cmd == "outputs":
                outs = infer()
                d = Path(msg["dir"])
                d.mkdir(parents=True, exist_ok=True)
                for k, o in enumerate(outs):
                    np.save(d / f"{k}.npy", np.asarray(o))
                send(n=len(outs))
        except Exception as e:
            send(error=f"{type(e).__name__}: {e}")


# ------------------------------------------------------------------ fuseplan

def fuseplan_supports(binary: str, flag: str) -> bool:
    try:
        h = subprocess.run([binary, "run", "--help"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        return False
    return flag in h


def fuseplan_run(binary: str, case_dir: Path, meta: dict, plan: Path, threads: int, env: dict,
                 verify=False, outputs: Path | None = None) -> dict:
    cmd = [binary, "run", str(case_dir / meta["model"]), *meta["fuseplan_bind"], "--plan", str(plan),
           "--inputs", meta["fuseplan_inputs"], "--threads", str(threads), "--repeat", "1", "--json"]
    if verify:
        cmd.append("--verify")
    if outputs is not None:
        cmd += ["--outputs", str(outputs)]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if r.returncode != 0 and not (verify and r.stdout.strip().startswith("{")):
        raise RuntimeError(f"fuseplan run failed ({r.returncode}): " + (r.stderr.strip().splitlines() or [""])[-1])
    j = json.loads(r.stdout)
    j["_process_s"] = wall
    return j


def fuseplan_search(binary: str, case_dir: Path, meta: dict, strategy: str, device: str) -> dict:
    plan = case_dir / f"plan-{strategy}-{Path(device).stem}.json"
    cmd = [binary, "search", str(case_dir / meta["model"]), *meta["fuseplan_bind"], "--device", device,
           "--strategy", strategy, "-o", str(plan)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"fuseplan search --strategy {strategy} failed: " +
                           (r.stderr.strip().splitlines() or [""])[-1])
    j = json.loads(plan.read_text())
    return {"plan": plan, "kernels": j["totals"]["kernels"], "predicted_us": j["totals"]["predicted_us"],
            "search_ms": j["totals"].get("search_ms")}


# ------------------------------------------------------------------ measuring one case

def max_rel_err(outs: list, ref: list):
    """max |a - ref| / max |ref| over all outputs (NaN-aware)."""
    worst = 0.0
    for a, b in zip(outs, ref):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return float("inf")
        if np.isnan(a).any() != np.isnan(b).any():
            return float("nan")
        scale = float(np.nanmax(np.abs(b))) if b.size else 0.0
        d = float(np.nanmax(np.abs(a - b))) if a.size else 0.0
        worst = max(worst, d / scale if scale > 0 else d)
    return worst


def pct(xs, q):
    return float(np.percentile(np.asarray(xs), q))


def measure_case(case: Case, args, env: dict) -> dict:
    res = {"title": case.title, "spec": case.spec, "systems": {}, "errors": {}, "notes": []}
    res["load_before"] = os.getloadavg()
    meta = case.meta
    res["meta"] = meta
    case.title = res["title"] = meta["title"]
    res["shape"] = "; ".join(f"{n} {meta['dtypes'][n].replace('float32', 'f32').replace('int64', 'i64')}"
                             f"[{','.join(map(str, meta['shapes'][n]))}]" for n in meta["inputs"])
    outs_dir = case.dir / "outputs"
    systems = []
    fp = {}
    # fuseplan: search each strategy's plan once, then one run to compile (cached by source hash), verify
    can_write = fuseplan_supports(args.fuseplan, "--outputs")
    for s in args.strategies:
        name = "fuseplan-" + s
        try:
            info = fuseplan_search(args.fuseplan, case.dir, meta, s, args.device)
            log(f"{case.title}: {name}: {info['kernels']} kernels; compiling and verifying")
            first = fuseplan_run(args.fuseplan, case.dir, meta, info["plan"], args.threads, env,
                                 verify=not args.no_verify, outputs=(outs_dir / name) if can_write else None)
            info.update(compile_ms=first["compile_ms"], cache_hit=first["cache_hit"], verified=first["verified"],
                        ok=first["ok"], first_ms=first["measured_us"] / 1e3)
            fp[name] = info
            systems.append(name)
        except Exception as e:
            res["errors"][name] = str(e)
            log(f"{case.title}: {name}: {e}")
    workers = {}
    for s in args.peers:
        if s.startswith("torch") and not meta.get("torch_module"):
            res["errors"][s] = "no PyTorch module for this model"
            continue
        try:
            log(f"{case.title}: starting {s}")
            w = Worker(s, case.dir, args.threads, env)
            wu = w.call(cmd="warmup", n=args.warmup)["ms"]
            w.call(cmd="outputs", dir=str(outs_dir / s))
            workers[s] = w
            systems.append(s)
            res["systems"].setdefault(s, {})["load_s"] = w.ready.get("load_s")
            res["systems"][s]["first_ms"] = wu[0] if wu else None
            if w.ready.get("new_ops"):
                res["systems"][s]["new_ops"] = w.ready["new_ops"]
        except Exception as e:
            res["errors"][s] = str(e)
            log(f"{case.title}: {s}: {e}")
            if s in workers:
                workers.pop(s).close()
    ordered = {}
    for s in systems:  # fuseplan strategies first, then the peers, in the order asked for
        ordered[s] = res["systems"].get(s, {})
        ordered[s].update({k: v for k, v in fp.get(s, {}).items() if k != "plan"})
    res["systems"] = ordered

    # output check: fuseplan's outputs where `run` writes them, else ONNX Runtime without optimizations
    def load_outs(s):  # the workers write K.npy; `fuseplan run --outputs` would write NAME.npy
        d = outs_dir / s
        if not d.exists():
            return None
        files = [d / f"{n}.npy" if (d / f"{n}.npy").exists() else d / f"{k}.npy"
                 for k, n in enumerate(meta["outputs"])]
        return [np.load(f) for f in files] if all(f.exists() for f in files) else None
    ref_sys = next((s for s in (["fuseplan-cost"] + [x for x in systems if x.startswith("fuseplan-")] + ["ort-none"] + PEERS)
                    if s in systems and load_outs(s) is not None), None)
    res["reference"] = ref_sys
    if ref_sys:
        ref = load_outs(ref_sys)
        for s in systems:
            o = load_outs(s)
            res["systems"][s]["max_rel_err"] = None if o is None else max_rel_err(o, ref)

    # interleaved rounds: every system once per round, the order rotated each round
    samples = {s: [] for s in systems}
    process_s = {}
    rounds = args.reps
    log(f"{case.title}: {rounds} interleaved rounds of {len(systems)} systems")
    for r in range(rounds):
        order = systems[r % len(systems):] + systems[:r % len(systems)] if systems else []
        for s in order:
            if s not in samples:
                continue
            try:
                if s.startswith("fuseplan-"):
                    j = fuseplan_run(args.fuseplan, case.dir, meta, fp[s]["plan"], args.threads, env)
                    samples[s].append(j["measured_us"] / 1e3)
                    process_s.setdefault(s, []).append(j["_process_s"])
                else:
                    samples[s].append(workers[s].call(cmd="time")["ms"])
            except Exception as e:
                res["errors"][s] = f"round {r}: {e}"
                log(f"{case.title}: {s}: {e}")
                samples.pop(s)
                if s in workers:
                    workers.pop(s).close()
        if args.verbose:
            log(f"round {r}: " + ", ".join(f"{s} {v[-1]:.2f}" for s, v in samples.items() if v))
    for w in workers.values():
        w.close()
    base = samples.get("ort-all")
    for s, xs in samples.items():
        if not xs:
            continue
        st = res["systems"][s]
        med = statistics.median(xs)
        st.update(samples_ms=xs, median_ms=med, min_ms=min(xs), p10_ms=pct(xs, 10), p90_ms=pct(xs, 90),
                  iqr_ms=pct(xs, 75) - pct(xs, 25), spread=(pct(xs, 90) - pct(xs, 10)) / med if med else None)
        if s in process_s:
            st["process_s"] = statistics.median(process_s[s])
        if base and len(base) == len(xs):
            st["ratio_ort_all"] = statistics.median([a / b for a, b in zip(xs, base)])
    res["load_after"] = os.getloadavg()
    res["rounds"] = rounds
    return res


# ------------------------------------------------------------------ report

def versions() -> dict:
    import importlib.metadata as md
    v = {"python": platform.python_version()}
    for p in ("numpy", "onnx", "onnxruntime", "torch", "torchvision", "transformers"):
        try:
            v[p] = md.version(p)
        except md.PackageNotFoundError:
            v[p] = "not installed"
    return v


def machine() -> dict:
    m = {"cpu": platform.processor() or "?", "kernel": platform.release(), "cores": os.cpu_count()}
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            k, _, val = line.partition(":")
            if k.strip() in ("Model name", "L2 cache", "L3 cache", "Thread(s) per core"):
                m[k.strip()] = val.strip()
    except OSError:
        pass
    return m


def fmt_ms(x):
    if x is None:
        return "–"
    return f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def fmt_err(x):
    if x is None:
        return "–"
    if x != x:
        return "NaN"
    return "0" if x == 0 else f"{x:.1e}"


def write_report(results: list, args, run_info: dict, path: Path) -> None:
    all_sys = []
    for r in results:
        for s in r["systems"]:
            if s not in all_sys and "median_ms" in r["systems"][s]:
                all_sys.append(s)
    la0, la1 = run_info["load_before"], run_info["load_after"]
    m = run_info["machine"]
    L = []
    L.append("# Peers: fuseplan's emitted CPU kernels vs ONNX Runtime and PyTorch\n")
    if args.label:
        L.append(f"> **{args.label}**\n")
    L.append(f"Written by `{run_info['command']}` on {run_info['date']} (harness commit {run_info['commit']}).\n")
    L.append(f"**Load average (1, 5, 15 min): {la0[0]:.2f} {la0[1]:.2f} {la0[2]:.2f} before, "
             f"{la1[0]:.2f} {la1[1]:.2f} {la1[2]:.2f} after, on {m['cores']} cores.** "
             "Read the ratios (per round, same load) rather than the absolute times when the load is above zero.\n")
    L.append(f"- CPU: {m.get('Model name', m['cpu'])} ({m['cores']} cores online"
             + (f", L2 {m['L2 cache']}" if "L2 cache" in m else "") + (f", L3 {m['L3 cache']}" if "L3 cache" in m else "")
             + f"); kernel {m['kernel']}")
    L.append(f"- Threads per system: {args.threads}, every system pinned to core(s) {run_info['cores']}")
    L.append(f"- Rounds: {args.reps} interleaved (rotated order), after {args.warmup} warm-up inferences per "
             "in-process system and one compile/verify run per fuseplan plan; seed " + str(args.seed))
    L.append(f"- fuseplan: `{args.fuseplan}` (plans searched with `--device {args.device}`), strategies "
             + ", ".join(args.strategies))
    L.append("- Packages: " + ", ".join(f"{k} {v}" for k, v in run_info["versions"].items()))
    L.append("- What is timed, per round and system: one inference right after one untimed one; fuseplan: "
             "`run --repeat 1 --json`'s `measured_us` (the sum of its kernels' times over one warm pass of "
             "the plan) in a new process per round; ONNX Runtime / PyTorch: wall time of one "
             "`session.run` / module call in a long-lived process. docs/peers.md has the details and caveats.\n")
    for title, err in run_info.get("failed", []):
        L.append(f"- **{title}: not measured**, the harness could not prepare it: {err}")
    L.append("")
    L.append("## Summary\n")
    L.append("Median ms (min ms) over the rounds, and ×: the median of the per-round ratios to ORT all opts "
             "(< 1 is faster than ONNX Runtime).\n")
    L.append("| model | batch | inputs | " + " | ".join(label(s) for s in all_sys) + " |")
    L.append("|---|---|---|" + "---|" * len(all_sys))
    for r in results:
        cells = []
        for s in all_sys:
            st = r["systems"].get(s, {})
            if "median_ms" not in st:
                cells.append("–")
                continue
            ratio = st.get("ratio_ort_all")
            cells.append(f"{fmt_ms(st['median_ms'])} ({fmt_ms(st['min_ms'])})"
                         + (f" {ratio:.2f}×" if ratio is not None else ""))
        meta = r["meta"]
        L.append(f"| {meta['name']}{''.join(f', {k}={v}' for k, v in sorted(meta['dims'].items()))} | "
                 f"{meta['batch']} | {r['shape']} | " + " | ".join(cells) + " |")
    L.append("")
    for r in results:
        la0, la1 = r["load_before"], r["load_after"]
        L.append(f"## {r['title']}\n")
        L.append(f"Model: {r['meta'].get('description', '')}; inputs {r['shape']}; "
                 f"{len(r['meta'].get('materialised', []))} weight placeholders materialised as seeded initializers. "
                 f"Load average {la0[0]:.2f} before, {la1[0]:.2f} after; {r['rounds']} rounds.\n")
        ref = r.get("reference")
        L.append("| system | median ms | min ms | p10–p90 ms | (p90−p10)/median | IQR ms | × ORT all (per-round) | "
                 f"max rel err vs {label(ref) if ref else '–'} | notes |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for s, st in r["systems"].items():
            notes = []
            if s.startswith("fuseplan-"):
                notes.append(f"{st.get('kernels')} kernels, predicted {st.get('predicted_us', 0) / 1e3:.2f} ms")
                if st.get("verified"):
                    notes.append("verify: bit-identical to fuseplan's reference" if st.get("ok")
                                 else "verify: MISMATCH vs fuseplan's reference")
                if st.get("compile_ms"):
                    notes.append(f"compile {st['compile_ms'] / 1e3:.1f} s")
                if st.get("process_s") is not None:
                    notes.append(f"{st['process_s']:.1f} s per `run` process")
            elif st.get("first_ms") is not None:
                notes.append(f"first call {fmt_ms(st['first_ms'])} ms" + (" (compiles)" if s == "torch-compile" else ""))
            if st.get("new_ops"):
                notes.append("ops its optimizer introduced: " + ", ".join(
                    f"{k} ×{v}" if v else k for k, v in sorted(st["new_ops"].items())))
            if "median_ms" not in st:
                L.append(f"| {label(s)} | – | – | – | – | – | – | {fmt_err(st.get('max_rel_err'))} | "
                         + "; ".join(notes) + " |")
                continue
            ratio = st.get("ratio_ort_all")
            L.append(f"| {label(s)} | {fmt_ms(st['median_ms'])} | {fmt_ms(st['min_ms'])} | "
                     f"{fmt_ms(st['p10_ms'])}–{fmt_ms(st['p90_ms'])} | {st['spread']:.2f} | {fmt_ms(st['iqr_ms'])} | "
                     f"{'–' if ratio is None else f'{ratio:.2f}'} | {fmt_err(st.get('max_rel_err'))} | "
                     + "; ".join(notes) + " |")
        for s, e in r["errors"].items():
            L.append(f"\n- {label(s)}: not measured: {e}")
        if ref and not ref.startswith("fuseplan"):
            L.append(f"\nOutputs compared with {label(ref)}: `fuseplan run` cannot write its outputs "
                     "(docs/peers.md), so fuseplan's rows show no error; its `--verify` result is in the notes.")
        L.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(L) + "\n")


COLORS = ["#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#9467bd", "#8c564b",
          "#e377c2", "#7f7f7f"]


def write_svg(results: list, path: Path, title: str, note: str = "") -> None:
    """Grouped bars: per case, each system's median time relative to ORT all
    opts (median of per-round ratios), log2 axis; the value on each bar."""
    import math
    all_sys = []
    for r in results:
        for s, st in r["systems"].items():
            if s not in all_sys and st.get("ratio_ort_all") is not None:
                all_sys.append(s)
    vals = [st["ratio_ort_all"] for r in results for st in r["systems"].values() if st.get("ratio_ort_all")]
    if not vals:
        return
    lo = 2.0 ** math.floor(math.log2(min(vals + [1.0]) * 0.7))  # a 1x bar stays visible
    hi = 2.0 ** math.ceil(math.log2(max(vals + [1.0]) * 1.05))
    if hi <= lo * 2:
        hi = lo * 4
    bw, gap, left, top, ph = 18, 26, 70, 50, 300
    group_w = bw * len(all_sys) + gap
    width = max(left + group_w * len(results) + 20, 680)
    height = top + ph + 120 + (16 if note else 0)

    def y(v):
        return top + ph * (1 - (math.log2(v) - math.log2(lo)) / (math.log2(hi) - math.log2(lo)))

    def esc(s):
        return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'font-family="sans-serif" font-size="11">',
         f'<rect width="{width}" height="{height}" fill="white"/>',
         f'<text x="{left}" y="18" font-size="14">{esc(title)}</text>',
         f'<text x="{left}" y="34" fill="#555">time relative to ONNX Runtime (all optimizations), '
         'median of per-round ratios; lower is faster; log scale</text>']
    v = lo
    while v <= hi * 1.0001:
        o.append(f'<line x1="{left}" x2="{width - 20}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                 f'stroke="{"#444" if v == 1 else "#ddd"}"/>')
        o.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}×</text>')
        v *= 2
    for gi, r in enumerate(results):
        x0 = left + gi * group_w + gap / 2
        for si, s in enumerate(all_sys):
            st = r["systems"].get(s, {})
            ratio = st.get("ratio_ort_all")
            if not ratio:
                continue
            x = x0 + si * bw
            yt = y(ratio)
            o.append(f'<rect x="{x:.1f}" y="{yt:.1f}" width="{bw - 2}" height="{top + ph - yt:.1f}" '
                     f'fill="{COLORS[si % len(COLORS)]}"><title>{esc(label(s))}: {ratio:.2f}× '
                     f'({fmt_ms(st["median_ms"])} ms)</title></rect>')
            o.append(f'<text x="{x + bw / 2 - 1:.1f}" y="{yt - 3:.1f}" font-size="8" '
                     f'text-anchor="middle">{ratio:.2g}</text>')
        cx = x0 + bw * len(all_sys) / 2
        meta = r["meta"]
        name = meta["name"] + "".join(f" {k}={v}" for k, v in sorted(meta["dims"].items()))
        o.append(f'<text x="{cx:.1f}" y="{top + ph + 14}" text-anchor="middle">{esc(name)}</text>')
        o.append(f'<text x="{cx:.1f}" y="{top + ph + 27}" text-anchor="middle" fill="#555">batch {meta["batch"]}'
                 f'</text>')
    ly = top + ph + 50
    for si, s in enumerate(all_sys):
        per_row = max(1, (width - left) // 150)
        lx = left + (si % per_row) * 150
        yy = ly + (si // per_row) * 16
        o.append(f'<rect x="{lx}" y="{yy - 9}" width="10" height="10" fill="{COLORS[si % len(COLORS)]}"/>')
        o.append(f'<text x="{lx + 14}" y="{yy}">{esc(label(s))}</text>')
    if note:
        o.append(f'<text x="{left}" y="{height - 10}" fill="#a00">{esc(note)}</text>')
    o.append("</svg>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(o) + "\n")


# ------------------------------------------------------------------ main

def cmd_run(args) -> int:
    if not Path(args.fuseplan).exists():
        raise SystemExit(f"peers: no fuseplan binary at {args.fuseplan} (build it, or pass --fuseplan PATH)")
    args.fuseplan = str(Path(args.fuseplan).resolve())
    specs = (SUITES[args.suite] if args.suite else []) + list(args.cases)
    if not specs:
        raise SystemExit("peers: name at least one case or --suite (see `peers.py list`)")
    args.strategies = STRATEGIES_ALL if args.strategies == "all" else args.strategies.split(",")
    args.peers = PEERS if args.peers == "all" else [p for p in args.peers.split(",") if p]
    for p in args.peers:
        if p not in PEERS:
            raise SystemExit(f"peers: unknown system '{p}' (one of {', '.join(PEERS)})")
    allowed = sorted(os.sched_getaffinity(0))
    cores = [int(c) for c in args.cores.split(",")] if args.cores else allowed[:args.threads]
    if len(cores) < args.threads:
        log(f"warning: {args.threads} threads on {len(cores)} core(s) {cores}")
    os.sched_setaffinity(0, cores)  # inherited by every worker and fuseplan process
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[k] = str(args.threads)
    env["PYTHONPATH"] = str(HERE) + os.pathsep + env.get("PYTHONPATH", "")
    cases = [Case(s, args) for s in specs]
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "?"
    run_info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
                "command": "peers.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]), "commit": commit,
                "cores": ",".join(map(str, cores)), "versions": versions(), "machine": machine(),
                "load_before": os.getloadavg()}
    results, failed = [], []
    for c in cases:  # prepare every case first: a bad binding stops the run before anything is measured
        try:
            c.meta = prepare_case(c, args)
        except Exception as e:  # e.g. an exporter that cannot export the model: reported, the rest go on
            log(f"{c.title}: cannot prepare: {type(e).__name__}: {e}")
            failed.append((c.title, f"{type(e).__name__}: {e}"))
    run_info["failed"] = failed
    for c in cases:
        if not hasattr(c, "meta"):
            continue
        results.append(measure_case(c, args, env))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    run_info["load_after"] = os.getloadavg()
    write_report(results, args, run_info, Path(args.out))
    la0, la1 = run_info["load_before"], run_info["load_after"]
    note = (args.label.split(":")[0][:90] + "; " if args.label else "") + \
        f"load average {la0[0]:.2f} before, {la1[0]:.2f} after on {os.cpu_count()} cores; {args.reps} rounds"
    write_svg(results, Path(args.svg), "fuseplan vs peers, " + f"{args.threads} thread(s), {run_info['date']}", note)
    log(f"wrote {args.out} and {args.svg}")
    print(Path(args.out).read_text())
    return 0


def cmd_list(_args) -> int:
    import modules
    print("zoo models (built with seeded random weights, exported to ONNX):")
    for k, (d, _, _) in modules.ZOO.items():
        extra = modules.ZOO_DEFAULT_DIMS.get(k)
        print(f"  {k:32s} {d}" + (f"; dims {extra}" if extra else ""))
    print("examples (examples/NAME.onnxtxt, weight placeholders materialised; S defaults to 128):")
    for k in EXAMPLES:
        print(f"  {k}")
    print("suites (--suite NAME):")
    for k, v in SUITES.items():
        print(f"  {k:10s} " + " ".join(v))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="measure cases and write the report")
    r.add_argument("cases", nargs="*", help="MODEL[,batch=B][,NAME=V...]")
    r.add_argument("--suite", choices=sorted(SUITES), help="add a named list of cases")
    r.add_argument("--batch", type=int, default=1, help="default batch (default 1)")
    r.add_argument("--dim", action="append", default=[], type=lambda s: (s.split("=")[0], int(s.split("=")[1])),
                   help="default NAME=V binding for every case (repeatable)")
    r.add_argument("--threads", type=int, default=1, help="threads for every system (default 1)")
    r.add_argument("--cores", default="", help="comma-separated CPUs to pin to (default: the first THREADS allowed)")
    r.add_argument("--reps", type=int, default=15, help="interleaved rounds (default 15)")
    r.add_argument("--warmup", type=int, default=3, help="warm-up inferences per in-process system (default 3)")
    r.add_argument("--strategies", default="unfused,cost", help="fuseplan strategies, comma-separated, or 'all'")
    r.add_argument("--peers", default="all", help="peer systems: " + ",".join(PEERS) + " or 'all'")
    r.add_argument("--device", default="host-cpu", help="device whose cost model fuseplan's search uses")
    r.add_argument("--fuseplan", default=str(ROOT / "build/cli/fuseplan"), help="fuseplan binary")
    r.add_argument("--no-verify", action="store_true", help="skip fuseplan's --verify on the first run")
    r.add_argument("--data-inputs", default="", help="comma-separated data inputs of a model file (default: "
                   "the shared manifest, else the first input and every input with a symbolic dim)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--work", default=str(ROOT / "peers-work"), help="work folder (ignored by git)")
    r.add_argument("--fresh", action="store_true", help="re-prepare cases even if the work folder has them")
    r.add_argument("--out", default=str(ROOT / "results/peers.md"))
    r.add_argument("--svg", default=str(ROOT / "results/peers.svg"))
    r.add_argument("--json", default="", help="also write the raw results (every sample) as JSON")
    r.add_argument("--label", default="", help="a line at the top of the report (e.g. TRIAL on a loaded machine)")
    r.add_argument("-v", "--verbose", action="store_true", help="log every round")
    r.set_defaults(fn=cmd_run)
    ls = sub.add_parser("list", help="zoo models, examples and suites")
    ls.set_defaults(fn=cmd_list)
    w = sub.add_parser("worker", help=argparse.SUPPRESS)
    w.add_argument("--system", required=True)
    w.add_argument("--case-dir", required=True)
    w.add_argument("--threads", type=int, default=1)
    w.set_defaults(fn=lambda a: worker_main(a) or 0)
    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
