/*
 * spawn.pml: spawning from inside a group at its limit (group.go, help.go):
 * the "help while you wait" rule.
 *
 * A group whose limit is L places runs a tree of tasks: the root, and each
 * task above depth D spawns two children with Go, one after the other, then
 * ends. A place is held from the spawn (queued, running or yielded) until
 * the task ends. W workers run tasks; a task holds one while it runs, and a
 * task that waits gives it back (Yield) and takes one again to go on. Go
 * from a task of the group:
 *   - a free place: take it and queue the child, which a worker runs later;
 *   - no free place (HELP=1, the rule): run the child at once, on the
 *     caller's goroutine, in the caller's place and on its worker, as an
 *     inline frame; the caller goes on once the child (and its own inline
 *     children) ended;
 *   - no free place (HELP=0, errgroup's rule and the pool's before the
 *     rule): yield the worker and wait for a place.
 * The end checks every task ran exactly once and every place came back; at
 * every spawn, no more than L places are held and no more than W tasks hold
 * a worker. An end state where tasks still wait is a deadlock (spin's
 * "invalid end state").
 *
 * Defines: L (2), D (2: 7 tasks), W (1), HELP (1).
 * Mutant: HELP=0, the crawler of errgroup's shape: every place is held by a
 * task waiting in Go for a place, and it must deadlock.
 */

#ifndef L
#define L 2
#endif
#ifndef D
#define D 2
#endif
#ifndef W
#define W 1
#endif
#ifndef HELP
#define HELP 1
#endif

#define TOTAL ((1 << (D + 1)) - 1)

byte places = 0;  /* places held: the group's pending */
byte workers = W; /* workers free */
byte ended = 0;   /* tasks that ran to their end, inline ones included */

inline takeWorker() { atomic { workers > 0 -> workers-- } }
inline giveWorker() { workers++ }

proctype task(byte depth) {
	byte d[D + 1];    /* depth of each frame: the task, then its inline children */
	byte left[D + 1]; /* children each frame has still to spawn */
	byte top = 0;
	d[0] = depth;
	left[0] = (depth < D -> 2 : 0);
	takeWorker();
	do
	:: left[top] > 0 ->
		left[top]--;
		if
		:: atomic { places < L -> places++; assert(places <= L); run task(d[top] + 1) }
		:: atomic { HELP && places >= L ->
			top++;
			d[top] = d[top - 1] + 1;
			left[top] = (d[top] < D -> 2 : 0)
		}
		:: !HELP && places >= L ->
			giveWorker(); /* Go waits for a place, yielding the worker */
			atomic { places < L -> places++; run task(d[top] + 1) }
			takeWorker()
		fi
	:: left[top] == 0 && top > 0 -> /* an inline child ended: its parent goes on */
		ended++;
		top--
	:: left[top] == 0 && top == 0 -> break
	od;
	atomic {
		ended++;
		places--;
		giveWorker();
		assert(workers <= W)
	}
}

init {
	atomic { places = 1; run task(0) }
	(ended == TOTAL);
	assert(places == 0 && workers == W)
}
