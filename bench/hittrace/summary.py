#!/usr/bin/env python3
"""Medians of each step of hittrace lines: python3 summary.py STDERR...

Reads the standard error of `kcache demo --backend cuda` built with the
marks (marks.py), leaves out the cold phase's first 17 cache lines and the
kernel library, and prints the median of each step over the rest (a step
marked twice in one request is named NAME#2), then the floor's.
"""
import re,sys,statistics as st
from collections import defaultdict
def summ(path, kind='cache'):
    lines=[l for l in open(path) if l.startswith('hittrace '+kind)]
    if kind=='cache': lines=lines[17:]
    order=[]; steps=defaultdict(list)
    for l in lines:
        if l.split()[2]=='kernel-library': continue
        seen=defaultdict(int)
        for kv in l.split(':',1)[1].split():
            k,v=kv.split('='); seen[k]+=1
            kk=k if seen[k]==1 else f"{k}#{seen[k]}"
            if kk not in order: order.append(kk)
            steps[kk].append(float(v))
        steps['faults'].append(int(re.search(r'faults=(\d+)',l).group(1)))
    return order+['faults'],steps
for p in sys.argv[1:]:
    o,s=summ(p); print(p)
    for k in o: print(f"  {k:16s} n={len(s[k]):3d} med={st.median(s[k]):8.1f}")
    o,s=summ(p,'floor')
    print('  floor', {k: round(st.median(s[k]),1) for k in o})
