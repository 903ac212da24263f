"""`vllm serve`'s command line read exactly as the installed vLLM's parser reads it (argv, --config, abbreviations)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_guard.options.table import OptionSpec, OptionTable, normalize_option_string
from vllm_guard.options.values import ValueProblem, convert_cli_values, parse_human_int, render

# --- command lines ----------------------------------------------------------

COMMAND_LINE = "command line"
PROFILE = "profile"
GUARD = "guard"  # a value the guard chose (max-model-len-cap, a ladder rung)


@dataclass(frozen=True)
class VllmArg:
    """One option as the guard holds it: which option, its value, and how it was written.

    ``tokens`` are the exact command-line tokens when the user typed them (drop-in
    mode passes them through untouched); ``None`` means render from ``value``.
    ``subkey`` is set for dotted JSON keys (``--limit-mm-per-prompt.image 2``).
    ``spec`` is None for an unknown option passed through under
    ``guard.allow-unknown-vllm-options``. ``origin`` says where the value came from:
    the command line, a profile, or a ``--config`` YAML file (whose options reach vLLM
    through ``--config FILE`` itself, so they have no tokens of their own to hand on).
    """

    key: str
    value: Any
    spec: OptionSpec | None = None
    tokens: tuple[str, ...] | None = None
    subkey: str | None = None
    origin: str = COMMAND_LINE

    @property
    def identity(self) -> str:
        base = self.spec.dest if self.spec is not None else self.key
        return f"{base}.{self.subkey}" if self.subkey else base

    @property
    def from_config_file(self) -> bool:
        return self.origin not in (COMMAND_LINE, PROFILE, GUARD)

    def argv(self) -> list[str]:
        if self.from_config_file:
            return []
        if self.tokens is not None:
            return list(self.tokens)
        assert self.spec is not None, "an unknown option always keeps its tokens"
        return render(self.spec, self.value)


class ArgvProblem(ValueError):
    """A command line vLLM would refuse. ``origin`` names a --config file when the problem is in it."""

    def __init__(self, message: str, *, option: str | None = None, suggestion: str | None = None,
                 origin: str = COMMAND_LINE) -> None:
        super().__init__(message)
        self.option = option
        self.suggestion = suggestion
        self.origin = origin


_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _looks_like_option(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token)


@dataclass(frozen=True)
class CommandLine:
    """A `vllm serve` command line as vLLM reads it."""

    model: str | None
    args: tuple[VllmArg, ...]
    config_file: str | None = None  # `--config FILE`: read by vLLM and by the guard
    model_origin: str = COMMAND_LINE
    notes: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        """What the guard hands vLLM after `serve`: the model first, ``--config FILE`` as given
        (vLLM reads the file again), then the command line's own tokens, untouched."""
        head = [self.model] if self.model is not None and self.model_origin == COMMAND_LINE else []
        config = ["--config", self.config_file] if self.config_file is not None else []
        return head + config + [t for arg in self.args for t in arg.argv()]


ConfigReader = Callable[[str], list[tuple[str, Any]]]
_MODEL_OPTION = re.compile(r"^--model(=.+|$)")


