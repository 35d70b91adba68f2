#!/usr/bin/env bash
# Verifies the Promela models of this directory with spin: every model
# configuration must verify (no assertion violation, no invalid end state,
# search complete) and every mutant must fail. Exits non-zero otherwise.
#
#   bash internal/model/run.sh            the CI set
#   bash internal/model/run.sh --soak     bigger configurations and slow mutants
#   bash internal/model/run.sh --asis     the protocol as the Go code had it
#                                         before commit ada9c37 (and, for the
#                                         stale bit, as channels/fifo.go has it
#                                         now), checked as a model (fails: see
#                                         README)
#   bash internal/model/run.sh -v ...     also print each counterexample's end
#   SPIN_ONLY=REGEX bash internal/model/run.sh ...
#                                         only the checks whose name matches
#                                         REGEX (grep -E), e.g. 'handoff|m1[4-7]'
#
# Needs spin and gcc (Debian: apt-get install -y spin gcc). Works from any
# directory; builds in a temporary directory that it removes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode=ci
verbose=0
for a in "$@"; do
	case "$a" in
	--soak) mode=soak ;;
	--asis) mode=asis ;;
	-v) verbose=1 ;;
	*) echo "usage: $0 [--soak|--asis] [-v]" >&2; exit 2 ;;
	esac
done

