"""Beyond one machine: the preflight and the launch locks across a Ray cluster.

The flow is the single-machine one, per node: ``target`` decides that a profile runs on Ray,
``rayapi`` (the only importer of ``ray``) runs ``nodeprobe`` on every node as a pinned Ray task,
``facts`` holds what came back (and is the ``snapshot --cluster`` file), ``placement`` and
``checks`` are pure, ``preflight`` puts them together, and ``locks`` holds the per-GPU launch
locks on every node in a small Ray actor per node. Ray is the cluster manager; the guard is not.
"""
