-- a derived table that projects the joined tables, aggregated outside (TPC-H Q7's shape): merged into one block
-- answer: layout
select region, sum(revenue) as revenue, count(*) as lines
from (
    select c_region as region, lo_revenue as revenue
    from ssb.lineorder, ssb.customer, ssb.dates
    where lo_custkey = c_custkey and lo_orderdate = d_datekey and d_year = 1994
) as lines_1994
group by region
