"""Run a wbsim sweep plan's points as Ray tasks.

Each task runs ``wbsim sweep PLAN --index K`` for one point in a scratch
directory on whichever node Ray gives it, and returns that point's output
files; the driver writes them under ``OUT/points/ID/`` and then builds
``OUT/results.csv`` with ``wbsim sweep merge``, so the rows are exactly
those of a local ``wbsim sweep PLAN --out OUT`` (see docs/sweep.md).

Every node needs the ``wbsim`` binary (``wbsim=`` names it) and the plan
with its scenario files at the same path (a shared filesystem, or Ray's
``runtime_env={"working_dir": ...}``). Points already done in ``OUT`` are
not run again.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, Optional, Tuple

import ray

__all__ = ["run_plan", "count_points"]


def count_points(plan: str, wbsim: str = "wbsim") -> int:
    """How many points the plan has (``wbsim sweep PLAN --count``)."""
    out = subprocess.run(
        [wbsim, "sweep", plan, "--count"], check=True, capture_output=True, text=True
    )
    return int(out.stdout.strip())


def _point_files(plan: str, index: int, wbsim: str) -> Tuple[str, Dict[str, bytes]]:
    """Run point ``index`` in a scratch directory; its ID and files."""
    with tempfile.TemporaryDirectory(prefix="wbsim-ray-") as tmp:
        r = subprocess.run(
            [wbsim, "sweep", plan, "--index", str(index), "--out", tmp, "-q"],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            raise RuntimeError(f"point {index}: wbsim exited {r.returncode}: {r.stderr.strip()}")
        (pdir,) = [p for p in (Path(tmp) / "points").iterdir() if p.is_dir()]
        files = {}
        for f in sorted(pdir.rglob("*")):
            if f.is_file():
                files[str(f.relative_to(pdir))] = f.read_bytes()
        return pdir.name, files


_remote_point = ray.remote(_point_files)


def _done_indices(out: Path) -> set:
    import json

    done = set()
    pts = out / "points"
    if pts.is_dir():
        for d in pts.iterdir():
            f = d / "point.json"
            if f.is_file():
                done.add(json.loads(f.read_text())["index"])
    return done


def run_plan(
    plan: str,
    out: str,
    wbsim: str = "wbsim",
    address: Optional[str] = None,
    num_cpus: Optional[int] = None,
) -> Path:
    """Run every point of ``plan`` not yet done in ``out`` as a Ray task and
    write ``out/results.csv``. Connects with ``ray.init(address=...)`` unless
    Ray is already initialised (``None``: a local instance, ``"auto"`` or
    ``"ray://host:10001"``: a cluster). Returns the path of results.csv."""
    plan = os.path.abspath(plan)
    outp = Path(out).resolve()
    outp.mkdir(parents=True, exist_ok=True)
    if not ray.is_initialized():
        ray.init(address=address, num_cpus=num_cpus, include_dashboard=False)
    n = count_points(plan, wbsim)
    done = _done_indices(outp)
    pending = {
        _remote_point.remote(plan, k, wbsim): k for k in range(n) if k not in done
    }
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        ref = ready[0]
        pending.pop(ref)
        pid, files = ray.get(ref)
        pdir = outp / "points" / pid
        # point.json last: it marks the point done
        for name in sorted(files, key=lambda f: f == "point.json"):
            dest = pdir / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(dest.name + ".tmp")
            tmp.write_bytes(files[name])
            tmp.replace(dest)
    subprocess.run(
        [wbsim, "sweep", "merge", str(outp), "--out", str(outp), "-q"], check=True
    )
    return outp / "results.csv"
