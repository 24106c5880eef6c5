"""A class defined again (a module imported twice, a script or notebook cell run again)
replaces its registration; another class can never take a provider string that is in use."""

from __future__ import annotations

import types

import pytest

from flowlib.component import (
    ComponentRegistrationError,
    dump_component,
    load_component,
    register_component,
)

SOURCE = """
from pydantic import BaseModel
from flowlib.base import TerminationCondition
from flowlib.component import Component

class Config(BaseModel):
    pass

class {name}(TerminationCondition, Component[Config]):
    component_config_schema = Config
    terminated = False

    async def __call__(self, messages):
        return None

    async def reset(self):
        pass

    def _to_config(self):
        return Config()

    @classmethod
    def _from_config(cls, config):
        return cls()
"""


def define(name: str, module: str, file: str) -> type:
    namespace = types.ModuleType(module)
    namespace.__file__ = file
    import sys

    sys.modules[module] = namespace
    exec(compile(SOURCE.format(name=name), file, "exec"), namespace.__dict__)
    return getattr(namespace, name)


def test_a_class_defined_again_in_its_file_replaces_its_registration() -> None:
    first = define("NeverStop", "redefined_a", "/tmp/never_stop.py")
    register_component(first, provider="tests.NeverStop")
    again = define("NeverStop", "redefined_b", "/tmp/never_stop.py")  # same file, new module
    register_component(again, provider="tests.NeverStop")
    config = dump_component(again())
    assert config.provider == "tests.NeverStop"
    assert type(load_component(config)) is again


def test_another_class_cannot_take_a_provider_in_use() -> None:
    owner = define("Owner", "redefined_c", "/tmp/owner.py")
    register_component(owner, provider="tests.Owner")
    same_name_elsewhere = define("Owner", "redefined_d", "/tmp/elsewhere.py")
    with pytest.raises(ComponentRegistrationError, match="already registered"):
        register_component(same_name_elsewhere, provider="tests.Owner")
    other = define("Intruder", "redefined_e", "/tmp/intruder.py")
    with pytest.raises(ComponentRegistrationError, match="already registered"):
        register_component(other, provider="tests.Owner")
