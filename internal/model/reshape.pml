/*
 * reshape.pml: channels removed and room reused at run time (reshape.go on
 * its branch, with its changes to worker.go, yield.go, park.go, engine.go
 * and channel.go), checked with spin.
 *
 * One room R (one queue of the level's spare room), at first owned by
 * channel A; RemoveChannel removes A while workers poll it, and AddChannel
 * reuses R for channel B once it is free and its grace passed.
 *
 *   Worker(me)    engine.loop: worker.turn (w.gen := rs.gen), the search
 *                 (R's bit, then R's queueRef), pollLevel's held.Add(1)
 *                 before the poll, the poll (a one-lock queue: pop, and
 *                 Bits.Clear when it empties: the attached check, then the
 *                 bit), held.Add(-1) if it got nothing; worker.quiet once
 *                 it got a task (w.gen := QUIET, above every gen); the drop rule
 *                 (removal == Drop, or stopped and A drops on close), the
 *                 outcome (OnEnd), untrack (held.Add(-1), last); park:
 *                 idle = parked, push, re-check of the bit and closing;
 *                 with CLOSE=1 it exits (active = false) when closing and it
 *                 found nothing
 *   Submitter     Submit to A: under A's lock, Bits.Closed (stopped, or
 *                 the attachment not live), the push, Bits.Set (the
 *                 attached check, then the bit); then Bits.Wake
 *   Remover(pol)  Pool.RemoveChannel(A, pol): under rs.mu the slot turns
 *                 removing, removal and the attachment state; A's
 *                 Close(pol == Drop) and dropTasks (if this call started or
 *                 raised the removal); the wait: Len 0, then held 0 (or the
 *                 removal done); detach under rs.mu: final stats (the
 *                 ghost check below), the attachment detached, clearRoom,
 *                 gen++, the room and slot freed in quarantine under gen
 *   Adder         Pool.AddChannel(B): under rs.mu, stopped, settled(), and
 *                 if R is free and its quarantine passed, fillSlot (R's
 *                 queueRef now B's)
 *   Sider         (SIDE=1) a task of A that a channel's submit accepts under
 *                 A's lock (Bits.Closed) and ends outside it: CallerRuns
 *                 (Bits.RunInTask, RunHere) or a displaced oldest task
 *                 (Bits.Discard), held from Bits.Hold under the lock to
 *                 Bits.Unhold after its end (hold.go); (SIDE=2) a task the
 *                 pool runs inline for a by-key or group submit (help.go),
 *                 or a by-key submit waiting for room in a full Bounded:
 *                 holdUnlessRemoving (held.Add(1), then the load of removal: refused
 *                 if a removal started), the run, untrack
 *   Closer        (CLOSE=1) engine.startClose: stopped, present() under
 *                 rs.mu, A's Close(!coc) if present (nothing if A's
 *                 attachment is detached: Closing is false), closing,
 *                 wakeAll, dropTasks, exit (its share of live)
 *
 * live (CLOSE=1) is engine.live: a share per worker, one for the Closer,
 * one for a Sider that runs inline in a pool task's place (SIDE=2: its
 * host's worker) or that Bits.Hold takes (SIDE=1), and one a Remover takes under rs.mu as it starts (or
 * raises) a removal, given back once its dropTasks ended. The exit that
 * takes live to zero builds Close's report: at that instant every task A
 * accepted has ended (the report is final).
 *
 * settled() is reshape.go's: select on done (every worker exited: gen),
 * then least = gen, and for each worker, active (a load), idle (a load):
 * a worker in service and claimed counts with its gen. The hand-off
 * (handOver, handing), run buffers (fill's held.Add(n-1)), yields
 * (resumptions held from their first take) and caps are not modelled.
 *
 * Ghosts: ref[w] is the incarnation of R (A or B) whose bit worker w read
 * and whose queueRef and chanInfo it may still use in this turn, from the
 * bit's load to its untrack (or to the end of a poll that got nothing);
 * done is rm.done.
 *
 * Checked:
 *   - no room reused while a worker may use it: at fillSlot no worker's ref
 *     is A;
 *   - the removal's final stats are final: at detach every task A accepted
 *     has ended (ran + drp == acc), and under Drain with no Close every one
 *     ran; no task ends twice (ran + drp <= acc at each end);
 *   - at the end (Observer at quiescence, CLOSE=0; init once every process
 *     ended, CLOSE=1): every accepted task ran or was dropped exactly once
 *     (a COC channel's, with Close, ran), the removal is done, held is 0,
 *     no worker holds a reference; no invalid end state (a Remover waiting
 *     for ever, a worker parked beside queued work at Close).
 *
 * Protocol switch (1 = the fix, the default and the Go code; 0 = the code
 * before the fix, see README):
 *   CLOSEHELD  whoever calls a tracked channel's Close(true) (the pool's
 *              Close, a RemoveChannel that starts or raises a removal to
 *              Drop) counts one in held before it and takes it back after
 *              its dropTasks reported what Close returned: so the tasks
 *              Close took out of the queue are held until they are counted.
 *              With 0, a removal that waits sees Len 0 and held 0 while
 *              they are in the caller's hands, and detaches before they are
 *              counted.
 *   HOLD       (with SIDE) the Sider's task is held (Bits.Hold under the
 *              lock, or holdUnlessRemoving); with 0 it is not (and SIDE=2 checks
 *              only stopped), and a removal detaches while it runs.
 *   RMSHARE    (with CLOSE) a Remover holds a share of live around its
 *              Close(drop) and dropTasks, which end tasks on its goroutine;
 *              with 0 it holds none, and Close may report before its drops.
 *   HOLDSHARE  (with SIDE=1 and CLOSE) Bits.Hold also takes a share of live
 *              under the lock, and Unhold gives it back after the end; with
 *              0 Close may report before the Sider's task ended.
 *
 * Mutants (-DMUTANT=n); each must make verification fail:
 *   1  the removal detaches once Len is 0, without waiting for held
 *   2  AddChannel reuses free room without the grace (quarantine ignored)
 *   3  pollLevel counts the take in held after the poll (the task is
 *      nowhere between)
 *   4  the removal reads held before Len
 *   5  settled() takes the gen of idle workers and skips the claimed ones
 *      (the idle test inverted): a worker in a search is taken as past the
 *      grace
 *   6  (SIDE=2) holdUnlessRemoving loads removal before it adds to held
 *   7  (SIDE=1) the channel calls Bits.Hold after releasing its lock
 *   8  worker.quiet comes once the worker read R's bit, before the take is
 *      counted in held (and so before the poll)
 * The Go code before the held bracket was CLOSEHELD=0 (asis-closeheld: must fail);
 * before Bits.Hold and holdUnlessRemoving it was HOLD=0 (asis-side-*: must fail).
 */

