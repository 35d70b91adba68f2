/*
 * close.pml: the suspend/wake/close protocol of smartpool (yield.go,
 * worker.go, park.go, engine.go), checked with spin. README.md in this
 * directory maps every step to the Go code.
 *
 *   Worker(me,wk) engine.loop for worker me, worker.park, worker.handTo
 *                 (worker.resume with ADOPT=0), worker.run; a new one is run whenever a goroutine starts
 *                 carrying worker me (wk: with the waking token)
 *   Task(t,left)  the goroutine a task keeps after its first Yield: wait,
 *                 taskContext.reenter (takeIdle, or the push), run
 *                 carrying the worker it took or was handed (on a host
 *                 with ADOPT=0), taskContext.end
 *   Submitter     engine.submit + Channel.Push (stopped checked under the
 *                 channel lock), then Bits.Wake -> engine.wake
 *   Closer        engine.startClose (and dropTasks)
 *   Canceller     (CANCEL) the end of task CT's WithContext context:
 *                 cancellable.cancelWith on the AfterFunc's goroutine
 *   init          starts everything, waits until every other process has
 *                 ended, then checks the ledger
 *
 * Channels: 0 completes on close (COC), 1 drops on close (DROP). Task t goes
 * to channel (t + FIRSTCH) % 2; tasks 0 and 1 Yield MAXY times, the others
 * never. The followup of 0 is 0 (a COC channel may not follow up into a
 * dropping one: followup.go); the followup of 1 is FOL1 (2: chosen at start,
 * both explored). The outside waker that ends a task's wait is the task's own
 * next step, which spin may schedule at any moment.
 *
 * The availability summary is "some queue is non-empty", read in one step;
 * a queue push or poll and its bit change are one step (they happen under
 * the channel's lock). park.pml checks the bit protocol itself.
 *
 * Checked: no assertion fails and no invalid end state (a process blocked
 * forever, e.g. a parked worker or a task waiting for a grant); at the end
 * every accepted COC task ran exactly once, every accepted DROP task ran or
 * was dropped exactly once, queues and idle stack are empty, waking is clear
 * and inflight is zero.
 *
 * Protocol switches (1 = the fix this model proposes, 0 = the Go code as of
 * this model's writing; see README "Bugs found"):
 *   WAKE      engine.wake re-checks after a failed Pop
 *   EXIT      a worker holding the waking token re-checks before it exits
 *   PARKWAKE  park's re-check wake-up carries the waking token when free
 *   CLOSEBEAR (LAZY) Close creates a worker when none exists and tasks are
 *             queued (engine.startClose: born == 0 && summary != 0 -> bear)
 *   LIVEEXIT  (LAZY) wake returns when live is 0 after a failed bear
 *   (both 0: lazy workers as before d197390, run.sh --asis)
 *
 * Mutants (-DMUTANT=n); each must make verification fail:
 *   1  suspend counts a COC task in inflight only after it has released its
 *      slot (the worker's new goroutine runs first)
 *   2  reenter decrements inflight (leaveInflight) before the push
 *   3  smartpool's original order: a COC task is counted only while it is
 *      suspended, the count is released when it re-enters, before the push
 *      (no count while queued or running, and no count (b))
 *   4  the worker loop reads inflight before closing
 *   5  park's re-check ignores (closing && inflight == 0)
 *   6  leaveInflight does not wake the workers when it takes inflight to 0
 *   7  a worker going idle without its parked process (an orphan, or one a
 *      task borrowed) skips park's re-check
 *   8  takeIdle adopts a worker whose process is parked, as if an orphan
 *   9  (IDLE) a timed-out goroutine stores orphaned (no CAS) and ends, even
 *      if its worker was popped (a wake-up on its way) or borrowed
 *  10  (IDLE) takeIdle loads the popped worker's state and then stores
 *      claimed (no swap): a time-out in between ends the goroutine of a
 *      worker the task thinks it borrowed
 *  11  (LAZY) bear takes its share of live without the CAS from non-zero:
 *      it counts from 0 too, after the pool has finished
 *  12  (HANDOFF, LAZY) the waker that bears a worker for the hand-off takes
 *      born before its poll but the worker's share of live only when it
 *      starts the goroutine: Close's exit can take live to 0 and build the
 *      report while the waker holds a COC task
 *  13  (BURST) a submit's tokenless hand-over that finds nothing to hand
 *      (Close emptied the queue, or another worker took the item) does not
 *      wake the worker it popped: Close's wakeAll cannot find it, and Close
 *      waits for it for ever
 *  14  (CANCEL) the Canceller takes no share of live: the last worker's exit
 *      builds the report (Close returns) while the cancelled task's OnEnd
 *      still runs
 *  15  (CALLBACK) an OnEnd that waits gives its worker away without taking
 *      a share of live: Close returns while it still runs
 *  16  (ADOPT, LAZY) the worker that hands itself to a resumption goes on
 *      with its loop too: two goroutines carry one worker
 *
 * ADOPT=1 (the default and the Go code): a worker that polls a resumption
 * hands itself to the task for good (worker.handTo) and its goroutine leaves
 * the loop as a spare: the task carries the worker on when it yields again
 * or ends, as one that adopted an orphan (label carried). ADOPT=0 is the
 * earlier protocol, kept in the Go code for a resumption run as a Task
 * (resumption.Run): the host waits in resume for release.
 *
 * CALLBACK=1 (needs LAZY=1): after a fresh task, the worker's OnEnd may wait
 * (a free choice): its goroutine takes a share of live, runs a new Worker
 * process for the worker (engine.carry), and ends once OnEnd returned,
 * giving the share back (carriers.go, "Waiting in a callback"). The report
 * asserts that no such OnEnd is still running.
 *
 * CANCEL=1 (needs LAZY=1): task CT (the last one) is submitted WithContext,
 * and its context may end at any moment (the Canceller). cst is the
 * cancellable's state; the push stores queued with the task (the submit's
 * pushed() is the Canceller running right after it). A claim from queued
 * is one CAS: the Canceller's to cancelling; a worker's, as it picks the
 * task, to started (a drop at pick and a run alike: discard and Run claim);
 * the Closer's, for a task Close(drop) removed. A loser waits while the
 * state is cancelling, then skips the task. The Canceller that won takes a
 * share of live (bear's CAS from non-zero), counts, stores cancelled, runs
 * OnEnd (ended) and gives its share back. The report asserts that every
 * cancelled task's OnEnd has returned. The waker's claim for a task it
 * hands over (park.go handOver) is not modelled: the worker claims.
 *
 * BURST (default: HANDOFF): a submit whose wake-up finds the token held
 * pops an idle worker anyway (or, LAZY, reserves one), polls for it as
 * above and rouses it without the token (engine.rouseIdle), or, by a free
 * choice (the Go code's bound: fewer workers awake than processors), does
 * nothing.
 *
 * HANDOFF=1 (default 0): the hand-off on wake. The Submitter's wake-up, once
 * it holds the token and has popped a worker (or, LAZY, reserved a new one),
 * polls for it if it reads stopped false (worker.find as one step), stores
 * the item in nxt[w], and only then rouses the worker with the token (the
 * claim, send or start, at that point). The worker, where it would search,
 * takes nxt[w] instead; with HANDDROP=0 (the protocol as proposed) it does
 * not apply the drop rule to a handed item, with HANDDROP=1 (the default) it
 * does, like any item it polled itself. Ghost: late says an item left a DROP
 * queue after stopped was set; such an item must never run (fresh) nor be
 * granted a host (a resumption): "dropped by Close while queued".
 * HANDDROP=0 fails (close/handdrop0): the waker reads stopped false, Close
 * stores it, the waker polls the DROP task and hands it over, Close's
 * Close(drop) finds the channel empty and wakeAll pops nothing (the worker
 * is the waker's), and the woken worker runs the task.
 *
 * Orphans (park.go): a worker whose goroutine left with a yielded task while
 * the summary read empty is pushed on the idle stack without a process;
 * whoever pops it runs a new Worker for it. takeIdle (yield.go): a task
 * re-entering while Close has not started, the summary reads empty and the
 * stack is not, pops a worker and runs on at once. An orphan it adopts: when
 * the task ends it runs a Worker for it (the goroutine goes on with the
 * loop). A worker whose process is parked it borrows, and pushes back (with
 * park's re-check) when it yields again or ends.
 *
 * IDLE=1 (Config.IdleTimeout): a parked process may time out at any moment:
 * idle.CompareAndSwap(parked, orphaned); if it wins, the process ends and
 * the worker lies on the stack as an orphan; it loses while the worker is
 * popped or borrowed (claimed) and keeps waiting; at most MAXTO time-outs
 * per run (each ends a process and a later pop runs a new one: see README).
 * worker.idle is ist[w]
 * (claimed, parked, orphaned; with IDLE=0 the two-valued orphan[w]); every
 * pop swaps in claimed (rouse, takeIdle).
 *
 * LAZY=1 (workers.go): workers START.. W-1 start unborn; wake loops while
 * the stack is non-empty or born < W and, when its Pop fails, creates the
 * next worker (bear, with the token). live counts worker goroutines and
 * orphans, + 1 for the closer; bear takes a share by CAS from non-zero (it
 * fails at 0: the pool has finished) and a worker's return and the closer's
 * end give theirs back (exitLive); whoever takes live to 0 builds the
 * report, which asserts that it runs once and that every accepted COC task
 * has run. With -DNP the ledger assertions are off (the check looks for
 * livelocks only: the spinning wake of LIVEEXIT=0).
 */

