import pytest


@pytest.fixture(autouse=True)
def _no_preset_env(monkeypatch):
    """Tests choose presets explicitly; a TORCHPULSE_PRESET in the caller's shell must not leak."""
    monkeypatch.delenv("TORCHPULSE_PRESET", raising=False)
