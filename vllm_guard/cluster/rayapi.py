"""The only module that imports ``ray`` (an optional extra: ``pip install 'vllm-guard[ray]'``).

Imported lazily, so the guard works without Ray installed; a profile that needs Ray then fails
with the install command (exit 4). Every call the guard makes to Ray is here, with a timeout:
a node that does not answer is a finding, never a hang.

Relies on Ray 2.x public APIs: ``ray.init(address=...)``, ``ray.nodes()``,
``ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id, soft=False)`` (run on that
node or fail, never elsewhere), ``ray.wait(..., timeout=...)`` and ``ray.cancel(..., force=True)``,
and non-detached actors, which Ray kills when the job (the driver that created them) ends, also
when the driver is killed with SIGKILL (Ray docs, "Actor lifetimes": "the actor's lifetime is tied
to its owner" unless ``lifetime="detached"``).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from vllm_guard.cluster import bounded
from vllm_guard.cluster.trust import foreign_head
from vllm_guard.errors import GuardError
from vllm_guard.exit_codes import ExitCode

CONNECT_TIMEOUT_S = 3.0  # a TCP connect to the cluster's GCS port before ray.init
INIT_TIMEOUT_S = 10.0  # ray.init as a whole (cluster/bounded.py): `check` against a mute port ends within 15 s
CALL_TIMEOUT_S = 10.0  # one GCS query (the node list, free resources, starting actors, shutdown)
INSTALL_HINT = "pip install 'vllm-guard[ray]' (the same Ray version as on the cluster's nodes)"
NAMESPACE = "vllm-guard"
T = TypeVar("T")


class RayMissing(GuardError):
    """The profile runs on Ray, and Ray is not installed where the guard runs."""

    exit_code = ExitCode.PREFLIGHT_FAILED


class RayUnreachable(GuardError):
    """No Ray cluster answered at the address."""

    exit_code = ExitCode.PREFLIGHT_FAILED


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise RayMissing(f"this profile runs on a Ray cluster, and Ray is not installed here ({e})",
                         hint=INSTALL_HINT) from None
    return ray


def refuse_local(address: str, origin: str) -> None:
    """``local`` (and an empty address) make ray.init start a cluster of its own, listening on every interface.

    Raises:
        RayUnreachable: always for those; the guard never starts a cluster (exit 4).
    """
    if address.strip().lower() in ("local", ""):
        raise RayUnreachable(f"{origin} says {address!r}: that would start a new Ray cluster, listening on every "
                             "interface; the guard only joins a cluster that is already running",
                             hint="start the cluster yourself (`ray start --head`, docs/ray.md) and give its address "
                             "(HEAD:6379) in guard.ray-address or RAY_ADDRESS")


@dataclass(frozen=True)
class NodeEntry:
    """One alive node as Ray's GCS lists it (``ray.nodes()``)."""

    node_id: str
    ip: str | None
    hostname: str | None
    gpus: float | None  # the GPUs Ray schedules there ("GPU" resource); None when it declares none
    is_driver_node: bool  # where the guard (and so vLLM's driver) runs
    gpus_free: float | None = None  # of those, not held by another job's placement group or actors; None: unknown


@dataclass(frozen=True)
class Answer:
    """What one node's task returned, or why it did not."""

    node_id: str
    value: Any = None
    error: str | None = None
    seconds: float | None = None


