/*
 * buffer.pml: the workers' run buffers (buffer.go) and Close's drop rule.
 *
 * NQ of NT tasks wait in one FIFO queue when the workers start; a submitter
 * queues the others while Close has not started (refused after). Each of W workers
 * has a buffer of B slots and a state word (head, end: slots [head, end)
 * hold unclaimed tasks) and a mutex. A worker's search (worker.search):
 *   - its buffer, if it holds tasks: claim one by a compare-and-swap of
 *     head+1, read the slot, clear it;
 *   - else a batch poll (fill), under its own mutex: take at most
 *     min(B, ceil(n/SHARE)) of the n queued tasks under the channel's lock
 *     (SHARE: the workers created so far, up to W), run
 *     the first, write the others into slots 1.., publish (1, k);
 *   - else steal: under the victim's mutex, load its state and claim the
 *     older half by a compare-and-swap, copy and clear those slots; run the
 *     first, keep the rest in its own (empty) buffer as a fill does;
 *   - else, if it read closing before the search, exit; otherwise park:
 *     register as idle, read the queue, the count of non-empty buffers and
 *     closing (hasWork), wake one idle worker (maybe itself) if any shows
 *     something, wait to be woken, and search again. The waking token and
 *     the idle stack are park.pml's; here a wake-up clears one idle flag.
 * A fill or a steal that leaves tasks in the worker's buffer counts the
 * buffer in buffered and then wakes an idle worker; the claim that empties
 * a buffer uncounts it. The submitter wakes an idle worker after each task.
 * A task taken from anywhere runs, or is dropped if Close had started
 * (stopped) and the channel does not complete on close (the drop rule of
 * worker.go: a buffered task has not started).
 * Close: stopped, then the channel's Close (drop: it empties the queue and
 * reports the tasks), then closing; the report waits for every worker to
 * exit and checks that every task ended exactly once, that no task of a
 * dropping channel ran after Close started, and that none of a
 * complete-on-close channel was dropped.
 *
 * Defines: W (2), NT (4), NQ (2), B (2), SHARE (W), COC (0: the channel
 * drops on close), PARK (1; 0: a worker with nothing to do waits for a task
 * in the queue or closing, without the idle protocol: the claims alone, in
 * fewer states),
 * BLOCK (0; 1: task 0 blocks until task 1 has started, as a task waiting for
 * another's result does, and Close waits for that: Close's wake-ups cannot
 * hide a worker that sleeps while task 1 waits in a buffer).
 * Mutants (MUTANT=n), each must fail:
 *   1 a closing worker exits once the queue reads empty, without looking at
 *     its buffer or its siblings' (as if the summary told all): buffered
 *     tasks are stranded;
 *   2 a thief claims by a load and a store instead of a compare-and-swap: a
 *     task is taken twice;
 *   3 the fill does not take the buffer's mutex: it rewrites slots a thief
 *     claimed and has not copied yet;
 *   4 a buffered task escapes the drop rule: it runs after Close started;
 *   5 (BLOCK) a fill does not wake an idle worker: task 1 waits in the
 *     buffer of task 0's worker while the other sleeps;
 *   6 (BLOCK) a parking worker reads the queue but not buffered.
 */

#ifndef W
#define W 2
#endif
#ifndef NT
#define NT 4
#endif
#ifndef B
#define B 2
#endif
#ifndef COC
#define COC 0
#endif
#ifndef NQ
#define NQ 2
#endif
#ifndef MUTANT
#define MUTANT 0
#endif
#ifndef BLOCK
#define BLOCK 0
#endif
#ifndef SHARE
#define SHARE W
#endif
#ifndef PARK
#define PARK 1
#endif

byte qhead = 0;        /* tasks qhead..qtail-1 are queued in the channel */
byte qtail = NQ;
bool refused[NT];      /* submitted after Close started: never queued */
bool submitted = false; /* the submitter is done */
bool stopped = false;  /* Close started: submits refused, the drop rule applies */
bool closing = false;  /* set after the channel's Close */
byte live = W;         /* workers not yet exited */

byte bhead[W];         /* state word: head ... */
byte bend[W];          /* ... and end, always updated together */
byte slot[W * B];      /* task + 1, 0 when empty */
bool mu[W];
bool parked[W];        /* on the idle stack, waiting for a wake-up */
byte buffered = 0;     /* non-empty buffers (e.buffered) */

byte ran[NT];
byte dropped[NT];
bool lateRun = false;
bool unblocked = false; /* BLOCK: task 0 saw task 1 start */  /* a dropping channel's task started after Close started */

inline lock(m) { atomic { !m -> m = true } }

/* wake one idle worker, if any (the lowest: which one does not matter here) */
inline wakeOne() {
	atomic {
#if !PARK
		skip
#else
		u = 0;
		do
		:: u < W && parked[u] -> parked[u] = false; break
		:: u < W && !parked[u] -> u++
		:: u >= W -> break
		od
#endif
	}
}

/* a buffer just became non-empty: count it, then wake (MUTANT 5: no wake) */
inline counted() {
	buffered++;
#if MUTANT != 5
	wakeOne()
#endif
}
inline unlock(m) { m = false }

/* end task t, taken from a buffer if buffered: the drop rule reads stopped
 * once (s); a task run although s read true started after Close started */
