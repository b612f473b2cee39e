"""Autocontext (spec 6.3, 7): the rules that need no I/O (tool schemas, block descriptors,
the ranking of the 25 suggestions and its page under the model budget, the ``on_first_call``
decision table) and :class:`AutocontextRunner`, which fetches blocks and resource listings
through the cache.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from . import _jsonio as jsonio
from ._budget import Fitted, Trim, chars, fit_json, largest, search_level, shrink
from ._cache import MISS
from ._redaction import redact
from ._settings import CallMeta
from .declaration import ANONYMOUS, Block, Connector, Principal, ResourceRef
from .errors import AcpError, UnknownBlock
from .protocol import (
    RESOURCE_LIST_TTL_S,
    RESOURCE_SUGGESTIONS,
    BlockDescriptor,
    BlockResult,
    JsonObject,
    ResourceSummary,
)

if TYPE_CHECKING:
    from ._cache import BlockCache, ProvenCredentials, RecencyStore
    from ._session import SessionState
    from .context import CallContext

log = logging.getLogger("acp")
_RESOURCES_BLOCK = "__resources__"


def resource_argument(connector: Connector) -> JsonObject:
    """The ``resource_id`` property injected into tools that need a resource (spec 6.2)."""
    spec = connector.resources
    return {
        "type": "string",
        "description": f"{spec.description} Format: {spec.format}. Omit to use the default resource.",
    }


def autocontext_schema(connector: Connector) -> tuple[JsonObject, JsonObject]:
    """Published and validation schemas of ``autocontext`` (spec 7.3).

    The published one enumerates block ids for the model; validation leaves them open
    so an unknown id gets ACP_UNKNOWN_BLOCK with the valid list, as 7.3 requires.
    """
    block_ids = [b.id for b in connector.blocks]
    properties: JsonObject = {}
    if connector.resources.used:
        properties["resource_id"] = {
            "type": "string",
            "description": f"{connector.resources.description} Format: {connector.resources.format}. "
            "Omit to list the resources you can use.",
        }
    request_data: JsonObject = {
        "type": "array",
        "items": {"type": "string", "enum": block_ids},
        "description": "Autocontext blocks to return (see autocontext_data). Empty or omitted = all.",
    }
    properties["request_data"] = request_data
    if connector.resources.used:
        properties["query"] = {
            "type": "string",
            "description": "Without resource_id: search all resources by name, group or id.",
        }
    published = {"type": "object", "properties": properties, "additionalProperties": False}
    open_items = {**request_data, "items": {"type": "string"}}
    validation = {**published, "properties": {**properties, "request_data": open_items}}
    return published, validation


def autocontext_description(connector: Connector) -> str:
    title = connector.resources.title or "resource"
    blocks = ", ".join(b.id for b in connector.blocks) or "none"
    if not connector.resources.used:
        return f"Context of this source before you use its tools. Blocks: {blocks}."
    return (
        f"Call this first, with the resource_id ({title}) you are going to query, before any other tool: "
        f"it returns exact names and usual values so the first query is right. Blocks: {blocks}. "
        "Without resource_id it lists the resources you can use (add query to search them)."
    )


def autocontext_data_schema(connector: Connector) -> JsonObject:
    properties: JsonObject = {}
    if connector.resources.used:
        properties["resource_id"] = {
            "type": "string",
            "description": f"{connector.resources.description} Only blocks that apply to its level are listed.",
        }
    return {"type": "object", "properties": properties, "additionalProperties": False}


def descriptor(block: Block) -> BlockDescriptor:
    out: BlockDescriptor = {"id": block.id, "description": block.description}
    if block.applies_to:
        out["applies_to"] = list(block.applies_to)
    return out


def applicable(blocks: Sequence[Block], ref: ResourceRef | None) -> list[Block]:
    if ref is None:
        return list(blocks)
    return [b for b in blocks if b.applies_to is None or ref.level in b.applies_to]


def requested_blocks(blocks: Sequence[Block], requested: Sequence[str]) -> list[Block]:
    """Blocks named by ``request_data``, in that order; unknown ids fail the call (spec 7.3)."""
    by_id = {b.id: b for b in blocks}
    unknown = [r for r in requested if r not in by_id]
    if unknown:
        raise UnknownBlock(
            f"Unknown autocontext block(s): {', '.join(unknown)}. Valid blocks: {', '.join(by_id) or 'none'}. "
            "Call autocontext_data to see what each one contains."
        )
    return [by_id[r] for r in dict.fromkeys(requested)]


def not_applicable_error(block: Block, ref: ResourceRef) -> str:
    levels = ", ".join(block.applies_to or ())
    return (
        f"Block '{block.id}' applies to {levels} resources, not to a {ref.level}. "
        f"Pass a resource_id of level {levels} to get it."
    )


def rank_suggestions(
    resources: Sequence[ResourceSummary],
    recent: Sequence[tuple[str, float]],
    default_id: str | None,
    query: str | None,
) -> tuple[list[ResourceSummary], int]:
    """Order: the default, then recently used, then the source's order (spec 6.3).

    Returns the page (at most 25) and the size of the ordered pool it was cut from (the
    matches, plus the configured default when it is not one of them).
    """
    by_id = {r["resource_id"]: r for r in resources}
    needle = (query or "").strip().lower()
    if needle:
        candidates = [
            r
            for r in resources
            if needle in r["resource_id"].lower()
            or needle in r.get("name", "").lower()
            or needle in r.get("group", "").lower()
        ]
    else:
        candidates = list(resources)
    recent_ids = {rid for rid, score in recent if score > 0}
    ordered: list[ResourceSummary] = []
    seen: set[str] = set()

    def take(summary: ResourceSummary) -> None:
        if summary["resource_id"] in seen:
            return
        seen.add(summary["resource_id"])
        entry: ResourceSummary = {**summary}
        if summary["resource_id"] in recent_ids:
            entry["recent"] = True
        ordered.append(entry)

    if default_id:
        known = by_id.get(default_id)
        if known is not None:
            take({**known, "configured": True})
        else:
            # spec 6.3: a configured id missing from the listing is still shown, marked.
            take(
                {
                    "resource_id": default_id,
                    "name": default_id,
                    "description": "The configured default resource; it is not in this account's listing.",
                    "configured": True,
                }
            )
    candidate_ids = {r["resource_id"] for r in candidates}
    for rid, _score in recent:
        if rid in candidate_ids:
            take(by_id[rid])
    for summary in candidates:
        take(summary)
    return ordered[:RESOURCE_SUGGESTIONS], len(ordered)


def suggestions_notice(shown: int, pool: int, total: int, query: str | None, default_id: str | None) -> str:
    """The page's notice; it says so whenever the page is not everything (spec 6.3)."""
    if total == 0 and not default_id:
        return "No resources are available with these credentials. Ask the user to check the source's access."
    partial = shown < pool
    if query:
        head = (
            f"Showing {shown} of {pool} resources for the query '{query}' ({total} available)."
            if partial
            else f"{pool} resources for the query '{query}' ({total} available)."
        )
    elif partial:
        available = "available resources" if pool == total else f"resources ({total} available)"
        head = f"Showing {shown} of {pool} {available}, most recently used first."
    else:
        head = f"{total} resources available." if shown == total else f"{shown} resources ({total} available)."
    if partial:
        head += " A resource missing from this page may still exist: search for it with query."
    if default_id:
        head += f" The configured default is {default_id}."
    return head + " Pass resource_id to get its autocontext."