#ifndef W
#define W 2            /* workers */
#endif
#ifndef NT
#define NT 1           /* tasks submitted (at most 8) */
#endif
#ifndef MAXY
#define MAXY 1         /* Yields of tasks 0 and 1 */
#endif
#ifndef FIRSTCH
#define FIRSTCH 0      /* channel of task 0: 0 (COC) or 1 (DROP) */
#endif
#ifndef FOL1
#define FOL1 2         /* followup of channel 1: 0, 1, or 2 = both */
#endif
#ifndef MUTANT
#define MUTANT 0
#endif
#ifndef WAKE
#define WAKE 1
#endif
#ifndef EXIT
#define EXIT 1
#endif
#ifndef PARKWAKE
#define PARKWAKE 1
#endif
#ifndef IDLE
#define IDLE 0         /* 1: a parked goroutine may time out (Config.IdleTimeout) */
#endif
#ifndef MAXTO
#define MAXTO 2        /* with IDLE: time-outs per run (each ends a process; see README) */
#endif
#ifndef LAZY
#define LAZY 0         /* 1: workers START.. W-1 start unborn; wake creates them (bear); needs WAKE=1 */
#endif
#ifndef START
#define START 0        /* with LAZY: workers created at start (New creates none) */
#endif
#ifndef CLOSEBEAR
#define CLOSEBEAR 1    /* with LAZY: Close creates a worker if none exists and tasks are queued */
#endif
#ifndef LIVEEXIT
#define LIVEEXIT 1     /* with LAZY: wake returns once live is 0 after a failed bear */
#endif
#ifndef HANDOFF
#define HANDOFF 0      /* 1: the submitter's wake-up polls for the worker it pops */
#endif
#ifndef BURST
#define BURST HANDOFF  /* 1: a submit that finds the token held hands an item to an idle worker, without the token */
#endif
#if BURST == 1 && HANDOFF == 0
#error "BURST needs HANDOFF=1"
#endif
#if MUTANT == 13 && BURST == 0
#error "mutant 13 needs BURST=1"
#endif
#ifndef CANCEL
#define CANCEL 0       /* 1: task CT's context may end while it is queued (needs LAZY=1) */
#endif
#if CANCEL == 1 && LAZY == 0
#error "CANCEL needs LAZY=1"
#endif
#if MUTANT == 14 && CANCEL == 0
#error "mutant 14 needs CANCEL=1"
#endif
#ifndef ADOPT
#define ADOPT 1        /* worker.handTo: the resumed task carries the worker on; 0: the host waits in resume for release */
#endif
#ifndef CALLBACK
#define CALLBACK 0     /* 1: after a fresh task, OnEnd may wait, giving the worker away (needs LAZY=1) */
#endif
#if CALLBACK == 1 && LAZY == 0
#error "CALLBACK needs LAZY=1"
#endif
#if MUTANT == 15 && CALLBACK == 0
#error "mutant 15 needs CALLBACK=1"
#endif
#ifndef HANDDROP
#define HANDDROP 2     /* with HANDOFF: 2: the drop rule spares a handed item whose waker read
                          stopped false after its poll (worker.nextStarted, park.go handOver);
                          1: it applies to every handed item; 0: to none (mutant) */
