-- GROUP BY and filter on supplier columns no aggregate index holds (S_ADDRESS, S_PHONE): the layout (D_YEAR, LO_SUPPKEY) holds the join key, SUPPLIER is joined back and the sums re-aggregated
-- answer: layout
select s_address, s_phone, d_year, sum(lo_revenue) as revenue, count(*) as lines
from ssb.lineorder
left join ssb.supplier on lo_suppkey = s_suppkey
left join ssb.dates on lo_orderdate = d_datekey
where s_phone like '1%' and d_year between 1993 and 1996
group by s_address, s_phone, d_year