@dataclass(frozen=True)
class SuggestionPage:
    """The resource page of spec 6.3 before the budget: what its notice is made of."""

    resources: list[ResourceSummary]  # ranked, at most 25
    pool: int  # the ordered candidates the page was cut from
    total: int  # every resource of the listing
    query: str | None
    default_id: str | None

    def model(self, shown: int, budget: int | None = None) -> JsonObject:
        """``{notice, total_available, resources}`` with the first ``shown`` resources."""
        notice = suggestions_notice(shown, self.pool, self.total, self.query, self.default_id)
        if shown < len(self.resources):
            notice += f" The page was shortened to fit the model budget of {budget} characters."
        return {"notice": notice, "total_available": self.total, "resources": self.resources[:shown]}


def fit_suggestions(page: SuggestionPage, budget: int | None) -> Fitted:
    """The resource page within ``budget``: fewer resources (the notice says how many), then their
    long names and descriptions cut; the default and the most recent come first, so they stay."""
    full = page.model(len(page.resources))
    text = jsonio.dumps_text(full)
    if budget is None or len(text) <= budget:
        return Fitted(full, text)
    shown = largest(0, len(page.resources) - 1, lambda n: chars(page.model(n, budget)) <= budget)
    model = page.model(shown, budget)
    if shown == 0 and page.resources:  # not even one resource whole: the first one, its texts cut
        one = page.model(1, budget)
        cut = search_level(
            lambda level: {**one, "resources": shrink(one["resources"], level)}, lambda m: chars(m) <= budget
        )
        model = cut if cut is not None else model
    if chars(model) > budget:  # a query so long that the notice alone is over
        return fit_json(model, budget, "resources")
    return Fitted(model, jsonio.dumps_text(model), Trim(parts_shortened=["resources"]))


def should_attach(meta: CallMeta, first_time: bool) -> bool:
    """The ``on_first_call`` table of spec 7.5, exactly."""
    if meta.autocontext_delivered is True:
        return False
    if meta.session_id is None:
        return meta.autocontext_delivered is False
    return first_time


