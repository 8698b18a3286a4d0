-- aggregates of one lookup grouped by its columns, sums typed as Spark types them, from the snapshot
-- answer: snapshot
select d_year, count(*) as days, sum(d_daynuminmonth) as day_numbers, min(d_datekey) as first_day,
       max(d_datekey) as last_day, count(distinct d_yearmonth) as months
from ssb.dates
where d_year between 1993 and 1996
group by d_year
