/*
 * park.pml: the sleep/wake protocol of smartpool (park.go) with the waking
 * throttle, over the availability-bit protocol (internal/avail) as the
 * two-lock FIFO (channels/fifo.go, internal/queue/twolock.go) keeps it,
 * checked with spin. No Close here: close.pml covers it.
 *
 *   Worker(me)    worker.loop, worker.find/pollLevel, FIFO.Poll, worker.park;
 *                 with LAZY or IDLE also the worker's time without a
 *                 goroutine (gone: unborn, or an orphan after a time-out),
 *                 until bear or a pop starts one (start[me])
 *   Submitter(k)  FIFO.push on channel k: tail lock, q.Push (publish),
 *                 setBitLocked (bitSet, Bits.Set), unlock, Bits.Wake ->
 *                 engine.wake
 *   Observer      fires only when nothing else can move (spin's timeout):
 *                 the system is quiescent; checks no lost wake-up
 *
 * One level with NQ = 2 one-queue FIFOs, whose bits share the level's one
 * word (avail.Field: word, summary). Each FIFO is a two-lock queue: pushes
 * hold its tail lock, polls its head lock, so a pusher and a
 * poller of the same FIFO interleave at atomic granularity. The queue is
 * two counters: pushed (atomic, stored by the pusher under tail) and popped
 * (touched only under head); the task popped is BASE(k) + popped[k]. Every Go
 * atomic (pushed, bitSet, word Or/And/Load, summary Or/And/Load) is one step;
 * a lock acquire shares the step of the first shared access after it, a
 * release the step of the last one before it (Lipton movers: see README).
 *
 * Submitter k pushes PERk tasks (PER0, PER1; both PER by default; PER1=0
 * leaves FIFO 1 idle).
 *
 * Workers (workers.go, park.go): with LAZY=1 only workers 0 .. START-1 run at
 * start (START 0 by default: New creates none); a wake-up whose Pop found
 * the idle stack empty creates the next one (engine.bear: born++), which
 * starts its loop with the waking token, and wake's loop runs while
 * `!idle.Empty() || born < W`. With IDLE=1 a parked goroutine may time out
 * at any moment (Config.IdleTimeout): idle.CompareAndSwap(parked, orphaned);
 * if it wins, the goroutine ends and the worker stays on the stack as an
 * orphan; if it loses (popped: a wake-up is on its way), it keeps waiting.
 * worker.idle is ist[i]: goIdle stores PARKED just before the Push; whoever
 * pops i swaps in CLAIMED and, from what it took, sends the token (PARKED)
 * or starts a goroutine with it (ORPHANED; worker.rouse).
 *
 * Blocking tasks: with W workers, tasks 0 .. W-2 (submitter 0's first ones)
 * do not return until the last task has run, as a task waiting for another
 * task's result would. W-1 workers may be held by them, so the remaining
 * worker must be woken for the rest: a parked worker beside queued work with
 * no wake-up on its way is a deadlock. Properties checked:
 *   - no invalid end state (deadlock): the only valid end is every worker
 *     parked at end_park after the Observer passed;
 *   - Observer (at quiescence): every task ran, word == 0, summary == 0,
 *     no bitSet left, waking is clear, every worker is on the idle stack, no
 *     lock held;
 *   - the bit rule, asserted at every release of a FIFO lock that leaves both
 *     locks of that FIFO free: (a) a queue holding a task has its bit set
 *     (the Channel contract); (b) a set bit over an empty queue is one the
 *     next Poll clears (no stale bit: find loops while a bit is set, so a
 *     bit no Poll clears makes workers spin instead of parking); (c) bitSet
 *     true implies the bit is set (a pusher that reads it true skips Set).
 *     -DRULES=n, a mask (1 a, 2 b, 4 c; default 7), turns some off;
 *   - assertions: a worker never gets a second wake-up token; with LAZY or
 *     IDLE, a wake-up is sent only to a worker whose goroutine exists (else
 *     it is lost), a goroutine is started only for a worker without one (no
 *     two goroutines), and at quiescence every worker created is on the
 *     stack, parked or orphaned, every other one unborn, and no wake-up or
 *     start is left unread;
 *   - with -DNP (pan -l): no non-progress cycle, i.e. workers do not loop
 *     forever without a task being submitted or run (progress_ labels).
 *
 * Mutants (-DMUTANT=n); each must make verification fail:
 *   1  park does not re-check the summary after pushing itself
 *   2  a waking worker that found nothing clears waking only after park's
 *      re-check (just before it blocks)
 *   3  a waking worker that found work re-reads the summary before it clears
 *      waking (the chained wake-up can be lost)
 *   4  avail.Tidy without the repair (no re-read after clearing the summary)
 *   5  the repair does not wake a worker (Bits.Clear ignores "repaired")
 *   6  the clearing Poll does not look at the queue again after Clear
 *   7  the clearing Poll looks again before Clear (bitSet.Store(false),
 *      second look, Clear, set back if the look said so)
 *   8  the clearing Poll stores bitSet false only if its second look finds
 *      nothing (Clear, second look, then Set or bitSet.Store(false)); a
 *      livelock: check with -DNP
 *   9  push reads bitSet (and sets the bit) before it publishes the task
 *  10  (IDLE) rouse loads worker.idle and then stores claimed and sends or
 *      starts: a time-out between the two ends the goroutine the token is
 *      sent to (a lost worker)
 *  11  (LAZY) wake's loop runs only while the idle stack is non-empty
 *      (ignores unborn workers): with every created worker busy, a submit
 *      wakes nobody although a worker could be created
 *  12  (IDLE) a timed-out goroutine stores orphaned (no CAS) and ends even
 *      if a pop claimed its worker and sent it a token: token and worker lost
 *  13  (PRESTART) start does not look for tasks queued before it: a task a
 *      channel queued between Attach and start is never run
 *  14  (HANDOFF) a worker woken with a handed task clears waking without
 *      re-reading the summary (as if it had not searched): a submitter that
 *      skipped its wake-up while the waker held the token is lost
 *  15  (HANDOFF) the waker polls before it pops a worker: if the pop (and
 *      bear) then finds none, it holds a task with nobody to give it to
 *  16  (HANDOFF) the waker stores next[w] after the wake-up (send or start):
 *      the woken worker may look at next[w] before it is written
 *  17  (HANDOFF, IDLE) the waker decides between sending the token and
 *      starting a goroutine from worker.idle as it read it at the pop, and
 *      stores claimed only at the wake-up after its poll: a goroutine that
 *      timed out meanwhile is sent a token it never reads
 *  18  (BURST) a submit's tokenless hand-over that finds no task (another
 *      worker took it) does not wake the worker it popped: that worker is
 *      off the stack for good, and a task waiting behind a blocked one
 *      never runs
 *
 * Protocol switches (1 = the fix, the default and the Go code now; 0 = the Go
 * code before the fix; each 0 breaks a property, see README "Bugs
 * found"):
 *   WAKE      engine.wake re-checks after a failed Pop
 *   PARKWAKE  park's re-check wake-up carries the waking token when free
 *   TIDYWAKE  worker.find wakes a worker when its Tidy repaired the summary
 *   STALEBIT  a Poll that leaves or finds the queue empty clears if bitSet
 *             OR the queue's own bit reads set
 *   LOSTBIT   the clearing Poll's second look sets the bit back if Len() > 0
 *             OR bitSet reads true
 *   BACKWAKE  the clearing Poll wakes a worker (engine.wake, after unlocking)
 *             when its second look set the bit back
 * and NOBITSET=1, an alternative to STALEBIT/LOSTBIT that also verifies: no
 * bitSet at all; a push always Sets the bit, a Poll with left == 0 always
 * clears, looks again (Len), and sets back and wakes if it is non-zero.
 * Model switch SETSUM (1, the Go code now: avail.Set's second summary
 * clause, since e6f01af; 0 before); the asis-parkwake/asis-tidywake
 * regressions use 0. A worker that found nothing parks, as worker.loop
 * does (from acafbe9 it searched once more first; that search-again was
 * taken out, and this model with it).
 * LAZY (workers created on first need; START of them at start) and IDLE
 * (parked goroutines time out) are the Go code now too; 0 checks the special
 * cases of a pool whose workers all exist and of IdleTimeout <= 0, and is
 * the default so that the older checks keep their sizes. LAZY needs WAKE=1.
 * PRESTART=1 (with LAZY) lets the submitters run before the pool starts, as
 * a goroutine a channel starts in Attach does: until the Starter sets
 * started (engine.start: live from 0 to 1), bear fails and wake returns;
 * the Starter then wakes a worker if the summary is set.
 * HANDOFF=1 (default 0) is the hand-off on wake: the submitter's wake
 * (Bits.Wake after a push), once it holds the waking token and has popped a
 * worker (or, LAZY, reserved a new one: born++), runs worker.find for that
 * worker (summary, pollLevel with the same Poll, Tidy and its repair
 * wake-up), stores the task it got, or none, in next[w], and only then
 * rouses the worker with the token (w.idle.Swap(claimed): send, or start a
 * goroutine for an orphan or the new worker). A worker at the top of its
 * loop that finds next[w] set clears it and goes on as if find had returned
 * that task (with the token: clear waking, re-read the summary, pass a plain
 * wake-up on). Every other wake-up stays plain: Poll's back-wake and Clear's
 * repair (inside the waker's own poll they find the token held and return
 * at once, as any wake-up does), find's Tidy, passing on, park's wakeAny,
 * start.
 * BURST (default: HANDOFF) is the burst rule on top of it: a submit whose
 * wake-up finds the token held pops an idle worker anyway (or, LAZY,
 * reserves a new one), runs find for it and rouses it without the token
 * (engine.rouseIdle); with none idle it returns. Whether it does is a
 * free choice: the Go code does it only while fewer workers are awake than
 * processors, a count the model leaves out.
 */