#endif
#if HANDOFF == 1 && WAKE == 0
#error "HANDOFF needs WAKE=1"
#endif
#if MUTANT == 12 && (HANDOFF == 0 || LAZY == 0)
#error "mutant 12 needs HANDOFF=1 and LAZY=1"
#endif

#define RES   16       /* queue item t+RES: the resumption of task t */
#define NONE  255

#define COC(ch)   ((ch) == 0)
#define CHAN(t)   (((t) + FIRSTCH) % 2)
#define YIELDS(t) ((t) < 2 -> MAXY : 0)
#define COUNTED(t) COC(CHAN(t))   /* taskContext.counted */

#define O_NONE    0
#define O_RAN     1
#define O_DROPPED 2
#define O_CANCELLED 3

#define R_SUSP 0
#define R_END  1

#define PLAIN 0                    /* w.wake <- false */
#define TOKEN 1                    /* w.wake <- true: the waking token */

chan Q[2] = [8] of { byte };       /* the channels' queues (FIFO) */
chan tok[W] = [1] of { byte };     /* worker.wake: PLAIN (false) or TOKEN (true) */
#if IDLE == 1
byte ist[W];                       /* worker.idle: on the stack parked or orphaned, else claimed */
#define CLAIMED  0
#define PARKED   1
#define ORPHANED 2
#define ISORPHAN(w)  (ist[w] == ORPHANED)
#define SETIDLE(w, o) ist[w] = ((o) -> ORPHANED : PARKED)
#define CLAIM(w)     ist[w] = CLAIMED
byte touts;                        /* time-outs so far, at most MAXTO */
#else
bool orphan[W];                    /* the same, two-valued: orphaned or not */
#define ISORPHAN(w)  orphan[w]
#define SETIDLE(w, o) orphan[w] = (o)
#define CLAIM(w)     orphan[w] = false
#endif
chan grant[NT] = [1] of { byte };  /* taskContext.grant: worker + 1 (ADOPT), 1 = a host (ADOPT=0), 0 = dropped */
chan rel[NT] = [0] of { byte };    /* taskContext.release: unbuffered (a rendezvous: carriers.go) */

bool stopped, closing, waking;     /* engine.stopped, .closing, .waking */
bool dropflag[2];                  /* Close(true) emptied the channel: Requeue refuses */
byte fol[2];                       /* engine.followup */
short inflight;                    /* engine.inflight */

byte stk[W];                       /* idle.Stack (linearizable push and pop) */
byte sp;

#if LAZY == 1
byte born;                         /* engine.born: workers below it exist */
byte live;                         /* engine.live: worker goroutines and orphans, + 1 for the closer */
bool finished;                     /* engine.finish ran (the report) */
byte cbs;                          /* OnEnd calls waiting without their worker (CALLBACK) */
#endif

byte cur[NT];                      /* taskContext.cur (its channel index) */
bool accepted[NT];
byte outcome[NT];
byte runs[NT];                     /* times task t's code ran to its end */
#if CANCEL == 1
#define CT (NT - 1)                /* the task submitted WithContext */
#define C_NONE       0             /* not queued (pushing, or refused) */
#define C_QUEUED     1
#define C_CANCELLING 2
#define C_CANCELLED  3
#define C_CLAIMED    4             /* started or dropped */
byte cst;                          /* cancellable.state of task CT */
bool ended;                        /* its OnEnd returned */

/* cancellable.claim by whoever holds task CT from its queue: from queued,
 * or, lost, wait until a cancellation that won has counted; won says which. */
inline claimCT(won) {
	atomic {
		if
		:: cst == C_QUEUED -> cst = C_CLAIMED; won = true
		:: else -> won = false
		fi
	}
	if
	:: !won -> cst != C_CANCELLING
	:: else -> skip
	fi
}
#endif
#if HANDOFF == 1
byte nxt[W];                       /* w.next: the item a waker polled for w, or NONE */
byte nxch[W];                      /* its channel */
bool nxlate[W];                    /* ghost: it left a DROP queue after stopped was set */
bool nxst[W];                      /* the waker's load of stopped after its poll (!w.nextStarted) */
#endif

/* a DROP item taken from its queue while stopped is set was queued when
 * Close started: it must be dropped, never run (ghost, see late) */
#define LATE(ch) (!COC(ch) && stopped)