#ifndef W
#define W 1
#endif
#ifndef NT
#define NT 2           /* tasks submitted to A */
#endif
#ifndef COCA
#define COCA 0         /* A completes on close */
#endif
#ifndef POL
#define POL 1          /* the Remover's policy: 1 Drain, 2 Drop */
#endif
#ifndef RM2
#define RM2 0          /* 1: a second RemoveChannel(A, Drop) runs concurrently */
#endif
#ifndef CLOSE
#define CLOSE 0        /* 1: the pool's Close runs */
#endif
#ifndef ADD
#define ADD 1          /* 1: the Adder runs */
#endif
#ifndef CLOSEHELD
#define CLOSEHELD 1
#endif
#ifndef SIDE
#define SIDE 0         /* 1: a channel's task ended outside its lock; 2: a pool's inline run (see Sider) */
#endif
#ifndef HOLD
#define HOLD 1
#endif
#ifndef RMSHARE
#define RMSHARE 1
#endif
#ifndef HOLDSHARE
#define HOLDSHARE 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif
#if SIDE > 0
#define NSIDE 1
#else
#define NSIDE 0
#endif

#define NONE 255
#define FREE 0
#define A 1
#define B 2
#define DRAIN 1
#define DROP 2
/* attachment states */
#define ALIVE 0
#define AREMOVING 2
#define ADETACHED 3
/* slot states */
#define SFREE 0
#define SLIVE 2
#define SREMOVING 3
/* worker.idle */
#define CLAIMED 0
#define PARKED 1
/* worker.gen while the worker reads no room (genQuiet) */
#define QUIET 255