class Connection:
    """The guard connected to a cluster as a Ray driver (its own job). ``close`` disconnects;
    the job's actors (the lock holders) die with it, and with the guard's process."""

    def __init__(self, address: str, *, local_cluster: str | None = None, local_ignored: str | None = None) -> None:
        self.address = address
        self.local_cluster = local_cluster  # what "auto" means: local_cluster_address() of the guard's environment
        self.local_ignored = local_ignored  # why the file that says it was not trusted (LocalCluster.ignored)
        self.ray = _ray()

    def open(self) -> Connection:
        """Connect to an existing cluster; never start one (Ray is the user's, not the guard's).

        Raises:
            RayUnreachable: nothing answers at the address.
        """
        ray = self.ray
        hint = ("start one (`ray start --head` on the head, `ray start --address=HEAD:6379` on the others), or set "
                "guard.ray-address / RAY_ADDRESS; docs/ray.md")
        if self.address == "auto":
            # "auto" is the address `ray start --head` left on this machine; read it here so that the quick
            # TCP look below covers it too (a leftover file of a stopped cluster made ray.init retry for minutes).
            found = self.local_cluster
            if found is None:
                why = f" ({self.local_ignored})" if self.local_ignored else ""
                raise RayUnreachable("no Ray cluster: none given (guard.ray-address, RAY_ADDRESS) and none "
                                     f"started on this machine{why}", hint=hint)
            self.address = found
            where = f"at {found}, the cluster last started on this machine"
        else:
            where = f"at {self.address}"
        refuse_local(self.address, f"the Ray address {where}")
        problem = _tcp_problem(self.address, CONNECT_TIMEOUT_S)
        if problem is not None:  # ray.init would retry an unreachable GCS for minutes (Ray 2.x gcs_client)
            raise RayUnreachable(f"no Ray cluster answered {where}: {problem}", hint=hint)
        foreign = foreign_head(self.address)
        if foreign is not None:
            raise RayUnreachable(f"not joining the Ray cluster {where}: {foreign}; root never joins a cluster another "
                                 "user controls (Ray's protocol carries pickles: its head can run code in the guard)",
                                 hint="start the cluster as root, or run the guard as the cluster's user "
                                 "(docs/security.md)")
        try:
            # log_to_driver=False: the tasks' output is not the guard's; configure_logging=False keeps Ray's
            # own INFO lines ("Connecting to existing Ray cluster") off the guard's report. In a thread of its own
            # (bounded.py), which also keeps Ray from taking SIGTERM over ("SIGTERM handler is not set because
            # current thread is not the main thread"): stop signals stay the guard's.
            bounded.call(lambda: ray.init(address=self.address, namespace=NAMESPACE, log_to_driver=False,
                                          configure_logging=False, ignore_reinit_error=True),
                         INIT_TIMEOUT_S, f"ray.init({self.address})")
        except bounded.TimedOut:
            raise RayUnreachable(f"no Ray cluster answered {where}: something accepts connections there, but "
                                 f"ray.init had no answer within {INIT_TIMEOUT_S:g} s (not a Ray head, or a hung one)",
                                 hint=hint) from None
        except (ConnectionError, RuntimeError, ValueError) as e:
            if "Version mismatch" in str(e):  # ray/_private/utils.py check_version_info, raised by ray.init
                raise RayUnreachable(f"the Ray here ({ray.__version__}) cannot join the cluster {where}: "
                                     f"{' '.join(str(e).split())[:400]}",
                                     hint="install the cluster's Ray and Python versions where the guard runs "
                                     "(the head node's environment)") from None
            raise RayUnreachable(f"no Ray cluster answered {where}: {str(e).splitlines()[0][:300]}",
                                 hint=hint) from None
        return self

    def close(self) -> None:
        """Disconnect, within CALL_TIMEOUT_S; not at all once a Ray call was abandoned (shutdown would wait on it)."""
        if bounded.ABANDONED:
            return
        with contextlib.suppress(bounded.TimedOut):  # then the process leaves with os._exit (cli/main.py)
            bounded.call(lambda: self.ray.shutdown() if self.ray.is_initialized() else None, CALL_TIMEOUT_S,
                         "ray.shutdown")

    def _bounded(self, fn: Callable[[], T], what: str, timeout_s: float = CALL_TIMEOUT_S) -> T:
        """A Ray call within its deadline; a cluster that stops answering is RayUnreachable, never a hang."""
        try:
            return bounded.call(fn, timeout_s, what)
        except bounded.TimedOut:
            raise RayUnreachable(f"the Ray cluster at {self.address} stopped answering: {what} had no answer "
                                 f"within {timeout_s:g} s", hint="is its head still up? `ray status` on it") from None

    def __enter__(self) -> Connection:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ray_version(self) -> str:
        return str(self.ray.__version__)

    def nodes(self) -> list[NodeEntry]:
        """The alive nodes, as the GCS lists them now."""
        here = self._bounded(lambda: self.ray.get_runtime_context().get_node_id(), "the driver's node id")
        free = self._bounded(self._free_per_node, "the free resources per node")
        out = []
        for n in self._bounded(self.ray.nodes, "ray.nodes()"):
            if not n.get("Alive"):
                continue
            gpus = n.get("Resources", {}).get("GPU")
            available = (free or {}).get(n["NodeID"]) or {}
            out.append(NodeEntry(node_id=n["NodeID"], ip=n.get("NodeManagerAddress"),
                                 hostname=n.get("NodeManagerHostname"), gpus=float(gpus) if gpus else None,
                                 is_driver_node=n["NodeID"] == here,
                                 gpus_free=None if free is None else float(available.get("GPU", 0.0))))
        return out

    def _free_per_node(self) -> dict[str, dict[str, float]] | None:
        """Each node's unreserved resources. A Ray DeveloperAPI (ray._private.state), the one vLLM's own
        ray_utils.py reads for the same question; None when this Ray lacks it."""
        try:
            from ray._private.state import available_resources_per_node

            return dict(available_resources_per_node())
        except Exception:  # an older or newer Ray without it: unknown, not an error
            return None

    def _pinned(self, node_id: str) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        # soft=False: on this node or not at all (never quietly elsewhere); the caller's timeout covers a
        # node that is listed alive and does not run it.
        return NodeAffinitySchedulingStrategy(node_id, soft=False)

    def run_on_nodes(self, fn: Callable[..., Any], args: Sequence[Any], node_ids: Sequence[str],
                     timeout_s: float) -> list[Answer]:
        """``_run_on_nodes`` within its own timeout plus CALL_TIMEOUT_S for submitting and cancelling."""
        return self._bounded(lambda: self._run_on_nodes(fn, args, node_ids, timeout_s), "the node probes",
                             timeout_s + CALL_TIMEOUT_S)

    def _run_on_nodes(self, fn: Callable[..., Any], args: Sequence[Any], node_ids: Sequence[str],
                      timeout_s: float) -> list[Answer]:
        """Run ``fn(*args)`` once on each node as a Ray task pinned there; wait at most ``timeout_s`` in all.

        A node whose task has not answered by then is an ``Answer`` with an error (its task is cancelled).
        num_cpus=0: the probe must run even where vLLM's workers hold every CPU slot.
        """
        ray = self.ray
        task = ray.remote(num_cpus=0, max_retries=0)(fn)
        started = time.monotonic()
        refs = {task.options(scheduling_strategy=self._pinned(nid)).remote(*args): nid for nid in node_ids}
        pending = list(refs)
        answers: dict[str, Answer] = {}
        while pending:
            left = timeout_s - (time.monotonic() - started)
            if left <= 0:
                break
            done, pending = ray.wait(pending, num_returns=1, timeout=left)
            for ref in done:
                nid = refs[ref]
                took = round(time.monotonic() - started, 3)
                try:
                    answers[nid] = Answer(nid, ray.get(ref), None, took)
                except Exception as e:  # a task that raised on that node: its error is the fact
                    answers[nid] = Answer(nid, None, f"the probe failed there: {_first_line(e)}", took)
        for ref in pending:
            nid = refs[ref]
            answers[nid] = Answer(nid, None, f"did not answer within {timeout_s:g} s")
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        return [answers[nid] for nid in node_ids]

    def start_actors(self, cls: type, per_node: Mapping[str, tuple[Any, ...]]) -> dict[str, Any]:
        """One actor of ``cls`` per node, pinned there, owned by this job (never detached): when the guard's
        driver ends, also by SIGKILL, Ray kills them, and the kernel releases what they held."""
        actor = self.ray.remote(num_cpus=0, max_restarts=0)(cls)
        return self._bounded(lambda: {nid: actor.options(scheduling_strategy=self._pinned(nid)).remote(*args)
                                      for nid, args in per_node.items()}, "starting the lock actors")

    def call_all(self, handles: Mapping[str, Any], method: str, timeout_s: float, *args: Any) -> list[Answer]:
        """Call ``method`` on every actor; those that have not answered within ``timeout_s`` are errors."""
        return self._bounded(lambda: self._call_all(handles, method, timeout_s, *args), f"the lock actors' {method}",
                             timeout_s + CALL_TIMEOUT_S)

    def _call_all(self, handles: Mapping[str, Any], method: str, timeout_s: float, *args: Any) -> list[Answer]:
        ray = self.ray
        started = time.monotonic()
        refs = {getattr(h, method).remote(*args): nid for nid, h in handles.items()}
        done, pending = ray.wait(list(refs), num_returns=len(refs), timeout=timeout_s)
        out = []
        for ref in done:
            try:
                out.append(Answer(refs[ref], ray.get(ref), None, round(time.monotonic() - started, 3)))
            except Exception as e:
                out.append(Answer(refs[ref], None, _first_line(e)))
        out += [Answer(refs[ref], None, f"did not answer within {timeout_s:g} s") for ref in pending]
        return out

    def kill(self, handles: Mapping[str, Any]) -> None:
        def kill_all() -> None:
            for h in handles.values():
                with contextlib.suppress(Exception):
                    self.ray.kill(h, no_restart=True)

        # Not answered in time: the actors die with this driver anyway (they are not detached).
        with contextlib.suppress(RayUnreachable):
            self._bounded(kill_all, "killing the lock actors")


