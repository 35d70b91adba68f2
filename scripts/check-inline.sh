#!/usr/bin/env bash
# Fails when a hot-path function stops inlining. The list is what
# `go build -gcflags=-m` reported as inlinable when it was last reviewed: the
# submit path (admission, credit, the wake-up), the worker's checks between
# tasks, and the Bits methods every channel calls under its lock. A change
# that tips one over the inlining budget shows here before it shows in a
# benchmark. Update the list with the code it names, never to silence it.
set -euo pipefail
cd "$(dirname "$0")/.."

# package directory, then the name as -m prints it
hot=(
	". (*engine).admitNow"
	". (*engine).credited"
	". (*engine).unitDone"
	". (*engine).wake"
	". (*engine).wakeHands"
	". (*engine).hasWork"
	". (*engine).endTask"
	". (*attachment).attached"
	". (*stamped).Unwrap"
	". (*runBuffer).buffered"
	". (*runBuffer).empty"
	"./task Func.Run"
	". Bits.Attached"
	". Bits.Closed"
	". Bits.Closing"
	". Bits.Has"
	". Bits.Len"
	". Bits.OrderOf"
	". Bits.index"
	". Bits.tracked"
	". Bits.channel"
	"./internal/avail (*Field).Set"
	"./internal/avail (*Field).Has"
	"./internal/avail (*Field).Summary"
	"./internal/idle (*Stack).Empty"
)

declare -A out
status=0
for entry in "${hot[@]}"; do
	dir=${entry%% *}
	name=${entry#* }
	if [ -z "${out[$dir]+x}" ]; then
		out[$dir]=$(go build -gcflags=-m "$dir" 2>&1 | sed -n 's/^[^ ]*: can inline \([^ ]*\).*/\1/p')
	fi
	if ! grep -qxF -- "$name" <<<"${out[$dir]}"; then
		echo "no longer inlined: $name (in $dir)" >&2
		status=1
	fi
done
[ $status -eq 0 ] && echo "check-inline: all ${#hot[@]} hot-path functions inline"
exit $status
