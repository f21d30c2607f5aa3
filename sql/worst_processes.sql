-- The ten processes (one process of one capture, over all its rings) that lost the most GPU
-- job time to waiting, with what they waited for and the GPU time they used. Jobs without a
-- recorded COMMIT have no process and are left out.
SELECT host,
       capture_id,
       pid,
       COALESCE(comm, '') AS comm,
       SUM(jobs) AS jobs,
       ROUND(SUM(busy_ns) / 1e6, 3) AS busy_ms,
       ROUND(SUM(COALESCE(queue_wait_lost_ns, 0)) / 1e6, 3) AS queue_wait_ms,
       ROUND(SUM(COALESCE(dep_wait_lost_ns, 0)) / 1e6, 3) AS dep_wait_ms,
       ROUND(SUM(COALESCE(host_submit_lost_ns, 0) + COALESCE(exec_tail_lost_ns, 0)
                 + COALESCE(vm_fault_lost_ns, 0) + COALESCE(preempt_thrash_lost_ns, 0)) / 1e6, 3) AS other_ms,
       ROUND(SUM(COALESCE(queue_wait_lost_ns, 0) + COALESCE(dep_wait_lost_ns, 0)
                 + COALESCE(host_submit_lost_ns, 0) + COALESCE(exec_tail_lost_ns, 0)
                 + COALESCE(vm_fault_lost_ns, 0) + COALESCE(preempt_thrash_lost_ns, 0)) / 1e6, 3) AS lost_ms
FROM processes
WHERE pid IS NOT NULL
GROUP BY host, capture_id, pid, COALESCE(comm, '')
ORDER BY lost_ms DESC, host, capture_id, pid
LIMIT 10
