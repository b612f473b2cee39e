"""Loopback fakes of Google APIs that the real client libraries talk to over HTTP.

Each fake is a real HTTP server on ``127.0.0.1`` inside the test process. Tests drive it with the
vendor's own client (``google-cloud-bigquery``, ``google-auth``, …) pointed at ``fake.url``; the fake
computes its answers from generated data, and injects faults on request.

- ``fakes.http``: the server harness (routes, request log, Google error envelopes, fault injection).
- ``fakes.google_oauth``: a token endpoint that really verifies service-account JWTs and refresh tokens.
- ``fakes.bigquery_sql``: BigQuery Standard SQL executed on DuckDB (transpile, rewrites, dry-run bytes).
- ``fakes.ga4_export``: a seeded generator of GA4 events (visitors with several sessions from their own
  sources, a property time zone, custom parameters), as BigQuery-export daily shards and as the ground truth
  of the GA4 fakes.
- ``fakes.bigquery``: ``FakeBigQuery``, the BigQuery v2 REST API over all of the above.
- ``fakes.search_console``: ``FakeSearchConsole``, the Search Console API (search analytics, sites, sitemaps,
  URL inspection) over generated query/page/country/device/date facts.
- ``fakes.ga4_catalog``: the GA4 accounts and properties (time zones, key events, custom definitions, …).
- ``fakes.ga4_admin``: ``FakeGA4Admin``, the GA4 Admin API (v1beta, v1alpha) rendered from the catalog.
- ``fakes.ga4``: ``FakeGA4Data``, the GA4 Data API computed from the generated events, and ``FakeGA4``, both
  fakes on one token endpoint.
"""