chan tok[W] = [1] of { bool };

byte cnt;                       /* A's queue */
bool lk;                        /* A's lock */
bool rbit;                       /* R's rbit (and its level's summary) */
byte att = ALIVE;               /* A's attachment */
byte removal;                   /* chanInfo.removal of A's slot */
short held;                     /* chanInfo.held of A's slot */
byte rmpol;                     /* removal.policy */
bool done;                      /* removal.done */
byte slotst = SLIVE;            /* A's slot */
byte qref = A;                  /* e.queues[R]: whose queueRef */
byte owner = A;                 /* rs.owner[R] */
byte quar;                      /* rs.quar[R] */
byte gen;                       /* rs.gen */
bool rsmu;                      /* rs.mu */
byte wgen[W];                   /* worker.gen */
bool inserv[W];                 /* worker.active */
byte ist[W];                    /* worker.idle */
byte stk[W];
byte sp;
bool stopped, closing;
byte exited;                    /* workers that exited (done once all did) */
byte live;                      /* engine.live (CLOSE=1): see above */
byte acc, ran, drp;             /* A's tasks: accepted, ran, dropped */
byte ref[W];                    /* ghost: see above */
byte running = 3 + RM2 + CLOSE + NSIDE; /* ghost: Submitter, Remover(s), Adder, Closer, Sider still running */

inline lock(m) { atomic { !m -> m = true } }

/* engine.exit: give a share of live back; the last one builds the report */
inline exitLive() {
	atomic {
		live--;
		if
		:: live == 0 -> assert(live == 0 && ran + drp == acc && cnt == 0)   /* Close's report is final */
		:: else -> skip
		fi
	}
}

/* one outcome of a task of A (OnEnd, counted in the slot's counters) */
inline ended(isran) {
	if
	:: isran -> ran++
	:: else -> drp++
	fi;
	assert(ran + drp <= acc)            /* no task ends twice */
}

/* pop one idle worker and wake it (rouse: claim, send) */
inline wakeOne(i) {
	atomic {
		if
		:: sp > 0 -> sp--; i = stk[sp]; stk[sp] = 0; ist[i] = CLAIMED; tok[i]!true
		:: else -> skip
		fi;
		i = 0
	}
}

/* Bits.Clear of A's queue: the attached check, then the rbit */
inline bclear() {
	if
	:: att != ADETACHED -> rbit = false
	:: else -> skip
	fi
}

/* engine.settled(s): done, then gen, then each worker's active, idle, gen */
inline settled(s, k, x) {
	if
	:: exited == W -> s = gen           /* <-e.done: every worker has exited */
	:: else ->
		s = gen;
		k = 0;
		do
		:: k < W ->
			if
#if MUTANT == 5
			:: inserv[k] -> if :: ist[k] != CLAIMED -> x = wgen[k]; if :: x < s -> s = x :: else -> skip fi :: else -> skip fi
#else
			:: inserv[k] -> if :: ist[k] == CLAIMED -> x = wgen[k]; if :: x < s -> s = x :: else -> skip fi :: else -> skip fi
#endif
			:: else -> skip
			fi;
			k++
		:: else -> break
		od;
		k = 0; x = 0
	fi
}

