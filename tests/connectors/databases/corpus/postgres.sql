-- The analytics corpus in PostgreSQL's dialect (PostgreSQL 15): TPC-H's 22 queries, with their
-- parameters widened where the tiny dataset would leave them empty, then what analysts write.
-- Each query starts at its "-- name:" line; a top-level ORDER BY orders its rows fully.

-- name: q01_pricing_summary
SELECT l_returnflag, l_linestatus,
       sum(l_quantity) AS sum_qty,
       sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty,
       avg(l_extendedprice) AS avg_price,
       avg(l_discount) AS avg_disc,
       count(*) AS count_order
FROM lineitem
WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL '90 days'
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus;

-- name: q02_minimum_cost_supplier
SELECT s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
FROM part, supplier, partsupp, nation, region
WHERE p_partkey = ps_partkey
  AND s_suppkey = ps_suppkey
  AND p_size BETWEEN 10 AND 20
  AND p_type LIKE '%BRASS'
  AND s_nationkey = n_nationkey
  AND n_regionkey = r_regionkey
  AND r_name = 'EUROPE'
  AND ps_supplycost = (
      SELECT min(ps_supplycost)
      FROM partsupp, supplier, nation, region
      WHERE p_partkey = ps_partkey
        AND s_suppkey = ps_suppkey
        AND s_nationkey = n_nationkey
        AND n_regionkey = r_regionkey
        AND r_name = 'EUROPE')
ORDER BY s_acctbal DESC, n_name, s_name, p_partkey
LIMIT 100;

-- name: q03_shipping_priority
SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate, o_shippriority
FROM customer, orders, lineitem
WHERE c_mktsegment = 'BUILDING'
  AND c_custkey = o_custkey
  AND l_orderkey = o_orderkey
  AND o_orderdate < DATE '1995-03-15'
  AND l_shipdate > DATE '1995-03-15'
GROUP BY l_orderkey, o_orderdate, o_shippriority
ORDER BY revenue DESC, o_orderdate, l_orderkey
LIMIT 10;

-- name: q04_order_priority_checking
SELECT o_orderpriority, count(*) AS order_count
FROM orders
WHERE o_orderdate >= DATE '1993-07-01'
  AND o_orderdate < DATE '1993-07-01' + INTERVAL '3 months'
  AND EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate)
GROUP BY o_orderpriority
ORDER BY o_orderpriority;

-- name: q05_local_supplier_volume
SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM customer, orders, lineitem, supplier, nation, region
WHERE c_custkey = o_custkey
  AND l_orderkey = o_orderkey
  AND l_suppkey = s_suppkey
  AND c_nationkey = s_nationkey
  AND s_nationkey = n_nationkey
  AND n_regionkey = r_regionkey
  AND r_name = 'ASIA'
  AND o_orderdate >= DATE '1993-01-01'
  AND o_orderdate < DATE '1993-01-01' + INTERVAL '4 years'
GROUP BY n_name
ORDER BY revenue DESC, n_name;

-- name: q06_forecasting_revenue_change
SELECT sum(l_extendedprice * l_discount) AS revenue
FROM lineitem
WHERE l_shipdate >= DATE '1994-01-01'
  AND l_shipdate < DATE '1994-01-01' + INTERVAL '1 year'
  AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01
  AND l_quantity < 24;