#ifndef W
#define W 2            /* workers */
#endif
#ifndef PER
#define PER 2          /* tasks per submitter */
#endif
#ifndef PER0
#define PER0 PER       /* tasks of submitter 0 */
#endif
#ifndef PER1
#define PER1 PER       /* tasks of submitter 1 */
#endif
#ifndef MUTANT
#define MUTANT 0
#endif
#ifndef WAKE
#define WAKE 1         /* 0: engine.wake as in park.go before ada9c37 */
#endif
#ifndef TIDYWAKE
#define TIDYWAKE 1     /* 0: worker.find ignores Tidy's repair, as before ada9c37 */
#endif
#ifndef PARKWAKE
#define PARKWAKE 1     /* 0: park's re-check wake-up as in park.go before ada9c37 */
#endif
#ifndef STALEBIT
#define STALEBIT 1     /* 0: Poll clears only if bitSet reads true, as channels/fifo.go */
#endif
#ifndef LOSTBIT
#define LOSTBIT 1      /* 0: Poll's second look reads only Len(), as channels/fifo.go */
#endif
#ifndef BACKWAKE
#define BACKWAKE 1     /* 0: Poll sets the bit back without a wake-up, as channels/fifo.go */
#endif
#ifndef SETSUM
#define SETSUM 1       /* 0: avail.Set ORs the summary only for the word's first bit, as
                        * before e6f01af (and as this model had it before the two-lock FIFO) */