proctype Worker(byte me) {
	byte g, c, i;
	bool got, cl, isran;
loop:
	atomic { g = gen };                     /* turn: gen.Load */
	if
	:: wgen[me] != g -> wgen[me] = g        /* w.gen.Store */
	:: else -> skip
	fi;
	g = 0;
	cl = closing;
find:
	atomic {                                /* the summary / Next: R's rbit */
		if
		:: rbit -> ref[me] = qref
		:: else -> ref[me] = 0
		fi
	}
	if
	:: ref[me] == 0 -> goto none
	:: else -> skip
	fi;
	c = qref;                               /* q := &e.queues[R]: its channel */
	if
	:: c != A -> atomic { ref[me] = 0; c = 0 }; goto find   /* B's queue: empty here */
	:: else -> skip
	fi;
#if MUTANT == 8
	wgen[me] = QUIET;                       /* quiet before the take is counted */
#endif
#if MUTANT != 3
	held++;                                 /* held.Add(1) before the poll */
#endif
	atomic {                                /* the poll, under A's lock */
		!lk -> lk = true;
		if
		:: cnt > 0 -> cnt--; got = true
		:: else -> got = false
		fi
	};
	if
	:: got && cnt == 0 -> bclear()          /* emptied: Bits.Clear */
	:: else -> skip
	fi;
	lk = false;
#if MUTANT == 3
	if
	:: got -> held++                        /* counted only now */
	:: else -> skip
	fi;
#endif
	if
	:: !got ->
#if MUTANT != 3
		atomic { held--; ref[me] = 0 };
#else
		ref[me] = 0;
#endif
		c = 0;
		goto find
	:: else -> skip
	fi;
#if MUTANT != 8
	wgen[me] = QUIET;                       /* worker.quiet: the rest of the turn reads A's tables only, held */
#endif
	/* the drop rule: removal == Drop, or stopped and A drops on close */
	if
	:: removal == DROP -> isran = false
	:: else ->
		if
		:: stopped && !COCA -> isran = false
		:: else -> isran = true
		fi
	fi;
	atomic { ended(isran); isran = false }; /* run (or dropTasks), OnEnd */
	atomic { held--; ref[me] = 0 };         /* untrack, last */
	c = 0; got = false; cl = false;
	goto loop;
none:
#if CLOSE == 1
	if
	:: cl -> atomic { inserv[me] = false; exited++ }; exitLive(); goto quit   /* the loop returns */
	:: else -> skip
	fi;
#endif
	cl = false;
	atomic { ist[me] = PARKED; stk[sp] = me; sp++ };   /* goIdle(parked): Store, Push */
	if
	:: rbit -> wakeOne(i)                    /* the re-check: hasWork */
	:: else ->
		if
		:: closing -> wakeOne(i)
		:: else -> skip
		fi
	fi;
end_park:
	tok[me]?cl;
	cl = false;
	goto loop;
quit:
	skip
}

proctype Submitter() {
	byte n, i;
	bool ok;
	do
	:: n < NT ->
		atomic {                            /* the push, under A's lock: Bits.Closed */
			!lk -> lk = true;
			if
			:: !stopped && att == ALIVE -> cnt++; acc++; ok = true
			:: else -> ok = false
			fi
		};
		if
		:: ok && cnt == 1 ->                /* Bits.Set: attached, then the rbit */
			if
			:: att != ADETACHED -> rbit = true
			:: else -> skip
			fi
		:: else -> skip
		fi;
		lk = false;
		if
		:: ok -> wakeOne(i)                 /* Bits.Wake */
		:: else -> skip
		fi;
		ok = false;
		n++
	:: else -> break
	od;
	running--
}

