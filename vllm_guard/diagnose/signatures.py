"""Pure: Python's binding errors (a call whose arguments the callee refuses) and attributes a vLLM object lacks, read
as which installed pieces do not fit: a program or platform plugin written for another vLLM release, or vLLM's own
code calling a library of another release. fallback.supported says them when no decisive message matched."""

from __future__ import annotations

import re

from vllm_guard.diagnose import logread
from vllm_guard.diagnose.certainty import VLLM_CONFIG_CLASSES
from vllm_guard.diagnose.diagnosis import ready
from vllm_guard.diagnose.logread import LogLine
from vllm_guard.diagnose.missing_modules import IN_VLLM, INSTALLED, PLUGIN_PACKAGE

# vLLM's own objects and entry points, as the programs that drive it call them.
# The OpenAI server's classes and functions too: BentoML and Ray Serve build vLLM's server from them
# (entrypoints/openai/serving_*.py, api_server.py init_app_state and build_app).
# And VllmConfig's parts (config/*.py), which a platform plugin reads for its own set-up (blind160/b160-008:
# vllm-ascend reading ParallelConfig.expert_parallel_size, a field vLLM main had dropped).
_VLLM_CLASSES = ("LLMEngine", "AsyncLLMEngine", "AsyncLLM", "MQLLMEngine", "LLM", "EngineCoreClient", "GPUModelRunner",
                 "EngineArgs", "AsyncEngineArgs", "SamplingParams", "OpenAIServingChat", "OpenAIServingCompletion",
                 "OpenAIServingModels", "OpenAIServingEmbedding", "OpenAIServingTokenization",
                 *VLLM_CONFIG_CLASSES)
_VLLM_OBJECT = re.compile(rf"AttributeError: '(?:{'|'.join(_VLLM_CLASSES)})' object has no attribute '\w{{1,128}}'")
# A module of vLLM without a name that a program or plugin reads from it (blind185/b185-008: VibeVoice's plugin
# reading vllm.multimodal.audio.AudioMediaIO, which vLLM moved to vllm/multimodal/media/audio.py by 0.20). Not a
# partially initialized module (a circular import, Python's other wording).
_VLLM_MODULE = re.compile(r"AttributeError: module 'vllm(?:\.\w{1,64}){0,6}' has no attribute '\w{1,128}'")
# Python 3.10+ names the function by its qualified name ("AsyncEngineArgs.__init__()"), 3.9 and before by its own.
_UNEXPECTED_KEYWORD = re.compile(r"TypeError: (?:(?P<owner>[\w.]{1,128})\.)?(?P<func>\w{1,128})\(\) got an unexpected "
                                 r"keyword argument '\w{1,128}'")
# A call that builds a class by its bare name, as a code line of a traceback shows it ("    NewRequestData(",
# "    self.input_batch = InputBatch(").
_BARE_CLASS_CALL = re.compile(r"^\s{0,40}(?:[\w.]{1,64} = )?[A-Z]\w{0,80}\($")
# A call of a method of an object the caller holds ("    self.aclgraph_dispatcher.dispatch(num_tokens=..."): the
# method's name is the TypeError's; a call of a module it holds ("    hidden_states = self.self_attn(") is a call of
# the module's forward
_HELD_METHOD_CALL = re.compile(r"^\s{0,40}(?:[\w.]{1,64} = )?self\.\w{1,64}\.(?P<method>\w{1,128})\(")
_HELD_MODULE_CALL = re.compile(r"^\s{0,40}(?:[\w.]{1,64}(?:, [\w.]{1,64}){0,4} = )?self\.\w{1,64}\(")
# torch's own frames between a module's call and its forward (torch/nn/modules/module.py _wrapped_call_impl and
# _call_impl, with their source lines), and the carets Python 3.11+ draws under a frame's source line
_TORCH_CALL = re.compile(r"torch[/\\]nn[/\\]modules[/\\]module\.py|^\s{0,40}return (?:self\._call_impl|forward_call)\("
                         r"|^\s{0,200}[\^~]{1,400}\s{0,20}$")
# A call into vLLM on the lines just above the TypeError (the traceback's last frame, or the paste's quote of it).
_VLLM_CALL = re.compile(r"EngineArgs\(|\bLLM\(|LLMEngine\(|from_engine_args\(|build_async_engine_client|/vllm/"
                        r"|OpenAIServing\w{0,40}\(|init_app_state\(")


