"""Text for ``aggregate``: the metric, the stream and the number, or a bucket preview.

Contract: an ungrouped result prints ``metric(stream[.field]) = value``; a grouped one
prints its dimension, up to ``MAX_GROUPS`` ``key=count`` buckets, and ``other_count``
with what a positive value means (more groups beyond ``limit``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from middleware import ToolCall, ToolResult
from pdpp_gateway.render.common import kv

MAX_GROUPS: Final = 12


def render_aggregate(call: ToolCall, result: ToolResult) -> str:
    data = result.structured.get("data") or {}
    metric = data.get("metric") or call.arguments.get("metric")
    stream = data.get("stream") or call.arguments.get("stream")
    field = data.get("field") or call.arguments.get("field")
    head = f"aggregate {metric}({stream}{'.' + str(field) if field else ''})"
    total = data.get("filtered_record_count")
    groups = data.get("groups")
    if not isinstance(groups, list):
        line = f"{head} = {data.get('value')}"
        return line + (f" (over {total} records)" if isinstance(total, int) and metric != "count" else "")
    if data.get("group_by_time"):
        dimension = f"group_by_time={data['group_by_time']} granularity={data.get('granularity')} time_zone={data.get('time_zone') or 'UTC'}"
    else:
        dimension = kv("group_by", data.get("group_by"))
    lines = [f"{head} {dimension}: {len(groups)} group(s) (limit {data.get('limit')}), over {total} records."]
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


def _key(value: object) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
