-- SSB Q3.4: revenue by city pair for two cities in one month (Kylin's constants: no such cities exist)
-- answer: layout
-- order: exact
-- rows: none
select c_city, s_city, d_year, sum(lo_revenue) as lo_revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.supplier on lo_suppkey = s_suppkey
left join ssb.customer on lo_custkey = c_custkey
where (c_city = 'UNITED KI040' or c_city = 'UNITED KI010')
  and (s_city = 'UNITED KI040' or s_city = 'UNITED KI010')
  and d_yearmonth = 'Mar1997'
group by c_city, s_city, d_year
order by d_year asc, lo_revenue desc
