-- NIST-style partitions of the EVALITA 2009 set (tests/data/real/ru2009_evalita):
-- training condition x test condition, with counts and the score range of each partition.
select mcond, tcond,
       count(*) filter (where label) as n_tar,
       count(*) filter (where not label) as n_non,
       min(score) as min_score, max(score) as max_score
from trials
group by mcond, tcond
order by mcond, tcond;
