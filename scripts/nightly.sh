#!/usr/bin/env bash
# The nightly bundle: the soak and long runs, rows K1-K7 of TESTING.md.
#
#   scripts/nightly.sh              every step, k1 to k7 (about 4.5 h with k4)
#   scripts/nightly.sh k3 k4        only the steps named, in the order given
#   make nightly STEPS="k1 k2"      the same through make
#
# Steps:
#   k1  TestSoak_Mixed for NIGHTLY_SOAK (30m) at NIGHTLY_SOAK_RATE (50000) tasks/s
#   k2  the same under -race for NIGHTLY_RACE_SOAK (30m) at
#       NIGHTLY_RACE_SOAK_RATE (5000) tasks/s
#   k3  the suite loop: the Shutdown, Stress and Order tests (families A-C)
#       under -race, -count=NIGHTLY_SUITE_COUNT (200), shuffled
#   k4  fuzz rotation: every Fuzz target of the module for NIGHTLY_FUZZTIME
#       (30m) each, without -race; FuzzPoolOps (H1) again under -race for
#       NIGHTLY_FUZZTIME_RACE (10m). Targets are found by grep, so a new one
#       joins the rotation without an edit here.
#   k5  C8 TestOrder_RoundRobinShares_Wall NIGHTLY_WALL_COUNT (10) times with
#       a CPU-burning goroutine beside it (SMARTPOOL_TEST_HOG=1)
#   k6  big counts through SMARTPOOL_TEST_SCALE, one test at a time (table in
#       step_k6), each scale multiplied by NIGHTLY_SCALE_FACTOR (1)
#   k7  the spin models' big configurations: bash internal/model/run.sh
#       NIGHTLY_MODEL_ARGS (--soak; needs about 20 GB and spin, gcc)
#
# A 90-minute CI job fits k1+k2 (1 h) and k3/k6/k7; the fuzz rotation (k4,
# 2.5 h for five targets) then runs on alternate nights: schedule
# `nightly.sh k1 k2 k3 k5 k6 k7` and `nightly.sh k4` accordingly.
#
# Every step runs to its end even if a command in it fails (a nightly report
# should list every failure), prints one summary line with its duration, and
# the script repeats the summary lines at the end and exits 1 if any step
# failed, 2 on a usage error. A fuzz failure leaves its input in the
# package's testdata/fuzz/<Target>/: commit it, and it runs as a test forever
# after.
#
# Smoke test of the script itself (a few minutes, not the nightly):
#   NIGHTLY_SOAK=20s NIGHTLY_RACE_SOAK=20s NIGHTLY_SUITE_COUNT=1 \
#   NIGHTLY_FUZZTIME=5s NIGHTLY_FUZZTIME_RACE=5s NIGHTLY_WALL_COUNT=1 \
#   NIGHTLY_SCALE_FACTOR=0.001 NIGHTLY_MODEL_ARGS= scripts/nightly.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
export GORACE="halt_on_error=1"

soak=${NIGHTLY_SOAK:-30m}
soak_rate=${NIGHTLY_SOAK_RATE:-50000}
race_soak=${NIGHTLY_RACE_SOAK:-30m}
race_soak_rate=${NIGHTLY_RACE_SOAK_RATE:-5000}
suite_count=${NIGHTLY_SUITE_COUNT:-200}
fuzztime=${NIGHTLY_FUZZTIME:-30m}
fuzztime_race=${NIGHTLY_FUZZTIME_RACE:-10m}
wall_count=${NIGHTLY_WALL_COUNT:-10}
scale_factor=${NIGHTLY_SCALE_FACTOR:-1}
model_args=${NIGHTLY_MODEL_ARGS---soak}

all_steps=(k1 k2 k3 k4 k5 k6 k7)

usage() {
	echo "usage: $0 [step...]   steps: ${all_steps[*]} (default: all); see the header for the NIGHTLY_* knobs" >&2
	exit 2
}

# seconds DURATION: a Go-style duration of whole h, m and s units ("30m",
# "1h30m", "20s") in seconds.
seconds() {
	local d=$1 total=0
	[ -n "$d" ] || { echo "empty duration" >&2; return 1; }
	while [[ $d =~ ^([0-9]+)([hms])(.*)$ ]]; do
		case ${BASH_REMATCH[2]} in
		h) total=$((total + BASH_REMATCH[1] * 3600)) ;;
		m) total=$((total + BASH_REMATCH[1] * 60)) ;;
		s) total=$((total + BASH_REMATCH[1])) ;;
		esac
		d=${BASH_REMATCH[3]}
	done
	[ -z "$d" ] || { echo "bad duration $1: want whole h, m and s units such as 30m or 1h30m" >&2; return 1; }
	echo "$total"
}

