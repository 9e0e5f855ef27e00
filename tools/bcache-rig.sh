#!/bin/sh
# Compare wbsim's bcache against the guest rig's real bcache (Linux 6.1
# under qemu), sample for sample: writeback_rate_debug's target,
# proportional and rate, the idle switch to the maximum rate, dirty_data.
#
#   tools/bcache-rig.sh SETTING [RIG_SAMPLES]
#
# SETTING is default, wbpct2 or slow (examples/bcache-rig/rig-SETTING.toml
# says how the rig was run). RIG_SAMPLES is the rig's bcache-samples.txt
# (tests/data/bcache-rig/SETTING.txt keeps each setting's);
# without it, the rig is run: GUEST_RIG names the rig's directory (with
# run-guest.sh), GUEST_OUT its output directory (default
# /var/tmp/guestprobe/share/out), and the boot is serialised on
# /tmp/wbsim-live.lock. Needs python3.
set -eu
setting=${1:?usage: tools/bcache-rig.sh default|wbpct2|slow [RIG_SAMPLES]}
scen=examples/bcache-rig/rig-$setting.toml
[ -f "$scen" ] || { echo "no $scen" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rig=${2:-}
if [ -z "$rig" ]; then
    : "${GUEST_RIG:?set GUEST_RIG to the guest rig directory, or give RIG_SAMPLES}"
    out=${GUEST_OUT:-/var/tmp/guestprobe/share/out}
    case $setting in
    default) extra=""; args="fiorate=8m" ;;
    wbpct2) extra=""; args="wbpct=2 wbdelay=0 fiorate=4m fiosec=60 samplesec=90" ;;
    slow) extra=",throttling.iops-write=300"; args="wbdelay=5 fiorate=4m" ;;
    esac
    flock /tmp/wbsim-live.lock sh -c "cd '$GUEST_RIG' && SLOW_EXTRA='$extra' ./run-guest.sh exp-bcache.sh $args > '$tmp/guest.log' 2>&1 && cp '$out/bcache-samples.txt' '$tmp/rig.txt'"
    rig=$tmp/rig.txt
