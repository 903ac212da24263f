"""Median times to classify big vLLM logs: `explain` must stay linear (issue 28: a million error lines in a few
seconds, under 10 s).

- 100,000 lines of metrics noise with the KV failure in the middle (target: under 1 s);
- a million error lines of a crash loop (the same error, the time changing), the KV failure last;
- a million error lines that all differ (a counter in each message), so that no line is read twice;
- a million lines of OOM tracebacks (frames and the exception, repeated);
- a million lines that say "Error: " and are no exception (a server's request log), read to an `unknown`;
- 100,000 different lines that rules with conditions read (warnings, Ray's teardown line), the KV failure last;
- 100,000 different lines of a failure vLLM logs and goes on after (its failed import of triton_kernels, whose
  condition looks for what follows), the KV failure last;
- `vllm-guard explain FILE` (in-process) on the crash-loop file, the all-different one and a million short
  error lines (65 MiB): it reads the last 64 MiB (safefile.LOG_TAIL_BYTES), parses and renders.

Run: python benchmarks/classify_big_log.py [RUNS] [LINES]   (medians over RUNS runs, default 3; LINES 1,000,000)
"""

from __future__ import annotations

import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vllm_guard.cli import main as cli  # noqa: E402
from vllm_guard.diagnose.classify import classify  # noqa: E402

FAILURE = (ROOT / "tests/data/logs/kv_cache_too_small_033_with_estimate.log").read_text().splitlines()


def _time(i: int) -> str:
    return f"11-29 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}"


def noise_with_failure_in_the_middle(lines: int) -> str:
    noise = [f"(APIServer pid=41125) INFO {_time(i)} [metrics.py:88] "
             f"Avg prompt throughput: {i % 977}.0 tokens/s, Running: {i % 17} reqs" for i in range(lines)]
    half = (lines - len(FAILURE)) // 2
    return "\n".join(noise[:half] + FAILURE + noise[half: lines - len(FAILURE)]) + "\n"


def crash_loop(lines: int) -> str:
    err = [f"(EngineCore_DP0 pid=7) ERROR {_time(i)} [core.py:866] RuntimeError: Worker failed with error 'CUDA "
           "error: an illegal memory access was encountered', please check the stack trace above for the root "
           "cause" for i in range(lines - len(FAILURE))]
    return "\n".join(err + FAILURE) + "\n"


def distinct_errors(lines: int) -> str:
    return "\n".join(f"(Worker_TP{i % 8} pid={100 + i % 8}) ERROR {_time(i)} [multiproc_executor.py:597] "
                     f"RuntimeError: request {i} failed: shape mismatch at step {i * 7 % 10007}"
                     for i in range(lines)) + "\n"


def short_errors(lines: int) -> str:
    """A million short error lines, all different: 65 MiB, so `explain FILE` reads nearly all of them."""
    return "\n".join(f"ERROR {_time(i)} [core.py:866] RuntimeError: step {i} failed" for i in range(lines)) + "\n"


def error_words_no_exception(lines: int) -> str:
    """A million lines that say "Error: " and are no exception (a server's request log): an `unknown` whose last
    exception the raise-site lookup looks for must not read them all (a review of the raise-site table found it read
    them twice, 26% slower)."""
    return "\n".join(f"ERROR {_time(i)} [serving.py:1] Error: request {i} failed" for i in range(lines)) + "\n"


