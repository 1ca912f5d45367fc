"""Instruction counts of the CPU workloads under valgrind's callgrind (docs/instructions.md).

family (which workloads, by name) -> count (one valgrind process a commit) -> worker (the
counted process: build, warm up, count each region) -> callgrind (reading the dumps);
client holds the requests the counted process sends to callgrind.
"""
