"""Loopback fakes of Google APIs that the real client libraries talk to over HTTP.

Each fake is a real HTTP server on ``127.0.0.1`` inside the test process. Tests drive it with the
vendor's own client (``google-cloud-bigquery``, ``google-auth``, …) pointed at ``fake.url``; the fake
computes its answers from generated data, and injects faults on request.

- ``fakes.http``: the server harness (routes, request log, Google error envelopes, fault injection).
- ``fakes.google_oauth``: a token endpoint that really verifies service-account JWTs and refresh tokens.
- ``fakes.bigquery_sql``: BigQuery Standard SQL executed on DuckDB (transpile, rewrites, dry-run bytes).
- ``fakes.ga4_export``: a seeded generator of GA4 BigQuery-export daily shards.
- ``fakes.bigquery``: ``FakeBigQuery``, the BigQuery v2 REST API over all of the above.
- ``fakes.search_console``: ``FakeSearchConsole``, the Search Console API (search analytics, sites, sitemaps,
  URL inspection) over generated query/page/country/device/date facts.
"""