def oom_tracebacks(lines: int) -> str:
    block = ["(EngineCore_DP0 pid=7) ERROR 11-29 06:00:00 [core.py:866] Traceback (most recent call last):",
             '(EngineCore_DP0 pid=7) ERROR 11-29 06:00:00 [core.py:866]   File "/vllm/v1/worker/gpu_model_runner.py",'
             " line 3420, in profile_run",
             "(EngineCore_DP0 pid=7) ERROR 11-29 06:00:00 [core.py:866]     hidden_states = self._dummy_run(n)",
             "(EngineCore_DP0 pid=7) ERROR 11-29 06:00:00 [core.py:866] torch.OutOfMemoryError: CUDA out of memory. "
             "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.50 GiB is free."]
    return "\n".join(block * (lines // len(block))) + "\n"


def conditioned_lines(lines: int) -> str:
    """Lines that rules with conditions read, each different: PermissionError warnings, V0's negative block counts,
    Ray's GCS line after another error; the KV failure last. A condition that reads the whole log for each line makes
    this quadratic (a review of blind47-52's rules found two)."""
    third = lines // 3
    out = ["RuntimeError: some failure of the driver"]
    out += [f"PermissionError: [Errno 13] Permission denied: '/.cache/x/{i}'" for i in range(third)]
    out += [f"INFO 06-21 10:00:18 llm_engine.py:128] # GPU blocks: -{i + 1}, # CPU blocks: 512" for i in range(third)]
    out += [f"(raylet) [2024-01-01 00:00:{i % 60:02d},000 E 1 1] gcs_rpc_client.h:179: Failed to connect to GCS within "
            "60 seconds. GCS may have been killed." for i in range(third)]
    return "\n".join(out + FAILURE) + "\n"


def logged_and_went_on(lines: int) -> str:
    """Lines of a failure vLLM logs and goes on after, each different, then the KV failure: the rule's condition asks
    what follows each; asked of the rest of the log each time it is quadratic (a review of blind91's rules found it:
    8,000 such lines took 6.7 s)."""
    out = [f"ERROR 11-29 06:00:00 [config.py:40] Failed to import Triton kernels. Please make sure your triton "
           f"version is compatible. Error: No module named 'triton_kernels.matmul_ogs_{i}'" for i in range(lines)]
    return "\n".join(out + FAILURE) + "\n"


def warned_then_failed(lines: int) -> str:
    """One of vLLM's warnings a rule may read as the failure (0.11+'s Ray placement warning), repeated, then another
    error: a condition that asks what follows each copy is quadratic (a review found 5,000 copies took 50 s)."""
    warning = ("WARNING 05-01 10:00:01 [ray_utils.py:365] The number of required GPUs exceeds the total number of "
               "available GPUs in the placement group.")
    return "\n".join([warning] * lines + ["ValueError: something else happened"]) + "\n"


def _median(runs: int, f: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    big = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    cases = (("100,000 lines of noise, the KV failure in the middle", noise_with_failure_in_the_middle(100_000),
              "kv_cache_too_small"),
             (f"{big:,} error lines of a crash loop, the KV failure last", crash_loop(big), "kv_cache_too_small"),
             (f"{big:,} error lines, all different", distinct_errors(big), "unknown"),
             (f"{big:,} lines of OOM tracebacks in the profile run", oom_tracebacks(big), "oom_profiling"),
             (f"{big:,} error lines that are no exception", error_words_no_exception(big), "unknown"),
             ("100,000 lines that rules' conditions read, the KV failure last", conditioned_lines(100_000),
              "kv_cache_too_small"),
             ("100,000 lines of a failure vLLM goes on after, the KV failure last", logged_and_went_on(100_000),
              "kv_cache_too_small"),
             ("100,000 copies of a warning a rule reads, another error last", warned_then_failed(100_000), "unknown"))
    for name, text, expected in cases:
        got = classify(text).cls
        assert got == expected, (name, got)
        took = _median(runs, lambda t=text: classify(t))
        print(f"classify {name} ({len(text) / 2**20:.0f} MiB): median {took:.2f} s")
        del text
    with tempfile.TemporaryDirectory() as tmp:
        for name, build, expected in (("crash loop", crash_loop, 0), ("all-different errors", distinct_errors, 7),
                                      ("short all-different errors", short_errors, 7)):
            path = Path(tmp) / "big.log"
            path.write_text(build(big))

            def explain(path: Path = path, expected: int = expected) -> None:
                out, err = io.StringIO(), io.StringIO()
                code = cli.main(["explain", str(path)], environ={"HOME": tmp, "PATH": "/usr/bin:/bin"},
                                stdout=out, stderr=err)
                assert code == expected, (code, err.getvalue())

            size = path.stat().st_size / 2**20
            print(f"vllm-guard explain FILE, {big:,} lines of {name} ({size:.0f} MiB; it reads the last 64 MiB): "
                  f"median {_median(runs, explain):.2f} s over {runs} runs")


if __name__ == "__main__":
    main()