-- name: q07_volume_shipping
SELECT supp_nation, cust_nation, l_year, sum(volume) AS revenue
FROM (
    SELECT n1.n_name AS supp_nation, n2.n_name AS cust_nation,
           extract(year FROM l_shipdate) AS l_year,
           l_extendedprice * (1 - l_discount) AS volume
    FROM supplier, lineitem, orders, customer, nation n1, nation n2
    WHERE s_suppkey = l_suppkey
      AND o_orderkey = l_orderkey
      AND c_custkey = o_custkey
      AND s_nationkey = n1.n_nationkey
      AND c_nationkey = n2.n_nationkey
      AND ((n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY') OR (n1.n_name = 'GERMANY' AND n2.n_name = 'FRANCE'))
      AND l_shipdate BETWEEN DATE '1993-01-01' AND DATE '1997-12-31'
) AS shipping
GROUP BY supp_nation, cust_nation, l_year
ORDER BY supp_nation, cust_nation, l_year;

-- name: q08_national_market_share
SELECT o_year, sum(CASE WHEN nation = 'BRAZIL' THEN volume ELSE 0 END) / sum(volume) AS mkt_share
FROM (
    SELECT extract(year FROM o_orderdate) AS o_year,
           l_extendedprice * (1 - l_discount) AS volume,
           n2.n_name AS nation
    FROM part, supplier, lineitem, orders, customer, nation n1, nation n2, region
    WHERE p_partkey = l_partkey
      AND s_suppkey = l_suppkey
      AND l_orderkey = o_orderkey
      AND o_custkey = c_custkey
      AND c_nationkey = n1.n_nationkey
      AND n1.n_regionkey = r_regionkey
      AND r_name = 'AMERICA'
      AND s_nationkey = n2.n_nationkey
      AND o_orderdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31'
      AND p_type LIKE 'ECONOMY%'
) AS all_nations
GROUP BY o_year
ORDER BY o_year;

-- name: q09_product_type_profit
SELECT nation, o_year, sum(amount) AS sum_profit
FROM (
    SELECT n_name AS nation,
           extract(year FROM o_orderdate) AS o_year,
           l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity AS amount
    FROM part, supplier, lineitem, partsupp, orders, nation
    WHERE s_suppkey = l_suppkey
      AND ps_suppkey = l_suppkey
      AND ps_partkey = l_partkey
      AND p_partkey = l_partkey
      AND o_orderkey = l_orderkey
      AND s_nationkey = n_nationkey
      AND p_name LIKE '%green%'
) AS profit
GROUP BY nation, o_year
ORDER BY nation, o_year DESC;

-- name: q10_returned_item_reporting
SELECT c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) AS revenue,
       c_acctbal, n_name, c_address, c_phone, c_comment
FROM customer, orders, lineitem, nation
WHERE c_custkey = o_custkey
  AND l_orderkey = o_orderkey
  AND o_orderdate >= DATE '1993-10-01'
  AND o_orderdate < DATE '1993-10-01' + INTERVAL '3 months'
  AND l_returnflag = 'R'
  AND c_nationkey = n_nationkey
GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
ORDER BY revenue DESC, c_custkey
LIMIT 20;

-- name: q11_important_stock
SELECT ps_partkey, sum(ps_supplycost * ps_availqty) AS value
FROM partsupp, supplier, nation
WHERE ps_suppkey = s_suppkey
  AND s_nationkey = n_nationkey
  AND n_name = 'GERMANY'
GROUP BY ps_partkey
HAVING sum(ps_supplycost * ps_availqty) > (
    SELECT sum(ps_supplycost * ps_availqty) * 0.01
    FROM partsupp, supplier, nation
    WHERE ps_suppkey = s_suppkey
      AND s_nationkey = n_nationkey
      AND n_name = 'GERMANY')
ORDER BY value DESC, ps_partkey;

-- name: q12_shipping_modes
SELECT l_shipmode,
       sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) AS high_line_count,
       sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END) AS low_line_count
FROM orders, lineitem
WHERE o_orderkey = l_orderkey
  AND l_shipmode IN ('MAIL', 'SHIP')
  AND l_commitdate < l_receiptdate
  AND l_shipdate < l_commitdate
  AND l_receiptdate >= DATE '1994-01-01'
  AND l_receiptdate < DATE '1994-01-01' + INTERVAL '1 year'
GROUP BY l_shipmode
ORDER BY l_shipmode;

-- name: q13_customer_distribution
SELECT c_count, count(*) AS custdist
FROM (
    SELECT c_custkey, count(o_orderkey) AS c_count
    FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey AND o_comment NOT LIKE '%special%requests%'
    GROUP BY c_custkey
) AS c_orders
GROUP BY c_count
ORDER BY custdist DESC, c_count DESC;

-- name: q14_promotion_effect
SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END)
       / sum(l_extendedprice * (1 - l_discount)) AS promo_revenue
FROM lineitem, part
WHERE l_partkey = p_partkey
  AND l_shipdate >= DATE '1995-09-01'
  AND l_shipdate < DATE '1995-09-01' + INTERVAL '1 month';

-- name: q15_top_supplier
WITH revenue0 AS (
    SELECT l_suppkey AS supplier_no, sum(l_extendedprice * (1 - l_discount)) AS total_revenue
    FROM lineitem
    WHERE l_shipdate >= DATE '1996-01-01' AND l_shipdate < DATE '1996-01-01' + INTERVAL '3 months'
    GROUP BY l_suppkey
)
SELECT s_suppkey, s_name, s_address, s_phone, total_revenue
FROM supplier, revenue0
WHERE s_suppkey = supplier_no
  AND total_revenue = (SELECT max(total_revenue) FROM revenue0)
ORDER BY s_suppkey;

