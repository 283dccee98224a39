#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/report-programs.sh [-o DIR] FILE - the "real programs" table and
# chart from the guest's bench_programs output (tests/programs/run.sh,
# programs_bench; `make bench` writes it to
# build/bench/<kernel>/bench_programs.txt) or the build host's
# (bench/programs-native.sh), on the host.
#
# Input lines (a "[label] " or "| " prefix does not matter):
#   program=P threads=T variant=V run=R unit=U value=X secs=S rc=N
#   [lock=.. unlock=.. spins=.. sleeps=.. steals=.. handoffs=.. wait=.. wake=..]
#   [load=L] [sum=C] [p99=US]
# and "targets: SET" (programs, lockbound, lockbound-busy; default
# programs), which chooses the targets.
# V is stock, tofutex (tofutex-run, module backend), futex (tofutex-run
# with TOFUTEX_BACKEND=futex) or tofutex/NAME=VALUE (module backend, its
# parameter NAME set to VALUE: a column of its own); the counters are the module's statistics
# moved by the run; value=FAILED when a run printed no metric; load is the
# load average at the end of the run, sum a checksum of output that must
# be the same in every run of the point.
#
# For each (program, threads) it prints, as a Markdown table, the median
# of each variant's runs in the program's own unit (a column per variant
# present), the stock runs' spread, the ratios of the medians to stock
# with the lowest and highest ratio of one round, whether 1.00 lies in
# that range, the medians of the 99th percentile latencies (p99, in
# microseconds) where the program reports them with the variant's / stock's,
# and for the module backend the median kernel calls per run:
# TOFUTEX_IOC_LOCK calls (with the sleeps and steals among them), and
# TOFUTEX_IOC_WAIT / _WAKE calls (condition variables). A variant whose
# runs all failed shows FAILED; every failed run is counted below the
# table, as are differing checksums and the load's range. Then the
# targets, read on the module variant (the futex one where no module ran):
# every ratio >= 0.97, sysbench mutex on one mutex >= 1.3 at 2-8 threads,
# stress-ng mutex >= 1.5; for the lock-bound programs (SET lockbound) every
# ratio >= 1.0 (0.97 with SET lockbound-busy, the table beside busy
# processes), the median ratio >= 1.3, the best over a program's thread
# counts against stock's best >= 1.3 for at least half the programs, and
# no p99 more than 1.5 x stock's; met or missed, "inside spread" when the
# rounds' ratios lie on both sides of the target. Writes to DIR (default:
# FILE's directory):
#   programs.md   the table (NAME.md for FILE bench_NAME.txt, and so on)
#   programs.csv  program,threads,unit,stock,tofutex,futex,tofutex_ratio,
#                 futex_ratio,tofutex_ratio_min,tofutex_ratio_max,
#                 futex_ratio_min,futex_ratio_max,runs,lock,unlock,spins,
#                 sleeps,steals,wait,wake,secs,stock_min,stock_max,
#                 tofutex_inside,futex_inside
#   programs.png  the ratios per point, medians with bars from the lowest
#                 to the highest ratio of one round (needs gnuplot)
set -euo pipefail

