-- Targets and non-targets per system and gender (any dataset with `gender`).
select system, gender,
       count(*) filter (where label) as n_tar,
       count(*) filter (where not label) as n_non
from trials
group by system, gender
order by system, gender;
