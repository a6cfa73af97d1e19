#!/bin/bash
# Issue 10's no-loss set and PostgreSQL, new build (HEAD) against old (b29269a), one after the other.
OUT=/tmp/s17/sbs
NEW=/work/main/build/specx; OLD=/tmp/oldtree/build/specx
for b in new old; do
  S=$NEW; [ $b = old ] && S=$OLD
  $S bench sqlite3-index sqlite3-scan pyimport cc-headers --runs 3 --modes cold,specx --no-read-calls --out $OUT/everyday-$b > $OUT/everyday-$b.log 2>&1
  $S bench grep xds --scale demo --runs 3 --modes cold,specx --no-read-calls --out $OUT/demo-$b > $OUT/demo-$b.log 2>&1
done
$OLD bench postgres --runs 3 --modes cold,specx --no-read-calls --out $OUT/postgres-old > $OUT/postgres-old.log 2>&1
echo done > $OUT/DONE