#if SIDE > 0
proctype Sider() {
	bool ok, shared;
#if SIDE == 1
	atomic {                                /* the submit, under A's lock: Bits.Closed */
		!lk -> lk = true;
		if
		:: !stopped && att == ALIVE -> acc++; ok = true
		:: else -> ok = false
		fi
	};
#if HOLD == 1 && MUTANT != 7
	if
	:: ok -> held++                         /* Bits.Hold, the lock held */
	:: else -> skip
	fi;
#endif
#if CLOSE == 1 && HOLDSHARE == 1
	atomic {                                /* Bits.Hold's engine.share, the lock held */
		if
		:: ok && live > 0 -> live++; shared = true
		:: else -> skip
		fi
	};
#endif
	lk = false;
#if HOLD == 1 && MUTANT == 7
	if
	:: ok -> held++                         /* Hold after the unlock */
	:: else -> skip
	fi;
#endif
#else /* SIDE == 2: holdUnlessRemoving */
#if HOLD == 1 && MUTANT != 6
	held++;
	atomic {
		if
		:: !stopped && removal == 0 -> acc++; ok = true
		:: else -> ok = false
		fi
	};
	if
	:: !ok -> held--                        /* refused: ErrClosed */
	:: else -> skip
	fi;
#elif HOLD == 1
	atomic {                                /* removal loaded first */
		if
		:: !stopped && removal == 0 -> acc++; ok = true
		:: else -> ok = false
		fi
	};
	if
	:: ok -> held++
	:: else -> skip
	fi;
#else
	atomic {                                /* no check but stopped */
		if
		:: !stopped -> acc++; ok = true
		:: else -> ok = false
		fi
	};
#endif
#endif
	if
	:: ok ->
		atomic { ended(true) };             /* the run (or Discard), OnEnd */
#if HOLD == 1
		held--;                             /* Unhold, untrack: last */
#else
		skip;
#endif
		if
		:: shared -> shared = false; exitLive()   /* Unhold's exit */
		:: else -> skip
		fi
	:: else -> skip
	fi;
#if SIDE == 2 && CLOSE == 1
	exitLive();                             /* the host task ends: its worker's share */
#endif
	running--
}
#endif

/* A's Close(drop) and the caller's dropTasks: dn is what Close returned */
inline closeA(drop, dn) {
#if CLOSEHELD == 1
	held++;                                 /* (the fix) the Close's drops are held */
#endif
	atomic {
		!lk -> lk = true;
		if
		:: drop && att != ADETACHED ->      /* Closing: the removal, or the pool's Close */
			dn = cnt; cnt = 0
		:: else -> dn = 0
		fi
	};
	if
	:: dn > 0 -> bclear()
	:: else -> skip
	fi;
	lk = false
}

inline dropTasks(dn) {
	do
	:: dn > 0 -> atomic { ended(false); dn-- }
	:: else -> break
	od;
#if CLOSEHELD == 1
	held--
#else
	skip
#endif
}

proctype Remover(byte want) {
	bool start, ok, shared;
	byte dn, g;
	lock(rsmu);
	if
	:: slotst == SLIVE ->
		if
		:: stopped -> rsmu = false; goto out   /* ErrClosed */
		:: else -> slotst = SREMOVING
		fi
	:: slotst == SREMOVING -> skip
	:: else -> rsmu = false; goto out       /* ErrUnknownKey: removed already */
	fi;
	start = (rmpol < want);
	if
	:: start -> rmpol = want; removal = want; att = AREMOVING;
#if CLOSE == 1 && RMSHARE == 1
		atomic {                            /* engine.share, under rs.mu */
			if
			:: live > 0 -> live++; shared = true
			:: else -> skip
			fi
		}
#else
		skip
#endif
	:: else -> skip
	fi;
	rsmu = false;
	if
	:: start ->
		closeA(want == DROP, dn);
		dropTasks(dn);
		if
		:: shared -> shared = false; exitLive()
		:: else -> skip
		fi
	:: else -> skip
	fi;
wait:                                       /* waitUntil: done || Len 0 && held 0 */
#if MUTANT == 4
	if
	:: done -> goto detach
	:: held == 0 -> skip
	fi;
	if
	:: cnt == 0 -> goto detach
	:: else -> skip
	fi;
#else
	if
	:: done -> goto detach
	:: cnt == 0 -> skip
	fi;
#if MUTANT == 1
	goto detach;
#else
	if
	:: held == 0 -> goto detach
	:: else -> skip
	fi;
#endif
#endif
	(done || cnt != 0 || held == 0);        /* the next poll reads something new */
	goto wait;
detach:
	lock(rsmu);
	if
	:: done -> rsmu = false; goto out       /* detached by a concurrent call */
	:: else -> skip
	fi;
	assert(ran + drp == acc && cnt == 0);   /* final stats: every task of A ended */
#if CLOSE == 0 && RM2 == 0
	assert(POL != DRAIN || drp == 0);       /* Drain: every one ran */
#endif
	att = ADETACHED;
	if                                      /* clearRoom: Has, then Clear */
	:: rbit -> rbit = false
	:: else -> skip
	fi;
	gen++;
	atomic {                                /* release under the new grace */
		g = gen; owner = FREE; quar = g; slotst = SFREE
	};
	done = true;
	rsmu = false;
out:
	running--
}

