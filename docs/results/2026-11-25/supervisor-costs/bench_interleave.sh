#!/bin/bash
# bench_interleave.sh REPS PASSES CPULIST|none MODE...  -> round-robin over MODEs, REPS rounds,
# "sup MODE ./reader data.bin PASSES"; prints median/min/max ns per pread and sup CPU per run.
cd /tmp/supcost
REPS=$1; PASSES=$2; PIN=$3; shift 3
PRE=""; [ "$PIN" != none ] && PRE="taskset -c $PIN"
cat data.bin > /dev/null
OUT=raw_il_$$.txt; : > $OUT
for i in $(seq $REPS); do for m in "$@"; do
  echo "$m $($PRE ./sup $m ./reader data.bin $PASSES 2>&1 | tr '\n' ' ')" >> $OUT
done; done
med() { sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
for m in "$@"; do
  NS=$(grep "^$m " $OUT | grep -o 'ns_per_pread=[0-9.]*' | cut -d= -f2)
  CPU=$(grep "^$m " $OUT | grep -o 'sup_cpu_ms=[0-9.]*' | cut -d= -f2)
  EV=$(grep "^$m " $OUT | grep -o 'events=[0-9]*' | cut -d= -f2 | sort -u | tr '\n' ' ')
  printf "%-9s pin=%-4s n=%d passes=%d ns/pread median=%8.1f min=%8.1f max=%8.1f  sup_cpu_ms/run median=%7.1f events/run=%s\n" \
    $m $PIN $(echo "$NS" | wc -l) $PASSES $(echo "$NS" | med) $(echo "$NS" | sort -g | head -1) $(echo "$NS" | sort -g | tail -1) $(echo "$CPU" | med) "$EV"
done
mv $OUT raw_il_${PIN}_$(echo "$@" | tr ' ' _)_p$PASSES.txt
