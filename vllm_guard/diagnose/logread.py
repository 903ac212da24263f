"""Pure: the structure of a vLLM log as it is really pasted: lines, starts, tracebacks.

A log reaches `explain` through terminals, journald, Docker, Kubernetes, CI systems and issue
trackers, each adding its prefix (often several, nested), colours and wrapping. This module takes
them off and reads what is left as structure: which process wrote a line, where one start of vLLM
ends and the next begins, and the tracebacks with their frames, per process. It knows nothing of
failure classes (classify.py does).

Every pattern is linear in the line (bounded repeats only): benchmarks/classify_pathological.py.
"""

from __future__ import annotations

import re
from typing import NamedTuple

MAX_LINE_CHARS = 16384  # longer than any line vLLM writes (its config dump is ~4 KiB); the rest is ignored


def any_of(words: tuple[str, ...] | list[str]) -> re.Pattern[str]:
    """A regex that finds any of the literal words, built as a trie ("F(?:ree memory|ailed to load)|...").

    Python's re tries the branches of a plain alternation one by one at every position of a line; a trie
    tries one branch per first character, so a prefilter over 80 words costs a few steps per character, not
    80 (the million-line log of issue 28). It finds the same words as the alternation, longest first.
    """
    trie: dict[str, dict] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, dict]) -> str:
        ends = "" in node
        branches = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch != ""]
        if not branches:
            return ""
        if len(branches) == 1 and not ends:
            return branches[0]
        return "(?:" + "|".join(branches) + ")" + ("?" if ends else "")

    return re.compile(build(trie))


class LogLine(NamedTuple):
    n: int  # 1-based line number in the input
    proc: str  # vLLM's process name from "(EngineCore_DP0 pid=7)", or ""
    text: str  # the line without prefixes, colours and control characters
    source: str = ""  # the journal's "identifier[pid]", or ""


class Frame(NamedTuple):
    path: str
    func: str


class Traceback(NamedTuple):
    proc: str
    first: int  # index into the lines
    frames: tuple[Frame, ...]
    exception: int | None  # index of the exception line that ends it; None when the paste stops before it


# --- prefixes ----------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]+")
_JOURNAL = re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S{1,255} (?P<src>[^\s:\[]{1,255}(?:\[\d{1,10}\])?): ")
_ISO_JOURNAL = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.\d]{0,10}[+-]\d\d:?\d\d \S{1,255} (?P<src>[^\s:\[]{1,255}(?:\[\d{1,10}\])?): ")
# vLLM's process prefixes: V0's "(VllmWorkerProcess pid=N)", V1 0.8-0.10's "(VllmWorker rank=R pid=N)"
# (v1/executor/multiproc_executor.py; the rank stays in the name: each rank is its own process), 0.11+'s
# "(Worker_TP0 pid=N)", "(EngineCore_DP0 pid=N)", "(APIServer pid=N)", and Ray's "(RayWorkerWrapper pid=N, ip=A)".
# A process is its name and pid: V0's workers all call themselves VllmWorkerProcess.
_PROCESS = re.compile(r"^\((?P<proc>[A-Za-z_][A-Za-z0-9_]{0,63}(?: rank=\d{1,5})?)? ?(?P<pid>pid=\d{1,10})"
                      r"(?:, ip=[0-9A-Fa-f.:]{1,64})?\) ")
# Prefixes that carry nothing we need: a timestamp (CI, kubelet, Ray), a kubelet stream tag, a
# docker-compose service, a markdown quote, torch's rank tag, a pasted table's "| ts |" column, FastChat's
# logger ("%(asctime)s | %(levelname)s | %(name)s | ", its vLLM worker's stderr written as records of "stderr").
_NOISE = re.compile(
    r"^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \| (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \| [\w.-]{1,64} \| "
    r"|\[\d{4}-\d\d-\d\d[T ][\d:.,]{5,20}Z?\] ?"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d[.,\d]{0,10}(?:Z|[+-]\d\d:?\d\d)?(?: \| | (?:stdout|stderr) [FP] |\s))"
    r"|^(?:stdout|stderr) [FP] "
    r"|^\[pod/[\w.-]{1,253}/[\w.-]{1,253}\] "  # kubectl logs --prefix
    r"|^[\w.-]{1,64}\s{1,32}\| "
    r"|^\[rank\d{1,5}\]: "
    r"|^> ?"
    r"|^\u258e ?"  # a quote's bar as some renderers copy it ("\u258e Available KV cache memory"; blind43/b43-014)
    r"|^[\s\xa0]{0,8}\| "
)
_PREFIX_START = frozenset("0123456789[>|\xa0\u258e ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz(")
LEVELS = ("INFO", "WARN", "ERROR", "DEBUG", "CRITICAL", "Traceback", "File", "Loading")


