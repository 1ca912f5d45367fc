import pytest


@pytest.fixture(autouse=True)
def _no_preset_env(monkeypatch):
    """Tests choose presets and devices explicitly; the caller's shell must not leak them."""
    monkeypatch.delenv("TORCHPULSE_PRESET", raising=False)
    monkeypatch.delenv("TORCHPULSE_DEVICE", raising=False)
