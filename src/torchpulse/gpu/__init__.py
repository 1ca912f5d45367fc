"""What a region does on the GPU: its kernels' summed time, the kernels it launches and the
host synchronisations it makes (trace.py, read from torch.profiler's CUDA activities), and
the one process that measures every CUDA workload of a commit (measure.py)."""