def _strip_prefixes(line: str) -> tuple[str, str, str]:
    """(process, source, text): every known prefix taken off, however they nest."""
    proc = source = ""
    for _ in range(6):
        if not line or line[0] not in _PREFIX_START or line.startswith(LEVELS):
            break
        if line[0] == "(":
            m = _PROCESS.match(line)
            if not m:
                break
            proc, line = f'{m.group("proc") or "Ray"} {m.group("pid")}', line[m.end():]
            continue
        m = _JOURNAL.match(line) or _ISO_JOURNAL.match(line)
        if m:
            source, line = m.group("src"), line[m.end():]
            continue
        m = _NOISE.match(line)
        if not m or m.end() == 0:
            break
        line = line[m.end():]
        if line.startswith("\x1b"):
            line = _ANSI.sub("", line)
    return proc, source, line


def read(text: str) -> list[LogLine]:
    """The log's non-empty lines: prefixes, colours, control characters and progress-bar redraws removed."""
    out: list[LogLine] = []
    append, make = out.append, tuple.__new__  # a million lines: the per-line overhead is the cost (issue 28)
    for n, raw in enumerate(text.split("\n"), 1):
        # tqdm redraws a bar with \r; the last segment is what a terminal shows
        line = raw.rstrip("\r").rsplit("\r", 1)[-1] if "\r" in raw else raw
        line = line[:MAX_LINE_CHARS]
        line = _ANSI.sub("", line) if "\x1b" in line else line
        if not line.isprintable():  # NUL, bell, stray escapes: never echoed as evidence
            line = _CONTROL.sub("", line)
        if line[:1] in _PREFIX_START and not line.startswith(LEVELS):
            proc, source, line = _strip_prefixes(line)
        else:  # a bare record ("ERROR 11-29 ...", "Traceback ..."): nothing to take off
            proc = source = ""
        if line.endswith("across cluster]"):  # Ray's log deduplication (ray_logging.py), on any process's line
            line = _RAY_REPEATED.sub("", line)
        if "[address=" in line:  # xoscar's tag on an actor's error, inside the message (Xinference)
            line = _XOSCAR.sub("", line)
        if line and not line.isspace():
            append(make(LogLine, (n, proc, line.rstrip(), source)))
    return out


_RAY_REPEATED = re.compile(r" ?\[repeated \d{1,9}x across cluster\]$")
# xoscar (the actor framework under Xinference) re-raises an actor's exception with its address in front of the
# message: "TypeError: [address=0.0.0.0:37737, pid=1025864] AsyncEngineArgs.__init__() got ..."
# (xoscar/backends/message.pyx _AsCauseBase.__str__); the message is what follows.
_XOSCAR = re.compile(r"\[address=[^\]\s,]{1,300}, pid=-?\d{1,10}\] ")


# --- wrapped lines -------------------------------------------------------------------

# A line that starts a record of its own: a log level, a traceback part, an exception, a bar.
# Not "(" before a figure: a message wrapped before its own parenthesis ("max seq len (40960), " / "(5.62 GiB KV cache
# is needed, ..."; blind35/b35-003); a process's prefix is read into LogLine.proc, not left in the text.
_NEW_RECORD = re.compile(r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL|Traceback|During handling|The above exception"
                         r"|\s|\[|\((?!\d)|[\w.]{1,100}(?:Error|Exception|Warning|Exit)\b|[\w.]{1,100}: )")


# The shortest line taken as wrapped: a terminal or a person wraps at 60 columns or more.
WRAPPED_MIN = 60
WRAPPED_PREFIXED_MIN = 40


