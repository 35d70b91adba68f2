/*
 * pause.pml: pausing and resuming a channel (pause.go) over the
 * availability bitfield's blocked bits (internal/avail: Block, Unblock,
 * Tidy, Set and Clear with blocked queues; limit.go's block and unblock for
 * an uncapped channel), the sleep/wake protocol (park.go) and Close's
 * resumeAll (engine.startClose), checked with spin.
 *
 *   Worker(me)    worker.loop without yields or buffers: worker.find (the
 *                 summary, Next, the poll, Tidy and its repair wake-up),
 *                 the waking token, the drop rule, worker.park (push, the
 *                 re-check of the summary and closing, wakeAny); with
 *                 CLOSE=1 it exits when closing and it found nothing (a
 *                 waking worker re-checks first)
 *   Submitter(k)  engine.submit + a one-lock channel's Push on queue k:
 *                 under the channel's lock the stopped check, the push and,
 *                 if the queue was empty, avail.Set; then Bits.Wake
 *   Pauser        Pool.Pause(0) then (RESUME) Pool.Resume(0), PAUSES times:
 *                 pause.mu, the stopped check under it, paused, engine.gate
 *                 -> block (Field.Block: blocked.Or, Tidy; a repair wakes)
 *                 or unblock (Blocked && Unblock: blocked.And, the word's
 *                 load, summary.Or; then wake)
 *   Closer        (CLOSE=1) engine.startClose: stopped, resumeAll (under
 *                 pause.mu: if paused, clear it and unblock), each channel's
 *                 Close(drop) (a DROP channel's queue emptied, its bit
 *                 cleared), closing, wakeAll
 *   Observer      (CLOSE=0) fires when nothing else can move (timeout)
 *   Yielder       (REENTER=1) a task of channel 0 whose wait returns:
 *                 taskContext.reenter through followup channel 0 (itself):
 *                 takeIdle (hasWork, idle.Empty, the paused flag, the pop;
 *                 the worker borrowed, its goroutine parked, given back by
 *                 goIdle(parked): push and re-check) or Requeue (push, Set,
 *                 Bits.Wake)
 *
 * HANDOFF=1 (default 0): a submit's or a requeue's Bits.Wake hands a task
 * over (park.go, "Waking with a task"): the waker, holding the token, pops a
 * worker, runs worker.handOver for it (unless stopped: one pass of find,
 * with Next over the word and the blocked word, the poll, Clear or Tidy and
 * their repair), leaves the task in next[w] (with hst[w]: stopped read
 * false after the poll) and then sends the token; the worker runs a handed
 * task first, as if its own search had found it (a started one is spared by
 * the drop rule). The Go code's find loops until the summary reads empty;
 * the model's hand-over makes one pass, and the woken worker searches
 * itself after a miss.
 *
 * One level, NQ = 2 one-queue channels whose bits share the level's word:
 * channel 0 is the one paused, COC0 says whether it completes on close (1,
 * the default) or drops (0); channel 1 is never paused and drops (COC1=0).
 * Submitter k pushes PERk tasks (PER0 2, PER1 1 by default; PER1=0 leaves
 * channel 1 out: no submitter, no Close of it). Every atomic
 * of the Go code (word Or/And/Load, blocked Or/And/Load, summary
 * Or/And/Load, waking CAS/Store) is one step; a channel's lock is held from
 * its push or poll to the end of its Set or Clear, as the channels do.
 * The blocked bits of an uncapped channel are written only by Pause,
 * Resume and resumeAll, under pause.mu (capped channels' gate, reserve
 * and release are not modelled: for them the block is a hint and reserve
 * the guard, limit.go).
 *
 * Checked:
 *   - CLOSE=0, at quiescence (Observer): no lost wake-up: a queue that
 *     holds tasks is blocked (its channel is paused); so after Resume every
 *     task ran, with every worker asleep; the summary shows every
 *     eligible queue (it may be spuriously set: the next worker to look
 *     tidies it); waking is clear, every worker is parked, no wake-up
 *     unread, no lock held;
 *   - CLOSE=1, once every process ended (init): every accepted task of a
 *     COC channel ran exactly once (a paused one too: Close resumed it),
 *     every accepted task of a DROP channel ran or was dropped exactly once,
 *     the queues and the idle stack are empty, no channel is left paused;
 *     no invalid end state (a parked worker at the end is a hang of Close);
 *   - always: a worker never chooses the paused queue once Pause returned
 *     and before Resume began (ghost pdone), nor does a hand-over search on
 *     a worker's behalf (HANDOFF); a re-entering task never starts on a
 *     borrowed worker while the pause in force when its takeIdle began
 *     still holds (ghosts pgen, g: one that read paused false before Pause
 *     returned may, as a worker that chose the queue before); and no worker
 *     gets a second wake-up token;
 *   - REENTER, at quiescence: the re-entered task ran (queued while
 *     paused, it ran after Resume: the ledger counts it in channel 0);
 *   - -DNP (pan -l): no non-progress cycle: workers do not spin while the
 *     paused queue holds tasks (the summary ignores blocked queues).
 *
 * Mutants (-DMUTANT=n); each must make verification fail:
 *   1  Resume does not wake a worker (unblock ignores Unblock's hasWork):
 *      the tasks queued while paused wait with every worker asleep
 *   2  Close does not resume paused channels (no resumeAll): the workers
 *      find the summary clear and exit, a paused COC channel's tasks never
 *      run
 *   3  Pause reads stopped before it takes pause.mu: Close's resumeAll can
 *      run in between, and the pause sticks after Close
 *   4  avail's level.empty ignores the blocked bits (Tidy never clears a
 *      summary bit a blocked queue holds up): workers spin in find while a
 *      paused queue holds tasks (a livelock: check with -DNP)
 *   5  (HANDOFF) the hand-over's search ignores the blocked bits: a submit
 *      to the unpaused channel wakes the worker with the paused channel's
 *      task
 *   6  (REENTER) takeIdle does not check the paused flag: the re-entering
 *      task borrows the idle worker and runs while its channel is paused
 *
 * RATE=1 (default 0): channel 0 also has a start rate (rate.go), burst
 * BURST (default 1): tk is its bucket's tokens (TK0 at the start, a full
 * bucket by default; ZERO=1: a rate of 0, no
 * token until the Rater raises it), gen its bucket's generation (SetRate
 * stores a new bucket), armed its due time (chanInfo.due) for the pool's
 * rate timer. A worker that chose queue 0 runs engine.token before it
 * polls: the bucket's load (gen, rate0), then, unless stopped, the take
 * (tk); without a token it blocks queue 0 (Field.Block, a repair wakes),
 * then re-reads stopped (Close started: rateOpen, under pause.mu, unless
 * paused), the bucket (changed: arm now) and, at its take's time, the
 * tokens (bucket.has: a refund since the take, rfs, and a token: rateOpen),
 * else arms the timer unless the rate is 0, and searches again; a poll
 * that finds the queue empty gives the token back (Engine.refund) and, if
 * queue 0 is blocked, runs rateOpen.
 *   Timer         (RATE=1) rateTimer.fire: armed -> a token is due (tk,
 *                 unless the rate is 0), then rateOpen: under pause.mu,
 *                 unblock unless paused; it ends when Close closed it.
 *                 SLOW=1: it fires only when nothing else can move (the
 *                 next token is due after everything else settled)
 *   Rater         (SETRATE=1) Pool.SetRate raising the rate of 0: under
 *                 pause.mu, the stopped check, the new bucket (gen, rate0;
 *                 the tokens kept: none), then gate (unblock unless paused)
 * The Closer's resumeAll unblocks the rated channel too (resumeChannel)
 * and then closes the timer. Checked with RATE: at quiescence, a queue 0
 * holding tasks is paused or at a rate of 0 (no task waits for a token
 * that no timer will bring); with CLOSE, Close drains or drops as without
 * a rate and ends (a hang waiting for a token is an invalid end state);
 * the pause guard above holds with the timer's unblocks. Mutants:
 *   7  (RATE) the blocker arms the timer before it blocks: a firing in
 *      between unblocks nothing, and the queue stays blocked for good
 *   8  (SETRATE) the blocker does not re-read the bucket after its block:
 *      a SetRate that unblocked before it is lost, and the raised rate
 *      never starts the queued tasks
 *   9  (RATE) rateOpen ignores the paused flag: the timer unblocks a
 *      paused channel and a worker takes its task
 *   10 (RATE, CLOSE) the blocker does not re-read stopped after its
 *      block: Close's unblock came before it, the timer is closed, and
 *      Close waits for the queued tasks for ever
 *   11 (RATE, CLOSE) resumeAll unblocks only paused channels: a channel
 *      blocked for a token before Close is never reopened
 * With SLOW, at each quiescence before the timer fires: no token sits in
 * the bucket while queue 0 holds tasks, blocked and not paused (a token
 * given back must not wait behind a block for the next one's timer).
 *   12 (SLOW) a refund does not reopen the channel: a worker that blocked
 *      it while another held the token it gives back leaves the token
 *      unused until the timer fires
 *   13 (SLOW) the blocker does not re-read the tokens after its block: a
 *      refund that looked before the block saw the channel open
 * The hand-over's search (HANDOFF) takes tokens through the same
 * pollLevel in the Go code; not modelled with RATE.
 *
 * Not modelled: capped channels (SetCap, a cap of 0: gate sets maxRunning,
 * reserve is the guard, limit.go), run buffers, Close with a re-entering
 * task (close.pml has the close accounting of yields).
 */