def parse_command_line(
    tokens: Sequence[str],
    table: OptionTable,
    *,
    read_config: ConfigReader | None = None,
    allow_unknown: bool = False,
) -> CommandLine:
    """Parse what follows `vllm serve` exactly as vLLM's FlexibleArgumentParser does.

    The model may come first, after some options, as ``--model X`` (moved to the front,
    as vLLM does) or from the ``--config`` file. ``--config FILE`` (two tokens) is read
    with ``read_config`` and its options are inserted right after the model, so the
    command line wins; ``--config=FILE`` is stored but not read, by vLLM too.

    Raises:
        ArgvProblem: for what vLLM would refuse (with a suggestion where one is close).
    """
    tokens = list(tokens)
    notes: list[str] = []
    model_first = bool(tokens) and not tokens[0].startswith("-")
    moved = next((i for i, t in enumerate(tokens) if _MODEL_OPTION.match(t)), None)
    if moved is not None:
        if tokens[moved] == "--model":
            if moved + 1 >= len(tokens):
                raise ArgvProblem("--model expects a value", option="--model")
            tokens = [tokens[moved + 1], *tokens[:moved], *tokens[moved + 2:]]
        else:
            tokens = [tokens[moved].removeprefix("--model="), *tokens[:moved], *tokens[moved + 1:]]
        model_first = True
        notes.append("--model is deprecated in vLLM: the model goes first (`vllm serve MODEL ...`); "
                     "vLLM moves it there, and so does the guard")
    if (tokens and tokens[0].startswith("-") and "--config" not in tokens
            and any(re.match(r"^--served[-_]model[-_]name(=.+|$)", t) for t in tokens)):
        raise ArgvProblem("with --served-model-name, vLLM wants the model as the first argument",
                          option="--served-model-name")
    origins = [COMMAND_LINE] * len(tokens)
    config_file = None
    if "--config" in tokens:
        if tokens.count("--config") > 1:
            raise ArgvProblem("more than one --config file given; vLLM reads one", option="--config")
        at = tokens.index("--config")
        if at + 1 >= len(tokens):
            raise ArgvProblem("--config expects a YAML file", option="--config")
        config_file = tokens[at + 1]
        if read_config is None:
            raise ArgvProblem("--config is not read here", option="--config")
        config_tokens = config_to_tokens(read_config(config_file), table)
        rest = tokens[:at] + tokens[at + 2:]
        model_in_config = "--model" in config_tokens
        if not model_first and not model_in_config:
            raise ArgvProblem("no model: give it first (`vllm serve MODEL --config FILE`) or as `model:` in "
                              f"{config_file}", option="--config")
        head = 1 if model_first else 0
        tokens = rest[:head] + config_tokens + rest[head:]
        origins = [COMMAND_LINE] * head + [config_file] * len(config_tokens) + [COMMAND_LINE] * (len(rest) - head)
    return _parse_tokens(tokens, origins, table, allow_unknown=allow_unknown, config_file=config_file,
                         notes=notes)


def config_to_tokens(items: Sequence[tuple[str, Any]], table: OptionTable) -> list[str]:
    """A YAML mapping as vLLM's ``load_config_file`` turns it into arguments."""
    out: list[str] = []
    for key, value in items:
        if isinstance(value, bool):
            if value:
                out.append("--" + key)
            elif f"--no-{key}" in table.by_string:
                out.append(f"--no-{key}")
        elif isinstance(value, list):
            if value:
                out += ["--" + key, *(str(v) for v in value)]
        elif isinstance(value, dict):
            out += ["--" + key, json.dumps(value)]
        else:
            out += ["--" + key, str(value)]
    return out


def parse_argv(tokens: Sequence[str], table: OptionTable, *, allow_unknown: bool = False) -> list[VllmArg]:
    """Parse `vllm serve` options (no model among them) the way vLLM's parser reads them.

    Raises:
        ArgvProblem: for an unknown option (with a suggestion), a missing value,
            or a value vLLM would reject.
    """
    parsed = _parse_tokens(list(tokens), [COMMAND_LINE] * len(tokens), table, allow_unknown=allow_unknown,
                           config_file=None, notes=[], positional_allowed=False)
    return list(parsed.args)