#endif
#ifndef NOBITSET
#define NOBITSET 0     /* 1: the alternative without bitSet (STALEBIT, LOSTBIT unused) */
#endif
#ifndef LAZY
#define LAZY 0         /* 1: workers START.. W-1 are not created yet; a wake-up whose Pop found
                        * the stack empty creates the next one (engine.bear) */
#endif
#ifndef START
#define START 0        /* with LAZY: workers created at start (New creates none) */
#endif
#ifndef IDLE
#define IDLE 0         /* 1: a parked goroutine may time out (Config.IdleTimeout) */
#endif
#ifndef PRESTART
#define PRESTART 0     /* with LAZY: the submitters may queue before the pool starts */
#endif
#ifndef HANDOFF
#define HANDOFF 0      /* 1: the submitter's wake-up polls for the worker it pops (next[w]) */
#endif
#ifndef BURST
#define BURST HANDOFF  /* 1: a submit that finds the token held hands a task to an idle worker, without the token */
#endif
#if BURST == 1 && HANDOFF == 0
#error "BURST needs HANDOFF=1"
#endif
#define GOING (LAZY == 1 || IDLE == 1)   /* workers can be without a goroutine */
#if HANDOFF == 1 && WAKE == 0
#error "HANDOFF needs WAKE=1"
#endif
#if (MUTANT >= 14 && MUTANT <= 17) && HANDOFF == 0
#error "mutants 14 to 17 need HANDOFF=1"
#endif
#if MUTANT == 18 && BURST == 0
#error "mutant 18 needs BURST=1"
#endif
#if MUTANT == 17 && IDLE == 0
#error "mutant 17 needs IDLE=1"
#endif
#if PRESTART == 1 && LAZY == 0
#error "PRESTART needs LAZY=1"
#endif
#if LAZY == 1 && WAKE == 0
#error "LAZY needs WAKE=1: engine.bear is in the fixed wake loop"
#endif

#define NQ 2           /* channels = queues = submitters, one level */
#define NT (PER0 + PER1)
#define PERK(k) ((k) == 0 -> PER0 : PER1)
#define BASE(k) ((k) * PER0)
#define LAST (NT - 1)
#define NONE 255

/* the tasks are numbered by submitter: submitter k pushes BASE(k) ..
 * BASE(k)+PERK(k)-1 */
#define BLOCKER(t) ((t) < (W - 1) && (t) != LAST)

chan tok[W] = [1] of { bool };   /* worker.wake */
#if GOING
chan start[W] = [1] of { bool }; /* go e.loop(..., token) for worker i: only a worker
                                  * without a goroutine (at gone) receives it */
byte ist[W];                     /* worker.idle: CLAIMED, PARKED, ORPHANED */
bool alive[W];                   /* a goroutine carries worker i (for the assertions) */
#define CLAIMED 0
#define PARKED 1
#define ORPHANED 2
#endif
#if PRESTART == 1
bool started;                    /* engine.start ran: live is non-zero */
#define STARTED started
#else
#define STARTED 1
#endif
#if LAZY == 1
byte born = START;               /* e.born: workers created; target is W */
#define BORN born
#else
#define BORN W
#endif

/* FIFO k */
byte pushed[NQ];                 /* q.pushed: tasks published (atomic) */
byte popped[NQ];                 /* q.popped: tasks popped (under head only) */
bool bitSet[NQ];                 /* f.bitSet (atomic) */
bool lk[2 * NQ];                 /* lk[TAIL + k]: f.tail, held by the pusher (one
                                  * per FIFO here); lk[HEAD + k]: f.head */
#define TAIL 0
#define HEAD NQ

byte word;                       /* the level's bit word: bit i = queue i */
bool summary;                    /* the summary bit of the level */
bool waking;                     /* engine.waking */
byte stk[W];                     /* idle stack */
byte sp;
byte ran;                        /* tasks run */
bool lastRan;                    /* task LAST has run: blockers may return */
byte subs = NQ;                  /* submitters still running */
#if HANDOFF == 1
byte next[W];                    /* w.next: the task a waker polled for worker w, or NONE;
                                  * written by the waker that popped w before it
                                  * rouses w, read and cleared by w's goroutine */
#endif

