"""A small plan through a local Ray instance gives the local sweep's rows,
byte for byte. WBSIM_BIN names the wbsim binary (default: wbsim on PATH)."""

import os
import subprocess
from pathlib import Path

import ray

from wbsim_ray import count_points, run_plan

WBSIM = os.environ.get("WBSIM_BIN", "wbsim")

PLAN = """seeds = [1, 2]
[set]
"run.duration" = "6s"
"run.warmup" = "2s"
[axes]
"jobs.dd.numjobs" = [1, 4]
"vm.dirty_bytes" = ["50M", "200M"]
"""


def test_ray_rows_equal_local_rows(tmp_path: Path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    assert count_points(str(plan), WBSIM) == 8
    local = tmp_path / "local"
    subprocess.run(
        [WBSIM, "sweep", str(plan), "--out", str(local), "-q"], check=True
    )
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        csv = run_plan(str(plan), str(tmp_path / "ray"), wbsim=WBSIM)
        # a second call finds every point done and runs nothing
        again = run_plan(str(plan), str(tmp_path / "ray"), wbsim=WBSIM)
    finally:
        ray.shutdown()
    want = (local / "results.csv").read_bytes()
    assert csv.read_bytes() == want
    assert again.read_bytes() == want
    assert len(want.decode().splitlines()) == 9
    # the points' own files too
    for d in (local / "points").iterdir():
        for f in ("summary.json", "vmstat", "trace.txt", "point.json"):
            assert (tmp_path / "ray" / "points" / d.name / f).read_bytes() == (d / f).read_bytes()