def _parse_tokens(tokens: list[str], origins: list[str], table: OptionTable, *, allow_unknown: bool,
                  config_file: str | None, notes: list[str], positional_allowed: bool = True) -> CommandLine:
    args: list[VllmArg] = []
    model: str | None = None
    model_origin = COMMAND_LINE
    it = _Tokens(tokens, origins)
    for token in it:
        origin = it.origin
        if not _looks_like_option(token):
            if model is None and positional_allowed:
                model = token
                continue
            flag_before = _flag_before(it, table)
            if flag_before is not None and token.lower() in _BOOL_WORDS:
                # `--enforce-eager false` would be read by vLLM as a second model, not as false.
                raise ArgvProblem(f"{flag_before} takes no value, got {token!r} after it: write {flag_before} "
                                  f"for true, --no-{flag_before.lstrip('-')} for false", option=flag_before,
                                  origin=origin)
            raise ArgvProblem(
                f"unexpected argument {token!r}: `vllm serve` takes one model"
                + (f" ({model!r} is the model)" if model else ", given before the options"),
                option=token, origin=origin,
            )
        written, eq, inline = token.partition("=")
        if token.startswith("-O") and token != "-O":
            # -O3, -O=3, -Odecode mean --optimization-level <n> (vLLM's pre-processing).
            level = token[3:] if token[2:3] == "=" else token[2:]
            spec = table.by_dest["optimization_level"]
            args.append(VllmArg(spec.name, _value(spec, [level], written, origin), spec, (token,), origin=origin))
            continue
        if token == "-O" and it.peek() in ("0", "1", "2", "3"):
            level = it.take()
            spec = table.by_dest["optimization_level"]
            args.append(VllmArg(spec.name, _value(spec, [level], written, origin), spec, (token, level),
                                origin=origin))
            continue
        normalized = normalize_option_string(written)
        base, dot, subkey = normalized.partition(".")
        found = table.resolve(base)
        if found is None:
            if not allow_unknown:
                suggestion = table.suggest(base.lstrip("-"))
                raise ArgvProblem(f"unknown vLLM option {written!r} (vLLM {table.vllm_version})", option=written,
                                  suggestion=suggestion, origin=origin)
            values = [inline] if eq else it.take_values()
            near = table.near_miss(base.lstrip("-")) or table.suggest(base.lstrip("-"))
            if near:
                notes.append(f"{written} is not a vLLM {table.vllm_version} option but close to --{near}: "
                             "passed on unchecked (a typo?)")
            args.append(VllmArg(base.lstrip("-"), values, None, (token, *([] if eq else values)), origin=origin))
            continue
        spec, full = found
        if spec.dest == "config" and origin == COMMAND_LINE:
            value = inline if eq else it.take_required(written)
            notes.append(f"{token if eq else written + ' ' + value}: vLLM stores this path but reads no YAML from "
                         "it; write `--config FILE` (two words) for the file to count")
            args.append(VllmArg(spec.name, value, spec, (token,) if eq else (token, value), origin=origin))
            continue
        if dot:
            if spec.kind != "json":
                raise ArgvProblem(f"{base} does not take dotted keys (it is not a JSON option)", option=written,
                                  origin=origin)
            value = inline if eq else it.take_required(written)
            args.append(VllmArg(spec.name, _dotted_value(subkey, value), spec, (token,) if eq else (token, value),
                                subkey=subkey.removesuffix("+"), origin=origin))
            continue
        if not spec.takes_value:
            if eq:
                raise ArgvProblem(f"{written} takes no value", option=written, origin=origin)
            positive = spec.kind == "flag" or full in spec.positive
            args.append(VllmArg(spec.name, positive, spec, (token,), origin=origin))
            continue
        raw: tuple[str, ...]
        if eq:
            values = [inline]
            raw = (token,)
        elif spec.optional_value:
            values = [it.take()] if it.peek_value() else []
            raw = (token, *values)
            if not values:
                args.append(VllmArg(spec.name, True, spec, raw, origin=origin))
                continue
        elif spec.multiple:
            values = it.take_values()
            if not values:
                raise ArgvProblem(f"{written} expects at least one value", option=written, origin=origin)
            raw = (token, *values)
        else:
            values = [it.take_required(written)]
            raw = (token, *values)
        args.append(VllmArg(spec.name, _value(spec, values, written, origin), spec, raw, origin=origin))
    if model is None and positional_allowed:
        model_arg = next((a for a in reversed(args) if a.spec is not None and a.spec.dest == "model"), None)
        if model_arg is not None:
            model, model_origin = model_arg.value, model_arg.origin
    args = [a for a in args if a.spec is None or a.spec.dest != "model"]
    return CommandLine(model, tuple(args), config_file, model_origin, tuple(notes))


