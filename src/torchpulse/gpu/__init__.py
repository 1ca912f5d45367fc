"""What a region does on the GPU: its kernels' summed time, the kernels it launches and the
host synchronisations it makes (trace.py, read from torch.profiler's CUDA activities), and
the one process that measures every CUDA workload of a commit (measure.py)."""

# $TORCHPULSE_GPU_SUITE=cpu runs the GPU suite on a CPU run: a dry run of its path (wall
# times; no kernels, no GPU memory), never a figure
GPU_SUITE_ENV = "TORCHPULSE_GPU_SUITE"
