import json,sys,collections
# usage: incl.py profile [calls] [filter substrings...]
p=json.load(open(sys.argv[1])); calls=float(sys.argv[2]); flt=sys.argv[3:]
nodes={n['id']:n for n in p['nodes']}
parent={}
for n in p['nodes']:
    for c in n.get('children',[]): parent[c]=n['id']
selft=collections.Counter()
for s,d in zip(p['samples'],p['timeDeltas']): selft[s]+=d
def name(i):
    cf=nodes[i]['callFrame']; return (cf['functionName'] or '(anon)')+' '+cf['url'].split('/')[-1]+':'+str(cf['lineNumber'])
incl=collections.Counter()
for i,t in selft.items():
    seen=set(); j=i
    while j is not None:
        k=name(j)
        if k not in seen: incl[k]+=t; seen.add(k)
        j=parent.get(j)
for k,v in incl.most_common(400):
    if not flt or any(f in k for f in flt): print(f'{v/1000/calls*1000:8.1f} µs/call  {k}')
