"""The conformance client's grants scenarios (see client_kit.ClientScenario; run by client.py)."""

from __future__ import annotations

from client_kit import ClientScenario

SCENARIOS: dict[str, ClientScenario] = {}
