"""`advertises`: one reading of capability paths for models and wire dicts alike."""

from __future__ import annotations

from acplink.connection.base import advertises
from acplink.schema import AgentCapabilities, ClientCapabilities


def test_empty_object_is_advertised_in_models_and_dicts() -> None:
    model = AgentCapabilities.model_validate({"sessionCapabilities": {"list": {}}})
    wire = {"sessionCapabilities": {"list": {}}}
    for caps in (model, wire):
        assert advertises(caps, "sessionCapabilities.list")
        assert not advertises(caps, "sessionCapabilities.resume")  # absent
        assert not advertises(caps, "nosuch.path")


def test_booleans_and_null() -> None:
    caps = ClientCapabilities.model_validate({"fs": {"readTextFile": True, "writeTextFile": False},
                                              "terminal": False})
    assert advertises(caps, "fs.readTextFile")
    assert not advertises(caps, "fs.writeTextFile")
    assert not advertises(caps, "terminal")
    assert not advertises(caps, "elicitation")  # null
    assert not advertises(None, "fs.readTextFile")
    assert advertises({"_x": {"y": 0}}, "_x.y")  # an extension value that is not false