-- name: q16_parts_supplier_relationship
SELECT p_brand, p_type, p_size, count(DISTINCT ps_suppkey) AS supplier_cnt
FROM partsupp, part
WHERE p_partkey = ps_partkey
  AND p_brand <> 'Brand#45'
  AND p_type NOT LIKE 'MEDIUM POLISHED%'
  AND p_size IN (49, 14, 23, 45, 19, 3, 36, 9)
  AND ps_suppkey NOT IN (SELECT s_suppkey FROM supplier WHERE s_comment LIKE '%Customer%Complaints%')
GROUP BY p_brand, p_type, p_size
ORDER BY supplier_cnt DESC, p_brand, p_type, p_size;

-- name: q17_small_quantity_order_revenue
SELECT sum(l_extendedprice) / 7.0 AS avg_yearly
FROM lineitem, part
WHERE p_partkey = l_partkey
  AND p_brand LIKE 'Brand#2%'
  AND p_container LIKE 'MED%'
  AND l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem WHERE l_partkey = p_partkey);

-- name: q18_large_volume_customer
SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) AS total_qty
FROM customer, orders, lineitem
WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 250)
  AND c_custkey = o_custkey
  AND o_orderkey = l_orderkey
GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
ORDER BY o_totalprice DESC, o_orderdate, o_orderkey
LIMIT 100;

-- name: q19_discounted_revenue
SELECT sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM lineitem, part
WHERE (p_partkey = l_partkey
       AND p_brand LIKE 'Brand#1%'
       AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
       AND l_quantity >= 1 AND l_quantity <= 1 + 10
       AND p_size BETWEEN 1 AND 15
       AND l_shipmode IN ('AIR', 'REG AIR')
       AND l_shipinstruct IN ('DELIVER IN PERSON', 'COLLECT COD'))
   OR (p_partkey = l_partkey
       AND p_brand LIKE 'Brand#2%'
       AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
       AND l_quantity >= 10 AND l_quantity <= 10 + 10
       AND p_size BETWEEN 1 AND 25
       AND l_shipmode IN ('AIR', 'REG AIR')
       AND l_shipinstruct IN ('DELIVER IN PERSON', 'COLLECT COD'))
   OR (p_partkey = l_partkey
       AND p_brand LIKE 'Brand#3%'
       AND p_container IN ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
       AND l_quantity >= 20 AND l_quantity <= 20 + 10
       AND p_size BETWEEN 1 AND 35
       AND l_shipmode IN ('AIR', 'REG AIR')
       AND l_shipinstruct IN ('DELIVER IN PERSON', 'COLLECT COD'));

-- name: q20_potential_part_promotion
SELECT s_name, s_address
FROM supplier, nation
WHERE s_suppkey IN (
        SELECT ps_suppkey
        FROM partsupp
        WHERE ps_partkey IN (SELECT p_partkey FROM part WHERE p_name LIKE 'f%')
          AND ps_availqty > (
              SELECT 0.5 * sum(l_quantity)
              FROM lineitem
              WHERE l_partkey = ps_partkey
                AND l_suppkey = ps_suppkey
                AND l_shipdate >= DATE '1994-01-01'
                AND l_shipdate < DATE '1994-01-01' + INTERVAL '3 years'))
  AND s_nationkey = n_nationkey
  AND n_regionkey = 1
ORDER BY s_name;

-- name: q21_suppliers_who_kept_orders_waiting
SELECT s_name, count(*) AS numwait
FROM supplier, lineitem l1, orders, nation
WHERE s_suppkey = l1.l_suppkey
  AND o_orderkey = l1.l_orderkey
  AND o_orderstatus = 'F'
  AND l1.l_receiptdate > l1.l_commitdate
  AND EXISTS (SELECT * FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey)
  AND NOT EXISTS (
      SELECT * FROM lineitem l3
      WHERE l3.l_orderkey = l1.l_orderkey AND l3.l_suppkey <> l1.l_suppkey AND l3.l_receiptdate > l3.l_commitdate)
  AND s_nationkey = n_nationkey
  AND n_regionkey = 4
GROUP BY s_name
ORDER BY numwait DESC, s_name
LIMIT 100;

