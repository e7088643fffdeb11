# incl2.py profile from_ms to_ms ncalls [filter] — inclusive µs per call per function (stack walk)
import json,sys,collections
p=json.load(open(sys.argv[1])); nodes={n['id']:n for n in p['nodes']}
parent={}
for n in p['nodes']:
    for c in n.get('children',[]): parent[c]=n['id']
a,b,n=float(sys.argv[2]),float(sys.argv[3]),float(sys.argv[4])
t=0; inc=collections.Counter(); self_=collections.Counter()
def key(cf): return (cf['functionName'] or '(anon)')+' '+cf['url'].split('/')[-1]+':'+str(cf['lineNumber'])
for s,d in zip(p['samples'],p['timeDeltas']):
    t+=d/1000
    if not (a<=t<b): continue
    seen=set(); x=s
    self_[key(nodes[s]['callFrame'])]+=d
    while x is not None:
        k=key(nodes[x]['callFrame'])
        if k not in seen: inc[k]+=d; seen.add(k)
        x=parent.get(x)
for k,v in inc.most_common(int(sys.argv[5]) if len(sys.argv)>5 else 60): print(f'{v/n:8.0f} incl {self_[k]/n:6.0f} self µs/call {k}')
