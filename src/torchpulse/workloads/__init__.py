"""What is measured, by name: ``registry`` (every workload name and selection, standard
library only: the asv suites load it by path from the working tree), ``regions`` (a name
built into a call to run) and ``clock`` (what a meter hands a region to time, count or
profile it). Nothing here imports a meter: the meters (timing, instructions, gpu, wall)
import these."""