def continuation(lines: list[LogLine], i: int, shortest: int | None = None) -> LogLine | None:
    """The next line when it continues line i's message (wrapped by a terminal or by the person who pasted it).
    ``shortest``: the shortest line i taken as wrapped, where the caller knows it is inside a wrapped run (a person
    wrapping at word boundaries leaves lines shorter than the width by up to a word)."""
    if i + 1 >= len(lines):
        return None
    line, nxt = lines[i], lines[i + 1]
    # A terminal that hard-wraps a prefixed line writes the rest without the prefix ("(EngineCore pid=316) ...
    # (4.26 GiB KV cach" / "e is needed, ..."): an unprefixed next line may continue a prefixed one.
    # A terminal's columns hold the prefix too: an 80-column wrap leaves some 55 characters of a prefixed line's text
    # (blind93/b93-001: "(APIServer pid=4937)   Value error, The quantization method compressed-tensors i").
    if (nxt.proc != line.proc and nxt.proc) or nxt.n != line.n + 1:
        return None
    if _head_broken_by_hand(line.text, nxt.text):
        return nxt
    if len(line.text) < (shortest or (WRAPPED_PREFIXED_MIN if line.proc and not nxt.proc else WRAPPED_MIN)) \
            or line.text.endswith((".", ")")):
        return None
    # A colon ends a line that introduces the next record, except before a quoted value on the next line: a message
    # wrapped before the name it quotes (blind37/b37-013: "... or 'namespace/repo_name':" / "'/home/...'"), or before
    # the set or dict it prints (blind89/b89-003: "... not initialized from checkpoint:" / "{'model.layers...").
    if line.text.endswith(":") and not nxt.text.startswith(("'", '"', "{")):
        return None
    if nxt.text.startswith(_RECORD_STARTS) or _NEW_RECORD.match(nxt.text):
        # A message quoted indented in a post keeps its indent on every wrapped line (blind139/b139-003: "  ValueError:
        # Weight input_size_per_partition = 192 is not divisible by" / "  weight quantization block_k = 128."): read
        # so only under an exception's head at that indent, not tables, numbered source or a report's rows (a review:
        # autotune tables, IPython's numbered lines), and not a traceback's frame and code, which differ in indent.
        indent = nxt.text[:len(nxt.text) - len(nxt.text.lstrip())]
        rest = nxt.text[len(indent):]
        if not indent or rest.startswith(_RECORD_STARTS) or _NEW_RECORD.match(rest) \
                or not _under_indented_head(lines, i, indent):
            return None
    return nxt


# An exception's head, as a post quotes it indented ("  ValueError: ...")
_QUOTED_HEAD = re.compile(r"[\w.]{1,100}(?:Error|Exception): \S")
# the next line's start that goes on with a sentence: a word in lower case, then a space
_SENTENCE_GOES_ON = re.compile(r"[a-z][a-z']{0,30} ")
# the last words of a line that introduce a quoted name on the next ("cannot import name 'X' from" / "'vllm.x'")
_INTRODUCES_QUOTE = frozenset(("from", "in", "of", "for", "at", "named", "module"))


def quoted_head(text: str) -> bool:
    """An exception's own line, at whatever indent a post or a commit message quotes it."""
    return _QUOTED_HEAD.match(text, len(text) - len(text.lstrip())) is not None


def _head_broken_by_hand(line: str, nxt: str) -> bool:
    """A person quoting an exception broke its line where they liked, at any length (commit messages, blind173):

    - after a few words, the next line going on with the sentence ("ValueError: To serve at least one request" /
      "with the model's max seq len (8192), ..."; b173-001), or with the quoted name its last word introduces
      ("ImportError: cannot import name 'SharedFusedMoE' from" / "'vllm.model_executor.layers.fused_moe'"; b177-006);
    - after a colon, the next line the one name it introduces ("  ImportError: vllm/_C.abi3.so: undefined symbol:" /
      "  _ZN3c1013MessageLoggerC1EPKciib"; b173-003);
    - an indented quote going on at a deeper indent ("  AttributeError: ... object has no attribute" /
      "    'init_cpu_threads_env'"; b173-004).

    Only under an exception's head whose message has not visibly ended (a full stop, a closing quote or bracket: a
    KeyError's key), at its indent or deeper, and never where the next line starts a record of its own (a frame, an
    exception, a level) or is a table's row (columns apart), so a traceback, a table or the program's next line is not
    joined to it (a review's cases). A person's own words in lower case right after an exception can still be joined;
    the line itself is read first, so no rule reads only the join.
    """
    if not line or line.endswith((".", ")", "'", '"', "]", "}", ">")) or not quoted_head(line):
        return False
    indent = line[:len(line) - len(line.lstrip())]
    if not nxt.startswith(indent):
        return False
    rest = nxt[len(indent):]
    deeper = rest[:1] in (" ", "\t")
    rest = rest.lstrip()
    if not rest or (deeper and not indent):  # under an unindented head, an indented line is code or a table's row
        return False
    if rest.startswith(("File ", *_RECORD_STARTS)) or _NEW_RECORD.match(rest) or "   " in rest:
        return False
    if line.endswith(":"):
        return " " not in rest and not rest.endswith(":")
    return deeper or _SENTENCE_GOES_ON.match(rest) is not None or (
        rest[:1] in ("'", '"') and line.rsplit(" ", 1)[-1] in _INTRODUCES_QUOTE)


# The most lines one wrapped message is read across (classify's runs, and the head of an indented quote).
WRAPPED_RUN_MAX = 6


def _under_indented_head(lines: list[LogLine], i: int, indent: str) -> bool:
    """Line i, or one of the few lines above it at the same indent, is an exception's head at that indent."""
    for k in range(i, max(-1, i - WRAPPED_RUN_MAX), -1):
        text = lines[k].text
        if not text.startswith(indent) or text[len(indent):len(indent) + 1].isspace():
            return False
        if _QUOTED_HEAD.match(text, len(indent)):
            return True
    return False


