"""``tmhw dram bench`` and ``tmhw flash bench`` take ``--config FILE`` (its ``[dram]`` or
``[flash]`` table) and ``--set section.FIELD=VALUE`` for any field of their device, in
that order over the preset; ``tmhw flash presets`` lists the flash presets as ``tmhw dram
presets`` does the DRAM ones. Bad input is one line naming the field and the value, exit
status 2, and nothing written."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from dram import PRESETS as DRAM_PRESETS
from dram.bench import run_bench as dram_bench
from flash.config import PRESETS as FLASH_PRESETS

DRAM = ["dram", "bench", "--preset", "ddr4-3200", "--pattern", "random", "--size", "64",
        "--count", "2000", "--model", "fast", "--json"]
FLASH = ["flash", "bench", "--preset", "slc-ull", "--pattern", "randwrite", "--size", "4KiB",
         "--count", "200", "--qd", "8", "--json"]


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.chdir(tmp_path)
    texts: dict[str, str | bytes] = {
        "one_rank": "[dram]\nranks = 1\n",
        "hbm2": '[dram]\npreset = "hbm2"\nchannels = 1\n',
        "no_buffer": "[flash]\nwrite_buffer_bytes = 0\n",
        "bad_preset": '[dram]\npreset = "hbm9"\n[flash]\npreset = "990evo"\n',
        "empty_tables": "[dram]\n[flash]\n",
        "no_tables": "ranks = 1\n",
        "malformed": "[dram\nranks = 1\n",
        "binary": b"\x80\x81[dram]\n",
        "bad_field": "[dram]\nt_rfc = -1\n[flash]\nchannels = 0\n",
    }
    out = {}
    for name, text in texts.items():
        p = tmp_path / f"{name}.toml"
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text)
        out[name] = str(p)
    out["missing"] = str(tmp_path / "missing.toml")
    return out


def _json(tmhw: Callable, *argv: str) -> dict[str, float]:
    r = tmhw(*argv)
    assert r.rc == 0, r.err
    return dict(json.loads(r.out))


def test_dram_set_and_config_change_the_rank_count(files: dict[str, str],
                                                   tmhw: Callable) -> None:
    two = _json(tmhw, *DRAM)
    by_set = _json(tmhw, *DRAM, "--set", "dram.ranks=1")
    by_config = _json(tmhw, *DRAM, "--config", files["one_rank"])
    one = dram_bench(replace(DRAM_PRESETS["ddr4-3200"], ranks=1), "random", 64, 2000, "fast")
    assert by_set == by_config
    assert by_set["bandwidth_gb_per_s"] == pytest.approx(one["bandwidth_gb_per_s"])
    # The preset's second rank nearly doubles random 64 B reads (tFAW binds each rank).
    assert 1.7 < two["bandwidth_gb_per_s"] / one["bandwidth_gb_per_s"] < 2.0


def test_dram_set_comes_after_config_and_config_can_pick_a_preset(
        files: dict[str, str], tmhw: Callable) -> None:
    got = _json(tmhw, *DRAM, "--config", files["hbm2"], "--set", "dram.refresh=off")
    want = dram_bench(replace(DRAM_PRESETS["hbm2"], channels=1, refresh="off"), "random",
                      64, 2000, "fast")
    assert got["bandwidth_gb_per_s"] == pytest.approx(want["bandwidth_gb_per_s"])
    assert got["refresh_share"] == 0.0


def test_flash_config_is_the_same_as_set(files: dict[str, str], tmhw: Callable) -> None:
    by_config = _json(tmhw, *FLASH, "--config", files["no_buffer"])
    by_set = _json(tmhw, *FLASH, "--set", "flash.write_buffer_bytes=0")
    buffered = _json(tmhw, *FLASH)
    assert by_config == by_set
    # Without the write buffer every write waits for its program.
    assert by_set["mean_latency_us"] > buffered["mean_latency_us"]


@pytest.mark.parametrize("package, presets", [("dram", DRAM_PRESETS),
                                              ("flash", FLASH_PRESETS)])
def test_presets_lists_every_preset(package: str, presets: dict[str, object],
                                    tmhw: Callable) -> None:
    rows = _json(tmhw, package, "presets", "--json")
    assert list(rows) == list(presets)
    text = tmhw(package, "presets")
    assert text.rc == 0
    assert [ln.split()[0] for ln in text.out.splitlines()] == list(presets)


def test_dram_presets_show_the_two_ranks_of_ddr4(tmhw: Callable) -> None:
    rows = _json(tmhw, "dram", "presets", "--json")
    assert rows["ddr4-3200"]["capacity_bytes"] == 16 * 2**30  # type: ignore[index]


BAD: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("dram: ranks not a power of two", [*DRAM, "--set", "dram.ranks=3"],
     ("dram.ranks", "3", "power of two")),
    ("dram: more ranks than refresh allows", [*DRAM, "--set", "dram.ranks=32"],
     ("dram.ranks", "32", "at most 20")),
    ("dram: unknown field", [*DRAM, "--set", "dram.rank=2"], ("dram.rank", "valid keys")),
    ("dram: not an integer", [*DRAM, "--set", "dram.ranks=two"],
     ("dram.ranks", "'two'", "integer")),
    ("dram: no value", [*DRAM, "--set", "dram.ranks"], ("--set", "'dram.ranks'")),
    ("dram: field of a bad config", [*DRAM, "--config", "{bad_field}"],
     ("dram.t_rfc", "-1")),
    ("dram: missing config", [*DRAM, "--config", "{missing}"], ("--config", "missing.toml")),
    ("dram: binary config", [*DRAM, "--config", "{binary}"], ("--config", "UTF-8")),
    ("dram: malformed config", [*DRAM, "--config", "{malformed}"],
     ("malformed.toml", "malformed TOML")),
    ("dram: config without [dram]", [*DRAM, "--config", "{no_buffer}"],
     ("--config", "no_buffer.toml", "[dram]", "[flash]")),
    ("dram: config with no table", [*DRAM, "--config", "{no_tables}"],
     ("--config", "[dram]", "none")),
    ("dram: empty [dram]", [*DRAM, "--config", "{empty_tables}"],
     ("--config", "empty_tables.toml", "sets no field")),
    ("dram: unknown preset in config", [*DRAM, "--config", "{bad_preset}"],
     ("dram.preset", "'hbm9'", "ddr4-3200")),
    ("flash: bad field", [*FLASH, "--set", "flash.channels=0"], ("flash.channels", "0")),
    ("flash: unknown field", [*FLASH, "--set", "flash.chanels=8"],
     ("flash.chanels", "valid keys")),
    ("flash: field of a bad config", [*FLASH, "--config", "{bad_field}"],
     ("flash.channels", "0")),
    ("flash: missing config", [*FLASH, "--config", "{missing}"],
     ("--config", "missing.toml")),
    ("flash: binary config", [*FLASH, "--config", "{binary}"], ("--config", "UTF-8")),
    ("flash: config without [flash]", [*FLASH, "--config", "{one_rank}"],
     ("--config", "[flash]", "[dram]")),
    ("flash: empty [flash]", [*FLASH, "--config", "{empty_tables}"],
     ("--config", "sets no field")),
    ("flash: unknown preset in config", [*FLASH, "--config", "{bad_preset}"],
     ("flash.preset", "'990evo'", "990pro")),
]


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("argv, names", [(a, n) for _, a, n in BAD],
                         ids=[i for i, _, _ in BAD])
def test_bad_device_options_are_one_line(argv: list[str], names: tuple[str, ...],
                                         files: dict[str, str], tmp_path: Path,
                                         tmhw: Callable) -> None:
    before = _tree(tmp_path)
    r = tmhw(*[a.format(**files) for a in argv])
    assert r.rc == 2, (r.rc, r.err)
    assert r.out == ""
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert len(lines) == 1, r.err
    assert "Traceback" not in r.err
    for n in names:
        assert n in lines[0], (n, lines[0])
    assert _tree(tmp_path) == before, "something was written"