#ifndef W
#define W 2
#endif
#ifndef PER0
#define PER0 2
#endif
#ifndef PER1
#define PER1 1
#endif
#ifndef COC0
#define COC0 1         /* the paused channel completes on close */
#endif
#ifndef COC1
#define COC1 0
#endif
#ifndef CLOSE
#define CLOSE 0        /* 1: the Closer runs */
#endif
#ifndef RESUME
#define RESUME 2       /* 1: the Pauser resumes after each Pause; 0: never; 2: either */
#endif
#ifndef PAUSES
#define PAUSES 1       /* pause (and resume) rounds */
#endif
#ifndef HANDOFF
#define HANDOFF 0      /* 1: a submit's wake-up hands a task to the worker it pops (handOver) */
#endif
#ifndef REENTER
#define REENTER 0      /* 1: a yielded task of channel 0 re-enters through channel 0 (takeIdle) */
#endif
#ifndef MUTANT
#define MUTANT 0
#endif
#ifndef RATE
#define RATE 0         /* 1: channel 0 has a start rate, burst BURST (rate.go) */
#endif
#ifndef BURST
#define BURST 1        /* RATE: the bucket's burst */
#endif
#ifndef TK0
#define TK0 BURST      /* RATE: tokens at the start (a full bucket) */
#endif
#ifndef ZERO
#define ZERO 0         /* RATE: channel 0 starts at a rate of 0 */
#endif
#ifndef SETRATE
#define SETRATE 0      /* RATE: the Rater raises the rate (from ZERO) */
#endif
#ifndef SLOW
#define SLOW 0         /* RATE: the timer fires only once all else settled */
#endif
#if RATE == 1 && (HANDOFF == 1 || REENTER == 1)
#error "RATE models the workers' search only"
#endif
#if SETRATE == 1 && RATE == 0
#error "SETRATE needs RATE=1"
#endif
#if SLOW == 1 && (RATE == 0 || CLOSE == 1)
#error "SLOW needs RATE=1 and CLOSE=0"
#endif
#if REENTER == 1 && CLOSE == 1
#error "REENTER needs CLOSE=0: the close accounting of yields is close.pml's"
#endif
#if MUTANT == 5 && HANDOFF == 0
#error "mutant 5 needs HANDOFF=1"
#endif
#if MUTANT == 6 && REENTER == 0
#error "mutant 6 needs REENTER=1"
#endif