#define SUMMARY ((len(Q[0]) + len(Q[1])) > 0)

inline pop(i) {
	atomic {
		if
		:: sp > 0 -> sp--; i = stk[sp]; stk[sp] = 0
		:: else -> i = NONE
		fi
	}
}

/* Pop a worker and send it a wake-up, as one step: the send goes to the
 * popped worker's own one-slot channel, which nobody else reads and which is
 * empty (a worker is pushed only by itself and popped once per push), so it
 * commutes with every other process's steps. */
inline popSend(i, v) {
	atomic {
		pop(i);
		if
		:: i != NONE && ISORPHAN(i) -> CLAIM(i); run Worker(i, v)   /* worker.rouse: the swap */
		:: i != NONE && !ISORPHAN(i) -> CLAIM(i); assert(len(tok[i]) == 0); tok[i]!v
		:: else -> skip
		fi
	}
}

/* engine.wake */
#if WAKE == 0
inline wake(i, ok) {                        /* as in park.go */
	if
	:: sp == 0 -> skip                      /* idle.Empty() */
	:: else ->
		atomic { ok = !waking; waking = true }  /* waking.CompareAndSwap(false, true) */
		if
		:: ok ->
			popSend(i, true);
			if
			:: i == NONE -> waking = false      /* the stack emptied meanwhile */
			:: else -> skip
			fi
		:: else -> skip
		fi
	fi;
	i = 0; ok = false
}
#elif LAZY == 1
/* engine.exit: the caller's share of live; whoever takes it to 0 builds the
 * report, which must find every accepted COC task run. */
inline exitLive(ek) {
	atomic {
		live--;
		if
		:: live == 0 ->
			assert(!finished);              /* the pool finishes once */
			finished = true;
#ifndef NP
			ek = 0;
			do
			:: ek < NT ->
				assert(!(accepted[ek] && COC(CHAN(ek))) || outcome[ek] == O_RAN || outcome[ek] == O_CANCELLED);
				ek++
			:: else -> break
			od;
#if CANCEL == 1
			assert(cst != C_CANCELLING && (cst != C_CANCELLED || ended));   /* OnEnd returned */
#endif
#if CALLBACK == 1
			assert(cbs == 0);               /* every OnEnd that waited has returned */
#endif
			ek = 0
#else
			skip
#endif
		:: else -> skip
		fi
	}
}

/* engine.bear(token): a share of live by CAS from a non-zero value (a failed
 * CAS retries: not modelled), then born's CAS below target and the goroutine;
 * over target the share is given back. */
inline bear(bv, bok, bk) {
	atomic {
#if MUTANT == 11
		live++; bok = true                   /* no CAS: counts from 0 too */
#else
		if
		:: live != 0 -> live++; bok = true
		:: else -> bok = false
		fi
#endif
	}
	if
	:: bok ->
		atomic {
			if
			:: born < W -> run Worker(born, bv); born++
			:: else -> bok = false
			fi
		}
		if
		:: !bok -> exitLive(bk)
		:: else -> skip
		fi
	:: else -> skip
	fi
}

inline wake(i, ok) {                        /* park.go: for (!idle.Empty() || unborn()) && CAS */
	do
	:: true ->
		if
		:: sp != 0 -> skip                  /* !idle.Empty() */
		:: else ->
			if
			:: born < W -> skip             /* || unborn() */
			:: else -> break
			fi
		fi;
		atomic { ok = !waking; waking = true }
		if
		:: !ok -> break
		:: else -> skip
		fi;
		popSend(i, true);
		if
		:: i != NONE -> break
		:: else -> skip
		fi;
		bear(true, ok, i);                  /* an unborn worker is idle in effect */
		if
		:: ok -> break
		:: else -> skip
		fi;
		waking = false;
		if
		:: SUMMARY -> skip
		:: else -> break
		fi;
#if LIVEEXIT == 1
		if
		:: live == 0 -> break               /* the pool has finished: nothing may start */
		:: else -> skip
		fi
#endif
	od;
	i = 0; ok = false
}
#else
inline wake(i, ok) {                        /* the fix: look again after clearing */
	do
	:: sp == 0 -> break
	:: else ->
		atomic { ok = !waking; waking = true }
		if
		:: !ok -> break
		:: else -> skip
		fi;
		popSend(i, true);
		if
		:: i != NONE -> break
		:: else -> skip
		fi;
		waking = false;
		if
		:: SUMMARY -> skip                  /* a waker may have skipped: retry */
		:: else -> break
		fi
	od;
	i = 0; ok = false
}
#endif

/* park's wake-up after its re-check (engine.wakeAny) */
#if PARKWAKE == 0
inline parkWake(i, ok) {
	popSend(i, false);
	i = 0
}
#else
inline parkWake(i, ok) {                    /* the fix: take the token if free */
	atomic { ok = !waking; waking = true }
	popSend(i, ok);
	if
	:: i == NONE && ok ->
		waking = false;
		if
		:: SUMMARY -> wake(i, ok)
		:: else -> skip
		fi
	:: else -> skip
	fi;
	i = 0; ok = false
}
#endif

/* engine.wakeAll */
inline wakeAll(i) {
	do
	:: popSend(i, false);
	   if
	   :: i == NONE -> break
	   :: else -> skip
	   fi
	od;
	i = 0
}

/* engine.leaveInflight */
inline leaveInflight(i, z) {
	atomic { inflight--; z = (inflight == 0) }
#if MUTANT != 6
	if
	:: z && closing -> wakeAll(i)
	:: else -> skip
	fi;
#endif
	z = false
}

/* worker.goIdle for a worker without a running process: an orphan
 * (worker.carryOn's idle branch) or one a task borrowed and gives back. It
 * goes on the idle stack, then park's re-check. */
