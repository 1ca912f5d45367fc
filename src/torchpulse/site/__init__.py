"""The static site: asv's publish made self-contained (publish, with the CDN assets from npm in
assets), torchpulse's summary page (page) and a loopback server for it (serve)."""
