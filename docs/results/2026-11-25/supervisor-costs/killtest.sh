#!/bin/bash
# killtest.sh MODE : start sup MODE on a long reader run, SIGKILL the supervisor after 0.5 s,
# then report what happened to the target.
cd /tmp/supcost
MODE=$1
${PRE} ./sup $MODE ./reader data.bin 50 > kill_$MODE.out 2>&1 &
SUP=$!
sleep 0.5
TGT=$(sed -n 's/.*target pid=\([0-9]*\).*/\1/p' kill_$MODE.out)
echo "supervisor=$SUP target=$TGT; before kill: $(awk '{print "state="$3}' /proc/$TGT/stat) $(grep -E 'TracerPid|Seccomp:' /proc/$TGT/status | tr '\n\t' '  ')"
kill -9 $SUP; wait $SUP 2>/dev/null
for t in 0.1 1; do
  sleep $t
  if [ -e /proc/$TGT/stat ]; then
    echo "after +${t}s: target alive, $(awk '{print "state="$3" ppid="$4}' /proc/$TGT/stat) wchan=$(cat /proc/$TGT/wchan) $(grep -E 'TracerPid' /proc/$TGT/status | tr '\n\t' '  ')"
  else echo "after +${t}s: target gone"; fi
done
echo "--- output file:"; cat kill_$MODE.out
[ -e /proc/$TGT ] && [ "$(awk "{print \$3}" /proc/$TGT/stat)" != Z ] && { echo "killing leftover target $TGT"; kill -9 $TGT; }