def _value(spec: OptionSpec, values: list[str], written: str, origin: str) -> Any:
    try:
        return convert_cli_values(spec, values)
    except ValueProblem as e:
        raise ArgvProblem(f"{written}: {e}", option=written, origin=origin) from e


def _dotted_value(subkey: str, text: str) -> Any:
    """A dotted key's value as vLLM reads it: JSON, else a human-readable int, else the string;
    ``key+`` takes a comma-separated list."""
    if subkey.endswith("+"):
        return text.split(",")
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # nested past Python's limit: no JSON either
        try:
            return parse_human_int(text)
        except ValueProblem:
            return text


def namespace(command: CommandLine) -> dict[str, Any]:
    """The options the command line sets, as vLLM's namespace holds them (dest -> value).

    Dotted JSON keys are merged into one object and applied after all other options,
    as vLLM's pre-processing appends them at the end. The model is under "model".
    """
    ns: dict[str, Any] = {}
    dotted: dict[str, dict[str, Any]] = {}
    for arg in command.args:
        dest = arg.spec.dest if arg.spec is not None else arg.key
        if arg.subkey:
            *path, last = arg.subkey.split(".")
            node = dotted.setdefault(dest, {})
            for part in path:
                node = node.setdefault(part, {})
                if not isinstance(node, dict):  # "--x.a v --x.a.b w": a key under a value that is not an object
                    raise ArgvProblem(f"--{arg.key}.{arg.subkey}: '{part}' was given a value before, not keys",
                                      option=f"--{arg.key}")
            if isinstance(arg.value, list) and isinstance(node.get(last), list):
                node[last] = node[last] + arg.value
            else:
                node[last] = arg.value
        elif arg.spec is not None and arg.spec.appends:
            ns[dest] = [*ns.get(dest, []), *arg.value]
        else:
            ns[dest] = arg.value
    ns.update(dotted)
    if command.model is not None:
        ns["model"] = command.model
    return ns


_BOOL_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})


def _flag_before(it: _Tokens, table: OptionTable) -> str | None:
    """The on/off option just before the current token, as written (``--enforce-eager``), if it is one."""
    before = it.previous()
    if before is None or "=" in before or not _looks_like_option(before):
        return None
    found = table.resolve(before)
    if found is None or found[0].kind not in ("bool", "flag"):
        return None
    return "--" + found[1].removeprefix("--").removeprefix("no-")


class _Tokens:
    def __init__(self, tokens: Iterable[str], origins: Sequence[str] | None = None) -> None:
        self._tokens = list(tokens)
        self._origins = list(origins) if origins is not None else [COMMAND_LINE] * len(self._tokens)
        self._i = 0

    @property
    def origin(self) -> str:
        return self._origins[max(self._i - 1, 0)] if self._origins else COMMAND_LINE

    def __iter__(self) -> Iterator[str]:
        while self._i < len(self._tokens):
            token = self._tokens[self._i]
            self._i += 1
            yield token

    def peek(self) -> str | None:
        return self._tokens[self._i] if self._i < len(self._tokens) else None

    def previous(self) -> str | None:
        """The token before the one last taken."""
        return self._tokens[self._i - 2] if self._i >= 2 else None

    def peek_value(self) -> bool:
        return self._i < len(self._tokens) and not _looks_like_option(self._tokens[self._i])

    def take(self) -> str:
        token = self._tokens[self._i]
        self._i += 1
        return token

    def take_required(self, option: str) -> str:
        if not self.peek_value():
            raise ArgvProblem(f"{option} expects a value", option=option, origin=self.origin)
        return self.take()

    def take_values(self) -> list[str]:
        values = []
        while self.peek_value():
            values.append(self.take())
        return values
