# Attributes the slow urgent tasks of TestPriorityTrace's traces to causes.
#
#   PRIORITY_TRACE=/tmp/p.trace go test -run=TestPriorityTrace -v .
#   go tool trace -d=parsed /tmp/p.trace > /tmp/p.txt
#   python3 testdata/priority_trace.py /tmp/p.txt [more.txt ...]   (VERB=1: detail)
#
# For every urgent task slower than 15 us (its "submit" log to its "start"
# log) it lists what held it up: a worker Runnable (off its P) after
# runtime.Gosched or after a preemption, a worker Waiting on a sync.Mutex (the
# FIFO's lock), a backlog task of that worker stretched past 10 us ("overrun":
# with no Go-level event, its thread lost the CPU), the submitting goroutine
# holding a P for most of the wait, a GC cycle, a submit that came < 100 us
# after the previous one (a catch-up burst after a late timer).
# aggregate cause counts over several parsed traces
import re,sys,collections
hdr=re.compile(r'^M=(-?\d+) P=(-?\d+) G=(-?\d+) (\w+) Time=(\d+)(.*)$')
tot=collections.Counter(); allslow=0; allurg=0; extra=collections.Counter()
thr=15000
import os
VERB=os.environ.get('VERB')
for fn in sys.argv[1:]:
    ev=[]
    for line in open(fn):
        m=hdr.match(line)
        if m:
            M,P,G,k,t,rest=m.groups(); ev.append((int(t),k,int(P),int(G),rest))
    ev.sort(key=lambda e:e[0])
    sub={};start={};runner={};left={};subG=None
    over=collections.defaultdict(list); gs=collections.defaultdict(list); gc=[]; openr={}
    cur_left=None
    for t,k,P,G,rest in ev:
        if k=='Log':
            c=re.search(r'Category="(\w+)" Message="(\d+)"',rest); cat,msg=c.group(1),int(c.group(2))
            if cat=='left': cur_left=msg
            elif cat=='submit': sub[msg]=t; subG=G; left[msg]=cur_left
            elif cat=='start': start[msg]=t; runner[msg]=G
            elif cat=='overrun': over[G].append((t-msg,t))
        elif k=='StateTransition' and 'GoID=' in rest:
            g=int(re.search(r'GoID=(\d+)',rest).group(1)); fr,to=re.search(r'(\w+)->(\w+)',rest).groups()
            rs=re.search(r'Reason="([^"]*)"',rest).group(1); gs[g].append((t,fr,to,rs,P))
        elif k in('RangeBegin','RangeEnd','RangeActive'):
            nm=re.search(r'Name="([^"]*)"',rest).group(1)
            if 'GC' not in nm or 'sweep' in nm: continue
            if k!='RangeEnd': openr[nm]=t
            else: gc.append((openr.pop(nm,ev[0][0]),t))
    for nm,t0 in openr.items(): gc.append((t0,ev[-1][0]))
    workers=sorted(set(runner.values()))
    def intervals(g,a,b):
        # list of (state, reason, t0, t1) clipped to [a,b]
        out=[]; st=('Running','',a)
        for e in gs[g]:
            if e[0]<=a: st=(e[2],e[3],a); continue
            if e[0]>b: break
            out.append((st[0],st[1],st[2],e[0])); st=(e[2],e[3],e[0])
        out.append((st[0],st[1],st[2],b)); return out
    lat=[(start[i]-sub[i],i) for i in sub if i in start]
    allurg+=len(lat)
    burst=sum(1 for i in sub if i>0 and i-1 in sub and sub[i]-sub[i-1]<100000)
    gaps=sorted(sub[i]-sub[i-1] for i in sub if i>0 and i-1 in sub)
    ls=sorted(l for l,i in lat)
    print('%s: urgent p50 %.1f p99 %.1f max %.1f us; %d submitted <100us after the previous (timer late, catch-up); gap p50 %.0f us'%(fn.split('/')[-1],ls[len(ls)//2]/1000,ls[int(len(ls)*.99)]/1000,ls[-1]/1000,burst,gaps[len(gaps)//2]/1000))
    for l,i in lat:
        if l<=thr: continue
        allslow+=1
        a,b=sub[i],start[i]
        flags=set()
        if left.get(i) is not None and left[i]<=0: flags.add('backlog already drained')
        if any(x<b and y>a for x,y in gc): flags.add('GC cycle running')
        if i>0 and i-1 in sub and sub[i]-sub[i-1]<100000: flags.add('submitted in a catch-up burst (<100us after the previous)')
        for g in workers:
            iv=intervals(g,a,b)
            if any(s=='Waiting' and r=='sync' for s,r,_,_ in iv): flags.add('a worker blocked on the FIFO mutex')
            elif any(s=='Runnable' and r=='preempted' for s,r,_,_ in iv): flags.add('a worker preempted (Go)')
            elif any(s=='Runnable' for s,r,_,_ in iv): flags.add('a worker off its P after runtime.Gosched')
            if any(x<b and y>a for x,y in over[g]): flags.add('a worker\'s 5us task stretched >10us (thread lost the CPU)')
        siv=intervals(subG,a,b)
        if sum(t1-t0 for s,r,t0,t1 in siv if s=='Running')>0.5*(b-a): flags.add('submitter held a P for >half the wait')
        tot[' + '.join(sorted(flags))]+=1
        if VERB and not any('stretched' in f or 'mutex' in f or 'GC' in f for f in flags):
            print(fn.split('/')[-1], i, '%.1fus'%(l/1000), 'runner G%d'%runner[i], sorted(flags))
            for g in workers+[subG]:
                print('    G%d'%g, ['%s%s %.1f-%.1f'%(s,'('+r+')' if r else '',(t0-a)/1000,(t1-a)/1000) for s,r,t0,t1 in intervals(g,a,b)])
        for f in flags: extra[f]+=1
print('traces %d, urgent tasks %d, slower than 15us: %d'%(len(sys.argv)-1,allurg,allslow))
print('per factor (a slow task can have several):')
for k,v in extra.most_common(): print('  %5d  %s'%(v,k))
print('combinations:')
for k,v in tot.most_common(): print('  %5d  %s'%(v,k))