@contextlib.contextmanager
def ray_output_to_stderr() -> Iterator[None]:
    """While the guard talks to Ray, whatever is written to file descriptor 1 goes to stderr.

    Ray's driver prints from its own threads: its error listener writes what the GCS publishes to sys.stdout
    (ray/_private/worker.py, listen_error_messages: "is_err": False), so a node that died during the probes
    ("(raylet) Raylet is terminated ...") landed on stdout before `check --json`'s document. The guard writes
    nothing to stdout meanwhile, and its report comes after the connection is closed. Restored at the end: from
    then on stdout is the guard's. (Under serve the connection stays open for the launch locks, and what Ray
    prints then goes to stdout, among vLLM's relayed log.)
    """
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all: nothing to protect
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _tcp_problem(address: str, timeout_s: float) -> str | None:
    """Why nothing listens at a host:port address, found in at most ``timeout_s``; None when something does,
    or when the address is not host:port ("auto", ray://..., which Ray resolves itself)."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit() or not host:
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return None
    except OSError as e:
        return f"cannot connect to {address} ({e.strerror or type(e).__name__})"


def _first_line(e: BaseException) -> str:
    full = str(e)
    if "failed to import on the worker" in full:  # Ray 2.x: the function's module is missing in that node's Python
        missing = re.search(r"No module named '([^']{1,200})'", full)
        return (f"the guard's probe could not be imported there ({missing.group(0) if missing else 'an import failed'}"
                "): is vllm-guard installed in the Python that runs `ray start` on that node?")
    text = full.strip().splitlines()
    # Ray wraps a task's exception in RayTaskError, whose text starts with the wrapper's name; the cause is last.
    cause = getattr(e, "cause", None)
    if cause is not None and str(cause).strip():
        return f"{type(cause).__name__}: {str(cause).strip().splitlines()[0][:300]}"
    return f"{type(e).__name__}: {text[0][:300] if text else ''}"