-- name: q22_global_sales_opportunity
SELECT cntrycode, count(*) AS numcust, sum(c_acctbal) AS totacctbal
FROM (
    SELECT substring(c_phone FROM 1 FOR 2) AS cntrycode, c_acctbal
    FROM customer
    WHERE substring(c_phone FROM 1 FOR 2) IN ('13', '31', '23', '29', '30', '18', '17')
      AND c_acctbal > (
          SELECT avg(c_acctbal) FROM customer
          WHERE c_acctbal > 0.00 AND substring(c_phone FROM 1 FOR 2) IN ('13', '31', '23', '29', '30', '18', '17'))
      AND NOT EXISTS (SELECT * FROM orders WHERE o_custkey = c_custkey)
) AS custsale
GROUP BY cntrycode
ORDER BY cntrycode;

-- name: q23_top_orders_per_customer
SELECT c_custkey, c_name, o_orderkey, o_totalprice, rn
FROM (
    SELECT c.c_custkey, c.c_name, o.o_orderkey, o.o_totalprice,
           row_number() OVER (PARTITION BY c.c_custkey ORDER BY o.o_totalprice DESC, o.o_orderkey) AS rn
    FROM customer c JOIN orders o ON o.o_custkey = c.c_custkey
    WHERE c.c_mktsegment = 'AUTOMOBILE'
) AS ranked
WHERE rn <= 3
ORDER BY c_custkey, rn;

-- name: q24_supplier_rank_in_region
SELECT r.r_name AS region, s.s_name, s.s_acctbal,
       rank() OVER (PARTITION BY r.r_name ORDER BY s.s_acctbal DESC) AS balance_rank,
       dense_rank() OVER (PARTITION BY r.r_name ORDER BY n.n_name) AS nation_rank
FROM supplier s
JOIN nation n ON n.n_nationkey = s.s_nationkey
JOIN region r ON r.r_regionkey = n.n_regionkey
ORDER BY region, balance_rank, s.s_name;

-- name: q25_monthly_revenue_lag_lead
WITH monthly AS (
    SELECT date_trunc('month', o_orderdate)::date AS month, sum(o_totalprice) AS revenue, count(*) AS orders
    FROM orders
    WHERE o_orderdate >= DATE '1996-01-01' AND o_orderdate < DATE '1997-01-01'
    GROUP BY 1
)
SELECT month, revenue, orders,
       lag(revenue) OVER (ORDER BY month) AS previous_revenue,
       lead(revenue) OVER (ORDER BY month) AS next_revenue,
       round(100.0 * (revenue - lag(revenue) OVER (ORDER BY month))
             / NULLIF(lag(revenue) OVER (ORDER BY month), 0), 2) AS growth_pct
FROM monthly
ORDER BY month;

-- name: q26_moving_average_and_running_total
WITH daily AS (
    SELECT l_shipdate AS day, sum(l_extendedprice * (1 - l_discount)) AS revenue
    FROM lineitem
    WHERE l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-03-31'
    GROUP BY l_shipdate
)
SELECT day, revenue,
       avg(revenue) OVER (ORDER BY day ROWS BETWEEN 6 PRECEDING AND CURRENT ROW) AS moving_avg_7,
       sum(revenue) OVER (ORDER BY day ROWS UNBOUNDED PRECEDING) AS running_total,
       sum(revenue) OVER (PARTITION BY date_trunc('month', day) ORDER BY day) AS month_to_date
FROM daily
ORDER BY day;

-- name: q27_customer_spend_quartiles
WITH spend AS (
    SELECT o_custkey, sum(o_totalprice) AS total FROM orders GROUP BY o_custkey
), quartiles AS (
    SELECT o_custkey, total, ntile(4) OVER (ORDER BY total DESC, o_custkey) AS quartile FROM spend
)
SELECT quartile, count(*) AS customers, min(total) AS min_spend, max(total) AS max_spend,
       round(avg(total), 2) AS avg_spend
FROM quartiles
GROUP BY quartile
ORDER BY quartile;

-- name: q28_first_and_last_order
SELECT DISTINCT o_custkey,
       first_value(o_orderdate) OVER w AS first_order,
       last_value(o_orderdate) OVER w AS last_order,
       first_value(o_totalprice) OVER w AS first_order_total,
       count(*) OVER (PARTITION BY o_custkey) AS orders
