"""The alert's defaults and report formats. Free of numpy and scipy: the command line's parser
shows them in `--help`, which must stay fast."""

DEFAULT_ALPHA = 0.01  # significance within a series, false-discovery rate across series
DEFAULT_THRESHOLD = 0.05  # smallest change worth an alert, as a fraction
# ... on counted work (callgrind's instructions): nearly deterministic, so a step well under
# the wall-time threshold is real. Not lower: over 20 commits that changed nothing counted,
# counts moved by up to 0.64 % (rnns/py/forward; docs/instructions.md, "Threshold"); PyTorch's
# tightest instruction-count gate margin is 1.5 %
DEFAULT_COUNT_THRESHOLD = 0.01
# ... on the kernel time of a GPU region (CUPTI's device time, unit "device seconds"): launch
# gaps and a busy host do not move it. Between processes of one commit, 74 workloads on an
# H200 moved by a median 0.13 %, 72 of them within 1 %; cuDNN's LSTM backward most (its
# smallest detectable step over 11 processes and two leases: 2.7 %). At 2 % a planted step
# of +2.0 % and +2.3 % was named with no false alarm (docs/gpu.md, run 12)
DEFAULT_DEVICE_THRESHOLD = 0.02
# the least relative noise of any series (a deterministic metric is not infinitely precise)
DEFAULT_NOISE_FLOOR = 0.001
FORMATS = ("text", "markdown", "json", "github")
MIN_ROUNDS = 3  # compare/bisect: a t interval from two differences is too wide to decide anything
DEFAULT_NEWEST = 5  # commits the dashboard measures: the fewest that give every series a verdict
REMEASURE_PASSES = 2  # the dashboard's: the second for what the first measured still disturbed
