"""Text for ``aggregate``: the metric, the stream and the number, or a bucket preview.

Contract: an ungrouped result prints ``metric(stream[.field]) = value``; a grouped one
prints its dimension, up to ``MAX_GROUPS`` ``key=count`` buckets, and ``other_count``
with what a positive value means (more groups beyond ``limit``). When no
``connection_id`` narrowed a stream name several connections hold, line 2 says the
answer adds them up and names them (``render.common.merged_note``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mcp_gateway_middleware import ToolResult

from pdpp_gateway.render.common import MERGED_CONNECTIONS, kv, merged_note
from pdpp_gateway.tools.args import AggregateArgs

MAX_GROUPS: Final = 12


def render_aggregate(args: AggregateArgs, result: ToolResult) -> str:
    data = result.structured.get("data") or {}
    metric = data.get("metric") or args.metric
    stream = data.get("stream") or args.stream
    field = data.get("field") or args.field
    head = f"aggregate {metric}({stream}{'.' + str(field) if field else ''})"
    total = data.get("filtered_record_count")
    groups = data.get("groups")
    merged = _merged(args, result, data)
    if not isinstance(groups, list):
        line = f"{head} = {data.get('value')}"
        line += f" (over {total} records)" if isinstance(total, int) and metric != "count" else ""
        return "\n".join([line, *merged])
    if data.get("group_by_time"):
        dimension = f"group_by_time={data['group_by_time']} granularity={data.get('granularity')} time_zone={data.get('time_zone') or 'UTC'}"
    else:
        dimension = kv("group_by", data.get("group_by"))
    lines = [
        f"{head} {dimension}: {len(groups)} group(s) (limit {data.get('limit')}), over {total} records.",
        *merged,
    ]
    shown = [g for g in groups[:MAX_GROUPS] if isinstance(g, Mapping)]
    lines.append("; ".join(f"{_key(g.get('key'))}={g.get('count')}" for g in shown) or "no groups")
    if len(groups) > len(shown):
        lines.append(f"({len(groups) - len(shown)} more group(s) in structured output data.groups)")
    other = data.get("other_count")
    if isinstance(other, int):
        lines.append(
            f"other_count={other}: "
            + (
                "records in groups beyond limit; the list is truncated, raise limit (max 100) to see more."
                if other > 0
                else "every group is shown."
            )
        )
    return "\n".join(lines)


def _merged(args: AggregateArgs, result: ToolResult, data: Mapping[str, Any]) -> list[str]:
    """The merged-sources line when no connection_id narrowed a name several connections hold."""
    connections = result.structured.get(MERGED_CONNECTIONS)
    if not isinstance(connections, list):
        return []
    effect = "this answer adds all of them up"
    dimension = data.get("group_by") or data.get("group_by_time")
    if dimension:
        effect += f", and records of a source without {dimension} group as (none)"
    return [merged_note("aggregate", args.stream, args.arguments, connections, effect)]


def _key(value: object) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
