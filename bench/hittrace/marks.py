#!/usr/bin/env python3
"""Puts the hittrace marks into a copy of the tree (never into a branch).

Usage: python3 bench/hittrace/marks.py COPY [fine]

COPY is a scratch copy of the repository (git worktree add --detach). The
script writes internal/hittrace from hittrace.patch, marks the steps of
cuda.Cache.Module, of the scanner's memoOf and loadRecord and of the CUDA
demo's phases; with "fine", also the record key, the disk tier's read
(leaf, open, read, parse, compare, CRC, close, access time) and the
record's check. Made on main at 4d83ac0 (branch hit7), taught the disk
tier's read of branch hit8, the direct path (cuda/direct.go, marks x.*)
at 674702e; a step whose text moved makes it stop with the text it missed.
"""
import os, re, sys

root = sys.argv[1]
fine = len(sys.argv) > 2 and sys.argv[2] == 'fine'
here = os.path.dirname(os.path.abspath(__file__))

def hittrace_source():
    patch = open(os.path.join(here, 'hittrace.patch')).read()
    part = patch.split('+++ b/internal/hittrace/hittrace.go\n', 1)[1]
    lines = part.split('\n')[1:]  # the hunk header
    return '\n'.join(l[1:] for l in lines if l.startswith('+')) + '\n'

def edit(path, pairs):
    p = os.path.join(root, path)
    s = open(p).read()
    if 'internal/hittrace' not in s:
        s = s.replace('import (\n', 'import (\n\t"github.com/kcache/kcache/internal/hittrace"\n', 1)
    for old, new in pairs:
        # A step may name its text as it reads on several trees: a list
        # of (old, new) pairs, the first found is marked.
        alts = old if isinstance(old, list) else [(old, new)]
        for o, n in alts:
            if o in s:
                s = s.replace(o, n, 1)
                break
        else:
            sys.exit('marks.py: not found in %s:\n%s' % (path, alts[0][0]))
    open(p, 'w').write(s)

