-- t.* of a joined fact table and a lookup: each table's own columns
-- answer: pushdown
select l.*, d.d_year from ssb.lineorder l left join ssb.dates d on l.lo_orderdate = d.d_datekey where l.lo_orderkey < 20
