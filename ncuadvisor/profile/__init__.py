"""`ncuadvisor profile`: profile a real program with ncu at a fraction of the cost of a full run, then analyze it.

`session` runs it (the two phases, or `--full`); `ncu` finds ncu and builds its command lines, `runner` runs one,
`output` reads what it prints, `progress` shows it, `ranks` watches the processes it starts; `selection` chooses the
kernels of phase 2 and `merge` joins both phases into one result; `target` resolves the program to run.
"""
