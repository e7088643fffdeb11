import json,sys,collections
# usage: sub.py profile calls funcsubstring : self-time of nodes under any node matching
p=json.load(open(sys.argv[1])); calls=float(sys.argv[2]); pat=sys.argv[3]
nodes={n['id']:n for n in p['nodes']}; parent={}
for n in p['nodes']:
    for c in n.get('children',[]): parent[c]=n['id']
def name(i):
    cf=nodes[i]['callFrame']; return (cf['functionName'] or '(anon)')+' '+cf['url'].split('/')[-1]+':'+str(cf['lineNumber'])
selft=collections.Counter()
for s,d in zip(p['samples'],p['timeDeltas']): selft[s]+=d
out=collections.Counter()
for i,t in selft.items():
    j=i
    while j is not None and pat not in name(j): j=parent.get(j)
    if j is not None: out[name(i)]+=t
for k,v in out.most_common(15): print(f'{v/calls:8.1f} µs/call  {k}')