os.makedirs(os.path.join(root, 'internal/hittrace'), exist_ok=True)
open(os.path.join(root, 'internal/hittrace/hittrace.go'), 'w').write(hittrace_source())
edit('internal/demo/cuda_phase.go',[
 ('\tstart := time.Now()\n\tm, err := sess.Cache.Module(ctx, src)\n','\thittrace.Reset()\n\tstart := time.Now()\n\tm, err := sess.Cache.Module(ctx, src)\n\thittrace.Mark("module")\n'),
 ('\terr = run.Launch(m.Function)\n','\terr = run.Launch(m.Function)\n\thittrace.Mark("launch")\n\thittrace.Dump(os.Stderr, "cache "+c.Name)\n'),
 ('\tstart := time.Now()\n\timg, err := os.ReadFile(base + ext)\n','\thittrace.Reset()\n\tstart := time.Now()\n\timg, err := os.ReadFile(base + ext)\n\thittrace.Mark("read")\n'),
 ('\tm, err := ctx.LoadModule(img, nil)\n','\tm, err := ctx.LoadModule(img, nil)\n\thittrace.Mark("LoadModule")\n'),
 ('\tr := cudaResult{Outcome: mode, MS: msSince(start), ModuleMS: moduleMS, Bytes: len(img), Format: ext[1:]}\n','\thittrace.Mark("launch")\n\thittrace.Dump(os.Stderr, mode+" "+c.Name)\n\tr := cudaResult{Outcome: mode, MS: msSince(start), ModuleMS: moduleMS, Bytes: len(img), Format: ext[1:]}\n'),
])
edit('cuda/cache.go',[
 ('\tp, err := c.plan(src)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\t// A key that takes long','\tp, err := c.plan(src)\n\thittrace.Mark("plan")\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\t// A key that takes long'),
 ('\tdefer endEarly()\n','\tdefer endEarly()\n\thittrace.Mark("early")\n'),
 ('\tfound := c.keys.lookup(src)\n','\tfound := c.keys.lookup(src)\n\thittrace.Mark("keymemo")\n'),
 ('\tprep := c.keyWith(src, p, headers).Prepare()\n','\tkk := c.keyWith(src, p, headers)\n\thittrace.Mark("keyWith")\n\tprep := kk.Prepare()\n\thittrace.Mark("Prepare")\n'),
 ('\tr, err := c.bins.GetLocal(ctx, prep)\n','\thittrace.Mark("objtier")\n\tr, err := c.bins.GetLocal(ctx, prep)\n\thittrace.Mark("GetLocal")\n'),
 ('\tim, err := decodeImage(blob)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\tm, err := c.ctx.LoadModule(im.code, c.jit)\n','\tim, err := decodeImage(blob)\n\thittrace.Mark("decode")\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\tm, err := c.ctx.LoadModule(im.code, c.jit)\n\thittrace.Mark("LoadModule")\n'),
])
edit('cuda/direct.go',[
 ('\tins, err := deps.Identify(scanInputs(src, p))\n','\tsi := scanInputs(src, p)\n\thittrace.Mark("x.scanInputs")\n\tins, err := deps.Identify(si)\n\thittrace.Mark("x.identify")\n'),
 ('\tbase := c.directBase()\n','\tbase := c.directBase()\n\thittrace.Mark("x.base")\n'),
 ('\treq := &directRequest{ins: ins}\n\th.Sum(req.id[:0])\n','\treq := &directRequest{ins: ins}\n\th.Sum(req.id[:0])\n\thittrace.Mark("x.name")\n'),
 ('\tdata, ok := c.ahead.take(req.id)\n','\tdata, ok := c.ahead.take(req.id)\n\tif ok {\n\t\thittrace.Mark("x.ahead")\n\t}\n'),
 ('\tif d, err = decodeDirect(data); err != nil','\thittrace.Mark("x.got")\n\tif d, err = decodeDirect(data); err != nil'),
 ('\tfor i, in := range req.ins {\n\t\tif scanned, ok = c.scanner.AdoptRecord(ctx, scanned, in, d.records[i]); !ok {\n\t\t\treturn req, d, nil, false','\thittrace.Mark("x.decode")\n\tfor i, in := range req.ins {\n\t\tif scanned, ok = c.scanner.AdoptRecord(ctx, scanned, in, d.records[i]); !ok {\n\t\t\treturn req, d, nil, false'),
 ('\treturn req, d, scanned, true\n','\thittrace.Mark("x.adopt")\n\treturn req, d, scanned, true\n'),
 ('\t\te, err := c.fromBlob(d.image)\n','\t\thittrace.Mark("x.loadStart")\n\t\te, err := c.fromBlob(d.image)\n'),
 ('\tfor _, in := range ins {\n\t\tin.WriteID(h)\n\t}\n','\tfor _, in := range ins {\n\t\tin.WriteID(h)\n\t}\n\thittrace.Mark("x.ids")\n'),
 ('\tif outcome == kcache.OutcomeDisk {\n\t\tc.bins.RecordMemory(false, 0)','\thittrace.Mark("x.objtier")\n\tif outcome == kcache.OutcomeDisk {\n\t\tc.bins.RecordMemory(false, 0)'),
 ('\tc.keys.putDirect(h, src, scanned, d.key)\n','\thittrace.Mark("x.stats")\n\tc.keys.putDirect(h, src, scanned, d.key)\n\thittrace.Mark("x.memo")\n'),
])
edit('deps/scanner.go',[
 ('\tm, h := s.memos.lookup(in, wd)\n\tif m != nil && m.valid(s.fs) {\n\t\treturn m, confirmed, nil','\thittrace.Mark("s.wd")\n\tm, h := s.memos.lookup(in, wd)\n\thittrace.Mark("s.memo")\n\tif m != nil && m.valid(s.fs) {\n\t\treturn m, confirmed, nil'),
 ('\tkey := inputID(in, wd)\n\tif m == nil {','\tkey := inputID(in, wd)\n\thittrace.Mark("s.inputID")\n\tif m == nil {'),
 ('\tdata, err := s.records.LoadRecord(ctx, id)\n','\tdata, err := s.records.LoadRecord(ctx, id)\n\thittrace.Mark("s.rec.read")\n'),
 ('\tr.m, r.bytes, r.read, r.decode = m, len(data), read.Sub(start), time.Since(read)\n','\tr.m, r.bytes, r.read, r.decode = m, len(data), read.Sub(start), time.Since(read)\n\thittrace.Mark("s.rec.decode")\n'),
 ('\t\t\t\treturn r.m, s.confirmLater(ctx, r, in, wd, h), nil','\t\t\t\tcf := s.confirmLater(ctx, r, in, wd, h)\n\t\t\t\thittrace.Mark("s.confirmStart")\n\t\t\t\treturn r.m, cf, nil'),
])
if fine:
    edit('deprecord.go',[('\t\t\tp = preparedRecordKey(id)\n','\t\t\tp = preparedRecordKey(id)\n\t\t\thittrace.Mark("r.prepKey")\n')])
    edit('disk/store.go',[
     ([('\tleaf := s.leafDir(s.preparedDigests(p))\n\tnow := s.now()\n','\tleaf := s.leafDir(s.preparedDigests(p))\n\tnow := s.now()\n\thittrace.Mark("d.leaf")\n'),
       ('\th := s.vdir.Load()\n\tnow := s.now()\n','\th := s.vdir.Load()\n\tnow := s.now()\n\thittrace.Mark("d.leaf")\n')], None),  # hit8
     # hit8's first: on it, the first openRead(path) is readFile's, off the hit path
     ([('\tfd, err := openSlot(h, pz, rel)\n','\tfd, err := openSlot(h, pz, rel)\n\thittrace.Mark("d.open")\n'),
       ('\tfd, err := openRead(path)\n','\tfd, err := openRead(path)\n\thittrace.Mark("d.open")\n')], None),
     ('\tdata, mtime, err := readEntryFile(fd, path)\n','\tdata, mtime, err := readEntryFile(fd, path)\n\thittrace.Mark("d.read")\n'),
     ('\trec, bin, err := parseEntry(data)\n','\trec, bin, err := parseEntry(data)\n\thittrace.Mark("d.parse")\n'),
     ('\tif !rec.embedded {\n','\thittrace.Mark("d.cmp")\n\tif !rec.embedded {\n'),
     ('\tif mtime.IsZero() {\n\t\tif mtime, err = entryMtime','\thittrace.Mark("d.crc")\n\tif mtime.IsZero() {\n\t\tif mtime, err = entryMtime'),
     ('\ts.touch(h.path, h.mtime)\n','\thittrace.Mark("d.close")\n\ts.touch(h.path, h.mtime)\n\thittrace.Mark("d.touch")\n'),
    ])
    edit('cache.go',[('\t\te, err := getFrom(ctx, t.Store, p)\n','\t\te, err := getFrom(ctx, t.Store, p)\n\t\thittrace.Mark("c.got")\n')])
    edit('deps/scanner.go',[('\t\t\tif r.holds(ctx, s, in) {\n','\t\t\thittrace.Mark("s.preholds")\n\t\t\tif r.holds(ctx, s, in) {\n\t\t\t\thittrace.Mark("s.holds")\n')])
