"""One extraction timed in a connector's own process, as the paging benchmarks measure it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.db_extract import proc_status_kb

ROOT = Path(__file__).resolve().parent.parent


async def timed_extraction(
    connector: str,
    env: dict[str, str],
    meta: dict[str, Any],
    warm: tuple[str, dict[str, Any]],
    call: tuple[str, dict[str, Any]],
    rows: int,
) -> dict[str, Any]:
    """``python -m connectors.<connector>`` over stdio: the ``warm`` call first (lazy imports, the token,
    the clients, what the server remembers), then ``call`` timed on the client's side, which must extract
    ``rows`` rows. Returns its seconds, the pages its ``system_info.source`` counts, and the server's
    resident memory before it (``idle_kb``) and at its peak (``hwm_kb``). Table files are removed."""
    import psutil

    from shared.host import AcpHost, uri_path

    async with AcpHost.for_module(connector, env=env, cwd=ROOT, read_timeout_s=600.0) as host:
        module = f"connectors.{connector}"
        (pid,) = [p.pid for p in psutil.Process().children() if module in " ".join(p.cmdline())]
        warmed = await host.call(*warm, meta)
        if warmed.is_error:
            raise RuntimeError(f"warm-up failed: {warmed.text[:500]}\n{host.stderr()[-2000:]}")
        if (warmed.system_data or {}).get("format") == "file":
            uri_path(str(warmed.system_data["table_uri"])).unlink()
        idle_kb = proc_status_kb(pid, "VmRSS")
        start = time.perf_counter_ns()
        response = await host.call(*call, meta)
        elapsed = time.perf_counter_ns() - start
        hwm_kb = proc_status_kb(pid, "VmHWM")
        data = response.system_data or {}
        if response.is_error or data.get("row_count") != rows:
            raise RuntimeError(f"unexpected answer: {response.text[:500]} stderr={host.stderr()[-2000:]}")
        if data["format"] == "file":
            uri_path(str(data["table_uri"])).unlink()
        pages = response.system_info["source"]["pages"]
    return {"seconds": elapsed / 1e9, "hwm_kb": hwm_kb, "idle_kb": idle_kb, "pages": pages}
