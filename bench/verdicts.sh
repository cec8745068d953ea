#!/usr/bin/env bash
# First-finding accuracy over folders of real cases (testdata/logs/real layout:
# DIR/NN-slug/{case.json, *.log}), the measure of issue 21's acceptance:
#   - a failure is right when its first active finding names case.json's
#     `category` ("unexplained": the first finding is unexplained-failure);
#   - a healthy case fails when any active finding is critical;
#   - a case marked "outside_catalog" counts as a wrong critical when its
#     first finding is critical and names another cause.
# Usage: bench/verdicts.sh [-v] [-b ANALYZER] DIR...   (default: builds ./cmd/analyzer)
set -euo pipefail
verbose=0 bin=""
while [ $# -gt 0 ]; do
	case $1 in
	-v) verbose=1; shift ;;
	-b) bin=$2; shift 2 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-v] [-b ANALYZER] DIR..." >&2; exit 2; }
if [ -z "$bin" ]; then
	bin=$(mktemp -d)/analyzer
	go build -o "$bin" ./cmd/analyzer
fi
fail=0 right=0 healthy=0 hbad=0 out=0 outbad=0
for dir in "$@"; do
	for cj in "$dir"/*/case.json; do
		c=$(dirname "$cj")
		cat=$(jq -r .category "$cj")
		outside=$(jq -r '.outside_catalog // false' "$cj")
		js=$("$bin" diagnose --json "$c" 2>/dev/null | jq -c 'select(.status=="active")' || true)
		first=$(printf '%s\n' "$js" | head -n1)
		fcause=$(printf '%s' "$first" | jq -r '.cause // "-"' 2>/dev/null || echo -)
		frule=$(printf '%s' "$first" | jq -r '.rule // "-"' 2>/dev/null || echo -)
		fsev=$(printf '%s' "$first" | jq -r '.severity // "-"' 2>/dev/null || echo -)
		[ -n "$first" ] || { fcause=- frule=- fsev=-; }
		verdict=ok
		if [ "$cat" = healthy ]; then
			healthy=$((healthy + 1))
			if printf '%s\n' "$js" | grep -q '"severity":"critical"'; then
				verdict=CRITICAL-ON-HEALTHY
				hbad=$((hbad + 1))
			fi
		else
			fail=$((fail + 1))
			want=$cat
			got=$fcause
			[ "$cat" = unexplained ] && got=$frule && want=unexplained-failure
			if [ "$got" = "$want" ]; then right=$((right + 1)); else verdict=miss; fi
			if [ "$outside" = true ]; then
				out=$((out + 1))
				if [ "$verdict" = miss ] && [ "$fsev" = critical ]; then
					verdict=WRONG-CRITICAL
					outbad=$((outbad + 1))
				fi
			fi
		fi
		if [ $verbose = 1 ] || [ $verdict != ok ]; then
			printf '%-22s %-58s want %-24s got %s (%s, %s)\n' "$verdict" "$(basename "$c")" "$cat" "$fcause" "$frule" "$fsev"
		fi
	done
done
pct() { [ "$2" -gt 0 ] && echo "$((100 * $1 / $2))%" || echo "-"; }
echo "failures: $right/$fail first finding right ($(pct $right $fail))"
echo "healthy: $hbad/$healthy with a critical finding"
echo "outside the catalog: $outbad/$out with a critical finding naming a wrong cause"
