-- COUNT(DISTINCT) under FILTER: a bitmap measure's cells and a dimension's values where the condition holds
-- answer: layout
select d_year,
    count(distinct lo_custkey) filter (where c_region = 'ASIA') as asian_customers,
    count(distinct c_nation) filter (where c_region <> 'ASIA') as other_nations,
    count(distinct lo_custkey) filter (where d_year = 1995) as customers_1995
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
group by d_year
