-- a join to an aggregated projection of DATES on a range (not an equality): the model part groups by the column the condition reads
-- answer: layout
select x.month, count(*) as lines, sum(lo_revenue) as revenue
from ssb.lineorder
join (select d_yearmonth as month, min(d_datekey) as first_day, max(d_datekey) as last_day from ssb.dates group by d_yearmonth) x
  on lo_orderdate between x.first_day and x.last_day
group by x.month
