"""TOML at the edge: any config tree dumps to TOML that loads back to an equal tree, and
every bad value is a ConfigError naming the dotted path."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmhw.sim import tomlio
from tmhw.sim.errors import ConfigError


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    t_r: int = 40
    scale: float = 1.0
    label: str = "tlc"


@dataclass(frozen=True, slots=True, kw_only=True)
class Device:
    channels: int = 8
    ratio: float = 0.5
    name: str = "dev"
    multiplane: bool = True
    t_page: tuple[int, ...] = ()
    pair: tuple[int, str] = (1, "a")
    action_pj: dict[str, float] = field(default_factory=dict)
    timing: Timing = field(default_factory=Timing)


@dataclass(frozen=True, slots=True, kw_only=True)
class Machine:
    seed: int = 0
    flash: Device = field(default_factory=Device)
    hbm: Device = field(default_factory=Device)

    def __post_init__(self) -> None:
        if self.seed < 0:
            raise ConfigError("seed", self.seed, "an integer >= 0")


ints = st.integers(-(2**63), 2**63 - 1)
floats = st.floats(allow_nan=False)          # infinities included: TOML has inf
texts = st.text(max_size=12)                 # control characters, quotes, unicode
timings = st.builds(Timing, t_r=ints, scale=floats, label=texts)
devices = st.builds(Device, channels=ints, ratio=floats, name=texts, multiplane=st.booleans(),
                    t_page=st.lists(ints, max_size=4).map(tuple),
                    pair=st.tuples(ints, texts),
                    action_pj=st.dictionaries(texts, floats, max_size=4), timing=timings)
machines = st.builds(Machine, seed=st.integers(0, 2**63 - 1), flash=devices, hbm=devices)


@settings(max_examples=200, deadline=None)
@given(machines)
def test_dump_then_load_gives_an_equal_config(m: Machine) -> None:
    text = tomlio.dumps(m)
    assert tomlio.from_dict(Machine, tomlio.loads(text)) == m
    # Over a different base too: a full dump fixes every field.
    assert tomlio.from_dict(Machine, tomllib.loads(text), base=Machine(seed=7)) == m


def test_nan_is_written_as_toml_nan() -> None:
    text = tomlio.dumps(Timing(scale=math.nan))
    assert math.isnan(tomlio.from_dict(Timing, tomlio.loads(text)).scale)


def test_dump_puts_scalars_before_tables() -> None:
    text = tomlio.dumps(Machine())
    assert text.startswith("seed = 0\n\n[flash]\n")
    assert "[flash.timing]" in text and "[hbm.action_pj]" in text


def test_missing_fields_come_from_the_base() -> None:
    base = Machine(seed=3, flash=Device(channels=4, name="base"))
    got = tomlio.from_dict(Machine, {"flash": {"ratio": 0.25}}, base=base)
    assert got == Machine(seed=3, flash=Device(channels=4, name="base", ratio=0.25))


def test_whole_floats_are_accepted_for_integers() -> None:
    assert tomlio.from_dict(Timing, {"t_r": 16.0}).t_r == 16


@pytest.mark.parametrize("data,path,allowed", [
    ({"flash": {"chanels": 4}}, "flash.chanels", "unknown key; valid keys: action_pj, channels"),
    ({"flash": {"timing": {"t_x": 1}}}, "flash.timing.t_x", "valid keys: label, scale, t_r"),
    ({"flash": {"channels": "8"}}, "flash.channels", "must be an integer"),
    ({"flash": {"channels": 2.5}}, "flash.channels", "must be an integer"),
    ({"flash": {"channels": True}}, "flash.channels", "must be an integer"),
    ({"flash": {"channels": 2**63}}, "flash.channels", "64-bit"),
    ({"flash": {"ratio": "half"}}, "flash.ratio", "must be a number"),
    ({"flash": {"ratio": False}}, "flash.ratio", "must be a number"),
    ({"flash": {"multiplane": 1}}, "flash.multiplane", "must be true or false"),
    ({"flash": {"name": 3}}, "flash.name", "must be a string"),
    ({"flash": {"t_page": 3}}, "flash.t_page", "must be a list"),
    ({"flash": {"t_page": [1, "x"]}}, "flash.t_page[1]", "must be an integer"),
    ({"flash": {"pair": [1]}}, "flash.pair", "must be a list of 2 items"),
    ({"flash": {"action_pj": 3}}, "flash.action_pj", "must be a table"),
    ({"flash": {"action_pj": {"read": "x"}}}, "flash.action_pj.read", "must be a number"),
    ({"flash": 3}, "flash", "must be a table"),
    ({"seed": -1}, "seed", "an integer >= 0"),
])
def test_bad_values_name_their_dotted_path(data: dict, path: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as info:
        tomlio.from_dict(Machine, data)
    assert info.value.path == path
    assert allowed in info.value.allowed
    assert "\n" not in str(info.value)


def test_malformed_toml_is_one_line_naming_the_file() -> None:
    with pytest.raises(ConfigError) as info:
        tomlio.loads("[flash\nchannels = 4\n", "my.toml")
    assert info.value.path == "my.toml" and "malformed TOML" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("item,keys,value", [
    ("flash.channels=16", ["flash", "channels"], 16),
    ("policy.hbm_ratio = 0.25", ["policy", "hbm_ratio"], 0.25),
    ("run.flash_model=detailed", ["run", "flash_model"], "detailed"),   # bare string
    ('workload.model="bert-base"', ["workload", "model"], "bert-base"),
    ("policy.tm_training.split=false", ["policy", "tm_training", "split"], False),
    ("flash.t_r_page=[1, 2, 3]", ["flash", "t_r_page"], [1, 2, 3]),
    ("a.b=x=y", ["a", "b"], "x=y"),
])
def test_override_values_are_read_as_toml(item: str, keys: list[str], value: object) -> None:
    assert tomlio.parse_override(item) == (keys, value)


@pytest.mark.parametrize("item", ["flash.channels", "=3", "flash..channels=3", ".a=1", "a.=1"])
def test_override_without_a_dotted_path_is_refused(item: str) -> None:
    with pytest.raises(ConfigError) as info:
        tomlio.parse_override(item)
    assert info.value.path == "--set"


def test_nest_merges_overrides_and_refuses_conflicts() -> None:
    got = tomlio.nest([(["a", "b"], 1), (["a", "c"], 2), (["d"], 3)])
    assert got == {"a": {"b": 1, "c": 2}, "d": 3}
    with pytest.raises(ConfigError):
        tomlio.nest([(["a"], 1), (["a", "b"], 2)])
    assert tomlio.merge({"a": {"b": 1, "c": 2}}, {"a": {"c": 3}, "e": 4}) == \
        {"a": {"b": 1, "c": 3}, "e": 4}
