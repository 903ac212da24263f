"""`ps`: every vLLM on this host, from the guards' registry, the process table and NVML."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from vllm_guard.exit_codes import ExitCode


def ps(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    """Every vLLM on this host: the guards' registry, the process table and NVML's process lists."""
    from vllm_guard import probes
    from vllm_guard.launch import lock
    from vllm_guard.state import instances, registry

    machine_file = args.machine or env.get("VLLMGUARD_MACHINE") or None
    notes: list[str] = []
    if machine_file:
        machine = probes.load_machine(Path(machine_file))
        found = instances.from_snapshot(machine)
        source = f"the snapshot {machine_file}, taken {machine.taken_at}: its GPUs' processes only"
    else:
        from vllm_guard.probes.gpu import probe_gpus
        from vllm_guard.probes.host import process_table

        gpus = probe_gpus().gpus  # only the GPUs and their processes: ps needs no host, disk or cgroup facts
        directory = Path(args.lock_dir) if args.lock_dir else lock.lock_dir(None, env)
        procs = process_table()
        entries, notes = registry.read_entries(directory, live_pids={p.pid for p in procs})
        result = instances.find_instances(procs, entries, instances.gpu_processes_of(gpus), looked_in=str(directory))
        for guard_pid in result.stale:
            registry.remove_stale(directory, guard_pid)  # a dead guard's entry, its vLLM gone too
        found = result.instances
        source = f"this host; guards registered in {directory}"
        if directory != lock.SHARED_LOCK_DIR and not env.get("VLLMGUARD_LOCK_DIR") and not args.lock_dir:
            notes.append(f"{lock.SHARED_LOCK_DIR} does not exist: only this user's guards register where `ps` "
                         "looks (docs/security.md)")
        if not gpus:
            notes.append("no GPU visible here: GPU memory per process is not known")
    if args.json:  # the JSON document needs no renderer: rich is imported for people only
        from vllm_guard.report.docs import ps_json

        stdout.write(ps_json(found, source, notes) + "\n")
    else:
        from vllm_guard.report.tables import print_ps

        print_ps(found, source, notes, stdout)
    return ExitCode.OK
