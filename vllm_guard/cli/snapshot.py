"""`snapshot`: this machine, or every node of a Ray cluster, recorded for planning elsewhere (--machine)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TextIO

from vllm_guard.cli.output import refuse_existing, write_output
from vllm_guard.probes.vllm_build import pick_table


def snapshot(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    from vllm_guard import probes

    refuse_existing(args.output, args.force)
    if args.cluster:
        return _snapshot_cluster(args, env, stdout)
    machine = probes.probe_machine(environ=env)
    doc = machine.to_dict()
    # The vLLM installed here, so that planning elsewhere (--machine) uses its option table.
    doc["vllm_version"] = pick_table(env.get("VLLMGUARD_VLLM_BIN") or "vllm", env, None).vllm_version
    def show() -> None:  # rich only for a person: --json and -o import no renderer
        from vllm_guard.report.tables import print_machine

        print_machine(machine, stdout)

    return write_output(args, doc, stdout, show, "snapshot")


def _snapshot_cluster(args: argparse.Namespace, env: Mapping[str, str], stdout: TextIO) -> int:
    from vllm_guard.cluster import rayapi
    from vllm_guard.cluster.gather import gather_cluster
    from vllm_guard.cluster.trust import local_cluster_address
    from vllm_guard.report.cluster import print_cluster

    address = args.address or env.get("RAY_ADDRESS") or "auto"
    if address == "auto" and local_cluster_address(env) is None:
        raise rayapi.RayUnreachable("no Ray cluster address: none given, RAY_ADDRESS is not set, and no cluster "
                                    "was started on this machine", hint="vllm-guard snapshot --cluster --address "
                                    "HEAD:6379, or run it on the head node (docs/ray.md)")
    with rayapi.ray_output_to_stderr(), rayapi.Connection(address, local_cluster=local_cluster_address(env)) \
            as conn:
        cluster = gather_cluster(conn, model=args.model or "", revision=None, env_names=(),
                                 timeout_s=max(args.timeout, 0.1))
    doc = cluster.to_dict()
    head = cluster.head
    # The head's vLLM picks the option table when planning against this file elsewhere (--machine).
    doc["vllm_version"] = head.versions.get("vllm") if head is not None else None
    return write_output(args, doc, stdout, lambda: print_cluster(cluster, stdout), "cluster snapshot")