for tool in spin gcc; do
	if ! command -v "$tool" >/dev/null; then
		echo "run.sh: $tool not found (apt-get install -y spin gcc)" >&2
		exit 2
	fi
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# kind name model defines...
#   model:  must verify
#   mutant: must fail (a deliberately broken protocol: the model's teeth)
#   asis:   the Go code before commit ada9c37, and channels/fifo.go as it is
#           (park/asis-fifo), and lazy workers before d197390 (close/asis-lazy),
#           and Close(drop) during a removal before the held bracket
#           (reshape/asis-closeheld), and tasks ended outside the queue and
#           the workers before Bits.Hold and holdUnlessRemoving (reshape/asis-side-*),
#           and a dropping removal's drops before its share of live
#           (reshape/asis-rmshare), and a held task's end before Bits.Hold
#           took a share of live (reshape/asis-holdshare);
#           must fail while the bugs are there
# A check whose defines include -DNP looks for non-progress cycles (workers
# spinning without any task running or being submitted: pan -l) instead of
# safety violations; one with -DCOLLAPSE compresses its states (pan's
# option), trading time for memory. A check marked -Og has its verifier
# compiled optimised (see check): its search lasts longer than the build.
ci=(
	"model  close/coc-yield      close.pml -DW=2 -DNT=1 -DFOL1=0 -DCOLLAPSE -Og"
	"model  close/coc-yield-1w   close.pml -DW=1 -DNT=1 -DFOL1=0"
	"model  close/drop-yield-1w  close.pml -DW=1 -DNT=1 -DFIRSTCH=1"
	"model  close/two-fresh-2w   close.pml -DW=2 -DNT=2 -DMAXY=0"
	"model  close/coc-yield-1w-idle close.pml -DW=1 -DNT=1 -DFOL1=0 -DIDLE=1"
	"model  close/drop-yield-1w-idle close.pml -DW=1 -DNT=1 -DFIRSTCH=1 -DIDLE=1"
	"model  close/lazy-coc-yield-2w close.pml -DW=2 -DNT=1 -DFOL1=0 -DLAZY=1"
	"model  close/lazy-drop-yield-1w close.pml -DW=1 -DNT=1 -DFIRSTCH=1 -DLAZY=1"
	"model  close/lazy-two-fresh-2w close.pml -DW=2 -DNT=2 -DMAXY=0 -DLAZY=1"
	"model  close/lazy-idle-coc-yield-1w close.pml -DW=1 -DNT=1 -DFOL1=0 -DLAZY=1 -DIDLE=1"
	"model  close/np-lazy-two-fresh-2w close.pml -DW=2 -DNT=2 -DMAXY=0 -DLAZY=1 -DNP"
	"model  close/handoff-drop-yield-1w close.pml -DW=1 -DNT=1 -DFIRSTCH=1 -DHANDOFF=1"
	"model  close/handoff-lazy-coc-yield-2w close.pml -DW=2 -DNT=1 -DFOL1=0 -DLAZY=1 -DHANDOFF=1"
	"model  close/handoff-lazy-drop-yield-1w close.pml -DW=1 -DNT=1 -DFIRSTCH=1 -DLAZY=1 -DHANDOFF=1"
	"model  close/handoff-lazy-two-fresh-2w close.pml -DW=2 -DNT=2 -DMAXY=0 -DLAZY=1 -DHANDOFF=1"
	"model  close/handoff-lazy-idle-coc-yield-1w close.pml -DW=1 -DNT=1 -DFOL1=0 -DLAZY=1 -DIDLE=1 -DHANDOFF=1"
	"model  close/np-handoff-lazy-two-fresh-2w close.pml -DW=2 -DNT=2 -DMAXY=0 -DLAZY=1 -DHANDOFF=1 -DNP -Og"
	"model  close/cancel-drop-2w  close.pml -DW=2 -DNT=2 -DMAXY=0 -DLAZY=1 -DCANCEL=1 -Og"
	"model  close/cancel-coc-1w   close.pml -DW=1 -DNT=2 -DMAXY=0 -DLAZY=1 -DCANCEL=1 -DFIRSTCH=1"
	"model  close/cancel-handoff-drop-1w close.pml -DW=1 -DNT=2 -DMAXY=0 -DLAZY=1 -DHANDOFF=1 -DCANCEL=1"
	"model  close/cancel-yield-1w close.pml -DW=1 -DNT=1 -DFOL1=0 -DLAZY=1 -DCANCEL=1"
	"model  close/callback-two-fresh-2w close.pml -DW=2 -DNT=2 -DMAXY=0 -DLAZY=1 -DCALLBACK=1 -Og"
	"model  close/callback-handoff-1w close.pml -DW=1 -DNT=2 -DMAXY=0 -DLAZY=1 -DHANDOFF=1 -DCALLBACK=1"
	"model  close/host-coc-yield-1w close.pml -DW=1 -DNT=1 -DFOL1=0 -DADOPT=0"
	"model  park/2w-2fifos       park.pml  -DW=2 -DPER=1 -Og"
	"model  park/2w-1fifo-3tasks park.pml  -DW=2 -DPER0=3 -DPER1=0"
	"model  park/1w-4tasks       park.pml  -DW=1 -DPER0=3 -DPER1=1"
	"model  park/np-2w-1fifo     park.pml  -DW=2 -DPER0=2 -DPER1=0 -DNP -Og"
	"model  park/lazy-idle-2w-4tasks park.pml -DW=2 -DPER0=4 -DPER1=0 -DLAZY=1 -DIDLE=1"
	"model  park/lazy-idle-2w-2fifos park.pml -DW=2 -DPER=1 -DLAZY=1 -DIDLE=1"
	"model  park/idle-2w-1fifo   park.pml  -DW=2 -DPER0=2 -DPER1=0 -DIDLE=1"
	"model  park/np-lazy-idle-2fifos park.pml -DW=2 -DPER=1 -DLAZY=1 -DIDLE=1 -DNP"
	"model  park/prestart-2w-2fifos park.pml -DW=2 -DPER=1 -DLAZY=1 -DPRESTART=1 -Og"
	"model  park/prestart-idle-2w-1fifo park.pml -DW=2 -DPER0=2 -DPER1=0 -DLAZY=1 -DIDLE=1 -DPRESTART=1 -Og"
	"model  park/handoff-lazy-idle-2fifos park.pml -DW=2 -DPER=1 -DLAZY=1 -DIDLE=1 -DHANDOFF=1"
	"model  park/handoff-lazy-idle-4tasks park.pml -DW=2 -DPER0=4 -DPER1=0 -DLAZY=1 -DIDLE=1 -DHANDOFF=1"
	"model  park/handoff-idle-2w-1fifo park.pml -DW=2 -DPER0=2 -DPER1=0 -DIDLE=1 -DHANDOFF=1 -Og"
	"model  park/handoff-1w-4tasks park.pml -DW=1 -DPER0=3 -DPER1=1 -DHANDOFF=1"
	"model  park/handoff-2w-1fifo-3tasks park.pml -DW=2 -DPER0=3 -DPER1=0 -DHANDOFF=1 -Og"
	"model  park/np-handoff-lazy-idle-2fifos park.pml -DW=2 -DPER=1 -DLAZY=1 -DIDLE=1 -DHANDOFF=1 -DNP -Og"
	"model  buffer/2w-drop       buffer.pml -DW=2 -DNT=3 -DNQ=1 -DB=2 -Og"
	"model  buffer/2w-coc        buffer.pml -DW=2 -DNT=3 -DNQ=1 -DB=2 -DCOC=1 -Og"
	"model  buffer/block-share1  buffer.pml -DW=2 -DNT=2 -DNQ=0 -DB=2 -DSHARE=1 -DBLOCK=1"
	"model  buffer/claims-4tasks-b4 buffer.pml -DW=2 -DNT=4 -DNQ=2 -DB=4 -DPARK=0"
	"model  spawn/help-1w        spawn.pml -DW=1 -DD=3"
	"model  spawn/help-2w        spawn.pml -DW=2 -DD=3"
	"model  spawn/help-2w-l3     spawn.pml -DW=2 -DD=3 -DL=3"
	"model  pause/2w-resume      pause.pml -DW=2 -DPER0=1 -DPER1=0 -DRESUME=1 -Og"
	"model  pause/1w-2chans      pause.pml -DW=1 -DPER0=1 -DPER1=1 -DRESUME=2"
	"model  pause/1w-2rounds     pause.pml -DW=1 -DPER0=2 -DPER1=0 -DPAUSES=2 -DRESUME=1"
	"model  pause/close-coc-1w   pause.pml -DW=1 -DPER0=2 -DPER1=0 -DCLOSE=1"
	"model  pause/close-drop-1w  pause.pml -DW=1 -DPER0=2 -DPER1=0 -DCLOSE=1 -DCOC0=0"
	"model  pause/np-paused-1w   pause.pml -DW=1 -DPER0=1 -DPER1=0 -DRESUME=0 -DNP"
	"model  pause/handoff-1w-2chans pause.pml -DW=1 -DPER0=1 -DPER1=1 -DRESUME=2 -DHANDOFF=1 -Og"
	"model  pause/handoff-close-coc-1w pause.pml -DW=1 -DPER0=2 -DPER1=0 -DCLOSE=1 -DHANDOFF=1"
	"model  pause/reenter-1w     pause.pml -DW=1 -DPER0=0 -DPER1=0 -DRESUME=2 -DREENTER=1"
	"model  pause/reenter-1w-1task pause.pml -DW=1 -DPER0=1 -DPER1=0 -DRESUME=1 -DREENTER=1"
	"model  reshape/drain-1w     reshape.pml -DW=1 -DPOL=1"
	"model  reshape/drop-1w      reshape.pml -DW=1 -DPOL=2"
	"model  reshape/drain-2w-1task reshape.pml -DW=2 -DPOL=1 -DNT=1"
	"model  reshape/close-drain-1w reshape.pml -DW=1 -DPOL=1 -DCLOSE=1"
	"model  reshape/close-drop-1w reshape.pml -DW=1 -DPOL=2 -DCLOSE=1"
	"model  reshape/rm2-1w       reshape.pml -DW=1 -DPOL=1 -DRM2=1"
	"model  reshape/side-hold-1w reshape.pml -DW=1 -DPOL=2 -DNT=1 -DSIDE=1"
	"model  reshape/side-inline-1w reshape.pml -DW=1 -DPOL=1 -DNT=1 -DSIDE=2"
	"mutant pause/m1-resume-nowake pause.pml -DW=1 -DPER0=1 -DPER1=0 -DRESUME=1 -DMUTANT=1"
	"mutant pause/m2-close-noresume pause.pml -DW=1 -DPER0=1 -DPER1=0 -DCLOSE=1 -DRESUME=0 -DMUTANT=2"
	"mutant pause/m3-stopped-unlocked pause.pml -DW=1 -DPER0=1 -DPER1=0 -DCLOSE=1 -DRESUME=0 -DMUTANT=3"
	"mutant pause/m4-empty-ignores-blocked pause.pml -DW=1 -DPER0=1 -DPER1=0 -DRESUME=0 -DMUTANT=4 -DNP"
	"mutant pause/m5-handover-ignores-blocked pause.pml -DW=1 -DPER0=1 -DPER1=1 -DRESUME=0 -DHANDOFF=1 -DMUTANT=5"
	"mutant pause/m6-takeidle-ignores-paused pause.pml -DW=1 -DPER0=0 -DPER1=0 -DRESUME=1 -DREENTER=1 -DMUTANT=6"
	"model  rate/1w-2tasks       pause.pml -DW=1 -DPER0=2 -DPER1=0 -DRATE=1 -DTK0=0 -DPAUSES=0"
	"model  rate/1w-2chans       pause.pml -DW=1 -DPER0=1 -DPER1=1 -DRATE=1 -DTK0=0 -DPAUSES=0"
	"model  rate/pause-1w        pause.pml -DW=1 -DPER0=2 -DPER1=0 -DRATE=1 -DRESUME=2"
	"model  rate/setrate-1w      pause.pml -DW=1 -DPER0=2 -DPER1=0 -DRATE=1 -DZERO=1 -DSETRATE=1 -DPAUSES=0"
	"model  rate/close-coc-1w    pause.pml -DW=1 -DPER0=2 -DPER1=0 -DRATE=1 -DTK0=0 -DCLOSE=1 -DRESUME=0"
	"model  rate/close-drop-1w   pause.pml -DW=1 -DPER0=2 -DPER1=0 -DRATE=1 -DTK0=0 -DCLOSE=1 -DCOC0=0 -DPAUSES=0"
	"mutant rate/m7-arm-before-block pause.pml -DW=1 -DPER0=2 -DPER1=0 -DRATE=1 -DTK0=0 -DPAUSES=0 -DMUTANT=7"
	"mutant rate/m8-no-bucket-reread pause.pml -DW=1 -DPER0=1 -DPER1=0 -DRATE=1 -DZERO=1 -DSETRATE=1 -DPAUSES=0 -DMUTANT=8"
	"mutant rate/m9-timer-ignores-pause pause.pml -DW=1 -DPER0=2 -DPER1=0 -DRATE=1 -DTK0=0 -DRESUME=0 -DMUTANT=9"
	"mutant rate/m10-no-stopped-reread pause.pml -DW=1 -DPER0=2 -DPER1=0 -DRATE=1 -DTK0=0 -DCLOSE=1 -DPAUSES=0 -DMUTANT=10"
	"mutant rate/m11-close-keeps-block pause.pml -DW=1 -DPER0=2 -DPER1=0 -DRATE=1 -DTK0=0 -DCLOSE=1 -DPAUSES=0 -DMUTANT=11"
	"model  rate/slow-burst2-2w  pause.pml -DW=2 -DPER0=2 -DPER1=0 -DRATE=1 -DBURST=2 -DSLOW=1 -DPAUSES=0"
	"mutant rate/m12-refund-keeps-block pause.pml -DW=2 -DPER0=2 -DPER1=0 -DRATE=1 -DBURST=2 -DSLOW=1 -DPAUSES=0 -DMUTANT=12"
	"mutant rate/m13-no-token-reread pause.pml -DW=2 -DPER0=2 -DPER1=0 -DRATE=1 -DBURST=2 -DSLOW=1 -DPAUSES=0 -DMUTANT=13"
	"mutant reshape/m1-detach-held reshape.pml -DW=1 -DPOL=1 -DMUTANT=1"
	"mutant reshape/m2-reuse-nograce reshape.pml -DW=1 -DPOL=2 -DMUTANT=2"
	"mutant reshape/m3-held-late reshape.pml -DW=1 -DPOL=1 -DMUTANT=3"
	"mutant reshape/m4-held-first reshape.pml -DW=1 -DPOL=1 -DMUTANT=4"
	"mutant reshape/m5-grace-inverted reshape.pml -DW=1 -DPOL=2 -DMUTANT=5"
	"mutant reshape/asis-closeheld reshape.pml -DW=1 -DPOL=1 -DCLOSE=1 -DCLOSEHELD=0"
	"mutant reshape/asis-closeheld-rm2 reshape.pml -DW=1 -DPOL=1 -DRM2=1 -DCLOSEHELD=0"
	"mutant reshape/m6-inline-removal-first reshape.pml -DW=1 -DPOL=1 -DNT=1 -DSIDE=2 -DMUTANT=6"
	"mutant reshape/m7-hold-after-unlock reshape.pml -DW=1 -DPOL=2 -DNT=1 -DSIDE=1 -DMUTANT=7"
	"mutant reshape/m8-quiet-before-held reshape.pml -DW=1 -DPOL=2 -DMUTANT=8"
	"mutant reshape/asis-side-hold reshape.pml -DW=1 -DPOL=2 -DNT=1 -DSIDE=1 -DHOLD=0"
	"mutant reshape/asis-side-inline reshape.pml -DW=1 -DPOL=1 -DNT=1 -DSIDE=2 -DHOLD=0"
	"mutant reshape/asis-rmshare reshape.pml -DW=1 -DPOL=2 -DCLOSE=1 -DRMSHARE=0"
	"model  reshape/side-hold-close-1w-1task reshape.pml -DW=1 -DPOL=2 -DNT=1 -DSIDE=1 -DCLOSE=1 -Og"
	"mutant reshape/asis-holdshare reshape.pml -DW=1 -DPOL=2 -DNT=1 -DSIDE=1 -DCLOSE=1 -DHOLDSHARE=0"
	"mutant spawn/m1-wait-at-limit spawn.pml -DW=2 -DD=2 -DHELP=0"
	"mutant buffer/m1-exit-on-summary buffer.pml -DW=2 -DNT=3 -DNQ=1 -DB=2 -DMUTANT=1"
	"mutant buffer/m2-steal-nocas buffer.pml -DW=2 -DNT=3 -DNQ=1 -DB=2 -DMUTANT=2"
	"mutant buffer/m3-fill-nolock buffer.pml -DW=2 -DNT=7 -DNQ=4 -DB=2 -DCOC=1 -DPARK=0 -DMUTANT=3 -Og"
	"mutant buffer/m4-buffered-nodrop buffer.pml -DW=2 -DNT=3 -DNQ=1 -DB=2 -DMUTANT=4"
	"mutant buffer/m5-fill-nowake buffer.pml -DW=2 -DNT=2 -DNQ=0 -DB=2 -DSHARE=1 -DBLOCK=1 -DMUTANT=5"
	"mutant buffer/m6-park-summary-only buffer.pml -DW=2 -DNT=2 -DNQ=0 -DB=2 -DSHARE=1 -DBLOCK=1 -DMUTANT=6"
	"mutant close/m1-count-late  close.pml -DW=2 -DNT=1 -DFOL1=0 -DMUTANT=1"
	"mutant close/m2-dec-early   close.pml -DW=2 -DNT=1 -DFIRSTCH=1 -DMUTANT=2"
	"mutant close/m3-smartpool   close.pml -DW=2 -DNT=1 -DFOL1=0 -DMUTANT=3"
	"mutant close/m4-read-order  close.pml -DW=2 -DNT=1 -DFIRSTCH=1 -DMUTANT=4 -Og"
	"mutant close/m5-park-close  close.pml -DW=2 -DNT=1 -DFOL1=0 -DMUTANT=5"
	"mutant close/m6-no-wakeall  close.pml -DW=2 -DNT=1 -DFOL1=0 -DMUTANT=6"
	"mutant close/m7-idle-norecheck close.pml -DW=2 -DNT=1 -DFOL1=0 -DMUTANT=7"
	"mutant close/m8-adopt-parked close.pml -DW=2 -DNT=1 -DFOL1=0 -DMUTANT=8"
	"mutant close/m9-timeout-store close.pml -DW=1 -DNT=1 -DFOL1=0 -DIDLE=1 -DMUTANT=9"
	"mutant close/m10-takeidle-load close.pml -DW=1 -DNT=1 -DFOL1=0 -DIDLE=1 -DMUTANT=10"
	"mutant close/m11-bear-nocas close.pml -DW=1 -DNT=1 -DMAXY=0 -DLAZY=1 -DMUTANT=11"
	"mutant close/m12-bear-late-share close.pml -DW=1 -DNT=1 -DMAXY=0 -DLAZY=1 -DHANDOFF=1 -DMUTANT=12"
	"mutant close/handdrop0       close.pml -DW=1 -DNT=1 -DFIRSTCH=1 -DHANDOFF=1 -DHANDDROP=0"
	"mutant close/m13-burst-lost  close.pml -DW=2 -DNT=2 -DMAXY=0 -DLAZY=1 -DHANDOFF=1 -DMUTANT=13"
	"mutant close/m14-cancel-noshare close.pml -DW=1 -DNT=2 -DMAXY=0 -DLAZY=1 -DCANCEL=1 -DMUTANT=14"
	"mutant close/m15-callback-noshare close.pml -DW=1 -DNT=1 -DMAXY=0 -DLAZY=1 -DCALLBACK=1 -DMUTANT=15"
	"mutant close/m16-host-carries-on close.pml -DW=1 -DNT=1 -DFOL1=0 -DLAZY=1 -DMUTANT=16"
	"mutant close/asis-wake      close.pml -DW=2 -DNT=1 -DFOL1=0 -DWAKE=0"
	"mutant close/asis-exit      close.pml -DW=2 -DNT=1 -DFOL1=0 -DEXIT=0 -Og"
	"mutant close/asis-closebear close.pml -DW=1 -DNT=1 -DMAXY=0 -DLAZY=1 -DCLOSEBEAR=0"
	"mutant close/asis-liveexit  close.pml -DW=1 -DNT=1 -DMAXY=0 -DLAZY=1 -DCLOSEBEAR=0 -DLIVEEXIT=0 -DNP"
	"mutant park/m1-no-recheck   park.pml  -DW=2 -DPER0=2 -DPER1=0 -DMUTANT=1"
	"mutant park/m2-clear-late   park.pml  -DW=2 -DPER0=2 -DPER1=0 -DMUTANT=2"
	"mutant park/m3-chain-early  park.pml  -DW=2 -DPER0=2 -DPER1=0 -DMUTANT=3"
	"mutant park/m4-no-repair    park.pml  -DW=2 -DPER0=2 -DPER1=0 -DMUTANT=4"
	"mutant park/m5-repair-nowake park.pml -DW=2 -DPER=1 -DMUTANT=5"
	"mutant park/m6-no-second-look park.pml -DW=2 -DPER0=2 -DPER1=0 -DMUTANT=6"
	"mutant park/m7-len-first    park.pml  -DW=2 -DPER0=2 -DPER1=0 -DMUTANT=7"
	"mutant park/m8-store-late   park.pml  -DW=2 -DPER0=2 -DPER1=0 -DMUTANT=8 -DNP"
	"mutant park/m9-check-first  park.pml  -DW=2 -DPER0=2 -DPER1=0 -DMUTANT=9"
	"mutant park/m10-rouse-load  park.pml  -DW=2 -DPER0=2 -DPER1=0 -DLAZY=1 -DIDLE=1 -DMUTANT=10"
	"mutant park/m11-wake-unborn park.pml  -DW=2 -DPER0=2 -DPER1=0 -DLAZY=1 -DSTART=1 -DMUTANT=11"
	"mutant park/m12-timeout-store park.pml -DW=2 -DPER0=2 -DPER1=0 -DLAZY=1 -DIDLE=1 -DMUTANT=12"
	"mutant park/m13-start-nolook park.pml -DW=1 -DPER0=1 -DPER1=0 -DLAZY=1 -DPRESTART=1 -DMUTANT=13"
	"mutant park/m14-handed-noreread park.pml -DW=2 -DPER=1 -DLAZY=1 -DIDLE=1 -DHANDOFF=1 -DMUTANT=14"
	"mutant park/m15-poll-before-pop park.pml -DW=2 -DPER=1 -DHANDOFF=1 -DMUTANT=15"
	"mutant park/m16-next-late   park.pml  -DW=2 -DPER=1 -DLAZY=1 -DIDLE=1 -DHANDOFF=1 -DMUTANT=16"
	"mutant park/m17-idle-at-pop park.pml  -DW=2 -DPER=1 -DLAZY=1 -DIDLE=1 -DHANDOFF=1 -DMUTANT=17"
	"mutant park/m18-burst-lost  park.pml  -DW=2 -DPER=1 -DLAZY=1 -DIDLE=1 -DHANDOFF=1 -DMUTANT=18"
	"model  park/burst0-lazy-idle-2fifos park.pml -DW=2 -DPER=1 -DLAZY=1 -DIDLE=1 -DHANDOFF=1 -DBURST=0"
	"mutant park/asis-wake       park.pml  -DW=2 -DPER=1 -DWAKE=0"
	"mutant park/asis-parkwake   park.pml  -DW=2 -DPER=1 -DPARKWAKE=0 -DSETSUM=0"
	"mutant park/asis-stalebit   park.pml  -DW=2 -DPER0=2 -DPER1=0 -DSTALEBIT=0"
	"mutant park/asis-lostbit    park.pml  -DW=2 -DPER0=2 -DPER1=0 -DLOSTBIT=0"
	"mutant park/asis-backwake   park.pml  -DW=2 -DPER0=2 -DPER1=0 -DBACKWAKE=0"
)
soak=(
	"model  close/cancel-coc-2w   close.pml -DW=2 -DNT=2 -DMAXY=0 -DLAZY=1 -DCANCEL=1 -DFIRSTCH=1"
	"model  close/cancel-handoff-drop-2w close.pml -DW=2 -DNT=2 -DMAXY=0 -DLAZY=1 -DHANDOFF=1 -DCANCEL=1"
	"model  close/coc-yield-twice close.pml -DW=2 -DNT=1 -DFOL1=0 -DMAXY=2"
	"model  close/drop-yield     close.pml -DW=2 -DNT=1 -DFIRSTCH=1"
	"model  close/two-tasks-1w   close.pml -DW=1 -DNT=2"
	"model  close/3w-one-fresh   close.pml -DW=3 -DNT=1 -DFOL1=0 -DMAXY=0"
	"model  close/two-fresh-2w-idle close.pml -DW=2 -DNT=2 -DMAXY=0 -DIDLE=1"
	"model  close/lazy1-two-fresh-2w close.pml -DW=2 -DNT=2 -DMAXY=0 -DLAZY=1 -DSTART=1"
	"model  close/handoff-idle-coc-yield-1w close.pml -DW=1 -DNT=1 -DFOL1=0 -DIDLE=1 -DHANDOFF=1"
	"model  close/handoff-two-fresh-2w close.pml -DW=2 -DNT=2 -DMAXY=0 -DHANDOFF=1"
	"model  buffer/2w-4tasks     buffer.pml -DW=2 -DNT=4 -DNQ=2 -DB=2"
	"model  buffer/2w-5tasks-b4  buffer.pml -DW=2 -DNT=5 -DNQ=2 -DB=4"
	"model  buffer/claims-7tasks buffer.pml -DW=2 -DNT=7 -DNQ=4 -DB=2 -DPARK=0"
	"model  buffer/claims-5tasks-b4 buffer.pml -DW=2 -DNT=5 -DNQ=2 -DB=4 -DPARK=0"
	"model  buffer/block-3tasks  buffer.pml -DW=2 -DNT=3 -DNQ=0 -DB=2 -DSHARE=1 -DBLOCK=1 -DCOC=1"
	"model  park/2w-1fifo-4tasks park.pml  -DW=2 -DPER0=4 -DPER1=0"
	"model  park/np-2w-2fifos    park.pml  -DW=2 -DPER=1 -DNP"
	"model  park/alt-nobitset    park.pml  -DW=2 -DPER=1 -DNOBITSET=1"
	"model  park/np-lazy-idle-1fifo park.pml -DW=2 -DPER0=2 -DPER1=0 -DLAZY=1 -DIDLE=1 -DNP"
	"model  park/lazy1-idle-2w   park.pml  -DW=2 -DPER0=2 -DPER1=0 -DLAZY=1 -DSTART=1 -DIDLE=1"
	"mutant park/asis-tidywake   park.pml  -DW=2 -DPER0=1 -DPER1=2 -DTIDYWAKE=0 -DSETSUM=0"
	"model  park/handoff-2w-2fifos park.pml -DW=2 -DPER=1 -DHANDOFF=1"
	"model  park/np-handoff-2w-1fifo park.pml -DW=2 -DPER0=2 -DPER1=0 -DHANDOFF=1 -DNP"
	"model  park/handoff-prestart-2w-2fifos park.pml -DW=2 -DPER=1 -DLAZY=1 -DPRESTART=1 -DHANDOFF=1"
	"model  pause/close-2w       pause.pml -DW=2 -DPER0=1 -DPER1=0 -DCLOSE=1 -DRESUME=0"
	"model  pause/close-2chans-1w pause.pml -DW=1 -DPER0=1 -DPER1=1 -DCLOSE=1 -DRESUME=0"
	"model  pause/2w-2tasks      pause.pml -DW=2 -DPER0=2 -DPER1=0 -DRESUME=2"
	"model  pause/handoff-2w-resume pause.pml -DW=2 -DPER0=1 -DPER1=0 -DRESUME=1 -DHANDOFF=1"
	"model  pause/reenter-2w     pause.pml -DW=2 -DPER0=0 -DPER1=0 -DRESUME=1 -DREENTER=1"
	"model  pause/reenter-1w-2chans pause.pml -DW=1 -DPER0=0 -DPER1=1 -DRESUME=2 -DREENTER=1"
	"model  pause/reenter-handoff-1w pause.pml -DW=1 -DPER0=0 -DPER1=1 -DRESUME=2 -DREENTER=1 -DHANDOFF=1"
	"model  rate/slow-burst2-pause-2w pause.pml -DW=2 -DPER0=2 -DPER1=0 -DRATE=1 -DBURST=2 -DSLOW=1 -DRESUME=2"
	"model  reshape/close-coc-1w reshape.pml -DW=1 -DPOL=1 -DCLOSE=1 -DCOCA=1"
	"model  reshape/drop-2w      reshape.pml -DW=2 -DPOL=2"
	"model  reshape/close-drop-2w-1task reshape.pml -DW=2 -DPOL=2 -DNT=1 -DCLOSE=1"
	"model  reshape/rm2-close-1w reshape.pml -DW=1 -DPOL=1 -DRM2=1 -DCLOSE=1"
	"model  reshape/side-hold-close-1w reshape.pml -DW=1 -DPOL=2 -DSIDE=1 -DCLOSE=1"
	"model  reshape/side-inline-2w reshape.pml -DW=2 -DPOL=2 -DNT=1 -DSIDE=2"
)
asis=(	"model  close/asis           close.pml -DW=2 -DNT=1 -DFOL1=0 -DWAKE=0 -DEXIT=0 -DPARKWAKE=0"
	"model  close/asis-lazy      close.pml -DW=1 -DNT=1 -DMAXY=0 -DLAZY=1 -DCLOSEBEAR=0 -DLIVEEXIT=0"
	"model  park/asis            park.pml  -DW=2 -DPER=1 -DWAKE=0 -DPARKWAKE=0 -DTIDYWAKE=0 -DSETSUM=0"
	"model  park/asis-fifo       park.pml  -DW=2 -DPER0=2 -DPER1=0 -DSTALEBIT=0 -DLOSTBIT=0 -DBACKWAKE=0"
	"model  reshape/asis-closeheld reshape.pml -DW=1 -DPOL=1 -DCLOSE=1 -DCLOSEHELD=0"
	"model  reshape/asis-side-hold reshape.pml -DW=1 -DPOL=2 -DNT=1 -DSIDE=1 -DHOLD=0"
	"model  reshape/asis-side-inline reshape.pml -DW=1 -DPOL=1 -DNT=1 -DSIDE=2 -DHOLD=0"
	"model  reshape/asis-rmshare reshape.pml -DW=1 -DPOL=2 -DCLOSE=1 -DRMSHARE=0"
	"model  reshape/asis-holdshare reshape.pml -DW=1 -DPOL=2 -DNT=1 -DSIDE=1 -DCLOSE=1 -DHOLDSHARE=0"
)
case "$mode" in
ci) checks=("${ci[@]}") ;;
soak) checks=("${soak[@]}") ;;
asis) checks=("${asis[@]}") ;;
esac
if [ -n "${SPIN_ONLY:-}" ]; then
	only=()
	for c in "${checks[@]}"; do
		read -r _ name _ <<<"$c"
		if grep -qE -- "$SPIN_ONLY" <<<"$name"; then only+=("$c"); fi
	done
	if [ "${#only[@]}" = 0 ]; then
		echo "run.sh: no check matches SPIN_ONLY=$SPIN_ONLY" >&2
		exit 2
	fi
	checks=("${only[@]}")
