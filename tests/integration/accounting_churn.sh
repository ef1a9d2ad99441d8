#!/usr/bin/env bash
# Issue #14: system-wide under process churn (~200 new processes a second,
# each a distinct executable of 2000), the exact accounting stays exact:
# every record the BPF side numbered is either received or counted as not
# sent (no "mismatch!", nothing out of order), taken = kept + idle + not
# selected + lost, and bpfsampler's own memory stays flat: it forgets the
# processes that exited. At 99 Hz, the rate of the report, and at 997 Hz in
# stream mode, where the completions (task context, preemptible) send the
# most records.
. "$(dirname "$0")/lib.sh"
require_root accounting_churn

python3 "$ROOT/tests/tools/distinct_copies.py" "$W/churn_child" "$TMP/exes" 2000 ||
	fail "2000 distinct executables"

# rss_kb PID: VmRSS of a live process.
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

DUR=24
for run in "99 aggregate" "997 stream"; do
	read -r hz mode <<<"$run"
	name="churn at $hz Hz ($mode)"
	f=$TMP/churn-$hz.folded
	"$W/churn" "$TMP/exes" $((DUR + 1)) 200 5 >"$TMP/churn-$hz.out" &
	c=$!
	sleep 0.3
	"$BPFS" -F "$hz" --mode "$mode" -d "$DUR" -v -o "$f" 2>"$f.err" &
	b=$!
	: >"$TMP/rss-$hz"
	t0=$(date +%s%N)
	while kill -0 "$b" 2>/dev/null; do
		r=$(rss_kb "$b")
		[ -n "$r" ] && echo "$(( ($(date +%s%N) - t0) / 1000000 )) $r" >>"$TMP/rss-$hz"
		sleep 1
	done
	wait "$b" || fail "$name: bpfsampler failed" "$(tail -5 "$f.err")"
	wait "$c"
	started=$(awk '{ print $1 }' "$TMP/churn-$hz.out")
	[ "${started:-0}" -gt $((DUR * 150)) ] && pass "$name: $started processes started" ||
		fail "$name: ~200 processes a second" "$(cat "$TMP/churn-$hz.out")"
	identity "$name" "$f"
	# Every numbered record is received or counted unsent: the summary's
	# rings line, when there is one, has equal counts and no mismatch.
	unsent=$(grep -oE '[0-9]+ records not sent' "$f.err" | grep -oE '^[0-9]+')
	missing=$(grep -oE '[0-9]+ missing by sequence number' "$f.err" | grep -oE '^[0-9]+')
	if ! grep -qE 'mismatch|[1-9][0-9]* records out of order|still being sent' "$f.err" &&
		[ "${unsent:-0}" = "${missing:-0}" ]; then
		pass "$name: records numbered = received + not sent (unsent ${unsent:-0}, missing ${missing:-0})"
	else
		fail "$name: records numbered = received + not sent" "$(grep -E 'rings|complet|warn' "$f.err")"
	fi
	# Memory while sampling (once a second, "ms kB", for DUR s; after that
	# the profile is built and written). The CLI folds the samples of
	# exited processes into the profile and forgets them, their files and
	# stack segments (issue #14), so after a warm-up (6 s: the first
	# processes' grace, the first files) RSS stays flat: the lowest of the
	# last third within 10% + 2 MB of the first third's mean (keeping every
	# process to the end, it grew ~1 MB/s here: 40% more). At 997 Hz the
	# profile itself grows with the processes (pprof keeps each one's
	# samples and its own addresses: ~0.4 MB/s), so within 20% there
	# (keeping every process: 30% more). 128 MB at the peak (writing
	# included).
	margin=1.10 slack=2048
	[ "$mode" = stream ] && margin=1.20 slack=0
	read -r n first_mean last_min peak < <(awk -v d="$DUR" '$1 >= 6000 && $1 < d * 1000 { v[++n] = $2 }
		{ if ($2 > p) p = $2 }
		END {
			t = int(n / 3); s = 0; m = 0
			for (i = 1; i <= t; i++) s += v[i]
			for (i = n - t + 1; i <= n; i++) if (!m || v[i] < m) m = v[i]
			printf "%d %d %d %d\n", n, t ? s / t : 0, m, p
		}' "$TMP/rss-$hz")
	echo "  # $name: RSS (kB) after warm-up: first third mean $first_mean, last third min $last_min, peak $peak"
	if [ -n "${SANITIZE:-}" ]; then
		# ASan's shadow memory and quarantine: 240 MB at the middle here
		skip "$name: RSS flat" "not measurable under -fsanitize=$SANITIZE (the plain suite checks it)"
	# polls: one a second alone, fewer when the host is loaded (8 of 18
	# seen); three make the thirds
	elif [ "$n" -ge 3 ] && [ "$first_mean" -gt 0 ] && [ "$peak" -lt 131072 ] &&
		awk -v a="$first_mean" -v b="$last_min" -v m="$margin" -v s="$slack" 'BEGIN { exit !(b <= a * m + s) }'; then
		pass "$name: RSS flat: $((first_mean / 1024)) MB, then at least $((last_min / 1024)) MB while sampling, peak $((peak / 1024)) MB"
	else
		fail "$name: RSS flat" "first third $first_mean kB, last third at least $last_min kB (x $margin + $slack kB): $(awk '{ printf "%d:%d ", $1 / 1000, $2 / 1024 }' "$TMP/rss-$hz")"
	fi
done
