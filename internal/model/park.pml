/*
 * park.pml: the sleep/wake protocol of smartpool (park.go) with the waking
 * throttle, over the availability-bit protocol (internal/avail), checked
 * with spin. No Close here: close.pml covers it.
 *
 *   Worker(me)    worker.loop, worker.find/pollLevel, worker.park
 *   Submitter(k)  FIFO.Push on channel k: lock, queue, Bits.Set, unlock,
 *                 Bits.Wake -> engine.wake
 *   Observer      fires only when nothing else can move (spin's timeout):
 *                 the system is quiescent; checks no lost wake-up
 *
 * One level with NQ = 2 one-queue channels, whose bits share the level's one
 * word (avail.Field: word, summary). Set, Clear and Tidy are modelled access
 * by access (each Go atomic is sequentially consistent and one step), so the
 * Clear/Set race and the repair are explored. Taking the channel lock, the
 * queue operation and the first bit access share a step, and the release
 * shares the last bit access's step (Lipton movers: see README).
 *
 * Blocking tasks: with W workers, tasks 0 .. W-2 (the first ones submitted)
 * do not return until the last task has run, as a task waiting for another
 * task's result would. W-1 workers may be held by them, so the remaining
 * worker must be woken for the rest: a parked worker beside queued work with
 * no wake-up on its way is a deadlock. Properties checked:
 *   - no invalid end state (deadlock): the only valid end is every worker
 *     parked at end_park after the Observer passed;
 *   - Observer (at quiescence): every task ran, word == 0, summary == 0,
 *     waking is clear, every worker is on the idle stack, no lock held;
 *   - assertions: a worker never gets a second wake-up token.
 *
 * Mutants (-DMUTANT=n); each must make verification fail:
 *   1  park does not re-check the summary after pushing itself
 *   2  a waking worker that found nothing clears waking only after park's
 *      re-check (just before it blocks)
 *   3  a waking worker that found work re-reads the summary before it clears
 *      waking (the chained wake-up can be lost)
 *   4  avail.Tidy without the repair (no re-read after clearing the summary)
 *   5  the repair does not wake a worker (Bits.Clear ignores "repaired")
 *
 * Protocol switches (1 = the fix this model proposes, the default; 0 = the Go
 * code as of this model's writing; each 0 loses a wake-up, see README "Bugs
 * found"):
 *   WAKE      engine.wake re-checks after a failed Pop
 *   PARKWAKE  park's re-check wake-up carries the waking token when free
 *   TIDYWAKE  worker.find wakes a worker when its Tidy repaired the summary
 */

#ifndef W
#define W 2            /* workers */
#endif
#ifndef PER
#define PER 2          /* tasks per submitter */
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

#define NQ 2           /* channels = queues = submitters, one level */
#define NT (NQ * PER)
#define LAST (NT - 1)
#define NONE 255

/* the tasks are numbered by submitter: submitter k pushes k*PER .. k*PER+PER-1 */
#define BLOCKER(t) ((t) < (W - 1) && (t) != LAST)

chan Q[NQ] = [PER] of { byte };
chan tok[W] = [1] of { bool };   /* worker.wake */
bool lk[NQ];                     /* channel locks (FIFO.mu) */

byte word;                       /* the level's bit word: bit i = queue i */
bool summary;                    /* the summary bit of the level */
bool waking;                     /* engine.waking */
byte stk[W];                     /* idle stack */
byte sp;
byte ran;                        /* tasks run */
bool lastRan;                    /* task LAST has run: blockers may return */
byte subs = NQ;                  /* submitters still running */

inline pop(i) {
	atomic {
		if
		:: sp > 0 -> sp--; i = stk[sp]; stk[sp] = 0
		:: else -> i = NONE
		fi
	}
}

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
		:: summary -> skip
		:: else -> break
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
			summary = true;                  /* f.summary.Or(bit) */
			rep = true
		fi
#endif
	fi
}

/* The channel lock is a right mover when taken and a left mover when
 * released, and the queue is touched only under it, so "lock, queue
 * operation, first bit operation" is one step, and the release shares the
 * step of the last bit operation before it. */

proctype Submitter(byte k) {
	byte n, old, i;
	bool ok;
	do
	:: n < PER ->
		atomic {                             /* FIFO.push */
			!lk[k] -> lk[k] = true;
			Q[k]!(k * PER + n);
			if
			:: len(Q[k]) == 1 ->             /* Bits.Set = avail.Set: */
				old = word; word = word | (1 << k)   /* word.Or */
			:: else -> old = 1
			fi;
			if
			:: old != 0 -> lk[k] = false     /* unlock */
			:: else -> skip
			fi
		}
		if
		:: old == 0 -> atomic { summary = true; lk[k] = false }  /* summary.Or; unlock */
		:: else -> skip
		fi;
		old = 0;
		wake(i, ok);                         /* Bits.Wake(1) after unlocking */
		n++
	:: else -> break
	od;
	subs--
}

proctype Worker(byte me) {
	bool wk, s, rep, ok;
	byte w, q, t, n, old, i;
loop:
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
		atomic {                             /* FIFO.Poll */
			!lk[q] -> lk[q] = true;
			if
			:: len(Q[q]) > 0 ->
				Q[q]?t;
				if
				:: len(Q[q]) == 0 ->         /* Bits.Clear = avail.Clear: */
					old = word; word = word & ~(1 << q)   /* word.And */
				:: else -> old = 0
				fi
			:: else -> t = NONE; old = 0
			fi;
			if
			:: old != (1 << q) -> lk[q] = false   /* unlock: no Tidy follows */
			:: else -> skip
			fi
		}
		if
		:: old == (1 << q) ->                /* the word went to zero: Tidy */
			tidy(rep);
#if MUTANT != 5
			if
			:: rep -> wake(i, ok)            /* Bits.Clear: a repair wakes */
			:: else -> skip
			fi;
#endif
			rep = false;
			lk[q] = false                    /* unlock */
		:: else -> skip
		fi;
		old = 0; q = 0;
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
		atomic { stk[sp] = me; sp++ }        /* idle.Push */
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
		tok[me]?wk;
		goto loop
	:: else -> skip
	fi;
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
	if
	:: BLOCKER(t) -> lastRan                 /* waits for the last task */
	:: else -> skip
	fi;
	atomic {
		ran++;
		if
		:: t == LAST -> lastRan = true
		:: else -> skip
		fi
	}
	t = 0;
	goto loop
}

proctype Observer() {
	byte k;
	timeout ->                               /* nothing else can move */
	assert(subs == 0);
	assert(ran == NT);                       /* every submitted task ran */
	assert(word == 0 && !summary);           /* no bit left, not even a spurious summary */
	assert(!waking);                         /* the throttle is not stuck */
	assert(sp == W);                         /* every worker parked */
	do
	:: k < NQ -> assert(!lk[k] && len(Q[k]) == 0); k++
	:: else -> break
	od
}

init {
	byte k;
	atomic {
		k = 0;
		do
		:: k < W -> run Worker(k); k++
		:: else -> break
		od;
		k = 0;
		do
		:: k < NQ -> run Submitter(k); k++
		:: else -> break
		od;
		run Observer()
	}
}
