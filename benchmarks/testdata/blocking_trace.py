# How soon a goroutine woken by its sleep's timer gets a processor, from the
# traces TestBlockingTrace writes (one per pool).
#
#   BLOCKING_TRACE=/tmp/io BLOCKING_TASKS=20000 go test -run=TestBlockingTrace -v .
#   go tool trace -d=parsed /tmp/io-smartpool.trace > /tmp/io-smartpool.txt
#   go tool trace -d=parsed /tmp/io-pond.trace > /tmp/io-pond.txt
#   python3 testdata/blocking_trace.py /tmp/io-smartpool.txt /tmp/io-pond.txt
#
# A "wake" is a goroutine's Waiting->Runnable after it blocked with reason
# "sleep" (its timer fired); its delay runs to its next Runnable->Running.
# Printed per trace:
#   - wakes and goroutine starts (Runnable->Running) per wake, and the starts
#     by what the goroutine last did (blocked on what, or Gosched);
#   - the timer's lateness: block to wake, less 1 ms (the sleep);
#   - the delay, wake to start: p50/p90/p99/mean;
#   - per P: wakes made runnable there, and where they ran;
#   - how many goroutines were Runnable (the woken one excluded) and how many
#     Ps were Idle when the timer fired, and whether the firing P had just
#     left Idle (its M came out of netpoll or a futex sleep to fire it);
#   - where the delay went: summed over all wakes, the time of each P inside
#     the delay spent idle, running a woken goroutine (one that has not
#     blocked since its wake), running another goroutine, running with no
#     goroutine (the scheduler, firing timers); and the share of the delays
#     inside a GC mark phase;
#   - P time not Idle per wake; the active phases between stretches of at
#     least 200 us with every P Idle, and those stretches; P time per wake by
#     what ran;
#   - each woken goroutine's run until its next block: segments (starts),
#     CPU time, and the reason of the block that ends it.
import re, sys, bisect, collections

hdr = re.compile(r'^M=(-?\d+) P=(-?\d+) G=(-?\d+) (\w+) Time=(\d+)(.*)$')
st = re.compile(r'(GoID|ProcID)=(\d+) (\w+)->(\w+) Reason="([^"]*)"')


def pct(xs, q):
    return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else 0


def analyse(fn):
    ev = []
    for line in open(fn):
        m = hdr.match(line)
        if m:
            M, P, G, k, t, rest = m.groups()
            ev.append((int(t), k, int(P), int(G), rest))
    ev.sort(key=lambda e: e[0])
    t_end = ev[-1][0]
    gstate = {}            # G -> state
    lastblock = {}         # G -> (time, reason) of its last Running->Waiting
    lastwhy = {}           # G -> reason of its last leaving Running
    woken = {}             # G -> wake record, while Runnable after a sleep
    inwoken = set()        # Gs running since a wake, not yet blocked again
    pstate = {}            # P -> 'Idle' / 'Running' / ...
    pidle_since = {}       # P -> time it last went Idle
    nog_since_idle = {}    # P -> Idle time before, while it has run no G since
    onp = {}               # P -> G running there
    seg = collections.defaultdict(list)   # P -> [(t0, t1, cat)]
    pcur = {}              # P -> (t0, cat)
    gc = []; gcopen = {}
    wakes = []
    starts = 0
    startwhy = collections.Counter()   # goroutine starts by what the goroutine last did
    run = {}               # G -> [segments, cpu ns, t0 of current segment]
    runs = []              # (segments, cpu, end reason) per woken run

    def pset(p, t, cat):
        if p < 0:
            return
        if p in pcur:
            t0, c = pcur[p]
            if t > t0:
                seg[p].append((t0, t, c))
        pcur[p] = (t, cat)

    def pcat(p):
        if pstate.get(p, 'Running') != 'Running':
            return 'idle'
        g = onp.get(p)
        if g is None:
            return 'no goroutine (scheduler)'
        if g in inwoken:
            return 'woken goroutine'
        return 'other goroutine, after %s' % (lastwhy.get(g) or 'no block seen')

    for t, k, P, G, rest in ev:
        if k in ('RangeBegin', 'RangeActive', 'RangeEnd'):
            nm = re.search(r'Name="([^"]*)"', rest).group(1)
            if nm == 'GC concurrent mark phase':
                if k != 'RangeEnd':
                    gcopen[nm] = t
                else:
                    gc.append((gcopen.pop(nm, ev[0][0]), t))
            continue
        if k != 'StateTransition':
            continue
        m = st.search(rest)
        if not m:
            continue
        kind, idn, fr, to, reason = m.groups()
        idn = int(idn)
        if kind == 'ProcID':
            if fr == 'Idle' and to == 'Running' and idn in pidle_since:
                nog_since_idle[idn] = t - pidle_since[idn]   # how long it was Idle
            else:
                nog_since_idle.pop(idn, None)
            pstate[idn] = to
            if to == 'Idle':
                pidle_since[idn] = t
                onp.pop(idn, None)
            pset(idn, t, pcat(idn))
            continue
        g = idn
        gstate[g] = to
        if to == 'Waiting':
            lastblock[g] = (t, reason)
        if fr == 'Waiting' and to == 'Runnable' and lastblock.get(g, (0, ''))[1] == 'sleep':
            idle = sum(1 for p, s in pstate.items() if s == 'Idle')
            runnable = sum(1 for x, s in gstate.items() if s == 'Runnable' and x != g)
            fresh = P >= 0 and P in nog_since_idle
            lead = fresh and nog_since_idle[P] is not None
            idlefor = nog_since_idle[P] if lead else None
            if lead:
                nog_since_idle[P] = None   # later wakes of this burst are not leaders
            woken[g] = dict(t=t, P=P, by=G, idle=idle, runnable=runnable, late=t - lastblock[g][0] - 1_000_000,
                            fresh=fresh, lead=lead, idlefor=idlefor, gc=any(a <= t <= b for a, b in gc) or bool(gcopen))
        if fr == 'Runnable' and to == 'Running':
            starts += 1
            startwhy['woken by its timer' if g in woken else (lastwhy.get(g) or 'no block seen')] += 1
            if g in woken:
                w = woken.pop(g)
                w['start'] = t; w['Prun'] = P
                wakes.append(w)
                inwoken.add(g)
                run[g] = [0, 0, None]
            if g in run:
                run[g][0] += 1; run[g][2] = t
        if fr == 'Running':
            lastwhy[g] = ('%s %s' % (to, reason)).strip()
            if g in run and run[g][2] is not None:
                run[g][1] += t - run[g][2]; run[g][2] = None
            if to == 'Waiting' and g in run:
                runs.append((run[g][0], run[g][1], reason))
                del run[g]
                inwoken.discard(g)
            for p, x in list(onp.items()):
                if x == g:
                    del onp[p]
                    pset(p, t, pcat(p))
        if to == 'Running' and P >= 0:
            nog_since_idle.pop(P, None)
            onp[P] = g
            pset(P, t, pcat(P))
    for p in list(pcur):
        pset(p, t_end, 'end')
    for a in gcopen.values():
        gc.append((a, t_end))
    return dict(wakes=wakes, starts=starts, startwhy=startwhy, seg=seg, gc=gc, runs=runs, span=t_end - ev[0][0])


