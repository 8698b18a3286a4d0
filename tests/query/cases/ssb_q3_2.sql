-- SSB Q3.2 (ssb-kylin's): revenue by city pair and year within one nation (no UNITED STATES supplier at SF 0.01)
-- answer: layout
-- order: exact
-- rows: none
select c_city, s_city, d_year, sum(lo_revenue) as lo_revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.supplier on lo_suppkey = s_suppkey
left join ssb.customer on lo_custkey = c_custkey
where c_nation = 'UNITED STATES' and s_nation = 'UNITED STATES' and d_year >= 1992 and d_year <= 1997
group by c_city, s_city, d_year
order by d_year asc, lo_revenue desc
