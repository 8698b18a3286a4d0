-- a filter no row meets (no year 2050): an empty grouped result, still from layouts
-- answer: layout
-- rows: none
select d_year, c_region, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
where d_year = 2050
group by d_year, c_region
