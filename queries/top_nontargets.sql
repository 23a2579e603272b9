-- The 20 highest-scoring non-target trials of each system: where false alarms come from.
select system, model, segment, score, gender, channel, duration
from (
    select *, row_number() over (partition by system order by score desc, model, segment) as rk
    from trials
    where not label
)
where rk <= 20
order by system, rk;
