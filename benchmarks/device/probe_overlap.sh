#!/bin/bash
# On the GPU machine, from the repository root: whether `ncu --mode launch` + `ncu --mode attach` profiles the same
# range as one `ncu` run (so that phase 2's program start-up could run while phase 1 profiles), and the launches and
# launch shapes of one GPT-2-small-width step (phase 1's view). Every step bounded by a timeout.
#     OUT=/tmp/out BUDGET=300 bash benchmarks/device/probe_overlap.sh
source benchmarks/device/env.sh
part_start
W=/tmp/probe; rm -rf $W; mkdir -p $W
P="workloads/torch/library_step.py --model gpt2 --layers 1 --steps 3"
tm() { local a=$(date +%s.%N); "$@"; local rc=$?; echo "$(python3 -c "print(f'{$(date +%s.%N)-$a:.2f}')") s rc=$rc: $*" >> $OUT/times.txt; }
ncu --help > $W/help.txt 2>&1; sed -n '/Launch Options/,/Sampling Options/p' $W/help.txt | grep -E "^  -" | cut -c1-60 > $OUT/help_options.txt
tm timeout 60 python3 $P > $W/plain.log 2>&1
try_attach() {  # $1: name, rest: attach options
  local name=$1; shift
  a=$(date +%s.%N)
  timeout 90 ncu --mode launch python3 $P > $W/launch_$name.log 2>&1 &
  local LP=$!
  sleep ${WAIT:-22}
  tm timeout 60 ncu --mode attach --hostname 127.0.0.1 "$@" > $W/attach_$name.log 2>&1
  tail -5 $W/attach_$name.log | sed "s/^/  attach_$name: /" >> $OUT/times.txt
  kill $LP 2>/dev/null; wait $LP; echo "  launch side rc=$? after $(python3 -c "print(f'{$(date +%s.%N)-$a:.2f}')") s" >> $OUT/times.txt
  tail -3 $W/launch_$name.log | sed "s/^/  launch_$name: /" >> $OUT/times.txt
}
try_attach a --metrics gpu__time_duration.sum --nvtx --nvtx-include step_all_threads -f -o $W/att_a
[ -f $W/att_a.ncu-rep ] || try_attach b --metrics gpu__time_duration.sum -f -o $W/att_b
for r in $W/att_*.ncu-rep; do [ -f "$r" ] && timeout 60 python3 -c "
import ncu_report; c=ncu_report.load_report('$r'); n=sum(c.range_by_idx(i).num_actions() for i in range(c.num_ranges())); print('$r results', n)" >> $OUT/times.txt 2>&1; done
# GPT-2 small's width, 4 blocks: the launches of one step and their shapes (phase 1's view)
S="workloads/torch/library_step.py --model gpt2 --size small --layers 4 --batch 4 --seq 512 --steps 3"
tm timeout 90 python3 $S > $W/plain_small.log 2>&1
tm timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size --nvtx --nvtx-include step_all_threads -f -o $W/small4 python3 $S > $W/small4.log 2>&1
tail -2 $W/plain_small.log >> $OUT/times.txt
cp $W/small4.ncu-rep $W/att_*.ncu-rep $OUT/ 2>/dev/null; xz -9 $OUT/*.ncu-rep
tar cJf $OUT/logs.tar.xz -C $W . 2>/dev/null
say done
