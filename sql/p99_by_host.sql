-- Per host: p99 of queue and exec over its complete jobs, next to the fleet's, how much
-- worse (ratio > 1) the host is, and the share of its jobs tagged queue-wait. Hosts sorted
-- by their queue p99 regression.
WITH fleet AS (
    SELECT PERCENTILE_CONT(0.99) WITHIN GROUP (ORDER BY queue_ns) AS queue_p99,
           PERCENTILE_CONT(0.99) WITHIN GROUP (ORDER BY exec_ns) AS exec_p99
    FROM jobs
    WHERE NOT incomplete
),
per_host AS (
    SELECT host,
           COUNT(*) AS jobs,
           PERCENTILE_CONT(0.99) WITHIN GROUP (ORDER BY queue_ns) AS queue_p99,
           PERCENTILE_CONT(0.99) WITHIN GROUP (ORDER BY exec_ns) AS exec_p99,
           AVG(CASE WHEN queue_wait THEN 1 ELSE 0 END) AS queue_wait_share
    FROM jobs
    WHERE NOT incomplete
    GROUP BY host
)
SELECT h.host,
       h.jobs,
       ROUND(h.queue_p99 / 1e6, 3) AS queue_p99_ms,
       ROUND(f.queue_p99 / 1e6, 3) AS fleet_queue_p99_ms,
       ROUND(h.queue_p99 / f.queue_p99, 2) AS queue_ratio,
       ROUND(h.queue_wait_share, 4) AS queue_wait_share,
       ROUND(h.exec_p99 / 1e6, 3) AS exec_p99_ms,
       ROUND(f.exec_p99 / 1e6, 3) AS fleet_exec_p99_ms,
       ROUND(h.exec_p99 / f.exec_p99, 2) AS exec_ratio
FROM per_host h CROSS JOIN fleet f
ORDER BY queue_ratio DESC, h.host
