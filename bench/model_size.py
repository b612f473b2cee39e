"""What the model sees: sizes in characters and approximate tokens.

* for every connector found by ``connectors/*/acp.json``: its ``tools/list``, as the model
  receives it (per tool: name, description, inputSchema, annotations), as compact JSON;
* on the databases connector with the demo database: the ``model_response``
  (``content[0].text``) of a 25-row extraction, and the autocontext (all blocks).

Tokens are APPROXIMATE: characters / 4 (a common rule of thumb for English and JSON with
GPT- or Claude-style tokenizers; real counts vary with the tokenizer and the text).

    .venv/bin/python bench/model_size.py
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODEL_TOOL_KEYS = ("name", "description", "inputSchema", "annotations")
EXTRACTION_SQL = "SELECT * FROM orders ORDER BY order_id LIMIT 100"
EXTRACTION_ROW_LIMIT = 25


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tokens(chars: int) -> int:
    return round(chars / 4)


def row(label: str, chars: int) -> str:
    return f"{label:<52} {chars:>8} {tokens(chars):>8}"


HEADER = f"{'':<52} {'chars':>8} {'~tokens':>8}"


def connector_ids() -> list[str]:
    return [json.loads(p.read_text("utf-8-sig"))["id"] for p in sorted((ROOT / "connectors").glob("*/acp.json"))]


async def measure(scratch: Path) -> dict[str, Any]:
    from connectors.databases.demo import build_demo_database
    from shared.host import AcpHost

    env = {"ACP_TMP_DIR": str(scratch / "tmp"), "ACP_CACHE_DIR": str(scratch / "cache")}
    figures: dict[str, Any] = {"tools_list": {}}

    print("tools/list as the model receives it (compact JSON of [{name, description, inputSchema, annotations}])")
    print(HEADER)
    for connector_id in connector_ids():
        async with AcpHost.for_module(connector_id, env=env, cwd=ROOT) as host:
            tools = await host.list_tools()
        seen = [{k: t[k] for k in MODEL_TOOL_KEYS if k in t} for t in tools]
        total = len(compact(seen))
        figures["tools_list"][connector_id] = total
        print(row(f"{connector_id}: {len(seen)} tools", total))
        for tool in seen:
            print(row(f"  {tool['name']}", len(compact(tool))))

    database = build_demo_database(scratch / "shop.sqlite").resolve()
    meta = {"credentials": {"type": "sqlite", "path": str(database)}}
    async with AcpHost.for_module("databases", env=env, cwd=ROOT) as host:
        extraction = await host.call(
            "execute_sql",
            {"resource_id": database.stem, "sql": EXTRACTION_SQL},
            {**meta, "row_limit": EXTRACTION_ROW_LIMIT},
        )
        autocontext = await host.call("autocontext", {"resource_id": database.stem}, meta)
    for name, response in (("extraction", extraction), ("autocontext", autocontext)):
        if response.is_error:
            raise RuntimeError(f"{name} failed: {response.text[:300]}")

    shown = extraction.model_response
    text = extraction.text
    figures["extraction"] = len(text)
    print(f"\nExtraction on the demo database: {EXTRACTION_SQL!r}, row_limit {EXTRACTION_ROW_LIMIT}")
    print(
        f"returned_rows {shown.get('returned_rows')} of total_rows {shown.get('total_rows')}; "
        f"host table (system_data) keeps {extraction.system_data.get('row_count') if extraction.system_data else '?'}"
    )
    print(HEADER)
    print(row("model_response (content[0].text)", len(text)))
    rows = shown.get("rows") or []
    if rows:
        rows_chars = len(compact(rows))
        print(row(f"  of which rows ({len(rows)})", rows_chars))
        print(row("  per row (mean)", round(rows_chars / len(rows))))
        print(row("  everything else (notice, description, columns…)", len(text) - rows_chars))

    blocks = autocontext.model_response
    figures["autocontext"] = len(autocontext.text)
    print(f"\nAutocontext of the demo database (resource_id {database.stem!r}, all blocks)")
    print(HEADER)
    print(row("model_response (content[0].text)", len(autocontext.text)))
    if isinstance(blocks, list):
        for block in blocks:
            label = f"  block {block.get('id')}" + (" (error)" if "error" in block else "")
            print(row(label, len(compact(block))))
    print("\n~tokens = chars / 4 (an approximation, not a tokenizer count)")
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    import anyio

    with tempfile.TemporaryDirectory(prefix="acp-bench-size-") as scratch:
        return anyio.run(measure, Path(scratch))


if __name__ == "__main__":
    main()