FROM orders
WHERE o_custkey <= 40
WINDOW w AS (PARTITION BY o_custkey ORDER BY o_orderdate, o_orderkey
             ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
ORDER BY o_custkey;

-- name: q29_price_percent_rank
SELECT p_partkey, p_name, p_retailprice,
       round(percent_rank() OVER (ORDER BY p_retailprice)::numeric, 4) AS pct_rank,
       round(cume_dist() OVER (ORDER BY p_retailprice)::numeric, 4) AS cume
FROM part
WHERE p_size > 40
ORDER BY p_retailprice, p_partkey;

-- name: q30_customer_value_tiers
WITH customer_orders AS (
    SELECT o_custkey, count(*) AS orders, sum(o_totalprice) AS spend, max(o_orderdate) AS last_order
    FROM orders
    GROUP BY o_custkey
), tiered AS (
    SELECT c.c_custkey, c.c_mktsegment, co.spend,
           CASE WHEN co.spend IS NULL THEN 'never ordered'
                WHEN co.spend >= 1500000 THEN 'platinum'
                WHEN co.spend >= 800000 THEN 'gold'
                ELSE 'standard' END AS tier
    FROM customer c LEFT JOIN customer_orders co ON co.o_custkey = c.c_custkey
)
SELECT c_mktsegment, tier, count(*) AS customers, coalesce(sum(spend), 0) AS spend
FROM tiered
GROUP BY c_mktsegment, tier
ORDER BY c_mktsegment, tier;

-- name: q31_calendar_of_months
WITH RECURSIVE months(month) AS (
    SELECT DATE '1997-01-01'
    UNION ALL
    SELECT (month + INTERVAL '1 month')::date FROM months WHERE month < DATE '1997-12-01'
)
SELECT m.month, count(o.o_orderkey) AS orders, coalesce(sum(o.o_totalprice), 0) AS revenue
FROM months m
LEFT JOIN orders o ON o.o_orderdate >= m.month AND o.o_orderdate < m.month + INTERVAL '1 month'
GROUP BY m.month
ORDER BY m.month;

-- name: q32_order_value_bands
WITH RECURSIVE bands(low, high) AS (
    SELECT 0::numeric, 10000::numeric
    UNION ALL
    SELECT high, high * 2 FROM bands WHERE high < 1000000
)
SELECT b.low, b.high, count(o.o_orderkey) AS orders, round(avg(o.o_totalprice), 2) AS avg_total
FROM bands b
LEFT JOIN orders o ON o.o_totalprice >= b.low AND o.o_totalprice < b.high
GROUP BY b.low, b.high
ORDER BY b.low;

-- name: q33_latest_order_above_own_average
SELECT o.o_custkey, o.o_orderkey, o.o_orderdate, o.o_totalprice
FROM orders o
WHERE o.o_orderdate = (SELECT max(o2.o_orderdate) FROM orders o2 WHERE o2.o_custkey = o.o_custkey)
  AND o.o_totalprice > (SELECT avg(o3.o_totalprice) FROM orders o3 WHERE o3.o_custkey = o.o_custkey)
ORDER BY o.o_custkey, o.o_orderkey;

-- name: q34_stocked_parts_not_ordered_lately
SELECT p.p_partkey, p.p_name, p.p_retailprice
FROM part p
WHERE NOT EXISTS (SELECT 1 FROM lineitem l WHERE l.l_partkey = p.p_partkey AND l.l_shipdate >= DATE '1997-06-01')
  AND EXISTS (SELECT 1 FROM partsupp ps WHERE ps.ps_partkey = p.p_partkey AND ps.ps_availqty > 5000)
ORDER BY p.p_partkey;

-- name: q35_delivery_delay_buckets
SELECT CASE WHEN l_receiptdate - l_commitdate <= 0 THEN 'on time'
            WHEN l_receiptdate - l_commitdate <= 7 THEN 'up to a week late'
            WHEN l_receiptdate - l_commitdate <= 30 THEN 'up to a month late'
            ELSE 'over a month late' END AS delay,
       l_shipmode,
       count(*) AS lines,
       round(avg(l_receiptdate - l_shipdate), 2) AS avg_transit_days
FROM lineitem
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: q36_returns_and_discounts_by_nation
SELECT n.n_name,
       sum(l.l_extendedprice * l.l_discount) AS discount_given,
       sum(CASE WHEN l.l_returnflag = 'R' THEN l.l_extendedprice END) AS returned_value,
       round(coalesce(sum(CASE WHEN l.l_returnflag = 'R' THEN l.l_extendedprice END), 0)
             / NULLIF(sum(l.l_extendedprice), 0), 4) AS returned_share,
       coalesce(max(CASE WHEN l.l_shipmode = 'FOB' AND l.l_quantity > 49 THEN l.l_shipdate END)::text,
                'never') AS last_big_fob_shipment
FROM lineitem l
JOIN supplier s ON s.s_suppkey = l.l_suppkey
JOIN nation n ON n.n_nationkey = s.s_nationkey
GROUP BY n.n_name
ORDER BY n.n_name;

-- name: q37_quarterly_revenue
SELECT date_trunc('quarter', o_orderdate)::date AS quarter_start,
       to_char(date_trunc('quarter', o_orderdate), 'YYYY-"Q"Q') AS quarter_label,
       count(*) AS orders,
       sum(o_totalprice) AS revenue
FROM orders
WHERE o_orderdate >= DATE '1995-01-01' AND o_orderdate < DATE '1997-01-01'
GROUP BY 1, 2
ORDER BY 1;

-- name: q38_days_to_ship_by_priority
SELECT o.o_orderpriority,
       round(avg(l.l_shipdate - o.o_orderdate), 2) AS avg_days_to_ship,
       max(l.l_receiptdate - o.o_orderdate) AS max_days_to_receipt,
       count(*) FILTER (WHERE l.l_receiptdate > o.o_orderdate + INTERVAL '90 days') AS slow_lines,
       min(o.o_orderdate + 30) AS earliest_due
FROM orders o
JOIN lineitem l ON l.l_orderkey = o.o_orderkey
GROUP BY o.o_orderpriority
ORDER BY o.o_orderpriority;

-- name: q39_weekday_profile
SELECT extract(isodow FROM o_orderdate) AS iso_weekday,
       trim(to_char(o_orderdate, 'Day')) AS weekday,
       count(*) AS orders,
       round(avg(o_totalprice), 2) AS avg_total
FROM orders
GROUP BY 1, 2
ORDER BY 1;

-- name: q40_part_name_strings
SELECT p_partkey,
       upper(split_part(p_name, ' ', 1)) AS first_color,
       initcap(p_name) AS title,
       length(p_name) AS name_length,
       left(p_mfgr, 3) || '-' || right(p_brand, 2) AS code,
       replace(p_container, ' ', '_') AS container,
       position('green' IN p_name) AS green_at,
       lpad(p_size::text, 3, '0') AS size_padded,
       reverse(p_brand) AS backwards
FROM part
WHERE p_partkey <= 25
ORDER BY p_partkey;

-- name: q41_orders_per_clerk
SELECT s.id, s.name, count(o.o_orderkey) AS orders, sum(o.o_totalprice) AS revenue
FROM staff s
LEFT JOIN orders o ON o.o_clerk = 'Clerk#' || lpad(s.id::text, 9, '0')
GROUP BY s.id, s.name
ORDER BY revenue DESC NULLS LAST, s.id;

-- name: q42_channel_mix_from_json
SELECT o_meta ->> 'channel' AS channel,
       count(*) AS orders,
       round(avg((o_meta ->> 'rating')::int), 2) AS avg_rating,
       count(*) FILTER (WHERE o_meta ? 'rating') AS rated
FROM orders
GROUP BY 1
ORDER BY 1;

-- name: q43_device_from_nested_json
SELECT o_meta -> 'device' ->> 'os' AS os,
       count(*) AS orders,
       count(*) FILTER (WHERE o_meta ->> 'coupon' IS NOT NULL) AS with_coupon,
       max(split_part(o_meta #>> '{device,version}', '.', 1)::int) AS max_major_version,
       min(jsonb_extract_path_text(o_meta, 'device', 'version')) AS min_version
FROM orders
WHERE o_orderdate >= DATE '1996-01-01'
GROUP BY 1
ORDER BY 1;

-- name: q44_tags_from_json_array
SELECT tag, count(*) AS orders, round(avg(o.o_totalprice), 2) AS avg_total
FROM orders o
CROSS JOIN LATERAL jsonb_array_elements_text(o.o_meta -> 'tags') AS t(tag)
GROUP BY tag
ORDER BY orders DESC, tag;

-- name: q45_comment_patterns
SELECT c_mktsegment,
       count(*) FILTER (WHERE c_comment ~ '\m(furiously|carefully)\M') AS adverb_comments,
       count(*) FILTER (WHERE c_comment ~* '^(FINAL|regular)') AS starts_final_or_regular,
       count(*) FILTER (WHERE c_comment !~ 'e') AS without_e,
       min(regexp_replace(c_phone, '^(\d+)-(\d+)-.*$', '+\1 \2')) AS first_prefix
FROM customer
GROUP BY c_mktsegment
ORDER BY c_mktsegment;

-- name: q46_part_codes_by_regex
SELECT p_brand,
       (regexp_match(p_brand, '#(\d)(\d)'))[1]::int AS maker,
       substring(p_type FROM '^(\w+)') AS size_class,
       (regexp_split_to_array(p_container, ' '))[2] AS container_kind,
       count(*) AS parts
FROM part
GROUP BY 1, 2, 3, 4
ORDER BY 1, 3, 4;

-- name: q47_revenue_rollup_region_nation
SELECT r.r_name AS region, n.n_name AS nation,
       count(DISTINCT o.o_custkey) AS customers,
       sum(o.o_totalprice) AS revenue,
       GROUPING(r.r_name, n.n_name) AS level
FROM orders o
JOIN customer c ON c.c_custkey = o.o_custkey
JOIN nation n ON n.n_nationkey = c.c_nationkey
JOIN region r ON r.r_regionkey = n.n_regionkey
WHERE o.o_orderdate >= DATE '1997-01-01'
GROUP BY ROLLUP (r.r_name, n.n_name)
ORDER BY region NULLS LAST, nation NULLS LAST;

-- name: q48_segment_priority_cube
SELECT c.c_mktsegment AS segment, o.o_orderpriority AS priority, count(*) AS orders, sum(o.o_totalprice) AS revenue
FROM orders o
JOIN customer c ON c.c_custkey = o.o_custkey
GROUP BY CUBE (c.c_mktsegment, o.o_orderpriority)
ORDER BY segment NULLS FIRST, priority NULLS FIRST;

-- name: q49_shipping_grouping_sets
SELECT l_shipmode, l_returnflag, extract(year FROM l_shipdate) AS ship_year,
       count(*) AS lines, sum(l_quantity) AS quantity
FROM lineitem
GROUP BY GROUPING SETS ((l_shipmode), (l_returnflag), (extract(year FROM l_shipdate)), ())
ORDER BY l_shipmode NULLS LAST, l_returnflag NULLS LAST, ship_year NULLS LAST;

-- name: q50_yearly_filtered_aggregates
SELECT extract(year FROM o_orderdate) AS year,
       count(*) AS orders,
       count(*) FILTER (WHERE o_orderstatus = 'F') AS fulfilled,
       count(*) FILTER (WHERE o_orderpriority IN ('1-URGENT', '2-HIGH')) AS urgent,
       sum(o_totalprice) FILTER (WHERE o_orderstatus = 'O') AS open_value,
       avg(o_totalprice) FILTER (WHERE o_comment LIKE '%requests%') AS avg_with_requests
FROM orders
GROUP BY 1
ORDER BY 1;

-- name: q51_balance_percentiles
SELECT c_mktsegment,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY c_acctbal) AS median_balance,
       percentile_disc(0.9) WITHIN GROUP (ORDER BY c_acctbal) AS p90_balance,
       percentile_cont(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY c_acctbal) AS quartiles,
       mode() WITHIN GROUP (ORDER BY c_nationkey) AS most_common_nation
FROM customer
GROUP BY c_mktsegment
ORDER BY c_mktsegment;

-- name: q52_nations_per_region
SELECT r.r_name AS region,
       string_agg(DISTINCT n.n_name, ', ' ORDER BY n.n_name) AS nations,
       count(s.s_suppkey) AS suppliers,
       array_agg(DISTINCT n.n_nationkey ORDER BY n.n_nationkey) AS nation_keys
FROM region r
JOIN nation n ON n.n_regionkey = r.r_regionkey
LEFT JOIN supplier s ON s.s_nationkey = n.n_nationkey
GROUP BY r.r_name
ORDER BY r.r_name;

-- name: q53_top_parts_per_supplier_lateral
SELECT s.s_suppkey, s.s_name, top.p_name, top.revenue
FROM supplier s
CROSS JOIN LATERAL (
    SELECT p.p_name, sum(l.l_extendedprice) AS revenue
    FROM lineitem l JOIN part p ON p.p_partkey = l.l_partkey
    WHERE l.l_suppkey = s.s_suppkey
    GROUP BY p.p_name
    ORDER BY revenue DESC, p.p_name
    LIMIT 2
) AS top
WHERE s.s_nationkey < 5
ORDER BY s.s_suppkey, top.revenue DESC, top.p_name;

-- name: q54_daily_calendar_generate_series
SELECT d::date AS day, count(o.o_orderkey) AS orders, coalesce(sum(o.o_totalprice), 0) AS revenue
FROM generate_series(DATE '1996-02-01', DATE '1996-02-29', INTERVAL '1 day') AS d
LEFT JOIN orders o ON o.o_orderdate = d::date
GROUP BY d
ORDER BY d;

-- name: q55_loyal_customers_set_operations
(SELECT o_custkey FROM orders WHERE extract(year FROM o_orderdate) = 1995
 INTERSECT
 SELECT o_custkey FROM orders WHERE extract(year FROM o_orderdate) = 1996)
EXCEPT
SELECT o_custkey FROM orders WHERE extract(year FROM o_orderdate) = 1997
ORDER BY o_custkey;

-- name: q56_european_contacts_union
SELECT 'supplier' AS kind, s_name AS name, n_name AS nation
FROM supplier JOIN nation ON n_nationkey = s_nationkey
WHERE n_regionkey = 3
UNION ALL
SELECT 'customer', c_name, n_name
FROM customer JOIN nation ON n_nationkey = c_nationkey
WHERE n_regionkey = 3 AND c_acctbal > 9000
UNION
SELECT 'staff', name, NULL FROM staff WHERE id <= 3
ORDER BY kind, name;

-- name: q57_paging_with_offset
SELECT o_orderkey, o_orderdate, o_totalprice
FROM orders
WHERE o_orderstatus = 'F'
ORDER BY o_totalprice DESC, o_orderkey
LIMIT 15 OFFSET 30;

-- name: q58_casts_and_formats
SELECT o_orderkey,
       o_totalprice::int AS rounded_total,
       CAST(o_totalprice AS text) AS total_text,
       o_orderdate::timestamp + INTERVAL '12 hours' AS noon,
       CAST('1996-06-30' AS date) - o_orderdate AS days_to_mid_1996,
       o_shippriority::boolean AS has_priority,
       (o_meta ->> 'rating')::numeric(3, 1) AS rating,
       to_char(o_totalprice, 'FM999999990.00') AS formatted
FROM orders
WHERE o_orderkey % 100 = 0
ORDER BY o_orderkey;

-- name: q59_latest_order_distinct_on
SELECT DISTINCT ON (o_custkey) o_custkey, o_orderkey, o_orderdate, o_totalprice
FROM orders
WHERE o_custkey < 60
ORDER BY o_custkey, o_orderdate DESC, o_orderkey DESC;

-- name: q60_busy_suppliers_share
SELECT s.s_name,
       count(DISTINCT l.l_orderkey) AS orders,
       sum(l.l_quantity) AS units,
       round(100.0 * sum(l.l_quantity) / (SELECT sum(l_quantity) FROM lineitem), 3) AS share_pct
FROM supplier s
JOIN lineitem l ON l.l_suppkey = s.s_suppkey
GROUP BY s.s_name
HAVING count(DISTINCT l.l_orderkey) > 100
ORDER BY units DESC, s.s_name;

-- name: q61_revenue_by_year_pivot
SELECT n.n_name,
       sum(CASE WHEN extract(year FROM o.o_orderdate) = 1995 THEN o.o_totalprice ELSE 0 END) AS y1995,
       sum(CASE WHEN extract(year FROM o.o_orderdate) = 1996 THEN o.o_totalprice ELSE 0 END) AS y1996,
       sum(CASE WHEN extract(year FROM o.o_orderdate) = 1997 THEN o.o_totalprice ELSE 0 END) AS y1997
FROM orders o
JOIN customer c ON c.c_custkey = o.o_custkey
JOIN nation n ON n.n_nationkey = c.c_nationkey
GROUP BY n.n_name
ORDER BY n.n_name;

-- name: q62_quick_look_unaliased
SELECT l_shipmode, count(*), sum(l_quantity), max(l_shipdate)
FROM lineitem
GROUP BY l_shipmode
ORDER BY l_shipmode;

-- name: q63_price_statistics
SELECT l_shipmode,
       round(corr(l_quantity, l_extendedprice)::numeric, 6) AS qty_price_corr,
       round(stddev_samp(l_discount), 6) AS discount_stddev,
       round(var_pop(l_tax), 8) AS tax_variance,
       round(regr_slope(l_extendedprice, l_quantity)::numeric, 4) AS price_per_unit
FROM lineitem
GROUP BY l_shipmode
ORDER BY l_shipmode;

-- name: q64_priority_flags
SELECT o_orderpriority,
       bool_and(o_totalprice > 1000) AS all_over_1000,
       bool_or(o_comment ILIKE '%BOLD%') AS any_bold,
       every(o_shippriority = 0) AS all_zero_priority
FROM orders
GROUP BY 1
ORDER BY 1;

-- name: q65_balance_histogram
SELECT width_bucket(c_acctbal, -1000, 10000, 10) AS bucket,
       count(*) AS customers,
       min(c_acctbal) AS low,
       max(c_acctbal) AS high
FROM customer
GROUP BY 1
ORDER BY 1;
