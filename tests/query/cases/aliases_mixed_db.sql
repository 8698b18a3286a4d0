-- one table with its database, the others without, and an alias that shadows a table name
-- answer: layout
select customer.c_nation, sum(lineorder.lo_revenue) as revenue
from SSB.LINEORDER lineorder
left join Customer customer on lineorder.lo_custkey = customer.c_custkey
left join ssb.Dates on lineorder.lo_orderdate = d_datekey
where d_year between 1993 and 1994 and customer.c_region = 'EUROPE'
group by customer.c_nation