# the commonest starts of _NEW_RECORD, tested first without the regex
_RECORD_STARTS = ("INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL", "Traceback", " ", "[")


# --- tracebacks ------------------------------------------------------------------------

# vLLM's logging prefix in front of a traceback line: "ERROR 11-05 03:21:52 multiproc_worker_utils.py:233] "
# (V0) or "ERROR 01-19 23:55:19 [core.py:866] " (V1).
_LOG_PREFIX = re.compile(r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})? "
                         r"\[?[\w./-]{1,200}:\d{1,6}\] ?")
_FRAME = re.compile(r'^\s{0,8}File "?(?P<path>[^"]{1,1000})", line \d{1,7}, in (?P<func>\S{1,200})')
# IPython's (a notebook's cell output): 8.x "File /path/x.py:427, in LLMEngine._initialize_kv_caches(self)", 7.x
# "/path/x.py in _initialize_kv_caches(self)"; its functions are qualified names, their last part is Python's name
# (blind38: notebooks' saved outputs).
_IPYTHON_FRAME = re.compile(r"^File (?P<path>.{1,1000}?\.py):\d{1,7}, in (?P<func>[\w.<>]{1,200})"
                            r"|^(?P<path7>[~/]\S{0,1000}?\.py) in (?P<func7>[\w<>]{1,200})\(")
_EXCEPTION_HEAD = re.compile(r"^(?:[A-Za-z_][\w]{0,100}\.){0,8}[A-Za-z_]\w{0,100}(?:Error|Exception|Exit|Interrupt)"
                             r"(?::|$)|^(?:[a-z_][\w]{0,100}\.){0,8}[A-Z]\w{0,100}: ")
MAX_FRAMES = 400


def raised(text: str) -> bool:
    """An exception's own line (`NotImplementedError: ...`), whose message may quote a setting as advice."""
    return _EXCEPTION_HEAD.match(body(text)) is not None and ": " in text


def body(text: str) -> str:
    """A line without vLLM's logging prefix."""
    if text[:1] in "IWEDC":
        m = _LOG_PREFIX.match(text)
        if m:
            return text[m.end():]
    return text


# the carets Python 3.11+ draws under a frame's source line
CARETS = re.compile(r"\s*[\^~]{1,400}\s*$")


def frame_of(text: str) -> Frame | None:
    """A traceback frame's file and function on a log line (past vLLM's logging prefix)."""
    return _frame(body(text))


def _frame(b: str) -> Frame | None:
    """A traceback frame's file and function, as Python or IPython writes it."""
    m = _FRAME.match(b)
    if m is not None:
        return Frame(m.group("path"), m.group("func"))
    # the words each form spells, tested first: a long run of warnings with paths inside a traceback left open
    # costs a substring test a line, not the regex
    if b.startswith(("File ", "/", "~")) and (", in " in b or ".py in " in b) and (m := _IPYTHON_FRAME.match(b)):
        if m.group("path") is not None:
            return Frame(m.group("path"), m.group("func").rsplit(".", 1)[-1])
        return Frame(m.group("path7"), m.group("func7"))
    return None


def tracebacks(lines: list[LogLine]) -> list[Traceback]:
    """Every traceback, per process: interleaved processes each keep their own."""
    done: list[Traceback] = []
    open_: dict[str, tuple[int, list[Frame]]] = {}
    for i, line in enumerate(lines):
        text = line.text
        if not ("Traceback" in text or open_ or 'File "' in text):
            continue
        b = body(text)
        key = line.proc
        # V0's workers put it at the end of their message: "Exception in worker ...: Traceback (most recent ...";
        # IPython heads it "OutOfMemoryError       Traceback (most recent call last)", without the colon
        if b.startswith("Traceback (most recent call last)") or b.endswith(("Traceback (most recent call last):",
                                                                             "Traceback (most recent call last)")):
            if key in open_:
                first, frames = open_.pop(key)
                done.append(Traceback(key, first, tuple(frames), None))
            open_[key] = (i, [])
            continue
        frame = _frame(b)
        if key not in open_:
            if frame is None:
                continue
            open_[key] = (i, [])  # an excerpt that starts inside a traceback
        first, frames = open_[key]
        if frame is not None:
            if len(frames) < MAX_FRAMES:
                frames.append(frame)
            continue
        if b[:1].isspace() or b.startswith(("^", "~")):
            continue  # the frame's source line, or the carets under it
        if _EXCEPTION_HEAD.match(b):
            del open_[key]
            done.append(Traceback(key, first, tuple(frames), i))
    for key, (first, frames) in open_.items():
        done.append(Traceback(key, first, tuple(frames), None))
    return sorted(done, key=lambda t: t.first)
