-- SSB Q3.1: revenue by customer nation, supplier nation and year within two regions, biggest first
-- answer: layout
-- order: exact
select c_nation, s_nation, d_year, sum(lo_revenue) as lo_revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.supplier on lo_suppkey = s_suppkey
left join ssb.customer on lo_custkey = c_custkey
where c_region = 'ASIA' and s_region = 'AMERICA' and d_year >= 1992 and d_year <= 1997
group by c_nation, s_nation, d_year
order by d_year asc, lo_revenue desc