fi

memlim=${SPIN_MEMLIM:-8192} # MB per pan
jobs=${SPIN_JOBS:-2}         # checks run at once
extra=""
hashw=24
if [ "$mode" = soak ]; then
	extra="-DCOLLAPSE"
	memlim=${SPIN_MEMLIM:-20000}
	jobs=${SPIN_JOBS:-1}
	hashw=28
fi

# check N "kind name file defs...": verify one configuration in $tmp/N and
# leave its result line in $tmp/N/result, "FAIL" in $tmp/N/failed if it failed.
check() {
	local n=$1 kind name file defs dir out start end secs states errors errline incomplete result detail opt mode_c mode_r
	read -r kind name file defs <<<"$2"
	mode_c=-DSAFETY # safety: assertions and invalid end states
	mode_r=""
	case " $defs " in
	*" -DNP "*) mode_c=-DNP mode_r=-l ;; # non-progress cycles (and assertions)
	esac
	case " $defs " in
	*" -DCOLLAPSE "*) mode_c="$mode_c -DCOLLAPSE" ;; # a pan option: state compression
	esac
	dir="$tmp/$n"
	mkdir -p "$dir"
	cp "$here/$file" "$dir/"
	cd "$dir"
	# gcc builds close.pml's verifier in about 3 s at -O0, 12 s at -Og and
	# 20-30 s at -O1, and -Og's verifier searches within 10% of -O1's (the
	# 65.7 million states of close/coc-yield: 193 s against 202 s), about
	# 1.5 times as fast as -O0's. Most checks search for less than the
	# build's difference: they compile at -O0; those marked -Og (a search
	# of half a minute or more at -O0, mutants included) compile at -Og,
	# and soak runs at -O1.
	opt=-O0
	case " $defs " in
	*" -Og "*) opt=-Og; defs=${defs/-Og/} ;;
	esac
	[ "$mode" = soak ] && opt=-O1
	# shellcheck disable=SC2086
	if ! spin -a $defs "$file" >spin.out 2>&1 || ! gcc $opt -w $mode_c -DMEMLIM="$memlim" $extra -o pan pan.c >>spin.out 2>&1; then
		printf '%-7s %-28s %-8s\n%s\n' "$kind" "$name" FAIL "$(cat spin.out)" >result
		echo FAIL >failed
		return
	fi
	start=$(date +%s.%N)
	# shellcheck disable=SC2086
	./pan $mode_r -m1000000 -w$hashw >pan.out 2>&1 || true
	end=$(date +%s.%N)
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
	out=pan.out
	states=$(awk '/states, stored/ { print $1; exit }' "$out")
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$out" | head -1)
	errline=$(grep -m1 -E '^pan:1:' "$out" | sed 's/^pan:1: //' || true)
	incomplete=""
	if grep -qE 'max search depth too small|out of memory|memory limit|MEMLIM bound|Search not completed' "$out"; then
		incomplete="search incomplete"
	fi
	result=ok
	detail=""
	case "$kind" in
	model)
		if [ "${errors:-1}" != 0 ] || [ -n "$incomplete" ]; then
			result=FAIL
			detail="${errline:-${incomplete:-no result}}"
		fi
		;;
	mutant)
		if [ "${errors:-0}" = 0 ]; then
			result=FAIL
			detail="mutant not caught: verification passed"
		else
			result=caught
			detail="$errline"
		fi
		;;
	esac
	[ "$result" = FAIL ] && echo FAIL >failed
	printf '%-7s %-28s %-8s %12s %8s  %s\n' "$kind" "$name" "$result" "${states:-?}" "$secs" "$detail" >result
	if [ "$result" != ok ] && [ "$verbose" = 1 ] && [ -f "$file.trail" ]; then
		# shellcheck disable=SC2086
		spin -t -g -l $defs "$file" 2>&1 | sed -n '/^spin: trail ends/,$p' |
			grep -vE '^\s+queue [0-9]+ \((tok|grant|rel)\[[0-9]+\]\): $' | sed 's/^/    /' >>result
	fi
	rm -f pan pan.c pan.? pan.?? pan.out
}

total_start=$(date +%s.%N)
n=0
for c in "${checks[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n || true
	done
	n=$((n + 1))
	(check "$n" "$c") &
done
wait

printf '%-7s %-28s %-8s %12s %8s  %s\n' kind name result states seconds detail
passed=0
failed=0
for i in $(seq 1 "$n"); do
	cat "$tmp/$i/result"
	if [ -f "$tmp/$i/failed" ]; then failed=$((failed + 1)); else passed=$((passed + 1)); fi
done
total_end=$(date +%s.%N)
awk -v a="$total_start" -v b="$total_end" 'BEGIN { printf "total %.1f s (wall, %s at once)\n", b - a, "'"$jobs"'" }'
echo "spin: $passed passed, $failed failed"
if [ "$failed" != 0 ]; then
	echo "run.sh: FAILED (a model failed or a mutant passed)" >&2
	exit 1
fi
echo "run.sh: all models verified, all mutants caught"
