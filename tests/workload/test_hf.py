"""Hugging Face configs as workloads (``tmhw.workload.hf``): exact parameter counts, the
training FLOPs of a decoder against the published formula, the architectures' features,
and one clear line for each bad config."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tmhw
from tmhw.sim.errors import ConfigError
from tmhw.workload import sources
from tmhw.workload.graph import Kind
from tmhw.workload.hf import CONFIGS, build


@pytest.mark.parametrize("name, params", [
    # transformers' num_parameters() of each model: GPT-2 (openai-community/gpt2, its
    # LM head tied), BERT-large with pooler (google-bert/bert-large-uncased, BertModel),
    # Llama-2-7B (meta-llama/Llama-2-7b-hf), Mistral-7B (mistralai/Mistral-7B-v0.1),
    # Llama-3-8B (meta-llama/Meta-Llama-3-8B)
    ("gpt2", 124_439_808),
    ("bert-large-uncased", 335_141_888),
    ("llama-2-7b", 6_738_415_616),
    ("mistral-7b", 7_241_732_096),
    ("llama-3-8b", 8_030_261_248),
])
def test_parameter_counts_are_the_published_ones_exactly(name: str, params: int) -> None:
    wl = build(f"hf:{name}", seq=128)
    assert wl.params == params
    # every parameter has a bf16 weight, and mixed-precision Adam's master and moments
    assert wl.bytes_by_kind()[Kind.WEIGHT.value] == 2 * params


@pytest.mark.parametrize("name", ["llama-2-7b", "llama-3-8b", "mistral-7b", "qwen2-7b",
                                  "llama-3.2-1b"])
def test_training_flops_per_token_follow_the_published_formula(name: str) -> None:
    """Within 2% of 6 N_mm + 12 L h s (Hoffmann et al. 2022, App. F, without the softmax
    term): N_mm the parameters of the matrix multiplies (the LM head included, the
    embedding lookup not), L layers, h the attention width, s the sequence."""
    seq, layers = 2048, 4
    wl = build(f"hf:{name}", seq=seq, batch=1, layers=layers)
    cfg = CONFIGS[name]
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    attn = heads * cfg.get("head_dim", h // heads)
    norms = (2 * layers + 1) * h
    embed = cfg["vocab_size"] * h
    n_mm = wl.params - embed - norms + (embed if cfg["tie_word_embeddings"] else 0)
    macs = sum(op.macs for op in wl.ops)
    per_token = 2 * macs / seq
    assert per_token == pytest.approx(6 * n_mm + 12 * layers * attn * seq, rel=0.02)


def test_grouped_query_attention_shares_k_and_v_heads() -> None:
    """Llama-3-8B: 8 k and v heads of 128 for 32 query heads, so k_proj and v_proj are a
    quarter of q_proj's size."""
    wl = build("hf:llama-3-8b", seq=64, layers=1)
    size = {t.name: t.nbytes for t in wl.tensors if t.kind == Kind.WEIGHT}
    assert size["l0.k_proj.w"] == size["l0.v_proj.w"] == size["l0.q_proj.w"] // 4
    # SwiGLU: gate, up and down, each hidden x intermediate
    assert size["l0.mlp.gate_proj.w"] == size["l0.mlp.up_proj.w"] == \
        size["l0.mlp.down_proj.w"] == 2 * 4096 * 14336
    assert size["l0.input_norm.w"] == 2 * 4096             # RMSNorm: a gain only


def test_qwen2_has_qkv_biases_and_tied_embeddings_add_no_parameters() -> None:
    q = build("hf:qwen2-7b", seq=64, layers=1)
    size = {t.name: t.nbytes for t in q.tensors if t.kind == Kind.WEIGHT}
    assert size["l0.q_proj.w"] == 2 * (3584 * 3584 + 3584)
    assert size["l0.o_proj.w"] == 2 * 3584 * 3584
    tied = build("hf:llama-3.2-1b", seq=64, layers=1)
    assert not any(t.name == "lm_head.w" for t in tied.tensors)
    assert tied.params == 128256 * 2048 + 2048 * (2048 + 2 * 512 + 2048) \
        + 3 * 2048 * 8192 + 2 * 2048 + 2048


