-- SUM(CASE WHEN dimensions THEN a measure's column | a number ELSE 0 | NULL END) from the cells of a layout holding them
-- answer: layout
select d_year,
    sum(case when c_region = 'ASIA' then lo_revenue else 0 end) as asia_revenue,
    sum(case when c_region = 'AMERICA' or c_region = 'EUROPE' then 1 else 0 end) as west_lines,
    sum(case when c_region = 'AFRICA' then lo_supplycost end) as africa_cost,
    sum(case when c_region = 'ASIA' then 2.5 when c_region = 'EUROPE' then -1 end) as weights
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
group by d_year