def vllm_api_mismatch(lines: list[LogLine], i: int) -> bool:
    """A program written for another vLLM release: a vLLM object lacks the attribute it reads, or a vLLM entry point
    refuses a keyword it passes (the lines above show the call)."""
    text = lines[i].text
    if "object has no attribute" in text and _VLLM_OBJECT.search(text):
        return True
    if "module 'vllm" in text and _VLLM_MODULE.search(text):
        return _read_by_a_program(lines, i) and not ready(lines)
    m = _UNEXPECTED_KEYWORD.search(text) if "unexpected keyword" in text else None
    if m is None:
        return False
    if m.group("func").startswith(("build_async_engine_client", "from_engine_args", "from_vllm_config",
                                   "init_app_state")):
        return True
    if (m.group("owner") or "").rsplit(".", 1)[-1] in _VLLM_CLASSES:
        return True
    if any(_VLLM_CALL.search(line.text) for line in lines[max(0, i - 3):i]):
        return True
    # a platform plugin's own frame building a class it imported by name: a plugin written against another vLLM
    # release passes a keyword a class of this vLLM's does not take (blind82/b82-004: vllm-spyre's warm-up building
    # V1's NewRequestData); not a call qualified by a module (`torch_npu.npu_grouped_matmul(`, `nnx.Embed(`: another
    # library's), and only in a start that never got ready
    # Or calling a method of a vLLM object it holds, by a keyword this vLLM's method does not take (blind151/b151-002:
    # vllm-ascend main's model runner calling 0.11.2's CudagraphDispatcher.dispatch(num_tokens=...)).
    owner = (m.group("owner") or "").rsplit(".", 1)[-1]
    # vllm-ascend's decoder layer calling vLLM's attention module with V0's kv_cache (blind160/b160-005): the frames
    # between are torch's
    above = [line for line in lines[max(0, i - 9):i] if not _TORCH_CALL.search(logread.body(line.text))][-3:]
    calls = [logread.body(line.text) for line in above]
    func = m.group("func")
    return (bool(owner[:1].isupper() and any(PLUGIN_PACKAGE.search(line.text) for line in above)
                 and any(_BARE_CLASS_CALL.search(c) or ((h := _HELD_METHOD_CALL.search(c)) is not None
                                                        and h.group("method") == func)
                         or (func == "forward" and _HELD_MODULE_CALL.search(c)) for c in calls))
            and not ready(lines))


def _read_by_a_program(lines: list[LogLine], i: int) -> bool:
    """The frame that read the missing name, the last above the line past a module's own __getattr__ (vllm/envs.py
    raises from its own, 0.6-0.34), is no file of vLLM's package or source tree: vLLM's own code missing its own name
    is a mixed install, not a program written for another release."""
    for line in reversed(lines[max(0, i - 8):i]):
        frame = logread.frame_of(line.text)
        if frame is not None and frame.func != "__getattr__":
            return not (_VLLM_FILE.search(frame.path) or IN_VLLM.search(frame.path))
    return False


# vLLM's package installed, or its source tree (vllm/vllm/...); not a framework's own folder named vllm
# (xinference/model/llm/vllm/) nor a user's (~/vllm/run.py)
_VLLM_FILE = re.compile(r"(?:site|dist)-packages[/\\]vllm[/\\]|[/\\]vllm[/\\]vllm[/\\]")


# Python's binding errors, raised at the call site: the traceback's last frame is the caller's.
_SIGNATURE = re.compile(r"TypeError: (?:(?P<owner>[\w.]{1,128})\.)?\w{1,128}\(\) (?:takes (?:from \d{1,3} to )?\d{1,3} "
                        r"positional arguments? but \d{1,3} (?:were|was) given|missing \d{1,3} required "
                        r"(?:positional|keyword-only) arguments?|got an unexpected keyword argument|got multiple "
                        r"values for argument)")
# The same binding error with no traceback kept (a paste of its last line, or a Ray worker's relayed one): among
# Python's binding errors the one a caller written for the callee's other release gives, never a settings mistake
# (every real report of it in tests/data/real-logs is labelled version_mismatch; blind9/b9-020 spells it "typeError").
_MULTIPLE_VALUES = re.compile(r"(?i:typeerror): (?:[\w.]{1,128}\.)?\w{1,128}\(\) got multiple values for "
                              r"(?:keyword )?argument '\w{1,128}'")
# pybind11's binding error (pybind11.h, the dispatcher's TypeError): a compiled library's function called with
# arguments none of its overloads takes.
PYBIND = re.compile(r"[\w.]{0,128}\(\): incompatible (?:constructor|function) arguments\. The following argument "
                     r"types are supported")
