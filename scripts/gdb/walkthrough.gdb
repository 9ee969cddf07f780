# The gdb session of docs/debugging.md, command by command; scripts/gdb/check-walkthrough replays it on
# gdb_demo and checks that the document quotes what gdb prints. @MARKER@ stands for the line of the
# comment "gdb-walkthrough: break here" in nn/layernorm.cpp (the fused LayerNorm's backward).
info auto-load python-scripts
set print pretty on
break layernorm.cpp:@MARKER@
run
print g.grad
print mu
print rstd
print *g.inputs[0]
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