#define BIT(k) ((word >> (k)) & 1)
#define EMPTY(k) (pushed[k] == popped[k])
#ifndef RULES
#define RULES 7        /* bit rules asserted at lock releases: 1 (a), 2 (b), 4 (c);
                        * fewer, e.g. 0, to see what breaking one leads to */
#endif
#if STALEBIT == 0 && NOBITSET == 0
#define CLEARABLE(k) (bitSet[k])  /* a Poll of the empty queue clears only if bitSet reads true */
#else
#define CLEARABLE(k) 1            /* ... or also if the bit reads set, or always (NOBITSET) */
#endif

/* Release FIFO k's lock side (TAIL or HEAD); if that leaves both locks free,
 * check the bit rule. Only holders of k's locks change k's bit, bitSet or
 * counters, so checking at each such release covers every moment with both
 * locks free. */
inline unlock(side, k) {
	lk[side + k] = false;
	assert(!(RULES & 1) || lk[TAIL + k] || lk[HEAD + k] || EMPTY(k) || BIT(k));  /* (a) contract */
	assert(!(RULES & 2) || lk[TAIL + k] || lk[HEAD + k] || !BIT(k) || !EMPTY(k) || CLEARABLE(k)); /* (b) no stale bit */
	assert(!(RULES & 4) || lk[TAIL + k] || lk[HEAD + k] || !bitSet[k] || BIT(k))  /* (c) bitSet true: the bit is set */
}

inline pop(i) {
	atomic {
		if
		:: sp > 0 -> sp--; i = stk[sp]; stk[sp] = 0
		:: else -> i = NONE
		fi
	}
}

#if GOING
/* go e.loop(newTaskContext(e, w), v) for worker i, which has no goroutine:
 * a second goroutine for a worker is an error */
inline startW(i, v) {
	assert(!alive[i] && len(start[i]) == 0);
	alive[i] = true;
	start[i]!v
}

/* the wake-up itself: a token sent to a worker without a goroutine is lost */
inline sendW(i, v) {
	assert(alive[i] && len(tok[i]) == 0);
	tok[i]!v
}
#endif

#if !GOING
/* pop a worker and send it a wake-up: one step (see close.pml) */
inline popSend(i, v) {
	atomic {
		pop(i);
		if
		:: i != NONE -> assert(len(tok[i]) == 0); tok[i]!v
		:: else -> skip
		fi
	}
}
#elif MUTANT != 10
/* pop a worker and rouse it: w.idle.Swap(claimed) == orphaned ? start a
 * goroutine : send the token. One step: between the pop and the swap only
 * the worker's own time-out touches w.idle, and it commutes with the pop
 * (see README) */
inline popSend(i, v) {
	atomic {
		pop(i);
		if
		:: i != NONE ->
			if
			:: ist[i] == ORPHANED -> ist[i] = CLAIMED; startW(i, v)
			:: else -> assert(ist[i] == PARKED); ist[i] = CLAIMED; sendW(i, v)
			fi
		:: else -> skip
		fi
	}
}
#else
/* mutant 10: rouse loads w.idle, then stores claimed and sends or starts:
 * a time-out between the two ends the goroutine the token is sent to (rs is
 * a local of every caller) */
inline popSend(i, v) {
	atomic {
		pop(i);
		if
		:: i != NONE -> rs = ist[i]                  /* w.idle.Load() */
		:: else -> skip
		fi
	}
	if
	:: i != NONE ->
		atomic {
			ist[i] = CLAIMED;                        /* w.idle.Store(claimed) */
			if
			:: rs == ORPHANED -> startW(i, v)
			:: else -> sendW(i, v)
			fi;
			rs = 0
		}
	:: else -> skip
	fi
}
#endif

#if LAZY == 1
/* engine.bear(v): create the next worker below target, if any (a CAS on
 * born), and start its goroutine with the token v; i = NONE if every worker
 * exists, or the pool has not started (live is 0) */
inline bear(i, v) {
	atomic {
		if
		:: STARTED && born < W -> i = born; born++; startW(i, v)
		:: else -> i = NONE
		fi
	}
}
#endif

#if WAKE == 0
inline wake(i, ok) {
	if
	:: sp == 0 -> skip
	:: else ->
		atomic { ok = !waking; waking = true }
		if
		:: ok ->
			popSend(i, true);
			if
			:: i == NONE -> waking = false
			:: else -> skip
			fi
		:: else -> skip
		fi
	fi;
	i = 0; ok = false
}
#else
inline wake(i, ok) {
	do
	:: if
		:: sp != 0                           /* !e.idle.Empty() */
		:: else ->
#if LAZY == 1 && MUTANT != 11
			if
			:: born < W                      /* || e.unborn(): a second load */
			:: else -> break
			fi
#else
			break
#endif
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
#if LAZY == 1
		bear(i, true);                       /* a worker not created yet is idle in effect */
		if
		:: i != NONE -> break
		:: else -> skip
		fi;
#endif
		waking = false;
		if
		:: summary -> skip
		:: else -> break
		fi;
		if
		:: !STARTED -> break                 /* live.Load() == 0: start looks again */
		:: else -> skip
		fi
	od;
	i = 0; ok = false
}
#endif

