# The gdb session of docs/debugging.md, command by command; scripts/gdb/check-walkthrough replays it on
# gdb_demo and checks that the document quotes what gdb prints. Every breakpoint is set by name.
info auto-load python-scripts
set print pretty on
break gs::nn::layernorm_backward
run
print grad
print stats
print x
frame 1
frame function gs::Tape::backward
print e
print $gs_entry(e.inputs[0])
advance gs::Tape::accumulate
print grad
finish
print $gs_entry(e.inputs[0])
gs-tape
frame function main
print h
print w1