# shellcheck source=bench/report-args.sh
. "$(dirname "$0")/report-args.sh"
# The table's name from FILE's: bench_programs.txt gives programs.md,
# bench_lockbound_busy.txt lockbound_busy.md.
base=$(basename "$in" .txt)
base=${base#bench_}
md=$outdir/$base.md
csv=$outdir/$base.csv
png=$outdir/$base.png
dat=$outdir/.$base.dat
trap 'rm -f "$dat"' EXIT

tr -d '\r' <"$in" | sed -E 's/^(\[[^]]*\] )?(\| )?//' |
awk -v csv="$csv" -v dat="$dat" '
	function median(list,   n, i, j, t, a) {
		n = split(list, a, " ")
		if (!n)
			return ""
		for (i = 1; i <= n; i++)
			for (j = i + 1; j <= n; j++)
				if (a[j] + 0 < a[i] + 0) {
					t = a[i]; a[i] = a[j]; a[j] = t
				}
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function lowest(list,   n, i, a, m) {
		n = split(list, a, " ")
		m = ""
		for (i = 1; i <= n; i++)
			if (m == "" || a[i] + 0 < m)
				m = a[i] + 0
		return m
	}
	function highest(list,   n, i, a, m) {
		n = split(list, a, " ")
		m = ""
		for (i = 1; i <= n; i++)
			if (m == "" || a[i] + 0 > m)
				m = a[i] + 0
		return m
	}
	function num(v) {
		if (v == "")
			return "FAILED"
		return sprintf(v >= 100 ? "%.0f" : "%.2f", v)
	}
	function pair(sp) {
		return sp ~ /-/ ? "," : sp
	}
	function cell(r, sp,   a) {
		split(sp, a, /[ ,]/)
		return r == "-" || a[1] == "-" ? r : r " (" a[1] "-" a[2] ")"
	}
	# yes when 1.00 lies within the lowest and highest ratio of a round:
	# the variant was not told apart from stock in this run. One round
	# has no spread to tell: n/a. @n: the rounds behind @sp.
	function inside(sp, n,   a) {
		split(sp, a, /[ ,]/)
		if (a[1] == "-")
			return "-"
		if (n == 1)
			return "n/a, 1 round"
		return a[1] + 0 <= 1 && a[2] + 0 >= 1 ? "yes" : "no"
	}
	# inside() for the CSV: yes, no or empty.
	function csvinside(sp, n,   x) {
		x = inside(sp, n)
		return x == "yes" || x == "no" ? x : ""
	}
	function ratio(a, b) {
		return (a > 0 && b != "") ? sprintf("%.2f", b / a) : "-"
	}
	# The lowest and highest ratio of one round (the variants run side
	# by side) over the rounds where both ran: "min,max", or "- -"; how
	# many rounds that is in spreadn[pt, v].
	function spread(pt, v,   r, lo, hi, x) {
		lo = hi = ""
		spreadn[pt, v] = 0
		for (r = 1; r <= nround[pt]; r++) {
			if (!((pt " stock", r) in round) || !((pt " " v, r) in round) ||
			    round[pt " stock", r] <= 0)
				continue
			spreadn[pt, v]++
			x = round[pt " " v, r] / round[pt " stock", r]
			if (lo == "" || x < lo)
				lo = x
			if (hi == "" || x > hi)
				hi = x
		}
		return lo == "" ? "- -" : sprintf("%.2f,%.2f", lo, hi)
	}
	# verdict R SPREAD TARGET: met or missed, "inside spread" when the
	# rounds ratios reach both sides of TARGET.
	function verdict(r, sp, t,   a, in_sp) {
		if (r == "-")
			return "no data"
		split(sp, a, /[ ,]/)
		in_sp = a[1] != "-" && a[1] + 0 < t && a[2] + 0 >= t
		if (r + 0 >= t)
			return in_sp ? "met, inside spread" : "met"
		return in_sp ? "missed, inside spread" : "missed"
	}
	function target(name, pt, t,   v) {
		v = verdict(ratios[pt], spreads[pt], t)
		ntarget++
		nmet += v ~ /^met/
		nin += v ~ /inside/
		split(pt, q, " ")
		printf "| %s | %s %s | %s | %s |\n", name, q[1], q[2], cell(ratios[pt], spreads[pt]), v
	}
	# The lock-bound table'"'"'s targets (issue text in bench/programs.md).
	function lockbound_targets(   i, floor, pt, q, n, list, prog, nprog, bs, bv, nbest, nhalf, v, r) {
		floor = tset == "lockbound-busy" ? 0.97 : 1.0
		printf "\nTargets, on the ratio of %s to stock, of medians (in brackets\n",
		       pv == "tofutex" ? "tofutex-run on the module backend" : "tofutex-run on the futex backend"
		print "one round'"'"'s lowest-highest):"
		if (tset == "lockbound-busy")
			print "- every row >= 0.97: never worse than glibc because the machine is busy;"
		else {
			print "- every row >= 1.0: no lock-bound program slower than on glibc'"'"'s locks;"
			print "- the median of the rows >= 1.3;"
			print "- best thread count: a program'"'"'s highest median over its thread counts"
			print "  against stock'"'"'s highest (each at its own best, as LiTL compares locks)"
			print "  >= 1.3, for at least half the programs;"
		}
		print "- tail latency: no row'"'"'s p99 more than 1.5 x stock'"'"'s."
		print "\"inside spread\": the rounds reach both sides of the target."
		print ""
		print "| target | point | ratio | verdict |"
		print "|---|---|--:|---|"
		for (i = 1; i <= np; i++)
			target(">= " (floor == 1 ? "1.0" : floor), order[i], floor)
		if (tset != "lockbound-busy") {
			n = 0
			list = ""
			for (i = 1; i <= np; i++)
				if (ratios[order[i]] != "-") {
					n++
					list = list " " ratios[order[i]]
				}
			v = n && median(list) >= 1.3 ? "met" : "missed"
			ntarget++
			nmet += (v == "met")
			printf "| median >= 1.3 | %d rows | %s | %s |\n", n, n ? sprintf("%.2f", median(list)) : "-", v
			nprog = 0
			for (i = 1; i <= np; i++) {
				split(order[i], q, " ")
				if (!(q[1] in bs)) {
					prog[++nprog] = q[1]
					bs[q[1]] = bv[q[1]] = 0
				}
				if (meds[order[i], "stock"] > bs[q[1]])
					bs[q[1]] = meds[order[i], "stock"]
				if (meds[order[i], pv] > bv[q[1]])
					bv[q[1]] = meds[order[i], pv]
			}
			nbest = 0
			for (i = 1; i <= nprog; i++) {
				r = bs[prog[i]] > 0 ? bv[prog[i]] / bs[prog[i]] : 0
				nbest += (r >= 1.3)
				printf "| best thread count >= 1.3 | %s | %.2f | %s |\n", prog[i], r,
				       (r >= 1.3 ? "met" : "missed")
			}
			nhalf = (nbest * 2 >= nprog)
			ntarget++
			nmet += nhalf
			printf "| best >= 1.3 for half the programs | %d of %d | - | %s |\n", nbest, nprog,
			       nhalf ? "met" : "missed"
		}
		for (i = 1; i <= np; i++) {
			pt = order[i]
			if (!(pt in p99r) || p99r[pt] == "-")
				continue
			split(pt, q, " ")
			v = p99r[pt] + 0 <= 1.5 ? "met" : "missed"
			ntarget++
			nmet += (v == "met")
			printf "| p99 <= 1.5 x stock | %s %s | %s | %s |\n", q[1], q[2], p99r[pt], v
		}
		printf "\n%d of %d targets met; %d verdicts inside the run'"'"'s spread.\n", nmet, ntarget, nin
	}
	/^targets: / { tset = $2 }
	/^program=/ {
		delete f
		for (i = 1; i <= NF; i++) {
			split($i, kv, "=")
			f[kv[1]] = substr($i, length(kv[1]) + 2)
		}
		pt = f["program"] " " f["threads"]
		if (!(pt in seen)) {
			seen[pt] = 1
			order[++np] = pt
		}
		if (!(f["variant"] in has) && f["variant"] !~ /^(stock|tofutex|futex)$/)
			extra[++nx] = f["variant"]
		has[f["variant"]] = 1
		if (f["unit"] != "-")
			unit[pt] = f["unit"]
		key = pt " " f["variant"]
		runs[key]++
		if (f["value"] ~ /^[0-9.]+([eE][-+]?[0-9]+)?$/) {
			vals[key] = vals[key] " " f["value"]
			round[key, f["run"]] = f["value"]
			nround[pt] = f["run"] > nround[pt] ? f["run"] : nround[pt]
		} else {
			failed[key]++
			nfail++
			why[nfail] = f["program"] " threads=" f["threads"] " " \
				     f["variant"] " run " f["run"] ": rc=" f["rc"] \
				     (f["rc"] == 124 || f["rc"] == 143 ? " (timed out)" : "")
		}
		secs[key] = secs[key] " " f["secs"]
		if ("p99" in f && f["p99"] != "") {
			p99s[key] = p99s[key] " " f["p99"]
			anyp99 = 1
		}
		if ("load" in f)
			loads = loads " " f["load"]
		if ("sum" in f && f["sum"] != "") {
			if (!((pt, f["sum"]) in sums)) {
				sums[pt, f["sum"]] = 1
				nsums[pt]++
			}
			nsummed[pt]++
		}
		if (f["variant"] == "tofutex")
			for (k in f)
				if (k ~ /^(lock|unlock|spins|sleeps|steals|wait|wake)$/)
					calls[pt, k] = calls[pt, k] " " f[k]
	}
	END {
		if (!np)
			exit 1
		nk = split("lock unlock spins sleeps steals wait wake", keys, " ")
		nv = 0
		if ("tofutex" in has)
			vname[++nv] = "tofutex"
		if ("futex" in has)
			vname[++nv] = "futex"
		title["tofutex"] = "tofutex-run"
		title["futex"] = "futex backend"
		# tofutex/NAME=VALUE: the module with one parameter changed.
		for (x = 1; x <= nx; x++) {
			vname[++nv] = extra[x]
			title[extra[x]] = "tofutex-run " substr(extra[x], 9)
		}
		# The variant the targets are read on: the module where it ran.
		pv = vname[1]
		head = "| program | threads | unit | stock | stock spread |"
		rule = "|---|--:|---|--:|--:|"
		for (j = 1; j <= nv; j++) {
			head = head " " title[vname[j]] " | ratio | 1.00 in spread |"
			rule = rule "--:|--:|:-:|"
		}
		if (anyp99) {
			head = head " stock p99 us | " title[pv] " p99 us | p99 ratio |"
			rule = rule "--:|--:|--:|"
			for (x = 1; x <= nx; x++) {
				head = head " " title[extra[x]] " p99 us | p99 ratio |"
				rule = rule "--:|--:|"
			}
		}
		if ("tofutex" in has) {
			head = head " LOCK | UNLOCK | spins | sleeps | steals | WAIT | WAKE |"
			rule = rule "--:|--:|--:|--:|--:|--:|--:|"
		}
		print head
		print rule
		print "program,threads,unit,stock,tofutex,futex,tofutex_ratio,futex_ratio,tofutex_ratio_min,tofutex_ratio_max,futex_ratio_min,futex_ratio_max,runs,lock,unlock,spins,sleeps,steals,wait,wake,secs,stock_min,stock_max,tofutex_inside,futex_inside" > csv
		for (i = 1; i <= np; i++) {
			pt = order[i]
			split(pt, p, " ")
			s = median(vals[pt " stock"])
			smin = lowest(vals[pt " stock"])
			smax = highest(vals[pt " stock"])
			sspread = s > 0 ? sprintf("%.2f-%.2f", smin / s, smax / s) : "-"
			line = sprintf("| %s | %s | %s | %s | %s |", p[1], p[2], unit[pt], num(s), sspread)
			delete med
			delete rt
			delete sp
			for (j = 1; j <= nv; j++) {
				v = vname[j]
				med[v] = median(vals[pt " " v])
				rt[v] = ratio(s, med[v])
				sp[v] = spread(pt, v)
				line = line sprintf(" %s | %s | %s |", num(med[v]), cell(rt[v], sp[v]), inside(sp[v], spreadn[pt, v]))
			}
			ratios[pt] = rt[pv]
			spreads[pt] = sp[pv]
			meds[pt, "stock"] = s
			meds[pt, pv] = med[pv]
			if (anyp99) {
				ps = median(p99s[pt " stock"])
				pvv = median(p99s[pt " " pv])
				p99r[pt] = ps > 0 && pvv != "" ? sprintf("%.2f", pvv / ps) : "-"
				line = line sprintf(" %s | %s | %s |", ps == "" ? "-" : ps,
						    pvv == "" ? "-" : pvv, p99r[pt])
				for (x = 1; x <= nx; x++) {
					pvv = median(p99s[pt " " extra[x]])
					line = line sprintf(" %s | %s |", pvv == "" ? "-" : pvv,
							    ps > 0 && pvv != "" ? sprintf("%.2f", pvv / ps) : "-")
				}
			}
			cline = ""
			for (j = 1; j <= nk; j++) {
				c = median(calls[pt, keys[j]])
				if ("tofutex" in has)
					line = line " " c " |"
				cline = cline "," c
			}
			print line
			rtt = ("tofutex" in rt) ? rt["tofutex"] : "-"
			rtf = ("futex" in rt) ? rt["futex"] : "-"
			spt = ("tofutex" in sp) ? sp["tofutex"] : "- -"
			spf = ("futex" in sp) ? sp["futex"] : "- -"
			printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d%s,%s,%s,%s,%s,%s\n", p[1], p[2], unit[pt],
			       s, med["tofutex"], med["futex"], rtt == "-" ? "" : rtt, rtf == "-" ? "" : rtf,
			       pair(spt), pair(spf),
			       runs[pt " stock"], cline,
			       median(secs[pt " stock"] secs[pt " tofutex"] secs[pt " futex"]),
			       smin, smax, csvinside(spt, spreadn[pt, "tofutex"]),
			       csvinside(spf, spreadn[pt, "futex"]) > csv
			if (rt[pv] != "-" && sp[pv] !~ /-/) {
				a1 = sp[vname[1]]
				gsub(/,/, " ", a1)
				rowd = sprintf("\"%s/%s\" %s %s", p[1], p[2], rt[vname[1]], a1)
				# The second series of the chart: the futex backend.
				two = nv > 1 && vname[2] == "futex"
				if (two && rt["futex"] != "-" && sp["futex"] !~ /-/) {
					a2 = sp["futex"]
					gsub(/,/, " ", a2)
					rowd = rowd sprintf(" %s %s", rt["futex"], a2)
				} else if (two)
					rowd = rowd " 0 0 0"
				print rowd > dat
			}
		}
		print ""
		printf "Medians of %d run%s per variant, the variants of a round run one after the\n",
		       runs[order[1] " stock"], runs[order[1] " stock"] == 1 ? "" : "s"
		print "other; ratio = median / stock median (higher is better), in brackets the lowest"
		print "and highest ratio of one round. 1.00 in spread: yes when 1.00 lies within that"
		print "range, i.e. the run did not tell the variant from stock; n/a with one round,"
		print "which has no spread. stock spread: the stock runs'"'"' lowest and highest value /"
		print "their median. futex backend: tofutex-run with TOFUTEX_BACKEND=futex."
		for (x = 1; x <= nx; x++)
			print title[extra[x]] ": tofutex-run on the module backend with its parameter " substr(extra[x], 9) " for those runs."
		if ("tofutex" in has)
			print "Kernel calls: the module'"'"'s statistics moved by a run of tofutex-run on the module backend, median over its runs."
		if (loads != "")
			printf "Load average (1 min) at the end of each run: %.2f-%.2f, median %.2f.\n",
			       lowest(loads), highest(loads), median(loads)
		same = ""
		for (i = 1; i <= np; i++) {
			pt = order[i]
			if (!nsummed[pt])
				continue
			split(pt, p, " ")
			if (nsums[pt] == 1)
				same = same (same == "" ? "" : ", ") p[1] " " p[2]
			else
				printf "OUTPUT DIFFERS: %s %s: %d different outputs over its %d runs\n",
				       p[1], p[2], nsums[pt], nsummed[pt]
		}
		if (same != "")
			print "Output identical in every run, stock and tofutex-run: " same "."
		if (nfail) {
			printf "\n%d runs printed no value:\n", nfail
			for (i = 1; i <= nfail && i <= 20; i++)
				print "- " why[i]
		}
		if (tset ~ /^lockbound/) {
			lockbound_targets()
			exit 0
		}
		printf "\nTargets: the ratio of %s to stock, of medians\n",
		       pv == "tofutex" ? "tofutex-run on the module backend" : "tofutex-run on the futex backend"
		print "(in brackets one round'"'"'s lowest-highest): at least 0.97 at every point (at"
		print "most 3 % slower than on glibc'"'"'s locks), 1.3 for sysbench-mutex-contended at"
		print "2-8 threads, 1.5 for stress-ng-mutex (bench/programs.md). \"inside spread\": the"
		print "rounds reach both sides of the target."
		print ""
		print "| target | point | ratio | verdict |"
		print "|---|---|--:|---|"
		for (i = 1; i <= np; i++)
			target(">= 0.97", order[i], 0.97)
		for (i = 1; i <= np; i++) {
			split(order[i], p, " ")
			if (p[1] == "sysbench-mutex-contended" && p[2] >= 2 && p[2] <= 8)
				target(">= 1.3", order[i], 1.3)
			if (p[1] == "stress-ng-mutex")
				target(">= 1.5", order[i], 1.5)
		}
		printf "\n%d of %d targets met; %d verdicts inside the run'"'"'s spread.\n", nmet, ntarget, nin
	}' | tee "$md"
echo "wrote $md"
echo "wrote $csv"

if [ -s "$dat" ] && command -v gnuplot >/dev/null; then
	# Two series (the guest's module and futex variants) or one (the
	# build host's futex variant).
	if [ "$(awk '{ print NF; exit }' "$dat")" -ge 7 ]; then
		series="'$dat' using 2:3:4:xtic(1) title 'tofutex-run (module)', '' using 5:6:7 title 'tofutex-run (futex backend)'"
	else
		series="'$dat' using 2:3:4:xtic(1) title 'tofutex-run (futex backend)'"
	fi
	gnuplot <<EOG
set terminal pngcairo size 1100,520
set output '$png'
set title 'Real programs under tofutex-run: throughput / stock (medians of one run; bars: lowest to highest ratio of one round)'
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set ylabel 'throughput / stock'
set xtics rotate by -30
set yrange [0:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2
set key top left
plot $series
EOG
	echo "wrote $png"
fi
