-- Duration band x channel: trial counts and target rate, the design matrix of an evaluation.
select duration, channel, count(*) as n_trials,
       round(avg(case when label then 1.0 else 0.0 end), 4) as target_rate
from trials
where system = 'sys1'
group by duration, channel
order by duration, channel;