#if PARKWAKE == 0
/* engine.wakeAny as in park.go before ada9c37: a plain wake-up, never the token */
inline parkWake(i, ok) {
	popSend(i, false);
	i = 0
}
#else
/* the fix: the parker's wake-up carries the waking token when it is free, so
 * the woken worker chains a wake-up if it finds work (wake-ups skipped while
 * a waking worker found nothing are not collapsed into one); if the stack
 * emptied meanwhile, clear the token and fall back to wake() like wake()
 * itself does */
inline parkWake(i, ok) {
	atomic { ok = !waking; waking = true }   /* waking.CompareAndSwap(false, true) */
	popSend(i, ok);
	if
	:: i == NONE && ok ->
		waking = false;
		if
		:: summary -> wake(i, ok)
		:: else -> skip
		fi
	:: else -> skip
	fi;
	i = 0; ok = false
}
#endif

/* avail.Tidy: returns rep = repaired */
inline tidy(rep) {
	rep = false;
	if
	:: word != 0 -> skip                     /* !lv.empty(): return false */
	:: else ->
		summary = false;                     /* f.summary.And(^bit) */
#if MUTANT != 4
		if
		:: word == 0 -> skip                 /* lv.empty(): return false */
		:: else ->
			atomic { summary = true;         /* f.summary.Or(bit) */
			rep = true }
		fi
#endif
	fi
}

/* Bits.Set(0) = avail.Set on queue k, with FIFO k's lock side held; the
 * lock is released in the step of the last access. */
inline setBit(k, old, side) {
	atomic { old = word; word = word | (1 << k) }   /* word.Or */
	if
	:: old == 0 -> atomic { summary = true; unlock(side, k) }  /* summary.Or */
	:: else ->
#if SETSUM == 1
		/* the word had a bit: OR the summary only if it reads clear */
		atomic {
			old = summary;                   /* summary.Load */
			if
			:: old -> unlock(side, k)
			:: else -> skip
			fi
		}
		if
		:: !old -> atomic { summary = true; unlock(side, k) }  /* summary.Or */
		:: else -> skip
		fi
#else
		atomic { unlock(side, k) }
#endif
	fi;
	old = 0
}

/* Bits.Clear(0) = avail.Clear on queue q (head held; no release here):
 * word.And, Tidy if no other bit, e.wake() if Tidy repaired */
inline clearBit(q, old, rep, i, ok) {
	atomic { old = word; word = word & ~(1 << q) }   /* word.And */
	if
	:: (old & ~(1 << q)) == 0 ->             /* no other eligible bit: Tidy */
		tidy(rep);
#if MUTANT != 5
		if
		:: rep -> wake(i, ok)                /* a repair wakes (under head, as in Go) */
		:: else -> skip
		fi;
#endif
		rep = false
	:: else -> skip
	fi;
	old = 0
}

/* q.Len() under head: popped is the holder's, pushed one atomic load */
inline qlen(q, n) {
	n = pushed[q] - popped[q]
}

/* the clearing Poll's second look (for the mutants; the protocol's own is
 * written out in poll, where the unlock shares its last step): left != 0 if
 * the bit must be set back. q.Len() > 0, and with LOSTBIT || bitSet.Load():
 * a pusher stored bitSet true after this Poll stored false, and its Set may
 * have come before this Poll's Clear. Two loads, two steps. */
inline second(q, left) {
	qlen(q, left);
#if LOSTBIT == 1 && NOBITSET == 0
	if
	:: left == 0 -> left = bitSet[q]
	:: else -> skip
	fi
#endif
}

/* the wake-up after the second look set the bit back: while the bit (and
 * maybe the summary) read clear, a worker may have parked */
inline backWake(i, ok) {
#if BACKWAKE == 1
	wake(i, ok)
#else
	skip
#endif
}

