"""``python -m wbsim_ray PLAN --out DIR [--address ADDR] [--wbsim PATH]``"""

import argparse
import sys

from . import run_plan


def main() -> int:
    ap = argparse.ArgumentParser(
        prog="wbsim-ray", description="Run a wbsim sweep plan's points as Ray tasks."
    )
    ap.add_argument("plan")
    ap.add_argument("--out", required=True, help="output directory (results.csv, points/)")
    ap.add_argument("--address", default=None, help='Ray cluster: "auto" or "ray://host:10001"; default a local instance')
    ap.add_argument("--num-cpus", type=int, default=None, help="CPUs of a local instance")
    ap.add_argument("--wbsim", default="wbsim", help="the wbsim binary on every node")
    a = ap.parse_args()
    csv = run_plan(a.plan, a.out, wbsim=a.wbsim, address=a.address, num_cpus=a.num_cpus)
    print(csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