inline goIdle(me, orph, i, ok, c) {
	atomic { SETIDLE(me, orph); stk[sp] = me; sp++ }
#if MUTANT != 7
	if
	:: SUMMARY -> parkWake(i, ok)
	:: else ->
		c = closing;
		if
		:: c && (inflight == 0) -> parkWake(i, ok)
		:: else -> skip
		fi;
		c = false
	fi
#endif
}

/* Record how task t ended. Only the final check reads outcome and runs, and
 * in a correct run one process writes them per task, so this commutes with
 * everything and may share a step with its neighbours. */
inline setOutcome(t, o) {
	atomic {
		assert(outcome[t] == O_NONE);       /* a task ends exactly once */
		outcome[t] = o;
		if
		:: o == O_RAN -> runs[t]++
		:: else -> skip
		fi
	}
}

proctype Task(byte t; byte left) {
	byte i, g, f, w;
	bool ok, z, stp, c, bor;
#if MUTANT == 1
	if
	:: COUNTED(t) -> inflight++             /* counted after the slot went */
	:: else -> skip
	fi;
#endif
reenter:
	/* wait() ends (the outside waker), then taskContext.reenter: takeIdle.
	 * Its guard (Close not started, summary empty) is a hint, so the model
	 * lets a task try at any moment: a stronger check than the guard. */
	if
#if MUTANT == 10
	:: atomic {                             /* Pop; w.idle.Load() */
		pop(w);
		if
		:: w != NONE -> bor = !ISORPHAN(w)
		:: else -> skip
		fi
	   }
		if
		:: w != NONE ->
			atomic { CLAIM(w); cur[t] = fol[cur[t]]; goto carried }   /* w.idle.Store(claimed) */
		:: else -> skip
		fi
#else
	:: atomic {
		pop(w);
		if
		:: w != NONE ->
#if MUTANT != 8
			bor = !ISORPHAN(w);             /* w.idle.Swap(claimed) != orphaned */
#endif
			CLAIM(w);
			cur[t] = fol[cur[t]];           /* as if taken from its followup */
			goto carried
		:: else -> skip
		fi
	   }
#endif
	:: skip
	fi;
	/* or the push: */
#if MUTANT == 3
	if
	:: COUNTED(t) -> leaveInflight(i, z)    /* released at re-entry */
	:: else -> skip
	fi;
#else
	inflight++;                             /* e.inflight.Add(1): count (b) */
#endif
	if
	:: COUNTED(t) -> stp = false            /* tc.counted || ... */
	:: else -> stp = stopped                /* ... !e.stopped.Load() */
	fi;
#if MUTANT == 2
	leaveInflight(i, z);                    /* decremented before the push */
#endif
	if
	:: !stp ->
		atomic {                            /* Requeue under the channel lock */
			f = fol[cur[t]];
			if
			:: dropflag[f] -> ok = false    /* ErrClosed */
			:: else -> Q[f]!(t + RES); ok = true
			fi;
			f = 0
		}
		if
		:: ok -> wake(i, z)                 /* Bits.Wake after unlocking */
		:: else -> skip
		fi
	:: else -> ok = false
	fi;
	stp = false;
#if MUTANT != 2 && MUTANT != 3
	leaveInflight(i, z);
#endif
	if
	:: ok -> grant[t]?g                     /* tc.w = <-tc.grant */
	:: else -> g = 0
	fi;
	ok = false;
	if
	:: g == 0 ->                            /* refused or dropped: Goexit */
#if MUTANT != 3
		if
		:: COUNTED(t) -> leaveInflight(i, z)    /* end(dropped) */
		:: else -> skip
		fi;
#endif
		setOutcome(t, O_DROPPED);
		goto done
	:: else -> skip
	fi;
#if ADOPT == 1
	atomic { w = g - 1; g = 0; goto carried }  /* handTo: the task carries the worker on, as an adopted one */
#endif
	g = 0;
	/* the task runs on its host, which waits in resume */
	if
	:: left > 0 ->                          /* Yield again: suspend */
		left--;
#if MUTANT == 3
		if
		:: COUNTED(t) -> inflight++
		:: else -> skip
		fi;
#endif
		rel[t]!R_SUSP;                      /* tc.release <- suspended */
		goto reenter
	:: else ->                              /* it returns: end(ran) */
#if MUTANT != 3
		if
		:: COUNTED(t) -> leaveInflight(i, z)
		:: else -> skip
		fi;
#endif
		atomic { setOutcome(t, O_RAN); rel[t]!R_END }
	fi;
	goto done;
carried:                                   /* the task runs on with worker w */
	if
	:: left > 0 ->                          /* Yield again: suspend */
		left--;
		if
		:: bor -> goIdle(w, false, i, ok, c)    /* give it back */
		:: !bor && !SUMMARY -> goIdle(w, true, i, ok, c)   /* carryOn */
		:: !bor && SUMMARY -> run Worker(w, false)
		fi;
		atomic { w = 0; bor = false; goto reenter }
	:: else ->                              /* it returns: end(ran) */
		if
		:: COUNTED(t) -> leaveInflight(i, z)
		:: else -> skip
		fi;
		if
		:: bor -> setOutcome(t, O_RAN); goIdle(w, false, i, ok, c)
		:: else -> atomic { setOutcome(t, O_RAN); run Worker(w, false) }   /* goes on with w's loop */
		fi;
		w = 0; bor = false
	fi;
done:
	skip
}

/* After a step that only receives (a right mover) or only records an outcome
 * (commutes with everything), the loop's first read shares its step. */
#if MUTANT == 4
#define THEN_LOOP(s)  s; goto loop
#else
#define THEN_LOOP(s)  atomic { s; cl = closing }; goto loaded
#endif

