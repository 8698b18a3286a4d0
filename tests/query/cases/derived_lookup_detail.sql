-- a detail query on lookup columns no index holds (C_ADDRESS, C_PHONE): the order-lines table index holds the join key LO_CUSTKEY, so CUSTOMER is joined back to its rows (a derived dimension)
-- answer: layout
select lo_orderkey, lo_linenumber, c_address, c_phone, lo_revenue
from ssb.lineorder
left join ssb.customer on lo_custkey = c_custkey
where lo_orderdate = date '1996-03-02'
