# split.py profile [from_ms to_ms]... — self time per function inside time windows (ms from the profile's first sample)
import json,sys,collections
p=json.load(open(sys.argv[1])); nodes={n['id']:n for n in p['nodes']}
wins=[(float(a),float(b)) for a,b in zip(sys.argv[2::2],sys.argv[3::2])]
t=0; per=[collections.Counter() for _ in wins]
for s,d in zip(p['samples'],p['timeDeltas']):
    t+=d/1000
    for i,(a,b) in enumerate(wins):
        if a<=t<b:
            cf=nodes[s]['callFrame']; per[i][(cf['functionName'] or '(anon)')+' '+cf['url'].split('/')[-1]+':'+str(cf['lineNumber'])]+=d/1000
print('profile span ms', t)
for (a,b),c in zip(wins,per):
    tot=sum(c.values()); print(f'--- {a}-{b} ms: sampled {tot:.0f} ms')
    for k,v in c.most_common(18): print(f'{v/(b-a)*100:6.1f}% {k}')