proctype Worker(byte me; bool wk0) {
	bool cl, susp, wk, ww, c, z, ok;
#if HANDOFF == 1
	bool hd, late;                          /* item was handed; ghost: it left a DROP queue after stopped */
	bool hst;                               /* its waker read stopped true after the poll */
#endif
	byte item, ch, t, i, how, msg;
	wk = wk0;
loop:
#if MUTANT == 4
	z = (inflight != 0);                    /* inflight read first */
	cl = closing;
	susp = cl && z;
	z = false;
#else
	cl = closing;                           /* closing := e.closing.Load() */
loaded:
	if
	:: cl -> susp = (inflight != 0)         /* suspended := closing && inflight != 0 */
	:: else -> skip
	fi;
#endif
#if HANDOFF == 1
	if
	:: nxt[me] != NONE ->                   /* w.next: handed by our waker */
		atomic {
			item = nxt[me]; ch = nxch[me]; late = nxlate[me]; hd = true; hst = nxst[me];
			nxt[me] = NONE; nxch[me] = 0; nxlate[me] = false; nxst[me] = false
		}
	:: else ->
#endif
	atomic {                                /* worker.find */
		if
		:: len(Q[0]) > 0 -> Q[0]?item; ch = 0
		:: len(Q[1]) > 0 -> Q[1]?item; ch = 1
		:: else -> item = NONE; ch = 0
		fi;
#if HANDOFF == 1
		late = (item != NONE && LATE(ch))
#else
		skip
#endif
	}
#if HANDOFF == 1
	fi;
#endif
	if
	:: item == NONE ->
		if
		:: wk -> wk = false; waking = false; ww = true
		:: else -> skip
		fi;
		if
		:: cl && !susp ->
#if EXIT == 1
			if
			:: ww && SUMMARY -> cl = false; susp = false; ww = false; goto loop
			:: else -> skip
			fi;
#endif
#if LAZY == 1
			cl = false; susp = false; ww = false;
			exitLive(i);                    /* the loop's deferred exit */
#endif
			goto quit                       /* return */
		:: else -> skip
		fi;
		cl = false; susp = false; ww = false;
		/* worker.park */
#if IDLE == 1
		atomic { ist[me] = PARKED; stk[sp] = me; sp++ }   /* goIdle(parked): idle.Store, Push */
#else
		atomic { stk[sp] = me; sp++ }       /* idle.Push */
#endif
		if
		:: SUMMARY -> parkWake(i, ok)
		:: else ->
#if MUTANT != 5
			c = closing;
			if
			:: c && (inflight == 0) -> parkWake(i, ok)
			:: else -> skip
			fi;
			c = false
#else
			skip
#endif
		fi;
#if IDLE == 1
		if
		:: THEN_LOOP(tok[me]?msg; wk = (msg == TOKEN); msg = 0)   /* <-w.wake */
#if MUTANT == 9
		:: atomic { touts < MAXTO -> touts++; ist[me] = ORPHANED }   /* timed out: a plain store */
			goto quit                       /* and ends */
#else
		:: atomic { touts < MAXTO && ist[me] == PARKED -> touts++; ist[me] = ORPHANED }
			goto quit                       /* timed out, the CAS won: the goroutine ends */
#endif
		fi
#else
		THEN_LOOP(tok[me]?msg; wk = (msg == TOKEN); msg = 0)   /* <-w.wake */
#endif
	:: else -> skip
	fi;
	cl = false; susp = false;
	if
	:: wk ->
		wk = false;
		waking = false;
		if
		:: SUMMARY -> wake(i, ok)           /* pass the wake-up on */
		:: else -> skip
		fi
	:: else -> skip
	fi;
#if CANCEL == 1
	if
	:: item == CT ->                        /* Run's (or discard's) claim */
		claimCT(ok);
		if
		:: !ok ->                           /* cancelled: skipped, counted by the Canceller */
			item = 0; ch = 0;
#if HANDOFF == 1
			hd = false; late = false; hst = false;
#endif
			goto loop
		:: else -> ok = false
		fi
	:: else -> skip
	fi;
#endif
	if
#if HANDOFF == 1 && HANDDROP == 0
	:: !hd && !COC(ch) && stopped ->        /* dropped at pick, unless handed */
#elif HANDOFF == 1 && HANDDROP == 2
	:: (!hd || hst) && !COC(ch) && stopped -> /* dropped at pick, unless handed before Close */
#else
	:: !COC(ch) && stopped ->               /* dropped at pick */
#endif
		if
		:: item >= RES -> grant[item - RES]!0   /* resumption.drop */
		:: else -> setOutcome(item, O_DROPPED)
		fi;
		item = 0; ch = 0;
#if HANDOFF == 1
		hd = false; late = false; hst = false;
#endif
		goto loop
	:: else -> skip
	fi;
#if HANDOFF == 1
	assert(!late);                          /* queued when Close started: never run */
	hd = false; hst = false;
#endif
	if
	:: item >= RES ->                       /* worker.resume */
		t = item - RES;
#if ADOPT == 1
		atomic { cur[t] = ch; grant[t]!(me + 1) }   /* worker.handTo: tc.cur = q; tc.grant <- w */
		item = 0; ch = 0; t = 0;
#if MUTANT == 16
		goto loop                           /* the host carries on too */
#else
		goto quit                           /* w and its share of live are the task's: a spare */
#endif
#else
		atomic { cur[t] = ch; grant[t]!1 }  /* tc.cur = q; tc.grant <- w */
		item = 0; ch = 0;
		THEN_LOOP(rel[t]?how; t = 0; how = 0)   /* <-tc.release */
#endif
	:: else -> skip
	fi;
	/* worker.run of a fresh task */
	t = item; item = 0;
	if
	:: YIELDS(t) > 0 ->                     /* it Yields: suspend */
		atomic {
			cur[t] = ch;                    /* origin; read only by the task */
#if MUTANT != 1
			if
			:: COUNTED(t) -> inflight++     /* before the slot is released */
			:: else -> skip
			fi;
#endif
		}
		ch = 0;
		if                                  /* worker.carryOn */
		:: !SUMMARY ->                      /* idle, without a process; the */
			goIdle(me, true, i, ok, c);     /* task waits only after that */
			run Task(t, YIELDS(t) - 1);
			goto quit
		:: else ->
			run Task(t, YIELDS(t) - 1);     /* go e.loop(...): the worker carries on */
			t = 0;
			goto loop
		fi
	:: else ->
		ch = 0;
#if CALLBACK == 1
		if
		:: THEN_LOOP(setOutcome(t, O_RAN); t = 0)   /* it returns */
		:: setOutcome(t, O_RAN); t = 0;     /* it returns, and OnEnd waits: */
#if MUTANT != 15
			live++;                         /* leaveForCallback: e.share() (w's share keeps live above 0) */
#endif
			cbs++;
			run Worker(me, false);          /* engine.carry: the loop goes on elsewhere */
			cbs--;                          /* OnEnd returns */
#if MUTANT != 15
			exitLive(i);                    /* worker.run: e.exit() */
#endif
			goto quit
		fi
#else
		THEN_LOOP(setOutcome(t, O_RAN); t = 0)   /* it returns */
#endif
	fi;
quit:
	skip
}

