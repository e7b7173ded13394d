"""The check of a result against its tool's published outputSchema: the subset of JSON Schema the
server's output schemas use (type, enum, const, minimum, properties, items, required), reporting the
first bad field by its dotted path."""

from __future__ import annotations

from typing import Any, Dict, Optional

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


def first_violation(schema: Dict[str, Any], value: Any, path: str = "") -> Optional[str]:
    """`None` when `value` matches; else "`<path>` (<keyword>)" for the first field that does not."""
    where = path or "$"
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_TYPES.get(name, lambda _: False)(value) for name in names):
            return f"`{where}` (type)"
    if "enum" in schema and value not in schema["enum"]:
        return f"`{where}` (enum)"
    if "const" in schema and value != schema["const"]:
        return f"`{where}` (const)"
    minimum = schema.get("minimum")
    if minimum is not None and _TYPES["number"](value) and value < minimum:
        return f"`{where}` (minimum)"
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                return f"`{path + '.' if path else ''}{name}` (required)"
        for name, member in schema.get("properties", {}).items():
            if name in value:
                found = first_violation(member, value[name], f"{path}.{name}" if path else name)
                if found:
                    return found
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            found = first_violation(schema["items"], item, f"{path}[{index}]")
            if found:
                return found
    return None
