"""vLLM 0.33 option spelling: parsing `vllm serve` argv and rendering values back."""

from __future__ import annotations

import pytest

from vllm_guard.options.argv import ArgvProblem, parse_argv
from vllm_guard.options.table import load_table
from vllm_guard.options.values import ValueProblem, coerce_profile_value, parse_human_int, render

T = load_table()


@pytest.mark.parametrize(
    ("text", "value"),
    [("4096", 4096), ("32k", 32000), ("32K", 32768), ("1m", 1_000_000), ("2M", 2 * 2**20),
     ("25.6k", 25600), ("1g", 10**9), ("1G", 2**30)],
)
def test_human_int(text: str, value: int) -> None:
    assert parse_human_int(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.5K", "12x", "0.0001k", "-5"])
def test_human_int_rejects(text: str) -> None:
    with pytest.raises(ValueProblem):
        parse_human_int(text)


def test_auto_is_minus_one_only_where_vllm_accepts_it() -> None:
    assert parse_human_int("auto", allow_auto=True) == -1
    with pytest.raises(ValueProblem):
        parse_human_int("auto")


def test_table_is_vllm_0_33() -> None:
    assert T.vllm_version == "0.33.0"
    assert len(T.options) == 321
    assert T.by_dest["gpu_memory_utilization"].default == 0.92


@pytest.mark.parametrize(
    ("written", "dest"),
    [("--max-model-len", "max_model_len"), ("--max_model_len", "max_model_len"), ("--max-model", "max_model_len"),
     ("-tp", "tensor_parallel_size"), ("-pp", "pipeline_parallel_size"), ("-q", "quantization"),
     ("--device-memory-utilization", "gpu_memory_utilization"), ("--enforce-eag", "enforce_eager")],
)
def test_spellings_resolve(written: str, dest: str) -> None:
    found = T.resolve(written)
    assert found is not None and found[0].dest == dest


def test_ambiguous_prefix_is_not_resolved() -> None:
    assert T.resolve("--max-num") is None  # max-num-seqs, max-num-batched-tokens, ...


def args_by_dest(argv: list[str]) -> dict[str, object]:
    return {a.identity: a.value for a in parse_argv(argv, T)}


def test_parse_values_and_toggles() -> None:
    got = args_by_dest([
        "--max-model-len", "32K", "--gpu-memory-utilization=0.85", "--enforce-eager", "--no-enable-prefix-caching",
        "--served-model-name", "a", "b", "--tensor_parallel_size", "2", "--kv-cache-dtype", "fp8",
        "--limit-mm-per-prompt", '{"image": 1}', "--hf-token", "--dtype", "half", "--max-num-batched-tokens", "8k",
    ])
    assert got == {
        "max_model_len": 32768, "gpu_memory_utilization": 0.85, "enforce_eager": True,
        "enable_prefix_caching": False, "served_model_name": ["a", "b"], "tensor_parallel_size": 2,
        "kv_cache_dtype": "fp8", "limit_mm_per_prompt": {"image": 1}, "hf_token": True, "dtype": "half",
        "max_num_batched_tokens": 8000,
    }


def test_disable_form_and_plain_flag() -> None:
    got = args_by_dest(["--disable-prefix-caching", "--disable-log-stats", "--enable-prefix-caching"])
    assert got["enable_prefix_caching"] is True  # last wins, as in argparse
    assert got["disable_log_stats"] is True


def test_optimization_level_shorthands() -> None:
    for argv in (["-O3"], ["-O=3"], ["-O", "3"]):
        args = parse_argv(argv, T)
        assert [(a.identity, a.value) for a in args] == [("optimization_level", "3")]
        assert args[0].argv() == argv


def test_dotted_json_keys_pass_through() -> None:
    (arg,) = parse_argv(["-cc.cudagraph_mode=PIECEWISE"], T)
    assert arg.identity == "compilation_config.cudagraph_mode"
    assert arg.argv() == ["-cc.cudagraph_mode=PIECEWISE"]


def test_negative_numbers_are_values() -> None:
    assert args_by_dest(["--max-model-len", "-1"]) == {"max_model_len": -1}


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [(["--max-model-lenght", "4"], "unknown vLLM option"), (["--max-model-len"], "expects a value"),
     (["--dtype", "bf17"], "one of"), (["--enforce-eager=1"], "takes no value"),
     (["stray"], "unexpected argument"), (["--tensor-parallel-size", "two"], "integer"),
     (["--served-model-name"], "at least one"), (["--swap-space", "4"], "unknown")],
)
def test_parse_errors(argv: list[str], fragment: str) -> None:
    with pytest.raises(ArgvProblem, match=fragment):
        parse_argv(argv, T)


