-- a detail query joined to a projection: the model part's rows come from the table index
-- answer: layout
select lo_orderkey, lo_linenumber, lo_revenue, x.c_nation
from ssb.lineorder
join (select c_custkey, c_nation from ssb.customer where c_region = 'ASIA') x on lo_custkey = x.c_custkey
where lo_orderdate < date '1992-03-01'
