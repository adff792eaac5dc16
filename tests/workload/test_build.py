"""``build``: defaults per model, and one-line errors that name the field."""

from __future__ import annotations

import pytest

from tmhw.sim.errors import ConfigError
from tmhw.workload.zoo import INFO, MODELS, build


def test_defaults_are_the_documented_ones() -> None:
    wl = build("bert-large")
    assert (wl.batch, wl.seq, wl.page_size) == (32, 512, 4096)  # TM-Training's setting
    assert sum(op.name.endswith(".qkv.fwd") for op in wl.ops) == 24
    assert build("gpt3-block", batch=1).seq == 2048
    assert set(INFO) == set(MODELS)


def test_layers_and_seq_apply_to_transformers() -> None:
    wl = build("bert-base", batch=1, seq=64, layers=3)
    assert wl.seq == 64 and sum(op.name.endswith(".qkv.fwd") for op in wl.ops) == 3
    assert build("gpt3-block", batch=1, layers=2).params == 2 * build(
        "gpt3-block", batch=1).params


@pytest.mark.parametrize("kwargs,field,allowed", [
    ({"name": "resnet51"}, "model", "resnet50"),
    ({"name": "resnet50", "batch": 0}, "batch", "positive integer"),
    ({"name": "resnet50", "seq": 128}, "seq", "no sequence length"),
    ({"name": "resnet50", "layers": 3}, "layers", "fixed depth"),
    ({"name": "bert-large", "seq": 1024}, "seq", "1..512"),
    ({"name": "gpt2-small", "seq": 0}, "seq", "positive integer"),
    ({"name": "gpt2-small", "layers": -1}, "layers", "positive integer"),
    ({"name": "vgg16", "optimizer": "lamb"}, "optimizer", "sgd, sgd-momentum, adam, adamw"),
    ({"name": "vgg16", "page_size": 3000}, "page_size", "power of two"),
])
def test_bad_input_is_a_one_line_error_naming_the_field(
        kwargs: dict[str, object], field: str, allowed: str) -> None:
    name = kwargs.pop("name")
    with pytest.raises(ConfigError) as e:
        build(str(name), **kwargs)  # type: ignore[arg-type]
    msg = str(e.value)
    assert e.value.path == field and allowed in msg and "\n" not in msg
