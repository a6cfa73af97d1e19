#!/bin/bash
# bench_sampler.sh REPS PASSES NTHREADS  -> alternates "sampler 0" and "sampler 1000" around
# "./reader data.bin PASSES NTHREADS"; prints medians of reader elapsed and sampler CPU.
cd /tmp/supcost
REPS=$1; PASSES=$2; NT=$3
cat data.bin data.bin.? > /dev/null
OUT=raw_sampler_p${PASSES}_t${NT}.txt; : > $OUT
for i in $(seq $REPS); do for p in 0 1000; do
  echo "P$p $(./sampler $p ./reader data.bin $PASSES $NT 2>&1 | tr '\n' ' ')" >> $OUT
done; done
med() { sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
for p in 0 1000; do
  g() { grep "^P$p " $OUT | grep -o "$1=[0-9.]*" | cut -d= -f2; }
  printf "threads=%d passes=%d period_us=%-4d n=%d reader_elapsed_ms median=%7.1f (min %7.1f max %7.1f) ns/pread=%6.1f | sampler cpu_ms_per_s median=%6.2f us_per_tick=%6.2f ticks=%s late=%s\n" \
    $NT $PASSES $p $(g elapsed_ns | wc -l) $(g elapsed_ns | awk '{print $1/1e6}' | med) $(g elapsed_ns | sort -g | head -1 | awk '{print $1/1e6}') \
    $(g elapsed_ns | sort -g | tail -1 | awk '{print $1/1e6}') $(g ns_per_pread | med) $(g cpu_ms_per_s | med) $(g us_per_tick | med) $(g ticks | med) $(g late | med)
done
