# cat.py profile from_ms to_ms ncalls — self time per category and per file in a window, in µs per call
import json,sys,collections
p=json.load(open(sys.argv[1])); nodes={n['id']:n for n in p['nodes']}
a,b,n=float(sys.argv[2]),float(sys.argv[3]),float(sys.argv[4])
t=0; cat=collections.Counter(); fn=collections.Counter()
for s,d in zip(p['samples'],p['timeDeltas']):
    t+=d/1000
    if not (a<=t<b): continue
    cf=nodes[s]['callFrame']; url=cf['url']; name=cf['functionName']
    if name.startswith('('): k=name
    elif url=='' : k='native:'+name
    elif 'wasm' in url or name.startswith('wasm-function'): k='wasm'
    elif url.startswith('node:'): k='node:'+url[5:]
    else: k=url.split('/')[-1]
    cat[k]+=d; fn[name+' '+url.split('/')[-1]+':'+str(cf['lineNumber'])]+=d
for k,v in cat.most_common(30): print(f'{v/n:8.0f} µs/call {k}')
print('--- functions')
for k,v in fn.most_common(30): print(f'{v/n:8.0f} µs/call {k}')
