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
	"./internal/engine (*Engine).admitNow"
	"./internal/engine (*Engine).credited"
	"./internal/engine (*Engine).unitDone"
	"./internal/engine (*Engine).wake"
	"./internal/engine (*Engine).wakeHands"
	"./internal/engine (*Engine).hasWork"
	"./internal/engine (*Engine).endTask"
	"./internal/engine (*Engine).Stopping"
	"./internal/engine (*Engine).LookedUp"
	"./internal/engine (*attachment).attached"
	"./internal/engine (*stamped).Unwrap"
	"./internal/engine (*runBuffer).buffered"
	"./internal/engine (*runBuffer).empty"
	"./internal/engine Bits.Attached"
	"./internal/engine Bits.Closed"
	"./internal/engine Bits.Closing"
	"./internal/engine Bits.Has"
	"./internal/engine Bits.Len"
	"./internal/engine Bits.OrderOf"
	"./internal/engine Bits.index"
	"./internal/engine Bits.tracked"
	"./internal/engine Bits.channel"
	"./task Func.Run"
	"./internal/avail (*Field).Set"
	"./internal/avail (*Field).Has"
	"./internal/avail (*Field).Summary"
	"./internal/idle (*Stack).Empty"
)
# Every method of source.Bits is a one-line forward into the engine's Bits
# and must stay inlinable, so that a channel pays no call for the package
# boundary.
for m in $(go doc -short ./source Bits 2>/dev/null | sed -n 's/^func (b\{0,1\} \{0,1\}Bits) \([A-Za-z]*\)(.*/\1/p'); do
	hot+=("./source Bits.$m")
done

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