# hms SECONDS: "1h02m03s", "4m05s" or "7s".
hms() {
	local s=$1
	if [ "$s" -ge 3600 ]; then
		printf '%dh%02dm%02ds' $((s / 3600)) $((s % 3600 / 60)) $((s % 60))
	elif [ "$s" -ge 60 ]; then
		printf '%dm%02ds' $((s / 60)) $((s % 60))
	else
		printf '%ds' "$s"
	fi
}

# run CMD...: echo and run one command of a step; a failure marks the step
# failed and the step goes on.
failed_cmds=0
run() {
	echo "+ $*"
	local rc=0
	"$@" || rc=$?
	if [ "$rc" != 0 ]; then
		echo "nightly: FAILED (exit $rc): $*"
		failed_cmds=$((failed_cmds + 1))
	fi
}

# soak_timeout DURATION: go test's -timeout for a soak of DURATION: the run,
# plus 15 minutes for the build, the final checks and a stack dump if hung.
soak_timeout() { echo "$(($(seconds "$1") + 900))s"; }

step_k1() {
	SMARTPOOL_SOAK=$soak SMARTPOOL_SOAK_RATE=$soak_rate \
		run go test -run '^TestSoak_Mixed$' -count=1 -v -timeout "$(soak_timeout "$soak")" .
}

step_k2() {
	SMARTPOOL_SOAK=$race_soak SMARTPOOL_SOAK_RATE=$race_soak_rate \
		run go test -race -run '^TestSoak_Mixed$' -count=1 -v -timeout "$(soak_timeout "$race_soak")" .
}

# The tests of families A-C (shutdown, stress, ordering): TestShutdown_*,
# TestState_Monotonic and the two TestSubmit_ tests of family A,
# TestStress_*, TestOrder_* (C8, wall-clock, skips itself under -race).
suite_regex='^Test(Shutdown|Stress|Order)_|^TestState_Monotonic$|^TestSubmit_(AfterShutdownReturnsError|WhileShuttingDownFromTask)$'

step_k3() {
	# -timeout bounds the whole loop; a hang still dumps every goroutine.
	run go test -race -count="$suite_count" -shuffle=on -run "$suite_regex" -timeout 3h .
}

# fuzz_targets: "dir name" per line for every Fuzz target of this module
# (files under a nested go.mod belong to another module and are skipped).
fuzz_targets() {
	local file dir name d nested
	grep -rl --include='*_test.go' '^func Fuzz[A-Z0-9_a-z]*(' . | sort | while read -r file; do
		dir=$(dirname "$file")
		nested=0
		d=$dir
		while [ "$d" != . ]; do
			[ -f "$d/go.mod" ] && nested=1
			d=$(dirname "$d")
		done
		[ "$nested" = 0 ] || continue
		sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file" | while read -r name; do
			echo "$dir $name"
		done
	done
}

count_inputs() { ls "$1" 2>/dev/null | wc -l || true; } # files in a corpus directory, 0 if none

# fuzz DIR NAME TIME [go test flags...]. A run that fails with "context
# deadline exceeded" and writes no failing input hit Go 1.26's fuzz
# coordinator race at the end of -fuzztime (golang/go#75804, fixed in Go
# 1.27): it is reported, not counted as a failure. (.ci/run sidesteps the race
# with execution counts; the nightly's budgets are durations.)
fuzz() {
	local dir=$1 name=$2 t=$3 corpus inputs out rc=0
	shift 3
	corpus="$dir/testdata/fuzz/$name"
	inputs=$(count_inputs "$corpus")
	out=$(mktemp)
	echo "+ go test $* -run '^\$' -fuzz ^$name\$ -fuzztime $t -fuzzminimizetime 10s -timeout 0 $dir"
	go test "$@" -run '^$' -fuzz "^$name\$" -fuzztime "$t" -fuzzminimizetime 10s -timeout 0 "$dir" 2>&1 | tee "$out" || rc=$?
	if [ "$rc" != 0 ] && grep -q 'context deadline exceeded' "$out" && [ "$(count_inputs "$corpus")" = "$inputs" ]; then
		echo "nightly: $name ended with \"context deadline exceeded\" and no failing input: golang/go#75804, not a failure"
		rc=0
	fi
	rm -f "$out"
	if [ "$rc" != 0 ]; then
		echo "nightly: FAILED (exit $rc): fuzz $name"
		failed_cmds=$((failed_cmds + 1))
	fi
}

