-- COUNT(col) and AVG(col) from COUNT(*) and SUM(col): the build recorded no NULL in LO_SUPPLYCOST
-- answer: layout
select d_year, c_region, count(lo_supplycost) as n, avg(lo_supplycost) as a,
    count(lo_supplycost) filter (where c_region = 'ASIA') as asia
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
group by d_year, c_region