fi
"${WBSIM:-target/release/wbsim}" run "$scen" --out "$tmp/sim" > /dev/null
python3 - "$rig" "$tmp/sim/bcache-bcache0.txt" "$setting" <<'PY'
import re, sys
U = {'?': 1, 'k': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
def val(s):
    s = s.replace('/sec', '')
    return float(s[:-1]) * U[s[-1]]
def res(v):
    """bch_hprint's resolution at v: a tenth of its unit"""
    u = 1
    while abs(v) >= 1000 * u and u < 1 << 40:
        u <<= 10
    return max(u, 1024) / 10
def load(p):
    out = []
    for line in open(p):
        if not line.startswith('S t='):
            continue
        t = float(re.search(r't=([\d.]+)', line).group(1))
        dd = val(re.search(r'dirty_data=(\S+)', line).group(1))
        dbg = line.split('|', 1)[1]
        f = dict(re.findall(r'(rate|dirty|target|proportional|integral):\s+(\S+)', dbg))
        out.append(dict(t=t, dirty_data=dd, **{k: val(v) for k, v in f.items()}))
    return out
rig, sim, name = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
def at(series, t):
    """linear interpolation of dirty_data at t"""
    for a, b in zip(series, series[1:]):
        if a['t'] <= t <= b['t']:
            w = (t - a['t']) / max(b['t'] - a['t'], 1e-9)
            return a['dirty_data'] + w * (b['dirty_data'] - a['dirty_data'])
    return None
def epochs(series):
    """the controller's ticks: where (target, proportional, rate) change"""
    ep, last = [], None
    for i, s in enumerate(series):
        key = (s['target'], s['proportional'], s['rate'])
        if key != last:
            ep.append((s['t'], i, s))
            last = key
    return ep
M = 1 << 20
# one sample's dirty data: what a sample interval of the run's IO adds
# (the median of the rig's growing steps)
steps = sorted(b['dirty_data'] - a['dirty_data'] for a, b in zip(rig, rig[1:])
               if b['dirty_data'] > a['dirty_data'])
fill_step = steps[len(steps) // 2] if steps else 0
print(f"setting {name}: {len(rig)} rig samples, {len(sim)} wbsim samples")
print(f"{'t rig':>6} {'t sim':>6} | {'target rig':>10} {'sim':>8} | {'P rig':>8} {'P sim':>8} {'1 sample':>8} | {'rate rig':>9} {'sim':>9} | ok")
ok_all = True
rep, sep = epochs(rig), epochs(sim)
for (tr, ir, r) in rep[1:]:
    # the wbsim tick nearest in time (ticks may be up to one period apart)
    ts, is_, s = min(sep[1:] or sep, key=lambda e: abs(e[0] - tr))
    if abs(ts - tr) > 5.5:
        continue
    step = fill_step
    # one sample's dirty data through the controller, plus what printing
    # both values loses
    tol = step / 40 + res(r['proportional']) + res(s['proportional'])
    tmatch = abs(r['target'] - s['target']) <= res(r['target'])
    maxrate = r['rate'] > 1 << 39
    if maxrate != (s['rate'] > 1 << 39):
        continue  # either side's idle switch: checked below
    pmatch = maxrate or abs(r['proportional'] - s['proportional']) <= tol
    ok = tmatch and pmatch
    ok_all &= ok
    print(f"{tr:6.1f} {ts:6.1f} | {r['target']/M:9.1f}M {s['target']/M:7.1f}M | {r['proportional']/1024:7.1f}k {s['proportional']/1024:7.1f}k {step/40/1024:7.1f}k | {r['rate']/1024:8.1f}k {s['rate']/1024:8.1f}k | {'yes' if ok else 'NO'}")
def first_max(series):
    return next((x['t'] for x in series if x['rate'] > 1 << 39), None)
fr, fs = first_max(rig), first_max(sim)
print(f"idle switch to the maximum rate: rig {fr}, wbsim {fs}", end=' ')
if fr is not None or fs is not None:
    good = fr is not None and fs is not None and abs(fr - fs) <= 5.0 + 1.2
    ok_all &= good
    print('ok' if good else 'NO')
else:
    print('(none)')
worst, worst_t = 0.0, 0.0
peak = max(x['dirty_data'] for x in rig)
# under the controller: up to either side's switch to the maximum rate
# (after it the drain's timing is the idle switch's, checked above)
until = min(x for x in (fr, fs, 1e9) if x is not None)
for r in rig:
    s = at(sim, r['t'])
    if s is None or r['dirty_data'] < 0.05 * peak or r['t'] >= until:
        continue
    e = abs(s - r['dirty_data']) / r['dirty_data']
    if e > worst:
        worst, worst_t = e, r['t']
print(f"dirty_data: largest difference {100 * worst:.1f}% at t={worst_t:.1f} (rig samples above 5% of its peak {peak / M:.1f}M, before the idle switch)")
ok_all &= worst <= 0.10
# the same samples as time: when wbsim's dirty data first reaches each
# rising rig sample's value, and the rig's own fill rate between samples
# (a lag that wanders and comes back is the input's unsteadiness; one
# that grows steadily would be a rate error, one constant from the start
# a start-time error)
def when(series, d):
    for a, b in zip(series, series[1:]):
        if a['dirty_data'] < d <= b['dirty_data']:
            w = (d - a['dirty_data']) / (b['dirty_data'] - a['dirty_data'])
            return a['t'] + w * (b['t'] - a['t'])
    return None
def slope(a, b):
    return (b['dirty_data'] - a['dirty_data']) / (b['t'] - a['t'])
lags, rates = [], []
# inside the steep part of the fill (rising into the sample and out of it
# at half the median rise or more), where a time difference is measurable
rise = sorted(slope(a, b) for a, b in zip(rig, rig[1:]) if b['dirty_data'] > a['dirty_data'])
half = rise[len(rise) // 2] / 2 if rise else 0
for a, b, c in zip(rig, rig[1:], rig[2:]):
    steep = min(slope(a, b), slope(b, c)) >= half > 0
    if b['t'] >= until or not steep or b['dirty_data'] < 0.05 * peak:
        continue
    rates.append(slope(a, b))
    ts = when(sim, b['dirty_data'])
    if ts is not None:
        lags.append((b['t'] - ts, b['t']))
if lags:
    lo, hi = min(lags), max(lags)
    print(f"dirty_data as time, in the steep fill: the rig {lo[0]:+.2f} s (t={lo[1]:.1f}) to {hi[0]:+.2f} s (t={hi[1]:.1f}) from wbsim; its fill rate between samples {min(rates) / M:.1f}-{max(rates) / M:.1f} MiB/s")
print('PASS' if ok_all else 'FAIL')
sys.exit(0 if ok_all else 1)
PY
