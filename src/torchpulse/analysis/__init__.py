"""Analysing results: series from the results tree (series), change detection on one series
(detect), alerts over all series (alert) and their report formats (report), the per-machine
summary the site shows (summary). How well detection works is measured apart, by
torchpulse.evaluation, which production never runs."""
