-- Did a kernel (the captures' --tag kernel=...) make queue waits or execution worse, per
-- ring class? p50, p90 and p99 of queue and exec of complete jobs, and the share of them
-- tagged queue-wait, per kernel and class (the class comes from the rings table, by the
-- ring's name).
SELECT j.tag_kernel AS kernel,
       r.class,
       COUNT(*) AS jobs,
       COUNT(DISTINCT j.capture_id) AS captures,
       ROUND(PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY j.queue_ns) / 1e6, 3) AS queue_p50_ms,
       ROUND(PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY j.queue_ns) / 1e6, 3) AS queue_p90_ms,
       ROUND(PERCENTILE_CONT(0.99) WITHIN GROUP (ORDER BY j.queue_ns) / 1e6, 3) AS queue_p99_ms,
       ROUND(AVG(CASE WHEN j.queue_wait THEN 1 ELSE 0 END), 4) AS queue_wait_share,
       ROUND(PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY j.exec_ns) / 1e6, 3) AS exec_p50_ms,
       ROUND(PERCENTILE_CONT(0.99) WITHIN GROUP (ORDER BY j.exec_ns) / 1e6, 3) AS exec_p99_ms
FROM jobs j
JOIN rings r
  ON r.capture_id = j.capture_id AND r.card = j.card AND r.ring = j.ring
WHERE NOT j.incomplete
GROUP BY j.tag_kernel, r.class
ORDER BY r.class, kernel
