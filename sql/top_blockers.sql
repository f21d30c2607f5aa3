-- Which blocking classes cost the fleet the most GPU job time: per class, the jobs tagged
-- with it, the time they lost (as grtreport --top counts it), and on how many captures and
-- hosts it showed up. Classes a recording cannot judge are null in rings and left out.
SELECT class,
       SUM(jobs) AS jobs,
       ROUND(SUM(lost_ns) / 1e6, 3) AS lost_ms,
       COUNT(DISTINCT CASE WHEN jobs > 0 THEN capture_id END) AS captures,
       COUNT(DISTINCT CASE WHEN jobs > 0 THEN host END) AS hosts
FROM (
    SELECT 'host-submit' AS class, host, capture_id, host_submit_jobs AS jobs, host_submit_lost_ns AS lost_ns FROM rings
    UNION ALL
    SELECT 'queue-wait', host, capture_id, queue_wait_jobs, queue_wait_lost_ns FROM rings
    UNION ALL
    SELECT 'exec-tail', host, capture_id, exec_tail_jobs, exec_tail_lost_ns FROM rings
    UNION ALL
    SELECT 'dep-wait', host, capture_id, dep_wait_jobs, dep_wait_lost_ns FROM rings
    UNION ALL
    SELECT 'vm-fault', host, capture_id, vm_fault_jobs, vm_fault_lost_ns FROM rings
    UNION ALL
    SELECT 'preempt-thrash', host, capture_id, preempt_thrash_jobs, preempt_thrash_lost_ns FROM rings
) AS per_class
WHERE jobs IS NOT NULL
GROUP BY class
ORDER BY lost_ms DESC, class