/* FIFO.Poll on queue q: t = the task popped or NONE */
inline poll(q, t, left, bs, old, rep, i, ok) {
	atomic {                                 /* head.Lock; q.Pop: one load of pushed */
		!lk[HEAD + q] -> lk[HEAD + q] = true;
		if
		:: pushed[q] != popped[q] ->
			t = BASE(q) + popped[q];
			popped[q]++;                     /* popped.Store: head side only */
			left = pushed[q] - popped[q]
		:: else -> t = NONE; left = 0
		fi;
		if
		:: left != 0 -> unlock(HEAD, q)
		:: else -> skip
		fi
	}
	if
	:: left == 0 ->
#if NOBITSET == 1
		bs = true;                           /* no bitSet: clear whenever left == 0 */
#else
		atomic {
			bs = bitSet[q];                  /* bitSet.Load() */
#if STALEBIT == 0
			if
			:: !bs -> unlock(HEAD, q)
			:: else -> skip
			fi
#endif
		}
#if STALEBIT == 1
		/* the fix: || the queue's own bit reads set (a bit whose bitSet a
		 * clearing Poll took before its pusher's Set) */
		if
		:: !bs ->
			atomic {
				bs = BIT(q);                 /* word.Load */
				if
				:: !bs -> unlock(HEAD, q)
				:: else -> skip
				fi
			}
		:: else -> skip
		fi;
#endif
#endif
		if
		:: bs ->
			bs = false;
#if MUTANT == 6
			bitSet[q] = false;               /* bitSet.Store(false) */
			clearBit(q, old, rep, i, ok);
			atomic { unlock(HEAD, q) }       /* no second look */
#elif MUTANT == 7
			bitSet[q] = false;
			second(q, left);                 /* the second look first */
			clearBit(q, old, rep, i, ok);
			if
			:: left != 0 ->
				left = 0; bitSet[q] = true; setBit(q, old, HEAD);
				backWake(i, ok)
			:: else -> atomic { unlock(HEAD, q) }
			fi
#elif MUTANT == 8
			clearBit(q, old, rep, i, ok);
			second(q, left);
			if
			:: left != 0 -> left = 0; setBit(q, old, HEAD); backWake(i, ok)
			:: else -> atomic { bitSet[q] = false; unlock(HEAD, q) }
			fi
#else
#if NOBITSET == 0
			bitSet[q] = false;               /* bitSet.Store(false) */
#endif
			clearBit(q, old, rep, i, ok);    /* bits.Clear(0) */
			atomic {
				qlen(q, left);               /* q.Len() > 0: look again */
#if LOSTBIT == 0 || NOBITSET == 1
				if
				:: left == 0 -> unlock(HEAD, q)
				:: else -> skip
				fi
#endif
			}
#if LOSTBIT == 1 && NOBITSET == 0
			if
			:: left == 0 ->                  /* the fix: || bitSet.Load() */
				atomic {
					left = bitSet[q];
					if
					:: left == 0 -> unlock(HEAD, q)
					:: else -> skip
					fi
				}
			:: else -> skip
			fi;
#endif
			if
			:: left != 0 ->
				left = 0;
#if NOBITSET == 0
				bitSet[q] = true;            /* bitSet.Store(true) */
#endif
				setBit(q, old, HEAD);        /* bits.Set(0); unlock */
				backWake(i, ok)
			:: else -> skip
			fi
#endif
		:: else -> skip
		fi
	:: else -> skip
	fi;
	left = 0
}

#if HANDOFF == 1
/* worker.find run by a waker for the worker it popped: the summary, then
 * pollLevel (Field.Next, Poll) as the worker's own find, with Tidy and its
 * repair wake-up (i2, ok2: the waker holds the token, so such a nested
 * wake-up returns at once). t = the task got, or NONE when the summary
 * reads empty. */
inline handFind(q, t, left, bs, old, rep, i2, ok2, s, n, w) {
	do
	:: s = summary;                          /* e.field.Summary() */
		if
		:: !s -> t = NONE; break
		:: else -> skip
		fi;
		s = false; t = NONE; n = 0;
		do                                   /* pollLevel */
		:: n < NQ ->
			w = word;
			if
			:: w == 0 -> break
			:: w & 1 -> q = 0
			:: w & 2 -> q = 1
			fi;
			w = 0;
			poll(q, t, left, bs, old, rep, i2, ok2);
			q = 0;
			if
			:: t != NONE -> break
			:: else -> n++
			fi
		:: else -> break
		od;
		n = 0;
		if
		:: t != NONE -> break
		:: else -> skip
		fi;
		tidy(rep);
		if
		:: rep -> wake(i2, ok2)
		:: else -> skip
		fi;
		rep = false
	od
}

/* rouse worker i, popped (nb false) or just reserved by bear (nb true),
 * with the waking token v (false: a burst's hand-over), after the hand-off: w.idle.Swap(claimed) at this
 * point, so a parked goroutine that timed out between the pop and here
 * (idle.CompareAndSwap(parked, orphaned) won) gets a new goroutine */
inline handRouse(i, nb, v) {
#if !GOING
	atomic { assert(len(tok[i]) == 0); tok[i]!v }
#elif MUTANT == 17
	atomic {                                 /* rs: w.idle as loaded at the pop */
		ist[i] = CLAIMED;
		if
		:: nb || rs == ORPHANED -> startW(i, v)
		:: else -> sendW(i, v)
		fi;
		rs = 0
	}
#else
	atomic {
		if
		:: nb -> startW(i, v)             /* bear's goroutine: go e.loop(..., true) */
		:: !nb && ist[i] == ORPHANED -> ist[i] = CLAIMED; startW(i, v)
		:: !nb && ist[i] != ORPHANED -> assert(ist[i] == PARKED); ist[i] = CLAIMED; sendW(i, v)
		fi
	}
#endif
}

#if BURST == 1
/* engine.rouseIdle: the token is held by another waker; pop an idle worker
 * (or, LAZY, reserve a new one), find a task for it and rouse it without
 * the token. None idle: nothing to do (every worker re-reads the summary
 * before it parks) */
inline hburst(i, nb, q, t, left, bs, old, rep, i2, ok2, s, n, w) {
	pop(i);
#if LAZY == 1
	if
	:: i == NONE ->
		atomic {
			if
			:: STARTED && born < W -> i = born; born++; nb = true
			:: else -> skip
			fi
		}
	:: else -> skip
	fi;
#endif
	if
	:: i != NONE ->
		handFind(q, t, left, bs, old, rep, i2, ok2, s, n, w);
#if MUTANT == 18
		if
		:: t == NONE -> skip                 /* found nothing: the popped worker is never woken */
		:: else -> next[i] = t; handRouse(i, nb, false)
		fi;
#else
		next[i] = t;
		handRouse(i, nb, false);
#endif
		t = 0
	:: else -> skip
	fi;
	i = 0; nb = false
}
#endif

