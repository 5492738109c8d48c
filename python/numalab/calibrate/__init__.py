"""``numalab calibrate``: measure this host with the project's C kernels under the agent and write
a machine preset (docs/calibrate.md).

plan.py chooses what to run (pairs, sizes, repetitions) and refuses what cannot be bound;
measure.py runs the kernels and keeps their outputs as a raw document; figures.py reduces the raw
document to medians and ranges; preset.py writes the preset TOML. figures.py and preset.py read
nothing but the raw document, so captured outputs give the same file anywhere.
"""