#if HANDOFF == 1
#if LAZY == 1
/* bear's first half for the hand-off: the share of live and born's CAS;
 * the goroutine starts in handRouse, after the poll (i = the new worker) */
inline breserve(i, bok, bk) {
#if MUTANT == 12
	bok = true;                             /* live's share taken at the start, below */
#else
	atomic {
		if
		:: live != 0 -> live++; bok = true
		:: else -> bok = false
		fi
	}
#endif
	if
	:: bok ->
		atomic {
			if
			:: born < W -> i = born; born++
			:: else -> bok = false
			fi
		}
#if MUTANT == 12
		skip                                /* no share to give back */
#else
		if
		:: !bok -> exitLive(bk)
		:: else -> skip
		fi
#endif
	:: else -> skip
	fi
}
#endif

/* worker.find for the popped worker, if the pool has not stopped (a load
 * of stopped, then the search as one step); lt: the ghost late */
inline hfind(it, hc, lt) {
	if
	:: stopped -> it = NONE
	:: else ->
		atomic {
			if
			:: len(Q[0]) > 0 -> Q[0]?it; hc = 0
			:: len(Q[1]) > 0 -> Q[1]?it; hc = 1
			:: else -> it = NONE; hc = 0
			fi;
			lt = (it != NONE && LATE(hc))
		}
	fi
}

/* w.next = it, then rouse w with the token (v false: a burst's hand-over): the claim (swap) here, after
 * the poll, so a parked process that timed out since the pop gets a new
 * one; nb: w was just born (bear's goroutine) */
inline handRouse(i, nb, it, hc, lt, v) {
	atomic {
		nxt[i] = it; nxch[i] = hc; nxlate[i] = lt;
		if
#if MUTANT == 12
		:: nb -> live++; run Worker(i, v)   /* the share only now */
#else
		:: nb -> run Worker(i, v)
#endif
		:: !nb && ISORPHAN(i) -> CLAIM(i); run Worker(i, v)
		:: !nb && !ISORPHAN(i) -> CLAIM(i); assert(len(tok[i]) == 0); if :: v -> tok[i]!TOKEN :: else -> tok[i]!PLAIN fi
		fi;
		it = 0; hc = 0; lt = false
	}
}

#if BURST == 1
/* engine.rouseIdle: the token is held by another waker; pop an idle
 * worker (or, LAZY, reserve a new one), poll for it and rouse it without the
 * token; none idle: nothing to do */
inline hburst(i, it, hc, lt, nb) {
	pop(i);
#if LAZY == 1
	if
	:: i == NONE -> breserve(i, nb, it)
	:: else -> skip
	fi;
#endif
	if
	:: i != NONE ->
		hfind(it, hc, lt);
#if HANDDROP == 2
		nxst[i] = stopped;
#endif
#if MUTANT == 13
		if
		:: it == NONE -> skip               /* found nothing: the popped worker is never woken */
		:: else -> handRouse(i, nb, it, hc, lt, false)
		fi
#else
		handRouse(i, nb, it, hc, lt, false)
#endif
	:: else -> skip
	fi;
	i = 0; nb = false; it = 0; hc = 0; lt = false
}
#endif

/* Bits.Wake with the hand-off: engine.wake's loop up to the pop (or bear),
 * then hfind for that worker and handRouse */
inline hwake(i, ok, it, hc, lt, nb) {
	do
	:: true ->
		if
		:: sp != 0 -> skip
		:: else ->
#if LAZY == 1
			if
			:: born < W -> skip
			:: else -> break
			fi
#else
			break
#endif
		fi;
		atomic { ok = !waking; waking = true }
		if
		:: !ok ->
#if BURST == 1
			if
			:: hburst(i, it, hc, lt, nb)
			:: skip                         /* as many awake as processors: no hand-over */
			fi;
#endif
			break
		:: else -> skip
		fi;
		pop(i);
#if LAZY == 1
		if
		:: i == NONE -> breserve(i, nb, it)
		:: else -> skip
		fi;
#endif
		if
		:: i != NONE ->
			hfind(it, hc, lt);
#if HANDDROP == 2
			nxst[i] = stopped;              /* stopped again, after the poll */
#endif
			handRouse(i, nb, it, hc, lt, true);
			break
		:: else -> skip
		fi;
		waking = false;
		if
		:: SUMMARY -> skip
		:: else -> break
		fi;
#if LAZY == 1 && LIVEEXIT == 1
		if
		:: live == 0 -> break
		:: else -> skip
		fi
#endif
	od;
	i = 0; ok = false; nb = false
}
#endif

