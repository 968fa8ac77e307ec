"""Loop bodies named by module path (``--loop-body-hierarchy encoder,encoder.layer.0``).

The body ``encoder.layer.0`` names one instance; its instances are the module paths that differ
only in that last number (``encoder.layer.<i>``, inside the group ``encoder``). A node belongs to
instance i when its ``pkg.torch.onnx.name_scopes`` (``Node.scopes``, as torch.onnx.export(...,
dynamo=True) writes them) contain ``encoder.layer.<i>``; a node without name scopes (none in the
file, or a pass rebuilt it) when its name does (``/encoder/layer.0/attention/MatMul`` or
``encoder.layer.0.fc``: the names of the TorchScript exporter and of hand-made graphs). Nodes a
pass created under other names join the instance all their neighbours belong to. All instances (at least 2) form one region,
which ``Region.mismatch`` must accept.
"""

from __future__ import annotations

import re

from Deeploy.errors import DeeployError
from Deeploy.ir.graph import Graph
from Deeploy.ir.region import Region
from Deeploy.passes.region_body import body_region, dfs_order

__all__ = ["parse_hierarchy", "hierarchy_region"]


def parse_hierarchy(text: str) -> tuple[str, ...]:
    """``"encoder,encoder.layer.0"`` -> ``("encoder", "encoder.layer.0")`` (group, body); the
    group may be left out."""
    parts = tuple(p.strip() for p in text.split(",") if p.strip())
    if not 1 <= len(parts) <= 2:
        raise DeeployError(f"--loop-body-hierarchy '{text}': give GROUP,BODY (e.g. encoder,encoder.layer.0) or BODY")
    return parts


def _pattern(spec: tuple[str, ...]) -> tuple[str, re.Pattern]:
    body, group = spec[-1], spec[0] if len(spec) == 2 else None
    flag = f"--loop-body-hierarchy {','.join(spec)}"
    head = re.fullmatch(r"(.*?)(\d+)", body)
    if head is None:
        raise DeeployError(f"{flag}: the body '{body}' must end in its instance number (e.g. {body}.0)")
    if group is not None and not body.startswith(group + "."):
        raise DeeployError(f"{flag}: the body '{body}' is not inside the group '{group}' (it must start with '{group}.')")
    return flag, re.compile(re.escape(head.group(1)) + r"(\d+)")


def _instance_of(graph: Graph, pattern: re.Pattern) -> tuple[dict[str, int], str]:
    """Node name -> instance number, and where it was read from."""
    found = {}
    for n in graph.nodes:
        for scope in n.scopes:
            m = pattern.fullmatch(scope)
            if m:
                found[n.name] = int(m.group(1))
                break
        if not n.scopes:   # no metadata (or a node a pass rewrote): its name
            path = n.name.replace("/", ".").lstrip(".")
            m = pattern.match(path)
            if m and path[m.end():m.end() + 1] in ("", ".", "_"):
                found[n.name] = int(m.group(1))
    scoped = any(n.scopes for n in graph.nodes)
    return found, "name scopes (pkg.torch.onnx.name_scopes)" if scoped else "node names"


def _adopt(graph: Graph, found: dict[str, int], claimed: set[str]) -> None:
    """Unscoped nodes (made by a pass) between nodes of one instance (producers and consumers,
    at least one of each, all in it) join it."""
    producers, consumers = graph.producers(), graph.consumers()
    changed = True
    while changed:
        changed = False
        for n in graph.nodes:
            if n.name in found or n.name in claimed or n.scopes:
                continue
            before = [producers[i].name for i in n.inputs if i in producers]
            after = [c.name for o in n.outputs for c in consumers.get(o, [])]
            owners = {found.get(m) for m in before + after}
            if before and after and len(owners) == 1 and None not in owners:
                found[n.name] = owners.pop()
                changed = True


def hierarchy_region(graph: Graph, spec: tuple[str, ...], claimed: set[str] = frozenset()) -> Region:
    """The region of every instance of the body ``spec`` names (see the module doc); a
    ``DeeployError`` naming the flag when it does not repeat or its instances differ."""
    flag, pattern = _pattern(spec)
    found, source = _instance_of(graph, pattern)
    found = {k: v for k, v in found.items() if k not in claimed}
    if not found:
        raise DeeployError(f"{flag}: no node belongs to '{spec[-1]}' (looked for '{pattern.pattern}' in the "
                           f"{source}); check the module path, e.g. with Netron")
    _adopt(graph, found, set(claimed))
    numbers = sorted(set(found.values()))
    if len(numbers) < 2:
        raise DeeployError(f"{flag}: '{spec[-1]}' does not repeat: only instance {numbers[0]} found in the {source}")
    name = re.sub(r"\W+", "_", spec[0]).strip("_") or "loop"
    reasons = []
    for order in (dfs_order(graph, False), dfs_order(graph, True), graph.nodes):   # body order: as discovery
        region = body_region(name, [[n for n in order if found.get(n.name) == i] for i in numbers])
        reason = region.mismatch(graph)
        if reason is None:
            return region
        reasons.append(reason)
    raise DeeployError(f"{flag}: the instances differ: {reasons[0]}")
