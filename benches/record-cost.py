#!/usr/bin/env python3
"""What recording costs the proxy per request, from CPU samples rather than req/s (which this shared
2-core machine makes swing by +-10% between runs).

Runs workload 11 (`node benches/run.js`, plain and recording processes interleaved) under
`perf record -a`, then counts each proxy process's samples: its tokio workers and its recording writer
thread. Both processes encode the same page per request, so samples are divided by the samples in the
DEFLATE tokenizer: "per page" below is in units of one page's tokenizing, whatever the clock speed or the
machine's load. Needs `perf` (linux-perf) and a release addon built with symbols:
`CARGO_PROFILE_RELEASE_STRIP=none CARGO_PROFILE_RELEASE_DEBUG=1 npx napi build --platform --release`.

Usage: python3 benches/record-cost.py [runs]    (BENCH_* variables pass through to run.js)
"""
import collections
import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
data = os.path.join(here, '.work', 'record-cost.perf.data')
os.makedirs(os.path.dirname(data), exist_ok=True)
env = dict(os.environ, BENCH_NO_WRITE='1', BENCH_NO_INSTALL='1', BENCH_CONTENDERS='devproxy-native',
           BENCH_WORKLOADS='11', BENCH_RUNS=sys.argv[1] if len(sys.argv) > 1 else '3')
run = subprocess.run(['perf', 'record', '-F', '1999', '-a', '-o', data, '--', 'node', os.path.join(here, 'run.js')],
                     env=env, capture_output=True, text=True)
if run.returncode != 0:
    sys.exit(f'perf record or run.js failed:\n{run.stderr[-2000:]}')
for line in run.stdout.splitlines():
    if line.startswith('| plain') or line.startswith('| recording'):
        print(line)
script = subprocess.run(['perf', 'script', '-i', data, '-F', 'comm,pid,tid,ip,sym'],
                        capture_output=True, text=True).stdout
threads = collections.defaultdict(collections.Counter)
tokenize = collections.Counter()
symbols = collections.defaultdict(collections.Counter)
for line in script.splitlines():
    m = re.match(r'\s*(\S+)\s+(\d+)/\d+\s+\S+\s+(.*?)(?:\s+\(.*\))?$', line)
    if not m or m.group(1) not in ('tokio-rt-worker', 'devproxy-record'):
        continue
    comm, pid, sym = m.groups()
    threads[pid][comm] += 1
    symbols[pid][(comm, sym)] += 1
    if 'tokenize' in sym:
        tokenize[pid] += 1
pids = sorted((p for p in threads if tokenize[p] > 500), key=lambda p: threads[p]['devproxy-record'])
if len(pids) != 2:
    sys.exit(f'expected a plain and a recording process, found {len(pids)} with samples in the encoder')
plain, recording = pids
per = lambda pid, n: n / tokenize[pid]
for name, pid in (('plain', plain), ('recording', recording)):
    w, r = per(pid, threads[pid]['tokio-rt-worker']), per(pid, threads[pid]['devproxy-record'])
    print(f'{name:<10} workers {w:.3f}  writer {r:.3f}  total {w + r:.3f} (per page tokenized)')
cost = sum(per(recording, n) for n in threads[recording].values()) / sum(per(plain, n) for n in threads[plain].values())
print(f'recording costs {cost:.3f}x the proxy CPU per request: about {100 / cost:.0f}% of the plain req/s if the proxy were all the load')
print('writer, top symbols (per page tokenized):')
for (comm, sym), n in symbols[recording].most_common(60):
    if comm == 'devproxy-record':
        print(f'  {per(recording, n):.3f}  {sym}')