proctype Adder() {
	byte s, k, x;
	lock(rsmu);
	if
	:: stopped -> rsmu = false; goto out    /* ErrClosed */
	:: else -> skip
	fi;
	settled(s, k, x);
	if
#if MUTANT == 2
	:: owner == FREE ->                     /* no grace */
#else
	:: owner == FREE && quar <= s ->        /* claimRoom */
#endif
		atomic {
			owner = B;
			k = 0;                          /* fillSlot: nobody uses A's room */
			do
			:: k < W -> assert(ref[k] != A); k++
			:: else -> break
			od;
			k = 0;
			qref = B
		}
	:: else -> skip                         /* errLevelFull */
	fi;
	rsmu = false;
out:
	s = 0;
	running--
}

#if CLOSE == 1
proctype Closer() {
	bool pres;
	byte dn, i;
	stopped = true;
	atomic { !rsmu -> pres = (slotst == SLIVE || slotst == SREMOVING) };   /* present() */
	if
	:: pres -> closeA(!COCA, dn)
	:: else -> skip
	fi;
	closing = true;
	do                                      /* wakeAll */
	:: atomic {
		if
		:: sp > 0 -> sp--; i = stk[sp]; stk[sp] = 0; ist[i] = CLAIMED; tok[i]!false
		:: else -> break
		fi
	   }
	od;
	i = 0;
	if
	:: pres -> dropTasks(dn)
	:: else -> skip
	fi;
	exitLive();                             /* the closer's share */
	running--
}
#else
proctype Observer() {
	byte k;
	timeout ->
	assert(running == 0);
	assert(ran + drp == acc && cnt == 0 && held == 0 && !lk);
	assert(done && slotst == SFREE && !rbit);
	assert(POL != DRAIN || RM2 == 1 || drp == 0);
	do
	:: k < W -> assert(ref[k] == 0 && len(tok[k]) == 0); k++
	:: else -> break
	od
}
#endif

init {
	byte k;
	atomic {
		live = W + 1 + (SIDE == 2);         /* the workers', the closer's, an inline run's host */
		do
		:: k < W -> inserv[k] = true; run Worker(k); k++
		:: else -> break
		od;
		run Submitter();
#if SIDE > 0
		run Sider();
#endif
		run Remover(POL);
#if RM2 == 1
		run Remover(DROP);
#endif
#if ADD == 1
		run Adder();
#else
		running--;
#endif
#if CLOSE == 1
		run Closer();
#else
		run Observer();
#endif
		k = 0
	}
#if CLOSE == 1
	(_nr_pr == 1);
	assert(ran + drp == acc && cnt == 0 && held == 0 && sp == 0);
	assert(!COCA || drp == 0 || rmpol == DROP);   /* COC: Close ran them, unless a removal dropped */
	k = 0;
	do
	:: k < W -> assert(ref[k] == 0); k++
	:: else -> break
	od
#endif
}
