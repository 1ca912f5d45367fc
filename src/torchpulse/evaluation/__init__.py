"""evaluate-detection: how well torchpulse alert (and asv, Otava) find planted changes.

Tooling apart from what production runs: ``project`` writes an asv project of generated
series, ``synthetic`` and ``shapes`` are its two families, ``detectors`` runs each detector on
it, ``scoring`` scores what they found against the truth, ``tables`` writes the report and
``run`` is the command. ``otava_worker`` runs inside Otava's own environment.
"""