#define NQ 2
#define NONE 255
#define COC(k) ((k) == 0 -> COC0 : COC1)
#define PERK(k) ((k) == 0 -> PER0 : PER1)
#define BIT(k) (1 << (k))

chan tok[W] = [1] of { bool };  /* worker.wake: true = the waking token */

byte cnt[NQ];                   /* tasks queued */
bool lk[NQ];                    /* the channel's lock */
byte acc[NQ];                   /* tasks accepted (pushed; the Yielder's task too) */
byte ran[NQ];                   /* tasks run */
byte drp[NQ];                   /* tasks dropped (Close(drop), or the drop rule) */
byte word;                      /* the level's word: bit k = queue k has work */
byte blk;                       /* the level's blocked word */
bool summary;                   /* the level's summary bit */
bool waking, stopped, closing;
bool paused;                    /* chanPause.paused of channel 0 */
bool pmu;                       /* chanPause.mu of channel 0 */
bool pdone;                     /* ghost: a Pause returned and no Resume began since */
#if RATE == 1
byte tk = TK0 * (1 - ZERO);     /* the bucket's tokens */
byte rfs;                       /* refunds so far: what a blocker's re-read at its take's time sees */
bool rate0 = ZERO;              /* the bucket's rate is 0: no refill */
byte gen;                       /* the bucket's generation: SetRate stores a new one */
bool armed;                     /* chanInfo.due set: the rate timer will fire for it */
bool tclosed;                   /* rateTimer.closed */
#endif
#if SETRATE == 1
bool rater = true;              /* the Rater is running */
#endif
byte pgen;                      /* ghost: Pauses returned so far */
#if HANDOFF == 1
byte next[W];                   /* w.next: 1 + the channel of the task a waker handed
                                 * worker w, 0 for none; written by the waker that
                                 * popped w before it wakes w, read and cleared by w */