def report(fn):
    r = analyse(fn)
    W = r['wakes']; n = len(W)
    print('== %s: %d wakes, %d goroutine starts (%.2f per wake), trace span %.1f ms' %
          (fn.split('/')[-1], n, r['starts'], r['starts'] / max(n, 1), r['span'] / 1e6))
    print('  goroutine starts per wake, by what the goroutine last did: %s' %
          ', '.join('%s %.2f' % (k, v / n) for k, v in r['startwhy'].most_common(6)))
    d = sorted(w['start'] - w['t'] for w in W)
    late = sorted(w['late'] for w in W)
    print('  timer late (block to wake, less 1 ms): p50 %.1f p90 %.1f p99 %.1f mean %.1f us' %
          (pct(late, .5) / 1e3, pct(late, .9) / 1e3, pct(late, .99) / 1e3, sum(late) / n / 1e3))
    print('  wake to start: p50 %.1f p90 %.1f p99 %.1f max %.1f mean %.1f us' %
          (pct(d, .5) / 1e3, pct(d, .9) / 1e3, pct(d, .99) / 1e3, d[-1] / 1e3, sum(d) / n / 1e3))
    byp = collections.Counter((w['P'], w['Prun']) for w in W)
    for p in sorted({w['P'] for w in W}):
        made = sum(c for (a, b), c in byp.items() if a == p)
        where = ', '.join('P%d %d' % (b, c) for (a, b), c in sorted(byp.items()) if a == p)
        by = collections.Counter('no G' if w['by'] < 0 else 'a G' for w in W if w['P'] == p)
        print('  made runnable on P%d: %d (by %s); ran on %s' % (p, made, dict(by), where))
    rq = sorted(w['runnable'] for w in W)
    print('  other goroutines Runnable at the wake: p50 %d p90 %d p99 %d mean %.1f' %
          (pct(rq, .5), pct(rq, .9), pct(rq, .99), sum(rq) / n))
    # delay by queue position: how much of it is the wakes ahead
    for lo, hi in ((0, 0), (1, 3), (4, 15), (16, 63), (64, 10**9)):
        xs = sorted(w['start'] - w['t'] for w in W if lo <= w['runnable'] <= hi)
        if xs:
            print('    %3d-%-5s Runnable: %5d wakes, delay p50 %.1f p90 %.1f us' %
                  (lo, hi if hi < 10**9 else '', len(xs), pct(xs, .5) / 1e3, pct(xs, .9) / 1e3))
    for fr in (True, False):
        xs = sorted(w['late'] for w in W if w['fresh'] == fr)
        if xs:
            print('  timer late, fired by a P %s: %d wakes, p50 %.1f p90 %.1f us' %
                  ('just out of Idle' if fr else 'already running', len(xs), pct(xs, .5) / 1e3, pct(xs, .9) / 1e3))
    L = [w for w in W if w['lead']]
    if L:
        a = sorted(w['idlefor'] for w in L); b = sorted(w['late'] for w in L)
        both = sum(1 for w in L if w['idle'] >= 1)
        print('  first wake of a burst fired by a P out of Idle: %d (the other P idle too: %d); '
              'P idle before p50 %.0f p90 %.0f us; that timer late p50 %.1f p90 %.1f us' %
              (len(L), both, pct(a, .5) / 1e3, pct(a, .9) / 1e3, pct(b, .5) / 1e3, pct(b, .9) / 1e3))
    ic = collections.Counter(w['idle'] for w in W)
    print('  Ps Idle at the wake: %s; firing P just out of Idle: %d; in a GC mark phase: %d' %
          (dict(sorted(ic.items())), sum(w['fresh'] for w in W), sum(w['gc'] for w in W)))
    cats = collections.Counter(); tot = 0
    for p, sg in r['seg'].items():
        starts = [s[0] for s in sg]
        for w in W:
            a, b = w['t'], w['start']
            i = max(0, bisect.bisect_right(starts, a) - 1)
            while i < len(sg) and sg[i][0] < b:
                x, y, c = sg[i]
                o = min(y, b) - max(x, a)
                if o > 0:
                    cats[c] += o
                i += 1
    gcin = 0
    for w in W:
        a, b = w['t'], w['start']
        tot += b - a
        for x, y in r['gc']:
            o = min(y, b) - max(x, a)
            if o > 0:
                gcin += o
    np_ = len(r['seg'])
    print('  in the delays (%.1f ms summed, x %d Ps):' % (tot / 1e6, np_))
    for c, v in sorted(cats.items(), key=lambda x: -x[1]):
        print('    %-32s %5.1f%%  (%.1f us per wake)' % (c, 100 * v / (tot * np_), v / n / 1e3))
    print('    (%.1f%% of the delays fell in a GC mark phase)' % (100 * gcin / tot))
    # busy periods (some P not Idle) and all-idle periods (every P Idle)
    edges = []
    for p, sg in r['seg'].items():
        for x, y, c in sg:
            if c != 'idle':
                edges.append((x, 1)); edges.append((y, -1))
    edges.sort(key=lambda e: (e[0], -e[1]))  # a P busy again at once: no gap
    cpu = sum(y - x for sg in r['seg'].values() for x, y, c in sg if c != 'idle')
    # active phases: from the end of one stretch of >= 200 us with every P
    # Idle (an M asleep in netpoll or a futex) to the start of the next
    act, lg = [], []
    on, last_off, start = 0, None, None
    for t, dlt in edges:
        if on == 0 and dlt > 0:
            if last_off is None or t - last_off >= 200_000:
                if start is not None and last_off is not None:
                    act.append(last_off - start)
                if last_off is not None:
                    lg.append(t - last_off)
                start = t
        on += dlt
        if on == 0 and dlt < 0:
            last_off = t
    act.sort(); lg.sort()
    print('  P time not Idle: %.1f us per wake; %d active phases between stretches of >= 200 us with every P Idle: '
          'active p50 %.1f p90 %.1f mean %.1f us, every P Idle p50 %.1f p90 %.1f mean %.1f us' %
          (cpu / n / 1e3, len(act), pct(act, .5) / 1e3, pct(act, .9) / 1e3, sum(act) / max(len(act), 1) / 1e3,
           pct(lg, .5) / 1e3, pct(lg, .9) / 1e3, sum(lg) / max(len(lg), 1) / 1e3))
    allc = collections.Counter()
    for sg in r['seg'].values():
        for x, y, c in sg:
            if c not in ('idle', 'end'):
                allc[c] += y - x
    print('  P time not Idle over the whole trace, per wake:')
    for c, v in allc.most_common(7):
        print('    %-48s %5.2f us' % (c, v / n / 1e3))
    R = r['runs']
    if R:
        segs = collections.Counter(x[0] for x in R)
        print('  woken run to next block: %d runs, segments %s, CPU mean %.1f us, blocks on %s' %
              (len(R), dict(sorted(segs.items())[:6]), sum(x[1] for x in R) / len(R) / 1e3,
               dict(collections.Counter(x[2] for x in R).most_common(4))))


for fn in sys.argv[1:]:
    report(fn)
