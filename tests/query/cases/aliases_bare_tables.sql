-- table aliases over bare table names (the project's default database is SSB), columns qualified by alias
-- answer: layout
select d.d_year, c.c_region, sum(l.lo_revenue) as revenue, sum(l.lo_supplycost) as cost
from lineorder l
left join dates d on l.lo_orderdate = d.d_datekey
left join customer as c on l.lo_custkey = c.c_custkey
group by d.d_year, c.c_region
