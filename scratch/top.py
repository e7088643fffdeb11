import json,sys,collections
for f in sys.argv[1:]:
    p=json.load(open(f)); nodes={n['id']:n for n in p['nodes']}
    dt=collections.Counter()
    for s,d in zip(p['samples'],p['timeDeltas']): dt[s]+=d
    self_t=collections.Counter()
    for i,t in dt.items():
        cf=nodes[i]['callFrame']; self_t[(cf['functionName'] or '(anon)')+' '+cf['url'].split('/')[-1]+':'+str(cf['lineNumber'])]+=t
    tot=sum(dt.values())
    print(f, 'total ms', tot/1000)
    for k,v in self_t.most_common(22): print(f'{v/1000:9.1f} {k}')
