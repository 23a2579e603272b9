-- A condition slice: female speakers, telephone test segments, one system.
-- The same predicate works with `scoreframe evaluate --where` (polars) and here (DuckDB).
select model, segment, system, score, label, gender, channel, duration
from trials
where gender = 'f' and channel = 'tel' and system = 'sys1'
order by model, segment;
