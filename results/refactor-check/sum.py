import os,json,glob,statistics,collections,sys
d=collections.defaultdict(list)
for f in glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'ab', '*.json')):
    case='.'.join(f.split('/')[-1].split('.')[:3])
    for r in json.load(open(f))['results']:
        who='before' if r['command'].startswith('/work/before') else 'after'
        d[(case,who)]+=r['times']
for case in sorted({c for c,_ in d}):
    b=statistics.median(d[(case,'before')]); a=statistics.median(d[(case,'after')])
    print(f"{case:40s} before {b*1000:8.1f} ms  after {a*1000:8.1f} ms  after/before {a/b:.3f}  (n={len(d[(case,'before')])}+{len(d[(case,'after')])})")