inline take(t, fromBuffer) {
	s = stopped;
	if
	:: BLOCK && t == 0 -> (ran[1] > 0); unblocked = true /* task 0 waits for task 1 to start */
	:: else -> skip
	fi;
	if
	:: s && !COC && !(MUTANT == 4 && fromBuffer) -> dropped[t]++
	:: else ->
		if
		:: s && !COC -> lateRun = true
		:: else -> skip
		fi;
		ran[t]++
	fi
}

proctype worker(byte w) {
	byte h, e, k, i, t, v, first, u;
	byte got[B];
	bool c, ok, s;
search:
	c = closing;
#if MUTANT == 1
	if
	:: c && qhead == qtail -> goto exit
	:: else -> skip
	fi;
#endif
	/* its own buffer first */
	atomic { h = bhead[w]; e = bend[w] }
	if
	:: h < e ->
		atomic {
			if
			:: bhead[w] == h && bend[w] == e -> bhead[w] = h + 1; ok = true
			:: else -> ok = false
			fi
		}
		if
		:: ok ->
			if
			:: h + 1 == e -> buffered--
			:: else -> skip
			fi;
			t = slot[w * B + h];
			assert(t != 0); /* a claimed slot holds its task */
			slot[w * B + h] = 0;
			take(t - 1, true);
		:: else -> skip
		fi;
		goto search
	:: else -> skip
	fi;
	/* a batch poll into the empty buffer */
#if MUTANT != 3
	lock(mu[w]);
#endif
	atomic {
		k = qtail - qhead;
		k = (k + SHARE - 1) / SHARE;
		if
		:: k > B -> k = B
		:: else -> skip
		fi;
		first = qhead;
		qhead = qhead + k
	}
	i = 1;
	do
	:: i < k -> slot[w * B + i] = first + i + 1; i++
	:: else -> break
	od;
	if
	:: k > 1 -> atomic { bhead[w] = 1; bend[w] = k }
	:: else -> skip
	fi;
#if MUTANT != 3
	unlock(mu[w]);
#endif
	if
	:: k > 1 -> counted()
	:: else -> skip
	fi;
	if
	:: k > 0 -> take(first, false); goto search
	:: else -> skip
	fi;
	/* steal from a sibling */
	v = 0;
	do
	:: v < W && v != w ->
		lock(mu[v]);
		atomic { h = bhead[v]; e = bend[v] }
		k = 0;
		if
		:: h < e ->
			k = (e - h + 1) / 2;
#if MUTANT == 2
			bhead[v] = h + k; /* a plain store: an owner's claim in between is undone */
#else
			atomic {
				if
				:: bhead[v] == h && bend[v] == e -> bhead[v] = h + k
				:: else -> k = 0
				fi
			}
#endif
			if
			:: k > 0 && h + k == e -> buffered--
			:: else -> skip
			fi;
		:: else -> skip
		fi;
		i = 0;
		do
		:: i < k ->
			got[i] = slot[v * B + h + i];
			assert(got[i] != 0);
			slot[v * B + h + i] = 0;
			i++
		:: else -> break
		od;
		unlock(mu[v]);
		if
		:: k > 0 ->
			lock(mu[w]);
			i = 1;
			do
			:: i < k -> slot[w * B + i] = got[i]; i++
			:: else -> break
			od;
			if
			:: k > 1 -> atomic { bhead[w] = 1; bend[w] = k }
			:: else -> skip
			fi;
			unlock(mu[w]);
			if
			:: k > 1 -> counted()
			:: else -> skip
			fi;
			take(got[0] - 1, true);
			goto search
		:: else -> v++
		fi
	:: v < W && v == w -> v++
	:: else -> break
	od;
	if
	:: c -> skip
	:: else ->
#if PARK
		parked[w] = true;
#if MUTANT == 6
		if
		:: qhead != qtail || closing -> wakeOne()
		:: else -> skip
		fi;
#else
		if
		:: qhead != qtail || buffered > 0 || closing -> wakeOne()
		:: else -> skip
		fi;
#endif
		!parked[w];
#else
		(closing || qhead != qtail); /* PARK=0: wait without the protocol (claims only) */
#endif
		goto search
	fi;
exit:
	live--
}

proctype submitter() {
	byte t = NQ, u;
	do
	:: t < NT ->
		atomic {
			if
			:: !stopped -> qtail++ /* task t: queue order is submit order */
			:: else -> refused[t] = true
			fi
		};
		wakeOne();
		t++
	:: else -> break
	od;
	submitted = true
}

proctype closer() {
	byte t;
#if BLOCK
	unblocked; /* Close comes after task 0, as a test waits for its tasks before it closes: until then nothing rescues a sleeping worker */
#endif
	stopped = true;
#if !COC
	atomic { /* the channel's Close(drop): every queued task reported */
		t = qhead;
		do
		:: t < qtail -> dropped[t]++; t++
		:: else -> break
		od;
		qhead = qtail
	}
#endif
	closing = true;
	atomic { /* wakeAll */
		t = 0;
		do
		:: t < W -> parked[t] = false; t++
		:: else -> break
		od
	}
	live == 0 && submitted;
	t = 0;
	do
	:: t < NT ->
		assert(ran[t] + dropped[t] == (refused[t] -> 0 : 1));
		assert(!COC || dropped[t] == 0);
		t++
	:: else -> break
	od;
	assert(!lateRun)
}

init {
	byte w;
	atomic {
		w = 0;
		do
		:: w < W -> run worker(w); w++
		:: else -> break
		od;
		run submitter();
		run closer()
	}
}