def test_mixtral_runs_every_expert_on_an_even_share_of_the_routed_tokens() -> None:
    """Eight SwiGLU experts, two per token: each expert's GEMMs take ceil(T x 2 / 8)
    rows (the stated load assumption), so the MLP does k/E of the work of all experts
    on every token."""
    seq = 64
    wl = build("hf:mixtral-8x7b", seq=seq, batch=2, layers=1)
    gates = [op for op in wl.ops if op.name.startswith("l0.e") and
             op.name.endswith("gate_proj.fwd")]
    assert len(gates) == 8
    assert all(op.gemms[0].m == 2 * seq * 2 // 8 for op in gates)
    assert wl.params == 32000 * 4096 * 2 + 4096 * (4096 + 2 * 1024 + 4096) \
        + 8 * 3 * 4096 * 14336 + 4096 * 8 + 2 * 4096 + 4096


def test_a_config_json_file_is_read_and_runs(tmp_path: Path) -> None:
    cfg = dict(CONFIGS["llama-3.2-1b"], num_hidden_layers=2)
    path = tmp_path / "tiny-llama" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(cfg))
    wl = sources.build(f"hf:{path}", seq=128)
    assert wl.name == "tiny-llama" and wl.params > 0
    rep = tmhw.simulate("quick", [f"workload.model=hf:{path}", "workload.seq=128",
                                  "policy.hbm_ratio=0.5", "run.iterations=2"]).to_dict()
    assert rep["steady"]["iteration_time_ps"] > 0
    assert rep["workload"]["params"] == wl.params


def _write(tmp_path: Path, data: Any, raw: str | None = None) -> str:
    path = tmp_path / "config.json"
    path.write_text(raw if raw is not None else json.dumps(data))
    return f"hf:{path}"


@pytest.mark.parametrize("case, field", [
    ("missing", "model"),
    ("corrupt", "model"),
    ("no hidden_size", "model (hidden_size)"),
    ("unknown architecture", "model (architectures)"),
    ("heads do not divide hidden", "model (num_attention_heads)"),
    ("kv heads do not divide heads", "model (num_key_value_heads)"),
    ("unknown name", "model"),
])
def test_a_bad_config_is_one_line_naming_the_field(case: str, field: str,
                                                   tmp_path: Path) -> None:
    base = dict(CONFIGS["llama-2-7b"])
    model = {
        "missing": lambda: f"hf:{tmp_path / 'nope.json'}",
        "corrupt": lambda: _write(tmp_path, None, "{ not json"),
        "no hidden_size": lambda: _write(tmp_path, {k: v for k, v in base.items()
                                                    if k != "hidden_size"}),
        "unknown architecture": lambda: _write(tmp_path, dict(base, architectures=["Foo"])),
        "heads do not divide hidden": lambda: _write(tmp_path, dict(
            base, num_attention_heads=33, num_key_value_heads=33)),
        "kv heads do not divide heads": lambda: _write(tmp_path, dict(
            base, num_key_value_heads=5)),
        "unknown name": lambda: "hf:llama-9000",
    }[case]()
    with pytest.raises(ConfigError) as e:
        tmhw.load_config("quick", [f"workload.model={model}"])
    assert str(e.value).startswith(f"workload.{field}") and "\n" not in str(e.value)
    if case == "unknown architecture":
        assert "LlamaForCausalLM" in str(e.value)


def test_the_command_line_shows_an_hf_model_as_json(tmhw: Callable[..., Any]) -> None:
    r = tmhw("workload", "show", "hf:llama-2-7b", "--seq", "4096", "--batch", "1",
             "--json")
    assert r.rc == 0
    d = json.loads(r.out)
    assert d["parameters"] == 6_738_415_616
    assert d["training_flops"] == 2 * (d["forward_macs"] + d["backward_macs"])
    assert d["forward_flops"] == 2 * d["forward_macs"]
    assert d["peak_live_bytes"] > 16 * d["parameters"]          # model state + activations
    assert len(d["op_list"]) == d["ops"] and d["op_list"][0]["phase"] == "forward"
    bad = tmhw("run", "--model", "hf:llama-9000")
    assert bad.rc == 2 and len(bad.err_lines) == 1 and "hf:" in bad.err
