"""The files torchpulse adds to asv's site (standard library only: publish names them
before the analysis is imported)."""

PAGE = "torchpulse.html"  # the summary page
ALERTS_JSON = "torchpulse-alerts.json"  # the alert report behind it