step_k4() {
	local targets dir name
	targets=$(fuzz_targets)
	[ -n "$targets" ] || { echo "nightly: no Fuzz target found"; failed_cmds=$((failed_cmds + 1)); return; }
	echo "fuzz targets:"
	while read -r dir name; do echo "  $dir $name"; done <<<"$targets"
	while read -r dir name; do
		fuzz "$dir" "$name" "$fuzztime"
	done <<<"$targets"
	if echo "$targets" | grep -q ' FuzzPoolOps$'; then
		fuzz "$(echo "$targets" | awk '$2 == "FuzzPoolOps" { print $1; exit }')" FuzzPoolOps "$fuzztime_race" -race
	else
		echo "nightly: FuzzPoolOps (H1) not found for the -race run"
		failed_cmds=$((failed_cmds + 1))
	fi
}

step_k5() {
	SMARTPOOL_TEST_HOG=1 run go test -run '^TestOrder_RoundRobinShares_Wall$' -count="$wall_count" -v -timeout 2h .
}

# Each row: package, test, SMARTPOOL_TEST_SCALE, what it reaches (the
# k6 counts listed in TESTING.md). Non-race, so the scale is the count's
# multiplier over the plain `go test` size.
k6_rows=(
	". TestShutdown_RacesSubmitAccounting 4000 A4: 10^6 iterations (250 at scale 1)"
	". TestShutdown_ImmediatelyAfterNew 256 A5: 65,536 new+close cycles"
	". TestShutdown_IdlePoolIsFast 100 A15/F3: 100,000 new+close cycles"
	"./channels TestLin_FIFO_TinyScenarios 250 I1: 10^7 scenarios"
	"./channels TestLin_FIFO_Medium 7.5 I2: 10,020 medium histories"
	". TestStress_ExactlyOnce 1000 B1: 10^8 tasks per scheduler (a 400 MB per-ID table, not a checksum)"
)

step_k6() {
	local row dir name sc what eff
	for row in "${k6_rows[@]}"; do
		read -r dir name sc what <<<"$row"
		eff=$(awk -v a="$sc" -v b="$scale_factor" 'BEGIN { printf "%g", a * b }')
		echo "-- $what (SMARTPOOL_TEST_SCALE=$eff)"
		SMARTPOOL_TEST_SCALE=$eff run go test -run "^$name\$" -count=1 -v -timeout 3h "$dir"
	done
}

step_k7() {
	# shellcheck disable=SC2086 # model_args is a word list, possibly empty
	run bash internal/model/run.sh $model_args
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=("${all_steps[@]}")
for s in "${steps[@]}"; do
	case " ${all_steps[*]} " in
	*" $s "*) ;;
	*) echo "unknown step: $s" >&2; usage ;;
	esac
done
# Check the durations now rather than fail a step hours in.
for d in "$soak" "$race_soak"; do seconds "$d" >/dev/null || usage; done

go version
summary=()
bad=0
start_all=$(date +%s)
for s in "${steps[@]}"; do
	echo
	echo "== nightly $s ($(date +%T))"
	t0=$(date +%s)
	# A subshell, so that a step's failure or its set -e stops only itself.
	# Not `( ... ) || rc=$?`: bash ignores set -e inside a tested subshell.
	set +e
	(
		set -euo pipefail
		failed_cmds=0
		"step_$s"
		[ "$failed_cmds" = 0 ]
	)
	rc=$?
	set -e
	t1=$(date +%s)
	result=ok
	if [ "$rc" != 0 ]; then
		result=FAIL
		bad=$((bad + 1))
	fi
	line=$(printf 'nightly: %-3s %-4s %s' "$s" "$result" "$(hms $((t1 - t0)))")
	echo "$line"
	summary+=("$line")
done
echo
echo "== nightly summary ($(hms $(($(date +%s) - start_all))) in all)"
printf '%s\n' "${summary[@]}"
if [ "$bad" != 0 ]; then
	echo "nightly: $bad of ${#steps[@]} steps failed"
	exit 1
fi
echo "nightly: all ${#steps[@]} steps passed"
