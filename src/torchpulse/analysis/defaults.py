"""The alert's defaults and report formats. Free of numpy and scipy: the command line's parser
shows them in `--help`, which must stay fast."""

from torchpulse.kinds import COUNT, DEVICE, KINDS, TIME

DEFAULT_ALPHA = 0.01  # significance within a series, false-discovery rate across series
# each kind's default threshold: its row in the kind table (torchpulse.kinds)
DEFAULT_THRESHOLD = KINDS[TIME].default_threshold
DEFAULT_COUNT_THRESHOLD = KINDS[COUNT].default_threshold
DEFAULT_DEVICE_THRESHOLD = KINDS[DEVICE].default_threshold
# the least relative noise of any series (a deterministic metric is not infinitely precise)
DEFAULT_NOISE_FLOOR = 0.001
FORMATS = ("text", "markdown", "json", "github")
MIN_ROUNDS = 3  # compare/bisect: a t interval from two differences is too wide to decide anything
DEFAULT_NEWEST = 5  # commits the dashboard measures: the fewest that give every series a verdict
REMEASURE_PASSES = 2  # the dashboard's: the second for what the first measured still disturbed
