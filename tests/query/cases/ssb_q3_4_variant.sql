-- SSB variant: Q3.4 with two cities that trade with each other in March 1997 at SF 0.01
-- answer: layout
-- order: exact
select c_city, s_city, d_year, sum(lo_revenue) as lo_revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.supplier on lo_suppkey = s_suppkey
left join ssb.customer on lo_custkey = c_custkey
where (c_city = 'IRAQ     7' or c_city = 'IRAQ     5')
  and (s_city = 'IRAQ     7' or s_city = 'IRAQ     5')
  and d_yearmonth = 'Mar1997'
group by c_city, s_city, d_year
order by d_year asc, lo_revenue desc