class AutocontextRunner:
    """Runs the reserved autocontext tools and the on_first_call attachment for one connector.

    Blocks run concurrently, each under the connector's time budget; a failing block carries
    ``error`` and never fails the call (spec 7.3). Entries are cached per credential identity,
    resource, block and source configuration, and served only to credentials proven in this
    process (spec 7.4).
    """

    def __init__(
        self,
        connector: Connector,
        cache: BlockCache,
        recency: RecencyStore,
        proven: ProvenCredentials,
        translate: Callable[[BaseException], AcpError],
    ) -> None:
        self.connector = connector
        self.cache = cache
        self.recency = recency
        self.proven = proven
        self._translate = translate

    async def ensure_proven(self, cctx: CallContext) -> None:
        """Authenticate credentials not yet proven in this process, before cached data is served."""
        credentials = cctx.credentials
        authenticate = self.connector.credentials.authenticate
        if not self.connector.credentials.required or not credentials or self.proven.is_proven(credentials):
            return
        if authenticate is not None:
            await authenticate(credentials, cctx)
            self.proven.prove(credentials)

    async def _cached(
        self,
        cctx: CallContext,
        principal: Principal,
        resource_id: str,
        key: str,
        ttl_s: float,
        fetch: Callable[[], Awaitable[Any]],
    ) -> tuple[Any, bool]:
        credentials = cctx.credentials
        # The source configuration can change what a block holds (hidden columns, say): an entry
        # made under one configuration is never served under another.
        key = f"{key}#{_config_tag(cctx.config)}"
        usable = not self.connector.credentials.required or (credentials and self.proven.is_proven(credentials))
        if usable:
            hit = self.cache.get(principal.identity, resource_id, key)
            if hit is not MISS:
                return hit, True
        from .values import json_safe

        data = json_safe(await fetch())
        self.cache.put(principal.identity, resource_id, key, data, ttl_s)
        return data, False

    async def suggestions(
        self,
        cctx: CallContext,
        principal: Principal,
        default_id: str | None,
        query: Any,
        visible: Callable[[str], bool] | None = None,
    ) -> tuple[SuggestionPage, bool]:
        """The resource page of spec 6.3 and whether the listing came from the cache.

        ``visible`` keeps only the resources a token-bound source allows, before ranking and counting.
        """
        lister = self.connector.resources.list
        resources: list[Any] = []
        cached = False
        if lister is not None:
            await self.ensure_proven(cctx)

            async def fetch() -> Any:
                return list(await lister(cctx))

            resources, cached = await self._cached(cctx, principal, "", _RESOURCES_BLOCK, RESOURCE_LIST_TTL_S, fetch)
            if visible is not None:
                resources = [r for r in resources if visible(r["resource_id"])]
        text_query = query if isinstance(query, str) and query.strip() else None
        page, matching = rank_suggestions(resources, self.recency.ranked(principal.identity), default_id, text_query)
        return SuggestionPage(page, matching, len(resources), text_query, default_id), cached

    async def blocks(
        self, cctx: CallContext, principal: Principal, ref: ResourceRef, chosen: list[Block] | None
    ) -> tuple[list[BlockResult], bool]:
        """The blocks of spec 7.3 for ``ref`` and whether every one came from the cache."""
        blocks = chosen if chosen is not None else applicable(self.connector.blocks, ref)
        results: list[BlockResult | None] = [None] * len(blocks)
        hits: list[bool] = [False] * len(blocks)
        budget = self.connector.block_timeout_s

        async def run(index: int, block: Block) -> None:
            entry: BlockResult = {"id": block.id, "description": block.description}
            if block.applies_to and ref.level not in block.applies_to:
                entry["error"] = not_applicable_error(block, ref)
                results[index] = entry
                return
            ttl = block.ttl_s if block.ttl_s is not None else self.connector.autocontext_ttl_s
            try:
                with anyio.fail_after(budget):
                    data, hits[index] = await self._cached(
                        cctx, principal, ref.id, block.id, ttl, lambda: block.fetch(ref, cctx)
                    )
                entry["data"] = data
            except TimeoutError:
                entry["error"] = f"Timed out after {budget:g} s; the other blocks are unaffected."
            except Exception as exc:
                entry["error"] = redact(self._translate(exc).message)
            results[index] = entry

        async with anyio.create_task_group() as group:
            for index, block in enumerate(blocks):
                group.start_soon(run, index, block)
        done = [r for r in results if r is not None]
        return done, bool(blocks) and all(hits)

    async def first_call(
        self,
        session: SessionState,
        meta: CallMeta,
        cctx: CallContext,
        principal: Principal | None,
        resource: ResourceRef | None,
    ) -> list[BlockResult] | None:
        """Spec 7.5: the blocks to attach to an extraction, when the table says so."""
        if "on_first_call" not in self.connector.delivery or resource is None or not self.connector.blocks:
            return None
        identity = (principal or ANONYMOUS).identity
        key = (identity, meta.session_id or "", resource.id)
        if not should_attach(meta, not session.was_delivered(key)):
            return None
        known = {b.id: b for b in self.connector.blocks}
        wanted = [known[b] for b in meta.autocontext_blocks if b in known]
        blocks = applicable(wanted or self.connector.blocks, resource)
        try:
            results, _ = await self.blocks(cctx, principal or ANONYMOUS, resource, blocks)
        except Exception:
            log.warning("on_first_call autocontext failed", exc_info=True)
            return None
        if not results or all("error" in r for r in results):
            return None
        if meta.session_id:
            session.mark_delivered(key)
        return results


def _config_tag(config: JsonObject) -> str:
    canonical = jsonio.dumps({k: config[k] for k in sorted(config)})
    return hashlib.sha256(canonical).hexdigest()[:16]