/* Bits.Wake with the hand-off: engine.wake's loop up to the pop; then find
 * for the worker popped (or born), store next[i], rouse it with the token */
inline hwake(i, ok, nb, q, t, left, bs, old, rep, i2, ok2, s, n, w) {
	do
	:: if
		:: sp != 0                           /* !e.idle.Empty() */
		:: else ->
#if LAZY == 1
			if
			:: born < W                      /* || e.unborn() */
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
			:: hburst(i, nb, q, t, left, bs, old, rep, i2, ok2, s, n, w)
			:: skip                          /* as many awake as processors: no hand-over */
			fi;
#endif
			break
		:: else -> skip
		fi;
#if MUTANT == 15
		handFind(q, t, left, bs, old, rep, i2, ok2, s, n, w);   /* polls first */
#endif
		atomic {
			pop(i);
#if MUTANT == 17
			if
			:: i != NONE -> rs = ist[i]      /* w.idle.Load() at the pop */
			:: else -> skip
			fi
#endif
		}
#if LAZY == 1
		if
		:: i == NONE ->
			atomic {                         /* bear: born's CAS; its goroutine starts in handRouse */
				if
				:: STARTED && born < W -> i = born; born++; nb = true
				:: else -> skip
				fi
			}
		:: else -> skip
		fi;
#endif
		if
		:: i != NONE ->
#if MUTANT != 15
			handFind(q, t, left, bs, old, rep, i2, ok2, s, n, w);
#endif
#if MUTANT == 16
			handRouse(i, nb, true);
			next[i] = t;                     /* w.next stored after the wake-up */
#else
			next[i] = t;                     /* w.next = t (nil: NONE) */
			handRouse(i, nb, true);
#endif
			t = 0;
			break
		:: else -> skip
		fi;
#if MUTANT == 15
		t = 0;                               /* the task polled is held by nobody: lost */
#endif
		waking = false;
		if
		:: summary -> skip
		:: else -> break
		fi;
		if
		:: !STARTED -> break
		:: else -> skip
		fi
	od;
	i = 0; ok = false; nb = false
}
#endif

proctype Submitter(byte k) {
	byte n, old, i;
	bool ok, bs;
#if HANDOFF == 1
	byte q, t, left, i2, w, hn;
	bool nb, rep, ok2, s;
#endif
#if MUTANT == 10 || MUTANT == 17
	byte rs;
#endif
	do
	:: n < PERK(k) ->
#if MUTANT == 9
		atomic {                             /* tail.Lock; q.Write; bitSet.Load() */
			!lk[TAIL + k] -> lk[TAIL + k] = true;
			bs = bitSet[k]
		}
		if
		:: !bs ->
			bitSet[k] = true;
			atomic { old = word; word = word | (1 << k) };
			if
			:: old == 0 || !summary -> summary = true
			:: else -> skip
			fi
		:: else -> skip
		fi;
		atomic { pushed[k]++; unlock(TAIL, k) }   /* q.Publish; unlock */
		old = 0;
#else
progress_push:
		atomic {                             /* tail.Lock; q.Push: write, pushed.Store */
			!lk[TAIL + k] -> lk[TAIL + k] = true;
			pushed[k]++
		}
#if NOBITSET == 1
		setBit(k, old, TAIL);                /* no bitSet: Bits.Set(0) after every push */
#else
		atomic {                             /* setBitLocked: bitSet.Load() */
			bs = bitSet[k];
			if
			:: bs -> unlock(TAIL, k)
			:: else -> skip
			fi
		}
		if
		:: !bs ->
			bitSet[k] = true;                /* bitSet.Store(true) */
			setBit(k, old, TAIL)             /* bits.Set(0); unlock */
		:: else -> skip
		fi;
#endif
#endif
		bs = false;
#if HANDOFF == 1
		hwake(i, ok, nb, q, t, left, bs, old, rep, i2, ok2, s, hn, w);  /* Bits.Wake(1): hand-off */
#else
		wake(i, ok);                         /* Bits.Wake(1) after unlocking */
#endif
		n++
	:: else -> break
	od;
	subs--
}