bool hst[W];                    /* w.nextStarted: stopped read false after the poll */
#endif
#if REENTER == 1
bool yielder = true;            /* the Yielder is running */
#endif
byte stk[W];                    /* the idle stack */
byte sp;
byte subs = 1 + (PER1 > 0);     /* submitters still running (none for an idle channel 1) */
bool pauser = true;             /* the Pauser is running */

inline lock(m) { atomic { !m -> m = true } }

inline pop(i) {
	atomic {
		if
		:: sp > 0 -> sp--; i = stk[sp]; stk[sp] = 0
		:: else -> i = NONE
		fi
	}
}

/* pop a worker and send it a wake-up (its own one-slot channel: commutes) */
inline popSend(i, v) {
	atomic {
		pop(i);
		if
		:: i != NONE -> assert(len(tok[i]) == 0); tok[i]!v
		:: else -> skip
		fi
	}
}

/* engine.wake */
inline wake(i, ok) {
	do
	:: sp == 0 -> break                     /* idle.Empty() */
	:: else ->
		atomic { ok = !waking; waking = true }  /* CAS(false, true) */
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
		:: summary -> skip                  /* hasWork: go round again */
		:: else -> break
		fi
	od;
	i = 0; ok = false
}

/* engine.wakeAny: park's re-check wake-up, with the token if free */
inline wakeAny(i, ok) {
	atomic { ok = !waking; waking = true };
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

#if HANDOFF == 1
/* the queues a hand-over's search sees: Next's word and blocked loads */
#if MUTANT == 5
#define HANDELIG(w1, b) (w1)                /* blocked ignored */
#else
#define HANDELIG(w1, b) ((w1) & ~(b))
#endif

/* worker.handOver for worker w, popped by the waker that holds the waking
 * token: unless Close started, one pass of worker.find on w's behalf (the
 * summary, Next over the word and the blocked word, the poll with Clear and
 * its repair, or Tidy and its repair; the token is held, so a nested
 * wake-up returns at once). The task got goes to next[w], and hst[w] says
 * whether it counts as started (stopped read again after the poll). A pass
 * that finds nothing leaves w to search itself. */
inline handOver(w, k, got, rep, w1, b, i2, ok2) {
	if
	:: stopped -> skip
	:: else ->
		if
		:: !summary -> skip
		:: else ->
			w1 = word;
			atomic {
				b = blk;
				if
				:: (HANDELIG(w1, b) & BIT(0)) != 0 -> k = 0; assert(!pdone)  /* never a paused task */
				:: (HANDELIG(w1, b) & BIT(1)) != 0 -> k = 1
				:: else -> k = NONE
				fi;
				w1 = 0; b = 0
			}
			if
			:: k != NONE ->
				atomic {
					!lk[k] -> lk[k] = true;
					if
					:: cnt[k] > 0 -> cnt[k]--; got = true
					:: else -> got = false
					fi
				}
				if
				:: got && cnt[k] == 0 -> clear(k, rep, w1, b)
				:: else -> rep = false
				fi;
				lk[k] = false;
				if
				:: rep -> wake(i2, ok2)
				:: else -> skip
				fi;
				rep = false
			:: else -> skip
			fi;
			if
			:: got -> next[w] = k + 1; hst[w] = !stopped
			:: else ->
				tidy(rep, w1, b);
				if
				:: rep -> wake(i2, ok2)
				:: else -> skip
				fi;
				rep = false
			fi;
			got = false; k = 0
		fi
	fi
}

/* engine.wakeFrom for a queue whose channel wakes outside its lock: as wake,
 * but the waker hands the worker it popped a task before it sends the
 * wake-up */
inline hwake(i, ok, k, got, rep, w1, b, i2, ok2) {
	do
	:: sp == 0 -> break
	:: else ->
		atomic { ok = !waking; waking = true };
		if
		:: !ok -> break
		:: else -> skip
		fi;
		pop(i);
		if
		:: i != NONE ->
			handOver(i, k, got, rep, w1, b, i2, ok2);
			atomic { assert(len(tok[i]) == 0); tok[i]!true };
			break
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
#define SUBWAKE(i, ok) hwake(i, ok, hk, hgot, hrep, hw1, hb, hi2, hok2)
#else
#define SUBWAKE(i, ok) wake(i, ok)
#endif

/* the eligible bits of the level as level.empty reads them: word, then
 * blocked (two loads) */
#if MUTANT == 4
#define ELIG(w1, b) (w1)                    /* blocked ignored */
#else
#define ELIG(w1, b) ((w1) & ~(b))
#endif

/* avail.Tidy: clear the summary if the level is empty, then repair */
inline tidy(rep, w1, b) {
	w1 = word; b = blk;
	if
	:: ELIG(w1, b) != 0 -> rep = false
	:: else ->
		summary = false;
		w1 = word; b = blk;
		if
		:: ELIG(w1, b) != 0 -> summary = true; rep = true
		:: else -> rep = false
		fi
	fi;
	w1 = 0; b = 0
}

/* avail.Set(k), under k's lock */
inline set(k, w1, b) {
	atomic { w1 = word; word = word | BIT(k) };   /* old := word.Or(mask) */
	b = blk;
	if
	:: (BIT(k) & ~b) != 0 ->
		if
		:: (w1 & ~b) == 0 -> summary = true
		:: else ->
			if
			:: !summary -> summary = true   /* summary.Load, then Or */
			:: else -> skip
			fi
		fi
	:: else -> skip
	fi;
	w1 = 0; b = 0
}

/* avail.Clear(k), under k's lock */
inline clear(k, rep, w1, b) {
	atomic { w1 = word; word = word & ~BIT(k) };
	b = blk;
	if
	:: (w1 & ~BIT(k) & ~b) != 0 -> rep = false; w1 = 0; b = 0   /* other eligible work */
	:: else -> tidy(rep, w1, b)
	fi
}

/* engine.block(0) for an uncapped channel: Field.Block, a repair wakes */
inline block(rep, w1, b, i, ok) {
	blk = blk | BIT(0);
	tidy(rep, w1, b);
	if
	:: rep -> wake(i, ok)
	:: else -> skip
	fi;
	rep = false
}

/* engine.unblock(0): Blocked(q) && Unblock(q) -> wake */
inline unblock(rep, i, ok) {
	if
	:: (blk & BIT(0)) != 0 ->
		blk = blk & ~BIT(0);
		if
		:: (word & BIT(0)) != 0 -> summary = true; rep = true
		:: else -> rep = false
		fi;
		if
#if MUTANT == 1
		:: rep -> skip                      /* no wake-up */
#else
		:: rep -> wake(i, ok)
#endif
		:: else -> skip
		fi
	:: else -> skip
	fi;
	rep = false
}

proctype Worker(byte me) {
	bool wk, cl, ww, got, rep, ok, hd;
	byte k, w1, b, i;
#if RATE == 1
	byte mg, mr;
	bool r0, tt, s;
#endif
loop:
#if HANDOFF == 1
	if
	:: next[me] != 0 ->                     /* a handed task: run it first */
		atomic { k = next[me] - 1; next[me] = 0; hd = hst[me]; hst[me] = false };
		goto found
	:: else -> skip
	fi;
#endif
#if CLOSE == 1
	cl = closing;
#endif
find:                                       /* worker.find */
	if
	:: !summary -> got = false
	:: else ->
		w1 = word;                          /* Next: word, then blocked */
		atomic {
			b = blk;
			if
			:: (w1 & ~b & BIT(0)) != 0 -> k = 0; assert(!pdone)  /* not once paused */
			:: (w1 & ~b & BIT(1)) != 0 -> k = 1
			:: else -> k = NONE
			fi;
			w1 = 0; b = 0
		}
#if RATE == 1
		if
		:: k == 0 ->                        /* engine.token */
			atomic { mg = gen; r0 = rate0 };  /* c.rate.Load() */
			if
			:: stopped -> ok = true; tt = false  /* Close ignores the rate */
			:: else ->
				atomic {                    /* bucket.take */
					if
					:: !r0 && tk > 0 -> tk--; ok = true; tt = true
					:: else -> ok = false; mr = rfs
					fi
				}
			fi;
			if
			:: !ok ->
#if MUTANT == 7
				if
				:: !r0 -> armed = true      /* armed before the block */
				:: else -> skip
				fi;
#endif
				block(rep, w1, b, i, ok);   /* blockQueues */
				s = stopped;
				if
#if MUTANT != 10
				:: s ->                     /* rateOpen */
					lock(pmu);
					if
					:: !paused -> unblock(rep, i, ok)
					:: else -> skip
					fi;
					pmu = false
#endif
				:: else ->
					if
#if MUTANT != 8
					:: gen != mg -> armed = true   /* SetRate meanwhile: arm now */
#endif
#if MUTANT != 13
					:: gen == mg && rfs != mr && tk > 0 ->  /* bucket.has: a refund meanwhile; rateOpen */
						lock(pmu);
						if
						:: !paused -> unblock(rep, i, ok)
						:: else -> skip
						fi;
						pmu = false
#endif
					:: else ->
#if MUTANT != 7
						if
						:: !r0 -> armed = true  /* arm for the next token */
						:: else -> skip
						fi
#else
						skip
#endif
					fi
				fi;
				mg = 0; mr = 0; r0 = false; s = false; ok = false;
				goto find
			:: else -> r0 = false; mg = 0
			fi
		:: else -> skip
		fi;
#endif
		if
		:: k != NONE ->                     /* poll k */
			atomic {
				!lk[k] -> lk[k] = true;
				if
				:: cnt[k] > 0 -> cnt[k]--; got = true
				:: else -> got = false
				fi
			}
			if
			:: got && cnt[k] == 0 -> clear(k, rep, w1, b)
			:: else -> rep = false
			fi;
			lk[k] = false;
			if
			:: rep -> wake(i, ok)           /* Bits.Clear's repair */
			:: else -> skip
			fi;
			rep = false;
#if RATE == 1
			if
			:: tt && !got ->                /* Engine.refund: no start */
				atomic {                    /* bucket.refund: up to the burst */
					if
					:: tk < BURST -> tk++
					:: else -> skip
					fi;
					rfs++
				};
#if MUTANT != 12
				if
				:: (blk & BIT(0)) != 0 ->   /* blocked meanwhile: rateOpen */
					lock(pmu);
					if
					:: !paused -> unblock(rep, i, ok)
					:: else -> skip
					fi;
					pmu = false
				:: else -> skip
				fi
#else
				skip
#endif
			:: else -> skip
			fi;
			tt = false;
#endif
			if
			:: got -> goto found
			:: else -> skip
			fi
		:: else -> skip
		fi;
		tidy(rep, w1, b);                   /* the level looked busy but was not */
		if
		:: rep -> wake(i, ok)
		:: else -> skip
		fi;
		rep = false;
		goto find
	fi;
	/* nothing found */
	if
	:: wk -> wk = false; waking = false; ww = true
	:: else -> skip
	fi;
#if CLOSE == 1
	if
	:: cl ->
		if
		:: ww && summary -> cl = false; ww = false; goto loop   /* a skipped wake-up */
		:: else -> goto quit
		fi
	:: else -> skip
	fi;
#endif
	cl = false; ww = false;
	atomic { stk[sp] = me; sp++ };          /* park: push */
	if
	:: summary -> wakeAny(i, ok)            /* the re-check: hasWork */
	:: else ->
		if
		:: closing -> wakeAny(i, ok)        /* closing && inflight == 0 */
		:: else -> skip
		fi
	fi;
end_park:
	tok[me]?wk;
	goto loop;
found:
	cl = false;
	if
	:: wk ->                                /* pass the wake-up on */
		wk = false; waking = false;
		if
		:: summary -> wake(i, ok)
		:: else -> skip
		fi
	:: else -> skip
	fi;
	atomic {
		if
		:: !COC(k) && stopped && !hd -> drp[k]++   /* the drop rule (a handed task that started: spared) */
		:: else -> ran[k]++
		fi;
		got = false; k = 0; hd = false
	};
progress_run:
	goto loop;
quit:
	skip
}

proctype Submitter(byte k) {
	byte n, w1, b, i;
	bool ok, z;
#if HANDOFF == 1
	byte hk, hw1, hb, hi2;
	bool hgot, hrep, hok2;
#endif
	do
	:: n < PERK(k) ->
		atomic {                            /* Push: the stopped check under the lock */
			!lk[k] -> lk[k] = true;
			if
			:: !stopped -> acc[k]++; cnt[k]++; ok = true
			:: else -> ok = false
			fi
		}
		if
		:: ok && cnt[k] == 1 -> set(k, w1, b)
		:: else -> skip
		fi;
		lk[k] = false;
progress_submit:
		if
		:: ok -> SUBWAKE(i, z)              /* Bits.Wake after unlocking */
		:: else -> skip
		fi;
		ok = false;
		n++
	:: else -> break
	od;
	subs--
}

proctype Pauser() {
	byte r, w1, b, i;
	bool rep, ok, s;
	do
	:: r < PAUSES ->
		/* Pause(0) */
#if MUTANT == 3
		s = stopped;                        /* read before the lock */
		lock(pmu);
#else
		lock(pmu);
		s = stopped;                        /* read under mu */
#endif
		if
		:: s -> pmu = false; break          /* ErrClosed */
		:: else -> skip
		fi;
		atomic { s = false; paused = true };
		block(rep, w1, b, i, ok);           /* gate */
		atomic { pmu = false; pdone = true; pgen++ };
progress_pause:
#if RESUME == 0
		break;
#elif RESUME == 2
		if
		:: break
		:: skip
		fi;
#endif
		/* Resume(0) */
		atomic { !pmu -> pmu = true; pdone = false };
		if
		:: stopped -> pmu = false; break    /* ErrClosed: Close resumed it */
		:: else -> skip
		fi;
		paused = false;
		unblock(rep, i, ok);                /* gate */
		pmu = false;
		r++
	:: else -> break
	od;
	s = false; r = 0;
	pauser = false
}

#if REENTER == 1
/* A task of channel 0, accepted and run up to a Yield before the check
 * starts, whose wait returns: taskContext.reenter with followup channel 0.
 * takeIdle: hasWork (the summary), idle.Empty, the paused flag of the
 * followup (an uncapped channel), then the pop; a worker popped is
 * borrowed (its goroutine stays parked): the task runs to its end on its
 * own goroutine and gives the worker back (goIdle(parked): park's push and
 * re-check). Otherwise Requeue into channel 0: the push under its lock,
 * Set if the queue was empty, Bits.Wake. Ghost g: the Pause in force when
 * takeIdle began, if any (pgen then, 0 for none): a task must not start on
 * a borrowed worker while that pause still holds. */
proctype Yielder() {
	byte i, g, w1, b;
	bool ok, z, s;
#if HANDOFF == 1
	byte hk, hw1, hb, hi2;
	bool hgot, hrep, hok2;
#endif
	atomic {                                /* hasWork() */
		if
		:: pdone -> g = pgen
		:: else -> g = 0
		fi;
		s = summary
	}
	if
	:: s || sp == 0 -> goto requeue         /* work waits, or no idle worker */
	:: else -> skip
	fi;
#if MUTANT != 6
	if
	:: paused -> goto requeue               /* a paused followup: queue */
	:: else -> skip
	fi;
#endif
	atomic {
		pop(i);
		if
		:: i != NONE -> assert(!(pdone && g == pgen))  /* not under the pause it began in */
		:: else -> skip
		fi
	}
	if
	:: i == NONE -> goto requeue
	:: else -> skip
	fi;
	ran[0]++;                               /* runs on the borrowed worker, to its end */
	atomic { stk[sp] = i; sp++ };           /* goIdle(parked): the worker back, then the re-check */
	if
	:: summary -> wakeAny(i, ok)
	:: else -> skip
	fi;
	goto done;
requeue:
	atomic {                                /* Requeue: the push under the lock */
		!lk[0] -> lk[0] = true;
		cnt[0]++
	}
	if
	:: cnt[0] == 1 -> set(0, w1, b)
	:: else -> skip
	fi;
	lk[0] = false;
	SUBWAKE(i, z);
done:
	i = 0; g = 0; s = false; z = false;
	yielder = false
}
#endif

#if RATE == 1
/* rateTimer.fire for channel 0: the token is due, then rateOpen */
proctype Timer() {
	byte i;
	bool rep, ok;
end_timer:
	do
	:: atomic {
		armed && !tclosed && (SLOW == 0 || timeout) -> armed = false;
		if
		:: !rate0 && tk < BURST -> tk++   /* a token is due */
		:: else -> skip
		fi
	   };
		lock(pmu);                          /* rateOpen */
#if MUTANT == 9
		unblock(rep, i, ok);                /* paused ignored */
#else
		if
		:: !paused -> unblock(rep, i, ok)
		:: else -> skip
		fi;
#endif
		pmu = false
	:: tclosed -> break
	od
}
#endif

#if SETRATE == 1
/* Pool.SetRate(0, rate > 0) on a channel at a rate of 0 */
proctype Rater() {
	byte i;
	bool rep, ok;
	lock(pmu);
	if
	:: stopped -> skip                      /* ErrClosed */
	:: else ->
		atomic { gen++; rate0 = false };    /* c.rate.Store: the tokens kept (none) */
		if                                  /* gate */
		:: !paused -> unblock(rep, i, ok)
		:: else -> skip
		fi
	fi;
	pmu = false;
	rater = false
}
#endif

#if CLOSE == 1
inline closeChan(k, rep, w1, b, i, ok) {
	atomic {
		!lk[k] -> lk[k] = true;
		if
		:: !COC(k) -> drp[k] = drp[k] + cnt[k]; ok = (cnt[k] > 0); cnt[k] = 0
		:: else -> ok = false
		fi
	};
	if
	:: ok -> clear(k, rep, w1, b)
	:: else -> rep = false
	fi;
	lk[k] = false;
	if
	:: rep -> wake(i, ok)
	:: else -> skip
	fi;
	rep = false; ok = false
}

proctype Closer() {
	byte i, w1, b;
	bool rep, ok;
	stopped = true;
#if MUTANT != 2
	/* resumeAll */
	atomic { !pmu -> pmu = true; pdone = false };
	if
#if RATE == 1 && MUTANT != 11
	:: paused || RATE ->                    /* a rated channel too (resumeChannel) */
#else
	:: paused ->
#endif
		paused = false;
		unblock(rep, i, ok)
	:: else -> skip
	fi;
	pmu = false;
#endif
#if RATE == 1
	tclosed = true;                         /* rates.close */
#endif
	/* each channel's Close(drop), under its lock, which waits out a push
	 * in progress (its Set included): a DROP channel's queue is emptied */
	closeChan(0, rep, w1, b, i, ok);
#if PER1 > 0
	closeChan(1, rep, w1, b, i, ok);
#endif
	closing = true;
	do                                      /* wakeAll */
	:: popSend(i, false);
		if
		:: i == NONE -> break
		:: else -> skip
		fi
	od
}
#endif

#if CLOSE == 0
proctype Observer() {
	byte k;
#if SLOW == 1
	do
	:: timeout ->                           /* all but the slow timer settled */
		assert(!(tk > 0 && cnt[0] > 0 && (blk & BIT(0)) != 0 && !paused));  /* no token waits behind a block for the timer */
		if
		:: armed && !tclosed -> skip        /* the next token is due: time passes */
		:: else -> break
		fi
	od;
#else
	timeout ->                              /* nothing else can move */
#endif
	assert(subs == 0 && !pauser);
#if RATE == 1
	assert(cnt[0] == 0 || paused || rate0); /* no task waits for a token no timer brings */
#endif
#if SETRATE == 1
	assert(!rater);
#endif
#if REENTER == 1
	assert(!yielder);
#endif
	do
	:: k < NQ ->
		assert(cnt[k] == 0 || (blk & BIT(k)) != 0);   /* no lost wake-up */
		assert(ran[k] + cnt[k] == acc[k] && acc[k] == PERK(k) + (k == 0 && REENTER));
		assert(!lk[k]);
		k++
	:: else -> break
	od;
	assert((word & ~blk) == 0 || summary);  /* the summary shows the eligible queues */
	assert(!waking && sp == W);             /* every worker parked */
	k = 0;
	do
	:: k < W ->
		assert(len(tok[k]) == 0);
#if HANDOFF == 1
		assert(next[k] == 0);
#endif
		k++
	:: else -> break
	od
}
#endif

init {
	byte k;
	atomic {
		do
		:: k < W -> run Worker(k); k++
		:: else -> break
		od;
		run Submitter(0);
#if PER1 > 0
		run Submitter(1);
#endif
		run Pauser();
#if RATE == 1
		run Timer();
#endif
#if SETRATE == 1
		run Rater();
#endif
#if REENTER == 1
		acc[0] = 1;                         /* the Yielder's task */
		run Yielder();
#endif
#if CLOSE == 1
		run Closer();
#else
		run Observer();
#endif
		k = 0
	}
#if CLOSE == 1 && !defined(NP)
	(_nr_pr == 1);                          /* every other process has ended */
	do
	:: k < NQ ->
		if
		:: COC(k) -> assert(ran[k] == acc[k] && drp[k] == 0)
		:: else -> assert(ran[k] + drp[k] == acc[k])
		fi;
		assert(cnt[k] == 0 && !lk[k]);
		k++
	:: else -> break
	od;
	assert(sp == 0 && !waking && !paused)
#endif
}