proctype Submitter() {
	byte t, i;
	bool ok, z;
#if HANDOFF == 1
	byte it, hc;
	bool lt, nb;
#endif
	do
	:: t < NT ->
		atomic {                            /* submit: stopped, then Push under the lock */
			if
			:: !stopped -> Q[CHAN(t)]!t; accepted[t] = true; ok = true;
#if CANCEL == 1
				if
				:: t == CT -> cst = C_QUEUED
				:: else -> skip
				fi
#else
				skip
#endif
			:: else -> ok = false
			fi
		}
		if
#if HANDOFF == 1
		:: ok -> hwake(i, z, it, hc, lt, nb)   /* Bits.Wake: hand-off */
#else
		:: ok -> wake(i, z)                 /* Bits.Wake */
#endif
		:: else -> skip
		fi;
		ok = false;
		t++
	:: else -> break
	od
}

proctype Closer() {
	byte item, i, k;
	bool z;
	byte freshMask, resMask;                /* what Close(true) removed from channel 1 */
	stopped = true;
	atomic {                                /* Channel.Close(drop) of each channel, under its lock */
		dropflag[1] = true;
		do
		:: len(Q[1]) > 0 ->
			Q[1]?item;
			if
			:: item >= RES -> resMask = resMask | (1 << (item - RES))
			:: else -> freshMask = freshMask | (1 << item)
			fi
		:: else -> break
		od;
		item = 0
	}
	closing = true;
	wakeAll(i);
#if LAZY == 1 && CLOSEBEAR == 1
	if
	:: born == 0 ->                         /* e.born.Load() == 0 && */
		if
		:: SUMMARY -> bear(false, k, i)     /* e.field.Summary() != 0: bear(false) */
		:: else -> skip
		fi;
		k = 0; i = 0
	:: else -> skip
	fi;
#endif
#if CANCEL == 1
	if
	:: freshMask & (1 << CT) ->             /* discard's claim */
		claimCT(z);
		if
		:: !z -> freshMask = freshMask & ~(1 << CT)   /* cancelled: reported already */
		:: else -> z = false
		fi
	:: else -> skip
	fi;
#endif
	atomic {                                /* dropTasks: outcomes and sends to blocked tasks only */
		k = 0;
		do
		:: k < NT ->
			if
			:: freshMask & (1 << k) -> setOutcome(k, O_DROPPED)
			:: else -> skip
			fi;
			if
			:: resMask & (1 << k) -> grant[k]!0
			:: else -> skip
			fi;
			k++
		:: else -> break
		od;
		k = 0; freshMask = 0; resMask = 0
	}
#if LAZY == 1
	exitLive(k)                             /* the closer's share of live */
#endif
}

#if CANCEL == 1
proctype Canceller() {
	bool won, sh;
	byte k;
	atomic {                                /* claim(cancelling): from queued only */
		if
		:: cst == C_QUEUED -> cst = C_CANCELLING; won = true
		:: else -> skip                     /* started, dropped, or never queued */
		fi
	}
	if
	:: won ->
#if MUTANT != 14
		atomic {                            /* e.share(): CAS from non-zero */
			if
			:: live != 0 -> live++; sh = true
			:: else -> skip
			fi
		}
#endif
		atomic { setOutcome(CT, O_CANCELLED); cst = C_CANCELLED };   /* counted, then the state */
		ended = true;                       /* OnEnd returns */
		if
		:: sh -> exitLive(k)                /* deferred exit */
		:: else -> skip
		fi
	:: else -> skip
	fi
}
#endif

init {
	byte k;
#if FOL1 == 2
	if
	:: fol[1] = 0
	:: fol[1] = 1
	fi;
#else
	fol[1] = FOL1;
#endif
	atomic {
		k = 0;
#if HANDOFF == 1
		do
		:: k < W -> nxt[k] = NONE; k++
		:: else -> break
		od;
		k = 0;
#endif
#if LAZY == 1
		born = START;
		live = 1 + START;                   /* the closer's share and the started workers' */
		do
		:: k < START -> run Worker(k, false); k++
		:: else -> break
		od;
#else
		do
		:: k < W -> run Worker(k, false); k++
		:: else -> break
		od;
#endif
		run Submitter();
		run Closer();
#if CANCEL == 1
		run Canceller();
#endif
		k = 0
	}
	(_nr_pr == 1);                          /* every other process has ended */
#ifndef NP                                 /* a -DNP check looks for livelocks only */
	do
	:: k < NT ->
		if
		:: accepted[k] && COC(CHAN(k)) ->
			assert((outcome[k] == O_RAN && runs[k] == 1) || (outcome[k] == O_CANCELLED && runs[k] == 0))
		:: accepted[k] && !COC(CHAN(k)) ->
			assert(outcome[k] != O_NONE && runs[k] <= 1)
		:: else ->
			assert(outcome[k] == O_NONE && runs[k] == 0)
		fi;
		k++
	:: else -> break
	od;
	assert(len(Q[0]) == 0 && len(Q[1]) == 0);
	assert(sp == 0 && !waking && inflight == 0);
#if HANDOFF == 1
	k = 0;
	do
	:: k < W -> assert(nxt[k] == NONE); k++   /* no handed item left */
	:: else -> break
	od;
#endif
#if LAZY == 1
	assert(finished && live == 0)
#endif
#endif
}