proctype Worker(byte me) {
	bool wk, s, rep, ok, bs;
	byte w, q, t, n, i, left, old;
#if MUTANT == 10
	byte rs;
#endif
#if LAZY == 1
	if
	:: me >= START -> goto gone              /* not created yet */
	:: else -> skip
	fi;
#endif
loop:
#if HANDOFF == 1
	/* a task handed over by the waker that woke us: take it instead of
	 * searching (next is ours since the wake-up) */
	if
	:: next[me] != NONE ->
		t = next[me]; next[me] = NONE;
#if MUTANT == 14
		if
		:: wk -> wk = false; waking = false  /* no re-read of the summary */
		:: else -> skip
		fi;
		goto run_task;
#else
		goto handed;
#endif
	:: else -> skip
	fi;
#endif
	/* find */
	s = summary;
	if
	:: !s -> t = NONE; goto found
	:: else -> skip
	fi;
	n = 0;
	do                                       /* pollLevel */
	:: n < NQ ->
		w = word;                            /* Field.Next: one load */
		if
		:: w == 0 -> break
		:: w & 1 -> q = 0
		:: w & 2 -> q = 1
		fi;
		w = 0;
		poll(q, t, left, bs, old, rep, i, ok);
		q = 0;
		if
		:: t != NONE -> goto found
		:: else -> n++
		fi
	:: else -> break
	od;
	n = 0;
	tidy(rep);                               /* the level looked busy but was not */
#if TIDYWAKE == 1
	/* the fix: a repair in find's Tidy wakes a worker too, as Bits.Clear's
	 * does; while the summary read zero, a woken worker may have parked */
	if
	:: rep -> wake(i, ok)
	:: else -> skip
	fi;
#endif
	rep = false;
	goto loop;
found:
	s = false; n = 0;
	if
	:: t == NONE ->
#if MUTANT != 2
		if
		:: wk -> wk = false; waking = false
		:: else -> skip
		fi;
#endif
		/* park */
#if GOING
		atomic { ist[me] = PARKED; stk[sp] = me; sp++ }  /* goIdle(parked): idle.Store, Push */
#else
		atomic { stk[sp] = me; sp++ }        /* idle.Push */
#endif
#if MUTANT != 1
		if
		:: summary -> parkWake(i, ok)
		:: else -> skip
		fi;
#endif
#if MUTANT == 2
		if
		:: wk -> wk = false; waking = false
		:: else -> skip
		fi;
#endif
end_park:
#if IDLE == 1
		if
		:: tok[me]?wk
#if MUTANT == 12
		:: atomic { ist[me] = ORPHANED; alive[me] = false }  /* timed out: a plain store */
			goto gone
#else
		:: atomic {                          /* timed out: idle.CompareAndSwap(parked, orphaned) */
				ist[me] == PARKED -> ist[me] = ORPHANED; alive[me] = false
			}
			goto gone                        /* won: the goroutine ends; lost: keep waiting */
#endif
		fi;
#else
		tok[me]?wk;
#endif
		goto loop
	:: else -> skip
	fi;
#if HANDOFF == 1
handed:
#endif
	if
	:: wk ->
		wk = false;
#if MUTANT == 3
		s = summary;
		waking = false;
		if
		:: s -> s = false; wake(i, ok)
		:: else -> skip
		fi
#else
		waking = false;
		if
		:: summary -> wake(i, ok)            /* pass the wake-up on */
		:: else -> skip
		fi
#endif
	:: else -> skip
	fi;
	/* run t */
#if HANDOFF == 1
run_task:
#endif
	if
	:: BLOCKER(t) -> lastRan                 /* waits for the last task */
	:: else -> skip
	fi;
progress_run:
	atomic {
		assert(ran < NT);                    /* no task runs twice */
		ran++;
		if
		:: t == LAST -> lastRan = true
		:: else -> skip
		fi
	}
	t = 0;
	goto loop;
#if GOING
gone:
	/* no goroutine: unborn, or an orphan on the idle stack; whoever pops it
	 * (or bear) starts a new one, which starts its loop afresh */
	t = 0;
end_gone:
	start[me]?wk;
	goto loop
#endif
}

#if PRESTART == 1
/* engine.start: live 0 -> 1, then the tasks queued before it */
proctype Starter() {
	byte i;
	bool ok;
#if MUTANT == 10
	byte rs;
#endif
	started = true;
#if MUTANT != 13
	if
	:: summary -> wake(i, ok)                /* e.field.Summary() != 0: e.wake() */
	:: else -> skip
	fi
#endif
}
#endif

proctype Observer() {
	byte k;
	timeout ->                               /* nothing else can move */
	assert(subs == 0);
	assert(ran == NT);                       /* every submitted task ran */
	assert(word == 0 && !summary);           /* no bit left, not even a spurious summary */
	assert(!waking);                         /* the throttle is not stuck */
	assert(sp == BORN);                      /* every worker created is idle */
	do
	:: k < NQ ->
		assert(!lk[TAIL + k] && !lk[HEAD + k] && EMPTY(k));
		assert(!(RULES & 4) || !bitSet[k]);  /* (c): the bit is clear */
		k++
	:: else -> break
	od;
	k = 0;
	do
	:: k < W ->
		assert(len(tok[k]) == 0);            /* no wake-up left unread */
#if HANDOFF == 1
		assert(next[k] == NONE);             /* no handed task left unrun */
#endif
#if GOING
		assert(len(start[k]) == 0);
		assert(k >= BORN || ist[k] != CLAIMED);  /* on the stack: parked or orphaned */
		assert(k < BORN || !alive[k]);       /* unborn */
#endif
		k++
	:: else -> break
	od
}

init {
	byte k;
	atomic {
		k = 0;
		do
		:: k < W ->
#if GOING
			alive[k] = (k < BORN);
#endif
#if HANDOFF == 1
			next[k] = NONE;
#endif
			run Worker(k); k++
		:: else -> break
		od;
		k = 0;
		do
		:: k < NQ -> run Submitter(k); k++
		:: else -> break
		od;
#if PRESTART == 1
		run Starter();
#endif
		run Observer()
	}
}
