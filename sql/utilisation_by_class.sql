-- Ring utilisation by ring class across the fleet: how busy rings of each class are, where
-- their idle time goes, and how many of them each verdict names. Shares are fractions of
-- each capture's span, averaged over rings (null shares, not measurable, are left out).
SELECT class,
       COUNT(*) AS rings,
       COUNT(DISTINCT host) AS hosts,
       ROUND(AVG(busy), 4) AS busy_avg,
       ROUND(MIN(busy), 4) AS busy_min,
       ROUND(AVG(idle_host), 4) AS idle_host_avg,
       ROUND(AVG(idle_dep), 4) AS idle_dep_avg,
       ROUND(AVG(idle_sched), 4) AS idle_sched_avg,
       ROUND(AVG(idle_none), 4) AS idle_none_avg,
       SUM(CASE WHEN verdict = 'GPU-bound' THEN 1 ELSE 0 END) AS gpu_bound,
       SUM(CASE WHEN verdict = 'host-bound' THEN 1 ELSE 0 END) AS host_bound,
       SUM(CASE WHEN verdict = 'dependency-bound' THEN 1 ELSE 0 END) AS dependency_bound
FROM rings
GROUP BY class
ORDER BY busy_avg DESC, class
