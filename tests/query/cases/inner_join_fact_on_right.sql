-- a plain JOIN written lookup first, fact second: INNER, answered from the LEFT model's layouts
-- answer: layout
select c_region, d_year, count(*) as n, sum(lo_revenue) as revenue
from ssb.dates
join ssb.lineorder on d_datekey = lo_orderdate
join ssb.customer on c_custkey = lo_custkey
where d_year between 1993 and 1996
group by c_region, d_year