def test_unknown_suggestion() -> None:
    with pytest.raises(ArgvProblem) as e:
        parse_argv(["--max-model-lenght", "4"], T)
    assert e.value.suggestion == "max-model-len"


def test_unknown_allowed_passes_through() -> None:
    (arg,) = parse_argv(["--future-flag", "1", "2"], T, allow_unknown=True)
    assert arg.spec is None and arg.argv() == ["--future-flag", "1", "2"]


# Every value kind: TOML value -> vLLM argv -> parsed back to the same value.
ROUND_TRIPS = [
    ("max-model-len", 8192, ["--max-model-len", "8192"]),
    ("max-model-len", "32K", ["--max-model-len", "32768"]),
    ("gpu-memory-utilization", 0.9, ["--gpu-memory-utilization", "0.9"]),
    ("enforce-eager", True, ["--enforce-eager"]),
    ("enforce-eager", False, ["--no-enforce-eager"]),
    ("enable-prefix-caching", False, ["--disable-prefix-caching"]),
    ("disable-log-stats", True, ["--disable-log-stats"]),
    ("dtype", "bfloat16", ["--dtype", "bfloat16"]),
    ("served-model-name", ["a", "b"], ["--served-model-name", "a", "b"]),
    ("api-key", "k", ["--api-key", "k"]),
    ("api-key", ["k1", "k2"], ["--api-key", "k1", "k2"]),
    ("limit-mm-per-prompt", {"image": 1}, ["--limit-mm-per-prompt", '{"image":1}']),
    ("compilation-config", {"cudagraph_mode": "PIECEWISE"}, ["--compilation-config", '{"cudagraph_mode":"PIECEWISE"}']),
    ("cudagraph-capture-sizes", [1, 2, 4], ["--cudagraph-capture-sizes", "1", "2", "4"]),
    ("device-ids", [2, 3], ["--device-ids", "2,3"]),
    ("hf-token", True, ["--hf-token"]),
    ("tensor-parallel-size", 2, ["--tensor-parallel-size", "2"]),
    ("hf-overrides", {"rope_theta": 1e6}, ["--hf-overrides", '{"rope_theta":1000000.0}']),
]


@pytest.mark.parametrize(("key", "value", "argv"), ROUND_TRIPS)
def test_render_round_trip(key: str, value: object, argv: list[str]) -> None:
    found = T.lookup_key(key)
    assert found is not None
    spec, _ = found
    coerced = coerce_profile_value(spec, value)
    assert render(spec, coerced) == argv
    (back,) = parse_argv(argv, T)
    expected = [str(v) for v in coerced] if spec.kind == "csv_list" else coerced
    assert back.value == expected


@pytest.mark.parametrize(
    ("key", "value"),
    [("max-model-len", "lots"), ("max-model-len", True), ("gpu-memory-utilization", "0.9"),
     ("enforce-eager", "yes"), ("dtype", "bf17"), ("limit-mm-per-prompt", "{not json"),
     ("tensor-parallel-size", 1.5), ("served-model-name", [])],
)
def test_profile_value_type_errors(key: str, value: object) -> None:
    found = T.lookup_key(key)
    assert found is not None
    with pytest.raises(ValueProblem):
        coerce_profile_value(found[0], value)


def test_json_nested_past_pythons_limit_is_a_refusal_not_a_crash() -> None:
    # json.loads raises RecursionError, not JSONDecodeError, on 50,000 open brackets (a review's case)
    with pytest.raises(ArgvProblem, match="expected JSON"):
        parse_argv(["--compilation-config", "[" * 50_000], T)
    assert parse_argv(["--compilation-config.x", "[" * 50_000], T)[0].value == "[" * 50_000  # a dotted key's string


@pytest.mark.parametrize("argv", [
    ["--speculative-config.method", "ngram", "--speculative-config.method.x", "2"],
    ["--compilation-config.a+", "x", "--compilation-config.a.b", "1"],
])
def test_a_dotted_key_under_a_value_is_refused_where_the_namespace_is_built(argv: list[str]) -> None:
    from vllm_guard.options.argv import CommandLine, namespace

    with pytest.raises(ArgvProblem, match="was given a value before"):
        namespace(CommandLine("m", tuple(parse_argv(argv, T))))