# An exception class built to re-raise another (vLLM 0.6's model_runner_base.py "raise type(err)(...)"): its
# constructor's signature is the exception's, not a library's API (rocm_sdk_builder #248, BackendCompilerFailed).
_EXCEPTION_CLASS = re.compile(r"(?:Error|Exception|Failed|Warning|Interrupt|Exit)$")
def library_signature(lines: list[LogLine], tbs: list[logread.Traceback]) -> logread.Traceback | None:
    """The exception line where vLLM's own code called a function with arguments its installed version refuses: a
    library vLLM depends on (transformers, torch) at another release than this vLLM was written for."""
    for tb in reversed(tbs):
        if tb.exception is None or not tb.frames or not IN_VLLM.search(tb.frames[-1].path):
            continue
        m = _SIGNATURE.search(lines[tb.exception].text) if "TypeError" in lines[tb.exception].text else None
        if m is None:
            continue
        owner = (m.group("owner") or "").rsplit(".", 1)[-1]
        raising = any(line.text.lstrip().startswith("raise ") for line in lines[max(0, tb.exception - 3):tb.exception])
        if owner not in _VLLM_CLASSES and not _EXCEPTION_CLASS.search(owner) and not raising:
            return tb
    return None


# unittest.mock's patch finding no attribute to replace (mock.py _patch.get_original, read at Python 3.11:
# "AttributeError: <module 'torch._inductor.fx_passes' ...> does not have the attribute 'x'"): vLLM patches a
# library's internals while it compiles (compilation/compiler_interface.py, read at 0.9.2-0.34), and a library at
# another release has no such name there (python_package).
# A function where a module was meant is vLLM's own fault, not the library's release (mock_resolution): Python 3.10
# and before resolve patch("torch._inductor.standalone_compile.X") to the function of that name that
# torch._inductor's __init__ defines, not to the module (blind176/b176-002, a vLLM nightly; vLLM's comment in
# compiler_interface.py; 0.20.2-0.34 patch the module from sys.modules instead).
_PATCH_TARGET_MISSING = re.compile(r"AttributeError: <(?P<kind>\w{1,20})\b.{0,300}> does not have the attribute "
                                   r"'\w{1,128}'")
# the frames between vLLM's and the refusal: mock's own, and contextlib's where vLLM enters its patches through an
# ExitStack (compiler_interface.py, cuda_graph.py)
_PATCH_HELPERS = re.compile(r"[/\\](?:unittest[/\\]mock|contextlib)\.py$")


def library_patch(lines: list[LogLine],
                  tbs: list[logread.Traceback]) -> tuple[logread.Traceback, logread.Frame, str] | None:
    """The traceback where vLLM's own code patched a library's internal that is not there, vLLM's frame that patched
    it, and the reading's detail by what the target was (a function: Python 3.10's resolution of vLLM's dotted
    name)."""
    for tb in reversed(tbs):
        if tb.exception is None or "does not have the attribute" not in lines[tb.exception].text:
            continue
        m = _PATCH_TARGET_MISSING.search(lines[tb.exception].text)
        own = [f for f in tb.frames if not _PATCH_HELPERS.search(f.path)]
        if m and own and own[-1] is not tb.frames[-1] and IN_VLLM.search(own[-1].path):
            return tb, own[-1], "mock_resolution" if m.group("kind") == "function" else "python_package"
    return None


def multiple_values(lines: list[LogLine], tbs: list[logread.Traceback]) -> tuple[LogLine, str] | None:
    """Python's "got multiple values for argument" where it says a version, and its reading: the line alone (a
    paste of it, a Ray worker's relayed one), or a traceback whose last frame is an installed package's (vLLM's,
    transformers'), not a user's own script calling its own function wrongly; a platform plugin's frame, also from a
    source checkout, is the plugin written for another vLLM (blind162/b162-002: vllm-ascend's CI calling vLLM main's
    get_attn_backend)."""
    raised_at = {tb.exception: tb for tb in tbs if tb.exception is not None and tb.frames}
    for i, line in enumerate(lines):
        if "multiple values" in line.text and _MULTIPLE_VALUES.search(line.text):
            tb = raised_at.get(i)
            path = tb.frames[-1].path if tb is not None else ""
            if PLUGIN_PACKAGE.search(path):
                return line, "vllm_api"
            if tb is None or INSTALLED.search(path) or IN_VLLM.search(path):
                return line, "python_package"
    return None
