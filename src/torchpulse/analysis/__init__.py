"""Analysing results: from a results tree to every series' status and alerts.

The pipeline, in the order data flows (``pipeline.run`` strings it together):

- ``series``: one series per benchmark, parameters, machine and environment, read through
  the results index (torchpulse.results.index); ``columns`` holds a series' points as
  arrays.
- ``disturbance``: the machine canary's rule, which marks the points measured on a
  disturbed machine.
- ``detector``: the maths on one series (levels, noise, change points, drifts, the active
  regression; exact counters), pure and cached by ``verdicts``.
- ``judge``: the verdicts of all series judged together (false-discovery control,
  ``--since``, the confirmation ledger) into the ``model``'s Report: statuses, alerts.
- ``remeasure``: what to measure again (disturbed points, steps seen in one run), with
  ``ledger``, the file that remembers what was.
- ``settings`` and ``defaults``: the four detector settings; ``sequential``: the tests that
  decide while measuring (compare, bisect).

What the report says is torchpulse.reports; the site's view of it, torchpulse.site.summary;
how well the detector works, torchpulse.evaluation.
"""
